#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "src/cli/commands.h"
#include "teller/dataset/build.h"
#include "teller/dataset/dataset_export.h"
#include "teller/dataset/stats.h"
#include "teller/ingest/ingest.h"
#include "teller/reconstruct/reconstruct.h"

namespace teller::cli {
namespace {

constexpr const char* kDatasetUsage =
    "usage: teller dataset export TRACE... --out DIR [--setting NAME]\n"
    "       teller dataset build RAW... --out DIR [--jobs N] [--max-nodes-per-step N]\n"
    "       teller dataset stats [--json] DIR\n"
    "\n"
    "The dataset layout of docs/dataset-format.md (docs/method.md §7):\n"
    "DIR/<setting>/<request>/{trace.json, log.txt, annotation.json} (build: trace.json.gz).\n"
    "\n"
    "  export   unlabelled examples from any trace (labels empty)\n"
    "  build    labelled examples from `teller simulate` / `teller inject` outputs\n"
    "  stats    the paper's Table 1 for a built dataset\n"
    "Run 'teller dataset <subcommand> --help' for its options.\n";

constexpr const char* kExportUsage =
    "usage: teller dataset export TRACE... --out DIR [--setting NAME]\n"
    "\n"
    "Writes one directory per request found in TRACE, in the dataset layout of\n"
    "docs/dataset-format.md: DIR/<setting>/<request>/trace.json (the request's steps and\n"
    "their call trees), log.txt (the log lines aligned to those steps) and\n"
    "annotation.json (labels, empty: is_fault, fault_type, per-step is_anomaly,\n"
    "affected_nodes, explanation).\n"
    "\n"
    "options:\n"
    "  --out DIR         output root (created)\n"
    "  --setting NAME    setting directory (default: default)\n";

constexpr const char* kBuildUsage =
    "usage: teller dataset build RAW... --out DIR [--jobs N] [--max-nodes-per-step N]\n"
    "\n"
    "Labelled dataset from simulated or fault-injected traces. RAW is a `teller simulate`\n"
    "output directory (raw traces, logs, ground_truth.json) or a preset directory whose\n"
    "sub-directories are such outputs (`teller simulate --preset paper --out P`). For each\n"
    "setting it resolves the ground truth's node locators on the imported trace,\n"
    "reconstructs the call trees and writes:\n"
    "  DIR/<setting>/<request>/trace.json.gz    the request's steps, gzip-compressed\n"
    "                                           trace.json; a step holds the STEP subtree\n"
    "                                           of every rank (same seq=)\n"
    "  DIR/<setting>/<request>/log.txt          the request's aligned log lines\n"
    "  DIR/<setting>/<request>/annotation.json  is_fault, fault_type, per step: is_anomaly,\n"
    "                                           vertical/horizontal affected nodes, explanation\n"
    "  DIR/<setting>/steps.jsonl, names.json    compact step records for training\n"
    "  DIR/index.json                           per-setting summary and build counters\n"
    "The build fails when more than 0.1% of the locators match no event (the ground truth\n"
    "does not describe the trace); a RAW without ground_truth.json is an error (unlabelled\n"
    "traces go through `teller dataset export`). DIR/<setting> must not exist yet, and a\n"
    "DIR built by an older teller (dataset format 1, plain trace.json) is refused.\n"
    "Runs of one setting with different seeds (seeds of a preset given together) are named\n"
    "<setting>.seed<N>, N the run's seed.\n"
    "\n"
    "options:\n"
    "  --out DIR                 output root (created)\n"
    "  --jobs N                  settings built in parallel (default: hardware threads)\n"
    "  --max-nodes-per-step N    cut step records larger than N nodes (default 1048576)\n"
    "  -q, --quiet               no progress lines on stderr\n";

constexpr const char* kStatsUsage =
    "usage: teller dataset stats [--json] DIR\n"
    "\n"
    "Table 1 of the paper for a dataset: per setting the requests, faulty requests, steps\n"
    "(one engine step of one request) and nodes, a total row, and the fault-category mix\n"
    "(share of faulty requests per category). Read from DIR/index.json when present, else\n"
    "recounted from the annotation.json and trace.json.gz (or trace.json) files.\n"
    "\n"
    "options:\n"
    "  --json    {\"settings\":[{\"name\",\"requests\",\"faulty\",\"steps\",\"nodes\"}],\n"
    "             \"total\":{...},\"fault_mix\":{\"<category>\":fraction}}\n";

bool IsHelp(const std::string& a) { return a == "-h" || a == "--help"; }

bool ParseCount(const std::string& text, long long min, long long* out) {
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || v < min) return false;
  *out = v;
  return true;
}

int ExportCommand(const std::vector<std::string>& args) {
  std::string out;
  dataset::ExportOptions options;
  std::vector<std::string> inputs;
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (IsHelp(a)) {
      std::fputs(kExportUsage, stdout);
      return 0;
    }
    if (a == "--out" || a == "--setting") {
      if (i + 1 >= args.size()) {
        std::fprintf(stderr, "teller dataset export: %s needs a value\n", a.c_str());
        return 2;
      }
      (a == "--out" ? out : options.setting) = args[++i];
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "teller dataset export: unknown option '%s'\n\n%s", a.c_str(),
                   kExportUsage);
      return 2;
    } else {
      inputs.push_back(a);
    }
  }
  if (inputs.empty() || out.empty()) {
    std::fprintf(stderr, "teller dataset export: a TRACE and --out DIR are needed\n\n%s",
                 kExportUsage);
    return 2;
  }
  Trace trace;
  for (const auto& input : inputs) {
    if (Status s = ingest::ImportPath(input, trace); !s.ok()) {
      std::fprintf(stderr, "teller dataset export: %s\n", s.message().c_str());
      return 1;
    }
  }
  const reconstruct::Reconstruction r = reconstruct::Reconstruct(trace);
  if (r.request_order.empty()) {
    std::fprintf(stderr,
                 "teller dataset export: no requests found: no step range names its requests "
                 "(%zu steps; see docs/python-hooks.md for the step grammar)\n",
                 r.steps.size());
    return 1;
  }
  auto summary = dataset::ExportDataset(trace, r, out, options);
  if (!summary.ok()) {
    std::fprintf(stderr, "teller dataset export: %s\n", summary.status().message().c_str());
    return 1;
  }
  std::printf("wrote %zu requests (%zu steps, %zu nodes, %zu log lines) to %s/%s\n",
              summary->requests, summary->steps, summary->nodes, summary->log_lines, out.c_str(),
              dataset::RequestDirName(options.setting).c_str());
  if (summary->truncated_steps > 0) {
    std::printf("note: %zu steps were larger than the node limit and were cut\n",
                summary->truncated_steps);
  }
  return 0;
}

