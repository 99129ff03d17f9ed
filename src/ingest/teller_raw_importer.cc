// Importer of Teller raw traces (docs/raw-format.md): a `teller run` / `teller simulate`
// directory, or one *.tlr file. Event-clock (CLOCK_MONOTONIC) times are put on UTC with
// each file's clock anchors, piecewise linearly between anchors so that drift between
// the two clocks during a long run is followed.
#include "src/ingest/teller_raw_importer.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "src/ingest/rank_folder.h"
#include "src/ingest/run_manifest.h"
#include "src/ingest/signature.h"
#include "teller/core/file_util.h"
#include "teller/core/progress.h"
#include "teller/format/raw_reader.h"
#include "teller/ingest/ingest.h"

namespace teller::ingest {
namespace {

using raw::EventKind;

// Maps event-clock ns to UTC ns with the anchors of one file.
class AnchorClock {
 public:
  explicit AnchorClock(std::vector<raw::ClockAnchor> anchors) : anchors_(std::move(anchors)) {
    std::sort(anchors_.begin(), anchors_.end(),
              [](const auto& a, const auto& b) { return a.monotonic_ns < b.monotonic_ns; });
  }
  bool empty() const { return anchors_.empty(); }
  int64_t ToUtc(int64_t mono) {
    if (anchors_.empty()) return mono;
    if (anchors_.size() == 1) return mono + Offset(0);
    // Events arrive nearly in order: remember the segment.
    if (mono < anchors_[seg_].monotonic_ns || mono >= anchors_[seg_ + 1].monotonic_ns) {
      const auto it =
          std::upper_bound(anchors_.begin(), anchors_.end(), mono,
                           [](int64_t m, const raw::ClockAnchor& a) { return m < a.monotonic_ns; });
      const size_t hi = static_cast<size_t>(it - anchors_.begin());
      seg_ = hi == 0 ? 0 : std::min(hi - 1, anchors_.size() - 2);
    }
    const auto& a = anchors_[seg_];
    const auto& b = anchors_[seg_ + 1];
    const int64_t span = b.monotonic_ns - a.monotonic_ns;
    if (span <= 0) return mono + Offset(seg_);
    // Offsets differ by microseconds at most: interpolate the offset, not the time.
    const double f = static_cast<double>(mono - a.monotonic_ns) / static_cast<double>(span);
    const double offset = static_cast<double>(Offset(seg_)) +
                          f * static_cast<double>(Offset(seg_ + 1) - Offset(seg_));
    return mono + static_cast<int64_t>(offset);
  }

