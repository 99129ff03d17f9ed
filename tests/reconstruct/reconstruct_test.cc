// Algorithm 1 on small synthetic traces whose answer is known by construction.
#include "teller/reconstruct/reconstruct.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "teller/reconstruct/step_ranges.h"
#include "tests/trace_builder.h"

namespace teller::reconstruct {
namespace {

using testing::TraceBuilder;

// Index of the node of the first event with this name.
int32_t NodeOf(const Trace& t, const Reconstruction& r, std::string_view name) {
  for (uint32_t n = 0; n < r.nodes.size(); ++n) {
    if (t.strings.Get(t.events.name[r.nodes.event[n]]) == name) return static_cast<int32_t>(n);
  }
  return -1;
}

std::string NameOf(const Trace& t, const Reconstruction& r, int32_t node) {
  return node < 0 ? "<root>" : std::string(t.strings.Get(t.events.name[r.nodes.event[node]]));
}

TEST(ReconstructTest, PushPopNestingHostCallsAndKernels) {
  TraceBuilder b;
  b.Add(EventType::kPush, "teller.step kind=decode n=2 reqs=cmpl-1,cmpl-2", 100);
  b.Add(EventType::kPush, "model.layers.0", 110);
  b.Add(EventType::kPush, "aten::mm", 120);
  b.Add(EventType::kRuntime, "cudaLaunchKernel", 121, 125, /*correlation=*/7);
  b.Add(EventType::kPop, "", 130);
  b.Add(EventType::kPush, "vllm::all_reduce", 131);
  b.Add(EventType::kRuntime, "cudaGraphLaunch", 132, 140, 8);
  b.Add(EventType::kPop, "", 141);
  b.Add(EventType::kPop, "", 150);
  b.Add(EventType::kPop, "", 200);
  // GPU side (another "thread": the stream), out of order on purpose.
  b.Add(EventType::kKernel, "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", 160, 170, 8, 7);
  b.Add(EventType::kKernel, "ampere_bf16_s16816gemm", 126, 135, 7, 7);
  b.Add(EventType::kKernel, "rms_norm_kernel", 150, 152, 8, 7);
  b.Add(EventType::kKernel, "orphan_kernel_from_before", 10, 20, 3, 7);
  Reconstruction r = Reconstruct(b.trace());
  const Trace& t = b.trace();

  EXPECT_EQ(r.stats.ranges, 4u);
  EXPECT_EQ(r.stats.unmatched_push, 0u);
  EXPECT_EQ(r.stats.unmatched_pop, 0u);
  EXPECT_EQ(NameOf(t, r, r.nodes.parent[NodeOf(t, r, "aten::mm")]), "model.layers.0");
  EXPECT_EQ(NameOf(t, r, r.nodes.parent[NodeOf(t, r, "cudaLaunchKernel")]), "aten::mm");
  EXPECT_EQ(NameOf(t, r, r.nodes.parent[NodeOf(t, r, "ampere_bf16_s16816gemm")]),
            "cudaLaunchKernel");
  EXPECT_EQ(NameOf(t, r, r.nodes.parent[NodeOf(t, r, "rms_norm_kernel")]), "cudaGraphLaunch");
  EXPECT_EQ(r.nodes.parent[NodeOf(t, r, "orphan_kernel_from_before")], -1);
  EXPECT_EQ(r.nodes.end_ns[NodeOf(t, r, "model.layers.0")], 150);
  EXPECT_EQ(r.nodes.depth[NodeOf(t, r, "ampere_bf16_s16816gemm")], 4);

  EXPECT_EQ(r.stats.kernels, 4u);
  EXPECT_EQ(r.stats.kernels_linked, 3u);
  EXPECT_EQ(r.stats.kernels_orphan, 1u);
  EXPECT_EQ(r.stats.graph_launches, 1u) << "one call owning two kernels";
  EXPECT_EQ(r.stats.comm_kernels, 1u);
  EXPECT_EQ(r.stats.host_calls, 2u);
  EXPECT_EQ(r.nodes.layer[NodeOf(t, r, "vllm::all_reduce")], Layer::kComm);
  EXPECT_EQ(r.nodes.layer[NodeOf(t, r, "aten::mm")], Layer::kFrontend);

  ASSERT_EQ(r.steps.size(), 1u);
  EXPECT_EQ(t.strings.Get(r.steps[0].kind), "decode");
  ASSERT_EQ(r.steps[0].requests.size(), 2u);
  EXPECT_EQ(t.strings.Get(r.steps[0].requests[1]), "cmpl-2");
  EXPECT_EQ(r.request_steps.size(), 2u);
  const HorizontalView view = r.CommAcrossRanks(0);
  ASSERT_EQ(view.comm.size(), 1u);
  EXPECT_EQ(view.comm[0].size(), 2u) << "the collective op and its kernel";
  EXPECT_TRUE(view.collectives.empty()) << "one rank: no collective pairs it with another";
}

// Two ranks of one host, each with a step that launches two all-reduces and a GEMM; the
// all-reduces end together on both ranks (their starts differ), so the k-th all-reduce of
// one rank is one collective with the k-th of the other.
void AddTwoRankSteps(TraceBuilder& b, std::string_view comm_kernel) {
  Trace& t = b.trace();
  const uint32_t second = t.ProcessIndex("node-1", 101);
  for (uint32_t p : {0u, second}) {
    const int64_t late = p == 0 ? 0 : 30'000;  // rank 1 enters each collective later
    b.Add(EventType::kPush, "teller.step seq=1 kind=decode n=1 reqs=r1", 0, -1, 0, 1, p);
    for (int k = 0; k < 2; ++k) {
      const int64_t at = 100'000 + k * 400'000;
      const uint64_t corr = 10 + static_cast<uint64_t>(k);
      b.Add(EventType::kRuntime, "cudaLaunchKernel", at + late, at + late + 5'000, corr, 1, p);
      b.Add(EventType::kKernel, comm_kernel, at + late + 10'000, at + 200'000 + k * 1'000, corr, 1,
            p);
    }
    b.Add(EventType::kRuntime, "cudaLaunchKernel", 950'000, 955'000, 20, 1, p);
    b.Add(EventType::kKernel, "sm90_xmma_gemm_bf16bf16", 960'000, 990'000, 20, 1, p);
    b.Add(EventType::kPop, "", 1'000'000, -1, 0, 1, p);
  }
}

// The nodes of the kernels with this name, by process and start.
std::vector<uint32_t> KernelNodes(const Trace& t, const Reconstruction& r, std::string_view name) {
  std::vector<uint32_t> out;
  for (uint32_t n = 0; n < r.nodes.size(); ++n) {
    if (t.events.type[r.nodes.event[n]] == EventType::kKernel && NameOf(t, r, n) == name)
      out.push_back(n);
  }
  std::sort(out.begin(), out.end(), [&](uint32_t a, uint32_t b) {
    if (r.nodes.process[a] != r.nodes.process[b]) return r.nodes.process[a] < r.nodes.process[b];
    return r.nodes.start_ns[a] < r.nodes.start_ns[b];
  });
  return out;
}

TEST(CollectivesTest, ReconstructionKeepsTheCollectiveGroups) {
  const std::string ar = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL";
  TraceBuilder b;
  AddTwoRankSteps(b, ar);
  const Trace& t = b.trace();
  const Reconstruction r = Reconstruct(b.trace());
  const std::vector<uint32_t> k = KernelNodes(t, r, ar);  // rank 0: k[0], k[1]; rank 1: k[2], k[3]
  ASSERT_EQ(k.size(), 4u);
  ASSERT_EQ(r.collectives.groups.size(), 2u);
  EXPECT_EQ(r.CollectiveOf(k[0]), (std::vector<uint32_t>{k[0], k[2]}));
  EXPECT_EQ(r.CollectiveOf(k[3]), (std::vector<uint32_t>{k[1], k[3]}));
  EXPECT_EQ(r.collectives.cluster_of, (std::vector<int32_t>{0, 0}));
  const std::vector<uint32_t> gemm = KernelNodes(t, r, "sm90_xmma_gemm_bf16bf16");
  ASSERT_EQ(gemm.size(), 2u);
  EXPECT_TRUE(r.CollectiveOf(gemm[0]).empty());
  EXPECT_TRUE(r.CollectiveOf(NodeOf(t, r, "cudaLaunchKernel")).empty());

  // The horizontal view: both ranks' steps, their all-reduce kernels, and the two
  // collectives that pair them, in the order rank 0 issued them.
  const HorizontalView view = r.CommAcrossRanks(0);
  ASSERT_EQ(view.comm.size(), 2u);
  EXPECT_EQ(view.comm[0], (std::vector<uint32_t>{k[0], k[1]}));
  EXPECT_EQ(view.comm[1], (std::vector<uint32_t>{k[2], k[3]}));
  ASSERT_EQ(view.collectives.size(), 2u);
  EXPECT_EQ(r.collectives.groups[view.collectives[0]], (std::vector<uint32_t>{k[0], k[2]}));
  EXPECT_EQ(r.collectives.groups[view.collectives[1]], (std::vector<uint32_t>{k[1], k[3]}));
  EXPECT_TRUE(r.CommAcrossRanks(1).comm.empty()) << "no second step";
}

TEST(CollectivesTest, GroupsFollowTheReconstructionsClassifier) {
  // A communication kernel the built-in rules do not know: only rules that call it COMM
  // make it a collective.
  const std::string kernel = "my_fabric_exchange_kernel";
  TraceBuilder b;
  AddTwoRankSteps(b, kernel);
  EXPECT_TRUE(Reconstruct(b.trace()).collectives.groups.empty());
  auto rules = Classifier::FromText("STEP * ^teller\\.step( |$)\nCOMM * ^my_fabric_", "test rules");
  ASSERT_TRUE(rules.ok()) << rules.status().message();
  Options options;
  options.classifier = rules.value();
  const Reconstruction r = Reconstruct(b.trace(), options);
  EXPECT_EQ(r.collectives.groups.size(), 2u);
  ASSERT_EQ(r.CommAcrossRanks(0).collectives.size(), 2u);
}

TEST(ReconstructTest, UnmatchedPushesAndPopsAreCountedNotFatal) {
  TraceBuilder b;
  b.Add(EventType::kPop, "", 5);  // pop before anything
  b.Add(EventType::kPush, "outer", 10);
  b.Add(EventType::kPush, "inner", 20);
  b.Add(EventType::kPop, "", 30);
  b.Add(EventType::kMark, "tick", 40);  // the process died with "outer" open
  Reconstruction r = Reconstruct(b.trace());
  EXPECT_EQ(r.stats.unmatched_pop, 1u);
  EXPECT_EQ(r.stats.unmatched_push, 1u);
  const Trace& t = b.trace();
  EXPECT_EQ(r.nodes.end_ns[NodeOf(t, r, "outer")], 40) << "closed at the thread's last time";
  EXPECT_EQ(NameOf(t, r, r.nodes.parent[NodeOf(t, r, "tick")]), "outer");
  EXPECT_EQ(b.trace().counters.Get("reconstruct.unmatched_pop"), 1u);
}

TEST(ReconstructTest, CompleteRangesNestByContainmentPerThread) {
  TraceBuilder b;
  b.Add(EventType::kRange, "ProfilerStep#3", 0, 1000);
  b.Add(EventType::kRange, "aten::linear", 100, 400);
  b.Add(EventType::kRange, "aten::addmm", 150, 390);
  b.Add(EventType::kRuntime, "cudaLaunchKernel", 200, 210, 11);
  b.Add(EventType::kRange, "aten::relu", 400, 500);  // starts when linear ends
  b.Add(EventType::kRange, "other-thread-op", 150, 160, 0, /*thread=*/2);
  Reconstruction r = Reconstruct(b.trace());
  const Trace& t = b.trace();
  EXPECT_EQ(NameOf(t, r, r.nodes.parent[NodeOf(t, r, "aten::addmm")]), "aten::linear");
  EXPECT_EQ(NameOf(t, r, r.nodes.parent[NodeOf(t, r, "cudaLaunchKernel")]), "aten::addmm");
  EXPECT_EQ(NameOf(t, r, r.nodes.parent[NodeOf(t, r, "aten::relu")]), "ProfilerStep#3");
  EXPECT_EQ(r.nodes.parent[NodeOf(t, r, "other-thread-op")], -1);
  EXPECT_EQ(r.stats.threads, 2u);
  ASSERT_EQ(r.steps.size(), 1u) << "ProfilerStep#N is a step";
  EXPECT_TRUE(r.steps[0].requests.empty());
}

TEST(ReconstructTest, LogsAlignByRequestThenByTimeWindow) {
  TraceBuilder b;
  b.Add(EventType::kPush, "teller.step kind=prefill n=1 reqs=cmpl-1", 1'000'000'000);
  b.Add(EventType::kPop, "", 1'010'000'000);
  b.Add(EventType::kPush, "teller.step kind=decode n=2 reqs=cmpl-1,cmpl-2", 2'000'000'000);
  b.Add(EventType::kPop, "", 2'010'000'000);
  b.Log(1'005'000'000, "cmpl-1", "Added request cmpl-1.");     // by id -> step 0
  b.Log(2'500'000'000, "cmpl-2", "Finished request cmpl-2.");  // by id, nearest -> step 1
  b.Log(2'040'000'000, "", "Avg generation throughput ...");   // by time, within 50 ms
  b.Log(3'000'000'000, "", "far from any step");               // not aligned
  b.Log(1'500'000'000, "cmpl-9", "unknown request");           // not aligned
  Reconstruction r = Reconstruct(b.trace());
  ASSERT_EQ(r.steps.size(), 2u);
  EXPECT_EQ(r.steps[0].logs, (std::vector<uint32_t>{0}));
  EXPECT_EQ(r.steps[1].logs, (std::vector<uint32_t>{1, 2}));
  EXPECT_EQ(r.stats.log_lines, 5u);
  EXPECT_EQ(r.stats.log_lines_aligned, 3u);
  ASSERT_EQ(r.request_steps.at(b.trace().strings.Find("cmpl-1")).size(), 2u);

  Options narrow;
  narrow.log_tolerance_ns = 10'000'000;  // 10 ms: the throughput line falls outside
  Reconstruction r2 = Reconstruct(b.trace(), narrow);
  EXPECT_EQ(r2.stats.log_lines_aligned, 2u);
}

TEST(ClockAlignTest, HostsAreAlignedOnCollectiveEnds) {
  // Two hosts, one rank each; host B's clock runs 5 ms ahead. Ten all-reduces end within
  // a few microseconds of each other in true time while their starts spread widely.
  TraceBuilder b;
  Trace& t = b.trace();
  const uint32_t other = t.ProcessIndex("node-2", 200);
  const int64_t skew = 5'000'000;
  for (int k = 0; k < 10; ++k) {
    const int64_t end = 1'000'000'000 + k * 10'000'000;
    b.Add(EventType::kKernel, "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", end - 900'000 + k * 1000,
          end + (k % 3) * 1000, 0, 7, 0);
    b.Add(EventType::kKernel, "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", end - 20'000 + skew,
          end + skew - (k % 2) * 2000, 0, 7, other);
  }
  // A step on host B and its log line, both written with B's clock.
  b.Add(EventType::kPush, "teller.step kind=decode n=1 reqs=r1", 1'500'000'000 + skew, -1, 0, 1,
        other);
  b.Add(EventType::kPop, "", 1'510'000'000 + skew, -1, 0, 1, other);
  b.Log(1'505'000'000 + skew, "", "throughput line from B");
  t.logs.process.back() = other;
  Reconstruction r = Reconstruct(t);
  EXPECT_EQ(t.processes[0].clock_offset_ns, 0);
  EXPECT_NEAR(static_cast<double>(t.processes[other].clock_offset_ns), -skew, 3000.0);
  EXPECT_EQ(t.counters.Get("reconstruct.clock_aligned_hosts"), 1u);
  ASSERT_EQ(r.steps.size(), 1u);
  EXPECT_NEAR(static_cast<double>(r.nodes.start_ns[r.steps[0].node]), 1'500'000'000.0, 3000.0);
  EXPECT_EQ(r.steps[0].logs.size(), 1u) << "the log line moved with its host";
  // Idempotent: aligning again changes nothing.
  const int64_t before = t.events.start_ns.back();
  Reconstruct(t);
  EXPECT_EQ(t.events.start_ns.back(), before);

  // Without enough matching collectives a host keeps its clock, counted.
  TraceBuilder lone;
  lone.trace().ProcessIndex("node-9", 300);
  lone.Add(EventType::kKernel, "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", 0, 10, 0, 7, 0);
  lone.Add(EventType::kKernel, "sm90_xmma_gemm_bf16bf16", 0, 10, 0, 7, /*process=*/1);
  // A host that only log lines name (no events) has nothing to align and is not counted.
  lone.trace().ProcessIndex("", 301);
  Reconstruct(lone.trace());
  EXPECT_EQ(lone.trace().counters.Get("reconstruct.clock_unaligned_hosts"), 1u);
  EXPECT_EQ(lone.trace().processes[1].clock_offset_ns, 0);
}

TEST(StepRangesTest, OutermostStepRangesOfEachProcess) {
  TraceBuilder b;
  Trace& t = b.trace();
  const uint32_t second = t.ProcessIndex("node-1", 101);
  // Process 0: a ProfilerStep (no kind) holding an engine marker that gives one, then a
  // teller.step; a push never popped is no step.
  const size_t outer = b.Add(EventType::kPush, "ProfilerStep#7", 100);
  b.Add(EventType::kPush, "execute_new_0_cached_30", 110);  // decode
  b.Add(EventType::kPop, "", 190);
  b.Add(EventType::kPop, "", 200);
  const size_t decode =
      b.Add(EventType::kRange, "teller.step seq=2 kind=prefill n=1 reqs=a", 300, 400);
  b.Add(EventType::kPush, "teller.step seq=3 kind=decode", 500);
  // Process 1: a step on another thread inside process 1's first step is not a step of its
  // own; an inner marker does not overwrite the outer's kind.
  const size_t other = b.Add(EventType::kRange, "teller.step kind=mixed", 100, 300, 0, 1, second);
  b.Add(EventType::kRange, "step[DECODE bs=4]", 150, 250, 0, 2, second);
  b.Add(EventType::kRange, "aten::mm", 0, 1000, 0, 1, second);  // not a step
  const std::vector<int64_t> ends = RangeEnds(t, t.events.start_ns, t.events.end_ns);
  EXPECT_EQ(ends[outer], 200);
  EXPECT_EQ(ends[outer + 1], 190) << "the inner push closes at the first pop";
  EXPECT_EQ(ends[decode], 400);
  EXPECT_EQ(ends[decode + 1], -1) << "never popped";
  EXPECT_EQ(ends[outer + 2], -1) << "a pop has no end of its own";

  const std::shared_ptr<Classifier> rules = Classifier::BuiltIn();
  LayerCache layers(*rules, t);
  const std::vector<StepRange> steps = FindStepRanges(t, layers, ends);
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_EQ(steps[0].event, outer);
  EXPECT_EQ(steps[0].start, 100);
  EXPECT_EQ(steps[0].end, 200);
  EXPECT_EQ(steps[0].kind, "decode") << "lent by the engine marker inside";
  EXPECT_EQ(steps[1].event, decode);
  EXPECT_EQ(steps[1].kind, "prefill");
  EXPECT_EQ(steps[2].event, other);
  EXPECT_EQ(steps[2].process, second);
  EXPECT_EQ(steps[2].thread, 1u);
  EXPECT_EQ(steps[2].kind, "mixed");

  // The reconstruction finds the same steps where each lies on one thread, and also keeps
  // the unpopped push (closed at its thread's last event) and the other thread's marker.
  const Reconstruction r = Reconstruct(t);
  ASSERT_EQ(r.steps.size(), 5u);
  EXPECT_EQ(r.nodes.event[r.steps[0].node], outer);
  EXPECT_EQ(t.strings.Get(r.steps[0].kind), "decode");
  EXPECT_EQ(r.nodes.event[r.steps[1].node], decode);
  EXPECT_EQ(t.strings.Get(r.steps[1].kind), "prefill");
}

TEST(StepMessageTest, StepKindFromEitherMarker) {
  EXPECT_EQ(StepKind("teller.step seq=1 kind=prefill reqs=a"), "prefill");
  EXPECT_EQ(StepKind("step[DECODE bs=32]"), "decode");
  EXPECT_EQ(StepKind("teller.step seq=1 reqs=a"), "");
  EXPECT_EQ(StepKind("ProfilerStep#3"), "");
}

TEST(StepMessageTest, ParsesTheCollectorGrammar) {
  std::vector<std::string> ids;
  std::string kind, seq;
  EXPECT_TRUE(ParseStepMessage(
      "teller.step seq=4 kind=mixed n=3 tokens=40 reqs=a,b%2Cc,d%20e cont=1", &ids, &kind, &seq));
  EXPECT_EQ(ids, (std::vector<std::string>{"a", "b,c", "d e"}));
  EXPECT_EQ(kind, "mixed");
  EXPECT_EQ(seq, "4");
  ids.clear();
  EXPECT_FALSE(ParseStepMessage("execute_new_2_cached_30", &ids, nullptr, nullptr));
  EXPECT_TRUE(ids.empty());
  EXPECT_TRUE(ParseStepMessage("teller.step reqs=%zz,%4", &ids, nullptr, nullptr));
  EXPECT_EQ(ids, (std::vector<std::string>{"%zz", "%4"})) << "bad escapes are kept literally";
}

TEST(StepMessageTest, APrefillListIsKnownOnlyWhereTheMarkerSaysIt) {
  using V = std::vector<std::string>;
  V p;
  EXPECT_TRUE(ParseStepPrefill("teller.step seq=1 kind=prefill n=2 reqs=a,b%2Cc", &p));
  EXPECT_EQ(p, (V{"a", "b,c"})) << "a prefill step prefills all its requests";
  p.clear();
  EXPECT_TRUE(ParseStepPrefill("teller.step seq=2 kind=decode n=2 reqs=a,b", &p));
  EXPECT_TRUE(p.empty()) << "a decode step prefills none";
  EXPECT_TRUE(ParseStepPrefill("teller.step seq=3 kind=mixed n=3 prefill=c reqs=a,b,c", &p));
  EXPECT_EQ(p, (V{"c"}));
  p.clear();
  // Unknown: a mixed step whose list was left out, other kinds, no requests, engine markers.
  for (const char* m : {"teller.step seq=4 kind=mixed n=2 reqs=a,b",
                        "teller.step seq=5 kind=unknown n=1 reqs=a", "teller.step seq=6 kind=idle",
                        "teller.step seq=7 kind=prefill n=0", "execute_new_2_cached_30"}) {
    EXPECT_FALSE(ParseStepPrefill(m, &p)) << m;
    EXPECT_TRUE(p.empty()) << m;
  }
}

TEST(StepMessageTest, EngineMarkersGiveTheStepKind) {
  EXPECT_EQ(StepKindFromEngineMarker("step[DECODE bs=32]"), "decode");
  EXPECT_EQ(StepKindFromEngineMarker("step[EXTEND bs=15 toks=15360]"), "prefill");
  EXPECT_EQ(StepKindFromEngineMarker("execute_new_2_cached_30"), "mixed");
  EXPECT_EQ(StepKindFromEngineMarker("execute_new_0_cached_30"), "decode");
  EXPECT_EQ(StepKindFromEngineMarker("execute_new_4_cached_0"), "prefill");
  EXPECT_EQ(StepKindFromEngineMarker(
                "execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32(sq32sk55086sqsq32sqsk55086)"),
            "decode");
  EXPECT_EQ(StepKindFromEngineMarker("execute_context_1(888_788544)_generation_0(0)"), "prefill");
  EXPECT_EQ(StepKindFromEngineMarker("execute_new_x_cached_1"), "");
  EXPECT_EQ(StepKindFromEngineMarker("ProfilerStep#3"), "");
}

TEST(ClassifierTest, RulesFileErrorsNameFileAndLine) {
  auto bad = Classifier::FromText("STEP * ^ok$\nWRONG * x\n", "my.rules");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("my.rules:2: unknown layer 'WRONG'"), std::string::npos)
      << bad.status().message();
  auto regex = Classifier::FromText("COMM * ([unclosed\n", "r.rules");
  ASSERT_FALSE(regex.ok());
  EXPECT_NE(regex.status().message().find("r.rules:1: invalid regular expression"),
            std::string::npos);
  auto custom = Classifier::FromText("STEP nvtx ^my_engine_step\nBACKEND * ^mylib::\n", "c.rules");
  ASSERT_TRUE(custom.ok());
  TraceBuilder b;
  b.Add(EventType::kPush, "my_engine_step 1", 0);
  b.Add(EventType::kPush, "mylib::gemm", 1);
  b.Add(EventType::kPop, "", 2);
  b.Add(EventType::kPop, "", 3);
  Options options;
  options.classifier = custom.value();
  Reconstruction r = Reconstruct(b.trace(), options);
  EXPECT_EQ(r.steps.size(), 1u);
  EXPECT_EQ(r.nodes.layer[NodeOf(b.trace(), r, "mylib::gemm")], Layer::kBackend);
}

TEST(ClassifierTest, BuiltInRulesKnowRealEngineNames) {
  TraceBuilder b;
  const char* steps[] = {
      "execute_new_2_cached_30", "execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32(x)",
      "step[DECODE bs=32]", "ProfilerStep#12", "teller.step kind=decode n=1 reqs=a"};
  int64_t t = 0;
  for (const char* s : steps) {
    b.Add(EventType::kRange, s, t, t + 10);
    t += 20;
  }
  b.Add(EventType::kRange, "c10d::allreduce_", t, t + 5);
  b.Add(EventType::kRange, "_C_cache_ops::reshape_and_cache_flash", t + 10, t + 15);
  Reconstruction r = Reconstruct(b.trace());
  EXPECT_EQ(r.steps.size(), 5u);
  EXPECT_EQ(r.nodes.layer[NodeOf(b.trace(), r, "c10d::allreduce_")], Layer::kComm);
  EXPECT_EQ(r.nodes.layer[NodeOf(b.trace(), r, "_C_cache_ops::reshape_and_cache_flash")],
            Layer::kBackend);
}

}  // namespace
}  // namespace teller::reconstruct
