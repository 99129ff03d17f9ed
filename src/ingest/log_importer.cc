// Log importer (docs/ingest-logs.md): one LogTable row per non-empty line of a serving
// log (vLLM, SGLang, router, torch c10d, uvicorn, generic timestamped text) or of a
// `teller run` capture file. The file is mmap'd and split with memchr; each line is
// cleaned (\r progress updates, ANSI colours, CRLF, overlong lines) only when it needs it,
// then handed to the scanners of log_parser.cc. Nothing here allocates per line except
// the interned message and request id.
#include "src/ingest/log_importer.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <unordered_map>

#include "src/ingest/log_parser.h"
#include "teller/core/gzip.h"

namespace teller::ingest {
namespace {

constexpr int64_t kNsPerSec = 1'000'000'000;
// Years outside [2000, 2200) are not a plausible reference for a log's missing year
// (Kineto traces without a base time carry µs since process start, not epoch time).
constexpr int64_t kPlausibleMinNs = 946'684'800 * kNsPerSec;
constexpr int64_t kPlausibleMaxNs = 7'258'118'400 * kNsPerSec;
// Capture files of `teller run` (docs/collector.md): "<CLOCK_MONOTONIC ns> <line>". The ns
// has no leading zero and 9..18 digits; HDFS-style "081109 203615" lines do not qualify.
constexpr int kCaptureMinDigits = 9;
constexpr int kCaptureMaxDigits = 18;
constexpr int kCaptureProbeLines = 5;
// Inflated .log.gz files above this size are refused rather than exhausting memory.
constexpr size_t kMaxInflatedBytes = size_t{16} << 30;

struct YearMonth {
  int64_t year;
  int month;
};

// Inverse of DaysFromCivil (Hinnant's civil_from_days).
YearMonth CivilFromNs(int64_t ns) {
  int64_t z = ns / kNsPerSec;
  if (ns % kNsPerSec < 0) --z;
  z = (z >= 0 ? z : z - 86399) / 86400 + 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const unsigned doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  const int month = static_cast<int>(mp < 10 ? mp + 3 : mp - 9);
  return {static_cast<int64_t>(yoe) + era * 400 + (month <= 2), month};
}

bool IsBlank(std::string_view s) {
  for (char c : s) {
    if (c != ' ' && c != '\t' && c != '\f' && c != '\v') return false;
  }
  return true;
}

// Parses the capture time of a `teller run` line; returns the length of "<ns> " or 0.
size_t ParseCaptureNs(std::string_view line, int64_t* ns) {
  if (line.empty() || line[0] < '1' || line[0] > '9') return 0;
  int64_t v = 0;
  size_t i = 0;
  while (i < line.size() && line[i] >= '0' && line[i] <= '9') {
    if (i >= static_cast<size_t>(kCaptureMaxDigits)) return 0;
    v = v * 10 + (line[i] - '0');
    ++i;
  }
  if (i < static_cast<size_t>(kCaptureMinDigits)) return 0;
  if (i == line.size() || line[i] == '\r') {
    *ns = v;
    return i;
  }
  if (line[i] != ' ') return 0;
  *ns = v;
  return i + 1;
}

// Removes ANSI escape sequences in place: CSI "ESC [ params intermediates final", OSC
// "ESC ] ... BEL|ESC \", and two-byte "ESC x". A sequence cut by the end of the line is
// dropped up to the end.
void StripAnsiInPlace(std::string& s) {
  size_t w = 0;
  const size_t n = s.size();
  for (size_t r = 0; r < n;) {
    const char c = s[r];
    if (c != '\x1b') {
      s[w++] = c;
      ++r;
      continue;
    }
    if (r + 1 >= n) break;
    const char k = s[r + 1];
    r += 2;
    if (k == '[') {
      while (r < n && static_cast<unsigned char>(s[r]) >= 0x20 &&
             static_cast<unsigned char>(s[r]) <= 0x3f) {
        ++r;
      }
      while (r < n && static_cast<unsigned char>(s[r]) >= 0x20 &&
             static_cast<unsigned char>(s[r]) <= 0x2f) {
        ++r;
      }
      if (r < n && static_cast<unsigned char>(s[r]) >= 0x40 &&
          static_cast<unsigned char>(s[r]) <= 0x7e) {
        ++r;
      }
    } else if (k == ']') {
      while (r < n && s[r] != '\x07' && s[r] != '\x1b') ++r;
      if (r < n && s[r] == '\x07') ++r;
      if (r + 1 < n && s[r] == '\x1b' && s[r + 1] == '\\') r += 2;
    }
  }
  s.resize(w);
}

class LogImporter {
 public:
  LogImporter(const std::string& file_name, int64_t mtime_ns, const LogOptions& options,
              Trace& trace, int64_t monotonic_to_utc_ns)
      : options_(options), trace_(trace), mono_to_utc_(monotonic_to_utc_ns) {
    file_id_ = trace.strings.Intern(file_name);
    // Processes named by the log live on the host of the trace when it has exactly one.
    StringId host = 0;
    int hosts = 0;
    for (const ProcessInfo& p : trace.processes) {
      if (hosts == 0 || p.host != host) {
        if (hosts == 1) {
          hosts = 2;
          break;
        }
        host = p.host;
        hosts = 1;
      }
    }
    if (hosts == 1) host_ = std::string(trace.strings.Get(host));
    // The year of "MM-DD" times: from the trace's own clock when it has events (the log
    // belongs to the same run), else from the file's modification time.
    const auto& starts = trace.events.start_ns;
    if (!starts.empty() && starts.front() >= kPlausibleMinNs && starts.front() < kPlausibleMaxNs) {
      reference_ns_ = starts.front();
    } else if (mtime_ns >= kPlausibleMinNs && mtime_ns < kPlausibleMaxNs) {
      reference_ns_ = mtime_ns;
    }
  }

