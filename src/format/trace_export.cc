// Trace -> Teller raw directory (include/teller/format/trace_export.h).
//
// Clock: every file gets one clock anchor with the same offset O (UTC = event clock + O),
// and manifest.json carries the same pair, so the raw importer maps event times and the
// log importer maps capture times back to exactly the UTC nanoseconds they came from. O
// puts the earliest time of the trace at 1 s of event clock: capture times then always
// have the 10+ digits the log importer requires of them, and no end time is 0 (which
// the format reserves for "instant").
#include "teller/format/trace_export.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string_view>
#include <unordered_map>

#include "teller/core/counter_registry.h"
#include "teller/core/file_util.h"
#include "teller/core/json_writer.h"
#include "teller/format/raw_format.h"
#include "teller/format/raw_writer.h"

namespace teller::raw {
namespace {

constexpr int64_t kNsPerSec = 1'000'000'000;
// Earliest event-clock time written (see the file comment).
constexpr int64_t kFirstMonotonicNs = kNsPerSec;
// The log importer recognises a capture file by its first 5 non-empty lines.
constexpr size_t kCaptureProbeLines = 5;
// Strings chunks are flushed at this size (the format allows 64 MiB per payload).
constexpr size_t kStringsChunkBytes = size_t{8} << 20;

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// Never over an existing file: the directory was checked to hold no trace, and two
// outputs with one name would be a bug.
Status WriteTextFile(const std::string& path, const std::string& text) {
  WriteFileOptions once;
  once.replace = false;
  return WriteFileAtomic(path, text, once);
}

// Days since 1970-01-01 -> civil date (Hinnant's civil_from_days).
void CivilFromDays(int64_t z, int64_t* y, unsigned* m, unsigned* d) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const unsigned doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  *d = doy - (153 * mp + 2) / 5 + 1;
  *m = mp < 10 ? mp + 3 : mp - 9;
  *y = static_cast<int64_t>(yoe) + era * 400 + (*m <= 2);
}

// "2025-01-02T03:04:05.123456789Z": the collector's RFC3339 prefix, which the log
// importer reads to the nanosecond with its zone.
std::string Rfc3339(int64_t ns) {
  int64_t secs = ns / kNsPerSec;
  int64_t frac = ns % kNsPerSec;
  if (frac < 0) {
    frac += kNsPerSec;
    --secs;
  }
  int64_t days = secs / 86400;
  int64_t rem = secs % 86400;
  if (rem < 0) {
    rem += 86400;
    --days;
  }
  int64_t y = 0;
  unsigned m = 0, d = 0;
  CivilFromDays(days, &y, &m, &d);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04lld-%02u-%02uT%02lld:%02lld:%02lld.%09lldZ",
                static_cast<long long>(y), m, d, static_cast<long long>(rem / 3600),
                static_cast<long long>(rem / 60 % 60), static_cast<long long>(rem % 60),
                static_cast<long long>(frac));
  return buf;
}

// Per-file string table: trace string ids -> file ids, written before the events.
class FileStrings {
 public:
  uint32_t Id(StringId pool_id, const StringPool& pool) {
    if (pool_id == 0) return 0;
    const auto [it, inserted] = ids_.emplace(pool_id, next_);
    if (inserted) {
      // The collector cuts strings at 4096 bytes; the reader takes any length that fits
      // a chunk, so names are written whole and read back identical.
      pending_.AddString(next_, pool.Get(pool_id));
      ++next_;
    }
    return it->second;
  }
  bool NeedsFlush() const { return pending_.bytes().size() >= kStringsChunkBytes; }
  Status Flush(RawFileWriter& w) {
    if (pending_.count() == 0) return Status::Ok();
    TELLER_RETURN_IF_ERROR(w.WritePayload(ChunkType::kStrings, pending_));
    pending_.Clear();
    return Status::Ok();
  }

 private:
  std::unordered_map<StringId, uint32_t> ids_;
  PayloadBuilder pending_;
  uint32_t next_ = 1;
};

