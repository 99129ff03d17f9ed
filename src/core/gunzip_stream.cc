#include "teller/core/gunzip_stream.h"

#include <libdeflate.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace teller {
namespace {

// Compressed bytes read at a time: large enough that read(2) and the refill cost nothing
// next to inflating, small enough to stay in cache.
constexpr size_t kInputBytes = size_t{256} << 10;

}  // namespace

Status FdByteSource::Read(char* dst, size_t capacity, size_t* got) {
  *got = 0;
  while (true) {
    const ssize_t n = read(fd_, dst, capacity);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::Error(name_ + ": read error: " + std::strerror(errno));
    }
    *got = static_cast<size_t>(n);
    bytes_read_ += *got;
    return Status::Ok();
  }
}

Status MemoryByteSource::Read(char* dst, size_t capacity, size_t* got) {
  *got = std::min(capacity, bytes_.size() - pos_);
  if (*got > 0) std::memcpy(dst, bytes_.data() + pos_, *got);
  pos_ += *got;
  return Status::Ok();
}

// Blocks cycle between the producer (filled, queued in `ready`) and the reader (drained,
// returned to `free`); one mutex guards both lists, taken once per block.
struct ReadAheadSource::State {
  struct Block {
    std::unique_ptr<char[]> bytes;
    size_t size = 0;
  };
  ByteSource& inner;
  const size_t block_bytes;
  std::mutex mu;
  std::condition_variable changed;
  std::deque<Block> ready;  // filled, in order
  std::vector<Block> free;
  bool ended = false;  // the producer saw the end or an error (`error`)
  bool stop = false;   // the reader is going away
  Status error = Status::Ok();
  Block current;  // the reader's block, being drained (only the reader touches it)
  size_t current_pos = 0;
  std::thread producer;

  State(ByteSource& in, size_t bytes, size_t blocks) : inner(in), block_bytes(bytes) {
    // Not zeroed: a block's pages are touched only as far as the producer fills it.
    for (size_t i = 0; i < blocks; ++i)
      free.push_back(Block{std::unique_ptr<char[]>(new char[bytes]), 0});
    producer = std::thread([this] { Produce(); });
  }

  void Produce() {
    while (true) {
      Block block;
      {
        std::unique_lock<std::mutex> lock(mu);
        changed.wait(lock, [this] { return stop || !free.empty(); });
        if (stop) return;
        block = std::move(free.back());
        free.pop_back();
      }
      // Fill the block whole (the inner source may yield less per call), unless it ends.
      block.size = 0;
      Status s = Status::Ok();
      bool end = false;
      while (block.size < block_bytes) {
        size_t got = 0;
        s = inner.Read(block.bytes.get() + block.size, block_bytes - block.size, &got);
        if (!s.ok() || got == 0) {
          end = true;
          break;
        }
        block.size += got;
      }
      std::lock_guard<std::mutex> lock(mu);
      if (block.size > 0) {
        ready.push_back(std::move(block));
      } else {
        free.push_back(std::move(block));
      }
      if (end) {
        ended = true;
        error = std::move(s);
      }
      changed.notify_all();
      if (end) return;
    }
  }
};

ReadAheadSource::ReadAheadSource(ByteSource& inner, size_t block_bytes, size_t blocks)
    : state_(std::make_unique<State>(inner, std::max<size_t>(block_bytes, 1),
                                     std::max<size_t>(blocks, 2))) {}

ReadAheadSource::~ReadAheadSource() {
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->stop = true;
  }
  state_->changed.notify_all();
  state_->producer.join();
}

Status ReadAheadSource::Read(char* dst, size_t capacity, size_t* got) {
  State& st = *state_;
  *got = 0;
  while (*got < capacity) {
    if (st.current.bytes != nullptr && st.current_pos < st.current.size) {
      const size_t n = std::min(capacity - *got, st.current.size - st.current_pos);
      std::memcpy(dst + *got, st.current.bytes.get() + st.current_pos, n);
      st.current_pos += n;
      *got += n;
      continue;
    }
    std::unique_lock<std::mutex> lock(st.mu);
    if (st.current.bytes != nullptr) {
      st.free.push_back(std::move(st.current));
      st.current = State::Block();
      st.changed.notify_all();
    }
    // Return what was copied rather than wait for the next block.
    if (*got > 0 && st.ready.empty()) break;
    st.changed.wait(lock, [&st] { return !st.ready.empty() || st.ended; });
    if (st.ready.empty()) {
      // The end: bytes already copied go first, the error (if any) on the next call.
      return *got > 0 ? Status::Ok() : st.error;
    }
    st.current = std::move(st.ready.front());
    st.ready.pop_front();
    st.current_pos = 0;
  }
  return Status::Ok();
}

