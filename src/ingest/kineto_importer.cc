// Kineto / PyTorch-profiler Chrome-trace importer (docs/ingest-kineto.md).
//
// Pipeline: stream the file's text (read(2), or zlib's inflate on a second thread) into a
// sliding buffer, parse it with simdjson's On Demand API in windows of about 4 MB as it
// arrives, appending one row per event to the columnar EventTable and dropping the text
// parsed, then fix up what needs the whole file (main process, time base, duplicate
// correlation ids) in one pass over the appended rows. A file that fails is imported
// again by the one-shot path (the whole text in memory, gunzipped by libdeflate: Run),
// which words every error as the importer always has.
//
// Why windows: simdjson indexes a whole document before iterating it, with 4 bytes of
// index per structural character; for a Chrome trace that is about 250 bytes per event,
// more than the columns themselves. Parsing the traceEvents array a window at a time keeps
// that index at a few MB, reused. A window ends at a "cut": a comma between two objects,
// `}` ws `,` ws `{`, with a newline in the whitespace. A raw newline cannot occur inside a
// JSON string, so the comma is certainly structural; whether it separates two events of
// traceEvents (and not two objects deeper down) is checked by parsing: the comma and the
// byte after it are overwritten with `]}`, closing the window's document, and the window
// is accepted only when traceEvents was its last top-level field and closed exactly there.
// The next window starts with `{"traceEvents":[` written over the 16 bytes before its
// first event (bytes of the previous, finished window). A rejected window is rolled back
// (rows, counters) and re-parsed up to the next cut, at most kMaxCutRetries times, then as
// the whole rest of the file. Text without newlines between events (compact JSON) is cut
// by following its structure (CompactCutScanner) on the streaming path; the one-shot path
// parses it as one window.
#include "src/ingest/kineto_importer.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "simdjson.h"
#include "src/ingest/signature.h"
#include "teller/core/gunzip_stream.h"
#include "teller/core/gzip.h"
#include "teller/core/json_reader.h"
#include "teller/core/progress.h"
#include "teller/ingest/ingest.h"

