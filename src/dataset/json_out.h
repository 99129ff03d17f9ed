// Internal to src/dataset: the fast output path of `teller dataset build`. The paper
// preset writes about 5.6 M nodes (a GB of JSON) in one pass, so the JSON is built in
// large std::string buffers (core/json_writer.h), strings that repeat (node names, layer
// and type names) are escaped once and copied, and files are written with write(2) in
// big pieces.
#ifndef TELLER_SRC_DATASET_JSON_OUT_H_
#define TELLER_SRC_DATASET_JSON_OUT_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "teller/core/status.h"

namespace teller::dataset::internal {

// An output file filled from a buffer that is written out when it grows past a
// threshold, so that memory stays bounded however large the file gets. The bytes go to a
// temporary beside the file (TempPathFor), created by the first write, and the temporary
// takes the file's name at Close(): a build that fails or stops half-way leaves no
// partial file, and a sink destroyed without Close() removes its temporary. No
// descriptor is held between writes (a setting has many requests' files open at once).
//
// A gzip sink (docs/dataset-format.md, "trace.json.gz") compresses each write into a gzip
// member of its own and appends it: the file is a run of members, which every gzip reader
// takes as one stream, and no deflate state (hundreds of KB) is held per open file.
class FileSink {
 public:
  enum class Compression { kNone, kGzip };
  // libdeflate's level for the members, gzip(1)'s default. On a 10 MB trace of the paper
  // preset gzip(1) makes 1.13 MB at level 1, 0.80 MB at 6 and 0.76 MB at 9, taking 0.12,
  // 0.37 and 0.46 s: 6 is most of the gain for little time.
  static constexpr int kGzipLevel = 6;

  explicit FileSink(std::string path, Compression compression = Compression::kNone)
      : path_(std::move(path)), gzip_(compression == Compression::kGzip) {}
  FileSink(FileSink&& other) noexcept { *this = std::move(other); }
  FileSink& operator=(FileSink&& other) noexcept;
  FileSink(const FileSink&) = delete;
  FileSink& operator=(const FileSink&) = delete;
  ~FileSink() { Abandon(); }

  std::string& buffer() { return buffer_; }
  // Appends `data`; a large piece (a shared step record, written once per request of the
  // batch) goes to the file directly after what is buffered, instead of being copied.
  Status Append(std::string_view data) {
    if (data.size() < kDirectBytes) {
      buffer_ += data;
      return Status::Ok();
    }
    return Write(data);
  }
  // As Append, for a large piece that several files repeat (a step record written once
  // per request of the batch): a gzip sink compresses it once into `*member` (a gzip
  // member, built at the first call while empty; the caller clears it when the piece
  // changes) and writes that member to each file.
  Status AppendShared(std::string_view data, std::string* member);
  // Writes the buffer when it holds more than `threshold` bytes.
  Status MaybeFlush(size_t threshold = size_t{8} << 20) {
    return buffer_.size() > threshold ? Flush() : Status::Ok();
  }
  Status Flush() { return Write({}); }
  // Writes what is buffered, gives the temporary the file's name (creating the file even
  // when empty) and frees the buffer. On an error the temporary is removed.
  Status Close();
  const std::string& path() const { return path_; }

 private:
  // Removes the temporary, if any.
  void Abandon();
  static constexpr size_t kDirectBytes = size_t{256} << 10;
  // Writes the buffer, then `extra`, then `member` (already a gzip member) in one open of
  // the file; a gzip sink compresses the buffer and `extra` into members first.
  Status Write(std::string_view extra, std::string_view member = {});
  std::string path_;
  bool gzip_ = false;
  std::string tmp_;  // the temporary being written, "" before the first write and after Close
  std::string buffer_;
};

}  // namespace teller::dataset::internal

#endif  // TELLER_SRC_DATASET_JSON_OUT_H_
