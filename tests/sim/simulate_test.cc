// The simulator: determinism, what each fault mechanism moves (and what it leaves
// alone), that simulated logs and traces go through the real importers and
// reconstruction cleanly, and the paper preset's shape.
#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "teller/format/ground_truth.h"
#include "teller/ingest/ingest.h"
#include "teller/reconstruct/reconstruct.h"
#include "teller/sim/faults.h"
#include "teller/sim/sim.h"
#include "tests/temp_dirs.h"

namespace teller::sim {
namespace {

using format::FaultRecord;
using format::GroundTruth;
using format::kGroundTruthFile;
using format::NodeLocator;
using format::ProcessTruth;
using format::ReadGroundTruth;
using format::RequestTruth;
using format::StepTruth;
using format::ViewLabel;

std::string TempDir(const std::string& tag) {
  return testing::ProgramTempDirs().Make("teller-sim-test", tag + "-");
}

std::map<std::string, std::string> ReadDir(const std::string& dir, const std::string& prefix = "") {
  std::map<std::string, std::string> files;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return files;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    const std::string path = dir + "/" + name;
    struct stat st;
    stat(path.c_str(), &st);
    if (S_ISDIR(st.st_mode)) {
      for (auto& [k, v] : ReadDir(path, prefix + name + "/")) files[k] = v;
    } else {
      std::ifstream in(path, std::ios::binary);
      std::stringstream ss;
      ss << in.rdbuf();
      files[prefix + name] = ss.str();
    }
  }
  closedir(d);
  return files;
}

SimConfig Small(const std::string& profile, uint64_t seed = 5) {
  SimConfig c;
  c.profile = profile;
  c.seed = seed;
  c.requests = 10;
  c.layers = 8;
  c.output_median = 12;
  c.output_max = 24;
  c.prompt_median = 256;
  c.rate = 10;
  return c;
}

struct Sim {
  std::string dir;
  SimSummary summary;
  Trace trace;
  reconstruct::Reconstruction rec;
  GroundTruth truth;
};

void RunSim(const SimConfig& config, Sim* s, bool reconstruct = true) {
  s->dir = TempDir(config.profile);
  auto r = Simulate(config, s->dir);
  ASSERT_TRUE(r.ok()) << r.status().message();
  s->summary = r.value();
  auto st = ingest::ImportPath(s->dir, s->trace);
  ASSERT_TRUE(st.ok()) << st.message();
  auto truth = ReadGroundTruth(s->dir + "/" + kGroundTruthFile);
  if (truth.ok()) s->truth = truth.value();
  if (reconstruct) s->rec = reconstruct::Reconstruct(s->trace);
}

// Kernel durations by (rank, short name) inside [from, to) (UTC ns, after import).
struct Durations {
  std::map<std::pair<int, std::string>, std::vector<double>> by;
  double Median(int rank, const std::string& needle) const {
    std::vector<double> all;
    for (const auto& [key, v] : by) {
      if ((rank < 0 || key.first == rank) && key.second.find(needle) != std::string::npos) {
        all.insert(all.end(), v.begin(), v.end());
      }
    }
    if (all.empty()) return 0;
    std::nth_element(all.begin(), all.begin() + all.size() / 2, all.end());
    return all[all.size() / 2];
  }
};

Durations Collect(const Trace& t, EventType type, int64_t from, int64_t to) {
  Durations d;
  for (size_t i = 0; i < t.events.size(); ++i) {
    if (t.events.type[i] != type) continue;
    if (t.events.start_ns[i] < from || t.events.start_ns[i] >= to) continue;
    const int rank = t.processes[t.events.process[i]].rank;
    d.by[{rank, std::string(t.strings.Get(t.events.name[i]))}].push_back(
        static_cast<double>(t.events.end_ns[i] - t.events.start_ns[i]));
  }
  return d;
}

TEST(Simulate, SameSeedSameBytesDifferentSeedDifferentTraces) {
  SimConfig c = Small("vllm-v1-online", 11);
  c.faults.push_back(FaultSpec{Mechanism::kStragglerRank, 0, 0, 0, "", 1, 3, 3});
  const std::string a = TempDir("det-a"), b = TempDir("det-b"), other = TempDir("det-c");
  ASSERT_TRUE(Simulate(c, a).ok());
  ASSERT_TRUE(Simulate(c, b).ok());
  SimConfig c2 = c;
  c2.seed = 12;
  ASSERT_TRUE(Simulate(c2, other).ok());
  const auto fa = ReadDir(a), fb = ReadDir(b), fo = ReadDir(other);
  ASSERT_GE(fa.size(), 9u);  // 6 traces, 2 logs, manifest, ground truth
  EXPECT_EQ(fa, fb);
  size_t differing = 0;
  for (const auto& [name, bytes] : fa) {
    if (name.find(".tlr") == std::string::npos) continue;
    bool any = false;
    for (const auto& [oname, obytes] : fo)
      any |= (oname.find(".tlr") != std::string::npos && obytes == bytes);
    differing += !any;
  }
  EXPECT_EQ(differing, 6u);
}

TEST(Simulate, RefusesReusedDirectoryAndBadTopology) {
  SimConfig c = Small("vllm-v0");
  const std::string dir = TempDir("reuse");
  ASSERT_TRUE(Simulate(c, dir).ok());
  auto again = Simulate(c, dir);
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.status().message().find("already holds a trace"), std::string::npos);
  SimConfig bad = Small("vllm-v0");
  bad.tp = 4;
  auto r = Simulate(bad, TempDir("bad"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("tp x pp"), std::string::npos);
  SimConfig unknown = Small("trtllm");
  EXPECT_FALSE(Simulate(unknown, TempDir("unknown")).ok());
}

TEST(Simulate, EveryProfileReconstructsCleanlyAndItsLogsParse) {
  for (const char* profile : kProfiles) {
    SCOPED_TRACE(profile);
    Sim s;
    RunSim(Small(profile), &s);
    const auto& st = s.rec.stats;
    EXPECT_GT(st.steps, 0u);
    EXPECT_EQ(st.kernels_orphan, 0u);
    EXPECT_EQ(st.gpu_orphan, 0u);
    EXPECT_EQ(st.unmatched_push, 0u);
    EXPECT_EQ(st.unmatched_pop, 0u);
    EXPECT_EQ(st.requests, 10u);
    EXPECT_EQ(s.trace.counters.Get("raw.damaged_regions"), 0u);
    // Logs: parsed with times, and (except offline vLLM, which prints no ids) naming
    // the simulated requests so that they align to their steps.
    EXPECT_GT(s.trace.logs.size(), 10u);
    size_t timed = 0, with_id = 0;
    for (size_t i = 0; i < s.trace.logs.size(); ++i) {
      timed += s.trace.logs.ts_ns[i] != LogTable::kNoTime;
      with_id += s.trace.logs.request[i] != 0;
    }
    EXPECT_EQ(timed, s.trace.logs.size());
    if (std::string(profile) != "vllm-v1-offline") {
      EXPECT_GE(with_id, 10u) << profile;
      EXPECT_GE(st.log_lines_aligned, 10u);
    }
    // The step grammar carries seq and kind; every step has requests.
    for (const auto& step : s.rec.steps)
      EXPECT_FALSE(step.requests.empty() && std::string(profile) != "torch-fsdp");
  }
}

TEST(Simulate, CollectivesEndTogetherAndGraphDecodeIsOneLaunch) {
  Sim s;
  RunSim(Small("vllm-v1-online"), &s);
  EXPECT_GT(s.rec.stats.graph_launches, 0u);
  // All-reduce kernels of one TP group: ends within a few us, starts spread more.
  std::map<int, std::vector<std::pair<int64_t, int64_t>>> ar;  // rank -> (start, end)
  for (size_t i = 0; i < s.trace.events.size(); ++i) {
    if (s.trace.events.type[i] != EventType::kKernel) continue;
    if (s.trace.strings.Get(s.trace.events.name[i]).find("cross_device_reduce") ==
        std::string::npos)
      continue;
    ar[s.trace.processes[s.trace.events.process[i]].rank].push_back(
        {s.trace.events.start_ns[i], s.trace.events.end_ns[i]});
  }
  ASSERT_EQ(ar.size(), 6u);
  ASSERT_EQ(ar[0].size(), ar[1].size());
  int64_t max_end_spread = 0, max_start_spread = 0;
  for (size_t k = 0; k < ar[0].size(); ++k) {
    const int64_t ends[3] = {ar[0][k].second, ar[1][k].second, ar[2][k].second};
    const int64_t starts[3] = {ar[0][k].first, ar[1][k].first, ar[2][k].first};
    max_end_spread = std::max(
        max_end_spread, *std::max_element(ends, ends + 3) - *std::min_element(ends, ends + 3));
    max_start_spread = std::max(max_start_spread, *std::max_element(starts, starts + 3) -
                                                      *std::min_element(starts, starts + 3));
  }
  EXPECT_LT(max_end_spread, 5000);  // same host, same clock: within the 2.5 us jitter
  EXPECT_GT(max_start_spread, 5 * max_end_spread);
  // Cross-host clocks were aligned by reconstruction.
  EXPECT_EQ(s.trace.counters.Get("reconstruct.clock_aligned_hosts"), 1u);
  EXPECT_EQ(s.trace.counters.Get("reconstruct.clock_unaligned_hosts"), 0u);
}

// One fault on a fixed rank over the whole run against the same seed without it.
struct Pair {
  Sim base, fault;
};
void RunPair(const std::string& profile, FaultSpec f, Pair* p, int requests = 10,
             int output_median = 12, double rate = 10) {
  SimConfig c = Small(profile, 21);
  c.requests = requests;
  c.output_median = output_median;
  c.output_max = 2 * output_median;
  c.rate = rate;
  RunSim(c, &p->base, false);
  c.faults = {f};
  RunSim(c, &p->fault, false);
}
FaultSpec Whole(Mechanism m, int rank = 1, std::string target = "", double magnitude = 0) {
  FaultSpec f;
  f.mechanism = m;
  f.rank = rank;
  f.target = std::move(target);
  f.magnitude = magnitude;
  return f;
}
constexpr int64_t kAll = INT64_MAX;

TEST(Mechanisms, KernelThrottleShiftsOnlyTheTargetFamily) {
  Pair p;
  RunPair("vllm-v1-online", Whole(Mechanism::kKernelThrottle, -1, "attention", 3.0), &p);
  const auto b = Collect(p.base.trace, EventType::kKernel, 0, kAll);
  const auto f = Collect(p.fault.trace, EventType::kKernel, 0, kAll);
  const double attn =
      f.Median(-1, "flash_fwd_splitkv_kernel") / b.Median(-1, "flash_fwd_splitkv_kernel");
  const double norm = f.Median(-1, "fused_add_rms_norm") / b.Median(-1, "fused_add_rms_norm");
  const double gemm = f.Median(-1, "sm90_xmma_gemm") / b.Median(-1, "sm90_xmma_gemm");
  EXPECT_NEAR(attn, 3.0, 0.3);
  EXPECT_NEAR(norm, 1.0, 0.05);
  EXPECT_NEAR(gemm, 1.0, 0.05);
  EXPECT_GT(p.fault.summary.faulty_requests, 0u);
  EXPECT_EQ(p.base.summary.faulty_requests, 0u);
}

TEST(Mechanisms, SlowKernelOnOneGpuMakesItsPeersWait) {
  Pair p;
  RunPair("sglang", Whole(Mechanism::kKernelSlowOneGpu, 1, "gemm", 3.0), &p);
  const auto b = Collect(p.base.trace, EventType::kKernel, 0, kAll);
  const auto f = Collect(p.fault.trace, EventType::kKernel, 0, kAll);
  EXPECT_NEAR(f.Median(1, "sm90_xmma_gemm") / b.Median(1, "sm90_xmma_gemm"), 3.0, 0.3);
  EXPECT_NEAR(f.Median(0, "sm90_xmma_gemm") / b.Median(0, "sm90_xmma_gemm"), 1.0, 0.05);
  // Rank 0 and 2 wait for rank 1 inside the all-reduce: it widens there, not on rank 1.
  EXPECT_GT(f.Median(0, "cross_device_reduce") / b.Median(0, "cross_device_reduce"), 2.0);
  EXPECT_LT(f.Median(1, "cross_device_reduce"), f.Median(0, "cross_device_reduce"));
}

TEST(Mechanisms, RuntimeFaultsSlowTheirCallsOnTheirRank) {
  {
    Pair p;
    RunPair("vllm-v0", Whole(Mechanism::kLaunchLatency, 2, "", 6.0), &p);
    const auto b = Collect(p.base.trace, EventType::kRuntime, 0, kAll);
    const auto f = Collect(p.fault.trace, EventType::kRuntime, 0, kAll);
    EXPECT_GT(f.Median(2, "cudaLaunchKernel") / b.Median(2, "cudaLaunchKernel"), 4.0);
    EXPECT_NEAR(f.Median(0, "cudaLaunchKernel") / b.Median(0, "cudaLaunchKernel"), 1.0, 0.15);
  }
  {
    Pair p;
    RunPair("vllm-v0", Whole(Mechanism::kSyncStall, 4, "", 4.0), &p);
    const auto b = Collect(p.base.trace, EventType::kRuntime, 0, kAll);
    const auto f = Collect(p.fault.trace, EventType::kRuntime, 0, kAll);
    // Rank 4's end-of-step synchronization blocks a log-normal extra time of median
    // 4 x 0.9 ms (docs/simulator.md): over ~120 steps the median moves by that within
    // 15% (three standard errors of a median with log-sd 0.4).
    EXPECT_NEAR(f.Median(4, "cudaStreamSynchronize") - b.Median(4, "cudaStreamSynchronize"), 3.6e6,
                0.54e6);
    // Rank 3 is not stalled: its synchronizations (median ~1.2 ms) keep their length to
    // within 2%, while a stall on it would add ~290%.
    EXPECT_NEAR(f.Median(3, "cudaStreamSynchronize") / b.Median(3, "cudaStreamSynchronize"), 1.0,
                0.02);
  }
  {
    Pair p;
    RunPair("vllm-v0", Whole(Mechanism::kGpuThrottle, 0, "", 1.4), &p, 30);
    // The clocks come down over the first second (open-ended episode): compare after it.
    int64_t first = INT64_MAX;
    for (int64_t t : p.fault.trace.events.start_ns) first = std::min(first, t);
    const auto b = Collect(p.base.trace, EventType::kKernel, first + 1'200'000'000, kAll);
    const auto f = Collect(p.fault.trace, EventType::kKernel, first + 1'200'000'000, kAll);
    EXPECT_GT(f.Median(0, "sm90_xmma_gemm") / b.Median(0, "sm90_xmma_gemm"), 1.1);
    EXPECT_NEAR(f.Median(0, "rotary_embedding") / b.Median(0, "rotary_embedding"), 1.0,
                0.05);  // memory-bound
  }
}

TEST(Mechanisms, CommunicationFaults) {
  {
    Pair p;
    RunPair("vllm-v1-online", Whole(Mechanism::kSlowLink, -1, "", 8.0), &p);
    const auto b = Collect(p.base.trace, EventType::kKernel, 0, kAll);
    const auto f = Collect(p.fault.trace, EventType::kKernel, 0, kAll);
    EXPECT_GT(f.Median(0, "SendRecv") / b.Median(0, "SendRecv"),
              3.0);  // crosses nodes (the sender's kernel is the transfer)
    EXPECT_NEAR(f.Median(3, "cross_device_reduce") / b.Median(3, "cross_device_reduce"), 1.0,
                0.2);  // stays in node
  }
  {
    Pair p;
    RunPair("vllm-v1-online", Whole(Mechanism::kStragglerRank, 4, "", 6.0), &p);
    const auto f = Collect(p.fault.trace, EventType::kKernel, 0, kAll);
    const auto b = Collect(p.base.trace, EventType::kKernel, 0, kAll);
    // The late rank has the shortest collectives; its peers wait.
    double peer_max = 0, late_mean = 0, peer_mean = 0;
    for (const auto& [key, v] : f.by) {
      if (key.second.find("cross_device_reduce") == std::string::npos) continue;
      double sum = 0;
      for (double x : v) sum += x;
      if (key.first == 4) late_mean = sum / v.size();
      if (key.first == 3) peer_mean = sum / v.size();
      if (key.first == 3) peer_max = *std::max_element(v.begin(), v.end());
    }
    EXPECT_LT(late_mean, peer_mean);
    EXPECT_GT(peer_max, 100e3);
    (void)b;
  }
  {
    Pair p;
    RunPair("vllm-v0", Whole(Mechanism::kNcclFallback, -1, "", 3.0), &p);
    const auto f = Collect(p.fault.trace, EventType::kKernel, 0, kAll);
    EXPECT_GT(f.Median(-1, "ncclDevKernel_AllReduce"), 0);
    EXPECT_EQ(f.Median(-1, "cross_device_reduce"), 0);
  }
}

TEST(Mechanisms, MemoryFaults) {
  {
    Pair p;
    FaultSpec f = Whole(Mechanism::kKvPressure, -1, "", 0.8);
    RunPair("vllm-v0", f, &p, 24, 40, 40);  // enough concurrency to preempt
    size_t recompute = 0;
    for (const StepTruth& s : p.fault.truth.steps) recompute += s.fault == 0;
    EXPECT_GT(recompute, 0u);
    // vLLM v0 warns at the first preemption.
    size_t warnings = 0;
    for (size_t i = 0; i < p.fault.trace.logs.size(); ++i) {
      warnings +=
          p.fault.trace.strings.Get(p.fault.trace.logs.message[i]).find("is preempted by") !=
          std::string::npos;
    }
    EXPECT_GE(warnings, 1u);
  }
  {
    Pair p;
    RunPair("vllm-v1-online", Whole(Mechanism::kKvSwap, -1, "", 1.0), &p);
    uint64_t bytes = 0;
    for (size_t i = 0; i < p.fault.trace.events.size(); ++i) {
      if (p.fault.trace.events.type[i] == EventType::kMemcpy)
        bytes = std::max(bytes, p.fault.trace.events.bytes[i]);
    }
    EXPECT_GT(bytes, 4u << 20);
  }
  {
    Pair p;
    RunPair("torch-fsdp", Whole(Mechanism::kAllocatorStall, 2, "", 3.0), &p);
    const auto f = Collect(p.fault.trace, EventType::kRuntime, 0, kAll);
    const auto b = Collect(p.base.trace, EventType::kRuntime, 0, kAll);
    EXPECT_GT(f.Median(2, "cudaMalloc"), 100e3);
    EXPECT_EQ(f.Median(1, "cudaMalloc"), 0);
    EXPECT_EQ(b.Median(2, "cudaMalloc"), 0);
  }
}

TEST(Mechanisms, SchedulingFaults) {
  {
    Pair p;
    RunPair("vllm-v1-online", Whole(Mechanism::kMisroute), &p, 16);
    size_t misrouted = 0;
    for (const StepTruth& s : p.fault.truth.steps) {
      if (s.fault != 0) continue;
      ++misrouted;
      ASSERT_EQ(s.affected_requests.size(), 1u);
      EXPECT_FALSE(s.vertical.nodes.empty());
    }
    EXPECT_GT(misrouted, 0u);
    // A misrouted request's first step is not a prefill for it: it never prefilled.
  }
  {
    Pair p;
    RunPair("sglang", Whole(Mechanism::kStarvation, -1, "", 1.0), &p, 16);
    // Starved requests wait far longer for their first step than in the healthy run.
    size_t starved = 0;
    for (const RequestTruth& r : p.fault.truth.requests) starved += r.mechanism == "starvation";
    EXPECT_GT(starved, 0u);
  }
  {
    Pair p;
    RunPair("vllm-v0", Whole(Mechanism::kOpReorder), &p);
    // In a prefill step's layer, attention now comes before the cache write.
    const Trace& t = p.fault.trace;
    int64_t cache = -1, attn = -1;
    for (size_t i = 0; i < t.events.size() && (cache < 0 || attn < 0); ++i) {
      if (t.events.type[i] != EventType::kKernel || t.processes[t.events.process[i]].rank != 0)
        continue;
      const std::string_view n = t.strings.Get(t.events.name[i]);
      if (cache < 0 && n.find("reshape_and_cache") != std::string::npos)
        cache = t.events.start_ns[i];
      if (attn < 0 && n.find("flash_fwd") != std::string::npos) attn = t.events.start_ns[i];
    }
    EXPECT_LT(attn, cache);
  }
  {
    Pair p;
    RunPair("vllm-v1-online", Whole(Mechanism::kWorkerStall, 1, "", 1.0), &p);
    const auto f = Collect(p.fault.trace, EventType::kKernel, 0, kAll);
    double peer_max = 0;
    for (const auto& [key, v] : f.by) {
      if (key.first == 0 && key.second.find("cross_device_reduce") != std::string::npos) {
        peer_max = std::max(peer_max, *std::max_element(v.begin(), v.end()));
      }
    }
    EXPECT_GT(peer_max, 10e6);  // rank 0 waited > 10 ms for the stalled worker
  }
  {
    Pair p;
    RunPair("vllm-v1-online", Whole(Mechanism::kFallbackKernel), &p);
    const auto f = Collect(p.fault.trace, EventType::kKernel, 0, kAll);
    EXPECT_GT(f.Median(-1, "RadixSort"), 0);
    const auto b = Collect(p.base.trace, EventType::kKernel, 0, kAll);
    EXPECT_EQ(b.Median(-1, "RadixSort"), 0);
  }
}

TEST(GroundTruth, FaultyRequestsHaveAnomalousStepsHealthyOnesNone) {
  SimConfig c = Small("vllm-v1-online", 8);
  c.requests = 30;
  for (Mechanism m :
       {Mechanism::kKernelThrottle, Mechanism::kStragglerRank, Mechanism::kSyncStall}) {
    FaultSpec f;
    f.mechanism = m;
    // A straggler in the first pipeline stage: in the second, its late graph launches
    // hide behind the wait for the first stage's activations and no step is slower.
    if (m == Mechanism::kStragglerRank) f.rank = 1;
    f.onset_request = 4 + 9 * static_cast<int>(c.faults.size());
    f.span_requests = 3;
    c.faults.push_back(f);
  }
  Sim s;
  RunSim(c, &s, false);
  ASSERT_EQ(s.truth.requests.size(), 30u);
  std::map<std::string, int> anomalous;
  for (const StepTruth& st : s.truth.steps) {
    if (st.fault < 0) {
      EXPECT_TRUE(st.affected_requests.empty());
      EXPECT_FALSE(st.vertical.is_anomaly || st.horizontal.is_anomaly);
      EXPECT_TRUE(st.explanation.empty());
      continue;
    }
    EXPECT_FALSE(st.explanation.empty());
    EXPECT_TRUE(st.vertical.is_anomaly || st.horizontal.is_anomaly);
    for (const std::string& r : st.affected_requests) {
      EXPECT_NE(std::find(st.requests.begin(), st.requests.end(), r), st.requests.end());
      ++anomalous[r];
    }
  }
  size_t faulty = 0;
  for (const RequestTruth& r : s.truth.requests) {
    faulty += r.is_fault;
    EXPECT_EQ(r.is_fault, anomalous.count(r.id) > 0) << r.id;
    if (r.is_fault) {
      EXPECT_FALSE(r.fault_type.empty());
      EXPECT_FALSE(r.mechanism.empty());
    }
  }
  EXPECT_GT(faulty, 3u);
  EXPECT_LT(faulty, 30u);
}

// Materiality (docs/simulator.md "Ground truth"): a fault that acts on time labels a step
// only where the time it added is at least kMaterialShare of the step's healthy duration
// and kMaterialSpreadZ healthy step-to-step spreads of the step's kind.
TEST(Materiality, AnImmaterialSlowdownLabelsNoStep) {
  // Cross-node send/recv 2% slower: a fraction of a microsecond per step of milliseconds.
  SimConfig c = Small("vllm-v1-online", 21);
  c.faults = {Whole(Mechanism::kSlowLink, -1, "", 1.02)};
  Sim s;
  RunSim(c, &s, false);
  ASSERT_FALSE(s.truth.steps.empty());
  for (const StepTruth& st : s.truth.steps) {
    EXPECT_EQ(st.fault, -1) << st.seq;
    EXPECT_TRUE(st.affected_requests.empty()) << st.seq;
    EXPECT_FALSE(st.vertical.is_anomaly || st.horizontal.is_anomaly) << st.seq;
  }
  for (const RequestTruth& r : s.truth.requests) EXPECT_FALSE(r.is_fault) << r.id;
  EXPECT_EQ(s.summary.faulty_requests, 0u);
  // It did act (every step's cross-node transfer), below the threshold: the summary
  // says so, since the user placed it.
  EXPECT_NE(s.summary.silent_faults.find(
                "0 slow_link (slowed " + std::to_string(s.truth.steps.size()) +
                " steps by less than the materiality threshold) acted on no step materially"),
            std::string::npos)
      << s.summary.silent_faults;

  // Placed by the simulator (anchored to request arrivals), it is resampled: it keeps its
  // window and its magnitude grows by half each time until it matters.
  c.faults[0].onset_request = 2;
  c.faults[0].span_requests = 3;
  Sim placed;
  RunSim(c, &placed, false);
  ASSERT_EQ(placed.truth.faults.size(), 1u);
  EXPECT_GT(placed.truth.faults[0].magnitude, 1.02 * 1.5 - 1e-9);
  // A magnitude under the mechanism's default (the preset's subtle 1.2-1.5x) goes at
  // least to the default on its first resampling (1.02 x 1.5^4 would be 5.2, under 8).
  EXPECT_GE(placed.truth.faults[0].magnitude, Info(Mechanism::kSlowLink).default_magnitude);
  size_t labelled = 0;
  for (const StepTruth& st : placed.truth.steps) labelled += st.fault == 0;
  EXPECT_GT(labelled, 0u);
  EXPECT_TRUE(placed.summary.silent_faults.empty());

  // One that cannot matter however strong: FSDP steps wait for their parameters gathered
  // across nodes, and a throttled GPU's compute hides under the gathers. Refused, loudly.
  SimConfig fsdp = Small("torch-fsdp", 21);
  FaultSpec throttle = Whole(Mechanism::kGpuThrottle, 2, "", 1.35);
  throttle.onset_request = 2;
  throttle.span_requests = 3;
  fsdp.faults = {throttle};
  const std::string dir = TempDir("immaterial-placed");
  auto r = Simulate(fsdp, dir);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("0 gpu_throttle (slowed "), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("acted on no step materially after 4 resamplings"),
            std::string::npos)
      << r.status().message();
}

TEST(Materiality, AFaultLabelsExactlyTheStepsItSlowedMaterially) {
  // An offline batch queues every request before the first step, so the run schedules the
  // same steps whatever their times. The healthy run is the same run with the fault at
  // magnitude 1 (the same set-up and random draws; a slow link draws nothing of its own,
  // and at 1x it adds nothing): step k's extra time is the difference of the two runs'
  // step k. A 3x slower cross-node send/recv adds 2 x 22 us (the link latency) plus twice
  // the activations' transfer: under 5% of a decode step, 6-9% of a step with a prefill
  // chunk (measured with this seed), and nothing where the receiving stage waits for its
  // host anyway; material in steps of the second kind only.
  SimConfig c = Small("vllm-v1-offline", 21);
  c.requests = 24;
  c.output_median = 16;
  c.output_max = 32;
  c.max_running = 4;  // prefills of new requests keep joining decode steps
  FaultSpec f = Whole(Mechanism::kSlowLink, -1, "", 1.0);
  f.onset_ns = 0;
  c.faults = {f};
  Sim probe;  // for the steps' times
  RunSim(c, &probe, false);
  const std::vector<StepTruth>& p = probe.truth.steps;
  ASSERT_GT(p.size(), 30u);
  // The middle half of the run (onset relative to the first arrival, the first step's start).
  c.faults[0].onset_ns = p[p.size() / 4].start_ns - p.front().start_ns - 1000;
  c.faults[0].duration_ns = p[3 * p.size() / 4].start_ns - p[p.size() / 4].start_ns;
  Sim base;
  RunSim(c, &base, false);
  const std::vector<StepTruth>& b = base.truth.steps;
  c.faults[0].magnitude = 3.0;
  Sim fault;
  RunSim(c, &fault, false);
  const GroundTruth& t = fault.truth;
  ASSERT_EQ(t.steps.size(), b.size());
  ASSERT_EQ(t.faults.size(), 1u);
  const int64_t on = t.faults[0].onset_ns, off = on + t.faults[0].duration_ns;
  std::vector<bool> clean(t.steps.size());
  for (size_t i = 0; i < t.steps.size(); ++i) {
    ASSERT_EQ(t.steps[i].requests, b[i].requests) << i;  // the same schedule
    clean[i] = t.steps[i].start_ns < on || t.steps[i].start_ns >= off;
  }
  // The healthy step-to-step spread by kind that the run measured on its fault-free steps
  // (noise: a few percent at most here).
  const std::map<std::string, double>& spread = fault.summary.healthy_spread;
  for (const StepTruth& st : t.steps) {
    ASSERT_TRUE(spread.count(st.kind)) << st.kind;
    EXPECT_LT(spread.at(st.kind), 0.05) << st.kind;
  }
  size_t material = 0, immaterial = 0;
  for (size_t i = 0; i < t.steps.size(); ++i) {
    const StepTruth& st = t.steps[i];
    const double healthy = static_cast<double>(b[i].end_ns - b[i].start_ns);
    const double extra = static_cast<double>(st.end_ns - st.start_ns) - healthy;
    if (clean[i]) {
      EXPECT_NEAR(extra, 0.0, 1.0) << "step " << st.seq << " outside the window changed";
      EXPECT_EQ(st.fault, -1) << st.seq;
      continue;
    }
    // A slower link never speeds a step up; where the receiving stage waits for its host
    // anyway the later transfer costs nothing.
    EXPECT_GE(extra, 0.0) << st.seq;
    const double need = std::max(kMaterialShare, kMaterialSpreadZ * spread.at(st.kind));
    const double share = extra / healthy;
    if (std::fabs(share - need) < 0.002) continue;  // too close to call to the nanosecond
    const bool expect = share >= need;
    (expect ? material : immaterial) += 1;
    EXPECT_EQ(st.fault, expect ? 0 : -1)
        << "step " << st.seq << " (" << st.kind << "): added " << extra / 1e3 << " us to "
        << healthy / 1e3 << " us, threshold share " << need;
    EXPECT_EQ(st.horizontal.is_anomaly, expect) << st.seq;
    EXPECT_EQ(st.affected_requests.size(), expect ? st.requests.size() : 0u) << st.seq;
  }
  // Both kinds of step occur, so the test tells a threshold from none.
  EXPECT_GT(material, 0u);
  EXPECT_GT(immaterial, 0u);
  // A request is faulty exactly when one of its steps is labelled.
  std::set<std::string> labelled;
  for (const StepTruth& st : t.steps)
    labelled.insert(st.affected_requests.begin(), st.affected_requests.end());
  for (const RequestTruth& r : t.requests) EXPECT_EQ(r.is_fault, labelled.count(r.id) > 0) << r.id;
}

TEST(Materiality, CulpritRanksAreInTheGroundTruth) {
  SimConfig c = Small("vllm-v0", 21);
  c.requests = 16;
  FaultSpec stall = Whole(Mechanism::kSyncStall, 4, "", 4.0);
  stall.onset_ns = 0;
  stall.duration_ns = 400'000'000;
  FaultSpec throttle = Whole(Mechanism::kKernelThrottle, -1, "gemm", 3.0);
  throttle.onset_ns = 600'000'000;
  c.faults = {stall, throttle};
  Sim s;
  RunSim(c, &s, false);
  ASSERT_EQ(s.truth.faults.size(), 2u);
  EXPECT_EQ(s.truth.faults[0].ranks, std::vector<int>{4});  // one rank's synchronization
  EXPECT_TRUE(s.truth.faults[1].ranks.empty());             // every rank alike
  // Both acted materially (a 3.6 ms stall; GEMMs 3x slower).
  EXPECT_TRUE(s.summary.silent_faults.empty()) << s.summary.silent_faults;
}

// The labelled locators of a run with their role, rank (by the locator's process) and the
// name of the event they name: a range's own name; a call's, the runtime/driver call with
// that correlation id in the process; GPU work's, the k-th GPU record with it, in table
// order, as the dataset build resolves them.
struct LabelledNode {
  NodeLocator::Role role;
  NodeLocator::Kind kind;
  int rank;
  std::string name;
};
std::vector<LabelledNode> LabelledNodes(const Sim& s) {
  std::map<std::pair<std::string, int64_t>, int> rank_of;
  for (const ProcessTruth& p : s.truth.processes) rank_of[{p.host, p.pid}] = p.rank;
  using Key = std::tuple<std::string, int64_t, uint64_t>;
  std::map<Key, std::vector<std::string>> gpu;
  std::map<Key, std::string> call;
  const EventTable& ev = s.trace.events;
  for (size_t i = 0; i < ev.size(); ++i) {
    const ProcessInfo& p = s.trace.processes[ev.process[i]];
    const Key key{std::string(s.trace.strings.Get(p.host)), p.pid, ev.correlation[i]};
    if (IsGpuWork(ev.type[i])) gpu[key].emplace_back(s.trace.strings.Get(ev.name[i]));
    if (IsHostCall(ev.type[i])) call.emplace(key, s.trace.strings.Get(ev.name[i]));
  }
  std::vector<LabelledNode> out;
  for (const StepTruth& st : s.truth.steps) {
    for (const ViewLabel* v : {&st.vertical, &st.horizontal}) {
      for (const NodeLocator& n : v->nodes) {
        LabelledNode l{n.role, n.kind, rank_of.at({n.host, n.pid}), n.name};
        const Key key{n.host, n.pid, n.correlation};
        if (n.kind == NodeLocator::Kind::kCall) l.name = call.at(key);
        if (n.kind == NodeLocator::Kind::kGpu) {
          const auto& names = gpu.at(key);
          l.name = n.occurrence < names.size() ? names[n.occurrence] : "?";
        }
        out.push_back(l);
      }
    }
  }
  return out;
}

bool IsCollectiveKernel(const LabelledNode& n) {
  // The custom all-reduce (vLLM, SGLang), or NCCL's kernels (all-gather, send/recv).
  return n.kind == NodeLocator::Kind::kGpu && (n.name.find("reduce") != std::string::npos ||
                                               n.name.find("ncclDevKernel") != std::string::npos);
}

// Roles in the ground truth (version 3), derived from what each mechanism does
// (docs/simulator.md, "Ground truth"): the culprit's own delayed or slowed work is the
// root and what waited for it is impact. The culprit rank is the fault's rank, so every
// root sits on it, and a culprit with a root leaves no collective as root.
TEST(GroundTruth, RolesSeparateRootsFromImpact) {
  using Kind = NodeLocator::Kind;
  struct Case {
    const char* profile;
    FaultSpec fault;
    int culprit;
    // Roots: of these kinds, named with one of these substrings.
    std::set<Kind> root_kinds;
    std::vector<std::string> root_names;
    // Impact besides peers' collective kernels: the culprit's own collective kernels
    // (it waited too, least), its operator ranges (around a stalled call).
    bool own_collective_impact, own_range_impact;
  };
  const Case cases[] = {
      // Rank 4 joins collectives late: host jitter in the range of the collective's
      // operator (eager steps) or a late graph launch (decode); every rank's all-reduce
      // kernel waited.
      {"vllm-v1-online",
       Whole(Mechanism::kStragglerRank, 4, "", 6.0),
       4,
       {Kind::kRange, Kind::kCall},
       {"all_reduce", "all_gather", "cudaGraphLaunch"},
       true,
       false},
      // Rank 1's GEMMs 3x slower: the GEMM kernels are the roots.
      {"sglang",
       Whole(Mechanism::kKernelSlowOneGpu, 1, "gemm", 3.0),
       1,
       {Kind::kGpu},
       {"gemm"},
       true,
       false},
      // Rank 3's cudaMalloc calls block: they are the roots; the operator range around
      // each only grew by it.
      {"vllm-v1-online",
       Whole(Mechanism::kAllocatorStall, 3, "", 4.0),
       3,
       {Kind::kCall},
       {"cudaMalloc"},
       true,
       true},
      // Rank 2 picks steps up late, with no node of its own before its step: its own
      // all-reduce, the first node its lateness shows in, is the root; its peers' waited.
      {"vllm-v0",
       Whole(Mechanism::kWorkerStall, 2, "", 2.0),
       2,
       {Kind::kGpu},
       {"reduce"},
       false,
       false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.profile) + " " + Info(c.fault.mechanism).name);
    SimConfig config = Small(c.profile, 21);
    config.faults = {c.fault};
    Sim s;
    RunSim(config, &s, false);
    ASSERT_EQ(s.truth.faults.size(), 1u);
    EXPECT_EQ(s.truth.faults[0].ranks, std::vector<int>{c.culprit});
    const std::vector<LabelledNode> nodes = LabelledNodes(s);
    ASSERT_FALSE(nodes.empty());
    size_t roots = 0, peer_impact = 0;
    for (const LabelledNode& n : nodes) {
      ASSERT_NE(n.role, NodeLocator::Role::kUnknown);
      if (n.role == NodeLocator::Role::kRoot) {
        ++roots;
        EXPECT_EQ(n.rank, c.culprit) << n.name;
        EXPECT_TRUE(c.root_kinds.count(n.kind)) << n.name;
        bool named = false;
        for (const std::string& want : c.root_names)
          named |= n.name.find(want) != std::string::npos;
        EXPECT_TRUE(named) << n.name;
      } else if (n.rank != c.culprit) {
        EXPECT_TRUE(IsCollectiveKernel(n)) << n.name;
        ++peer_impact;
      } else {
        const bool own_range = n.kind == Kind::kRange && c.own_range_impact;
        EXPECT_TRUE(own_range || (IsCollectiveKernel(n) && c.own_collective_impact)) << n.name;
      }
    }
    EXPECT_GT(roots, 0u);
    EXPECT_GT(peer_impact, 0u);
  }
}

TEST(FaultSpecs, ParseAndReject) {
  FaultSpec f;
  std::string error;
  ASSERT_TRUE(ParseFaultSpec(
      "kernel_throttle:target=gemm,magnitude=2.5,onset=2s,duration=500ms,rank=3", &f, &error))
      << error;
  EXPECT_EQ(f.mechanism, Mechanism::kKernelThrottle);
  EXPECT_EQ(f.target, "gemm");
  EXPECT_DOUBLE_EQ(f.magnitude, 2.5);
  EXPECT_EQ(f.onset_ns, 2000000000);
  EXPECT_EQ(f.duration_ns, 500000000);
  EXPECT_EQ(f.rank, 3);
  EXPECT_FALSE(ParseFaultSpec("gpu_melt", &f, &error));
  EXPECT_NE(error.find("kernel_throttle"), std::string::npos);  // lists the known ones
  EXPECT_FALSE(ParseFaultSpec("kernel_throttle:magnitude=-1", &f, &error));
  EXPECT_FALSE(ParseFaultSpec("kernel_throttle:onset=soon", &f, &error));
  EXPECT_FALSE(ParseFaultSpec("kernel_throttle:colour=red", &f, &error));
  // Five categories, at least three mechanisms each.
  std::map<std::string, int> per;
  for (const MechanismInfo& m : Mechanisms()) ++per[std::string(FaultCategoryName(m.category))];
  ASSERT_EQ(per.size(), 5u);
  for (const auto& [cat, n] : per) EXPECT_GE(n, 3) << cat;
}

TEST(Preset, StarvationInAnOfflineBatchIsPlacedOnItsArrivals) {
  // vLLM's offline batch adds every prompt before the first step: a starvation window
  // planned over later steps would hold no arrival. Planned on the arrivals of the
  // requests its steps serve, it acts on the first run, with no resampling (which grew
  // the window until it starved the batch other faults were planned on).
  SimConfig c;
  c.profile = c.setting = "vllm-v1-offline";
  c.seed = 5;
  c.requests = 40;
  c.layers = 4;
  c.output_median = 8;
  c.max_running = 4;
  c.plan_fault_windows = true;
  c.faulty_fraction = 0.4;
  FaultSpec starve;
  starve.mechanism = Mechanism::kStarvation;
  FaultSpec fallback;
  fallback.mechanism = Mechanism::kFallbackKernel;
  c.faults = {fallback, starve};
  std::vector<std::string> lines;
  const std::string dir = TempDir("offline-starvation");
  auto r = Simulate(c, dir, [&lines](std::string_view l) { lines.emplace_back(l); });
  ASSERT_TRUE(r.ok()) << r.status().message();
  for (const std::string& l : lines) EXPECT_EQ(l.find("resampling"), std::string::npos) << l;
  auto truth = ReadGroundTruth(dir + "/" + kGroundTruthFile);
  ASSERT_TRUE(truth.ok()) << truth.status().message();
  std::map<int, int> steps_of;
  for (const StepTruth& st : truth->steps) ++steps_of[st.fault];
  EXPECT_GT(steps_of[0], 0);  // the fallback kernel's window still has its steps
  EXPECT_GT(steps_of[1], 0);  // and some starved request is in a step
}

TEST(Preset, PaperShape) {
  const auto configs = PaperPreset(1);
  ASSERT_EQ(configs.size(), 5u);
  int total = 0;
  std::map<std::string, int> categories;
  for (const SimConfig& c : configs) {
    total += c.requests;
    for (const FaultSpec& f : c.faults)
      ++categories[std::string(FaultCategoryName(Info(f.mechanism).category))];
  }
  EXPECT_EQ(total, 300);
  EXPECT_EQ(configs[0].requests, 100);
  ASSERT_EQ(categories.size(), 5u);
  for (const auto& [cat, n] : categories) EXPECT_EQ(n, 5) << cat;
}

// --- Healthy confounders (docs/simulator.md "Healthy confounders")

SimConfig ConfounderRun(uint64_t seed = 3) {
  SimConfig c;
  c.profile = "vllm-v0";  // logs its preemptions as warnings
  c.seed = seed;
  c.nodes = c.gpus_per_node = c.tp = c.pp = 1;
  c.requests = 300;
  c.layers = 2;
  c.rate = 40;
  c.prompt_median = 256;
  c.prompt_max = 2048;
  c.output_median = 12;
  c.output_max = 24;
  c.confounders = true;
  return c;
}

double StepMs(const StepTruth& st) { return static_cast<double>(st.end_ns - st.start_ns) / 1e6; }

TEST(Confounders, EachKindAppearsAtAboutItsRateAndIsLabelledHealthy) {
  Sim s;
  RunSim(ConfounderRun(), &s, /*reconstruct=*/false);
  ASSERT_FALSE(s.truth.steps.empty());
  std::map<std::string, std::vector<const format::ConfounderRecord*>> by_kind;
  for (const auto& c : s.truth.confounders) by_kind[c.kind].push_back(&c);
  const double requests = 300, steps = static_cast<double>(s.truth.steps.size());
  // Per-request kinds: within a factor of ~2.5 of their expected counts (deterministic
  // seed; a rate off by an order of magnitude fails).
  auto near = [](size_t n, double expected) {
    return static_cast<double>(n) >= expected / 2.5 && static_cast<double>(n) <= expected * 2.5;
  };
  EXPECT_TRUE(near(by_kind["long_prompt"].size(), kLongPromptShare * requests))
      << by_kind["long_prompt"].size();
  EXPECT_TRUE(near(by_kind["prefix_hit"].size(), kPrefixHitShare * requests))
      << by_kind["prefix_hit"].size();
  // A burst takes the next 4-8 arrivals: one start per ~(1/share + 6) arrivals.
  EXPECT_TRUE(near(by_kind["arrival_burst"].size(), requests / (1.0 / kBurstShare + 6.0)))
      << by_kind["arrival_burst"].size();
  EXPECT_TRUE(near(by_kind["gc_pause"].size(), kGcPauseShare * steps))
      << by_kind["gc_pause"].size() << " in " << steps << " steps";
  EXPECT_GE(by_kind["preemption_burst"].size(), 1u);
  for (const auto* c : by_kind["arrival_burst"]) EXPECT_GE(c->requests.size(), 2u);
  for (const auto* c : by_kind["preemption_burst"]) {
    EXPECT_GE(c->requests.size(), 1u);
    EXPECT_GE(c->steps.size(), 2u) << "the preemption step and a recomputation";
  }
  // Healthy: no step or request is labelled, and every listed step exists.
  std::set<uint64_t> seqs;
  for (const StepTruth& st : s.truth.steps) {
    seqs.insert(st.seq);
    EXPECT_EQ(st.fault, -1) << st.seq;
    EXPECT_FALSE(st.vertical.is_anomaly || st.horizontal.is_anomaly) << st.seq;
  }
  for (const RequestTruth& r : s.truth.requests) EXPECT_FALSE(r.is_fault) << r.id;
  for (const auto& c : s.truth.confounders) {
    EXPECT_FALSE(c.steps.empty()) << c.kind;
    for (uint64_t q : c.steps) EXPECT_TRUE(seqs.count(q)) << c.kind << " step " << q;
  }
  // The engine logged its healthy preemptions as vLLM v0 does.
  std::ifstream log(s.dir + "/logs/stdout.log");
  std::stringstream text;
  text << log.rdbuf();
  EXPECT_NE(text.str().find("is preempted by PreemptionMode.RECOMPUTE"), std::string::npos);
}

TEST(Confounders, LongPromptAndGcPauseStepsAreLongerThanTheirKindsMedian) {
  Sim s;
  RunSim(ConfounderRun(), &s, /*reconstruct=*/false);
  std::map<uint64_t, const StepTruth*> by_seq;
  std::map<std::string, std::vector<double>> by_kind;
  for (const StepTruth& st : s.truth.steps) {
    by_seq[st.seq] = &st;
    by_kind[st.kind].push_back(StepMs(st));
  }
  std::map<std::string, double> median;
  for (auto& [kind, v] : by_kind) {
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
    median[kind] = v[v.size() / 2];
  }
  int checked = 0;
  for (const auto& c : s.truth.confounders) {
    if (c.kind != "long_prompt" && c.kind != "gc_pause") continue;
    ASSERT_FALSE(c.steps.empty());
    const StepTruth* st = by_seq.at(c.steps.front());
    EXPECT_GT(StepMs(*st), (c.kind == "gc_pause" ? 1.3 : 1.5) * median[st->kind])
        << c.kind << " " << c.detail << " in step " << st->seq << " (" << st->kind << ")";
    ++checked;
  }
  EXPECT_GE(checked, 5);
  // A run without confounders lists none and writes no "confounders" field.
  SimConfig off = ConfounderRun();
  off.confounders = false;
  off.requests = 40;
  Sim plain;
  RunSim(off, &plain, /*reconstruct=*/false);
  EXPECT_TRUE(plain.truth.confounders.empty());
  std::ifstream in(plain.dir + "/" + kGroundTruthFile);
  std::stringstream json;
  json << in.rdbuf();
  EXPECT_EQ(json.str().find("\"confounders\""), std::string::npos);
}

TEST(Preset, SubtleMagnitudesForAShareOfSlowdowns) {
  int multiplicative = 0, subtle = 0;
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    for (const SimConfig& c : PaperPreset(seed)) {
      EXPECT_TRUE(c.confounders);
      for (const FaultSpec& f : c.faults) {
        const bool mult =
            f.mechanism == Mechanism::kKernelThrottle ||
            f.mechanism == Mechanism::kKernelSlowOneGpu || f.mechanism == Mechanism::kGpuThrottle ||
            f.mechanism == Mechanism::kLaunchLatency || f.mechanism == Mechanism::kSlowLink ||
            f.mechanism == Mechanism::kNcclFallback;
        if (!mult) {
          EXPECT_EQ(f.magnitude, 0.0) << Info(f.mechanism).name;  // the default
          continue;
        }
        ++multiplicative;
        if (f.magnitude > 0) {
          ++subtle;
          EXPECT_GE(f.magnitude, 1.2);
          EXPECT_LE(f.magnitude, 1.5);
        }
      }
    }
  }
  ASSERT_GT(multiplicative, 30);
  const double share = static_cast<double>(subtle) / multiplicative;
  EXPECT_NEAR(share, kSubtleShare, 0.12) << subtle << " of " << multiplicative;
}