Status WriteProcessFile(const Trace& trace, uint32_t proc, const std::vector<uint32_t>& rows,
                        int64_t offset, const std::string& path, const ExportOptions& options,
                        ExportStats& stats) {
  auto created = RawFileWriter::Create(path);
  if (!created.ok()) return created.status();
  RawFileWriter& w = *created.value();
  const ProcessInfo& p = trace.processes[proc];

  PayloadBuilder info;
  info.AddKeyValue("host", trace.strings.Get(p.host));
  info.AddKeyValue("pid", std::to_string(p.pid));
  info.AddKeyValue("cmdline", trace.strings.Get(p.label));
  if (p.rank >= 0) info.AddKeyValue("rank", std::to_string(p.rank));
  if (p.local_rank >= 0) info.AddKeyValue("local_rank", std::to_string(p.local_rank));
  if (p.world_size >= 0) info.AddKeyValue("world_size", std::to_string(p.world_size));
  info.AddKeyValue("start_realtime_ns", std::to_string(offset + kFirstMonotonicNs));
  info.AddKeyValue("start_monotonic_ns", std::to_string(kFirstMonotonicNs));
  info.AddKeyValue("exported_from",
                   p.source != 0 ? trace.strings.Get(p.source) : std::string_view(options.source));
  TELLER_RETURN_IF_ERROR(w.WritePayload(ChunkType::kProcessInfo, info));
  ClockPair anchor;
  anchor.realtime_ns = offset + kFirstMonotonicNs;
  anchor.monotonic_ns = kFirstMonotonicNs;
  anchor.uncertainty_ns = 0;
  TELLER_RETURN_IF_ERROR(w.WriteClockAnchor(anchor));

  const EventTable& ev = trace.events;
  FileStrings strings;
  // Range categories become NVTX category ids, named once per file.
  std::unordered_map<StringId, uint32_t> category_ids;
  std::vector<EventRecord> records;
  records.reserve(rows.size() + rows.size() / 4 + 8);
  uint64_t range_id = 0;
  auto mono = [offset](int64_t utc) { return utc - offset; };
  for (const uint32_t i : rows) {
    EventRecord r;
    std::memset(&r, 0, sizeof r);
    r.tid = ev.thread[i];
    r.start_ns = mono(ev.start_ns[i]);
    r.end_ns = mono(ev.end_ns[i]);
    r.name = strings.Id(ev.name[i], trace.strings);
    const EventType type = ev.type[i];
    switch (type) {
      case EventType::kPush:
      case EventType::kPop:
      case EventType::kMark:
      case EventType::kRange: {
        r.domain = strings.Id(ev.domain[i], trace.strings);
        if (ev.category[i] != 0) {
          auto [it, inserted] =
              category_ids.emplace(ev.category[i], static_cast<uint32_t>(category_ids.size() + 1));
          if (inserted) {
            EventRecord naming;
            std::memset(&naming, 0, sizeof naming);
            naming.kind = static_cast<uint8_t>(EventKind::kNvtxNameCategory);
            naming.name = strings.Id(ev.category[i], trace.strings);
            naming.value = it->second;
            naming.tid = r.tid;
            naming.start_ns = r.start_ns;
            records.push_back(naming);
          }
          r.category = it->second;
        }
        if (type == EventType::kRange) {
          // A complete range: an NVTX start/end pair. The end record follows at once;
          // its position does not matter to readers, which pair by id.
          r.kind = static_cast<uint8_t>(EventKind::kNvtxStart);
          r.correlation = ++range_id;
          records.push_back(r);
          EventRecord end;
          std::memset(&end, 0, sizeof end);
          end.kind = static_cast<uint8_t>(EventKind::kNvtxEnd);
          end.tid = r.tid;
          end.start_ns = r.end_ns;
          end.correlation = range_id;
          records.push_back(end);
          ++stats.events;
          continue;
        }
        r.kind = static_cast<uint8_t>(type == EventType::kPush  ? EventKind::kNvtxPush
                                      : type == EventType::kPop ? EventKind::kNvtxPop
                                                                : EventKind::kNvtxMark);
        break;
      }
      case EventType::kRuntime:
      case EventType::kDriver:
        r.kind = static_cast<uint8_t>(type == EventType::kRuntime ? EventKind::kCudaRuntime
                                                                  : EventKind::kCudaDriver);
        r.correlation = ev.correlation[i];
        r.device = ev.device[i];
        r.stream = ev.stream[i];
        if (ev.flags[i] & kEventNestedCall) r.flags |= kFlagNested;
        break;
      case EventType::kKernel:
      case EventType::kMemcpy:
      case EventType::kMemset:
      case EventType::kSync:
        r.kind = static_cast<uint8_t>(type == EventType::kKernel   ? EventKind::kKernel
                                      : type == EventType::kMemcpy ? EventKind::kMemcpy
                                      : type == EventType::kMemset ? EventKind::kMemset
                                                                   : EventKind::kSync);
        r.correlation = ev.correlation[i];
        r.device = ev.device[i];
        r.stream = ev.stream[i];
        if (type == EventType::kMemcpy || type == EventType::kMemset) r.value = ev.bytes[i];
        if (ev.flags[i] & kEventInGraph) r.flags |= kFlagInGraph;
        break;
      case EventType::kGpuAnnotation:
        ++stats.dropped_gpu_annotations;
        continue;
    }
    records.push_back(r);
    ++stats.events;
    if (strings.NeedsFlush()) {
      TELLER_RETURN_IF_ERROR(strings.Flush(w));
      TELLER_RETURN_IF_ERROR(w.WriteEvents(records.data(), records.size()));
      stats.records += records.size();
      records.clear();
    }
  }
  TELLER_RETURN_IF_ERROR(strings.Flush(w));
  if (!records.empty()) TELLER_RETURN_IF_ERROR(w.WriteEvents(records.data(), records.size()));
  stats.records += records.size();
  // A clean end, so readers do not report the file as cut short.
  PayloadBuilder end;
  end.AddKeyValue(CounterName(CounterId::kEventsDropped), "0");
  end.AddKeyValue(CounterName(CounterId::kExportedEvents), std::to_string(rows.size()));
  return w.WritePayload(ChunkType::kEnd, end);
}

