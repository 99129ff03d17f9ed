#include <cstdio>
#include <string>
#include <vector>

#include "src/cli/commands.h"
#include "teller/ingest/ingest.h"
#include "teller/reconstruct/dataset_export.h"
#include "teller/reconstruct/reconstruct.h"

namespace teller::cli {
namespace {

constexpr const char* kDatasetUsage =
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

}  // namespace

int DatasetCommand(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "-h" || args[0] == "--help") {
    std::fputs(kDatasetUsage, args.empty() ? stderr : stdout);
    return args.empty() ? 2 : 0;
  }
  if (args[0] != "export") {
    std::fprintf(stderr, "teller dataset: unknown subcommand '%s'\n\n%s", args[0].c_str(), kDatasetUsage);
    return 2;
  }
  std::string out;
  reconstruct::ExportOptions options;
  std::vector<std::string> inputs;
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-h" || a == "--help") {
      std::fputs(kDatasetUsage, stdout);
      return 0;
    }
    if (a == "--out" || a == "--setting") {
      if (i + 1 >= args.size()) {
        std::fprintf(stderr, "teller dataset export: %s needs a value\n", a.c_str());
        return 2;
      }
      (a == "--out" ? out : options.setting) = args[++i];
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "teller dataset export: unknown option '%s'\n\n%s", a.c_str(), kDatasetUsage);
      return 2;
    } else {
      inputs.push_back(a);
    }
  }
  if (inputs.empty() || out.empty()) {
    std::fprintf(stderr, "teller dataset export: a TRACE and --out DIR are needed\n\n%s", kDatasetUsage);
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
  auto summary = reconstruct::ExportDataset(trace, r, out, options);
  if (!summary.ok()) {
    std::fprintf(stderr, "teller dataset export: %s\n", summary.status().message().c_str());
    return 1;
  }
  std::printf("wrote %zu requests (%zu steps, %zu nodes, %zu log lines) to %s/%s\n", summary->requests,
              summary->steps, summary->nodes, summary->log_lines, out.c_str(),
              reconstruct::RequestDirName(options.setting).c_str());
  if (summary->truncated_steps > 0) {
    std::printf("note: %zu steps were larger than the node limit and were cut\n", summary->truncated_steps);
  }
  return 0;
}

}  // namespace teller::cli