  void Run(std::string_view data) {
    Reserve(data);
    DetectCapture(data);
    uint32_t line_no = 0;
    size_t pos = 0;
    while (pos < data.size()) {
      const void* nl = std::memchr(data.data() + pos, '\n', data.size() - pos);
      const size_t end =
          nl ? static_cast<size_t>(static_cast<const char*>(nl) - data.data()) : data.size();
      ImportLine(data.substr(pos, end - pos), ++line_no);
      pos = end + 1;
    }
    Flush();
  }

 private:
  void Reserve(std::string_view data) {
    if (data.empty()) return;
    size_t lines = 1;
    for (const char* p = data.data();
         (p = static_cast<const char*>(
              std::memchr(p, '\n', static_cast<size_t>(data.data() + data.size() - p)))) != nullptr;
         ++p) {
      ++lines;
    }
    LogTable& t = trace_.logs;
    const size_t n = t.size() + lines;
    t.ts_ns.reserve(n);
    t.request.reserve(n);
    t.level.reserve(n);
    t.process.reserve(n);
    t.file.reserve(n);
    t.line.reserve(n);
    t.message.reserve(n);
  }

  // A capture file is recognised by its first non-empty lines: every one of them starts
  // with a capture time.
  void DetectCapture(std::string_view data) {
    int seen = 0;
    size_t pos = 0;
    while (pos < data.size() && seen < kCaptureProbeLines) {
      const void* nl = std::memchr(data.data() + pos, '\n', data.size() - pos);
      const size_t end =
          nl ? static_cast<size_t>(static_cast<const char*>(nl) - data.data()) : data.size();
      std::string_view line = data.substr(pos, end - pos);
      pos = end + 1;
      while (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (IsBlank(line)) continue;
      int64_t ns = 0;
      if (ParseCaptureNs(line, &ns) == 0) return;
      ++seen;
    }
    capture_ = seen > 0;
    if (capture_ && mono_to_utc_ == 0) ++capture_without_clock_;
  }

  // \r progress updates, overlong lines and ANSI escapes. Returns a view into `raw` or
  // into work_ (valid until the next call).
  std::string_view Clean(std::string_view raw) {
    if (raw.empty()) return raw;
    bool assembled = false;
    if (const void* cr = std::memchr(raw.data(), '\r', raw.size())) {
      ++progress_lines_;
      const size_t first = static_cast<size_t>(static_cast<const char*>(cr) - raw.data());
      const size_t last = raw.rfind('\r');
      const std::string_view head = raw.substr(0, first);
      const std::string_view tail = raw.substr(last + 1);
      // A terminal shows the last segment; keep what the process-prefix wrapper of vLLM
      // wrote before tqdm's first \r, else the line loses its process.
      if (HeadIsPrefixOnly(head)) {
        work_.assign(head);
        work_.append(tail.substr(0, std::min(tail.size(), kMaxLogLineBytes)));
        assembled = true;
      } else {
        raw = tail;
      }
    }
    if (assembled) {
      if (work_.size() > kMaxLogLineBytes) {
        work_.resize(kMaxLogLineBytes);
        ++truncated_lines_;
      }
    } else if (raw.size() > kMaxLogLineBytes) {
      raw = raw.substr(0, kMaxLogLineBytes);
      ++truncated_lines_;
    }
    const std::string_view view = assembled ? std::string_view(work_) : raw;
    if (std::memchr(view.data(), '\x1b', view.size()) == nullptr) return view;
    if (!assembled) work_.assign(raw);
    StripAnsiInPlace(work_);
    return work_;
  }

  static bool HeadIsPrefixOnly(std::string_view head) {
    if (head.size() > 512) return false;
    std::string h(head);
    StripAnsiInPlace(h);
    size_t b = 0, e = h.size();
    while (b < e && (h[b] == ' ' || h[b] == '\t')) ++b;
    while (e > b && (h[e - 1] == ' ' || h[e - 1] == '\t')) --e;
    return b < e && h[b] == '(' && h[e - 1] == ')';
  }

  void ImportLine(std::string_view raw, uint32_t line_no) {
    while (!raw.empty() && raw.back() == '\r') raw.remove_suffix(1);  // CRLF, "\r\r\n"
    int64_t capture_ns = 0;
    bool has_capture = false;
    if (capture_) {
      const size_t skip = ParseCaptureNs(raw, &capture_ns);
      if (skip > 0) {
        has_capture = true;
        raw.remove_prefix(skip);
      } else if (!IsBlank(raw)) {
        ++capture_line_without_ns_;
      }
    }
    const std::string_view line = Clean(raw);
    if (IsBlank(line)) {
      ++empty_lines_;
      return;
    }
    logs::ParsedLine parsed;
    logs::ParseLogLine(line, &parsed);
    if (parsed.message.empty() && !parsed.has_time && parsed.level == LogLevel::kUnknown) {
      ++empty_lines_;  // only a process prefix: an empty print() of that process
      return;
    }

    int64_t ts = LogTable::kNoTime;
    int64_t captured = 0;
    if (has_capture && mono_to_utc_ != 0 &&
        !__builtin_add_overflow(capture_ns, mono_to_utc_, &captured)) {
      ts = captured;
      if (parsed.has_time && logs::IsValidTime(parsed.time) &&
          (parsed.time.has_zone || options_.utc_offset_known)) {
        // The printed time is a cross-check only: vLLM prints whole seconds, and the
        // capture happens after the print.
        const int64_t printed = ToUtc(parsed.time, ts, /*count_assumed=*/false);
        if (printed != LogTable::kNoTime) {
          const double diff = static_cast<double>(printed) - static_cast<double>(ts);
          if (diff > 2e9 || diff < -2e9) ++capture_time_mismatch_;
        }
      }
    } else if (parsed.has_time) {
      ts = logs::IsValidTime(parsed.time) ? ToUtc(parsed.time, 0, /*count_assumed=*/true)
                                          : LogTable::kNoTime;
      if (ts == LogTable::kNoTime) ++invalid_time_;
    }
    if (ts == LogTable::kNoTime) ++no_timestamp_;

    int id_count = 0;
    const std::string_view rid = logs::FindRequestId(parsed.message, &id_count);
    if (id_count > 1) ++multi_request_lines_;

    LogTable& t = trace_.logs;
    t.ts_ns.push_back(ts);
    t.request.push_back(rid.empty() ? 0 : trace_.strings.Intern(rid));
    t.level.push_back(parsed.level);
    t.process.push_back(ResolveProcess(parsed));
    t.file.push_back(file_id_);
    t.line.push_back(line_no);
    t.message.push_back(trace_.strings.Intern(parsed.message));
    ++rows_;
  }

  // UTC ns of a printed time, or kNoTime when it cannot be one (a year outside
  // [1900, 2200), or an offset that overflows). `line_ref_ns` (a capture time, 0 = none)
  // gives the year when the log prints none.
  int64_t ToUtc(const logs::PrintedTime& t, int64_t line_ref_ns, bool count_assumed) {
    const int64_t year = t.has_year ? t.year : YearFor(t.month, line_ref_ns);
    if (year < 1900 || year >= 2200) return LogTable::kNoTime;
    const int64_t days =
        logs::DaysFromCivil(year, static_cast<unsigned>(t.month), static_cast<unsigned>(t.day));
    const int64_t secs = days * 86400 + t.hour * 3600 + t.minute * 60 + t.second;
    int64_t ns = secs * kNsPerSec + t.nanos;
    int64_t offset_s = 0;
    if (t.has_zone) {
      offset_s = t.zone_offset_s;
    } else if (options_.utc_offset_known) {
      offset_s = options_.utc_offset_s;
    } else if (count_assumed) {
      assumed_utc_ = true;
    }
    int64_t offset_ns = 0;
    if (__builtin_mul_overflow(offset_s, kNsPerSec, &offset_ns) ||
        __builtin_sub_overflow(ns, offset_ns, &ns) || ns == LogTable::kNoTime) {
      return LogTable::kNoTime;
    }
    return ns;
  }

  // Year of a "MM-DD" time. With options.default_year: that year for the first such line,
  // one more after each Dec -> Jan step (a month at least 6 below the previous one). Else
  // the reference's year, minus one when the month lies more than 6 months after the
  // reference's month (a January file holding December lines).
  int64_t YearFor(int month, int64_t line_ref_ns) {
    if (options_.default_year != 0) {
      if (last_month_ != 0 && last_month_ - month >= 6) {
        ++year_bump_;
      } else if (last_month_ != 0 && month - last_month_ >= 6 && year_bump_ > 0) {
        return options_.default_year + year_bump_ - 1;  // a late line from before the wrap
      }
      last_month_ = month;
      return options_.default_year + year_bump_;
    }
    const int64_t ref = line_ref_ns != 0 ? line_ref_ns : reference_ns_;
    if (ref == 0) {
      year_unknown_ = true;
      return 1970;
    }
    const YearMonth ym = CivilFromNs(ref);
    return month - ym.month > 6 ? ym.year - 1 : ym.year;
  }

  uint32_t ResolveProcess(const logs::ParsedLine& p) {
    uint32_t index = LogTable::kNoProcess;
    for (int i = 0; i < p.num_prefixes; ++i) index = ProcessForPrefix(p.prefixes[i]);
    if (p.num_prefixes > 0) return index;
    // SGLang "[... TP13]" and torch "[rank3]:" name a rank, not a pid: the line belongs to
    // the one process of the trace with that rank, if there is exactly one.
    int32_t rank = -1;
    if (p.global_rank >= 0) {
      rank = p.global_rank;
    } else if (p.tp_rank >= 0) {
      if (p.pp_rank <= 0 && p.dp_rank <= 0) rank = p.tp_rank;
    } else if (p.pp_rank >= 0 && p.dp_rank <= 0) {
      rank = p.pp_rank;
    }
    if (rank < 0) return LogTable::kNoProcess;
    index = ProcessWithRank(rank);
    if (index == LogTable::kNoProcess) ++rank_without_process_;
    return index;
  }

  uint32_t ProcessForPrefix(const logs::ProcessPrefix& prefix) {
    const auto it = pid_cache_.find(prefix.pid);
    if (it != pid_cache_.end()) return it->second;
    // With several hosts the log's host is unknown; a pid that only one traced process
    // has is that process (pids rarely repeat across a job's hosts).
    uint32_t index = LogTable::kNoProcess;
    if (host_.empty()) {
      for (uint32_t p = 0; p < trace_.processes.size(); ++p) {
        if (trace_.processes[p].pid != prefix.pid) continue;
        index = index == LogTable::kNoProcess ? p : LogTable::kNoProcess - 1;
      }
      if (index == LogTable::kNoProcess - 1) index = LogTable::kNoProcess;
    }
    if (index == LogTable::kNoProcess) index = trace_.ProcessIndex(host_, prefix.pid);
    ProcessInfo& info = trace_.processes[index];
    if (info.label == 0 && !prefix.role.empty()) info.label = trace_.strings.Intern(prefix.role);
    if (info.source == 0) info.source = file_id_;
    if (info.rank < 0) {
      const int32_t rank = logs::RankFromRole(prefix.role);
      if (rank >= 0) {
        info.rank = rank;
        rank_map_size_ = SIZE_MAX;  // ranks changed: rebuild on the next lookup
      }
    }
    pid_cache_.emplace(prefix.pid, index);
    return index;
  }

  uint32_t ProcessWithRank(int32_t rank) {
    if (rank_map_size_ != trace_.processes.size()) {
      rank_map_.clear();
      for (uint32_t i = 0; i < trace_.processes.size(); ++i) {
        const int32_t r = trace_.processes[i].rank;
        if (r < 0) continue;
        const auto [it, inserted] = rank_map_.emplace(r, i);
        if (!inserted) it->second = LogTable::kNoProcess;  // two processes: ambiguous
      }
      rank_map_size_ = trace_.processes.size();
    }
    const auto it = rank_map_.find(rank);
    return it == rank_map_.end() ? LogTable::kNoProcess : it->second;
  }

  void Flush() {
    Counters& c = trace_.counters;
    auto add = [&c](CounterId id, uint64_t v) {
      if (v != 0) c.Add(id, v);
    };
    add(CounterId::kLogsLines, rows_);
    add(CounterId::kLogsNoTimestamp, no_timestamp_);
    add(CounterId::kLogsEmptyLines, empty_lines_);
    add(CounterId::kLogsAssumedUtc, assumed_utc_ ? 1 : 0);
    add(CounterId::kLogsYearUnknown, year_unknown_ ? 1 : 0);
    add(CounterId::kLogsInvalidTime, invalid_time_);
    add(CounterId::kLogsTruncatedLines, truncated_lines_);
    add(CounterId::kLogsProgressLines, progress_lines_);
    add(CounterId::kLogsMultiRequestLines, multi_request_lines_);
    add(CounterId::kLogsRankWithoutProcess, rank_without_process_);
    add(CounterId::kLogsCaptureWithoutClock, capture_without_clock_);
    add(CounterId::kLogsCaptureLineWithoutNs, capture_line_without_ns_);
    add(CounterId::kLogsCaptureTimeMismatch, capture_time_mismatch_);
  }

  const LogOptions& options_;
  Trace& trace_;
  const int64_t mono_to_utc_;
  StringId file_id_ = 0;
  std::string host_;
  int64_t reference_ns_ = 0;
  bool capture_ = false;
  std::string work_;  // cleaned copy of the current line when it needed cleaning
  int last_month_ = 0;
  int year_bump_ = 0;
  std::unordered_map<int64_t, uint32_t> pid_cache_;
  std::unordered_map<int32_t, uint32_t> rank_map_;
  size_t rank_map_size_ = SIZE_MAX;

  uint64_t rows_ = 0, no_timestamp_ = 0, empty_lines_ = 0, invalid_time_ = 0;
  uint64_t truncated_lines_ = 0, progress_lines_ = 0, multi_request_lines_ = 0;
  uint64_t rank_without_process_ = 0, capture_without_clock_ = 0;
  uint64_t capture_line_without_ns_ = 0, capture_time_mismatch_ = 0;
  bool assumed_utc_ = false, year_unknown_ = false;
};

}  // namespace

Status ImportLogBytes(std::string_view data, const std::string& file_name, int64_t mtime_ns,
                      const LogOptions& options, Trace& trace, int64_t monotonic_to_utc_ns) {
  std::string inflated;
  if (IsGzip(data)) {
    // A log copied while being written may end in junk after the last member: kept out
    // of the text and counted.
    GunzipOptions gz;
    gz.allow_trailing_garbage = true;
    TELLER_RETURN_IF_ERROR(GuardedGunzipOptions(data.size(), &gz));
    gz.max_output_bytes = std::min(gz.max_output_bytes, kMaxInflatedBytes);
    GunzipInfo info;
    TELLER_RETURN_IF_ERROR(GunzipToString(data, file_name, gz, &inflated, &info));
    if (info.trailing_bytes != 0)
      trace.counters.Add(CounterId::kLogsGzipTrailingBytes, info.trailing_bytes);
    data = inflated;
  }
  trace.sources.push_back(file_name);
  LogImporter importer(file_name, mtime_ns, options, trace, monotonic_to_utc_ns);
  importer.Run(data);
  return Status::Ok();
}

Status ImportLogFile(const std::string& path, const LogOptions& options, Trace& trace,
                     int64_t monotonic_to_utc_ns) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::Error("cannot open log " + path + ": " + std::strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0) {
    const int err = errno;
    close(fd);
    return Status::Error("cannot stat log " + path + ": " + std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return Status::Error("cannot read log " + path + ": not a regular file");
  }
  const int64_t mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * kNsPerSec + st.st_mtim.tv_nsec;
  const size_t size = static_cast<size_t>(st.st_size);
  if (size == 0) {
    close(fd);
    return ImportLogBytes({}, path, mtime_ns, options, trace, monotonic_to_utc_ns);
  }
  void* map = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  const int map_err = errno;
  close(fd);
  if (map == MAP_FAILED) {
    return Status::Error("cannot map log " + path + ": " + std::strerror(map_err));
  }
  madvise(map, size, MADV_SEQUENTIAL);
  Status status = ImportLogBytes(std::string_view(static_cast<const char*>(map), size), path,
                                 mtime_ns, options, trace, monotonic_to_utc_ns);
  munmap(map, size);
  return status;
}

}  // namespace teller::ingest