// The host the log importer will attach "(pid=N)" prefixes to: the one host of all
// processes, or "" when there are several (log_importer.cc).
std::string LogHost(const Trace& trace) {
  StringId host = 0;
  bool first = true;
  for (const ProcessInfo& p : trace.processes) {
    if (first) {
      host = p.host;
      first = false;
    } else if (p.host != host) {
      return std::string();
    }
  }
  return first ? std::string() : std::string(trace.strings.Get(host));
}

struct LogFile {
  std::vector<uint32_t> timed, untimed;
};

Status WriteLogs(const Trace& trace, const std::string& dir, int64_t offset, ExportStats& stats,
                 std::vector<std::string>& written) {
  const LogTable& logs = trace.logs;
  if (logs.size() == 0) return Status::Ok();
  LogFile files[2];  // stdout, stderr
  for (uint32_t row = 0; row < logs.size(); ++row) {
    const bool err = EndsWith(trace.strings.Get(logs.file[row]), "stderr.log");
    (logs.ts_ns[row] == LogTable::kNoTime ? files[err].untimed : files[err].timed).push_back(row);
  }
  // Which processes a "(pid=N)" prefix can name (log_importer.cc, ProcessForPrefix): on a
  // one-host trace, every process of that host; with several hosts, a process whose pid
  // no other process has, or else the host-less process ("", N) the importer makes.
  const std::string log_host = LogHost(trace);
  std::unordered_map<int64_t, uint32_t> pid_count;
  for (const ProcessInfo& p : trace.processes) ++pid_count[p.pid];
  auto nameable = [&](const ProcessInfo& p) {
    const std::string_view host = trace.strings.Get(p.host);
    if (!log_host.empty()) return host == log_host;
    return pid_count[p.pid] == 1 || host.empty();
  };
  const char* names[2] = {"logs/stdout.log", "logs/stderr.log"};
  for (int f = 0; f < 2; ++f) {
    LogFile& lf = files[f];
    if (lf.timed.empty() && lf.untimed.empty()) continue;
    std::stable_sort(lf.timed.begin(), lf.timed.end(),
                     [&](uint32_t a, uint32_t b) { return logs.ts_ns[a] < logs.ts_ns[b]; });
    // Capture lines need their time; untimed lines can only follow the lines the importer
    // probes. With too few timed lines, the file is written with RFC3339 stamps instead.
    const bool capture = lf.untimed.empty() || lf.timed.size() >= kCaptureProbeLines;
    std::string text;
    auto body = [&](uint32_t row) {
      const uint32_t proc = logs.process[row];
      if (proc != LogTable::kNoProcess && proc < trace.processes.size()) {
        const ProcessInfo& p = trace.processes[proc];
        if (nameable(p)) {
          // An empty role: the importer then leaves the process's label and rank alone.
          text += "(pid=" + std::to_string(p.pid) + ") ";
        } else {
          // Several hosts and a pid that repeats: the prefix would name another process.
          ++stats.log_process_lost;
        }
      }
      const std::string_view level = LogLevelName(logs.level[row]);
      if (!level.empty()) {
        text += level;
        text += ": ";
      }
      for (const char c : trace.strings.Get(logs.message[row])) {
        if (c == '\n') {
          text += ' ';
          ++stats.newlines_in_messages;
        } else {
          text += c;
        }
      }
      text += '\n';
    };
    for (const uint32_t row : lf.timed) {
      const int64_t ts = logs.ts_ns[row];
      if (capture) {
        text += std::to_string(ts - offset);
        text += ' ';
      } else {
        text += Rfc3339(ts);
        text += ' ';
      }
      body(row);
    }
    for (const uint32_t row : lf.untimed) body(row);
    stats.log_lines += lf.timed.size() + lf.untimed.size();
    stats.untimed_log_lines += lf.untimed.size();
    TELLER_RETURN_IF_ERROR(WriteTextFile(dir + "/" + names[f], text));
    written.push_back(names[f]);
  }
  return Status::Ok();
}

