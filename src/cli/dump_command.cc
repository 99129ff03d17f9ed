#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "src/cli/collect_commands.h"
#include "teller/core/file_util.h"
#include "teller/core/json_writer.h"
#include "teller/format/raw_reader.h"

namespace teller::cli {
namespace {

constexpr const char* kDumpUsage =
    "usage: teller dump [--stats] [--meta] FILE|DIR...\n"
    "\n"
    "Prints every event of raw trace files (*.tlr, or every one in a trace directory)\n"
    "as one JSON object per line, in file order. Fields: kind, name, pid, tid, ts_ns,\n"
    "and where they apply end_ns, domain, correlation, stream, device, context,\n"
    "graph_id, graph_node, bytes, cbid, result, payload, category, grid, block.\n"
    "Damaged or truncated files are read up to the damage and past it where an intact\n"
    "chunk follows; what was dropped is reported on stderr.\n"
    "\n"
    "options:\n"
    "  --stats   instead of events, one summary line per file: events per kind,\n"
    "            threads, collector counters, damage\n"
    "  --meta    also print one {\"kind\":\"process\",...} line per file with its\n"
    "            process metadata and clock anchors\n";

using raw::EventKind;
using raw::EventRecord;

bool IsRunDirectory(const std::string& path) { return IsRegularFile(path + "/manifest.json"); }

bool IsNvtx(EventKind k) { return static_cast<int>(k) >= 1 && static_cast<int>(k) <= 9; }
bool IsApi(EventKind k) { return k == EventKind::kCudaRuntime || k == EventKind::kCudaDriver; }
bool IsGpu(EventKind k) {
  return k == EventKind::kKernel || k == EventKind::kMemcpy || k == EventKind::kMemset ||
         k == EventKind::kSync || k == EventKind::kOverhead;
}

void AppendEvent(std::string& out, const raw::RawProcessTrace& t, int64_t pid,
                 const EventRecord& e) {
  const auto kind = static_cast<EventKind>(e.kind);
  JsonObjectWriter w(out);
  w.Field("kind", raw::KindName(kind));
  w.Field("name", t.String(e.name));
  w.Field("pid", pid);
  w.Field("tid", static_cast<uint64_t>(e.tid));
  w.Field("ts_ns", e.start_ns);
  if (e.end_ns != 0) w.Field("end_ns", e.end_ns);
  if (IsNvtx(kind)) {
    w.Field("domain", t.String(e.domain));
    if (kind == EventKind::kNvtxStart || kind == EventKind::kNvtxEnd)
      w.Field("range_id", e.correlation);
    if (e.aux != 0) w.Field("payload", e.value);
    if (e.category != 0) w.Field("category", static_cast<uint64_t>(e.category));
    if (kind == EventKind::kNvtxNameThread) w.Field("named_tid", e.value);
    if (kind == EventKind::kNvtxNameCategory) w.Field("named_category", e.value);
  }
  if (IsApi(kind)) {
    w.Field("cbid", static_cast<uint64_t>(e.aux));
    w.Field("correlation", e.correlation);
    w.Field("result", static_cast<int64_t>(e.result));
    if (e.flags & raw::kFlagNested) w.FieldBool("nested", true);
  }
  if (IsGpu(kind)) {
    w.Field("correlation", e.correlation);
    w.Field("device", static_cast<uint64_t>(e.device));
    w.Field("context", static_cast<uint64_t>(e.context));
    w.Field("stream", static_cast<uint64_t>(e.stream));
    if (e.graph_id != 0) w.Field("graph_id", static_cast<uint64_t>(e.graph_id));
    if (kind == EventKind::kKernel) {
      if (e.value != 0) w.Field("graph_node", e.value);
      char dims[96];
      std::snprintf(dims, sizeof(dims), "[%u,%u,%u]", e.grid[0], e.grid[1], e.grid[2]);
      w.FieldRaw("grid", dims);
      std::snprintf(dims, sizeof(dims), "[%u,%u,%u]", e.block[0], e.block[1], e.block[2]);
      w.FieldRaw("block", dims);
      if (e.shared_bytes != 0) w.Field("shared_bytes", static_cast<uint64_t>(e.shared_bytes));
    } else if (kind == EventKind::kMemcpy || kind == EventKind::kMemset) {
      w.Field("bytes", e.value);
      if (kind == EventKind::kMemcpy) w.Field("copy_kind", static_cast<uint64_t>(e.aux));
    } else if (kind == EventKind::kSync) {
      w.Field("sync_type", static_cast<uint64_t>(e.aux));
    }
  }
  w.Close();
  out += '\n';
}

void AppendMeta(std::string& out, const raw::RawProcessTrace& t) {
  JsonObjectWriter w(out);
  w.Field("kind", "process").Field("file", t.path);
  std::string info;
  JsonObjectWriter iw(info);
  for (const auto& [k, v] : t.process_info) iw.Field(k, v);
  iw.Close();
  w.FieldRaw("info", info);
  std::string anchors = "[";
  for (size_t i = 0; i < t.anchors.size(); ++i) {
    if (i) anchors += ',';
    JsonObjectWriter(anchors)
        .Field("realtime_ns", t.anchors[i].realtime_ns)
        .Field("monotonic_ns", t.anchors[i].monotonic_ns)
        .Close();
  }
  w.FieldRaw("clock_anchors", anchors + "]");
  std::string counters;
  JsonObjectWriter cw(counters);
  for (const auto& [k, v] : t.counters) cw.Field(k, v);
  cw.Close();
  w.FieldRaw("counters", counters);
  w.FieldBool("clean_end", t.stats.clean_end);
  w.Close();
  out += '\n';
}

void PrintStats(const raw::RawProcessTrace& t) {
  std::map<std::string, uint64_t> kinds;
  std::map<uint32_t, uint64_t> threads;
  for (const EventRecord& e : t.events) {
    ++kinds[std::string(raw::KindName(static_cast<EventKind>(e.kind)))];
    ++threads[e.tid];
  }
  std::printf("%s: pid %lld, %s\n", t.path.c_str(), static_cast<long long>(t.pid()),
              std::string(t.Info("cmdline")).c_str());
  std::printf("  %zu events in %zu threads:", t.events.size(), threads.size());
  for (const auto& [k, n] : kinds)
    std::printf(" %s=%llu", k.c_str(), static_cast<unsigned long long>(n));
  std::printf("\n  counters:");
  for (const auto& [k, v] : t.counters)
    std::printf(" %s=%llu", k.c_str(), static_cast<unsigned long long>(v));
  std::printf("%s\n", t.stats.clean_end ? "  (clean end)"
                                        : "  (no end chunk: process killed or still running)");
  const std::string damage = raw::DescribeDamage(t);
  if (!damage.empty()) std::printf("  damage: %s\n", damage.c_str());
}

}  // namespace

int DumpCommand(const std::vector<std::string>& args) {
  bool stats = false, meta = false;
  std::vector<std::string> inputs;
  for (const std::string& a : args) {
    if (a == "-h" || a == "--help") {
      std::fputs(kDumpUsage, stdout);
      return 0;
    }
    if (a == "--stats") {
      stats = true;
    } else if (a == "--meta") {
      meta = true;
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "teller dump: unknown option '%s'\n\n%s", a.c_str(), kDumpUsage);
      return 2;
    } else {
      inputs.push_back(a);
    }
  }
  if (inputs.empty()) {
    std::fprintf(stderr, "teller dump: no trace given\n\n%s", kDumpUsage);
    return 2;
  }
  int exit_code = 0;
  std::string out;
  for (const std::string& input : inputs) {
    auto files = raw::ListRawFiles(input);
    if (!files.ok() && IsRunDirectory(input)) {
      // A run in which no process ever recorded an event (no NVTX or CUDA use) is a
      // valid, empty trace, not an error.
      std::fprintf(stderr, "teller dump: %s: no process recorded events (no *.tlr files)\n",
                   input.c_str());
      continue;
    }
    if (!files.ok()) {
      std::fprintf(stderr, "teller dump: %s\n", files.status().message().c_str());
      exit_code = 1;
      continue;
    }
    for (const std::string& file : files.value()) {
      auto trace = raw::ReadRawFile(file);
      if (!trace.ok()) {
        std::fprintf(stderr, "teller dump: %s\n", trace.status().message().c_str());
        exit_code = 1;
        continue;
      }
      const raw::RawProcessTrace& t = trace.value();
      if (stats) {
        PrintStats(t);
        continue;
      }
      if (meta) AppendMeta(out, t);
      const int64_t pid = t.pid();
      for (const EventRecord& e : t.events) {
        AppendEvent(out, t, pid, e);
        if (out.size() > (1 << 20)) {
          std::fwrite(out.data(), 1, out.size(), stdout);
          out.clear();
        }
      }
      std::fwrite(out.data(), 1, out.size(), stdout);
      out.clear();
      const std::string damage = raw::DescribeDamage(t);
      if (!damage.empty())
        std::fprintf(stderr, "teller dump: %s: %s\n", file.c_str(), damage.c_str());
    }
  }
  std::fflush(stdout);
  return exit_code;
}

}  // namespace teller::cli
