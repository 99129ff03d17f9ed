// `teller simulate --profile P --compare REAL [--json]`: simulates a small deployment of
// the profile, imports it and the real trace, and prints the realism report
// (include/teller/eval/realism.h, docs/realism.md).
#include <ftw.h>
#include <stdlib.h>

#include <cstdio>
#include <string>

#include "src/cli/commands.h"
#include "teller/eval/realism.h"
#include "teller/ingest/ingest.h"
#include "teller/sim/sim.h"

namespace teller::cli {
namespace {

std::string Basename(std::string_view path) {
  const size_t slash = path.find_last_of('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

int RemoveEntry(const char* path, const struct stat*, int, struct FTW*) { return remove(path); }

}  // namespace

int RunRealismCompare(const sim::SimConfig& config, const std::string& real_path, bool json) {
  // The real trace first: a wrong path should not cost a simulation.
  Trace real;
  if (Status s = ingest::ImportPath(real_path, real); !s.ok()) {
    std::fprintf(stderr, "teller simulate --compare: %s\n", s.message().c_str());
    return 1;
  }
  sim::SimConfig small = config;
  if (small.requests > kCompareRequests) small.requests = kCompareRequests;
  char tmpl[] = "/tmp/teller-realism-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) {
    std::fprintf(stderr,
                 "teller simulate --compare: cannot create a temporary directory in /tmp\n");
    return 1;
  }
  const std::string tmp = tmpl;
  const std::string sim_dir = tmp + "/sim";
  auto cleanup = [&tmp]() { nftw(tmp.c_str(), RemoveEntry, 16, FTW_DEPTH | FTW_PHYS); };
  auto simulated = sim::Simulate(small, sim_dir);
  if (!simulated.ok()) {
    std::fprintf(stderr, "teller simulate --compare: simulation failed: %s\n",
                 simulated.status().message().c_str());
    cleanup();
    return 1;
  }
  Trace sim;
  const Status imported = ingest::ImportPath(sim_dir, sim);
  cleanup();
  if (!imported.ok()) {
    std::fprintf(stderr, "teller simulate --compare: cannot read the simulated trace: %s\n",
                 imported.message().c_str());
    return 1;
  }
  auto report = eval::CompareRealism(sim, real);
  if (!report.ok()) {
    std::fprintf(stderr, "teller simulate --compare: %s\n", report.status().message().c_str());
    return 1;
  }
  char label[256];
  std::snprintf(label, sizeof label,
                "%s, %d requests, seed %llu, tp %d pp %d (%d node(s) x %d GPU)",
                small.profile.c_str(), small.requests, static_cast<unsigned long long>(small.seed),
                small.tp, small.pp, small.nodes, small.gpus_per_node);
  const std::string real_label = Basename(real_path);
  const std::string text = json ? eval::RealismReportJson(report.value(), label, real_label)
                                : eval::RealismReportText(report.value(), label, real_label);
  std::fwrite(text.data(), 1, text.size(), stdout);
  return 0;
}

}  // namespace teller::cli