std::string JsonStringArray(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += ',';
    AppendJsonString(out, items[i]);
  }
  return out + "]";
}

}  // namespace

std::string ExportFileName(size_t process_index) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "proc-%04zu%s", process_index, kFileExtension);
  return buf;
}

Status CheckExportDir(const std::string& out_dir) {
  if (out_dir.empty()) return Status::Error("no output directory given");
  struct stat st;
  if (stat(out_dir.c_str(), &st) != 0) {
    if (errno == ENOENT) return Status::Ok();
    return Status::Error("cannot use " + out_dir + ": " + std::strerror(errno));
  }
  if (!S_ISDIR(st.st_mode)) return Status::Error(out_dir + " exists and is not a directory");
  DIR* d = opendir(out_dir.c_str());
  if (d == nullptr) return Status::Error("cannot list " + out_dir + ": " + std::strerror(errno));
  std::string trace_file, other;
  while (dirent* e = readdir(d)) {
    const std::string_view name = e->d_name;
    if (name == "." || name == "..") continue;
    if (name == "manifest.json" || EndsWith(name, kFileExtension)) {
      trace_file = std::string(name);
    } else if (other.empty()) {
      other = std::string(name);
    }
  }
  closedir(d);
  if (!trace_file.empty()) {
    return Status::Error(out_dir + " already holds a trace (" + trace_file +
                         "); choose a new output directory");
  }
  if (!other.empty()) {
    return Status::Error(out_dir + " is not empty (" + other +
                         "); choose a new or empty output directory");
  }
  return Status::Ok();
}

