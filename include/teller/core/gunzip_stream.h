// Bytes read in pieces, and gunzip as such a source: for importers that consume a file
// front to back and need not hold it whole (the Kineto importer's streaming path,
// docs/ingest-kineto.md). The one-shot Gunzip of gzip.h stays the reference for whole
// buffers; this one decodes with zlib, a member at a time, into the caller's buffer.
#ifndef TELLER_CORE_GUNZIP_STREAM_H_
#define TELLER_CORE_GUNZIP_STREAM_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "teller/core/gzip.h"
#include "teller/core/status.h"

// zlib's stream state, kept out of this header so that its users need not see zlib.
struct z_stream_s;

namespace teller {

// A source of bytes consumed front to back.
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Reads up to `capacity` (> 0) bytes into `dst`. `*got` is 0 only at the end of the
  // data; fewer than `capacity` bytes does not mean the end.
  virtual Status Read(char* dst, size_t capacity, size_t* got) = 0;
};

// read(2) of an open descriptor (not owned, not closed). `name` starts error messages.
class FdByteSource : public ByteSource {
 public:
  FdByteSource(int fd, std::string name) : fd_(fd), name_(std::move(name)) {}
  Status Read(char* dst, size_t capacity, size_t* got) override;
  uint64_t bytes_read() const { return bytes_read_; }

 private:
  int fd_;
  std::string name_;
  uint64_t bytes_read_ = 0;
};

// Bytes already in memory; the view must outlive the source.
class MemoryByteSource : public ByteSource {
 public:
  explicit MemoryByteSource(std::string_view bytes) : bytes_(bytes) {}
  Status Read(char* dst, size_t capacity, size_t* got) override;
  uint64_t bytes_read() const { return pos_; }

 private:
  std::string_view bytes_;
  size_t pos_ = 0;
};

// Another source's bytes, produced ahead on a thread of its own (gunzip on a second core
// while the caller parses): the inner source fills blocks of `block_bytes`, at most
// `blocks` of them ahead of the reader, and Read copies out of the oldest. The inner
// source is used only by that thread until this object is destroyed; an error of the
// inner source is returned after the bytes read before it.
class ReadAheadSource : public ByteSource {
 public:
  ReadAheadSource(ByteSource& inner, size_t block_bytes, size_t blocks);
  ~ReadAheadSource() override;  // stops and joins the thread
  ReadAheadSource(const ReadAheadSource&) = delete;
  ReadAheadSource& operator=(const ReadAheadSource&) = delete;

  Status Read(char* dst, size_t capacity, size_t* got) override;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// The gunzipped content of `compressed`: every member in order (members of any size:
// nothing is sized from the 32-bit ISIZE trailer), with zero bytes after the last member
// tolerated (and counted) as gzip(1) does, unless options.allow_trailing_garbage lets
// anything follow. Errors start with `name` and have the wording of Gunzip (gzip.h):
//   "<name>: not a gzip stream"
//   "<name>: truncated gzip stream (input ends at byte N inside a member starting at byte M)"
//   "<name>: corrupt gzip data at byte N (<zlib's reason>)"
//   "<name>: corrupt gzip data at byte N (trailing bytes after the last member)"
//   "<name>: gunzipped data larger than N bytes (<limit_reason>)"
// Byte offsets are of the compressed input. An error is sticky: later reads repeat it.
class GunzipStream : public ByteSource {
 public:
  GunzipStream(ByteSource& compressed, std::string name, GunzipOptions options);
  ~GunzipStream() override;
  GunzipStream(const GunzipStream&) = delete;
  GunzipStream& operator=(const GunzipStream&) = delete;

  Status Read(char* dst, size_t capacity, size_t* got) override;

  // Members finished, bytes produced and trailing bytes so far (final at the end).
  const GunzipInfo& info() const { return info_; }

 private:
  enum class Phase { kBetweenMembers, kInMember, kTrailer, kDone };
  // Moves the unread input to the front of the input buffer and reads more after it.
  Status Refill();
  size_t Available() const { return in_end_ - in_begin_; }
  uint64_t Position() const { return in_offset_ + in_begin_; }  // of the next unread byte
  Status StartMemberOrFinish();
  Status ReadHeader();
  Status ReadTrailer();
  // Reads until `n` bytes are available; the truncation error when the input ends first.
  Status Need(size_t n);
  Status Skip(uint64_t n);
  Status SkipZeroTerminated();
  Status Truncated() const;
  Status Corrupt(uint64_t at, const std::string& why) const;
  Status Fail(Status s);

  ByteSource& compressed_;
  std::string name_;
  GunzipOptions options_;
  std::unique_ptr<z_stream_s> zs_;  // null when zlib could not be set up
  std::unique_ptr<char[]> in_;
  size_t in_begin_ = 0;  // unread input is in_[in_begin_, in_end_)
  size_t in_end_ = 0;
  uint64_t in_offset_ = 0;  // offset in the compressed input of in_[0]
  bool in_eof_ = false;
  uint64_t member_start_ = 0;
  uint32_t crc_ = 0;           // CRC-32 of the current member's output so far
  uint64_t member_bytes_ = 0;  // its output bytes so far
  Phase phase_ = Phase::kBetweenMembers;
  GunzipInfo info_;
  Status error_ = Status::Ok();
};

}  // namespace teller

#endif  // TELLER_CORE_GUNZIP_STREAM_H_