TEST(Windows, UniformWindowsAreIndependentOfArrivals) {
  // A fault anchored to the first request (as --random-faults anchors them): anchored, its
  // window opens at that arrival in every seed; uniform, anywhere in the arrival period.
  auto onset = [](uint64_t seed, bool uniform) {
    SimConfig c = Small("vllm-v1-online", seed);
    c.nodes = c.gpus_per_node = c.tp = c.pp = 1;
    c.requests = 30;
    c.layers = 2;
    c.uniform_fault_windows = uniform;
    FaultSpec f;
    f.mechanism = Mechanism::kKernelThrottle;
    f.target = "gemm";
    f.magnitude = 3;
    f.onset_request = 0;
    f.span_requests = 3;
    c.faults.push_back(f);
    Sim s;
    RunSim(c, &s, /*reconstruct=*/false);
    if (s.truth.steps.empty() || s.truth.faults.empty()) return -1.0;
    const int64_t lo = s.truth.steps.front().start_ns, hi = s.truth.steps.back().end_ns;
    return static_cast<double>(s.truth.faults[0].onset_ns - lo) / static_cast<double>(hi - lo);
  };
  std::vector<double> uniform;
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    const double anchored = onset(seed, false);
    EXPECT_GE(anchored, -0.01) << seed;
    EXPECT_LT(anchored, 0.02) << seed;  // at the first arrival
    uniform.push_back(onset(seed, true));
    EXPECT_GE(uniform.back(), -0.01) << seed;
    EXPECT_LE(uniform.back(), 1.0) << seed;
  }
  int early = 0, late = 0;
  for (double p : uniform) early += p < 0.5, late += p >= 0.5;
  EXPECT_GE(early, 1);
  EXPECT_GE(late, 1);
  EXPECT_GT(*std::max_element(uniform.begin(), uniform.end()) -
                *std::min_element(uniform.begin(), uniform.end()),
            0.3);
}

