#include "teller/core/gzip.h"

#include <libdeflate.h>
#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

namespace teller {
namespace {

// deflate cannot expand data by more than about 1032:1, so a larger ISIZE is garbage.
constexpr size_t kMaxDeflateRatio = 1032;
constexpr size_t kGrowBytes = size_t{64} << 20;

// libdeflate says only "bad data"; zlib, streaming, tells a truncated stream from corrupt
// data and where the corruption is. Only run on the error path.
Status DiagnoseMember(std::string_view in, size_t member_offset, const std::string& name) {
  z_stream zs{};
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) {
    return Status::Error(name + ": corrupt gzip data at byte " + std::to_string(member_offset));
  }
  std::vector<unsigned char> sink(1 << 16);
  size_t fed = member_offset;  // input bytes handed to zlib so far
  int rc = Z_OK;
  while (true) {
    if (zs.avail_in == 0 && fed < in.size()) {
      const size_t chunk = std::min<size_t>(in.size() - fed, 1u << 30);
      zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data() + fed));
      zs.avail_in = static_cast<uInt>(chunk);
      fed += chunk;
    }
    zs.next_out = sink.data();
    zs.avail_out = static_cast<uInt>(sink.size());
    rc = inflate(&zs, Z_NO_FLUSH);
    if (rc != Z_OK) break;
    if (zs.avail_in == 0 && fed == in.size() && zs.avail_out != 0) break;  // needs more input
  }
  const size_t at = fed - zs.avail_in;
  const std::string why = zs.msg != nullptr ? std::string(" (") + zs.msg + ")" : "";
  inflateEnd(&zs);
  if (rc == Z_BUF_ERROR || rc == Z_OK) {
    return Status::Error(name + ": truncated gzip stream (input ends at byte " +
                         std::to_string(in.size()) + " inside a member starting at byte " +
                         std::to_string(member_offset) + ")");
  }
  // Z_STREAM_END: libdeflate refused what zlib accepts; only the member can be named.
  if (rc == Z_STREAM_END) {
    return Status::Error(name + ": corrupt gzip data at byte " + std::to_string(member_offset));
  }
  return Status::Error(name + ": corrupt gzip data at byte " + std::to_string(at) + why);
}

struct DecompressorDeleter {
  void operator()(libdeflate_decompressor* d) const { libdeflate_free_decompressor(d); }
};

libdeflate_decompressor* Decompressor() {
  // One per thread, reused: allocation is cheap but not free, and it is ~32 KB.
  thread_local std::unique_ptr<libdeflate_decompressor, DecompressorDeleter> d(
      libdeflate_alloc_decompressor());
  return d.get();
}

struct CompressorDeleter {
  void operator()(libdeflate_compressor* c) const { libdeflate_free_compressor(c); }
};

class StringOutput : public GunzipOutput {
 public:
  explicit StringOutput(std::string* s) : s_(s) {}
  char* Reserve(size_t capacity, size_t keep) override {
    s_->resize(keep);
    s_->resize(capacity);
    return s_->data();
  }
  void SetSize(size_t size) override { s_->resize(size); }

 private:
  std::string* s_;
};

}  // namespace

