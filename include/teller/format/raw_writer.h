// Appends chunks to a raw trace file (format: raw_format.h). Used by the collector's
// flusher thread and by the simulator. Not thread-safe: one writer per file.
#ifndef TELLER_FORMAT_RAW_WRITER_H_
#define TELLER_FORMAT_RAW_WRITER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "teller/core/clock.h"
#include "teller/core/status.h"
#include "teller/format/raw_format.h"

namespace teller::raw {

// A contiguous piece of a chunk payload; a payload may be split in two (ring wrap).
struct PayloadPart {
  const void* data;
  size_t size;
};

// Builds variable-length payloads (key/value maps, string tables).
class PayloadBuilder {
 public:
  void AddKeyValue(std::string_view key, std::string_view value);
  void AddString(uint32_t id, std::string_view text);
  const std::string& bytes() const { return bytes_; }
  uint32_t count() const { return count_; }
  void Clear() {
    bytes_.clear();
    count_ = 0;
  }

 private:
  void AppendU32(uint32_t v);
  std::string bytes_;
  uint32_t count_ = 0;
};

class RawFileWriter {
 public:
  // Creates `path` (which must not exist) and writes the file-header chunk.
  static Result<std::unique_ptr<RawFileWriter>> Create(const std::string& path);
  ~RawFileWriter();
  RawFileWriter(const RawFileWriter&) = delete;
  RawFileWriter& operator=(const RawFileWriter&) = delete;

  Status WriteChunk(ChunkType type, uint16_t record_bytes, uint32_t record_count,
                    const PayloadPart* parts, size_t part_count);
  Status WritePayload(ChunkType type, const PayloadBuilder& payload);
  // Writes events, splitting into several chunks when they exceed the payload limit.
  // `first`/`second` are two contiguous runs (the second may be empty).
  Status WriteEvents(const EventRecord* first, size_t first_count,
                     const EventRecord* second = nullptr, size_t second_count = 0);
  Status WriteClockAnchor(const ClockPair& pair);

  // Releases the descriptor without writing (used in a forked child, whose parent
  // still owns the file).
  void Abandon();
  const std::string& path() const { return path_; }
  uint64_t bytes_written() const { return bytes_written_; }

 private:
  RawFileWriter(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  int fd_;
  std::string path_;
  uint64_t sequence_ = 0;
  uint64_t bytes_written_ = 0;
};

}  // namespace teller::raw

#endif  // TELLER_FORMAT_RAW_WRITER_H_