int BuildCommand(const std::vector<std::string>& args) {
  std::string out;
  dataset::BuildOptions options;
  std::vector<std::string> inputs;
  bool quiet = false;
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (IsHelp(a)) {
      std::fputs(kBuildUsage, stdout);
      return 0;
    }
    if (a == "-q" || a == "--quiet") {
      quiet = true;
    } else if (a == "--out" || a == "--jobs" || a == "--max-nodes-per-step") {
      if (i + 1 >= args.size()) {
        std::fprintf(stderr, "teller dataset build: %s needs a value\n", a.c_str());
        return 2;
      }
      const std::string& value = args[++i];
      long long n = 0;
      if (a == "--out") {
        out = value;
      } else if (!ParseCount(value, 1, &n)) {
        std::fprintf(stderr, "teller dataset build: %s needs a positive integer, not '%s'\n",
                     a.c_str(), value.c_str());
        return 2;
      } else if (a == "--jobs") {
        options.jobs = static_cast<int>(n);
      } else {
        options.max_nodes_per_step = static_cast<size_t>(n);
      }
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "teller dataset build: unknown option '%s'\n\n%s", a.c_str(),
                   kBuildUsage);
      return 2;
    } else {
      inputs.push_back(a);
    }
  }
  if (inputs.empty() || out.empty()) {
    std::fprintf(stderr, "teller dataset build: a RAW directory and --out DIR are needed\n\n%s",
                 kBuildUsage);
    return 2;
  }
  const auto t0 = std::chrono::steady_clock::now();
  if (!quiet) {
    options.progress = [t0](std::string_view line) {
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::fprintf(stderr, "[%6.1fs] %.*s\n", s, static_cast<int>(line.size()), line.data());
    };
  }
  auto summary = dataset::BuildDataset(inputs, out, options);
  if (!summary.ok()) {
    std::fprintf(stderr, "teller dataset build: %s\n", summary.status().message().c_str());
    return 1;
  }
  uint64_t requests = 0, faulty = 0, steps = 0, nodes = 0;
  for (const auto& s : summary->settings) {
    std::printf(
        "%s: %llu requests (%llu faulty), %llu steps (%llu anomalous), %llu nodes, %llu log lines; "
        "import %.2f s, reconstruct %.2f s, write %.2f s\n",
        s.name.c_str(), static_cast<unsigned long long>(s.requests),
        static_cast<unsigned long long>(s.faulty), static_cast<unsigned long long>(s.steps),
        static_cast<unsigned long long>(s.anomalous_steps),
        static_cast<unsigned long long>(s.nodes), static_cast<unsigned long long>(s.log_lines),
        s.import_seconds, s.reconstruct_seconds, s.write_seconds);
    std::string counters;
    for (const auto& [name, value] : s.counters) {
      // Always show the locator counts; the rest only when they say something.
      if (value == 0 && name != CounterName(CounterId::kLocatorsUnresolved)) continue;
      counters += (counters.empty() ? "" : ", ") + name + "=" + std::to_string(value);
    }
    std::printf("  counters: %s\n", counters.c_str());
    if (!s.input_counters.empty()) {
      std::string input;
      for (const auto& [name, value] : s.input_counters) {
        input += (input.empty() ? "" : ", ") + name + "=" + std::to_string(value);
      }
      std::printf("  input: %s\n", input.c_str());
    }
    requests += s.requests;
    faulty += s.faulty;
    steps += s.steps;
    nodes += s.nodes;
  }
  std::printf(
      "wrote %zu settings, %llu requests (%llu faulty), %llu steps, %llu nodes to %s in %.2f s\n",
      summary->settings.size(), static_cast<unsigned long long>(requests),
      static_cast<unsigned long long>(faulty), static_cast<unsigned long long>(steps),
      static_cast<unsigned long long>(nodes), out.c_str(), summary->seconds);
  return 0;
}