bool IsGzip(std::string_view bytes) {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

Status Gunzip(std::string_view in, const std::string& name, const GunzipOptions& options,
              GunzipOutput& out, GunzipInfo* info) {
  GunzipInfo local;
  GunzipInfo& st = info != nullptr ? *info : local;
  st = GunzipInfo();
  libdeflate_decompressor* d = Decompressor();
  if (d == nullptr) return Status::Error(name + ": out of memory (gzip decompressor)");
  if (!IsGzip(in)) return Status::Error(name + ": not a gzip stream");
  // ISIZE (last 4 bytes, size mod 2^32 of the last member) is exact for the usual single
  // member file; for multi-member files it is only a lower bound, and the buffer grows.
  size_t hint = 0;
  if (in.size() >= 18) {
    uint32_t isize;
    std::memcpy(&isize, in.data() + in.size() - 4, 4);
    if (isize / kMaxDeflateRatio <= in.size()) hint = isize;
  }
  hint = std::min(std::max(hint, in.size() * 4 + 4096), options.max_output_bytes);
  size_t capacity = hint;
  char* buffer = out.Reserve(capacity, 0);
  if (buffer == nullptr) return Status::Error(name + ": out of memory (gunzip)");
  size_t in_pos = 0;
  size_t out_pos = 0;
  while (in_pos < in.size()) {
    const std::string_view rest = in.substr(in_pos);
    if (!IsGzip(rest)) {
      // gzip(1) tolerates zero padding after the last member (tape blocks); so do we.
      if (!options.allow_trailing_garbage &&
          !std::all_of(rest.begin(), rest.end(), [](char c) { return c == 0; })) {
        out.SetSize(0);
        return Status::Error(name + ": corrupt gzip data at byte " + std::to_string(in_pos) +
                             " (trailing bytes after the last member)");
      }
      st.trailing_bytes = rest.size();
      break;
    }
    size_t in_used = 0;
    size_t out_used = 0;
    const libdeflate_result r = libdeflate_gzip_decompress_ex(
        d, rest.data(), rest.size(), buffer + out_pos, capacity - out_pos, &in_used, &out_used);
    if (r == LIBDEFLATE_INSUFFICIENT_SPACE) {
      if (capacity >= options.max_output_bytes) {
        out.SetSize(0);
        std::string msg = name + ": gunzipped data larger than " +
                          std::to_string(options.max_output_bytes) + " bytes";
        if (!options.limit_reason.empty()) msg += " (" + options.limit_reason + ")";
        return Status::Error(std::move(msg));
      }
      capacity = std::min(std::max(capacity * 2, capacity + kGrowBytes), options.max_output_bytes);
      buffer = out.Reserve(capacity, out_pos);
      if (buffer == nullptr) return Status::Error(name + ": out of memory (gunzip)");
      continue;
    }
    if (r != LIBDEFLATE_SUCCESS) {
      out.SetSize(0);
      return DiagnoseMember(in, in_pos, name);
    }
    in_pos += in_used;
    out_pos += out_used;
    ++st.members;
  }
  out.SetSize(out_pos);
  st.output_bytes = out_pos;
  return Status::Ok();
}

Status GuardedGunzipOptions(size_t compressed_bytes, GunzipOptions* options) {
  constexpr const char* kVariable = "TELLER_MAX_GUNZIP_BYTES";
  const char* env = std::getenv(kVariable);
  if (env != nullptr && *env != '\0') {
    const std::string_view text(env);
    uint64_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    std::string_view suffix(end, static_cast<size_t>(text.data() + text.size() - end));
    int shift = 0;
    if (suffix.size() == 1) {
      const std::string_view units = "KMGT";
      const size_t unit = units.find(static_cast<char>(std::toupper(suffix[0])));
      if (unit != std::string_view::npos) {
        shift = 10 * static_cast<int>(unit + 1);
        suffix.remove_prefix(1);
      }
    }
    if (ec != std::errc() || !suffix.empty() || (shift > 0 && value > (UINT64_MAX >> shift))) {
      return Status::Error(std::string(kVariable) + "=" + env +
                           ": expected a number of bytes (suffix K, M, G or T allowed) or 0 "
                           "for no limit");
    }
    value <<= shift;
    options->max_output_bytes = value == 0 ? SIZE_MAX : static_cast<size_t>(value);
    options->limit_reason = std::string("the limit set by ") + kVariable;
    return Status::Ok();
  }
  const size_t by_ratio = compressed_bytes > SIZE_MAX / kGunzipGuardRatio
                              ? SIZE_MAX
                              : compressed_bytes * kGunzipGuardRatio;
  options->max_output_bytes = std::max(kGunzipGuardFloor, by_ratio);
  options->limit_reason = "a guard against gzip bombs: at most " +
                          std::to_string(kGunzipGuardRatio) + "x the compressed size, at least " +
                          std::to_string(kGunzipGuardFloor >> 20) + " MiB; " + kVariable +
                          "=BYTES (K/M/G/T suffix, 0 = none) sets another limit";
  return Status::Ok();
}

Status GunzipToString(std::string_view in, const std::string& name, const GunzipOptions& options,
                      std::string* out, GunzipInfo* info) {
  StringOutput sink(out);
  return Gunzip(in, name, options, sink, info);
}

bool AppendGzipMember(std::string_view in, int level, std::string* out) {
  // One compressor per thread and level, reused: allocating one costs hundreds of KB.
  thread_local int current_level = -1;
  thread_local std::unique_ptr<libdeflate_compressor, CompressorDeleter> c;
  if (c == nullptr || current_level != level) {
    c.reset(libdeflate_alloc_compressor(level));
    current_level = level;
    if (c == nullptr) return false;
  }
  const size_t at = out->size();
  const size_t bound = libdeflate_gzip_compress_bound(c.get(), in.size());
  out->resize(at + bound);
  const size_t written =
      libdeflate_gzip_compress(c.get(), in.data(), in.size(), out->data() + at, bound);
  out->resize(at + written);
  return written != 0;
}

}  // namespace teller