namespace teller::ingest {

static_assert(PaddedBuffer::kPadding >= simdjson::SIMDJSON_PADDING);

// ---------------------------------------------------------------------------------------
// PaddedBuffer

namespace {
constexpr size_t kHugePage = size_t{2} << 20;
constexpr size_t kDefaultWindowBytes = size_t{4} << 20;
constexpr int kMaxCutRetries = 4;
size_t g_window_bytes = kDefaultWindowBytes;
// Bytes of text read at a time by the streaming path: a small fraction of a window, so
// that what is read past a window's cut (and moved to the front afterwards) stays small.
constexpr size_t kDefaultReadBytes = size_t{256} << 10;
size_t g_read_bytes = kDefaultReadBytes;
// Gunzip a block ahead of the parse on a thread of its own, when a second core is there.
constexpr size_t kReadAheadBlockBytes = size_t{1} << 20;
constexpr size_t kReadAheadBlocks = 4;
// Below this (compressed), starting a thread costs more than inflating takes.
constexpr size_t kReadAheadMinBytes = size_t{256} << 10;
bool g_gunzip_thread = true;
// The longest document handed to simdjson since the last reset (tests check the windows).
thread_local size_t g_largest_window = 0;
}  // namespace

size_t TakeKinetoLargestWindowForTesting() { return std::exchange(g_largest_window, 0); }

PaddedBuffer::~PaddedBuffer() { Release(); }

PaddedBuffer::PaddedBuffer(PaddedBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      capacity_(std::exchange(other.capacity_, 0)),
      mapped_bytes_(std::exchange(other.mapped_bytes_, 0)) {}

PaddedBuffer& PaddedBuffer::operator=(PaddedBuffer&& other) noexcept {
  if (this != &other) {
    Release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    capacity_ = std::exchange(other.capacity_, 0);
    mapped_bytes_ = std::exchange(other.mapped_bytes_, 0);
  }
  return *this;
}

void PaddedBuffer::Release() {
  if (data_ != nullptr) munmap(data_, mapped_bytes_);
  data_ = nullptr;
  size_ = capacity_ = mapped_bytes_ = 0;
}

bool PaddedBuffer::Reserve(size_t capacity) {
  if (capacity <= capacity_ && data_ != nullptr) return true;
  if (capacity > (size_t{1} << 46)) return false;
  // Round to whole huge pages and align the start to 2 MiB so that the kernel can back
  // the buffer with huge pages (THP "madvise" mode is the Debian default).
  const size_t want = (capacity + kPadding + kHugePage - 1) / kHugePage * kHugePage;
  const size_t map_len = want + kHugePage;
  void* raw = mmap(nullptr, map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return false;
  const auto base = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = (base + kHugePage - 1) / kHugePage * kHugePage;
  if (aligned > base) munmap(raw, aligned - base);
  const size_t tail = (base + map_len) - (aligned + want);
  if (tail > 0) munmap(reinterpret_cast<void*>(aligned + want), tail);
  char* fresh = reinterpret_cast<char*>(aligned);
  madvise(fresh, want, MADV_HUGEPAGE);
  if (data_ != nullptr && size_ > 0) std::memcpy(fresh, data_, size_);
  const size_t keep = size_;
  Release();
  data_ = fresh;
  size_ = keep;
  capacity_ = want - kPadding;
  mapped_bytes_ = want;
  return true;
}

void PaddedBuffer::Resize(size_t size) {
  size_ = std::min(size, capacity_);
  if (data_ != nullptr) std::memset(data_ + size_, 0, kPadding);
}

void SetKinetoWindowBytesForTesting(size_t bytes) {
  g_window_bytes = bytes == 0 ? kDefaultWindowBytes : std::max<size_t>(bytes, 256);
}

void SetKinetoGunzipThreadForTesting(bool on) { g_gunzip_thread = on; }

void SetKinetoReadBytesForTesting(size_t bytes) {
  g_read_bytes = bytes == 0 ? kDefaultReadBytes : bytes;
}

// ---------------------------------------------------------------------------------------
// Reading and gunzip

namespace {

std::string ErrnoText(int err) { return std::strerror(err); }

// Gunzip's view of a PaddedBuffer: it grows by remapping, and keeps its padding zeroed.
class PaddedOutput : public GunzipOutput {
 public:
  explicit PaddedOutput(PaddedBuffer& buffer) : buffer_(buffer) {}
  char* Reserve(size_t capacity, size_t keep) override {
    buffer_.Resize(keep);
    return buffer_.Reserve(capacity) ? buffer_.data() : nullptr;
  }
  void SetSize(size_t size) override { buffer_.Resize(size); }

 private:
  PaddedBuffer& buffer_;
};

}  // namespace

Status GunzipInto(std::string_view in, const std::string& name, PaddedBuffer& out,
                  GunzipInfo* info) {
  PaddedOutput sink(out);
  GunzipOptions options;
  TELLER_RETURN_IF_ERROR(GuardedGunzipOptions(in.size(), &options));
  return Gunzip(in, name, options, sink, info);
}

Status AppendFromFd(int fd, const std::string& name, PaddedBuffer& out, size_t until) {
  size_t got = out.size();
  while (got < until) {
    if (got == out.capacity() && !out.Reserve(std::max<size_t>(out.capacity() * 2, 1 << 16))) {
      return Status::Error(name + ": out of memory reading " + std::to_string(got) + " bytes");
    }
    const size_t room = std::min(out.capacity(), until) - got;
    const ssize_t n = read(fd, out.data() + got, room);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      out.Resize(got);
      return Status::Error(name + ": read error: " + ErrnoText(err));
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  out.Resize(got);
  return Status::Ok();
}

Status ReadMaybeGzip(const std::string& path, PaddedBuffer& out, GunzipInfo* info) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::Error(path + ": cannot open: " + ErrnoText(errno));
  struct stat st;
  if (fstat(fd, &st) != 0) {
    const int err = errno;
    close(fd);
    return Status::Error(path + ": cannot stat: " + ErrnoText(err));
  }
  if (S_ISDIR(st.st_mode)) {
    close(fd);
    return Status::Error(path + ": is a directory, expected a .json or .json.gz file");
  }
  PaddedBuffer raw;
  // A pipe or FIFO has no size: the buffer grows as it is read.
  const size_t size = S_ISREG(st.st_mode) ? static_cast<size_t>(st.st_size) : 0;
  if (!raw.Reserve(size)) {
    close(fd);
    return Status::Error(path + ": out of memory reading " + std::to_string(size) + " bytes");
  }
  const Status read_status = AppendFromFd(fd, path, raw);
  close(fd);
  TELLER_RETURN_IF_ERROR(read_status);
  return MaybeGunzip(std::move(raw), path, out, info);
}

Status MaybeGunzip(PaddedBuffer&& raw, const std::string& name, PaddedBuffer& out,
                   GunzipInfo* info) {
  if (info != nullptr) *info = GunzipInfo();
  if (IsGzip(raw.view())) return GunzipInto(raw.view(), name, out, info);
  out = std::move(raw);
  return Status::Ok();
}

// ---------------------------------------------------------------------------------------
// Parsing

namespace {

namespace od = simdjson::ondemand;
using simdjson::error_code;

// What a category means. kFlowOnly categories are never events.
enum class Kind : uint8_t {
  kRange,
  kRuntime,
  kDriver,
  kKernel,
  kMemcpy,
  kMemset,
  kSync,
  kGpuAnnotation,
  kUnknown,
};

Kind KindOfCategory(std::string_view cat) {
  // Current names, then the 2021 capitalised ones (kineto/resnet50_*).
  if (cat == "cpu_op" || cat == "user_annotation" || cat == "python_function" ||
      cat == "Operator") {
    return Kind::kRange;
  }
  if (cat == "cuda_runtime" || cat == "Runtime") return Kind::kRuntime;
  if (cat == "cuda_driver") return Kind::kDriver;
  if (cat == "kernel" || cat == "Kernel") return Kind::kKernel;
  if (cat == "gpu_memcpy" || cat == "Memcpy") return Kind::kMemcpy;
  if (cat == "gpu_memset" || cat == "Memset") return Kind::kMemset;
  if (cat == "cuda_sync") return Kind::kSync;
  if (cat == "gpu_user_annotation") return Kind::kGpuAnnotation;
  return Kind::kUnknown;
}

bool IsGpuKind(Kind k) {
  return k == Kind::kKernel || k == Kind::kMemcpy || k == Kind::kMemset || k == Kind::kSync ||
         k == Kind::kGpuAnnotation;
}

EventType TypeOfKind(Kind k) {
  switch (k) {
    case Kind::kRange:
      return EventType::kRange;
    case Kind::kRuntime:
      return EventType::kRuntime;
    case Kind::kDriver:
      return EventType::kDriver;
    case Kind::kKernel:
      return EventType::kKernel;
    case Kind::kMemcpy:
      return EventType::kMemcpy;
    case Kind::kMemset:
      return EventType::kMemset;
    case Kind::kSync:
      return EventType::kSync;
    case Kind::kGpuAnnotation:
      return EventType::kGpuAnnotation;
    case Kind::kUnknown:
      break;
  }
  return EventType::kMark;
}

// Bytes per element of the dtype names PyTorch writes in record_param_comms args.
uint64_t DtypeBytes(std::string_view t) {
  if (t == "Float" || t == "float" || t == "float32" || t == "Int" || t == "int" || t == "int32" ||
      t == "ComplexHalf") {
    return 4;
  }
  if (t == "Half" || t == "BFloat16" || t == "half" || t == "bfloat16" || t == "float16" ||
      t == "Short" || t == "int16") {
    return 2;
  }
  if (t == "Double" || t == "double" || t == "float64" || t == "Long" || t == "long" ||
      t == "int64" || t == "ComplexFloat") {
    return 8;
  }
  if (t == "Byte" || t == "Char" || t == "Bool" || t == "bool" || t == "int8" || t == "uint8" ||
      t.substr(0, 6) == "Float8") {
    return 1;
  }
  if (t == "ComplexDouble") return 16;
  return 0;
}

inline bool IsDigit(char c) { return c >= '0' && c <= '9'; }
inline bool IsJsonSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// Microseconds as written by Kineto ("1694128201426674", "1365627949842.376", "-0.5") to
// integer nanoseconds, from the decimal text. A double cannot do this: epoch µs with 3
// decimals have 19 significant digits, a double 15-17. The 4th decimal and beyond round
// the result half away from zero. Exponent forms (never written by Kineto) go through a
// double. Returns false when the text is not a number or does not fit in int64 ns.
bool ParseMicrosToNanos(std::string_view s, int64_t* out) {
  while (!s.empty() && IsJsonSpace(s.back())) s.remove_suffix(1);
  size_t i = 0;
  const size_t n = s.size();
  bool negative = false;
  if (i < n && s[i] == '-') {
    negative = true;
    ++i;
  }
  if (i >= n || !IsDigit(s[i])) return false;
  constexpr uint64_t kMaxMicros = static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / 1000;
  uint64_t micros = 0;
  for (; i < n && IsDigit(s[i]); ++i) {
    micros = micros * 10 + static_cast<uint64_t>(s[i] - '0');
    if (micros > kMaxMicros) return false;
  }
  uint64_t frac = 0;
  int frac_digits = 0;
  bool round_up = false;
  if (i < n && s[i] == '.') {
    ++i;
    if (i >= n || !IsDigit(s[i])) return false;
    for (; i < n && IsDigit(s[i]); ++i) {
      if (frac_digits < 3) {
        frac = frac * 10 + static_cast<uint64_t>(s[i] - '0');
      } else if (frac_digits == 3) {
        round_up = s[i] >= '5';
      }
      ++frac_digits;
    }
  }
  if (i < n && (s[i] == 'e' || s[i] == 'E')) {
    double v = 0;
    const auto [ptr, ec] = std::from_chars(s.data(), s.data() + n, v);
    if (ec != std::errc() || ptr != s.data() + n) return false;
    const double ns = v * 1000.0;
    if (!(std::fabs(ns) < 9.2e18)) return false;
    *out = std::llround(ns);
    return true;
  }
  if (i != n) return false;
  for (int d = frac_digits; d < 3; ++d) frac *= 10;
  const uint64_t ns = micros * 1000 + frac + (round_up ? 1 : 0);
  if (ns > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return false;
  *out = negative ? -static_cast<int64_t>(ns) : static_cast<int64_t>(ns);
  return true;
}

// Whole decimal integer (optionally signed) in `s`, nothing else.
bool ParseDecimalInt(std::string_view s, int64_t* out) {
  if (s.empty()) return false;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

// FNV-1a: stable across runs and platforms, for non-numeric tids ("PyTorch Profiler").
uint32_t StableHash32(std::string_view s) {
  uint32_t h = 2166136261u;
  for (const char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 16777619u;
  }
  return h;
}

// A pid or tid: a number, a numeric string ("25738"), or a name ("stream 7", "Spans").
struct IdValue {
  bool present = false;
  bool numeric = false;
  int64_t number = 0;
  std::string_view text;  // when not numeric; view into the parser's string buffer,
                          // valid until the next window is parsed
};

// Counters of one file, restored when a window is rolled back.
struct FileCounters {
  uint64_t flow_events = 0;
  uint64_t metadata_events = 0;
  uint64_t missing_field = 0;
  uint64_t missing_duration = 0;
  uint64_t wrong_type = 0;
  uint64_t negative_duration = 0;
  uint64_t unsupported_phase = 0;
  uint64_t hashed_tid = 0;
  uint64_t nonnumeric_pid = 0;
  uint64_t non_object_event = 0;
  uint64_t time_overflow = 0;
};

struct PidSlot {
  int64_t pid = 0;
  uint64_t host_events = 0;
};

// Everything a window changes besides the event rows; copied before a window and
// restored when the window is rejected (a few dozen bytes plus tiny vectors).
struct FileState {
  FileCounters counters;
  std::vector<PidSlot> pids;
  std::vector<uint64_t> unknown_per_category;  // parallel to Importer::categories_
  bool has_base = false;
  int64_t base_ns = 0;
  int32_t rank = -1;
  int32_t world_size = -1;
  bool saw_trace_events = false;
  uint64_t elements = 0;  // of the events array, objects or not
};

struct CategoryEntry {
  std::string text;
  Kind kind = Kind::kUnknown;
  StringId id = 0;
};

// A string view without a constructor, so that RawEvent can leave it unset.
struct Text {
  const char* data;
  size_t size;
  std::string_view view() const { return {data, size}; }
  void Set(std::string_view v) {
    data = v.data();
    size = v.size();
  }
};

// One event's fields as read; views point into the parser's buffers.
struct RawEvent {
  char ph = 0;
  bool has_ph = false;
  bool has_cat = false;
  bool has_name = false;
  bool has_ts = false;
  bool has_dur = false;
  bool has_device = false;
  bool has_stream = false;
  bool has_bytes = false;
  std::string_view cat;
  std::string_view name;
  int64_t ts_ns = 0;
  int64_t dur_ns = 0;
  IdValue pid;
  IdValue tid;
  uint64_t correlation = 0;
  uint64_t external_id = 0;
  int64_t device = 0;
  int64_t stream = 0;
  uint64_t bytes = 0;
  uint64_t in_msg_nelems = 0;
  std::string_view dtype;
  // Signature args (docs/signature.md). Only `signature_args` is initialized: a field is
  // valid when its bit is set, so that the many events without such args pay for one
  // word (RawEvent is built for every event). Texts point into the window or the
  // parser's string buffer.
  uint32_t signature_args = 0;  // SignatureArg bits
  uint64_t out_msg_nelems;
  uint64_t group_size;
  uint64_t grid[3];
  uint64_t block[3];
  uint64_t shared_memory;
  Text collective;
  Text input_dims;   // JSON text of the array
  Text input_types;  // JSON text of the array
  Text copy_kind;
};

// Hash of the shape-cache keys: 8 bytes per multiply, about a third of std::hash's cost
// on keys of 100-200 bytes, which are hashed once per host op of a trace that records
// shapes. Not a stable or portable hash; only the cache sees it.
struct ShapeKeyHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const {
    uint64_t h = 0x9e3779b97f4a7c15ull ^ s.size();
    size_t i = 0;
    for (; i + 8 <= s.size(); i += 8) {
      uint64_t w;
      std::memcpy(&w, s.data() + i, 8);
      h = (h ^ w) * 0xff51afd7ed558ccdull;
      h ^= h >> 29;
    }
    uint64_t tail = 0;
    std::memcpy(&tail, s.data() + i, s.size() - i);
    h = (h ^ tail) * 0xc4ceb9fe1a85ec53ull;
    return static_cast<size_t>(h ^ (h >> 32));
  }
};

// Bits of RawEvent::signature_args.
enum SignatureArg : uint32_t {
  kArgIn = 1u << 0,
  kArgOut = 1u << 1,
  kArgGroup = 1u << 2,
  kArgGrid = 1u << 3,
  kArgBlock = 1u << 4,
  kArgSharedMemory = 1u << 5,
  kArgCollective = 1u << 6,
  kArgDims = 1u << 7,
  kArgTypes = 1u << 8,
  kArgCopyKind = 1u << 9,
};

// Sentinels in the process column until the file's processes are known.
constexpr uint32_t kMainSlot = std::numeric_limits<uint32_t>::max();

// Thrown-free error propagation for the parse: a simdjson code plus what we were reading.
struct ParseError {
  error_code code = simdjson::SUCCESS;
  const char* where = nullptr;  // pointer into the buffer when known
  std::string expected;         // what the importer expected there
  bool trailing = false;        // the trace parsed, and another JSON value follows it
};

// The JSON text as a sliding buffer over a ByteSource: bytes are appended as the window
// search needs them and dropped from the front once a window's document is parsed, so
// that memory holds about one window (plus one read) rather than the whole text. Offsets
// into data() shift by the bytes dropped; dropped() is the text offset of data()[0].
class StreamText {
 public:
  // `buf`: the buffer to use, emptied first (reused across files: its pages stay mapped).
  StreamText(ByteSource& source, const std::string& name, size_t read_bytes, PaddedBuffer& buf)
      : source_(source), name_(name), read_bytes_(read_bytes), buf_(buf) {
    buf_.Resize(0);
  }

  char* data() { return buf_.data(); }
  size_t size() const { return buf_.size(); }
  // Readable bytes from data(), padding included (simdjson's padded length).
  size_t padded_capacity() const { return buf_.capacity() + PaddedBuffer::kPadding; }
  bool eof() const { return eof_; }
  uint64_t dropped() const { return dropped_; }

  // Appends the next read (up to read_bytes_) unless at the end of the text.
  Status ReadMore() {
    if (eof_) return Status::Ok();
    const size_t have = buf_.size();
    if (have + read_bytes_ > buf_.capacity() &&
        !buf_.Reserve(std::max(buf_.capacity() * 2, have + read_bytes_))) {
      return Status::Error(name_ + ": out of memory reading " + std::to_string(have + read_bytes_) +
                           " bytes");
    }
    size_t got = 0;
    TELLER_RETURN_IF_ERROR(source_.Read(buf_.data() + have, read_bytes_, &got));
    if (got == 0) eof_ = true;
    buf_.Resize(have + got);
    return Status::Ok();
  }
  // Appends one byte (the `]` that closes an unfinished array form); false when out of
  // memory.
  bool Append(char c) {
    if (!buf_.Reserve(buf_.size() + 1)) return false;
    buf_.data()[buf_.size()] = c;
    buf_.Resize(buf_.size() + 1);
    return true;
  }
  // Drops the first `n` bytes.
  void DropFront(size_t n) {
    std::memmove(buf_.data(), buf_.data() + n, buf_.size() - n);
    buf_.Resize(buf_.size() - n);
    dropped_ += n;
  }

 private:
  ByteSource& source_;
  const std::string& name_;
  const size_t read_bytes_;
  PaddedBuffer& buf_;
  uint64_t dropped_ = 0;
  bool eof_ = false;
};

class Importer {
 public:
  Importer(const std::string& name, Trace& trace, od::parser& parser, size_t gzip_members)
      : name_(name), trace_(trace), parser_(parser), gzip_members_(gzip_members) {}

  Status Run(PaddedBuffer& json);
  // The same over text read as it is parsed (docs/ingest-kineto.md, "Streaming"): the
  // same windows, rows and counters as Run on the whole text. `size_estimate` (of the
  // text, 0 when unknown) sizes the event columns.
  Status RunStream(StreamText& text, size_t size_estimate);

 private:
  // Parses the document [begin, begin+len) of the buffer. `final` windows may end the
  // top-level object anywhere; others must end with the traceEvents array.
  bool ParseWindow(const char* begin, size_t len, size_t capacity, bool final, ParseError* err);
  error_code ParseTopLevel(od::document& doc, bool final, bool* ended_with_events, ParseError* err);
  error_code ParseEvents(od::array& events, ParseError* err);
  error_code ParseEvent(od::object& obj);
  error_code ParseArgs(od::object& args, RawEvent& ev);
  StringId Signature(const RawEvent& ev, EventType type);
  error_code ParseDistributedInfo(od::value& v);
  void ReadId(od::value& v, IdValue& id);
  bool ReadTime(od::value& v, int64_t* ns);
  void Emit(RawEvent& ev);
  const CategoryEntry& Category(std::string_view cat, size_t* index);
  uint32_t PidSlotFor(int64_t pid);
  uint32_t HostThread(const IdValue& tid);
  uint32_t GpuStream(const RawEvent& ev);
  Status Finish(size_t first_row);
  // Blanks a UTF-8 byte order mark, tells the array form from the object form, and closes
  // an array form that lacks its final `]`.
  void PrepareForm(PaddedBuffer& json);
  // PrepareForm for streamed text: the start now, the end (CloseArrayTail) when the
  // text's end is read.
  Status PrepareStreamForm(StreamText& text);
  void CloseArrayTail(StreamText& text);
  // Reads more of the text; at its end, closes an unfinished array form.
  Status ReadMore(StreamText& text);
  // FindCut over streamed text: reads until the cut at or after `from` is certain, or the
  // text ends (npos).
  // `body`: the window's first event (or 0 for the first window), where a compact scan
  // starts when the text has no newline cut.
  Status FindStreamCut(StreamText& text, size_t from, size_t body, size_t* cut);
  Status StreamWindows(StreamText& text, size_t first_row);
  void ReserveRows(size_t size_estimate);
  // The error of `err`, found while parsing the final window, which starts at
  // `window_start` of `text` (bytes of the JSON text from byte `text_offset` on).
  Status ErrorAt(std::string_view text, uint64_t text_offset, size_t window_start,
                 const ParseError& err) const;
  void Rollback(size_t rows, FileState&& saved);

  const std::string& name_;
  Trace& trace_;
  od::parser& parser_;
  const size_t gzip_members_;  // of the file the JSON was gunzipped from; 0 when plain
  // The JSON-array form of the trace-event format (`[ {event}, ... ]`) rather than the
  // object form (`{"traceEvents": [...]}`).
  bool array_form_ = false;
  size_t input_size_ = 0;  // of the JSON as given, before a missing `]` was appended
  // Streaming: the text offset of the first non-blank byte (the `[` of the array form),
  // and whether the text's end was seen (and an unfinished array form closed).
  uint64_t first_byte_ = 0;
  bool tail_done_ = false;
  FileState state_;
  std::vector<CategoryEntry> categories_;
  size_t last_category_ = 0;
  size_t events_in_window_ = 0;
  bool window_has_events_ = false;
  std::string signature_;  // the current event's signature text, before interning
  // Signatures of host ops by the raw text of their shape args (`key_`, reused), so that
  // the canonical text of args seen before is neither rebuilt nor re-interned: the ops of
  // a trace repeat a few hundred shapes many thousand times.
  std::string key_;
  std::unordered_map<std::string, StringId, ShapeKeyHash, std::equal_to<>> shape_cache_;
  // Signatures of plain kernels by launch geometry, so that the text of a launch seen
  // before is neither rebuilt nor hashed again (a trace has a few hundred distinct ones).
  struct GeometryEntry {
    uint64_t key[7];
    StringId id = 0;  // 0 = empty slot (a kernel signature is never the empty string)
  };
  std::vector<GeometryEntry> geometry_cache_ = std::vector<GeometryEntry>(512);
};

error_code Importer::ParseDistributedInfo(od::value& v) {
  od::object obj;
  if (v.get_object().get(obj) != simdjson::SUCCESS) {
    ++state_.counters.wrong_type;
    return simdjson::SUCCESS;
  }
  for (auto field_result : obj) {
    od::field field;
    if (const error_code e = std::move(field_result).get(field); e != simdjson::SUCCESS) return e;
    const od::raw_json_string key = field.key();
    int64_t number = 0;
    if (key.unsafe_is_equal("rank")) {
      if (field.value().get_int64().get(number) == simdjson::SUCCESS && number >= 0 &&
          number <= std::numeric_limits<int32_t>::max()) {
        state_.rank = static_cast<int32_t>(number);
      } else {
        ++state_.counters.wrong_type;
      }
    } else if (key.unsafe_is_equal("world_size")) {
      if (field.value().get_int64().get(number) == simdjson::SUCCESS && number > 0 &&
          number <= std::numeric_limits<int32_t>::max()) {
        state_.world_size = static_cast<int32_t>(number);
      } else {
        ++state_.counters.wrong_type;
      }
    }
  }
  return simdjson::SUCCESS;
}

void Importer::ReadId(od::value& v, IdValue& id) {
  od::json_type type;
  if (v.type().get(type) != simdjson::SUCCESS) {
    ++state_.counters.wrong_type;
    return;
  }
  if (type == od::json_type::number) {
    int64_t n = 0;
    if (v.get_int64().get(n) == simdjson::SUCCESS) {
      id.present = id.numeric = true;
      id.number = n;
      return;
    }
    double d = 0;
    if (v.get_double().get(d) == simdjson::SUCCESS && d == std::floor(d) && std::fabs(d) < 9e18) {
      id.present = id.numeric = true;
      id.number = static_cast<int64_t>(d);
      return;
    }
    ++state_.counters.wrong_type;
    return;
  }
  if (type == od::json_type::string) {
    std::string_view text;
    if (v.get_string().get(text) != simdjson::SUCCESS) {
      ++state_.counters.wrong_type;
      return;
    }
    id.present = true;
    int64_t n = 0;
    if (ParseDecimalInt(text, &n)) {
      id.numeric = true;
      id.number = n;
    } else {
      id.text = text;
    }
    return;
  }
  ++state_.counters.wrong_type;
}

bool Importer::ReadTime(od::value& v, int64_t* ns) {
  const std::string_view raw = v.raw_json_token();
  if (!raw.empty() && raw[0] == '"') {
    // A quoted number is damage we can still read.
    std::string_view text;
    ++state_.counters.wrong_type;
    return v.get_string().get(text) == simdjson::SUCCESS && ParseMicrosToNanos(text, ns);
  }
  if (ParseMicrosToNanos(raw, ns)) return true;
  ++state_.counters.wrong_type;
  return false;
}

// Reads an unsigned integer arg; numeric strings ("9216", ROCm runtime "bytes") count too.
bool ReadUnsigned(od::value& v, uint64_t* out) {
  if (v.get_uint64().get(*out) == simdjson::SUCCESS) return true;
  std::string_view text;
  int64_t n = 0;
  if (v.get_string().get(text) == simdjson::SUCCESS && ParseDecimalInt(text, &n) && n >= 0) {
    *out = static_cast<uint64_t>(n);
    return true;
  }
  return false;
}

// Reads a [x, y, z] array of unsigned integers (Kineto "grid", "block") into `out`;
// false for anything else. The digits are read from the input text at the array's first
// token and the value is left unconsumed, for simdjson to skip as any unread arg: a
// kernel has two of these, and iterating them value by value cost as much as all the
// rest of the signature. The scan stops at the first byte that cannot continue the
// array, at the latest at the buffer's zero padding.
bool ReadTriple(od::value& v, uint64_t (&out)[3]) {
  const char* p = v.raw_json_token().data();
  if (p == nullptr || *p != '[') return false;
  ++p;
  for (int k = 0; k < 3; ++k) {
    while (IsJsonSpace(*p)) ++p;
    const char* digits = p;
    uint64_t x = 0;
    while (IsDigit(*p) && p - digits < 19) x = x * 10 + static_cast<uint64_t>(*p++ - '0');
    if (p == digits || IsDigit(*p)) return false;
    while (IsJsonSpace(*p)) ++p;
    if (*p != (k < 2 ? ',' : ']')) return false;
    ++p;
    out[k] = x;
  }
  return true;
}

bool ReadSigned(od::value& v, int64_t* out) {
  if (v.get_int64().get(*out) == simdjson::SUCCESS) return true;
  std::string_view text;
  return v.get_string().get(text) == simdjson::SUCCESS && ParseDecimalInt(text, out);
}

error_code Importer::ParseArgs(od::object& args, RawEvent& ev) {
  for (auto field_result : args) {
    od::field field;
    if (const error_code e = std::move(field_result).get(field); e != simdjson::SUCCESS) return e;
    const od::raw_json_string key = field.key();
    od::value& v = field.value();
    switch (key.raw()[0]) {
      case 'c':
        if (key.unsafe_is_equal("correlation")) {
          if (!ReadUnsigned(v, &ev.correlation)) ++state_.counters.wrong_type;
        }
        break;
      case 'E':
      case 'e':
        // "External id" since 2022, "external id" in the 2021 format.
        if (key.unsafe_is_equal("External id") || key.unsafe_is_equal("external id")) {
          if (!ReadUnsigned(v, &ev.external_id)) ++state_.counters.wrong_type;
        }
        break;
      case 'd':
        if (key.unsafe_is_equal("device")) {
          ev.has_device = ReadSigned(v, &ev.device);
        } else if (key.unsafe_is_equal("dtype")) {
          if (v.get_string().get(ev.dtype) != simdjson::SUCCESS) ev.dtype = {};
        }
        break;
      case 's':
        if (key.unsafe_is_equal("stream")) {
          ev.has_stream = ReadSigned(v, &ev.stream);
        } else if (key.unsafe_is_equal("shared memory")) {
          if (ReadUnsigned(v, &ev.shared_memory)) ev.signature_args |= kArgSharedMemory;
        }
        break;
      case 'b':
        if (key.unsafe_is_equal("bytes")) {
          ev.has_bytes = ReadUnsigned(v, &ev.bytes);
        } else if (key.unsafe_is_equal("block")) {
          if (ReadTriple(v, ev.block)) ev.signature_args |= kArgBlock;
        }
        break;
      case 'g':
        if (key.unsafe_is_equal("grid")) {
          if (ReadTriple(v, ev.grid)) ev.signature_args |= kArgGrid;
        }
        break;
      case 'I':
        if (key.unsafe_is_equal("In msg nelems")) {
          if (ReadUnsigned(v, &ev.in_msg_nelems)) {
            ev.signature_args |= kArgIn;
          } else {
            ev.in_msg_nelems = 0;
          }
        } else if (key.unsafe_is_equal("Input Dims") || key.unsafe_is_equal("Input dims")) {
          // "Input dims": PyTorch 1.8-1.9's profiler.
          od::array dims;
          std::string_view text;
          if (v.get_array().get(dims) == simdjson::SUCCESS &&
              dims.raw_json().get(text) == simdjson::SUCCESS) {
            ev.input_dims.Set(text);
            ev.signature_args |= kArgDims;
          }
        } else if (key.unsafe_is_equal("Input type")) {
          od::array types;
          std::string_view text;
          if (v.get_array().get(types) == simdjson::SUCCESS &&
              types.raw_json().get(text) == simdjson::SUCCESS) {
            ev.input_types.Set(text);
            ev.signature_args |= kArgTypes;
          }
        }
        break;
      case 'O':
        if (key.unsafe_is_equal("Out msg nelems")) {
          if (ReadUnsigned(v, &ev.out_msg_nelems)) ev.signature_args |= kArgOut;
        }
        break;
      case 'G':
        if (key.unsafe_is_equal("Group size")) {
          if (ReadUnsigned(v, &ev.group_size)) ev.signature_args |= kArgGroup;
        }
        break;
      case 'C':
        if (key.unsafe_is_equal("Collective name")) {
          std::string_view text;
          if (v.get_string().get(text) == simdjson::SUCCESS && !text.empty()) {
            ev.collective.Set(text);
            ev.signature_args |= kArgCollective;
          }
        }
        break;
      case 'k':
        // ROCm Kineto copies: "kind": "HtoD".
        if (key.unsafe_is_equal("kind")) {
          std::string_view text;
          if (v.get_string().get(text) == simdjson::SUCCESS && !text.empty()) {
            ev.copy_kind.Set(text);
            ev.signature_args |= kArgCopyKind;
          }
        }
        break;
      default:
        break;
    }
  }
  return simdjson::SUCCESS;
}

StringId Importer::Signature(const RawEvent& ev, EventType type) {
  const uint32_t a = ev.signature_args;
  SignatureFields f;
  const bool host_api = IsHostCall(type);
  const bool copy_or_set = type == EventType::kMemcpy || type == EventType::kMemset;
  if (!host_api && !copy_or_set) {
    if (a & kArgCollective) f.coll = ev.collective.view();
    f.has_in = (a & kArgIn) != 0;
    f.in = ev.in_msg_nelems;
    if (a & kArgOut) {
      f.has_out = true;
      f.out = ev.out_msg_nelems;
    }
    if (a & kArgGroup) {
      f.has_group = true;
      f.group = ev.group_size;
    }
    f.dtype = ev.dtype;
  }
  std::string types;  // empty unless the event has an "Input type" list
  bool cache_shapes = false;
  if ((a & (kArgDims | kArgTypes)) &&
      (type == EventType::kRange || type == EventType::kPush || type == EventType::kMark)) {
    cache_shapes = f.coll.empty() && !f.has_in && !f.has_out && !f.has_group;
    if (cache_shapes) {
      // Presence marks keep "no dims" apart from "dims []"; \x1f never occurs in JSON
      // text outside strings, and both texts are whole arrays.
      key_.clear();
      key_ += (a & kArgDims) ? 'D' : '-';
      if (a & kArgDims) key_ += ev.input_dims.view();
      key_ += '\x1f';
      key_ += (a & kArgTypes) ? 'T' : '-';
      if (a & kArgTypes) key_ += ev.input_types.view();
      const auto it = shape_cache_.find(std::string_view(key_));
      if (it != shape_cache_.end()) return it->second;
    }
    if (a & kArgDims) f.dims = ev.input_dims.view();
    // A list with a non-string entry has no canonical text: left out rather than guessed.
    if ((a & kArgTypes) && AppendTypeList(ev.input_types.view(), types)) f.types = types;
  }
  GeometryEntry* slot = nullptr;
  uint64_t key[7];
  if (type == EventType::kKernel && (a & kArgGrid) && (a & kArgBlock)) {
    f.has_grid = true;
    for (int i = 0; i < 3; ++i) {
      key[i] = f.grid[i] = ev.grid[i];
      key[3 + i] = f.block[i] = ev.block[i];
    }
    key[6] = f.smem = (a & kArgSharedMemory) ? ev.shared_memory : 0;
    if (f.coll.empty() && !f.has_in && !f.has_out && !f.has_group) {
      uint64_t h = 0x9e3779b97f4a7c15ull;
      for (const uint64_t k : key) h = (h ^ k) * 0xff51afd7ed558ccdull;
      slot = &geometry_cache_[(h >> 32) % geometry_cache_.size()];
      if (slot->id != 0 && std::equal(key, key + 7, slot->key)) return slot->id;
    }
  }
  if (type == EventType::kMemcpy && (a & kArgCopyKind) &&
      !NameCarriesCopyKind(ev.name, ev.copy_kind.view())) {
    f.copy = ev.copy_kind.view();
  }
  StringId id = 0;
  if (!f.empty()) {
    signature_.clear();
    AppendSignature(f, signature_);
    id = trace_.strings.Intern(signature_);
  }
  if (cache_shapes) shape_cache_.emplace(key_, id);
  if (slot != nullptr) {
    std::copy(key, key + 7, slot->key);
    slot->id = id;
  }
  return id;
}

error_code Importer::ParseEvent(od::object& obj) {
  RawEvent ev;
  for (auto field_result : obj) {
    od::field field;
    if (const error_code e = std::move(field_result).get(field); e != simdjson::SUCCESS) return e;
    const od::raw_json_string key = field.key();
    od::value& v = field.value();
    switch (key.raw()[0]) {
      case 'p':
        if (key.unsafe_is_equal("ph")) {
          std::string_view ph;
          if (v.get_string().get(ph) == simdjson::SUCCESS && ph.size() == 1) {
            ev.ph = ph[0];
            ev.has_ph = true;
            // Flows are not events; skip the rest of the object unread.
            if (ev.ph == 's' || ev.ph == 'f' || ev.ph == 't') {
              ++state_.counters.flow_events;
              return simdjson::SUCCESS;
            }
          } else {
            ++state_.counters.wrong_type;
          }
        } else if (key.unsafe_is_equal("pid")) {
          ReadId(v, ev.pid);
        }
        break;
      case 'c':
        if (key.unsafe_is_equal("cat")) {
          if (v.get_string().get(ev.cat) == simdjson::SUCCESS) {
            ev.has_cat = true;
          } else {
            ++state_.counters.wrong_type;
          }
        }
        break;
      case 'n':
        if (key.unsafe_is_equal("name")) {
          if (v.get_string().get(ev.name) == simdjson::SUCCESS) {
            ev.has_name = true;
          } else {
            ++state_.counters.wrong_type;
          }
        }
        break;
      case 't':
        if (key.unsafe_is_equal("ts")) {
          ev.has_ts = ReadTime(v, &ev.ts_ns);
        } else if (key.unsafe_is_equal("tid")) {
          ReadId(v, ev.tid);
        }
        break;
      case 'd':
        if (key.unsafe_is_equal("dur")) ev.has_dur = ReadTime(v, &ev.dur_ns);
        break;
      case 'a':
        if (key.unsafe_is_equal("args")) {
          od::object args;
          if (v.get_object().get(args) == simdjson::SUCCESS) {
            if (const error_code e = ParseArgs(args, ev); e != simdjson::SUCCESS) return e;
          } else {
            ++state_.counters.wrong_type;
          }
        }
        break;
      default:
        break;
    }
  }
  Emit(ev);
  return simdjson::SUCCESS;
}

const CategoryEntry& Importer::Category(std::string_view cat, size_t* index) {
  // A handful of categories per file: a linear scan with a last-hit shortcut beats hashing.
  if (last_category_ < categories_.size() && categories_[last_category_].text == cat) {
    *index = last_category_;
    return categories_[last_category_];
  }
  for (size_t i = 0; i < categories_.size(); ++i) {
    if (categories_[i].text == cat) {
      last_category_ = i;
      *index = i;
      return categories_[i];
    }
  }
  CategoryEntry entry;
  entry.text = std::string(cat);
  entry.kind = KindOfCategory(cat);
  entry.id = trace_.strings.Intern(cat);
  categories_.push_back(std::move(entry));
  state_.unknown_per_category.resize(categories_.size(), 0);
  last_category_ = categories_.size() - 1;
  *index = last_category_;
  return categories_.back();
}

uint32_t Importer::PidSlotFor(int64_t pid) {
  auto& pids = state_.pids;
  for (uint32_t i = 0; i < pids.size(); ++i) {
    if (pids[i].pid == pid) return i;
  }
  pids.push_back(PidSlot{pid, 0});
  return static_cast<uint32_t>(pids.size() - 1);
}

uint32_t Importer::HostThread(const IdValue& tid) {
  if (tid.present && tid.numeric && tid.number >= 0 &&
      tid.number <= std::numeric_limits<uint32_t>::max()) {
    return static_cast<uint32_t>(tid.number);
  }
  if (!tid.present) return 0;
  ++state_.counters.hashed_tid;
  if (tid.numeric) return StableHash32(std::to_string(tid.number));
  return StableHash32(tid.text);
}

uint32_t Importer::GpuStream(const RawEvent& ev) {
  // -1 ("no stream": context or event syncs) and other negatives become 0xffffffff.
  if (ev.has_stream) return static_cast<uint32_t>(ev.stream);
  const IdValue& tid = ev.tid;
  if (!tid.present) return 0;
  if (tid.numeric) return static_cast<uint32_t>(tid.number);
  // 2021 format: "stream 7".
  std::string_view t = tid.text;
  while (!t.empty() && t.back() == ' ') t.remove_suffix(1);
  size_t digits = t.size();
  while (digits > 0 && IsDigit(t[digits - 1])) --digits;
  int64_t n = 0;
  if (digits < t.size() && ParseDecimalInt(t.substr(digits), &n) &&
      n <= std::numeric_limits<uint32_t>::max()) {
    return static_cast<uint32_t>(n);
  }
  ++state_.counters.hashed_tid;
  return StableHash32(tid.text);
}

void Importer::Emit(RawEvent& ev) {
  FileCounters& c = state_.counters;
  if (!ev.has_ph) {
    ++c.missing_field;
    return;
  }
  EventRow row;
  Kind kind = Kind::kRange;
  switch (ev.ph) {
    case 'M':
      // process_name, thread_name, process_labels, *_sort_index: names only, and the
      // Trace schema has no place for them (ProcessInfo::label is the file name).
      ++c.metadata_events;
      return;
    case 'X':
      break;
    case 'i':
    case 'I':
      row.type = EventType::kMark;
      break;
    case 'B':
      row.type = EventType::kPush;
      break;
    case 'E':
      row.type = EventType::kPop;
      break;
    default:
      ++c.unsupported_phase;
      return;
  }
  if (!ev.has_name || !ev.has_ts) {
    ++c.missing_field;
    return;
  }
  size_t cat_index = 0;
  const CategoryEntry& cat = Category(ev.has_cat ? ev.cat : std::string_view(), &cat_index);
  if (ev.ph == 'X') {
    kind = cat.kind;
    if (kind == Kind::kUnknown) {
      ++state_.unknown_per_category[cat_index];
      return;
    }
    row.type = TypeOfKind(kind);
  }
  row.category = cat.id;
  row.name = trace_.strings.Intern(ev.name);
  row.start_ns = ev.ts_ns;
  row.end_ns = ev.ts_ns;
  if (ev.ph == 'X') {
    if (!ev.has_dur) {
      ++c.missing_duration;
    } else if (ev.dur_ns < 0) {
      ++c.negative_duration;
    } else if (__builtin_add_overflow(ev.ts_ns, ev.dur_ns, &row.end_ns)) {
      ++c.time_overflow;
      row.end_ns = ev.ts_ns;
    }
  }
  row.correlation = ev.correlation;
  row.external_id = ev.external_id;
  if (ev.has_bytes) {
    row.bytes = ev.bytes;
  } else if (ev.in_msg_nelems > 0) {
    row.bytes = ev.in_msg_nelems * DtypeBytes(ev.dtype);
  }
  if (ev.signature_args != 0) row.signature = Signature(ev, row.type);
  if (ev.ph == 'X' && IsGpuKind(kind)) {
    // GPU rows: pid is the device, tid the stream; args say it better when present.
    row.process = kMainSlot;
    if (ev.has_device) {
      row.device = static_cast<uint32_t>(ev.device);
    } else if (ev.pid.numeric && ev.pid.number >= 0) {
      row.device = static_cast<uint32_t>(ev.pid.number);
    }
    row.stream = GpuStream(ev);
    row.thread = row.stream;
  } else {
    if (ev.pid.present && ev.pid.numeric) {
      const uint32_t slot = PidSlotFor(ev.pid.number);
      ++state_.pids[slot].host_events;
      row.process = slot;
    } else {
      // "Traces"/"Spans"/"" pids of profiler-global instants: the file's main process.
      ++c.nonnumeric_pid;
      row.process = kMainSlot;
    }
    row.thread = HostThread(ev.tid);
    if (ev.has_device) row.device = static_cast<uint32_t>(ev.device);
    if (ev.has_stream) row.stream = static_cast<uint32_t>(ev.stream);
  }
  trace_.events.Append(row);
}

error_code Importer::ParseEvents(od::array& events, ParseError* err) {
  for (auto element : events) {
    od::value value;
    if (const error_code e = element.get(value); e != simdjson::SUCCESS) {
      err->expected = "an event object in traceEvents";
      return e;
    }
    od::json_type type;
    if (const error_code e = value.type().get(type); e != simdjson::SUCCESS) {
      err->expected = "an event object in traceEvents";
      return e;
    }
    ++events_in_window_;
    ++state_.elements;
    if (type != od::json_type::object) {
      ++state_.counters.non_object_event;
      continue;
    }
    od::object obj;
    if (const error_code e = value.get_object().get(obj); e != simdjson::SUCCESS) {
      err->expected = "an event object in traceEvents";
      return e;
    }
    if (const error_code e = ParseEvent(obj); e != simdjson::SUCCESS) {
      err->expected = "a well-formed event object in traceEvents";
      return e;
    }
  }
  return simdjson::SUCCESS;
}

error_code Importer::ParseTopLevel(od::document& doc, bool final, bool* ended_with_events,
                                   ParseError* err) {
  *ended_with_events = false;
  if (array_form_) {
    od::array events;
    if (const error_code e = doc.get_array().get(events); e != simdjson::SUCCESS) {
      err->expected = "an array of events (the JSON-array form of a Chrome trace)";
      return e;
    }
    window_has_events_ = true;
    if (const error_code e = ParseEvents(events, err); e != simdjson::SUCCESS) return e;
    *ended_with_events = true;
    return simdjson::SUCCESS;
  }
  od::object root;
  if (const error_code e = doc.get_object().get(root); e != simdjson::SUCCESS) {
    err->expected =
        "a JSON object (a Chrome trace: {\"traceEvents\": [...]}) or an array of events";
    return e;
  }
  for (auto field_result : root) {
    od::field field;
    if (const error_code e = std::move(field_result).get(field); e != simdjson::SUCCESS) {
      err->expected = "a top-level \"key\": value";
      return e;
    }
    const od::raw_json_string key = field.key();
    od::value& v = field.value();
    *ended_with_events = false;
    if (key.unsafe_is_equal("traceEvents")) {
      od::array events;
      if (const error_code e = v.get_array().get(events); e != simdjson::SUCCESS) {
        err->expected = "traceEvents to be an array";
        return e;
      }
      window_has_events_ = true;
      if (const error_code e = ParseEvents(events, err); e != simdjson::SUCCESS) return e;
      *ended_with_events = true;
    } else if (key.unsafe_is_equal("baseTimeNanoseconds")) {
      int64_t base = 0;
      std::string_view raw = v.raw_json_token();
      if (v.get_int64().get(base) == simdjson::SUCCESS) {
        state_.has_base = true;
        state_.base_ns = base;
      } else if (!raw.empty() && raw[0] == '"' && v.get_string().get(raw) == simdjson::SUCCESS &&
                 ParseDecimalInt(raw, &base)) {
        ++state_.counters.wrong_type;
        state_.has_base = true;
        state_.base_ns = base;
      } else {
        ++state_.counters.wrong_type;
      }
    } else if (key.unsafe_is_equal("distributedInfo")) {
      if (const error_code e = ParseDistributedInfo(v); e != simdjson::SUCCESS) {
        err->expected = "distributedInfo to be an object";
        return e;
      }
    }
  }
  (void) final;
  return simdjson::SUCCESS;
}

bool Importer::ParseWindow(const char* begin, size_t len, size_t capacity, bool final,
                           ParseError* err) {
  window_has_events_ = false;
  events_in_window_ = 0;
  g_largest_window = std::max(g_largest_window, len);
  od::document doc;
  const error_code e = parser_.iterate(simdjson::padded_string_view(begin, len, capacity)).get(doc);
  if (e != simdjson::SUCCESS) {
    err->code = e;
    err->where = nullptr;
    err->expected = "valid JSON";
    return false;
  }
  bool ended_with_events = false;
  const error_code pe = ParseTopLevel(doc, final, &ended_with_events, err);
  if (pe != simdjson::SUCCESS) {
    err->code = pe;
    const char* where = nullptr;
    if (doc.current_location().get(where) == simdjson::SUCCESS) err->where = where;
    return false;
  }
  if (final) {
    // simdjson stops at the end of the first value: anything after it but whitespace is a
    // second document (`cat a.json b.json`, or two gzip members each holding a trace),
    // which would otherwise be dropped without a word.
    const char* next = nullptr;
    if (doc.current_location().get(next) == simdjson::SUCCESS) {
      err->code = simdjson::TRAILING_CONTENT;
      err->where = next;
      err->trailing = true;
      return false;
    }
  }
  if (window_has_events_) state_.saw_trace_events = true;
  if (!final && !ended_with_events) {
    err->code = simdjson::TAPE_ERROR;
    err->expected = "the window to end inside traceEvents";
    return false;
  }
  return true;
}

void Importer::Rollback(size_t rows, FileState&& saved) {
  EventTable& t = trace_.events;
  t.type.resize(rows);
  t.name.resize(rows);
  t.category.resize(rows);
  t.domain.resize(rows);
  t.process.resize(rows);
  t.thread.resize(rows);
  t.start_ns.resize(rows);
  t.end_ns.resize(rows);
  t.correlation.resize(rows);
  t.external_id.resize(rows);
  t.device.resize(rows);
  t.stream.resize(rows);
  t.bytes.resize(rows);
  t.flags.resize(rows);
  t.signature.resize(rows);
  state_ = std::move(saved);
  state_.unknown_per_category.resize(categories_.size(), 0);
}

Status Importer::ErrorAt(std::string_view text, uint64_t text_offset, size_t window_start,
                         const ParseError& err) const {
  size_t offset = 0;
  if (err.where != nullptr && err.where >= text.data() && err.where <= text.data() + text.size()) {
    // Not past the input's end: the `]` appended to an unclosed array form is not input.
    offset = std::min(text_offset + static_cast<size_t>(err.where - text.data()), input_size_);
  } else if (err.code == simdjson::UNCLOSED_STRING || err.code == simdjson::UTF8_ERROR ||
             err.code == simdjson::UNESCAPED_CHARS) {
    // Searched from the window's start: the windows before it were valid JSON (so no
    // string is open there), and the prefixes written over their last bytes could
    // otherwise shift the count of quotes or split a UTF-8 sequence.
    offset = text_offset + window_start + LocateStage1Error(text.substr(window_start), err.code);
  } else if (err.where != nullptr) {
    offset = input_size_;
  }
  std::string msg = name_ + ": ";
  if (err.code == simdjson::EMPTY) {
    return Status::Error(msg + "empty file, expected a Chrome trace JSON object");
  }
  if (err.trailing) {
    msg += "invalid JSON at byte " + std::to_string(offset) +
           ": a second JSON document follows the trace (concatenated documents";
    if (gzip_members_ > 1)
      msg += "; the file has " + std::to_string(gzip_members_) + " gzip members";
    msg += "); expected only whitespace after the trace";
    return Status::Error(std::move(msg));
  }
  if (err.code == simdjson::INCOMPLETE_ARRAY_OR_OBJECT) {
    // simdjson notices this when it runs out of input, and points at the start of the
    // document it was iterating: the true position is the end of the input.
    return Status::Error(msg + "invalid JSON at byte " + std::to_string(input_size_) +
                         " (the end of the input): the file ends inside an object or array, "
                         "it is truncated; expected " +
                         err.expected);
  }
  msg += "invalid JSON at byte " + std::to_string(offset) + ": " +
         simdjson::error_message(err.code) + "; expected " + err.expected;
  return Status::Error(std::move(msg));
}

// Finds the next cut at or after `from`: returns the position of the comma of a
// `}` ws `,` ws `{` run that contains a newline, with whitespace right after the comma
// (overwritten with `}`); npos when there is none.
size_t FindCut(const char* buf, size_t from, size_t end);
// The same, looking only at newlines at or after `scan` (>= from): what a streaming
// caller uses to resume a search after more text arrived. The backward look stays bounded
// by `from`, so the cut found is the one FindCut would find.
size_t FindCutFrom(const char* buf, size_t from, size_t scan, size_t end);

void Importer::PrepareForm(PaddedBuffer& json) {
  char* buf = json.data();
  size_t n = json.size();
  input_size_ = n;
  // A UTF-8 byte order mark (written by some Windows tools and editors) is not JSON.
  if (n >= 3 && std::memcmp(buf, "\xEF\xBB\xBF", 3) == 0) std::memset(buf, ' ', 3);
  size_t first = 0;
  while (first < n && IsJsonSpace(buf[first])) ++first;
  array_form_ = first < n && buf[first] == '[';
  if (!array_form_) return;
  // The trace-event format lets the array form end without its `]` (a process that died
  // while writing), possibly after a trailing comma: close it, so that what was written
  // is read. Anything else at the end is left for the parse to report.
  size_t last = n;
  while (last > first + 1 && IsJsonSpace(buf[last - 1])) --last;
  const char end = buf[last - 1];
  if (last - 1 == first || end == ']') return;
  if (end != ',' && end != '}') return;
  if (end == ',') buf[last - 1] = ' ';
  if (!json.Reserve(n + 1)) return;  // out of memory: the parse reports the missing `]`
  buf = json.data();
  buf[n] = ']';
  json.Resize(n + 1);
}

size_t FindCut(const char* buf, size_t from, size_t end) {
  return FindCutFrom(buf, from, from, end);
}

size_t FindCutFrom(const char* buf, size_t from, size_t scan, size_t end) {
  size_t pos = scan;
  while (pos < end) {
    const void* nl = std::memchr(buf + pos, '\n', end - pos);
    if (nl == nullptr) return std::string_view::npos;
    const size_t n = static_cast<const char*>(nl) - buf;
    pos = n + 1;
    size_t before = n;
    while (before > from && IsJsonSpace(buf[before - 1])) --before;
    size_t after = n + 1;
    while (after < end && IsJsonSpace(buf[after])) ++after;
    if (before <= from || after >= end || buf[after] != '{') continue;
    // Shape A: `},` ws `{` with the newline after the comma.
    if (buf[before - 1] == ',') {
      size_t b2 = before - 1;
      while (b2 > from && IsJsonSpace(buf[b2 - 1])) --b2;
      if (b2 > from && buf[b2 - 1] == '}' && IsJsonSpace(buf[before])) return before - 1;
    }
  }
  return std::string_view::npos;
}

Status Importer::Run(PaddedBuffer& json) {
  const size_t first_row = trace_.events.size();
  ReserveRows(json.size());
  PrepareForm(json);
  char* const buf = json.data();
  const size_t total = json.size();
  size_t doc_start = 0;  // where the current window's document starts
  size_t body = 0;       // first byte of real input in the current window
  const std::string_view kPrefix = array_form_ ? "[" : "{\"traceEvents\":[";
  // What closes a window's document at a cut: the events array, and in the object form
  // the top-level object; padded with spaces to the 3 bytes that are overwritten.
  const char* const kClose = array_form_ ? "]  " : "]} ";
  ProgressTask progress("parsing " + name_, total, ProgressUnit::kBytes);
  while (true) {
    progress.Set(body);
    const size_t window = g_window_bytes;
    size_t search_from = body + window;
    bool done = false;
    for (int attempt = 0; attempt <= kMaxCutRetries && !done; ++attempt) {
      const size_t cut =
          search_from < total ? FindCut(buf, search_from, total) : std::string_view::npos;
      const size_t rows = trace_.events.size();
      FileState saved = state_;
      ParseError err;
      if (cut == std::string_view::npos || attempt == kMaxCutRetries) {
        if (!ParseWindow(buf + doc_start, total - doc_start,
                         json.capacity() + PaddedBuffer::kPadding - doc_start,
                         /*final=*/true, &err)) {
          Rollback(first_row, FileState());
          return ErrorAt(json.view(), 0, doc_start, err);
        }
        return Finish(first_row);
      }
      // Close the window's document at the cut: `,` -> `]`, then `}`, then a space so
      // that nothing past the end looks like JSON.
      const char saved_bytes[3] = {buf[cut], buf[cut + 1], buf[cut + 2]};
      std::memcpy(buf + cut, kClose, 3);
      const bool ok = ParseWindow(buf + doc_start, cut + 2 - doc_start,
                                  json.capacity() + PaddedBuffer::kPadding - doc_start,
                                  /*final=*/false, &err);
      std::memcpy(buf + cut, saved_bytes, 3);
      if (!ok) {
        Rollback(rows, std::move(saved));
        search_from = cut + 1;
        continue;
      }
      // Next window: its first event starts at the `{` after the cut.
      size_t next = cut + 1;
      while (buf[next] != '{') ++next;
      doc_start = next - kPrefix.size();
      std::memcpy(buf + doc_start, kPrefix.data(), kPrefix.size());
      body = next;
      done = true;
    }
  }
}

void Importer::ReserveRows(size_t size_estimate) {
  // Rows are about a third fewer than the JSON events (flows, metadata); over-reserving
  // costs address space only, and geometric growth keeps many-file imports linear.
  const size_t estimate = size_estimate / 160 + 16;
  const size_t needed = trace_.events.size() + estimate;
  if (trace_.events.type.capacity() < needed) {
    trace_.events.Reserve(std::max(needed, trace_.events.type.capacity() * 3 / 2));
  }
}

Status Importer::PrepareStreamForm(StreamText& text) {
  // Until the form is known, reads must not close the text's end (ReadMore does at the
  // end of the input): a text that ends here ("[,") is closed below, once the form is known.
  while (text.size() < 3 && !text.eof()) TELLER_RETURN_IF_ERROR(text.ReadMore());
  // As PrepareForm: a byte order mark is blanked; the first other byte tells the form.
  char* buf = text.data();
  if (text.size() >= 3 && std::memcmp(buf, "\xEF\xBB\xBF", 3) == 0) std::memset(buf, ' ', 3);
  size_t first = 0;
  while (true) {
    buf = text.data();
    while (first < text.size() && IsJsonSpace(buf[first])) ++first;
    if (first < text.size() || text.eof()) break;
    TELLER_RETURN_IF_ERROR(text.ReadMore());
  }
  array_form_ = first < text.size() && text.data()[first] == '[';
  first_byte_ = first;
  if (text.eof()) CloseArrayTail(text);
  return Status::Ok();
}

void Importer::CloseArrayTail(StreamText& text) {
  if (tail_done_) return;
  tail_done_ = true;
  input_size_ = text.dropped() + text.size();
  if (!array_form_) return;
  // The tail handling of PrepareForm, on the text's last bytes. The backward look stops
  // at the current window's first event at the latest, so the bytes already dropped are
  // never needed: when the `[` itself was dropped, no position can equal it.
  char* buf = text.data();
  const size_t n = text.size();
  const bool have_first = first_byte_ >= text.dropped();
  const size_t first = have_first ? first_byte_ - text.dropped() : 0;
  size_t last = n;
  while (last > (have_first ? first + 1 : 1) && IsJsonSpace(buf[last - 1])) --last;
  if (last == 0) return;
  const char end = buf[last - 1];
  if ((have_first && last - 1 == first) || end == ']') return;
  if (end != ',' && end != '}') return;
  if (end == ',') buf[last - 1] = ' ';
  (void)text.Append(']');  // out of memory: the parse reports the missing `]`
}

Status Importer::ReadMore(StreamText& text) {
  TELLER_RETURN_IF_ERROR(text.ReadMore());
  if (text.eof()) CloseArrayTail(text);
  return Status::Ok();
}

// A cut for text without newlines between events (compact JSON written on one line):
// the structure is followed byte by byte from a position known to be outside any string
// (the window's first event, or the start of the text), so that a comma is known to be
// structural, and at which depth. Slower than the newline search, so only used where
// that finds nothing; it is what keeps a one-line document of any size (simdjson takes at
// most 4 GiB) in windows.
class CompactCutScanner {
 public:
  // `start`: where the scan begins, outside any string; `depth`: the depth of the events
  // array's elements relative to it (0 from an event, 2 or 1 from the start of an object
  // or array form).
  CompactCutScanner(size_t start, int depth) : pos_(start), target_(depth) {}

  // The first comma at or after `from` at the events' depth, between a `}` and a `{` (with
  // only blanks around it); npos when [.., end) holds none yet. Resumable: a later call
  // with a larger `end` continues where this one stopped.
  size_t Next(const char* buf, size_t from, size_t end) {
    for (; pos_ < end; ++pos_) {
      const char c = buf[pos_];
      if (in_string_) {
        if (escape_) {
          escape_ = false;
        } else if (c == '\\') {
          escape_ = true;
        } else if (c == '"') {
          in_string_ = false;
        }
        continue;
      }
      switch (c) {
        case '"':
          in_string_ = true;
          break;
        case '{':
        case '[':
          ++depth_;
          break;
        case '}':
        case ']':
          --depth_;
          last_close_ = pos_;
          break;
        case ',': {
          if (depth_ != target_ || pos_ < from || last_close_ == kNone || buf[last_close_] != '}') {
            break;
          }
          size_t after = pos_ + 1;
          while (after < end && IsJsonSpace(buf[after])) ++after;
          if (after == end) return std::string_view::npos;  // judged when more arrives
          if (buf[after] == '{') return pos_;
          break;
        }
        default:
          break;
      }
      // Only blanks may separate the `}` from the comma.
      if (c != '}' && c != ']' && !IsJsonSpace(c)) last_close_ = kNone;
    }
    return std::string_view::npos;
  }

 private:
  static constexpr size_t kNone = std::string_view::npos;
  size_t pos_;
  int target_;
  int depth_ = 0;
  bool in_string_ = false;
  bool escape_ = false;
  size_t last_close_ = kNone;  // the `}` or `]` before the blanks just scanned
};

Status Importer::FindStreamCut(StreamText& text, size_t from, size_t body, size_t* cut) {
  size_t scan = from;
  // Text past `from` without a newline cut after which the compact scan takes over: a
  // window's worth, so that no window grows beyond about twice the window size.
  const size_t compact_after = from + std::max<size_t>(g_window_bytes, 4096);
  std::unique_ptr<CompactCutScanner> compact;
  while (true) {
    if (compact == nullptr && from < text.size()) {
      *cut = FindCutFrom(text.data(), from, scan, text.size());
      if (*cut != std::string_view::npos) return Status::Ok();
      // Newlines before the trailing run of blanks were judged for good; one inside it
      // may still turn out to be a cut once the next bytes arrive.
      const char* buf = text.data();
      size_t k = text.size();
      while (k > scan && IsJsonSpace(buf[k - 1])) --k;
      scan = k;
      if (text.size() > compact_after || text.eof()) {
        const bool at_start = body == 0 && text.dropped() == 0;
        compact = std::make_unique<CompactCutScanner>(body, at_start ? (array_form_ ? 1 : 2) : 0);
      }
    }
    if (compact != nullptr) {
      *cut = compact->Next(text.data(), from, text.size());
      if (*cut != std::string_view::npos) return Status::Ok();
    }
    if (text.eof()) {
      *cut = std::string_view::npos;
      return Status::Ok();
    }
    TELLER_RETURN_IF_ERROR(ReadMore(text));
  }
}

Status Importer::RunStream(StreamText& text, size_t size_estimate) {
  const size_t first_row = trace_.events.size();
  ReserveRows(size_estimate);
  Status s = StreamWindows(text, first_row);
  if (!s.ok()) Rollback(first_row, FileState());
  return s;
}

// Run's loop over streamed text. Positions are offsets into text.data(); after a window
// is accepted, everything before the next window's document is dropped.
Status Importer::StreamWindows(StreamText& text, size_t first_row) {
  TELLER_RETURN_IF_ERROR(PrepareStreamForm(text));
  size_t doc_start = 0;
  size_t body = 0;
  const std::string_view kPrefix = array_form_ ? "[" : "{\"traceEvents\":[";
  const char* const kClose = array_form_ ? "]  " : "]} ";
  while (true) {
    const size_t window = g_window_bytes;
    size_t search_from = body + window;
    bool done = false;
    for (int attempt = 0; attempt <= kMaxCutRetries && !done; ++attempt) {
      size_t cut = std::string_view::npos;
      if (attempt < kMaxCutRetries)
        TELLER_RETURN_IF_ERROR(FindStreamCut(text, search_from, body, &cut));
      const size_t rows = trace_.events.size();
      FileState saved = state_;
      ParseError err;
      if (cut == std::string_view::npos) {
        while (!text.eof()) TELLER_RETURN_IF_ERROR(ReadMore(text));
        char* const buf = text.data();
        if (!ParseWindow(buf + doc_start, text.size() - doc_start,
                         text.padded_capacity() - doc_start, /*final=*/true, &err)) {
          return ErrorAt(std::string_view(buf, text.size()), text.dropped(), doc_start, err);
        }
        return Finish(first_row);
      }
      char* const buf = text.data();
      const char saved_bytes[3] = {buf[cut], buf[cut + 1], buf[cut + 2]};
      std::memcpy(buf + cut, kClose, 3);
      const bool ok = ParseWindow(buf + doc_start, cut + 2 - doc_start,
                                  text.padded_capacity() - doc_start, /*final=*/false, &err);
      std::memcpy(buf + cut, saved_bytes, 3);
      if (!ok) {
        Rollback(rows, std::move(saved));
        search_from = cut + 1;
        continue;
      }
      size_t next = cut + 1;
      while (buf[next] != '{') ++next;
      doc_start = next - kPrefix.size();
      std::memcpy(buf + doc_start, kPrefix.data(), kPrefix.size());
      body = next - doc_start;
      text.DropFront(doc_start);
      doc_start = 0;
      done = true;
    }
  }
}

Status Importer::Finish(size_t first_row) {
  // An array of numbers or strings is no array-form trace; an empty one is an empty trace.
  const bool no_events =
      array_form_ && state_.elements > 0 && state_.counters.non_object_event == state_.elements;
  if (!state_.saw_trace_events || no_events) {
    Rollback(first_row, FileState());
    return Status::Error(name_ + (no_events
                                      ? ": not a Chrome trace (an array without event objects)"
                                      : ": not a Chrome trace (no traceEvents)"));
  }
  EventTable& t = trace_.events;
  const size_t end_row = t.size();

  // Processes: the pid with most host events is the file's main process (rank process);
  // GPU rows and profiler-global instants belong to it.
  size_t main_slot = 0;
  for (size_t i = 1; i < state_.pids.size(); ++i) {
    if (state_.pids[i].host_events > state_.pids[main_slot].host_events) main_slot = i;
  }
  const int64_t main_pid = state_.pids.empty() ? 0 : state_.pids[main_slot].pid;
  std::vector<uint32_t> slot_to_process(state_.pids.size());
  const size_t slash = name_.find_last_of('/');
  const std::string_view basename = slash == std::string::npos
                                        ? std::string_view(name_)
                                        : std::string_view(name_).substr(slash + 1);
  const StringId label = trace_.strings.Intern(basename);
  const StringId source = trace_.strings.Intern(name_);
  auto make_process = [&](int64_t pid) {
    const uint32_t index = trace_.ProcessIndex(name_, pid);
    ProcessInfo& p = trace_.processes[index];
    p.label = label;
    p.source = source;
    p.rank = state_.rank;
    p.world_size = state_.world_size;
    return index;
  };
  const uint32_t main_process = make_process(main_pid);
  for (size_t i = 0; i < state_.pids.size(); ++i) {
    slot_to_process[i] = i == main_slot ? main_process : make_process(state_.pids[i].pid);
  }
  for (size_t i = first_row; i < end_row; ++i) {
    const uint32_t slot = t.process[i];
    t.process[i] = slot == kMainSlot ? main_process : slot_to_process[slot];
  }

  // Time base: Kineto since 2023 writes ts relative to baseTimeNanoseconds, which may
  // come after traceEvents; legacy files have epoch µs and no base.
  FileCounters& c = state_.counters;
  if (state_.has_base && state_.base_ns != 0) {
    const int64_t base = state_.base_ns;
    for (size_t i = first_row; i < end_row; ++i) {
      int64_t start = 0;
      int64_t end = 0;
      if (__builtin_add_overflow(t.start_ns[i], base, &start) ||
          __builtin_add_overflow(t.end_ns[i], base, &end)) {
        ++c.time_overflow;  // left relative to the base, rather than wrapped
        continue;
      }
      t.start_ns[i] = start;
      t.end_ns[i] = end;
    }
  }

  // Duplicate correlation ids among host API calls (a graph launch legitimately shares
  // its id with many kernels; two runtime calls sharing one is damage).
  std::vector<uint64_t> ids;
  for (size_t i = first_row; i < end_row; ++i) {
    if (IsHostCall(t.type[i]) && t.correlation[i] != 0) ids.push_back(t.correlation[i]);
  }
  std::sort(ids.begin(), ids.end());
  uint64_t duplicates = 0;
  for (size_t i = 1; i < ids.size(); ++i) duplicates += ids[i] == ids[i - 1];

  Counters& out = trace_.counters;
  auto add = [&out](CounterId id, uint64_t v) {
    if (v != 0) out.Add(id, v);
  };
  add(CounterId::kKinetoFlowEvents, c.flow_events);
  add(CounterId::kKinetoMissingField, c.missing_field);
  add(CounterId::kKinetoMissingDuration, c.missing_duration);
  add(CounterId::kKinetoWrongType, c.wrong_type);
  add(CounterId::kKinetoNegativeDuration, c.negative_duration);
  add(CounterId::kKinetoUnsupportedPhase, c.unsupported_phase);
  add(CounterId::kKinetoHashedTid, c.hashed_tid);
  add(CounterId::kKinetoNonnumericPid, c.nonnumeric_pid);
  add(CounterId::kKinetoNonObjectEvent, c.non_object_event);
  add(CounterId::kKinetoTimeOverflow, c.time_overflow);
  add(CounterId::kKinetoDuplicateCorrelation, duplicates);
  uint64_t unknown_total = 0;
  for (size_t i = 0; i < categories_.size(); ++i) {
    const uint64_t n = i < state_.unknown_per_category.size() ? state_.unknown_per_category[i] : 0;
    if (n == 0) continue;
    unknown_total += n;
    out.AddNamed(std::string(CounterName(CounterId::kKinetoUnknownCategory)) + ":" +
                     (categories_[i].text.empty() ? std::string("(none)") : categories_[i].text),
                 n);
  }
  add(CounterId::kKinetoUnknownCategory, unknown_total);
  trace_.sources.push_back(name_);
  return Status::Ok();
}

od::parser& ThreadParser() {
  // Reused across files: its index buffers are sized by the largest window and stay warm.
  thread_local od::parser parser;
  return parser;
}

}  // namespace

Status ImportKinetoJson(PaddedBuffer& json, const std::string& name, Trace& trace,
                        size_t gzip_members) {
  Importer importer(name, trace, ThreadParser(), gzip_members);
  return importer.Run(json);
}

Status ImportKinetoStream(ByteSource& text, const std::string& name, Trace& trace,
                          size_t size_estimate, size_t gzip_members) {
  // Reused by the files this thread imports, as the parser is: mapping and faulting in
  // a fresh buffer costs more than parsing a small file. It holds about one window.
  thread_local PaddedBuffer buffer;
  StreamText stream(text, name, g_read_bytes, buffer);
  Importer importer(name, trace, ThreadParser(), gzip_members);
  return importer.RunStream(stream, size_estimate);
}

namespace {

// The one-shot import: the whole text in memory, then parsed. The streaming path returns
// here for a file that does not import, so that its error reads exactly as before: the
// position in the whole text, zlib's diagnosis of a damaged gzip member, the count of
// members of a concatenation. A good file never pays for it.
Status ImportKinetoWhole(const std::string& path, Trace& trace) {
  PaddedBuffer json;
  GunzipInfo info;
  {
    ProgressTask progress("reading " + path, 0);
    TELLER_RETURN_IF_ERROR(ReadMaybeGzip(path, json, &info));
  }
  return ImportKinetoJson(json, path, trace, info.members);
}

Status ImportKinetoStreamWithEstimate(ByteSource& text, std::string_view trailer,
                                      size_t compressed_size, const std::string& name,
                                      Trace& trace);

// Whether this process may run on more than one CPU (its affinity mask, which taskset
// and container CPU sets narrow).
bool SecondCore() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return false;
  return CPU_COUNT(&set) > 1;
}

// The streaming import of `compressed` (gzip bytes, of `compressed_size` bytes in all
// when known, else 0; `trailer`: its last 4 bytes, or empty).
Status ImportGzipStream(ByteSource& compressed, std::string_view trailer, size_t compressed_size,
                        const std::string& name, Trace& trace) {
  GunzipOptions options;
  TELLER_RETURN_IF_ERROR(GuardedGunzipOptions(compressed_size, &options));
  GunzipStream gunzip(compressed, name, options);
  if (g_gunzip_thread && compressed_size >= kReadAheadMinBytes && SecondCore()) {
    // Inflating costs about as much as parsing: on a second core it runs beside the parse.
    ReadAheadSource ahead(gunzip, kReadAheadBlockBytes, kReadAheadBlocks);
    return ImportKinetoStreamWithEstimate(ahead, trailer, compressed_size, name, trace);
  }
  return ImportKinetoStreamWithEstimate(gunzip, trailer, compressed_size, name, trace);
}

// The text size, estimated to size the event columns: the ISIZE trailer when it is
// plausible, but at least kGzipRatioEstimate times the compressed size, since ISIZE is
// the size mod 2^32 of the last member only (a 6.9 GB text says 2.6 GB). Reserving too
// much costs address space only; too little, a copy of every column as they grow.
Status ImportKinetoStreamWithEstimate(ByteSource& text, std::string_view trailer,
                                      size_t compressed_size, const std::string& name,
                                      Trace& trace) {
  constexpr size_t kGzipRatioEstimate = 16;  // Kineto JSON gzips 10-20 to 1
  size_t estimate = compressed_size * kGzipRatioEstimate;
  if (trailer.size() == 4) {
    uint32_t isize;
    std::memcpy(&isize, trailer.data(), 4);
    if (isize >= compressed_size && isize / 1032 <= compressed_size) {
      estimate = std::max<size_t>(estimate, isize);
    }
  }
  // The member count only words the "concatenated documents" error, which the one-shot
  // path words anyway.
  return ImportKinetoStream(text, name, trace, estimate, /*gzip_members=*/0);
}

// A file read for the streaming path, reporting its progress (in bytes of the file,
// compressed or not) per read. Reading and parsing go together here, so the task is the
// parse, as the one-shot path names its own.
class ProgressFileSource : public ByteSource {
 public:
  ProgressFileSource(int fd, const std::string& path, uint64_t size)
      : file_(fd, path), progress_("parsing " + path, size, ProgressUnit::kBytes) {}
  Status Read(char* dst, size_t capacity, size_t* got) override {
    const Status s = file_.Read(dst, capacity, got);
    progress_.Set(file_.bytes_read());
    return s;
  }

 private:
  FdByteSource file_;
  ProgressTask progress_;
};

}  // namespace

Status ImportKinetoBuffer(PaddedBuffer&& raw, const std::string& name, Trace& trace) {
  // A pipe's bytes are held (they cannot be read twice), but the text is still streamed
  // out of them: gzip is inflated into the windows rather than into a second whole
  // buffer, and a one-line text is cut into windows as a file's is.
  MemoryByteSource bytes(raw.view());
  Status streamed;
  if (IsGzip(raw.view())) {
    const std::string_view trailer =
        raw.size() >= 18 ? raw.view().substr(raw.size() - 4) : std::string_view();
    streamed = ImportGzipStream(bytes, trailer, raw.size(), name, trace);
  } else {
    streamed = ImportKinetoStream(bytes, name, trace, raw.size());
  }
  if (streamed.ok()) return streamed;
  PaddedBuffer json;
  GunzipInfo info;
  TELLER_RETURN_IF_ERROR(MaybeGunzip(std::move(raw), name, json, &info));
  return ImportKinetoJson(json, name, trace, info.members);
}

Status ImportKinetoBytes(std::string_view bytes, const std::string& name, Trace& trace) {
  PaddedBuffer raw;
  if (!raw.Reserve(bytes.size())) return Status::Error(name + ": out of memory");
  if (!bytes.empty()) std::memcpy(raw.data(), bytes.data(), bytes.size());
  raw.Resize(bytes.size());
  return ImportKinetoBuffer(std::move(raw), name, trace);
}

Status ImportKineto(const std::string& path, Trace& trace) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ImportKinetoWhole(path, trace);
  struct stat st;
  // Only a regular file can be read a second time for the error path; a pipe or FIFO is
  // read whole, once.
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return ImportKinetoWhole(path, trace);
  }
  const size_t size = static_cast<size_t>(st.st_size);
  ProgressFileSource file(fd, path, size);
  char head[2] = {0, 0};
  char trailer[4];
  const bool gzip = pread(fd, head, 2, 0) == 2 && IsGzip(std::string_view(head, 2));
  const bool have_trailer = gzip && size >= 18 && pread(fd, trailer, 4, size - 4) == 4;
  Status s;
  if (gzip) {
    s = ImportGzipStream(file, have_trailer ? std::string_view(trailer, 4) : std::string_view(),
                         size, path, trace);
  } else {
    s = ImportKinetoStream(file, path, trace, size, 0);
  }
  close(fd);
  if (s.ok()) return s;
  return ImportKinetoWhole(path, trace);
}

}  // namespace teller::ingest