GunzipStream::GunzipStream(ByteSource& compressed, std::string name, GunzipOptions options)
    : compressed_(compressed),
      name_(std::move(name)),
      options_(std::move(options)),
      zs_(std::make_unique<z_stream_s>()),
      in_(new char[kInputBytes]) {
  *zs_ = z_stream_s{};
  // Raw deflate: the gzip header and trailer are read here, and the CRC-32 of the output
  // is computed by libdeflate (carry-less multiply), several times faster than zlib's.
  if (inflateInit2(zs_.get(), -MAX_WBITS) != Z_OK) zs_.reset();
}

GunzipStream::~GunzipStream() {
  if (zs_ != nullptr) inflateEnd(zs_.get());
}

Status GunzipStream::Fail(Status s) {
  error_ = s;
  phase_ = Phase::kDone;
  return s;
}

Status GunzipStream::Refill() {
  if (in_begin_ > 0) {
    std::memmove(in_.get(), in_.get() + in_begin_, Available());
    in_offset_ += in_begin_;
    in_end_ -= in_begin_;
    in_begin_ = 0;
  }
  if (in_end_ == kInputBytes || in_eof_) return Status::Ok();
  size_t got = 0;
  TELLER_RETURN_IF_ERROR(compressed_.Read(in_.get() + in_end_, kInputBytes - in_end_, &got));
  if (got == 0) in_eof_ = true;
  in_end_ += got;
  return Status::Ok();
}

Status GunzipStream::Truncated() const {
  return Status::Error(name_ + ": truncated gzip stream (input ends at byte " +
                       std::to_string(in_offset_ + in_end_) + " inside a member starting at byte " +
                       std::to_string(member_start_) + ")");
}

Status GunzipStream::Corrupt(uint64_t at, const std::string& why) const {
  return Status::Error(name_ + ": corrupt gzip data at byte " + std::to_string(at) +
                       (why.empty() ? "" : " (" + why + ")"));
}

Status GunzipStream::Need(size_t n) {
  while (Available() < n && !in_eof_) TELLER_RETURN_IF_ERROR(Refill());
  return Available() < n ? Truncated() : Status::Ok();
}

Status GunzipStream::Skip(uint64_t n) {
  while (n > 0) {
    TELLER_RETURN_IF_ERROR(Need(1));
    const size_t take = static_cast<size_t>(std::min<uint64_t>(n, Available()));
    in_begin_ += take;
    n -= take;
  }
  return Status::Ok();
}

Status GunzipStream::SkipZeroTerminated() {
  while (true) {
    TELLER_RETURN_IF_ERROR(Need(1));
    const char* begin = in_.get() + in_begin_;
    const void* nul = std::memchr(begin, 0, Available());
    if (nul != nullptr) {
      in_begin_ += static_cast<const char*>(nul) - begin + 1;
      return Status::Ok();
    }
    in_begin_ = in_end_;
  }
}

// The member header (RFC 1952, 2.3): ID1 ID2 CM FLG MTIME(4) XFL OS, then the optional
// extra field, name, comment and header CRC, which are skipped (the header CRC is not
// checked, as libdeflate, the one-shot decoder, does not check it either).
Status GunzipStream::ReadHeader() {
  constexpr unsigned kHeaderCrc = 2, kExtra = 4, kName = 8, kComment = 16, kReserved = 0xe0;
  TELLER_RETURN_IF_ERROR(Need(10));
  const auto* h = reinterpret_cast<const unsigned char*>(in_.get() + in_begin_);
  if (h[2] != 8) return Corrupt(Position() + 2, "unknown compression method");
  const unsigned flags = h[3];
  if ((flags & kReserved) != 0) return Corrupt(Position() + 3, "unknown header flags set");
  in_begin_ += 10;
  if (flags & kExtra) {
    TELLER_RETURN_IF_ERROR(Need(2));
    const auto* x = reinterpret_cast<const unsigned char*>(in_.get() + in_begin_);
    const unsigned length = x[0] | (x[1] << 8);
    in_begin_ += 2;
    TELLER_RETURN_IF_ERROR(Skip(length));
  }
  if (flags & kName) TELLER_RETURN_IF_ERROR(SkipZeroTerminated());
  if (flags & kComment) TELLER_RETURN_IF_ERROR(SkipZeroTerminated());
  if (flags & kHeaderCrc) TELLER_RETURN_IF_ERROR(Skip(2));
  if (inflateReset(zs_.get()) != Z_OK) return Corrupt(Position(), "");
  crc_ = 0;
  member_bytes_ = 0;
  phase_ = Phase::kInMember;
  return Status::Ok();
}