int StatsCommand(const std::vector<std::string>& args) {
  bool json = false;
  std::string dir;
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (IsHelp(a)) {
      std::fputs(kStatsUsage, stdout);
      return 0;
    }
    if (a == "--json") {
      json = true;
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "teller dataset stats: unknown option '%s'\n\n%s", a.c_str(),
                   kStatsUsage);
      return 2;
    } else if (!dir.empty()) {
      std::fprintf(stderr, "teller dataset stats: one DIR only ('%s' and '%s')\n", dir.c_str(),
                   a.c_str());
      return 2;
    } else {
      dir = a;
    }
  }
  if (dir.empty()) {
    std::fprintf(stderr, "teller dataset stats: a dataset DIR is needed\n\n%s", kStatsUsage);
    return 2;
  }
  auto stats = dataset::ReadDatasetStats(dir);
  if (!stats.ok()) {
    std::fprintf(stderr, "teller dataset stats: %s\n", stats.status().message().c_str());
    return 1;
  }
  const std::string text =
      json ? dataset::DatasetStatsJson(stats.value()) : dataset::DatasetStatsTable(stats.value());
  std::fputs(text.c_str(), stdout);
  return 0;
}

}  // namespace

int DatasetCommand(const std::vector<std::string>& args) {
  if (args.empty() || IsHelp(args[0])) {
    std::fputs(kDatasetUsage, args.empty() ? stderr : stdout);
    return args.empty() ? 2 : 0;
  }
  if (args[0] == "export") return ExportCommand(args);
  if (args[0] == "build") return BuildCommand(args);
  if (args[0] == "stats") return StatsCommand(args);
  std::fprintf(stderr, "teller dataset: unknown subcommand '%s'\n\n%s", args[0].c_str(),
               kDatasetUsage);
  return 2;
}

}  // namespace teller::cli