TEST(Windows, UniformPresetWindowsMoveOffTheirPlannedPlace) {
  SimConfig c;
  c.profile = c.setting = "vllm-v1-online";
  c.seed = 4;
  c.nodes = c.gpus_per_node = c.tp = c.pp = 1;
  c.requests = 40;
  c.layers = 2;
  c.output_median = 8;
  c.plan_fault_windows = true;
  c.faulty_fraction = 0.4;
  for (Mechanism m : {Mechanism::kKernelThrottle, Mechanism::kOpReorder, Mechanism::kSyncStall}) {
    FaultSpec f;
    f.mechanism = m;
    if (m == Mechanism::kKernelThrottle) f.target = "gemm", f.magnitude = 3;
    c.faults.push_back(f);
  }
  auto windows = [](const SimConfig& config) {
    const std::string dir = TempDir("uniform-preset");
    auto r = Simulate(config, dir);
    EXPECT_TRUE(r.ok()) << r.status().message();
    auto truth = ReadGroundTruth(dir + "/" + kGroundTruthFile);
    std::vector<std::pair<int64_t, int64_t>> out;
    if (truth.ok())
      for (const FaultRecord& f : truth->faults) out.emplace_back(f.onset_ns, f.duration_ns);
    return out;
  };
  const auto planned = windows(c);
  c.uniform_fault_windows = true;
  const auto moved = windows(c);
  ASSERT_EQ(planned.size(), 3u);
  ASSERT_EQ(moved.size(), 3u);
  int differ = 0;
  for (size_t i = 0; i < 3; ++i) differ += planned[i].first != moved[i].first;
  EXPECT_GE(differ, 2);
  // Anchored windows follow the run in order; the first uniform one is not the first
  // planned one.
  EXPECT_LT(planned[0].first, planned[1].first);
  EXPECT_LT(planned[1].first, planned[2].first);
}

}  // namespace
}  // namespace teller::sim
