// Tests of `teller inject` (src/sim/inject.cc) and the trace exporter it writes with
// (src/format/trace_export.cc): hand-built traces for the exact timing rules, real Kineto
// traces (TELLER_REAL_DATA_DIR; skipped when absent) and a `teller run` of teller-demo
// for the round trip.
#include "teller/inject/inject.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "real_data.h"
#include "teller/format/ground_truth.h"
#include "teller/format/trace_export.h"
#include "teller/ingest/ingest.h"
#include "teller/inject/inject.h"
#include "teller/reconstruct/op_class.h"

namespace teller::inject {
namespace {

using format::FaultRecord;
using format::ReadGroundTruth;
using format::RequestTruth;
using format::StepTruth;

using format::GroundTruth;
using format::NodeLocator;
using reconstruct::ClassifyKernelName;
using reconstruct::OpClass;
using reconstruct::OpClassName;
using reconstruct::OpClassPattern;

constexpr int64_t kUs = 1000;
constexpr int64_t kT0 = 1'700'000'000'000'000'000;  // a plausible UTC time

std::string RealData(const std::string& rel) { return real_data::Path(rel); }
bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/teller-inject-test-XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() { std::system(("rm -rf '" + path_ + "'").c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Builds small traces event by event.
class Builder {
 public:
  explicit Builder(Trace& t) : t_(t) {}
  uint32_t Process(const std::string& host, int64_t pid, int rank) {
    const uint32_t p = t_.ProcessIndex(host, pid);
    t_.processes[p].rank = rank;
    t_.processes[p].label = t_.strings.Intern("python serve.py");
    return p;
  }
  size_t Range(uint32_t p, uint32_t tid, const std::string& name, int64_t s, int64_t e) {
    return Add(EventType::kRange, p, tid, name, s, e, 0, "cpu_op");
  }
  size_t Call(uint32_t p, uint32_t tid, const std::string& name, int64_t s, int64_t e,
              uint64_t corr) {
    return Add(EventType::kRuntime, p, tid, name, s, e, corr, "cuda_runtime");
  }
  size_t Kernel(uint32_t p, uint32_t stream, const std::string& name, int64_t s, int64_t e,
                uint64_t corr) {
    const size_t i = Add(EventType::kKernel, p, stream, name, s, e, corr, "kernel");
    t_.events.stream[i] = stream;
    t_.events.device[i] = 0;
    return i;
  }
  size_t Add(EventType type, uint32_t p, uint32_t tid, const std::string& name, int64_t s,
             int64_t e, uint64_t corr, const char* cat) {
    EventRow r;
    r.type = type;
    r.name = t_.strings.Intern(name);
    r.category = t_.strings.Intern(cat);
    r.process = p;
    r.thread = tid;
    r.start_ns = kT0 + s;
    r.end_ns = kT0 + e;
    r.correlation = corr;
    return t_.events.Append(r);
  }
  void Log(int64_t ts, LogLevel level, uint32_t process, const std::string& msg,
           const std::string& rid = "") {
    LogTable& l = t_.logs;
    l.ts_ns.push_back(ts == LogTable::kNoTime ? ts : kT0 + ts);
    l.request.push_back(rid.empty() ? 0 : t_.strings.Intern(rid));
    l.level.push_back(level);
    l.process.push_back(process);
    l.file.push_back(t_.strings.Intern("serve.log"));
    l.line.push_back(static_cast<uint32_t>(l.ts_ns.size()));
    l.message.push_back(t_.strings.Intern(msg));
  }

 private:
  Trace& t_;
};

// One process: a step range holding 6 launches (5 us each, 10 us apart) of alternating
// gemm/norm kernels that run back to back on stream 7 (each queued: the GPU is behind),
// then a stream synchronization that waits for the last kernel, then a range after it.
struct Simple {
  Trace trace;
  std::vector<size_t> launches, kernels;
  size_t step = 0, sync = 0, after = 0, before = 0;
  Simple() {
    Builder b(trace);
    const uint32_t p = b.Process("node-0", 100, 0);
    before = b.Range(p, 1, "aten::empty", 0, 5 * kUs);
    step = b.Range(p, 1, "teller.step kind=decode seq=4 reqs=cmpl-a,cmpl-b", 10 * kUs, 400 * kUs);
    int64_t gpu = 20 * kUs;
    for (int k = 0; k < 6; ++k) {
      const int64_t s = 12 * kUs + k * 10 * kUs;
      launches.push_back(b.Call(p, 1, "cudaLaunchKernel", s, s + 5 * kUs, 100 + k));
      const int64_t d = (k % 2 == 0 ? 40 : 10) * kUs;
      kernels.push_back(b.Kernel(p, 7,
                                 k % 2 == 0 ? "ampere_bf16_s16816gemm_tn" : "vllm::rms_norm_kernel",
                                 gpu, gpu + d, 100 + k));
      gpu += d + 1 * kUs;  // 1 us between queued kernels
    }
    // The sync starts at 80 us and returns 2 us after the last kernel ends.
    sync = b.Call(p, 1, "cudaStreamSynchronize", 80 * kUs, gpu - 1 * kUs + 2 * kUs, 200);
    after = b.Range(p, 1, "aten::add", gpu + 5 * kUs, gpu + 15 * kUs);
  }
};

int64_t Dur(const Trace& t, size_t i) { return t.events.end_ns[i] - t.events.start_ns[i]; }

TEST(InjectTest, KernelThrottleSlowsOnlyTheTargetedFamily) {
  Simple s;
  std::vector<int64_t> before;
  for (size_t k : s.kernels) before.push_back(Dur(s.trace, k));
  InjectOptions o;
  o.mechanism = "kernel_throttle";
  o.target = "gemm";
  o.magnitude = 2.0;
  auto r = InjectFault(s.trace, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  for (size_t k = 0; k < s.kernels.size(); ++k) {
    const bool gemm = k % 2 == 0;
    EXPECT_EQ(Dur(s.trace, s.kernels[k]), gemm ? 2 * before[k] : before[k]) << "kernel " << k;
  }
  EXPECT_EQ(r->effect.modified, 3u);
  EXPECT_NEAR(static_cast<double>(r->effect.median_after_ns) / r->effect.median_before_ns, 2.0,
              1e-9);
}

TEST(InjectTest, DelayPropagatesAlongStreamSyncAndRanges) {
  Simple s;
  Trace& t = s.trace;
  const std::vector<int64_t> start0(t.events.start_ns), end0(t.events.end_ns);
  InjectOptions o;
  o.mechanism = "kernel_throttle";
  o.target = "gemm";
  o.magnitude = 2.0;
  ASSERT_TRUE(InjectFault(t, o).ok());
  // Kernel k starts later by the extra time of the gemm kernels before it (all queued).
  int64_t extra = 0;
  for (size_t k = 0; k < s.kernels.size(); ++k) {
    const size_t e = s.kernels[k];
    EXPECT_EQ(t.events.start_ns[e] - start0[e], extra) << "kernel " << k;
    if (k % 2 == 0) extra += end0[e] - start0[e];
  }
  EXPECT_EQ(extra, 120 * kUs);
  // The sync returns its 2 us after the last kernel's new end; what follows on the thread
  // and the enclosing step end move by the same amount; earlier host work does not move.
  EXPECT_EQ(t.events.end_ns[s.sync] - end0[s.sync], extra);
  EXPECT_EQ(t.events.start_ns[s.sync], start0[s.sync]);
  EXPECT_EQ(t.events.start_ns[s.after] - start0[s.after], extra);
  EXPECT_EQ(t.events.end_ns[s.step] - end0[s.step], extra);  // the thread is later from the sync on
  for (size_t l : s.launches) EXPECT_EQ(t.events.start_ns[l], start0[l]);
  EXPECT_EQ(t.events.start_ns[s.before], start0[s.before]);
}

TEST(InjectTest, EnclosingRangeEndsLaterWhenItsSyncDoes) {
  Trace t;
  Builder b(t);
  const uint32_t p = b.Process("h", 1, 0);
  const size_t step = b.Range(p, 1, "ProfilerStep#3", 0, 100 * kUs);
  b.Call(p, 1, "cudaLaunchKernel", 1 * kUs, 5 * kUs, 1);
  const size_t k = b.Kernel(p, 7, "sm90_xmma_gemm_bf16", 10 * kUs, 60 * kUs, 1);
  const size_t sync = b.Call(p, 1, "cudaDeviceSynchronize", 6 * kUs, 61 * kUs, 2);
  const int64_t step_end0 = t.events.end_ns[step];
  InjectOptions o;
  o.mechanism = "kernel_throttle";
  o.magnitude = 3.0;  // default target: the gemm class
  auto r = InjectFault(t, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(Dur(t, k), 150 * kUs);
  EXPECT_EQ(t.events.end_ns[sync], kT0 + 161 * kUs);
  EXPECT_EQ(t.events.end_ns[step], step_end0 + 100 * kUs);
  ASSERT_EQ(r->truth.steps.size(), 1u);
  EXPECT_EQ(r->truth.steps[0].fault, 0);
  EXPECT_TRUE(r->truth.steps[0].vertical.is_anomaly);
  EXPECT_FALSE(r->truth.steps[0].horizontal.is_anomaly);  // every rank alike: nobody waits
  EXPECT_NE(r->truth.steps[0].explanation.find("3.0x slower (150 us vs 50 us"), std::string::npos)
      << r->truth.steps[0].explanation;
}

TEST(InjectTest, IdleGapAbsorbsASmallDelay) {
  Trace t;
  Builder b(t);
  const uint32_t p = b.Process("h", 1, 0);
  b.Call(p, 1, "cudaLaunchKernel", 0, 5 * kUs, 1);
  const size_t k1 = b.Kernel(p, 7, "gemm_a", 10 * kUs, 30 * kUs, 1);
  // Launched late: the GPU sat idle for 100 us before it.
  b.Call(p, 1, "cudaLaunchKernel", 120 * kUs, 125 * kUs, 2);
  const size_t k2 = b.Kernel(p, 7, "norm_b", 130 * kUs, 135 * kUs, 2);
  InjectOptions o;
  o.mechanism = "kernel_throttle";
  o.target = "gemm_a";
  o.magnitude = 2.0;
  ASSERT_TRUE(InjectFault(t, o).ok());
  EXPECT_EQ(Dur(t, k1), 40 * kUs);
  EXPECT_EQ(t.events.start_ns[k2], kT0 + 130 * kUs);  // 20 us of delay < 95 us of idle
}

TEST(InjectTest, LaunchLatencyDelaysLaterLaunchesAndTheirKernels) {
  Trace t;
  Builder b(t);
  const uint32_t p = b.Process("h", 1, 0);
  std::vector<size_t> calls, kernels;
  for (int k = 0; k < 3; ++k) {
    // Kernels start 8 us after their launch: the GPU waits for the host.
    calls.push_back(b.Call(p, 1, "cudaLaunchKernel", k * 20 * kUs, k * 20 * kUs + 5 * kUs, 10 + k));
    kernels.push_back(b.Kernel(p, 7, "k", k * 20 * kUs + 8 * kUs, k * 20 * kUs + 12 * kUs, 10 + k));
  }
  InjectOptions o;
  o.mechanism = "launch_latency";
  o.magnitude = 3.0;
  ASSERT_TRUE(InjectFault(t, o).ok());
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(Dur(t, calls[k]), 15 * kUs);
    EXPECT_EQ(t.events.start_ns[calls[k]], kT0 + k * 30 * kUs) << k;  // 10 us later per call
    EXPECT_EQ(t.events.start_ns[kernels[k]], kT0 + k * 30 * kUs + 8 * kUs) << k;
  }
}

TEST(InjectTest, SyncStallBlocksMilliseconds) {
  Simple s;
  const int64_t d0 = Dur(s.trace, s.sync);
  const int64_t after0 = s.trace.events.start_ns[s.after];
  InjectOptions o;
  o.mechanism = "sync_stall";
  o.magnitude = 4.0;
  auto r = InjectFault(s.trace, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->effect.modified, 1u);
  EXPECT_EQ(Dur(s.trace, s.sync), d0 + 3'600'000);  // 4 x 0.9 ms, the simulator's scale
  EXPECT_EQ(s.trace.events.start_ns[s.after], after0 + 3'600'000);
}

TEST(InjectTest, AllocatorStallAddsOneMissPerStep) {
  Simple s;
  const size_t n0 = s.trace.events.size();
  const int64_t after0 = s.trace.events.start_ns[s.after];
  InjectOptions o;
  o.mechanism = "allocator_stall";
  o.magnitude = 2.0;  // x 180 us per miss
  auto r = InjectFault(s.trace, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(s.trace.events.size(), n0 + 1);
  const size_t m = n0;
  EXPECT_EQ(s.trace.strings.Get(s.trace.events.name[m]), "cudaMalloc");
  EXPECT_EQ(Dur(s.trace, m), 360'000);
  // The miss sits at the start of the step's first operator range: the range ends later.
  EXPECT_EQ(s.trace.events.start_ns[m], after0 + 1);
  EXPECT_EQ(s.trace.events.start_ns[s.after], after0);
  EXPECT_EQ(Dur(s.trace, s.after), 10 * kUs + 360'000);
  ASSERT_EQ(r->truth.steps.size(), 1u);
  const StepTruth& st = r->truth.steps[0];
  EXPECT_EQ(st.seq, 4u);
  EXPECT_FALSE(st.horizontal.is_anomaly);  // one process: no collective waited
  // The evidence: the cudaMalloc call and the operator range it sits in.
  ASSERT_EQ(st.vertical.nodes.size(), 2u);
  EXPECT_EQ(st.vertical.nodes[0].kind, NodeLocator::Kind::kRange);
  EXPECT_EQ(st.vertical.nodes[0].name, "aten::add");
  EXPECT_EQ(ResolveLocator(s.trace, st.vertical.nodes[0]), static_cast<int64_t>(s.after));
  EXPECT_EQ(st.vertical.nodes[1].kind, NodeLocator::Kind::kCall);
  EXPECT_EQ(ResolveLocator(s.trace, st.vertical.nodes[1]), static_cast<int64_t>(m));
  // Roles: the added miss is what the fault did (root); the range only grew by it.
  EXPECT_EQ(st.vertical.nodes[0].role, NodeLocator::Role::kImpact);
  EXPECT_EQ(st.vertical.nodes[1].role, NodeLocator::Role::kRoot);
}

// Two ranks on one host, one all-reduce each; they end together.
struct TwoRanks {
  Trace trace;
  size_t ar0 = 0, ar1 = 0, next1 = 0;
  TwoRanks() {
    Builder b(trace);
    const uint32_t p0 = b.Process("node-0", 10, 0), p1 = b.Process("node-0", 11, 1);
    for (const uint32_t p : {p0, p1}) b.Range(p, 1, "ProfilerStep#7", 0, 500 * kUs);
    b.Call(p0, 1, "cudaLaunchKernel", 5 * kUs, 8 * kUs, 1);
    ar0 = b.Kernel(p0, 9, "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", 20 * kUs, 100 * kUs, 1);
    b.Call(p1, 1, "cudaLaunchKernel", 60 * kUs, 65 * kUs, 1);
    ar1 = b.Kernel(p1, 9, "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", 70 * kUs, 101 * kUs, 1);
    b.Call(p1, 1, "cudaLaunchKernel", 66 * kUs, 68 * kUs, 2);
    next1 = b.Kernel(p1, 9, "gemm_after", 102 * kUs, 120 * kUs, 2);
  }
};

TEST(InjectTest, StragglerDelaysTheCollectiveOnEveryRank) {
  TwoRanks t;
  InjectOptions o;
  o.mechanism = "straggler_rank";
  o.rank = 1;
  o.magnitude = 2.0;  // late by 2 x 55 us
  auto r = InjectFault(t.trace, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const EventTable& ev = t.trace.events;
  EXPECT_EQ(ev.start_ns[t.ar1], kT0 + 70 * kUs + 110 * kUs);
  EXPECT_EQ(ev.end_ns[t.ar1], kT0 + 101 * kUs + 110 * kUs);
  EXPECT_EQ(ev.end_ns[t.ar0], kT0 + 100 * kUs + 110 * kUs);  // rank 0 waits inside
  EXPECT_EQ(ev.start_ns[t.ar0], kT0 + 20 * kUs);
  EXPECT_EQ(ev.start_ns[t.next1], kT0 + 102 * kUs + 110 * kUs);
  ASSERT_EQ(r->truth.steps.size(), 1u);
  const StepTruth& st = r->truth.steps[0];
  ASSERT_EQ(st.vertical.nodes.size(), 1u);                         // rank 1's late collective
  EXPECT_EQ(st.vertical.nodes[0].role, NodeLocator::Role::kRoot);  // what was delayed
  EXPECT_TRUE(st.horizontal.is_anomaly);
  ASSERT_EQ(st.horizontal.nodes.size(), 2u);  // the collective on both ranks
  // Rank 1's (pid 11) was delayed: root; rank 0's (pid 10) only waited: impact.
  for (const NodeLocator& n : st.horizontal.nodes) {
    EXPECT_EQ(n.role, n.pid == 11 ? NodeLocator::Role::kRoot : NodeLocator::Role::kImpact) << n.pid;
  }
  EXPECT_EQ(r->effect.rank, 1);
  ASSERT_EQ(r->truth.faults.size(), 1u);
  EXPECT_EQ(r->truth.faults[0].ranks, std::vector<int>{1});  // the culprit, not its peer
}

TEST(InjectTest, KernelSlowOneGpuMakesThePeerWait) {
  TwoRanks t;
  Builder b(t.trace);
  // A gemm on rank 1 right before its all-reduce.
  b.Call(1, 1, "cudaLaunchKernel", 40 * kUs, 45 * kUs, 3);
  const size_t g = b.Kernel(1, 9, "sm90_xmma_gemm", 50 * kUs, 69 * kUs, 3);
  InjectOptions o;
  o.mechanism = "kernel_slow_one_gpu";
  o.target = "xmma";
  o.rank = 1;
  o.magnitude = 3.0;
  auto r = InjectFault(t.trace, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(Dur(t.trace, g), 57 * kUs);
  // Rank 1's all-reduce now starts 38 us later; rank 0 ends 38 us later too.
  EXPECT_EQ(t.trace.events.start_ns[t.ar1], kT0 + 108 * kUs);
  EXPECT_EQ(t.trace.events.end_ns[t.ar0], kT0 + 138 * kUs);
}

TEST(InjectTest, ClearErrors) {
  auto fail = [](const std::string& mechanism, const std::string& target, double magnitude = 0) {
    Simple s;
    InjectOptions o;
    o.mechanism = mechanism;
    o.target = target;
    o.magnitude = magnitude;
    auto r = InjectFault(s.trace, o);
    EXPECT_FALSE(r.ok()) << mechanism;
    return r.ok() ? std::string() : r.status().message();
  };
  std::string m = fail("no_such_fault", "");
  EXPECT_NE(m.find("unknown fault mechanism 'no_such_fault'"), std::string::npos) << m;
  EXPECT_NE(m.find("kernel_throttle"), std::string::npos) << m;
  EXPECT_NE(m.find("straggler_rank"), std::string::npos) << m;
  m = fail("kv_pressure", "");
  EXPECT_NE(m.find("cannot be injected"), std::string::npos) << m;
  m = fail("kernel_throttle", "gemm(");
  EXPECT_NE(m.find("bad --target regex 'gemm('"), std::string::npos) << m;
  m = fail("kernel_throttle", "flash_fwd");
  EXPECT_NE(m.find("no kernel in the window matches --target 'flash_fwd'"), std::string::npos) << m;
  EXPECT_NE(m.find("ampere_bf16_s16816gemm_tn"), std::string::npos) << m;  // what exists
  m = fail("kernel_throttle", "gemm", 0.5);
  EXPECT_NE(m.find("at least 1"), std::string::npos) << m;
  m = fail("straggler_rank", "");
  EXPECT_NE(m.find("several ranks"), std::string::npos) << m;
  m = fail("slow_link", "");
  EXPECT_NE(m.find("slow_link"), std::string::npos) << m;
  {
    Simple s;
    InjectOptions o;
    o.mechanism = "kernel_slow_one_gpu";
    o.rank = 5;
    auto r = InjectFault(s.trace, o);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("--rank 5"), std::string::npos) << r.status().message();
  }
  {
    Simple s;
    InjectOptions o;
    o.mechanism = "kernel_throttle";
    o.onset_ns = 10'000'000'000;
    auto r = InjectFault(s.trace, o);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("after the end of the trace"), std::string::npos);
  }
}

TEST(InjectTest, ParseDuration) {
  EXPECT_EQ(ParseDurationNs("1.5s").value(), 1'500'000'000);
  EXPECT_EQ(ParseDurationNs("200ms").value(), 200'000'000);
  EXPECT_EQ(ParseDurationNs("30us").value(), 30'000);
  EXPECT_EQ(ParseDurationNs("7ns").value(), 7);
  EXPECT_EQ(ParseDurationNs("2").value(), 2'000'000'000);
  EXPECT_EQ(ParseDurationNs("1m").value(), 60'000'000'000);
  EXPECT_FALSE(ParseDurationNs("fast").ok());
  EXPECT_FALSE(ParseDurationNs("3 parsecs").ok());
  EXPECT_FALSE(ParseDurationNs("-1s").ok());
}

// ------------------------------------------------------------------- export round trip

void ExpectRoundTrip(const Trace& t, const std::string& what) {
  TempDir dir;
  const std::string out = dir.path() + "/out";
  raw::ExportOptions eo;
  eo.command = {"test"};
  auto stats = raw::ExportTrace(t, out, eo);
  ASSERT_TRUE(stats.ok()) << what << ": " << stats.status().message();
  Trace back;
  ASSERT_TRUE(ingest::ImportPath(out, back).ok()) << what;
  std::string first;
  EXPECT_EQ(CountRoundTripDifferences(t, back, &first), 0u) << what << ": " << first;
  EXPECT_EQ(back.counters.Get("raw.unclean_end"), 0u);
  // The export's own end-of-file counters are known ones: an exported trace is not
  // reported as damaged (an unknown counter is a warning every report prints).
  EXPECT_EQ(back.counters.Get("raw.unknown_collector_counters"), 0u) << what;
}

TEST(ExportTest, RoundTripOfRealKinetoTraces) {
  const char* files[] = {
      "tracelens/b200__eager_trace.json.gz",
      "tracelens/inference__sglang_decode__sglang_Qwen3-8B_decode.json.gz",
      "tracelens/inference__vllm_decode_full__graph_execution.json.gz",
      "tracelens/h100__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
      "param_dlrm_8rank",
      "hta/critical_path__cuda_event_sync__event_sync_trace.json.gz",
  };
  for (const char* f : files) {
    TELLER_REQUIRE_REAL_DATA(f);
    const std::string path = RealData(f);
    Trace t;
    ASSERT_TRUE(ingest::ImportPath(path, t).ok()) << path;
    ASSERT_GT(t.events.size(), 0u);
    ExpectRoundTrip(t, f);
  }
}

TEST(ExportTest, RoundTripOfLogsAndProcesses) {
  Trace t;
  Builder b(t);
  const uint32_t p0 = b.Process("node-0", 4045, 0);
  const uint32_t p1 = b.Process("node-0", 4046, 1);
  t.processes[p1].world_size = 2;
  t.processes[p1].local_rank = 1;
  b.Range(p0, 1, "teller.step kind=prefill reqs=chatcmpl-5f3a9c2b7d1e4a60", 0, 50 * kUs);
  b.Kernel(p1, 3, "k", 10 * kUs, 20 * kUs, 9);
  b.Log(1 * kUs, LogLevel::kInfo, p0, "Received request chatcmpl-5f3a9c2b7d1e4a60: params: x",
        "chatcmpl-5f3a9c2b7d1e4a60");
  b.Log(2 * kUs, LogLevel::kWarning, p1, "[scheduler] odd line with (brackets)");
  b.Log(3 * kUs, LogLevel::kError, LogTable::kNoProcess,
        "CUDA error: an illegal memory access was encountered");
  b.Log(4 * kUs, LogLevel::kUnknown, p0, "plain text without a level");
  b.Log(5 * kUs, LogLevel::kDebug, p0, "");
  b.Log(6 * kUs, LogLevel::kInfo, p0, "Finished request chatcmpl-5f3a9c2b7d1e4a60.",
        "chatcmpl-5f3a9c2b7d1e4a60");
  b.Log(LogTable::kNoTime, LogLevel::kInfo, p1, "a line without a time");
  ExpectRoundTrip(t, "logs, >= 5 timed lines (capture format)");
  // Fewer than five timed lines next to an untimed one: the RFC3339 form.
  Trace u;
  Builder c(u);
  const uint32_t q = c.Process("h", 7, -1);
  c.Range(q, 1, "x", 0, 10);
  c.Log(1 * kUs, LogLevel::kInfo, q, "one");
  c.Log(LogTable::kNoTime, LogLevel::kWarning, q, "two");
  ExpectRoundTrip(u, "logs, RFC3339 form");
}

TEST(ExportTest, RefusesAnOutputThatHoldsATraceOrCannotBeWritten) {
  Simple s;
  TempDir dir;
  raw::ExportOptions eo;
  ASSERT_TRUE(raw::ExportTrace(s.trace, dir.path() + "/a", eo).ok());
  auto again = raw::ExportTrace(s.trace, dir.path() + "/a", eo);
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.status().message().find("already holds a trace"), std::string::npos)
      << again.status().message();
  std::ofstream(dir.path() + "/file") << "x";
  auto under_file = raw::ExportTrace(s.trace, dir.path() + "/file/out", eo);
  ASSERT_FALSE(under_file.ok());
  EXPECT_NE(under_file.status().message().find(dir.path() + "/file"), std::string::npos)
      << under_file.status().message();
  auto is_file = raw::ExportTrace(s.trace, dir.path() + "/file", eo);
  ASSERT_FALSE(is_file.ok());
  EXPECT_NE(is_file.status().message().find("not a directory"), std::string::npos);
}

// ------------------------------------------------------------------- real traces

TEST(InjectRealTest, KernelThrottleOnSglangDecode) {
  TELLER_REQUIRE_REAL_DATA("tracelens/inference__sglang_decode__sglang_Qwen3-8B_decode.json.gz");
  const std::string path =
      RealData("tracelens/inference__sglang_decode__sglang_Qwen3-8B_decode.json.gz");
  Trace original;
  ASSERT_TRUE(ingest::ImportPath(path, original).ok());
  TempDir dir;
  InjectOptions o;
  o.mechanism = "kernel_throttle";
  o.target = "^Cijk_";  // the hipBLASLt GEMMs
  o.magnitude = 2.0;
  raw::ExportOptions eo;
  auto run = InjectIntoTrace(path, dir.path() + "/out", o, eo);
  ASSERT_TRUE(run.ok()) << run.status().message();
  EXPECT_EQ(run->verify_mismatches, 0u);
  EXPECT_GT(run->locators, 0u);
  EXPECT_EQ(run->locators_unresolved, 0u);
  Trace out;
  ASSERT_TRUE(ingest::ImportPath(dir.path() + "/out", out).ok());
  // Same rows in the same order (one process): GEMMs take twice as long, nothing else
  // changes duration; work after the first GEMM moves later.
  ASSERT_EQ(out.events.size(), original.events.size());
  size_t gemms = 0, others = 0, moved = 0;
  for (size_t i = 0; i < out.events.size(); ++i) {
    if (original.events.type[i] != EventType::kKernel) continue;
    const std::string_view name = original.strings.Get(original.events.name[i]);
    const int64_t d0 = Dur(original, i), d1 = Dur(out, i);
    if (name.rfind("Cijk_", 0) == 0) {
      EXPECT_EQ(d1, 2 * d0) << name;
      ++gemms;
    } else {
      EXPECT_EQ(d1, d0) << name;
      ++others;
    }
    moved += out.events.start_ns[i] != original.events.start_ns[i];
  }
  EXPECT_EQ(gemms, 145u);  // the Cijk_ kernels of the file: tests/golden_scripts/kineto_golden.py
  EXPECT_GT(others, 400u);
  EXPECT_GT(moved, 500u);
  // The ground truth reads back and names the decode step.
  auto truth = ReadGroundTruth(dir.path() + "/out/ground_truth.json");
  ASSERT_TRUE(truth.ok()) << truth.status().message();
  ASSERT_EQ(truth->faults.size(), 1u);
  EXPECT_EQ(truth->faults[0].mechanism, "kernel_throttle");
  EXPECT_EQ(truth->faults[0].category, "cuda_kernel");
  EXPECT_TRUE(truth->faults[0].ranks.empty());  // every rank alike
  ASSERT_EQ(truth->steps.size(), 1u);
  EXPECT_EQ(truth->steps[0].kind, "decode");
  EXPECT_EQ(truth->steps[0].fault, 0);
  EXPECT_EQ(truth->steps[0].vertical.nodes.size(), 145u);
  EXPECT_NE(truth->steps[0].explanation.find("2.0x slower"), std::string::npos);
  for (const NodeLocator& n : truth->steps[0].vertical.nodes) {
    const int64_t e = ResolveLocator(out, n);
    ASSERT_GE(e, 0);
    EXPECT_EQ(out.strings.Get(out.events.name[e]).rfind("Cijk_", 0), 0u);
    // Every one is a kernel the injection slowed: a root (ground truth version 3).
    EXPECT_EQ(n.role, NodeLocator::Role::kRoot);
  }
}

// Rows of each process in table order, GPU annotations left out (the export does not
// carry them): the rows of an input and of its `teller inject` output pair up by position.
std::vector<std::vector<size_t>> RowsByProcess(const Trace& t) {
  std::vector<std::vector<size_t>> r(t.processes.size());
  for (size_t i = 0; i < t.events.size(); ++i) {
    if (t.events.type[i] != EventType::kGpuAnnotation) r[t.events.process[i]].push_back(i);
  }
  return r;
}

// What each mechanism does to the durations of the one-process b200 trace, checked row by
// row against the rules of docs/inject.md with the documented default magnitudes.
TEST(InjectRealTest, EveryMechanismOnTheB200Trace) {
  TELLER_REQUIRE_REAL_DATA("tracelens/b200__eager_trace.json.gz");
  const std::string path = RealData("tracelens/b200__eager_trace.json.gz");
  Trace original;
  ASSERT_TRUE(ingest::ImportPath(path, original).ok());
  ASSERT_EQ(original.processes.size(), 1u);
  const std::vector<size_t> rows0 = RowsByProcess(original)[0];
  const EventTable& e0 = original.events;
  int64_t first = INT64_MAX, last = INT64_MIN;
  for (size_t i = 0; i < e0.size(); ++i) {
    first = std::min(first, e0.start_ns[i]);
    last = std::max(last, e0.end_ns[i]);
  }
  std::set<uint64_t> kernel_correlations;
  std::map<uint64_t, int64_t> copy_end;  // correlation -> end of the GPU copy
  for (size_t i = 0; i < e0.size(); ++i) {
    if (e0.type[i] == EventType::kKernel) kernel_correlations.insert(e0.correlation[i]);
    if (e0.type[i] == EventType::kMemcpy) copy_end[e0.correlation[i]] = e0.end_ns[i];
  }
  const std::map<std::string, double> kDefaultMagnitude = {
      {"kernel_throttle", 2.5}, {"kernel_slow_one_gpu", 3}, {"gpu_throttle", 1.35},
      {"launch_latency", 6},    {"sync_stall", 4},          {"allocator_stall", 3}};
  // The default target of kernel_throttle and kernel_slow_one_gpu is the compute class
  // with the most GPU time (communication and unclassified kernels aside): the GEMMs here.
  std::map<OpClass, int64_t> class_ns;
  for (size_t i = 0; i < e0.size(); ++i) {
    if (e0.type[i] != EventType::kKernel) continue;
    const OpClass c = ClassifyKernelName(original.strings.Get(e0.name[i]));
    if (c != OpClass::kOther && c != OpClass::kAllReduce && c != OpClass::kAllGather) {
      class_ns[c] += e0.end_ns[i] - e0.start_ns[i];
    }
  }
  OpClass busiest = OpClass::kOther;
  for (const auto& [c, ns] : class_ns) {
    if (busiest == OpClass::kOther || ns > class_ns[busiest]) busiest = c;
  }
  ASSERT_EQ(OpClassName(busiest), "gemm");
  for (const auto& [m, magnitude] : kDefaultMagnitude) {
    SCOPED_TRACE(m);
    TempDir dir;
    InjectOptions o;
    o.mechanism = m;
    raw::ExportOptions eo;
    auto run = InjectIntoTrace(path, dir.path() + "/out", o, eo);
    ASSERT_TRUE(run.ok()) << m << ": " << run.status().message();
    const InjectEffect& effect = run->result.effect;
    EXPECT_DOUBLE_EQ(effect.magnitude, magnitude);
    EXPECT_TRUE(effect.converged);
    EXPECT_EQ(run->verify_mismatches, 0u);
    EXPECT_EQ(run->locators_unresolved, 0u);
    EXPECT_GT(run->locators, 0u);
    Trace out;
    ASSERT_TRUE(ingest::ImportPath(dir.path() + "/out", out).ok());
    const std::vector<size_t> rows1 = RowsByProcess(out)[0];
    ASSERT_EQ(rows1.size(), rows0.size() + effect.inserted);
    const EventTable& e1 = out.events;
    // The kernel factor mechanisms name the regex they applied in the ground truth,
    // "kernels ~ REGEX (class gemm, ...)": matched here with <regex>, independently.
    std::regex target;
    if (m == "kernel_throttle" || m == "kernel_slow_one_gpu") {
      const std::string prefix = "kernels ~ ", suffix = " (class gemm, the most GPU time)";
      ASSERT_EQ(effect.target.rfind(prefix, 0), 0u) << effect.target;
      const size_t end = effect.target.find(suffix);
      ASSERT_NE(end, std::string::npos) << effect.target;
      target = std::regex(effect.target.substr(prefix.size(), end - prefix.size()),
                          std::regex::extended | std::regex::icase);
    }
    // Every row against the documented rule of the mechanism; `changed` rows of the kind
    // the mechanism acts on must be the `modified` ones.
    size_t changed = 0;
    for (size_t k = 0; k < rows0.size(); ++k) {
      const size_t i = rows0[k], j = rows1[k];
      ASSERT_EQ(e0.type[i], e1.type[j]);
      const int64_t d0 = e0.end_ns[i] - e0.start_ns[i], d1 = e1.end_ns[j] - e1.start_ns[j];
      const std::string name(original.strings.Get(e0.name[i]));
      const bool kernel = e0.type[i] == EventType::kKernel;
      const bool call = IsHostCall(e0.type[i]);
      EXPECT_GE(d1, d0) << name;  // no mechanism makes anything faster
      if (m == "kernel_throttle" || m == "kernel_slow_one_gpu" || m == "gpu_throttle") {
        if (!kernel) continue;
        changed += d1 != d0;
        double f = 1.0;
        if (m == "gpu_throttle") {
          // Compute-bound x f, unknown x (1 + (f-1)/2), communication x 1, the rest
          // (memory-bound) x (1 + (f-1)/4); f ramps up over a quarter of the trace.
          const OpClass c = ClassifyKernelName(name);
          double share = 0.25;
          if (c == OpClass::kGemm || c == OpClass::kAttention || c == OpClass::kAttentionReduce)
            share = 1;
          if (c == OpClass::kOther) share = 0.5;
          if (c == OpClass::kAllReduce || c == OpClass::kAllGather) share = 0;
          const double ramp = static_cast<double>(last - first) / 4;
          f = 1 + (magnitude - 1) *
                      std::min(1.0, static_cast<double>(e0.start_ns[i] - first) / ramp) * share;
          if (f <= 1.0005) f = 1;  // too small a change to count as acted on
        } else if (std::regex_search(name, target)) {
          f = magnitude;
        }
        EXPECT_LE(std::llabs(d1 - std::llround(f * static_cast<double>(d0))), 1)
            << name << ": " << d0 << " ns -> " << d1 << " ns, expected x" << f;
      } else if (m == "launch_latency") {
        // Calls that launched a kernel (or are named *Launch*) last x 6.
        if (!call) continue;
        changed += d1 != d0;
        const bool launch = kernel_correlations.count(e0.correlation[i]) > 0 ||
                            name.find("Launch") != std::string::npos;
        EXPECT_EQ(d1, launch ? 6 * d0 : d0) << name;
      } else if (m == "sync_stall") {
        // The trace has no *Synchronize* call: its blocking copies (a copy call whose
        // transfer ended inside it) block 4 x 0.9 ms longer, and nothing else does.
        if (!call) continue;
        EXPECT_EQ(name.find("Synchronize"), std::string::npos) << name;
        const auto copy = copy_end.find(e0.correlation[i]);
        const bool blocking = name.find("Memcpy") != std::string::npos && copy != copy_end.end() &&
                              copy->second <= e0.end_ns[i];
        changed += blocking;
        if (blocking) {
          EXPECT_GE(d1 - d0, 3'600'000) << name;
        } else {
          EXPECT_LT(d1 - d0, 3'600'000) << name;
        }
      } else if (m == "allocator_stall") {
        // No allocator call in the trace: the misses are added ones.
        if (call) EXPECT_EQ(d1, d0) << name;
      }
    }
    if (m == "allocator_stall") {
      // One cudaMalloc of 3 x 180 us per step, after the input's rows.
      EXPECT_EQ(effect.inserted, run->result.truth.steps.size());
      changed = 0;
      for (size_t k = rows0.size(); k < rows1.size(); ++k) {
        const size_t j = rows1[k];
        EXPECT_EQ(out.strings.Get(e1.name[j]), "cudaMalloc");
        EXPECT_EQ(e1.end_ns[j] - e1.start_ns[j], 540'000);
        ++changed;
      }
    }
    EXPECT_EQ(changed, effect.modified);
    EXPECT_GT(changed, 0u);
  }
}

TEST(InjectRealTest, StragglerAcrossEightRanks) {
  TELLER_REQUIRE_REAL_DATA("param_dlrm_8rank");
  const std::string path = RealData("param_dlrm_8rank");
  Trace original;
  ASSERT_TRUE(ingest::ImportPath(path, original).ok());
  TempDir dir;
  InjectOptions o;
  o.mechanism = "straggler_rank";
  o.rank = 3;
  raw::ExportOptions eo;
  auto run = InjectIntoTrace(path, dir.path() + "/out", o, eo);
  ASSERT_TRUE(run.ok()) << run.status().message();
  EXPECT_EQ(run->verify_mismatches, 0u);
  EXPECT_EQ(run->locators_unresolved, 0u);
  EXPECT_EQ(run->result.effect.rank, 3);
  Trace out;
  ASSERT_TRUE(ingest::ImportPath(dir.path() + "/out", out).ok());
  ASSERT_EQ(out.processes.size(), original.processes.size());
  // Rows per process in table order: the export keeps that order.
  auto rows = [](const Trace& t) {
    std::vector<std::vector<size_t>> r(t.processes.size());
    for (size_t i = 0; i < t.events.size(); ++i) {
      if (t.events.type[i] != EventType::kGpuAnnotation) r[t.events.process[i]].push_back(i);
    }
    return r;
  };
  const auto ra = rows(original), rb = rows(out);
  // Some collective ended later on ranks other than 3 (they waited for it).
  size_t later_elsewhere = 0;
  for (size_t p = 0; p < ra.size(); ++p) {
    ASSERT_EQ(ra[p].size(), rb[p].size());
    if (original.processes[p].rank == 3) continue;
    for (size_t k = 0; k < ra[p].size(); ++k) {
      const size_t i = ra[p][k], j = rb[p][k];
      if (original.events.type[i] != EventType::kKernel) continue;
      if (original.strings.Get(original.events.name[i]).find("ccl") == std::string_view::npos)
        continue;
      later_elsewhere += out.events.end_ns[j] > original.events.end_ns[i];
    }
  }
  EXPECT_GT(later_elsewhere, 0u);
  auto truth = ReadGroundTruth(dir.path() + "/out/ground_truth.json");
  ASSERT_TRUE(truth.ok());
  EXPECT_EQ(truth->processes.size(), 8u);
  EXPECT_EQ(truth->faults[0].category, "communication");
  EXPECT_EQ(truth->faults[0].ranks, std::vector<int>{3});  // read back from the file
}

TEST(InjectRealTest, OutputChecksOfTheCommand) {
  TELLER_REQUIRE_REAL_DATA("tracelens/inference__vllm_decode_full__graph_execution.json.gz");
  const std::string path =
      RealData("tracelens/inference__vllm_decode_full__graph_execution.json.gz");
  TempDir dir;
  InjectOptions o;
  o.mechanism = "kernel_throttle";
  raw::ExportOptions eo;
  ASSERT_TRUE(InjectIntoTrace(path, dir.path() + "/out", o, eo).ok());
  auto again = InjectIntoTrace(path, dir.path() + "/out", o, eo);
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.status().message().find("already holds a trace"), std::string::npos);
  // Injecting into an injected trace is fine (a new output).
  auto twice = InjectIntoTrace(dir.path() + "/out", dir.path() + "/out2", o, eo);
  ASSERT_TRUE(twice.ok()) << twice.status().message();
  EXPECT_EQ(twice->verify_mismatches, 0u);
  auto missing = InjectIntoTrace(dir.path() + "/nope.json", dir.path() + "/out3", o, eo);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("nope.json"), std::string::npos);
}

// A `teller.step` NVTX range (recorded as a push/pop pair).
bool IsStep(const Trace& t, size_t i) {
  return (t.events.type[i] == EventType::kRange || t.events.type[i] == EventType::kPush) &&
         t.strings.Get(t.events.name[i]).rfind("teller.step ", 0) == 0;
}

// `teller run` of teller-demo (NVTX ranges and logs): the round trip and an injection.
// The only reason to skip is a build without the NVTX collector (no NVTX headers); where
// it is built, a run that records nothing is a broken collector and fails.
TEST(InjectRealTest, TellerRunOfTheDemo) {
#ifndef TELLER_HAVE_NVTX_COLLECTOR
  GTEST_SKIP() << "the NVTX collector (libteller_inject) and teller-demo are not built in this "
                  "configuration (they need the NVTX headers)";
#else
  const std::string bin = TELLER_BIN;
  const std::string demo = bin.substr(0, bin.find_last_of('/')) + "/teller-demo";
  ASSERT_TRUE(Exists(bin)) << bin;
  ASSERT_TRUE(Exists(demo)) << demo;
  TempDir dir;
  const std::string run = dir.path() + "/run";
  const std::string log = dir.path() + "/run.txt";
  const std::string cmd =
      "'" + bin + "' run --out '" + run + "' -- '" + demo + "' 4 >'" + log + "' 2>&1";
  const int run_rc = std::system(cmd.c_str());
  std::stringstream run_text;
  run_text << std::ifstream(log).rdbuf();
  ASSERT_EQ(run_rc, 0) << "teller run of teller-demo failed:\n" << run_text.str();
  ASSERT_TRUE(Exists(run + "/manifest.json")) << run_text.str();
  Trace t;
  const Status imported = ingest::ImportPath(run, t);
  ASSERT_TRUE(imported.ok()) << imported.message();
  ASSERT_GT(t.events.size(), 0u) << "the collector recorded no events:\n" << run_text.str();
  ASSERT_GT(t.logs.size(), 0u);
  // The demo (demo/serve_demo.cc) serves request i = 0..3 as cmpl-(1000+i) with
  // 8 + (i * 7) % 17 tokens, one per engine step: 8, 15, 22 and 12 steps name them.
  std::map<std::string, size_t> steps_of;
  for (size_t i = 0; i < t.events.size(); ++i) {
    const std::string_view name = t.strings.Get(t.events.name[i]);
    if (!IsStep(t, i)) continue;
    const size_t reqs = name.find("reqs=");
    ASSERT_NE(reqs, std::string_view::npos) << name;
    std::stringstream ids{std::string(name.substr(reqs + 5))};
    for (std::string id; std::getline(ids, id, ',');) ++steps_of[id];
  }
  const std::map<std::string, size_t> kDemoSteps = {
      {"cmpl-1000", 8}, {"cmpl-1001", 15}, {"cmpl-1002", 22}, {"cmpl-1003", 12}};
  EXPECT_EQ(steps_of, kDemoSteps);
  size_t steps = 0;
  for (size_t i = 0; i < t.events.size(); ++i) {
    steps += IsStep(t, i);
  }
  ExpectRoundTrip(t, "teller run of teller-demo");
  InjectOptions o;
  o.mechanism = "allocator_stall";
  raw::ExportOptions eo;
  auto inj = InjectIntoTrace(run, dir.path() + "/inj", o, eo);
  ASSERT_TRUE(inj.ok()) << inj.status().message();
  EXPECT_EQ(inj->verify_mismatches, 0u);
  EXPECT_EQ(inj->locators_unresolved, 0u);
  // The demo makes no CUDA calls: one cudaMalloc miss is added per step, each blocking
  // 3 (the default magnitude) x 180 us (docs/inject.md), and every request is faulty
  // in each of its steps.
  EXPECT_EQ(inj->result.effect.inserted, steps);
  Trace injected;
  ASSERT_TRUE(ingest::ImportPath(dir.path() + "/inj", injected).ok());
  size_t misses = 0;
  for (size_t i = 0; i < injected.events.size(); ++i) {
    if (injected.strings.Get(injected.events.name[i]) != "cudaMalloc") continue;
    ++misses;
    EXPECT_EQ(injected.events.end_ns[i] - injected.events.start_ns[i], 540'000);
  }
  EXPECT_EQ(misses, steps);
  ASSERT_EQ(inj->result.truth.requests.size(), kDemoSteps.size());
  for (const RequestTruth& r : inj->result.truth.requests) {
    EXPECT_TRUE(r.is_fault) << r.id;
    EXPECT_EQ(r.fault_type, "memory_resource") << r.id;
    ASSERT_TRUE(kDemoSteps.count(r.id)) << r.id;
    EXPECT_EQ(r.steps.size(), kDemoSteps.at(r.id)) << r.id;
  }
  // The command line itself.
  const std::string out = dir.path() + "/cli";
  const std::string line = "'" + bin + "' inject '" + run + "' --fault sync_stall --out '" + out +
                           "' >'" + dir.path() + "/cli.txt' 2>&1";
  const int rc = std::system(line.c_str());
  std::ifstream in(dir.path() + "/cli.txt");
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(rc, 0) << text.str();  // the demo has no synchronizations
  EXPECT_NE(text.str().find("no synchronization"), std::string::npos) << text.str();
#endif
}

}  // namespace
}  // namespace teller::inject