Result<ExportStats> ExportTrace(const Trace& trace, const std::string& out_dir,
                                const ExportOptions& options) {
  TELLER_RETURN_IF_ERROR(CheckExportDir(out_dir));
  TELLER_RETURN_IF_ERROR(MakeDirs(out_dir));
  if (access(out_dir.c_str(), W_OK) != 0) {
    return Status::Error("cannot write into " + out_dir + ": " + std::strerror(errno));
  }
  ExportStats stats;
  const EventTable& ev = trace.events;

  // The clock offset: the earliest time of the trace lands at kFirstMonotonicNs.
  int64_t earliest = std::numeric_limits<int64_t>::max();
  for (size_t i = 0; i < ev.size(); ++i) {
    earliest = std::min({earliest, ev.start_ns[i], ev.end_ns[i]});
  }
  for (const int64_t ts : trace.logs.ts_ns) {
    if (ts != LogTable::kNoTime) earliest = std::min(earliest, ts);
  }
  int64_t offset = 0;
  if (earliest != std::numeric_limits<int64_t>::max() &&
      __builtin_sub_overflow(earliest, kFirstMonotonicNs, &offset)) {
    return Status::Error("trace times out of range (earliest " + std::to_string(earliest) + " ns)");
  }
  stats.realtime_minus_monotonic_ns = offset;

  std::vector<std::vector<uint32_t>> rows(trace.processes.size());
  for (uint32_t i = 0; i < ev.size(); ++i) {
    const uint32_t p = ev.process[i];
    if (p < rows.size()) rows[p].push_back(i);
  }
  for (uint32_t p = 0; p < trace.processes.size(); ++p) {
    const std::string name = ExportFileName(p);
    TELLER_RETURN_IF_ERROR(
        WriteProcessFile(trace, p, rows[p], offset, out_dir + "/" + name, options, stats));
    stats.files_written.push_back(name);
    ++stats.files;
  }
  if (trace.logs.size() > 0) {
    TELLER_RETURN_IF_ERROR(MakeDirs(out_dir + "/logs"));
    TELLER_RETURN_IF_ERROR(WriteLogs(trace, out_dir, offset, stats, stats.files_written));
  }

  // manifest.json in the launcher's layout (src/collect/launcher.cc): the importer reads
  // start_realtime_ns / start_monotonic_ns to place the capture times of the logs.
  int64_t last = 0;
  for (size_t i = 0; i < ev.size(); ++i) last = std::max(last, ev.end_ns[i]);
  std::string json;
  JsonObjectWriter m(json);
  m.Field("format", "teller-run-manifest")
      .Field("format_version", 1)
      .Field("teller_version", options.teller_version)
      .FieldRaw("command", JsonStringArray(options.command))
      .Field("host", LogHost(trace))
      .Field("clock", "CLOCK_MONOTONIC")
      .Field("start_realtime_ns", offset + kFirstMonotonicNs)
      .Field("start_monotonic_ns", kFirstMonotonicNs)
      .FieldBool("finished", true)
      .Field("end_realtime_ns", std::max(last, offset + kFirstMonotonicNs))
      .Field("end_monotonic_ns", std::max(last - offset, kFirstMonotonicNs))
      .Field("exported_from", options.source);
  for (const auto& [key, value] : options.manifest_fields) m.Field(key, value);
  std::string files = "[";
  for (size_t i = 0; i < stats.files_written.size(); ++i) {
    const std::string& rel = stats.files_written[i];
    struct stat st;
    const uint64_t bytes =
        stat((out_dir + "/" + rel).c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
    if (i) files += ',';
    JsonObjectWriter(files)
        .Field("path", rel)
        .Field("kind", EndsWith(rel, kFileExtension) ? "raw_trace" : "log")
        .Field("bytes", bytes)
        .Close();
  }
  files += "]";
  m.FieldRaw("files", files);
  m.Close();
  json += '\n';
  TELLER_RETURN_IF_ERROR(WriteTextFile(out_dir + "/manifest.json", json));
  return stats;
}

}  // namespace teller::raw
