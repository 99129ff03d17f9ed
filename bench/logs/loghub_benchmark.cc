// Log template mining on LogHub's 2k samples (bench/README.md, "Log template mining"):
// grouping accuracy per dataset on the original and the corrected labels, their means,
// and mining throughput on one core (median of several runs).
//
// usage: loghub_benchmark [--data DIR] [--runs N] [--floor] [--show DATASET]
//   DIR: the folder holding loghub_2k/ and loghub_2k_corrected/ (default ../shared/data/real
//   beside the checkout, as the tests use). --floor prints the floors of the ctest
//   (tests/logs/ga_floor.txt) instead of the table; --show lists the wrong groups of one
//   dataset (original labels), largest first, with the mined templates they went to.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "bench/logs/loghub_data.h"
#include "teller/logs/template_miner.h"

using teller::logs::GroupingAccuracy;
using teller::logs::TemplateMiner;

namespace {

teller::logs::MinerOptions g_options;

double Ga(const teller::loghub::Dataset& d) {
  TemplateMiner miner(g_options);
  std::vector<uint32_t> mined;
  mined.reserve(d.content.size());
  for (const std::string& m : d.content) mined.push_back(miner.Add(m));
  return GroupingAccuracy(d.label, mined);
}

// Why a dataset's GA is what it is: every wrong true group (largest first) with the mined
// groups its lines went to, and a line of each.
void Show(const teller::loghub::Dataset& d) {
  TemplateMiner miner;
  std::vector<uint32_t> mined;
  for (const std::string& m : d.content) mined.push_back(miner.Add(m));
  std::map<uint32_t, std::map<uint32_t, std::vector<size_t>>> by_truth;
  std::map<uint32_t, std::set<uint32_t>> truths_of_mined;
  for (size_t i = 0; i < mined.size(); ++i) {
    by_truth[d.label[i]][mined[i]].push_back(i);
    truths_of_mined[mined[i]].insert(d.label[i]);
  }
  std::vector<std::pair<size_t, uint32_t>> wrong;
  for (const auto& [t, m] : by_truth) {
    size_t n = 0;
    for (const auto& [id, rows] : m) n += rows.size();
    if (m.size() > 1 || truths_of_mined[m.begin()->first].size() > 1) wrong.push_back({n, t});
  }
  std::sort(wrong.rbegin(), wrong.rend());
  for (const auto& [n, t] : wrong) {
    std::printf("true group %u: %zu lines\n", t, n);
    for (const auto& [id, rows] : by_truth[t]) {
      std::printf("  mined %u (%zu lines, %zu true groups): %s\n      e.g. %s\n", id, rows.size(),
                  truths_of_mined[id].size(), miner.Text(id).c_str(),
                  d.content[rows.front()].c_str());
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string data = TELLER_DEFAULT_DATA_DIR;
  int runs = 7;
  bool floor = false;
  std::string show;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--data" && i + 1 < argc) {
      data = argv[++i];
    } else if (a == "--runs" && i + 1 < argc) {
      runs = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--show" && i + 1 < argc) {
      show = argv[++i];
    } else if (a == "--similarity" && i + 1 < argc) {
      g_options.similarity = std::atof(argv[++i]);
    } else if (a == "--depth" && i + 1 < argc) {
      g_options.depth = std::atoi(argv[++i]);
    } else if (a == "--floor") {
      floor = true;
    } else {
      std::fprintf(stderr,
                   "usage: loghub_benchmark [--data DIR] [--runs N] [--floor] [--show DATASET]\n");
      return 2;
    }
  }
  std::vector<teller::loghub::Dataset> original, corrected;
  for (const std::string& name : teller::loghub::Datasets()) {
    for (bool c : {false, true}) {
      auto d = teller::loghub::LoadStructured(teller::loghub::StructuredPath(data, name, c));
      if (!d.ok()) {
        std::fprintf(stderr, "%s\n", d.status().message().c_str());
        return 1;
      }
      (c ? corrected : original).push_back(std::move(d).value());
    }
  }
  const auto& names = teller::loghub::Datasets();
  for (size_t k = 0; k < names.size(); ++k) {
    if (names[k] == show) {
      Show(original[k]);
      return 0;
    }
  }
  if (floor) {
    // The ctest's floors: the measured GA less 0.01, rounded down to 0.01, so that a change
    // that costs a dataset more than a line in a hundred fails.
    std::printf("# dataset labels floor (loghub_benchmark --floor)\n");
    for (size_t k = 0; k < names.size(); ++k) {
      for (bool c : {false, true}) {
        const double ga = Ga(c ? corrected[k] : original[k]);
        std::printf("%s %s %.2f\n", names[k].c_str(), c ? "corrected" : "original",
                    std::max(0.0, static_cast<double>(static_cast<int>((ga - 0.01) * 100)) / 100));
      }
    }
    return 0;
  }
  std::printf("| dataset | GA original | GA corrected | templates (true) |\n|---|---|---|---|\n");
  double sum_o = 0, sum_c = 0;
  size_t lines = 0;
  for (size_t k = 0; k < names.size(); ++k) {
    const double go = Ga(original[k]), gc = Ga(corrected[k]);
    sum_o += go;
    sum_c += gc;
    TemplateMiner miner;
    for (const std::string& m : original[k].content) miner.Add(m);
    uint32_t true_groups = 0;
    for (uint32_t l : original[k].label) true_groups = std::max(true_groups, l + 1);
    std::printf("| %s | %.3f | %.3f | %zu (%u) |\n", names[k].c_str(), go, gc, miner.size(),
                true_groups);
    lines += original[k].content.size();
  }
  const double n = static_cast<double>(names.size());
  std::printf("| **mean** | **%.3f** | **%.3f** | |\n\n", sum_o / n, sum_c / n);

  // Throughput: every dataset mined by a fresh miner, all 16 one after the other, several
  // passes per run so that one run takes long enough to time; median over the runs. Wall
  // time and the thread's CPU time are both given: on a shared machine other processes
  // take the core away, which the CPU time leaves out.
  constexpr int kPasses = 20;
  std::vector<double> wall_rates, cpu_rates;
  size_t sink = 0;
  for (int r = 0; r < runs; ++r) {
    timespec c0, c1;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
    const auto t0 = std::chrono::steady_clock::now();
    for (int p = 0; p < kPasses; ++p) {
      for (const auto& d : original) {
        TemplateMiner miner(g_options);
        for (const std::string& m : d.content) sink += miner.Add(m);
      }
    }
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
    const double cpu = (c1.tv_sec - c0.tv_sec) + (c1.tv_nsec - c0.tv_nsec) * 1e-9;
    wall_rates.push_back(static_cast<double>(lines) * kPasses / wall);
    cpu_rates.push_back(static_cast<double>(lines) * kPasses / cpu);
  }
  std::sort(wall_rates.begin(), wall_rates.end());
  std::sort(cpu_rates.begin(), cpu_rates.end());
  std::printf(
      "throughput, one thread: %.2f M lines/s by CPU time, %.2f M lines/s by wall time (medians "
      "of %d runs of %zu lines; CPU-time range %.2f-%.2f)%s\n",
      cpu_rates[cpu_rates.size() / 2] / 1e6, wall_rates[wall_rates.size() / 2] / 1e6, runs,
      lines * kPasses, cpu_rates.front() / 1e6, cpu_rates.back() / 1e6, sink == 0 ? " " : "");
  return 0;
}