// The member trailer: CRC-32 and size mod 2^32 of the member's output, little-endian.
Status GunzipStream::ReadTrailer() {
  TELLER_RETURN_IF_ERROR(Need(8));
  const auto* t = reinterpret_cast<const unsigned char*>(in_.get() + in_begin_);
  const auto le32 = [](const unsigned char* p) {
    return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
           static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
  };
  if (le32(t) != crc_) return Corrupt(Position(), "incorrect data check");
  if (le32(t + 4) != static_cast<uint32_t>(member_bytes_)) {
    return Corrupt(Position() + 4, "incorrect length check");
  }
  in_begin_ += 8;
  ++info_.members;
  phase_ = Phase::kBetweenMembers;
  return Status::Ok();
}

// At a member boundary: a gzip magic starts the next member; the end of the input ends
// the stream; anything else must be zero padding (gzip(1) accepts it after tape blocks)
// unless the options let any trailing bytes through.
Status GunzipStream::StartMemberOrFinish() {
  while (Available() < 2 && !in_eof_) TELLER_RETURN_IF_ERROR(Refill());
  if (Available() == 0 && info_.members > 0) {
    phase_ = Phase::kDone;
    return Status::Ok();
  }
  const bool magic = Available() >= 2 && static_cast<unsigned char>(in_[in_begin_]) == 0x1f &&
                     static_cast<unsigned char>(in_[in_begin_ + 1]) == 0x8b;
  if (magic) {
    member_start_ = Position();
    return ReadHeader();
  }
  if (info_.members == 0) return Status::Error(name_ + ": not a gzip stream");
  const uint64_t trailing_start = Position();
  while (Available() > 0) {
    const char* begin = in_.get() + in_begin_;
    const bool zeros = std::all_of(begin, begin + Available(), [](char c) { return c == 0; });
    if (!zeros && !options_.allow_trailing_garbage) {
      return Corrupt(trailing_start, "trailing bytes after the last member");
    }
    info_.trailing_bytes += Available();
    in_begin_ = in_end_;
    TELLER_RETURN_IF_ERROR(Refill());
  }
  phase_ = Phase::kDone;
  return Status::Ok();
}

Status GunzipStream::Read(char* dst, size_t capacity, size_t* got) {
  *got = 0;
  if (!error_.ok()) return error_;
  if (zs_ == nullptr) return Fail(Status::Error(name_ + ": out of memory (gzip decompressor)"));
  while (*got == 0 && phase_ != Phase::kDone) {
    if (phase_ == Phase::kBetweenMembers) {
      if (Status s = StartMemberOrFinish(); !s.ok()) return Fail(std::move(s));
      continue;
    }
    if (phase_ == Phase::kTrailer) {
      if (Status s = ReadTrailer(); !s.ok()) return Fail(std::move(s));
      continue;
    }
    if (Available() == 0 && !in_eof_) {
      if (Status s = Refill(); !s.ok()) return Fail(std::move(s));
    }
    const size_t in_before = Available();
    const size_t room = std::min<size_t>(capacity - *got, UINT_MAX);
    zs_->next_in = reinterpret_cast<Bytef*>(in_.get() + in_begin_);
    zs_->avail_in = static_cast<uInt>(in_before);
    zs_->next_out = reinterpret_cast<Bytef*>(dst + *got);
    zs_->avail_out = static_cast<uInt>(room);
    const int rc = inflate(zs_.get(), Z_NO_FLUSH);
    in_begin_ += in_before - zs_->avail_in;
    const size_t produced = room - zs_->avail_out;
    crc_ = libdeflate_crc32(crc_, dst + *got, produced);
    member_bytes_ += produced;
    *got += produced;
    info_.output_bytes += produced;
    if (info_.output_bytes > options_.max_output_bytes) {
      std::string msg = name_ + ": gunzipped data larger than " +
                        std::to_string(options_.max_output_bytes) + " bytes";
      if (!options_.limit_reason.empty()) msg += " (" + options_.limit_reason + ")";
      *got = 0;
      return Fail(Status::Error(std::move(msg)));
    }
    if (rc == Z_STREAM_END) {
      phase_ = Phase::kTrailer;
      continue;
    }
    if (rc == Z_OK) continue;
    if (rc == Z_BUF_ERROR && !(in_eof_ && Available() == 0)) continue;  // wants more input
    *got = 0;
    if (rc == Z_BUF_ERROR) return Fail(Truncated());
    if (rc == Z_MEM_ERROR) return Fail(Status::Error(name_ + ": out of memory (gunzip)"));
    return Fail(Corrupt(Position(), zs_->msg != nullptr ? zs_->msg : ""));
  }
  return Status::Ok();
}

}  // namespace teller