 private:
  int64_t Offset(size_t i) const { return anchors_[i].realtime_ns - anchors_[i].monotonic_ns; }
  std::vector<raw::ClockAnchor> anchors_;
  size_t seg_ = 0;
};

// Signature of a kernel or copy record (docs/signature.md); 0 when the record has none.
// Kernel records carry grid, block and shared bytes (no register count); a dimension of 0
// means the writer did not know the geometry (the simulator, traces re-exported from
// other formats), since CUDA launches have every dimension >= 1. Copy records carry the
// CUPTI copy kind in aux, written when the name does not already say it (the collector
// records copies without a name).
StringId RecordSignature(const raw::EventRecord& e, std::string_view name, StringPool& strings,
                         std::string& buffer) {
  SignatureFields f;
  if (e.kind == static_cast<uint8_t>(EventKind::kKernel)) {
    for (int i = 0; i < 3; ++i) {
      if (e.grid[i] == 0 || e.block[i] == 0) return 0;
      f.grid[i] = e.grid[i];
      f.block[i] = e.block[i];
    }
    f.has_grid = true;
    f.smem = e.shared_bytes;
  } else if (e.kind == static_cast<uint8_t>(EventKind::kMemcpy)) {
    const std::string_view token = CopyKindToken(e.aux);
    if (token.empty() || NameCarriesCopyKind(name, token)) return 0;
    f.copy = token;
  } else {
    return 0;
  }
  buffer.clear();
  AppendSignature(f, buffer);
  return strings.Intern(buffer);
}

int32_t ParseInt(std::string_view text, int32_t fallback) {
  if (text.empty()) return fallback;
  char* end = nullptr;
  const std::string s(text);
  const long v = std::strtol(s.c_str(), &end, 10);
  return end != s.c_str() && *end == '\0' ? static_cast<int32_t>(v) : fallback;
}

// Reads a numeric field of manifest.json ("key":123) without a JSON library: the
// manifest is written by teller run itself with a fixed layout.
int64_t ManifestNumber(const std::string& text, std::string_view key) {
  const std::string needle = "\"" + std::string(key) + "\":";
  const size_t pos = text.find(needle);
  if (pos == std::string::npos) return 0;
  return std::strtoll(text.c_str() + pos + needle.size(), nullptr, 10);
}

void ImportOneFile(const raw::RawProcessTrace& t, Trace& trace) {
  const std::string host(t.Info("host"));
  const uint32_t proc = trace.ProcessIndex(host, t.pid());
  ProcessInfo& p = trace.processes[proc];
  p.label = trace.strings.Intern(t.Info("cmdline"));
  p.source = trace.strings.Intern(t.path);
  p.rank = ParseInt(t.Info("rank"), p.rank);
  p.local_rank = ParseInt(t.Info("local_rank"), p.local_rank);
  p.world_size = ParseInt(t.Info("world_size"), p.world_size);
  trace.sources.push_back(t.path);

  // Damage and collector losses become counters that every report prints.
  trace.counters.Add(CounterId::kRawDamagedRegions, t.stats.damaged_regions);
  trace.counters.Add(CounterId::kRawDroppedBytes, t.stats.dropped_bytes);
  trace.counters.Add(CounterId::kRawBadRecords, t.stats.bad_records);
  trace.counters.Add(CounterId::kRawUnknownChunks, t.stats.unknown_chunks);
  if (!t.stats.clean_end) trace.counters.Add(CounterId::kRawUncleanEnd);
  trace.counters.Add(CounterId::kRawEventsDroppedByCollector,
                     t.Counter(CounterName(CounterId::kEventsDropped)));
  trace.counters.Add(CounterId::kRawStringsDroppedByCollector,
                     t.Counter(CounterName(CounterId::kStringsDropped)));
  trace.counters.Add(CounterId::kRawRangesDroppedByCollector,
                     t.Counter(CounterName(CounterId::kRangesDropped)));
  trace.counters.Add(CounterId::kRawUncommittedRecords, t.stats.uncommitted_records);
  if (t.anchors.empty()) trace.counters.Add(CounterId::kRawNoClockAnchor);
  // The collector's other counters are read with `teller dump --stats`; one this version
  // does not know (a newer collector wrote it) is kept, so that no report hides it.
  for (const auto& [name, value] : t.counters) {
    const auto id = FindCounter(name);
    if (id && CounterInfoOf(*id).stage == CounterStage::kCollector) continue;
    trace.counters.Add(CounterId::kRawUnknownCollectorCounters);
    trace.counters.AddNamed(
        std::string(CounterName(CounterId::kRawUnknownCollectorCounters)) + ":" + name, value);
  }

  AnchorClock clock(t.anchors);
  // File string ids -> pool ids, resolved once per id.
  std::vector<StringId> ids(t.strings.size(), StringPool::kNotFound);
  auto intern = [&](uint32_t id) -> StringId {
    if (id >= ids.size()) {
      if (id != 0) trace.counters.Add(CounterId::kRawUnknownStringId);
      return 0;
    }
    if (ids[id] == StringPool::kNotFound) ids[id] = trace.strings.Intern(t.strings[id]);
    return ids[id];
  };
  const StringId nvtx = trace.strings.Intern("nvtx");
  const StringId cuda_runtime = trace.strings.Intern("cuda_runtime");
  const StringId cuda_driver = trace.strings.Intern("cuda_driver");
  const StringId gpu = trace.strings.Intern("gpu");

  // NVTX start/end ranges may end on another thread: pair them by id.
  std::unordered_map<uint64_t, size_t> open_ranges;
  std::string signature;  // reused by RecordSignature
  const size_t rows = trace.events.size() + t.events.size();
  if (rows > trace.events.type.capacity()) trace.events.Reserve(rows);
  for (const raw::EventRecord& e : t.events) {
    EventRow row;
    row.process = proc;
    row.thread = e.tid;
    row.start_ns = clock.ToUtc(e.start_ns);
    row.end_ns = e.end_ns != 0 ? clock.ToUtc(e.end_ns) : row.start_ns;
    switch (static_cast<EventKind>(e.kind)) {
      case EventKind::kNvtxPush:
      case EventKind::kNvtxPop:
      case EventKind::kNvtxMark:
        row.type = e.kind == static_cast<uint8_t>(EventKind::kNvtxPush)  ? EventType::kPush
                   : e.kind == static_cast<uint8_t>(EventKind::kNvtxPop) ? EventType::kPop
                                                                         : EventType::kMark;
        row.name = intern(e.name);
        row.domain = intern(e.domain);
        row.category = nvtx;
        break;
      case EventKind::kNvtxStart:
        row.type = EventType::kRange;
        row.name = intern(e.name);
        row.domain = intern(e.domain);
        row.category = nvtx;
        open_ranges[e.correlation] = trace.events.Append(row);
        continue;
      case EventKind::kNvtxEnd: {
        const auto it = open_ranges.find(e.correlation);
        if (it == open_ranges.end()) {
          trace.counters.Add(CounterId::kRawNvtxEndWithoutStart);
        } else {
          trace.events.end_ns[it->second] = row.start_ns;
          open_ranges.erase(it);
        }
        continue;
      }
      case EventKind::kCudaRuntime:
      case EventKind::kCudaDriver:
        row.type = e.kind == static_cast<uint8_t>(EventKind::kCudaRuntime) ? EventType::kRuntime
                                                                           : EventType::kDriver;
        row.category = row.type == EventType::kRuntime ? cuda_runtime : cuda_driver;
        row.name = intern(e.name);
        row.correlation = e.correlation;
        if (e.flags & raw::kFlagNested) row.flags |= kEventNestedCall;
        break;
      case EventKind::kKernel:
      case EventKind::kMemcpy:
      case EventKind::kMemset:
      case EventKind::kSync:
        row.type = e.kind == static_cast<uint8_t>(EventKind::kKernel)   ? EventType::kKernel
                   : e.kind == static_cast<uint8_t>(EventKind::kMemcpy) ? EventType::kMemcpy
                   : e.kind == static_cast<uint8_t>(EventKind::kMemset) ? EventType::kMemset
                                                                        : EventType::kSync;
        row.category = gpu;
        row.name = intern(e.name);
        row.correlation = e.correlation;
        row.device = e.device;
        row.stream = e.stream;
        row.thread = e.stream;
        if (row.type == EventType::kMemcpy || row.type == EventType::kMemset) row.bytes = e.value;
        if (e.flags & raw::kFlagInGraph) row.flags |= kEventInGraph;
        row.signature = RecordSignature(e, trace.strings.Get(row.name), trace.strings, signature);
        break;
      case EventKind::kCollectorGap:
        // The collector dropped events of this thread before this point (whole ranges:
        // the tree stays well formed). Reports show where, per thread.
        trace.counters.Add(CounterId::kRawCollectorGaps);
        trace.counters.AddNamed(
            "raw.collector_gap:" + std::to_string(t.pid()) + "/" + std::to_string(e.tid), e.value);
        continue;
      default:
        continue;  // naming, domains and overhead records carry no timeline events
    }
    trace.events.Append(row);
  }
  // A start/end range whose end never came (process killed) is closed at its start and
  // counted, so it stays visible.
  trace.counters.Add(CounterId::kRawNvtxStartWithoutEnd, open_ranges.size());
}

// An empty file in a run directory of several: a process killed between creating its file
// and writing the header recorded nothing, and the other processes' files are still the
// trace. Alone, an empty file is not a trace (ReadRawFile says so).
bool SkippedEmptyFile(const std::string& file, bool is_dir, size_t files) {
  return is_dir && files > 1 && IsEmptyRegularFile(file);
}

int64_t MonotonicToUtc(const raw::RawProcessTrace& t) {
  return t.anchors.empty() ? 0 : t.anchors.front().realtime_ns - t.anchors.front().monotonic_ns;
}

}  // namespace

Status ImportTellerRaw(const std::string& path, Trace& trace) {
  return ImportTellerRawWithParts(path, trace, nullptr);
}

std::vector<std::string> RawPartFiles(const std::string& path) {
  auto files = raw::ListRawFiles(path);
  if (!files.ok()) return {};
  const bool is_dir = IsDirectory(path);
  std::vector<std::string> out;
  for (const std::string& file : files.value()) {
    if (!SkippedEmptyFile(file, is_dir, files->size())) out.push_back(file);
  }
  return out;
}

Status ImportTellerRawFile(const std::string& file, Trace& trace, int64_t* monotonic_to_utc) {
  auto t = raw::ReadRawFile(file);
  if (!t.ok()) return t.status();
  *monotonic_to_utc = MonotonicToUtc(t.value());
  ImportOneFile(t.value(), trace);
  return Status::Ok();
}

Status ImportTellerRawWithParts(const std::string& path, Trace& trace, PartSource* parts) {
  auto files = raw::ListRawFiles(path);
  const bool is_dir = IsDirectory(path);
  if (!files.ok() && !(is_dir && IsRegularFile(path + "/manifest.json"))) return files.status();
  int64_t monotonic_to_utc = 0;
  if (files.ok()) {
    ProgressTask progress("importing " + path, files->size(), ProgressUnit::kItems, "files");
    for (const std::string& file : files.value()) {
      progress.Set(static_cast<uint64_t>(&file - files->data()));
      if (SkippedEmptyFile(file, is_dir, files->size())) {
        trace.counters.Add(CounterId::kRawEmptyFiles);
        continue;
      }
      ImportedPart part;
      Status taken;
      if (parts != nullptr && parts->Take(file, part, taken)) {
        TELLER_RETURN_IF_ERROR(taken);
        if (monotonic_to_utc == 0) monotonic_to_utc = part.monotonic_to_utc_ns;
        AppendTrace(part.trace, trace);
        continue;
      }
      auto t = raw::ReadRawFile(file);
      if (!t.ok()) return t.status();
      if (&file == files->data() && files->size() > 1 && t->stats.file_bytes > 0) {
        // A run's files hold about as many events per byte as each other: room for all of
        // them at the first file's density, so that the rows already imported are not
        // moved once per file (ImportOneFile makes more room if it is short).
        uint64_t bytes = 0;
        for (const std::string& f : files.value()) {
          struct stat st;
          if (stat(f.c_str(), &st) == 0) bytes += static_cast<uint64_t>(st.st_size);
        }
        const double per_byte =
            static_cast<double>(t->events.size()) / static_cast<double>(t->stats.file_bytes);
        trace.events.Reserve(trace.events.size() +
                             static_cast<size_t>(per_byte * static_cast<double>(bytes)));
      }
      if (monotonic_to_utc == 0) monotonic_to_utc = MonotonicToUtc(t.value());
      ImportOneFile(t.value(), trace);
    }
  }
  if (!is_dir) return Status::Ok();
  // The launcher's own clock pair converts the capture times of its log files.
  std::ifstream in(path + "/manifest.json");
  std::stringstream manifest;
  manifest << in.rdbuf();
  const int64_t real = ManifestNumber(manifest.str(), "start_realtime_ns");
  const int64_t mono = ManifestNumber(manifest.str(), "start_monotonic_ns");
  if (real != 0 && mono != 0) monotonic_to_utc = real - mono;
  // How the command ended, for the failure findings. Of several run directories read into
  // one trace, the first with a readable manifest describes the run; an unreadable one
  // leaves the run unknown, as a trace without a manifest.
  if (!trace.run.known && IsRegularFile(path + "/manifest.json")) {
    Trace::RunInfo run;
    if (ReadRunManifest(path + "/manifest.json", &run).ok()) trace.run = std::move(run);
  }
  for (const char* log : {"/logs/stdout.log", "/logs/stderr.log"}) {
    const std::string log_path = path + log;
    if (!IsRegularFile(log_path)) continue;
    TELLER_RETURN_IF_ERROR(ImportLogFile(log_path, LogOptions{}, trace, monotonic_to_utc));
  }
  return Status::Ok();
}

Status ImportTellerRawBytes(std::string_view bytes, const std::string& name, Trace& trace) {
  auto t = raw::ReadRawBytes(bytes, name);
  if (!t.ok()) return t.status();
  ImportOneFile(t.value(), trace);
  return Status::Ok();
}

}  // namespace teller::ingest
