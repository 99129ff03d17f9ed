// Gunzip of whole in-memory files (.json.gz traces, .log.gz logs): every member of a
// multi-member file, in one shot with libdeflate; errors name the file and the byte of
// the compressed input where the data stops making sense. And the other way: one gzip
// member of a piece of memory (the dataset's trace.json.gz is a run of such members).
#ifndef TELLER_CORE_GZIP_H_
#define TELLER_CORE_GZIP_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "teller/core/status.h"

namespace teller {

// True when `bytes` starts with the gzip magic (1f 8b).
bool IsGzip(std::string_view bytes);

// Where gunzipped bytes go: the caller's buffer type (a std::string, the Kineto
// importer's padded mapping). Gunzip asks for room before it writes.
class GunzipOutput {
 public:
  virtual ~GunzipOutput() = default;
  // Makes room for at least `capacity` bytes, keeping the first `keep`; returns the start
  // of the buffer, or nullptr when memory is exhausted.
  virtual char* Reserve(size_t capacity, size_t keep) = 0;
  // The final size: what was gunzipped (0 after an error).
  virtual void SetSize(size_t size) = 0;
};

struct GunzipOptions {
  // What may follow the last member. false: only zero bytes (the padding gzip(1) accepts);
  // anything else is an error. true: anything, ignored and reported in trailing_bytes
  // (logs copied while being written, appended junk).
  bool allow_trailing_garbage = false;
  // Output beyond this is refused (an error), rather than exhausting memory.
  size_t max_output_bytes = SIZE_MAX;
  // Appended in parentheses to the "larger than" error: where the limit comes from and how
  // to raise it (set by GuardedGunzipOptions).
  std::string limit_reason;
};

// The guard against gzip bombs that every importer of a .gz applies: output at most
// kGunzipGuardRatio times the compressed size, and never less than kGunzipGuardFloor
// bytes (real traces and logs gunzip to 5-30 times their size; a bomb to about 1000).
// The environment variable TELLER_MAX_GUNZIP_BYTES replaces it by a fixed limit: a number
// of bytes with an optional K, M, G or T suffix (powers of 1024), or 0 for no limit.
// Error: "TELLER_MAX_GUNZIP_BYTES=<v>: expected ..." when the variable cannot be read.
inline constexpr size_t kGunzipGuardRatio = 200;
inline constexpr size_t kGunzipGuardFloor = size_t{256} << 20;
Status GuardedGunzipOptions(size_t compressed_bytes, GunzipOptions* options);

struct GunzipInfo {
  size_t output_bytes = 0;
  size_t members = 0;
  size_t trailing_bytes = 0;  // bytes after the last member (zeros, or ignored garbage)
};

// Gunzips all members of `in` into `out`. `name` (the file) starts every error message:
//   "<name>: not a gzip stream"
//   "<name>: truncated gzip stream (input ends at byte N inside a member starting at byte M)"
//   "<name>: corrupt gzip data at byte N"
//   "<name>: corrupt gzip data at byte N (trailing bytes after the last member)"
//   "<name>: gunzipped data larger than N bytes" (+ " (<limit_reason>)" when set)
// Offsets count bytes of `in` from 0.
Status Gunzip(std::string_view in, const std::string& name, const GunzipOptions& options,
              GunzipOutput& out, GunzipInfo* info = nullptr);

// The same into a std::string (resized to the output).
Status GunzipToString(std::string_view in, const std::string& name, const GunzipOptions& options,
                      std::string* out, GunzipInfo* info = nullptr);

// Appends one whole gzip member (header, deflate data, CRC-32 and size) holding `in` to
// `out`, compressed by libdeflate at `level` (1 fastest .. 12 smallest; 6 is gzip(1)'s
// default). Members concatenate: gzip(1), Python's gzip and Gunzip above read a run of
// them as the concatenation of their contents. Returns false only when memory runs out.
bool AppendGzipMember(std::string_view in, int level, std::string* out);

}  // namespace teller

#endif  // TELLER_CORE_GZIP_H_
