#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "src/cli/commands.h"
#include "teller/core/json_writer.h"
#include "teller/ingest/ingest.h"
#include "teller/reconstruct/reconstruct.h"

namespace teller::cli {
namespace {

constexpr const char* kInspectUsage =
    "usage: teller inspect TRACE... [--json] [--request ID] [--tree] [--max-nodes N]\n"
    "                      [--rules FILE] [--log-tolerance-ms MS]\n"
    "\n"
    "Imports traces, rebuilds the call trees (engine step -> framework -> host call ->\n"
    "kernel), binds kernels to their launches, projects steps onto the requests they\n"
    "served, aligns log lines, and prints what it found.\n"
    "TRACE: a `teller run` directory or .tlr file, a Kineto/PyTorch-profiler .json or\n"
    ".json.gz (or a folder of per-rank files: one multi-rank trace), an Nsight Systems\n"
    ".sqlite export, or a log file. Several TRACEs are merged into one trace.\n"
    "A pipe, FIFO or /dev/stdin is read as a stream (zcat t.json.gz | teller inspect\n"
    "/dev/stdin). A .gz may gunzip to 200x its size (256 MiB always):\n"
    "TELLER_MAX_GUNZIP_BYTES=BYTES (K/M/G/T; 0 = no limit) sets another limit.\n"
    "\n"
    "options:\n"
    "  --json              one JSON object: counters, per-process table, damage counters\n"
    "  --request ID        the steps of one request (its vertical view)\n"
    "  --tree              with --request: print each step's call tree; alone: the tree of\n"
    "                      the first step of every process\n"
    "  --max-nodes N       limit of tree lines per step (default 200)\n"
    "  --rules FILE        classification rules (default: built in, as in\n"
    "                      share/teller/classify.rules)\n"
    "  --log-tolerance-ms  window around a step for log lines without a request id\n"
    "                      (default 50)\n";

using reconstruct::Reconstruction;

std::string FormatDuration(int64_t ns) {
  char buf[32];
  if (ns >= 1000000000) {
    std::snprintf(buf, sizeof(buf), "%.3f s", ns / 1e9);
  } else if (ns >= 1000000) {
    std::snprintf(buf, sizeof(buf), "%.3f ms", ns / 1e6);
  } else {
    std::snprintf(buf, sizeof(buf), "%.1f us", ns / 1e3);
  }
  return buf;
}

void AppendStatsJson(JsonObjectWriter& w, const reconstruct::Stats& s, double seconds) {
  w.Field("events", s.events)
      .Field("processes", s.processes)
      .Field("threads", s.threads)
      .Field("ranges", s.ranges)
      .Field("steps", s.steps)
      .Field("requests", s.requests)
      .Field("host_calls", s.host_calls)
      .Field("kernels", s.kernels)
      .Field("kernels_linked", s.kernels_linked)
      .Field("kernels_orphan", s.kernels_orphan)
      .Field("memcpy", s.memcpy)
      .Field("memset", s.memset)
      .Field("comm_kernels", s.comm_kernels)
      .Field("graph_launches", s.graph_launches)
      .Field("unmatched_push", s.unmatched_push)
      .Field("unmatched_pop", s.unmatched_pop)
      .Field("log_lines", s.log_lines)
      .Field("log_lines_aligned", s.log_lines_aligned)
      .Field("parse_seconds", seconds);
}

void PrintTree(const Trace& trace, const Reconstruction& r, uint32_t root, int max_nodes) {
  const auto& n = r.nodes;
  std::vector<uint32_t> todo = {root};
  int printed = 0;
  while (!todo.empty()) {
    const uint32_t node = todo.back();
    todo.pop_back();
    if (printed++ >= max_nodes) {
      std::printf("    ... (%zu more nodes; --max-nodes raises the limit)\n", todo.size() + 1);
      return;
    }
    const uint32_t e = n.event[node];
    const int indent = static_cast<int>(n.depth[node]) - static_cast<int>(n.depth[root]);
    std::printf("    %*s[%s] %s  %s\n", indent * 2, "",
                std::string(LayerName(n.layer[node])).c_str(),
                std::string(trace.strings.Get(trace.events.name[e])).c_str(),
                FormatDuration(n.end_ns[node] - n.start_ns[node]).c_str());
    for (uint32_t c = n.child_begin[node + 1]; c > n.child_begin[node]; --c) {
      todo.push_back(n.child_index[c - 1]);
    }
  }
}

std::string ProcessLabel(const Trace& trace, uint32_t p) {
  const ProcessInfo& info = trace.processes[p];
  std::string label = "pid " + std::to_string(info.pid);
  if (info.rank >= 0) label += " rank " + std::to_string(info.rank);
  const std::string_view host = trace.strings.Get(info.host);
  if (!host.empty()) label += " @" + std::string(host);
  return label;
}

}  // namespace

int InspectCommand(const std::vector<std::string>& args) {
  bool json = false, tree = false;
  std::string request, rules;
  int max_nodes = 200;
  double tolerance_ms = 50;
  std::vector<std::string> inputs;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> const std::string* {
      if (i + 1 >= args.size()) {
        std::fprintf(stderr, "teller inspect: %s needs a value\n", a.c_str());
        return nullptr;
      }
      return &args[++i];
    };
    if (a == "-h" || a == "--help") {
      std::fputs(kInspectUsage, stdout);
      return 0;
    } else if (a == "--json") {
      json = true;
    } else if (a == "--tree") {
      tree = true;
    } else if (a == "--request") {
      const std::string* v = value();
      if (!v) return 2;
      request = *v;
    } else if (a == "--rules") {
      const std::string* v = value();
      if (!v) return 2;
      rules = *v;
    } else if (a == "--max-nodes") {
      const std::string* v = value();
      if (!v) return 2;
      max_nodes = std::atoi(v->c_str());
      if (max_nodes <= 0) {
        std::fprintf(stderr, "teller inspect: --max-nodes must be a positive number\n");
        return 2;
      }
    } else if (a == "--log-tolerance-ms") {
      const std::string* v = value();
      if (!v) return 2;
      char* end = nullptr;
      tolerance_ms = std::strtod(v->c_str(), &end);
      if (end == v->c_str() || *end != '\0' || tolerance_ms < 0) {
        std::fprintf(stderr, "teller inspect: --log-tolerance-ms must be a number >= 0\n");
        return 2;
      }
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "teller inspect: unknown option '%s'\n\n%s", a.c_str(), kInspectUsage);
      return 2;
    } else {
      inputs.push_back(a);
    }
  }
  if (inputs.empty()) {
    std::fprintf(stderr, "teller inspect: no trace given\n\n%s", kInspectUsage);
    return 2;
  }
  reconstruct::Options options;
  options.log_tolerance_ns = static_cast<int64_t>(tolerance_ms * 1e6);
  if (!rules.empty()) {
    auto classifier = reconstruct::Classifier::FromFile(rules);
    if (!classifier.ok()) {
      std::fprintf(stderr, "teller inspect: %s\n", classifier.status().message().c_str());
      return 1;
    }
    options.classifier = classifier.value();
  }

  const auto t0 = std::chrono::steady_clock::now();
  Trace trace;
  for (const std::string& input : inputs) {
    if (Status s = ingest::ImportPath(input, trace); !s.ok()) {
      std::fprintf(stderr, "teller inspect: %s\n", s.message().c_str());
      return 1;
    }
  }
  const auto t1 = std::chrono::steady_clock::now();
  Reconstruction r = reconstruct::Reconstruct(trace, options);
  const auto t2 = std::chrono::steady_clock::now();
  const double seconds = std::chrono::duration<double>(t2 - t0).count();
  const double import_seconds = std::chrono::duration<double>(t1 - t0).count();
  const reconstruct::Stats& s = r.stats;

  // Per-process table.
  struct ProcRow {
    uint64_t events = 0, steps = 0, kernels = 0;
  };
  std::vector<ProcRow> procs(trace.processes.size());
  for (size_t i = 0; i < trace.events.size(); ++i) {
    ++procs[trace.events.process[i]].events;
    if (trace.events.type[i] == EventType::kKernel) ++procs[trace.events.process[i]].kernels;
  }
  for (const auto& step : r.steps) ++procs[step.process].steps;

  if (json) {
    std::string out;
    JsonObjectWriter w(out);
    AppendStatsJson(w, s, seconds);
    w.Field("import_seconds", import_seconds);
    std::string table = "[";
    for (uint32_t p = 0; p < trace.processes.size(); ++p) {
      if (p) table += ',';
      const ProcessInfo& info = trace.processes[p];
      JsonObjectWriter(table)
          .Field("pid", info.pid)
          .Field("host", trace.strings.Get(info.host))
          .Field("rank", static_cast<int64_t>(info.rank))
          .Field("world_size", static_cast<int64_t>(info.world_size))
          .Field("label", trace.strings.Get(info.label))
          .Field("events", procs[p].events)
          .Field("kernels", procs[p].kernels)
          .Field("steps", procs[p].steps)
          .Field("clock_offset_ns", info.clock_offset_ns)
          .Close();
    }
    w.FieldRaw("process_table", table + "]");
    std::string counters;
    JsonObjectWriter cw(counters);
    for (const auto& [k, v] : trace.counters.items()) {
      if (v != 0) cw.Field(k, v);
    }
    cw.Close();
    w.FieldRaw("counters", counters);
    if (!request.empty()) {
      std::string steps = "[";
      const StringId rid = trace.strings.Find(request);
      auto it = rid == StringPool::kNotFound ? r.request_steps.end() : r.request_steps.find(rid);
      if (it != r.request_steps.end()) {
        bool first = true;
        for (uint32_t si : it->second) {
          const auto& step = r.steps[si];
          if (!first) steps += ',';
          first = false;
          JsonObjectWriter(steps)
              .Field("process", static_cast<uint64_t>(step.process))
              .Field("ordinal", static_cast<uint64_t>(step.ordinal))
              .Field("kind", trace.strings.Get(step.kind))
              .Field("start_ns", r.nodes.start_ns[step.node])
              .Field("end_ns", r.nodes.end_ns[step.node])
              .Field("batch", static_cast<uint64_t>(step.requests.size()))
              .Field("log_lines", static_cast<uint64_t>(step.logs.size()))
              .Close();
        }
      }
      w.FieldRaw("request_steps", steps + "]");
    }
    w.Close();
    std::printf("%s\n", out.c_str());
    return 0;
  }

  std::printf("%zu input(s), %llu events in %llu processes, %llu threads (%.3f s)\n", inputs.size(),
              static_cast<unsigned long long>(s.events),
              static_cast<unsigned long long>(s.processes),
              static_cast<unsigned long long>(s.threads), seconds);
  std::printf("  ranges %llu, steps %llu, requests %llu, host calls %llu\n",
              static_cast<unsigned long long>(s.ranges), static_cast<unsigned long long>(s.steps),
              static_cast<unsigned long long>(s.requests),
              static_cast<unsigned long long>(s.host_calls));
  std::printf(
      "  kernels %llu (linked %llu, orphan %llu, communication %llu), graph launches %llu\n",
      static_cast<unsigned long long>(s.kernels), static_cast<unsigned long long>(s.kernels_linked),
      static_cast<unsigned long long>(s.kernels_orphan),
      static_cast<unsigned long long>(s.comm_kernels),
      static_cast<unsigned long long>(s.graph_launches));
  std::printf("  memcpy %llu, memset %llu; unmatched push %llu, pop %llu\n",
              static_cast<unsigned long long>(s.memcpy), static_cast<unsigned long long>(s.memset),
              static_cast<unsigned long long>(s.unmatched_push),
              static_cast<unsigned long long>(s.unmatched_pop));
  std::printf("  log lines %llu, aligned to steps %llu\n",
              static_cast<unsigned long long>(s.log_lines),
              static_cast<unsigned long long>(s.log_lines_aligned));
  std::printf("processes:\n");
  for (uint32_t p = 0; p < trace.processes.size(); ++p) {
    std::printf("  %-32s %9llu events %7llu kernels %6llu steps  %s\n",
                ProcessLabel(trace, p).c_str(), static_cast<unsigned long long>(procs[p].events),
                static_cast<unsigned long long>(procs[p].kernels),
                static_cast<unsigned long long>(procs[p].steps),
                std::string(trace.strings.Get(trace.processes[p].label)).substr(0, 60).c_str());
  }
  bool damage = false;
  for (const auto& [k, v] : trace.counters.items()) {
    if (v == 0) continue;
    if (!damage)
      std::printf("counters (importers and reconstruction; damaged input shows here):\n");
    damage = true;
    std::printf("  %-40s %llu\n", std::string(k).c_str(), static_cast<unsigned long long>(v));
  }
  if (!request.empty()) {
    const StringId rid = trace.strings.Find(request);
    auto it = rid == StringPool::kNotFound ? r.request_steps.end() : r.request_steps.find(rid);
    if (it == r.request_steps.end()) {
      std::fprintf(stderr,
                   "teller inspect: request '%s' is not in any step (%llu requests known)\n",
                   request.c_str(), static_cast<unsigned long long>(s.requests));
      return 1;
    }
    std::printf("request %s: %zu steps\n", request.c_str(), it->second.size());
    for (uint32_t si : it->second) {
      const auto& step = r.steps[si];
      std::printf("  step %u on %s: %s, batch of %zu, %s, %zu log lines\n", step.ordinal,
                  ProcessLabel(trace, step.process).c_str(),
                  std::string(trace.strings.Get(step.kind)).c_str(), step.requests.size(),
                  FormatDuration(r.nodes.end_ns[step.node] - r.nodes.start_ns[step.node]).c_str(),
                  step.logs.size());
      for (uint32_t row : step.logs) {
        std::printf("    log: %s\n",
                    std::string(trace.strings.Get(trace.logs.message[row])).substr(0, 160).c_str());
      }
      if (tree) PrintTree(trace, r, step.node, max_nodes);
    }
  } else if (tree) {
    std::vector<bool> shown(trace.processes.size(), false);
    for (const auto& step : r.steps) {
      if (shown[step.process]) continue;
      shown[step.process] = true;
      std::printf("first step of %s:\n", ProcessLabel(trace, step.process).c_str());
      PrintTree(trace, r, step.node, max_nodes);
    }
  } else if (!r.request_order.empty()) {
    std::printf("requests (first 10 of %zu): ", r.request_order.size());
    for (size_t i = 0; i < r.request_order.size() && i < 10; ++i) {
      const StringId rid = r.request_order[i];
      std::printf("%s%s (%zu steps)", i ? ", " : "", std::string(trace.strings.Get(rid)).c_str(),
                  r.request_steps.at(rid).size());
    }
    std::printf("\n");
  }
  return 0;
}

}  // namespace teller::cli
