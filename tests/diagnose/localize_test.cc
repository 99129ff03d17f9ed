// Localization on hand-built traces with planted outliers: expected values are computed by
// hand in the comments (docs/localization.md gives the rules).
#include "teller/localize/localize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "teller/localize/iterations.h"
#include "teller/localize/shared.h"
#include "teller/reconstruct/reconstruct.h"

namespace teller {
namespace {

constexpr int64_t kT0 = 1'700'000'000'000'000'000;

struct Builder {
  Trace t;
  uint32_t Process(const std::string& host, int64_t pid, int rank = -1) {
    const uint32_t p = t.ProcessIndex(host, pid);
    t.processes[p].rank = rank;
    return p;
  }
  // A host event: an operator range or a runtime call.
  void Host(EventType type, const char* category, uint32_t p, uint32_t thread,
            const std::string& name, int64_t start, int64_t end) {
    EventRow r;
    r.type = type;
    r.name = t.strings.Intern(name);
    r.category = t.strings.Intern(category);
    r.process = p;
    r.thread = thread;
    r.start_ns = start;
    r.end_ns = end;
    t.events.Append(r);
  }
  void Range(uint32_t p, uint32_t thread, const std::string& name, int64_t start, int64_t end) {
    Host(EventType::kRange, "cpu_op", p, thread, name, start, end);
  }
  void Call(uint32_t p, uint32_t thread, const std::string& name, int64_t start, int64_t end) {
    Host(EventType::kRuntime, "cuda_runtime", p, thread, name, start, end);
  }
  // A runtime call that launches GPU work with the same correlation id.
  void Launch(uint32_t p, uint32_t thread, const std::string& name, int64_t start, int64_t end,
              uint64_t correlation) {
    Call(p, thread, name, start, end);
    t.events.correlation.back() = correlation;
  }
  void Kernel(uint32_t p, const std::string& name, int64_t start, int64_t end, uint32_t stream = 7,
              uint64_t correlation = 0, EventType type = EventType::kKernel) {
    EventRow r;
    r.type = type;
    r.correlation = correlation;
    r.name = t.strings.Intern(name);
    r.category = t.strings.Intern("kernel");
    r.process = p;
    r.thread = stream;
    r.stream = stream;
    r.start_ns = start;
    r.end_ns = end;
    t.events.Append(r);
  }
};

const localize::Instance* Find(const localize::Result& r, const reconstruct::Reconstruction& rec,
                               const std::string& name, int64_t duration_ns, const Trace& t) {
  for (const localize::Instance& in : r.instances) {
    const uint32_t n = in.node;
    if (t.strings.Get(t.events.name[rec.nodes.event[n]]) == name &&
        rec.nodes.end_ns[n] - rec.nodes.start_ns[n] == duration_ns)
      return &in;
  }
  return nullptr;
}

// Seven decode steps (seq 0..6), each a step range holding aten::mm (mm, in us) and
// aten::add (add, in us) operator ranges.
void DecodeSteps(Builder& b) {
  const uint32_t p = b.Process("h", 1);
  const std::vector<int> mm = {100, 104, 96, 40, 98, 100, 150};
  const std::vector<int> add = {50, 51, 49, 50, 52, 48, 150};
  for (size_t s = 0; s < mm.size(); ++s) {
    const int64_t at = kT0 + static_cast<int64_t>(s) * 1'000'000;
    b.Range(p, 1, "teller.step kind=decode seq=" + std::to_string(s), at, at + 500'000);
    const int64_t mm_end = at + 10'000 + mm[s] * 1000;
    b.Range(p, 1, "aten::mm", at + 10'000, mm_end);
    b.Range(p, 1, "aten::add", mm_end + 1000, mm_end + 1000 + add[s] * 1000);
  }
}

TEST(Localize, PositionPeersSlowerIsEvidenceFasterNever) {
  Builder b;
  DecodeSteps(b);
  const auto rec = reconstruct::Reconstruct(b.t);
  ASSERT_EQ(rec.steps.size(), 7u);
  const auto r = localize::Localize(b.t, rec);
  // 14 operator instances and each step range's own time (its thread outside mm and add:
  // 500 - mm - add us: 350 345 355 410 350 352 200; median 350, MAD 5, noise 7.41 us; step
  // 3's 410 us is 1.17x, under min_ratio; step 6's 200 us is faster: none is evidence).
  ASSERT_EQ(r.instances.size(), 21u);
  ASSERT_EQ(r.group_units.size(), 7u);
  // aten::mm: sorted 40 96 98 100 100 104 150, median 100 us; |deviations| sorted
  // 0 0 2 4 4 50 60, MAD 4 us; noise = max(1.4826 * 4, 2% of 100, 0.25) = 5.9304 us.
  // 150 us: excess 50 us, ratio 1.5, z = 50 / 5.9304 = 8.431 -> evidence. 40 us is faster:
  // z < 0, never evidence.
  const auto* slow_mm = Find(r, rec, "aten::mm", 150'000, b.t);
  const auto* fast_mm = Find(r, rec, "aten::mm", 40'000, b.t);
  ASSERT_NE(slow_mm, nullptr);
  ASSERT_NE(fast_mm, nullptr);
  EXPECT_EQ(slow_mm->source, localize::PeerSource::kPositions);
  EXPECT_EQ(slow_mm->peers, 7u);
  EXPECT_EQ(slow_mm->expected_ns, 100'000);
  EXPECT_EQ(slow_mm->noise_ns, 5930);
  EXPECT_NEAR(slow_mm->z, 8.431f, 1e-3);
  EXPECT_TRUE(slow_mm->evidence);
  EXPECT_EQ(slow_mm->excess_ns, 50'000);
  EXPECT_FALSE(fast_mm->evidence);
  EXPECT_LT(fast_mm->z, 0.0f);
  EXPECT_EQ(fast_mm->excess_ns, 0);
  // aten::add: median 50, deviations 0 0 1 1 2 2 100, MAD 1 us, noise 1.4826 us: the 150 us
  // instance has z = 100 / 1.4826 = 67.45.
  const auto* slow_add = Find(r, rec, "aten::add", 150'000, b.t);
  ASSERT_NE(slow_add, nullptr);
  EXPECT_TRUE(slow_add->evidence);
  EXPECT_EQ(slow_add->noise_ns, 1483);
  EXPECT_EQ(slow_add->excess_ns, 100'000);
  // Step 6: root excess is its costliest family, add's 100 us; every step takes 500 us with
  // no spread, so the spread is the 5% floor, 25 us: x = 4, score = 4 / (4 + 2) = 0.6667.
  const uint32_t g6 = r.group_of_unit[6];
  EXPECT_EQ(r.group_number[g6], 6);
  EXPECT_EQ(r.group_excess_ns[g6], 100'000);
  EXPECT_EQ(r.group_spread_ns[g6], 25'000);
  EXPECT_NEAR(r.group_score[g6], 4.0f / 6.0f, 1e-5);
  EXPECT_EQ(r.suspicious[g6].size(), 2u);
  // Every other step has no evidence and score 0 (the 104 us mm is 1.04x).
  for (uint32_t g = 0; g < r.group_units.size(); ++g) {
    if (g == g6) continue;
    EXPECT_TRUE(r.suspicious[g].empty()) << g;
    EXPECT_EQ(r.group_score[g], 0.0f) << g;
  }
}

TEST(Localize, AFewStrongOutliersInALargeFamilyCount) {
  // One process, no step markers: 244 kernels of one name on one stream, 10 us each every
  // 20 us, except instances 100, 101 and 102 at 20 us. Family peers (no repeating steps):
  // median 10 us, MAD 0, noise = max(0, 2% of 10 us, 0.25 us) = 0.25 us; each slow one has
  // excess 10 us, z = 40: three pieces of evidence, 30 us in all. Every time is whole
  // microseconds: the trace's tick is 1 us (the 10 us common divisor is capped).
  Builder b;
  const uint32_t p = b.Process("h", 1);
  for (int k = 0; k < 244; ++k) {
    const int64_t at = kT0 + k * 20'000;
    b.Kernel(p, "void gemm_kernel<float, 128>(Params)", at,
             at + (k >= 100 && k <= 102 ? 20'000 : 10'000));
  }
  const auto rec = reconstruct::Reconstruct(b.t);
  const auto r = localize::Localize(b.t, rec);
  EXPECT_TRUE(r.whole_trace);
  ASSERT_EQ(r.instances.size(), 244u);
  size_t evidence = 0;
  int64_t excess = 0;
  for (const localize::Instance& in : r.instances) {
    if (!in.evidence) continue;
    ++evidence;
    excess += in.excess_ns;
    EXPECT_EQ(in.source, localize::PeerSource::kFamily);
    EXPECT_EQ(in.expected_ns, 10'000);
    EXPECT_EQ(in.noise_ns, 250);
    EXPECT_FLOAT_EQ(in.z, 40.0f);
  }
  EXPECT_EQ(r.tick_ns, 1000);
  EXPECT_EQ(evidence, 3u);
  EXPECT_EQ(excess, 30'000);
  // The trace lasts 243 * 20 + 10 = 4870 us; its spread is the 5% floor, 243.5 us:
  // x = 30 / 243.5 = 0.1232, score = x / (x + 2) = 0.0580, far from abnormal.
  ASSERT_EQ(r.group_score.size(), 1u);
  EXPECT_NEAR(r.group_score[0], 0.0580f, 1e-3);
}

TEST(Localize, RepeatedLayersArePeersAtTheSamePhase) {
  // One kernel name serving a layer's three large GEMMs (80 us) and four small ones
  // (30 us), 20 layers in one unit. Against the whole family (median 30 us) every large
  // one would look 2.7x slow; the family repeats with period 7, so each instance is
  // compared with the same phase of the other layers: none of the large ones is
  // evidence, while a small one at 60 us (layer 10, phase 4) is: peers 30 us, MAD 0,
  // noise = max(0, 2% of 30 us, 0.25 us) = 0.6 us, z = 30 / 0.6 = 50.
  Builder b;
  const uint32_t p = b.Process("h", 1);
  int64_t at = kT0;
  for (int layer = 0; layer < 20; ++layer) {
    for (int k = 0; k < 7; ++k) {
      const int64_t dur = k < 3 ? 80'000 : (layer == 10 && k == 4 ? 60'000 : 30'000);
      b.Kernel(p, "sm90_gemm", at, at + dur);
      at += dur + 5'000;
    }
  }
  const auto rec = reconstruct::Reconstruct(b.t);
  const auto r = localize::Localize(b.t, rec);
  ASSERT_EQ(r.instances.size(), 140u);
  size_t evidence = 0;
  for (size_t i = 0; i < r.instances.size(); ++i) {
    const localize::Instance& in = r.instances[i];
    if (i == 0) continue;  // the first kernel has no predecessor: its own identity
    EXPECT_EQ(in.source, localize::PeerSource::kLayers) << i;
    if (!in.evidence) continue;
    ++evidence;
    EXPECT_EQ(rec.nodes.end_ns[in.node] - rec.nodes.start_ns[in.node], 60'000);
    EXPECT_EQ(in.expected_ns, 30'000);
    EXPECT_EQ(in.noise_ns, 600);
    EXPECT_FLOAT_EQ(in.z, 50.0f);
  }
  EXPECT_EQ(evidence, 1u);
}

TEST(Localize, WarmUpInstanceIsNeverEvidence) {
  // The first launch of a kernel pays one-time costs (module loading): 8 kernels of 10 us,
  // the first at 500 us. It is far above its peers but is the family's first instance.
  Builder b;
  const uint32_t p = b.Process("h", 1);
  for (int k = 0; k < 8; ++k) {
    const int64_t at = kT0 + k * 1'000'000;
    b.Kernel(p, "k", at, at + (k == 0 ? 500'000 : 10'000));
  }
  const auto rec = reconstruct::Reconstruct(b.t);
  const auto r = localize::Localize(b.t, rec);
  ASSERT_EQ(r.instances.size(), 8u);
  EXPECT_TRUE(r.instances[0].warmup);
  EXPECT_GT(r.instances[0].z, 100.0f);
  for (const localize::Instance& in : r.instances) EXPECT_FALSE(in.evidence);
}

TEST(Localize, CollectiveWaitsAreConsequencesAndNameTheLateRank) {
  // Two ranks, one step each (ProfilerStep#4: one engine step), four all-reduce kernels that
  // end together. Rank 1 starts each 10 us after rank 0, except the third, 500 us after.
  // Rank 0's kernels wait 10, 10, 500, 10 us; every kernel's transfer time is 50 us.
  // Usual wait: the median of (10, 10, 500, 10) = 10 us; 500 >= 5 x 10: rank 1 is a
  // straggler of the third collective, late by 500 us.
  Builder b;
  const uint32_t r0 = b.Process("h", 10, 0), r1 = b.Process("h", 11, 1);
  for (uint32_t p : {r0, r1}) b.Range(p, 1, "ProfilerStep#4", kT0, kT0 + 10'000'000);
  const std::string name = "ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)";
  const int64_t late[4] = {10'000, 10'000, 500'000, 10'000};
  for (int k = 0; k < 4; ++k) {
    const int64_t end = kT0 + 1'000'000 * (k + 1);
    b.Kernel(r0, name, end - 50'000 - late[k], end);
    b.Kernel(r1, name, end - 50'000, end);
  }
  const auto rec = reconstruct::Reconstruct(b.t);
  ASSERT_EQ(rec.steps.size(), 2u);
  EXPECT_EQ(rec.steps[0].number, 4);
  const auto r = localize::Localize(b.t, rec);
  ASSERT_EQ(r.group_units.size(), 1u);  // one engine step on two ranks
  EXPECT_EQ(r.group_units[0].size(), 2u);
  size_t kernels = 0;
  for (const localize::Instance& in : r.instances) {
    if (b.t.strings.Get(b.t.events.name[rec.nodes.event[in.node]]) != name) continue;
    ++kernels;
    EXPECT_EQ(r.families[in.family].measure, localize::Measure::kTransferTime);
    EXPECT_EQ(in.time_ns, 50'000);  // its own transfer time, not the wait
    EXPECT_FALSE(in.evidence);
    if (rec.nodes.process[in.node] == r0) {
      EXPECT_EQ(in.waited_for_process, static_cast<int32_t>(r1));
      EXPECT_TRUE(in.wait_ns == 10'000 || in.wait_ns == 500'000) << in.wait_ns;
    } else {
      EXPECT_EQ(in.wait_ns, 0);
    }
  }
  EXPECT_EQ(kernels, 8u);
  ASSERT_EQ(r.stragglers.size(), 1u);
  EXPECT_EQ(r.stragglers[0].process, r1);
  EXPECT_EQ(r.stragglers[0].late_ns, 500'000);
  EXPECT_EQ(r.stragglers[0].waiting, 1u);
}

// Three ranks, one step (ProfilerStep#4), six all-reduces of 50 us each ending together
// 3 ms apart;
// every rank arrives 10 us after the previous one, except at the collectives in `late`
// (collective -> {rank, us}), where that rank arrives that long after the others.
void RanksWithLateArrivals(Builder& b, const std::map<int, std::pair<int, int64_t>>& late) {
  uint32_t ranks[3];
  for (int q = 0; q < 3; ++q) {
    ranks[q] = b.Process("h", 10 + q, q);
    b.Range(ranks[q], 1, "ProfilerStep#4", kT0, kT0 + 20'000'000);
  }
  const std::string name = "ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)";
  for (int k = 0; k < 6; ++k) {
    const int64_t end = kT0 + 3'000'000 * (k + 1);
    const auto it = late.find(k);
    for (int q = 0; q < 3; ++q) {
      int64_t start = end - 50'000 - 10'000 * (2 - q);
      if (it != late.end()) {
        start = q == it->second.first ? end - 50'000
                                      : end - 50'000 - it->second.second * 1000 - 10'000 * q;
      }
      b.Kernel(ranks[q], name, start, end);
    }
  }
}

TEST(Localize, AStragglerTheBaselineShowsIsNotNews) {
  // The healthy run: rank 1 arrives 500 us after the others at the third collective (it
  // always has more to do before it). The incident: the same, and rank 2 400 us late at
  // the fifth. Self-fit both are stragglers (gaps of 500 and 400 us against 10 us usually);
  // against the healthy run only rank 2 is: rank 1's gap is the baseline's own.
  Builder healthy, incident;
  RanksWithLateArrivals(healthy, {{2, {1, 500}}});
  RanksWithLateArrivals(incident, {{2, {1, 500}}, {4, {2, 400}}});
  const auto hrec = reconstruct::Reconstruct(healthy.t);
  const auto rec = reconstruct::Reconstruct(incident.t);
  const auto self = localize::Localize(incident.t, rec);
  ASSERT_EQ(self.stragglers.size(), 2u);
  EXPECT_EQ(incident.t.processes[self.stragglers[0].process].rank, 1);  // the larger gap
  EXPECT_EQ(incident.t.processes[self.stragglers[1].process].rank, 2);
  const localize::Model model = localize::FitBaseline({{&healthy.t, &hrec}}, {});
  const auto base = localize::Localize(incident.t, rec, {}, &model);
  ASSERT_EQ(base.stragglers.size(), 1u);
  EXPECT_EQ(incident.t.processes[base.stragglers[0].process].rank, 2);
  // Later than the baseline by the minimum effect (1.2x) is news again: 610 us against 500
  // (gap 610 >= 1.2 x 500); 590 us is not.
  for (const auto& [us, news] : std::vector<std::pair<int64_t, bool>>{{610, true}, {590, false}}) {
    Builder later;
    RanksWithLateArrivals(later, {{2, {1, us}}});
    const auto lrec = reconstruct::Reconstruct(later.t);
    const auto l = localize::Localize(later.t, lrec, {}, &model);
    ASSERT_EQ(l.stragglers.size(), news ? 1u : 0u) << us;
    if (news) EXPECT_EQ(later.t.processes[l.stragglers[0].process].rank, 1);
  }
}

TEST(Localize, OtherThreadsWorkInTheStepWindowBelongsToTheStep) {
  // A step range on thread 1 and, on thread 2 (autograd's backward thread), a range that
  // starts inside the step: it is one of the step's instances.
  Builder b;
  const uint32_t p = b.Process("h", 1);
  b.Range(p, 1, "ProfilerStep#0", kT0, kT0 + 1'000'000);
  b.Range(p, 1, "aten::mm", kT0 + 1000, kT0 + 100'000);
  b.Range(p, 2, "autograd::engine::evaluate_function: MmBackward0", kT0 + 200'000, kT0 + 300'000);
  b.Range(p, 2, "aten::zero_", kT0 + 2'000'000, kT0 + 2'100'000);  // after the step
  const auto rec = reconstruct::Reconstruct(b.t);
  const auto r = localize::Localize(b.t, rec);
  ASSERT_EQ(r.units.size(), 1u);
  EXPECT_EQ(r.units[0].roots.size(), 2u);  // the step and the backward range
  std::vector<std::string> names;
  for (const localize::Instance& in : r.instances)
    names.emplace_back(b.t.strings.Get(b.t.events.name[rec.nodes.event[in.node]]));
  // The step range's own time is an instance too (where the thread pauses in the step).
  EXPECT_EQ(names, (std::vector<std::string>{"ProfilerStep#0", "aten::mm",
                                             "autograd::engine::evaluate_function: MmBackward0"}));
}

// Seven decode steps of 500 us, each with aten::mm (100 us) and aten::add (50 us) on the
// step's thread, 10 us and 1 us after the step and mm start; in step 4 the thread pauses
// 200 us between mm and add (the step range grows to 700 us). The step ranges' own time
// is 350 us, and 550 us in step 4: median 350 us, MAD 0, noise = max(0, 2% x 350 us,
// 0.25 us) = 7 us; excess 200 us, 1.571x, z = 28.57: evidence at its position against the
// 7 steps. No operator is slower. Step durations: 500 us x 6 and 700 us, median 500, MAD 0,
// spread the 5% floor of the longer of the median and this step, 35 us; root excess
// 200 us: x = 5.714, score 5.714 / (5.714 + 2) = 0.7407.
// The steps of AHostPauseInsideAStepIsItsRangesOwnTime, step s named step_name(s).
void PausedSteps(Builder& b, const std::function<std::string(int)>& step_name) {
  const uint32_t p = b.Process("h", 1);
  for (int s = 0; s < 7; ++s) {
    const int64_t at = kT0 + static_cast<int64_t>(s) * 1'000'000;
    const int64_t pause = s == 4 ? 200'000 : 0;
    b.Range(p, 1, step_name(s), at, at + 500'000 + pause);
    b.Range(p, 1, "aten::mm", at + 10'000, at + 110'000);
    b.Range(p, 1, "aten::add", at + 111'000 + pause, at + 161'000 + pause);
  }
}

TEST(Localize, AHostPauseInsideAStepIsItsRangesOwnTime) {
  Builder b;
  PausedSteps(b, [](int s) { return "teller.step kind=decode seq=" + std::to_string(s); });
  const auto rec = reconstruct::Reconstruct(b.t);
  const auto r = localize::Localize(b.t, rec);
  const auto* paused = Find(r, rec, "teller.step kind=decode seq=4", 700'000, b.t);
  ASSERT_NE(paused, nullptr);
  EXPECT_EQ(r.families[paused->family].layer, Layer::kStep);
  EXPECT_EQ(r.families[paused->family].measure, localize::Measure::kOwnTime);
  EXPECT_EQ(paused->source, localize::PeerSource::kPositions);
  EXPECT_EQ(paused->peers, 7u);
  EXPECT_EQ(paused->time_ns, 550'000);
  EXPECT_EQ(paused->expected_ns, 350'000);
  EXPECT_EQ(paused->noise_ns, 7'000);
  EXPECT_NEAR(paused->z, 28.571f, 1e-3);
  EXPECT_TRUE(paused->evidence);
  EXPECT_EQ(paused->excess_ns, 200'000);
  size_t evidence = 0;
  for (const localize::Instance& in : r.instances) evidence += in.evidence;
  EXPECT_EQ(evidence, 1u);
  const uint32_t g4 = r.group_of_unit[4];
  EXPECT_EQ(r.group_excess_ns[g4], 200'000);
  EXPECT_EQ(r.group_spread_ns[g4], 35'000);
  EXPECT_NEAR(r.group_score[g4], 0.7407f, 1e-4);
}

// The last step of a capture is closed when the profiler stops, so its range runs on past
// its last operation (PyTorch's profiler: tens of ms). The steps of
// AHostPauseInsideAStepIsItsRangesOwnTime without the pause (each range runs 339 us after
// its aten::add, own time 500 - 150 = 350 us), the range of step `trailing` 200 us longer:
// the last step's time after its last operation counts as far as the other steps' median
// (339 us), so its own time is 350 us, as every step's; a step before it keeps the 200 us
// (550 us: evidence, as a pause between two operations is).
TEST(Localize, ALastStepsTimeAfterItsLastOperationIsTheProfilersStop) {
  for (const int trailing : {6, 4}) {
    Builder b;
    const uint32_t p = b.Process("h", 1);
    for (int s = 0; s < 7; ++s) {
      const int64_t at = kT0 + static_cast<int64_t>(s) * 1'000'000;
      const int64_t after = s == trailing ? 200'000 : 0;
      b.Range(p, 1, "ProfilerStep#" + std::to_string(s), at, at + 500'000 + after);
      b.Range(p, 1, "aten::mm", at + 10'000, at + 110'000);
      b.Range(p, 1, "aten::add", at + 111'000, at + 161'000);
    }
    const auto rec = reconstruct::Reconstruct(b.t);
    const auto r = localize::Localize(b.t, rec);
    const auto* step = Find(r, rec, "ProfilerStep#" + std::to_string(trailing), 700'000, b.t);
    ASSERT_NE(step, nullptr);
    EXPECT_EQ(r.families[step->family].measure, localize::Measure::kOwnTime);
    if (trailing == 6) {
      EXPECT_EQ(step->time_ns, 350'000);
      EXPECT_FALSE(step->evidence);
    } else {
      EXPECT_EQ(step->time_ns, 550'000);
      EXPECT_TRUE(step->evidence);
    }
  }
}

// A copy from pageable host memory returns only when its copy is done, and its copy starts
// only when the work queued before it on the stream has. Seven steps of 1 ms, each a
// launch of K (50 us on stream 7, from +20 us) and, at +100 us, a cudaMemcpyAsync whose
// copy (10 us, stream 7) starts 5 us later and which returns 2 us after it: 17 us.
// - Step 3: K takes 400 us (to +420 us), the copy starts at +421 and the call returns at
//   +433 (333 us). It waited from +100 until the stream's previous work ended (+420):
//   320 us that are K's, not the call's; the call's own time is 13 us, under its peers'.
// - Step 5: the stream is idle from +70 us, and the call still takes 317 us (its copy
//   starts at +405: the host was slow to enqueue it). All 317 us are the call's: evidence
//   against the 17 us of its peers at its position.
TEST(Localize, ACopyCallThatWaitedForQueuedWorkIsNotSlowerItself) {
  Builder b;
  const uint32_t p = b.Process("h", 1);
  for (int s = 0; s < 7; ++s) {
    const int64_t at = kT0 + static_cast<int64_t>(s) * 1'000'000;
    const uint64_t corr = 10 * static_cast<uint64_t>(s);
    const int64_t k_us = s == 3 ? 400 : 50;
    const int64_t copy_at = s == 3 ? 421 : s == 5 ? 405 : 105;
    b.Range(p, 1, "ProfilerStep#" + std::to_string(s), at, at + 1'000'000);
    b.Launch(p, 1, "cudaLaunchKernel", at + 10'000, at + 15'000, corr + 1);
    b.Kernel(p, "K", at + 20'000, at + (20 + k_us) * 1000, 7, corr + 1);
    b.Launch(p, 1, "cudaMemcpyAsync", at + 100'000, at + (copy_at + 12) * 1000, corr + 2);
    b.Kernel(p, "Memcpy HtoD (Pageable -> Device)", at + copy_at * 1000, at + (copy_at + 10) * 1000,
             7, corr + 2, EventType::kMemcpy);
  }
  const auto rec = reconstruct::Reconstruct(b.t);
  const auto r = localize::Localize(b.t, rec);
  const auto* waited = Find(r, rec, "cudaMemcpyAsync", 333'000, b.t);
  ASSERT_NE(waited, nullptr);
  EXPECT_EQ(r.families[waited->family].measure, localize::Measure::kCallTime);
  EXPECT_EQ(waited->time_ns, 13'000);
  EXPECT_FALSE(waited->evidence);
  const auto* usual = Find(r, rec, "cudaMemcpyAsync", 17'000, b.t);
  ASSERT_NE(usual, nullptr);
  EXPECT_EQ(usual->time_ns, 17'000);
  const auto* delayed = Find(r, rec, "cudaMemcpyAsync", 317'000, b.t);
  ASSERT_NE(delayed, nullptr);
  EXPECT_EQ(delayed->time_ns, 317'000);
  EXPECT_EQ(delayed->expected_ns, 17'000);
  EXPECT_TRUE(delayed->evidence);
  const auto* slow_kernel = Find(r, rec, "K", 400'000, b.t);
  ASSERT_NE(slow_kernel, nullptr);
  EXPECT_TRUE(slow_kernel->evidence);
}

// A step marker's attributes differ from step to step (its number, its requests): the
// step ranges are one family whatever they say after the marker's name. The steps of
// AHostPauseInsideAStepIsItsRangesOwnTime, each naming its own request: the paused step
// is evidence against the other 6 at its position (expected 350 us, excess 200 us).
TEST(Localize, StepRangesAreOneFamilyWhateverRequestsTheyName) {
  Builder b;
  PausedSteps(b, [](int s) {
    return "teller.step seq=" + std::to_string(s) + " kind=decode n=1 tokens=1 reqs=chatcmpl-" +
           std::to_string(1000 + 37 * s);
  });
  const auto rec = reconstruct::Reconstruct(b.t);
  const auto r = localize::Localize(b.t, rec);
  std::set<uint32_t> step_families;
  for (const localize::Instance& in : r.instances) {
    if (r.families[in.family].layer == Layer::kStep) step_families.insert(in.family);
  }
  ASSERT_EQ(step_families.size(), 1u);
  EXPECT_EQ(r.families[*step_families.begin()].count, 7u);
  EXPECT_EQ(r.families[*step_families.begin()].pattern, "teller.step");
  const auto* paused =
      Find(r, rec, "teller.step seq=4 kind=decode n=1 tokens=1 reqs=chatcmpl-1148", 700'000, b.t);
  ASSERT_NE(paused, nullptr);
  EXPECT_TRUE(paused->evidence);
  EXPECT_EQ(paused->source, localize::PeerSource::kPositions);
  EXPECT_EQ(paused->peers, 7u);
  EXPECT_EQ(paused->expected_ns, 350'000);
  EXPECT_EQ(paused->excess_ns, 200'000);
}

// One timeline without steps: ten aten::index ranges, each after an aten::empty (so that
// all ten share one context), with own times 5 5 6 6 7 8 8 9 10 and, last, 105 us. Host
// framework time against its whole family counts the family's upper tail as noise: the
// 90th percentile interpolated at (10 - 1) x 0.9 = 8.1, between the 9th and 10th sorted
// values, 10 + 0.1 x (105 - 10) = 19.5 us; median 7.5 us; tail (19.5 - 7.5) / 1.2816 =
// 9.3633 us, above 1.4826 x MAD (1.5 us, the upper median of the deviations) = 2.22 us:
// noise 9.363 us, excess 97.5 us, z = 10.41: evidence. (The 10th value as the percentile,
// 105 us, would be the outlier setting its own noise: 76.05 us, z = 1.28.)
TEST(Localize, OneSlowInstanceOfTenDoesNotSetItsOwnNoise) {
  Builder b;
  const uint32_t p = b.Process("h", 1);
  const std::vector<int64_t> own_us = {5, 5, 6, 6, 7, 8, 8, 9, 10, 105};
  int64_t at = kT0;
  for (int64_t us : own_us) {
    b.Range(p, 1, "aten::empty", at, at + 1'000);
    b.Range(p, 1, "aten::index", at + 2'000, at + 2'000 + us * 1000);
    at += 200'000;
  }
  const auto rec = reconstruct::Reconstruct(b.t);
  const auto r = localize::Localize(b.t, rec);
  ASSERT_TRUE(r.whole_trace);
  const auto* slow = Find(r, rec, "aten::index", 105'000, b.t);
  ASSERT_NE(slow, nullptr);
  EXPECT_EQ(slow->source, localize::PeerSource::kFamily);
  EXPECT_EQ(slow->peers, 10u);
  EXPECT_EQ(slow->expected_ns, 7'500);
  EXPECT_EQ(slow->noise_ns, 9'363);
  EXPECT_NEAR(slow->z, 10.413f, 1e-3);
  EXPECT_TRUE(slow->evidence);
  for (const localize::Instance& in : r.instances) {
    if (in.node != slow->node) EXPECT_FALSE(in.evidence);
  }
}

TEST(Reconstruct, NestedStepMarkersCountOnceAndKeepTheirNumberAndKind) {
  // SGLang's step[DECODE bs=32] inside PyTorch's ProfilerStep#7: one step, number 7, decode.
  Builder b;
  const uint32_t p = b.Process("h", 1);
  b.Range(p, 1, "ProfilerStep#7", kT0, kT0 + 1'000'000);
  b.Range(p, 1, "step[DECODE bs=32]", kT0 + 1000, kT0 + 900'000);
  b.Range(p, 1, "aten::mm", kT0 + 2000, kT0 + 100'000);
  const auto rec = reconstruct::Reconstruct(b.t);
  ASSERT_EQ(rec.steps.size(), 1u);
  EXPECT_EQ(rec.steps[0].number, 7);
  EXPECT_EQ(b.t.strings.Get(rec.steps[0].kind), "decode");
  EXPECT_EQ(rec.stats.nested_steps, 1u);
}

TEST(Reconstruct, StepNumberComesFromSeqOrProfilerStep) {
  EXPECT_EQ(reconstruct::StepNumber("ProfilerStep#12", ""), 12);
  EXPECT_EQ(reconstruct::StepNumber("teller.step kind=decode seq=31", "31"), 31);
  EXPECT_EQ(reconstruct::StepNumber("execute_new_2_cached_30", ""), -1);
  EXPECT_EQ(reconstruct::StepNumber("ProfilerStep#", ""), -1);
  EXPECT_EQ(reconstruct::StepNumber("ProfilerStep#1x", ""), -1);
}

TEST(Localize, NamePatternReplacesLayerIndicesOnly) {
  EXPECT_EQ(localize::NamePattern("model.layers.12.self_attn"), "model.layers.#.self_attn");
  EXPECT_EQ(localize::NamePattern("Qwen2Attention_3"), "Qwen2Attention_#");
  EXPECT_EQ(localize::NamePattern("aten::max_pool2d"), "aten::max_pool2d");
  EXPECT_EQ(localize::NamePattern("fc1"), "fc1");
  EXPECT_EQ(localize::NamePattern("bf16_gemm"), "bf16_gemm");
  EXPECT_EQ(localize::NamePattern("<built-in method at 0x7fdc1d2e4b80>"),
            "<built-in method at 0x#>");
  EXPECT_EQ(localize::NamePattern("ProfilerStep#12"), "ProfilerStep#");
}

// One kernel that serves two shapes in turn (10 us, 30 us: period 2), without step
// markers, and with one extra small instance after the 20th, so that from there on the
// small ones sit at odd positions: the structure's phase shifts. The 7th instance after
// the shift, a small one, is planted at 20 us.
// k mod 2 would compare the 10 large ones after the shift with the small phase (median
// of 11 small and 10 large = 10 us) and flag them at 3x; aligned phases compare every
// instance with its own shape: only the planted one is evidence, against 10 us.
TEST(Localize, LayerPhasesFollowAShiftedStructure) {
  Builder b;
  const uint32_t p = b.Process("h", 1);
  std::vector<int> us;
  for (int i = 0; i < 20; ++i) us.push_back(i % 2 == 0 ? 10 : 30);
  us.push_back(10);  // the extra one: the phase shifts
  for (int j = 0; j < 20; ++j) us.push_back(j % 2 == 0 ? 10 : 30);
  const size_t planted = 21 + 6;
  ASSERT_EQ(us[planted], 10);
  us[planted] = 20;
  int64_t at = kT0;
  for (int d : us) {
    b.Kernel(p, "k", at, at + d * 1000);
    at += d * 1000 + 2000;
  }
  const auto rec = reconstruct::Reconstruct(b.t);
  const auto r = localize::Localize(b.t, rec);
  ASSERT_EQ(r.instances.size(), us.size());
  size_t evidence = 0;
  for (const localize::Instance& in : r.instances) {
    if (!in.evidence) continue;
    ++evidence;
    EXPECT_EQ(in.time_ns, 20'000);
    EXPECT_EQ(in.expected_ns, 10'000);
    EXPECT_EQ(in.source, localize::PeerSource::kLayers);
  }
  EXPECT_EQ(evidence, 1u);
}

// A small kernel family (14 instances, no step markers; the first two are warm-up: the
// first kernel on the stream has no kernel before it, an identity of its own) slowed 2x
// for 9 of them in a row: their median is the slowed time, so against the whole family
// nothing stands out. The sustained run against the 3 others (10, 10.2, 9.8 us: median
// 10 us, MAD 0.2 us, noise max(1.4826 x 0.2, 2% x 10, 0.25) = 0.30 us) is the deviation:
// each slowed instance (20 us) is evidence against 10 us, peers "rest". A family whose
// time grows steadily (10 to 23 us) has no such run: its slowest quarter is about 1.5x
// the rest's median but the rest spread as much (z < 5), so nothing there is evidence.
// A family whose first instances are short (1.6 us twice after the warm-up, then 4.7 us
// ten times, a smaller tensor first) is no sustained slowdown: the only rest that
// leaves 3 instances outside a run of the usual time is 1.6, 1.6 and one 4.7 us, and a
// rest that is itself a third as slow as the run says the short ones differ, not the run.
TEST(Localize, ASustainedSlowdownOfMostOfASmallFamilyIsEvidence) {
  Builder b;
  const uint32_t p = b.Process("h", 1);
  std::vector<int> ns = {10'000, 10'000, 10'000, 10'200, 9'800};
  for (int i = 0; i < 9; ++i) ns.push_back(20'000 + (i % 3) * 100);
  std::vector<int> trend;
  for (int i = 0; i < 14; ++i) trend.push_back(10'000 + i * 1'000);
  std::vector<int> short_first = {1'600, 1'600, 1'600, 1'600};
  for (int i = 0; i < 10; ++i) short_first.push_back(4'700 + (i % 3) * 50);
  int64_t at = kT0;
  for (size_t i = 0; i < ns.size(); ++i) {
    b.Kernel(p, "slowed", at, at + ns[i], 7);
    b.Kernel(p, "growing", at, at + trend[i], 8);
    b.Kernel(p, "short_first", at, at + short_first[i], 9);
    at += 50'000;
  }
  const auto rec = reconstruct::Reconstruct(b.t);
  const auto r = localize::Localize(b.t, rec);
  size_t slowed = 0, growing = 0;
  for (const localize::Instance& in : r.instances) {
    if (!in.evidence) continue;
    const std::string_view name = b.t.strings.Get(b.t.events.name[rec.nodes.event[in.node]]);
    if (name == "growing" || name == "short_first") {
      ++growing;
      continue;
    }
    ++slowed;
    EXPECT_GE(in.time_ns, 20'000);
    EXPECT_EQ(in.expected_ns, 10'000);
    EXPECT_EQ(in.source, localize::PeerSource::kRest);
    EXPECT_EQ(in.peers, 3u);
  }
  EXPECT_EQ(slowed, 9u);
  EXPECT_EQ(growing, 0u);
  // With a baseline, the baseline's instances are the peers and no run is needed.
  localize::Model none = localize::FitBaseline({});
  const auto with_empty_baseline = localize::Localize(b.t, rec, {}, &none);
  for (const localize::Instance& in : with_empty_baseline.instances)
    EXPECT_NE(in.source, localize::PeerSource::kRest);
}

// A kernel run once per step in a capture of six steps (the first is warm-up), slowed 4x
// in three consecutive steps: 500, 2000, 2000, 2000, 500 us after the warm-up. Its median
// is the slowed time, and a rest of two is too few for the usual run search. Two
// instances that agree (500 us: median 500, MAD 0, noise max(0, 2% x 500, 0.25) = 10 us)
// are a reference for a large slowdown: every instance of the run is at least 2x their
// median, z = 1500 / 10 = 150, so the three are evidence against 500 us, peers "rest" (2).
// The same run at 1.5x (750 us) is no evidence: two references do not vouch for it.
TEST(Localize, AHalfOfASixStepFamilySlowedFourfoldIsEvidenceAgainstTheOtherTwo) {
  auto evidence_of = [](const std::vector<int64_t>& conv_us, std::vector<int64_t>* expected,
                        std::vector<uint32_t>* peers) {
    Builder b;
    const uint32_t p = b.Process("h", 1);
    for (size_t s = 0; s < conv_us.size(); ++s) {
      const int64_t at = kT0 + static_cast<int64_t>(s) * 10'000'000;
      const uint64_t corr = 10 * (s + 1);
      b.Range(p, 1, "ProfilerStep#" + std::to_string(s), at, at + 5'000'000);
      b.Launch(p, 1, "cudaLaunchKernel", at + 10'000, at + 15'000, corr);
      b.Kernel(p, "pre", at + 100'000, at + 150'000, 7, corr);
      b.Launch(p, 1, "cudaLaunchKernel", at + 20'000, at + 25'000, corr + 1);
      b.Kernel(p, "conv", at + 200'000, at + 200'000 + conv_us[s] * 1000, 7, corr + 1);
    }
    const auto rec = reconstruct::Reconstruct(b.t);
    const auto r = localize::Localize(b.t, rec);
    size_t n = 0;
    for (const localize::Instance& in : r.instances) {
      if (!in.evidence) continue;
      EXPECT_EQ(b.t.strings.Get(b.t.events.name[rec.nodes.event[in.node]]), "conv");
      EXPECT_EQ(in.source, localize::PeerSource::kRest);
      expected->push_back(in.expected_ns);
      peers->push_back(in.peers);
      ++n;
    }
    return n;
  };
  std::vector<int64_t> expected;
  std::vector<uint32_t> peers;
  EXPECT_EQ(evidence_of({500, 500, 2000, 2000, 2000, 500}, &expected, &peers), 3u);
  EXPECT_EQ(expected, (std::vector<int64_t>{500'000, 500'000, 500'000}));
  EXPECT_EQ(peers, (std::vector<uint32_t>{2, 2, 2}));
  expected.clear();
  peers.clear();
  EXPECT_EQ(evidence_of({500, 500, 750, 750, 750, 500}, &expected, &peers), 0u);
}

// Host framework time compared with its whole family (no steps): its noise is the family's
// upper tail, so a run of slowed instances that is more than a tenth of the family hides
// itself in that tail. One process, 24 instances of aten::as_strided of about 1 us, with a
// natural tail (every sixth takes 3 us); instances 10-15 (six, a quarter) take 201 us.
// Against the whole family the 90th percentile is a slowed one (z about 1.3: nothing); as
// a run against the other 17 (the first is the family's first on its process, warm-up, and
// left out; median 1 us, 90th percentile 3 us: noise (3 - 1) / 1.2816 = 1.56 us) each is
// far out. aten::view: the same family where the last two thirds take 3 us (a phase with
// larger tensors): a run of most of the family is not one (the usual time is what most
// instances take).
TEST(Localize, ARunOfSlowHostInstancesStandsOutOfItsFamilysTail) {
  Builder b;
  const uint32_t p = b.Process("h", 1);
  int64_t at = kT0;
  for (int i = 0; i < 24; ++i) {
    const int64_t own = i >= 10 && i < 16 ? 201'000 : i % 6 == 5 ? 3'000 : 1'000;
    b.Range(p, 1, "aten::as_strided", at, at + own);
    const int64_t phase = i >= 8 ? 3'000 : 1'000;
    b.Range(p, 1, "aten::view", at + 300'000, at + 300'000 + phase);
    at += 1'000'000;
  }
  const auto rec = reconstruct::Reconstruct(b.t);
  const auto r = localize::Localize(b.t, rec);
  size_t slowed = 0, phase = 0;
  for (const localize::Instance& in : r.instances) {
    const std::string_view name = b.t.strings.Get(b.t.events.name[rec.nodes.event[in.node]]);
    if (name == "aten::view") {
      phase += in.evidence;
      continue;
    }
    if (!in.evidence) continue;
    ++slowed;
    EXPECT_EQ(in.time_ns, 201'000);
    EXPECT_EQ(in.expected_ns, 1'000);
    EXPECT_EQ(in.source, localize::PeerSource::kRest);
    EXPECT_EQ(in.peers, 17u);
  }
  EXPECT_EQ(slowed, 6u);
  EXPECT_EQ(phase, 0u);
}

// A run repeats one slowdown: its floors are on the run. One process, no steps, times in
// ns (their greatest common divisor is 8 ns, so the resolution floor is the noise floor,
// 250 ns). "long_rest": 40 instances of about 1.6 us (1600 + 8 (i mod 5)), instances 15-24
// at 2.4 us. Each slowed instance is 1.5x the rest's median (1616) but only about 800 ns
// above it, under min_excess_ns (1 us), and z = 800 / 250 = 3.2 per instance; the run of
// 10 has a total excess of 8 us and z = 3.2 x sqrt(10) = 10 against the rest's noise, so
// its 10 instances are evidence against the rest. "short_rest": the same run with only 6
// others, too few to trust their noise for a mean of 10: z stays 3.2, nothing.
TEST(Localize, ASustainedRunIsJudgedAsARunAboveTheTracesResolution) {
  Builder b;
  const uint32_t p = b.Process("h", 1);
  int64_t at = kT0;
  auto add = [&](const std::string& name, int count, int slow_begin, int slow_end) {
    for (int i = 0; i < count; ++i) {
      const bool slow = i >= slow_begin && i < slow_end;
      b.Kernel(p, name, at, at + (slow ? 2'400 : 1'600) + (i % 5) * 8);
      at += 20'000;
    }
  };
  add("long_rest", 40, 15, 25);
  add("short_rest", 17, 7, 17);
  const auto rec = reconstruct::Reconstruct(b.t);
  const auto r = localize::Localize(b.t, rec);
  std::map<std::string, size_t> evidence;
  for (const localize::Instance& in : r.instances) {
    if (!in.evidence) continue;
    const std::string name(b.t.strings.Get(b.t.events.name[rec.nodes.event[in.node]]));
    ++evidence[name];
    if (name != "long_rest") continue;
    EXPECT_GE(in.time_ns, 2'400);
    EXPECT_EQ(in.source, localize::PeerSource::kRest);
    EXPECT_GE(in.expected_ns, 1'600);
    EXPECT_LE(in.expected_ns, 1'632);
    // 38 scored (the warm-up and the first after it aside); the run may take in up to two
    // usual neighbours (80% of it slow).
    EXPECT_GE(in.peers, 26u);
    EXPECT_LE(in.peers, 28u);
  }
  EXPECT_EQ(evidence["long_rest"], 10u);
  EXPECT_EQ(evidence["short_rest"], 0u);
}

// In a trace written in whole microseconds (every time a multiple of 1 us: the resolution
// is 1 us), one tick more is rounding. Two kernels of 30 instances at 1 us on one process,
// instances 12-14 slowed: "one_tick" to 2 us (a run 1 us above the rest: what a 1.49 us
// and a 1.50 us kernel can both show; z = 1000 / 250 = 4 per instance, under min_z, so
// only the run rule could count it), "two_ticks" to 3 us (2 us above: ratio 3, z = 2000 /
// 250 = 8 per instance). Only the second is evidence.
// (Round times coarser than 1 us are no resolution: ASustainedSlowdownAcrossStepsIsFound-
// AgainstTheRest's 10 us and 20 us kernels.)
TEST(Localize, OneTickMoreIsRoundingNotASlowdown) {
  auto evidence_of = [](const std::vector<std::pair<std::string, int64_t>>& kernels) {
    Builder b;
    const uint32_t p = b.Process("h", 1);
    int64_t at = kT0;
    for (const auto& [name, slowed_ns] : kernels) {
      for (int i = 0; i < 30; ++i) {
        b.Kernel(p, name, at, at + (i >= 12 && i < 15 ? slowed_ns : 1'000));
        at += 20'000;
      }
    }
    const auto rec = reconstruct::Reconstruct(b.t);
    std::map<std::string, size_t> evidence;
    for (const localize::Instance& in : localize::Localize(b.t, rec).instances) {
      if (in.evidence)
        ++evidence[std::string(b.t.strings.Get(b.t.events.name[rec.nodes.event[in.node]]))];
    }
    return evidence;
  };
  const auto us = evidence_of({{"one_tick", 2'000}, {"two_ticks", 3'000}});
  EXPECT_EQ(us.count("one_tick"), 0u);
  EXPECT_EQ(us.count("two_ticks") ? us.at("two_ticks") : 0u, 3u);
}

// Six decode steps, each running five instances of every kernel in `kernels` on one
// stream; kernel k takes fast_ns before step slow_from and 2 x fast_ns from it on. The
// evidence per kernel name.
std::map<std::string, size_t> SplitEvidence(const std::vector<std::string>& kernels,
                                            int slow_from) {
  Builder b;
  const uint32_t p = b.Process("h", 1);
  constexpr int kFast = 10'000;
  for (int s = 0; s < 6; ++s) {
    const int64_t at = kT0 + static_cast<int64_t>(s) * 1'000'000;
    b.Range(p, 1, "teller.step kind=decode seq=" + std::to_string(s), at, at + 500'000);
    int64_t k_at = at + 10'000;
    for (int j = 0; j < 5; ++j) {
      for (const std::string& k : kernels) {
        b.Kernel(p, k, k_at, k_at + (s >= slow_from ? 2 * kFast : kFast));
        k_at += 40'000;
      }
    }
  }
  const auto rec = reconstruct::Reconstruct(b.t);
  const auto r = localize::Localize(b.t, rec);
  std::map<std::string, size_t> evidence;
  for (const localize::Instance& in : r.instances) {
    if (!in.evidence) continue;
    EXPECT_EQ(in.source, localize::PeerSource::kRest);
    EXPECT_EQ(in.expected_ns, kFast);
    EXPECT_EQ(in.time_ns, 2 * kFast);
    ++evidence[std::string(b.t.strings.Get(b.t.events.name[rec.nodes.event[in.node]]))];
  }
  return evidence;
}

// One kernel twice as slow from the second of six steps to the end: its positions' median
// is the slow time, and the rest of the family is the reference: the first step's three
// instances after the warm-up one and the one after no other kernel (its own identity).
// The 25 instances after the first step are evidence. Two
// kernels that both ran faster only in the first step say that the first step differs:
// neither is evidence. Two kernels slowed from the fourth step on are both evidence (the
// run that leaves at most a fifth of the rest as slow: most of their 15 slowed instances).
TEST(Localize, AFirstStepFasterInSeveralIdentitiesIsTheStepsDifference) {
  EXPECT_EQ(SplitEvidence({"gemm"}, 1), (std::map<std::string, size_t>{{"gemm", 25}}));
  EXPECT_TRUE(SplitEvidence({"gemm", "copy"}, 1).empty());
  const std::map<std::string, size_t> later = SplitEvidence({"gemm", "copy"}, 3);
  ASSERT_EQ(later.size(), 2u);
  EXPECT_GE(later.at("gemm"), 10u);
  EXPECT_GE(later.at("copy"), 10u);
}

// Operator ranges that each make one kernel launch, laid out one after another (no step
// markers): `launch_ns[i]` is the launch call's time inside op `ops[i]`.
void Launches(Builder& b, const std::vector<std::string>& ops,
              const std::vector<int64_t>& launch_ns) {
  const uint32_t p = b.Process("h", 1);
  int64_t at = kT0;
  for (size_t i = 0; i < ops.size(); ++i) {
    b.Range(p, 1, ops[i], at, at + 200'000);
    b.Call(p, 1, "cudaLaunchKernel", at + 10'000, at + 10'000 + launch_ns[i]);
    at += 300'000;
  }
}

// A launch made by an operator that runs twice has too few peers under that operator: it
// is compared with the same call made by every operator ("family" peers of the call
// itself, its maker left out of the identity). Twenty launches of five ops (four each, the
// first the warm-up) take 5 us; aten::arange, which runs twice, launches in 5 us and then
// in 30 us. Peers: the 22 launches, median 5 us, MAD 0, noise = max(0, 2% x 5, 0.25) =
// 0.25 us; 30 us is 6x with z = 100: evidence, and its family names no maker.
TEST(Localize, ARareCallerIsComparedWithTheCallMadeByEveryOperator) {
  std::vector<std::string> ops;
  std::vector<int64_t> ns;
  for (int k = 0; k < 4; ++k) {
    for (const char* op : {"aten::mm", "aten::add", "aten::mul", "aten::copy_", "aten::cat"}) {
      ops.push_back(op);
      ns.push_back(5'000);
    }
  }
  ops.insert(ops.begin() + 7, "aten::arange");
  ns.insert(ns.begin() + 7, 5'000);
  ops.push_back("aten::arange");
  ns.push_back(30'000);
  Builder b;
  Launches(b, ops, ns);
  const auto rec = reconstruct::Reconstruct(b.t);
  const auto r = localize::Localize(b.t, rec);
  const auto* slow = Find(r, rec, "cudaLaunchKernel", 30'000, b.t);
  ASSERT_NE(slow, nullptr);
  EXPECT_TRUE(slow->evidence);
  EXPECT_EQ(slow->source, localize::PeerSource::kFamily);
  EXPECT_EQ(slow->peers, 22u);
  EXPECT_EQ(slow->expected_ns, 5'000);
  EXPECT_EQ(slow->noise_ns, 250);
  EXPECT_EQ(r.families[slow->family].within, "");
  // The ops that launch four times keep their own identity.
  for (const localize::Instance& in : r.instances) {
    const localize::Family& f = r.families[in.family];
    if (f.measure != localize::Measure::kCallTime || in.node == slow->node) continue;
    EXPECT_FALSE(in.evidence);
    if (f.within != "") {
      EXPECT_EQ(f.count, 4u) << f.within;
    }
  }
}

// The evidence instances of a result, each checked to be a launch made by `within` judged
// against the other callers with this expectation, noise and peer count: how many.
size_t CallerEvidence(const localize::Result& r, const std::string& within, int64_t expected,
                      int64_t noise, uint32_t peers) {
  size_t evidence = 0;
  for (const localize::Instance& in : r.instances) {
    if (!in.evidence) continue;
    ++evidence;
    EXPECT_EQ(r.families[in.family].within, within);
    EXPECT_EQ(in.source, localize::PeerSource::kCallers);
    EXPECT_EQ(in.expected_ns, expected);
    EXPECT_EQ(in.noise_ns, noise);
    EXPECT_EQ(in.peers, peers);
  }
  return evidence;
}

// Every launch of one operator slower: its own family has no faster instance, but the
// other operators' launches show the usual cost. Six ops launch 8 times each at 5.0, 5.2,
// 4.8, 5.1, 4.9 and 25 us (aten::div_, slowed). For aten::div_, the other five medians are
// 4.8 4.9 5.0 5.1 5.2 us: median 5.0, MAD 0.1, noise = max(1.4826 x 0.1, 2% x 5.0, 0.25)
// = 0.25 us, so 25 us is 5x with z = 80: its seven scored launches (the first is warm-up)
// are evidence against the callers, expected 5 us. No other op's median (at most 5.2 us
// against others' 4.9-5.0) clears 1.2x. An op whose launches naturally cost 1.7x the
// others' (aten::div_ at 8.5 us: z = 3.5 / 0.25 = 14) stays below min_callers_ratio = 2:
// nothing.
TEST(Localize, AnOperatorWhoseLaunchesAreAllSlowerIsComparedWithTheOtherCallers) {
  const std::vector<std::pair<std::string, int64_t>> cost = {
      {"aten::mm", 5'000},  {"aten::add", 5'200}, {"aten::mul", 4'800},
      {"aten::cat", 5'100}, {"aten::neg", 4'900}, {"aten::div_", 25'000}};
  auto build = [&](Builder& b, bool slowed) {
    std::vector<std::string> ops;
    std::vector<int64_t> ns;
    for (int k = 0; k < 8; ++k) {
      for (size_t o = 0; o < cost.size(); ++o) {
        ops.push_back(cost[o].first);
        ns.push_back(slowed || o + 1 < cost.size() ? cost[o].second : 8'500);
      }
    }
    Launches(b, ops, ns);
  };
  Builder b;
  build(b, true);
  const auto rec = reconstruct::Reconstruct(b.t);
  const auto r = localize::Localize(b.t, rec);
  EXPECT_EQ(CallerEvidence(r, "aten::div_", 5'000, 250, 5), 7u);
  // With a baseline, the baseline's own instances of each family are the peers.
  const localize::Model model = localize::FitBaseline({{&b.t, &rec}});
  for (const localize::Instance& in : localize::Localize(b.t, rec, {}, &model).instances)
    EXPECT_NE(in.source, localize::PeerSource::kCallers);
  Builder healthy;
  build(healthy, false);
  const auto hrec = reconstruct::Reconstruct(healthy.t);
  for (const localize::Instance& in : localize::Localize(healthy.t, hrec).instances)
    EXPECT_FALSE(in.evidence);
}

// With fewer than min_peers other callers, their instances pooled are the reference. Three
// ops launch 8 times each, at 5.0, 4.8 and 25 us (aten::div_, slowed); the first launch of
// each is warm-up. For aten::div_, the other two callers' 14 scored launches: median 4.9
// us, MAD 0.1, noise = max(1.4826 x 0.1, 2% x 4.9, 0.25) = 0.25 us; 25 us is 5.1x with z =
// 80.4: its seven scored launches are evidence, expected 4.9 us from 14 peers. At 8.5 us
// (1.73x, below min_callers_ratio 2) nothing is. With one other caller (aten::mm alone,
// 7 scored launches at 5 us: median 5 us, MAD 0, noise the 0.25 us floor), its launches
// are the reference: aten::div_'s seven scored launches are evidence, expected 5 us from
// 7 peers; at 8.5 us (1.7x) nothing is.
TEST(Localize, AFewOtherCallersArePooled) {
  auto build = [&](Builder& b, const std::vector<std::pair<std::string, int64_t>>& cost) {
    std::vector<std::string> ops;
    std::vector<int64_t> ns;
    for (int k = 0; k < 8; ++k) {
      for (const auto& [op, t] : cost) {
        ops.push_back(op);
        ns.push_back(t);
      }
    }
    Launches(b, ops, ns);
  };
  Builder b;
  build(b, {{"aten::mm", 5'000}, {"aten::add", 4'800}, {"aten::div_", 25'000}});
  const auto rec = reconstruct::Reconstruct(b.t);
  const auto r = localize::Localize(b.t, rec);
  EXPECT_EQ(CallerEvidence(r, "aten::div_", 4'900, 250, 14), 7u);
  Builder natural;
  build(natural, {{"aten::mm", 5'000}, {"aten::add", 4'800}, {"aten::div_", 8'500}});
  const auto nrec = reconstruct::Reconstruct(natural.t);
  for (const localize::Instance& in : localize::Localize(natural.t, nrec).instances)
    EXPECT_FALSE(in.evidence);
  Builder two;
  build(two, {{"aten::mm", 5'000}, {"aten::div_", 25'000}});
  const auto trec = reconstruct::Reconstruct(two.t);
  EXPECT_EQ(CallerEvidence(localize::Localize(two.t, trec), "aten::div_", 5'000, 250, 7), 7u);
  Builder two_natural;
  build(two_natural, {{"aten::mm", 5'000}, {"aten::div_", 8'500}});
  const auto tnrec = reconstruct::Reconstruct(two_natural.t);
  for (const localize::Instance& in : localize::Localize(two_natural.t, tnrec).instances)
    EXPECT_FALSE(in.evidence);
}

// A launch's one-time cost is loading its kernel's module, on the kernel's first launch: an
// operator the program calls once is no warm-up when the kernel it launches was launched
// before. Five ops launch the kernel "elementwise" four times each in 5 us; then aten::fill_
// runs once and launches it in 30 us. Its family has too few instances of its own, so it is
// compared with the same call made by every operator (21 launches: median 5 us, MAD 0,
// noise = max(0, 2% x 5, 0.25) = 0.25 us): 6x with z = 100, evidence. When aten::fill_
// launches a kernel of its own instead, its 30 us is that kernel's first launch: warm-up,
// not evidence.
TEST(Localize, AnOperatorCalledOnceIsComparedWithTheOtherCallersWhenItsKernelIsLoaded) {
  auto build = [](Builder& b, const std::string& fill_kernel) {
    const uint32_t p = b.Process("h", 1);
    int64_t at = kT0;
    uint64_t corr = 1;
    auto op = [&](const std::string& name, const std::string& kernel, int64_t launch_ns) {
      b.Range(p, 1, name, at, at + 200'000);
      b.Launch(p, 1, "cudaLaunchKernel", at + 10'000, at + 10'000 + launch_ns, corr);
      b.Kernel(p, kernel, at + 100'000, at + 150'000, 7, corr);
      ++corr;
      at += 300'000;
    };
    for (int k = 0; k < 4; ++k) {
      for (const char* name : {"aten::mm", "aten::add", "aten::mul", "aten::cat", "aten::neg"})
        op(name, "elementwise", 5'000);
    }
    op("aten::fill_", fill_kernel, 30'000);
  };
  for (const bool loaded : {true, false}) {
    Builder b;
    build(b, loaded ? "elementwise" : "fill_kernel");
    const auto rec = reconstruct::Reconstruct(b.t);
    const auto r = localize::Localize(b.t, rec);
    const auto* slow = Find(r, rec, "cudaLaunchKernel", 30'000, b.t);
    ASSERT_NE(slow, nullptr);
    EXPECT_EQ(slow->warmup, !loaded);
    for (const localize::Instance& in : r.instances) EXPECT_EQ(in.evidence, loaded && &in == slow);
    if (!loaded) continue;
    EXPECT_EQ(slow->source, localize::PeerSource::kFamily);
    EXPECT_EQ(slow->peers, 21u);
    EXPECT_EQ(slow->expected_ns, 5'000);
    EXPECT_EQ(slow->noise_ns, 250);
  }
}

// A baseline records each operator's habit: its own instances scored against it, per
// process in time order, each as its ratio when evidence and 0 when not. DecodeSteps: the
// 150 us mm is 1.5x its position peers (median 100 us), the 150 us add 3x (median 50 us);
// every other instance is within its peers. Warm-up: the first of each family.
TEST(Localize, ABaselineRecordsEachOperatorsHabit) {
  Builder b;
  DecodeSteps(b);
  const auto rec = reconstruct::Reconstruct(b.t);
  const localize::Model model = localize::FitBaseline({{&b.t, &rec}});
  const auto r = localize::Localize(b.t, rec, {}, &model);
  for (const localize::Family& f : r.families) {
    const localize::Habit* h = model.HabitOf(f);
    if (f.pattern != "aten::mm" && f.pattern != "aten::add") continue;
    ASSERT_NE(h, nullptr) << f.pattern;
    ASSERT_EQ(h->sequences.size(), 1u);
    const std::vector<double> want = f.pattern == "aten::mm"
                                         ? std::vector<double>{0, 0, 0, 0, 0, 1.5}
                                         : std::vector<double>{0, 0, 0, 0, 0, 3.0};
    ASSERT_EQ(h->sequences[0].size(), want.size()) << f.pattern;
    for (size_t i = 0; i < want.size(); ++i)
      EXPECT_NEAR(h->sequences[0][i], want[i], 1e-9) << f.pattern << " " << i;
  }
}

// A baseline with each position once (two iterations and no step markers: each process's
// whole timeline is one unit, each kernel runs twice) gives no position min_peers peers; the
// baseline's time at the very position is the reference, with as noise the spread of this
// trace's log ratios to the baseline at every position. Six kernels, each 50 us twice in the
// baseline; in the trace, the twelve run at 1.00 x4, 1.02 x3, 0.98 x3, 1.05 and 3.00 (K3's
// second). Log ratios sorted: -0.0202 x3, 0 x4, 0.0198 x3, 0.0488, 1.0986; median (mean of
// the 6th and 7th) 0; absolute deviations sorted 0 x4, 0.0198 x3, 0.0202 x3, 0.0488, 1.0986,
// the upper middle (7th) log 1.02 = 0.0198026: noise 1.4826 x 0.0198026 = 2.9359% of 50 us
// = 1467.97 ns (above the 2% floor). K3's second: excess 100 us, z = 68.1, evidence. A
// first instance is no warm-up against the baseline's one instance at its position: both
// paid the one-time costs.
TEST(Localize, ABaselinesOneInstanceAtThePositionIsTheReference) {
  const std::vector<double> factor = {1.00, 1.00, 1.00, 1.00, 1.02, 3.00,
                                      1.02, 1.02, 0.98, 0.98, 0.98, 1.05};
  auto build = [](Builder& b, const std::vector<double>& f, size_t kernels_of_k3) {
    const uint32_t p = b.Process("h", 1, 0);
    int64_t at = kT0;
    for (int iteration = 0; iteration < 2; ++iteration) {
      for (int k = 1; k <= 6; ++k) {
        const size_t runs = k == 3 && iteration == 1 ? kernels_of_k3 - 1 : 1;
        for (size_t r = 0; r < runs; ++r) {
          const size_t slot = static_cast<size_t>((k - 1) * 2 + iteration);
          const int64_t d = std::llround(50'000 * (f.empty() ? 1.0 : f[slot]));
          b.Kernel(p, "K" + std::to_string(k), at, at + d);
          at += 200'000;
        }
      }
    }
  };
  Builder base;
  build(base, {}, 2);
  const auto base_rec = reconstruct::Reconstruct(base.t);
  const localize::Model model = localize::FitBaseline({{&base.t, &base_rec}});
  Builder b;
  build(b, factor, 2);
  const auto rec = reconstruct::Reconstruct(b.t);
  const auto r = localize::Localize(b.t, rec, {}, &model);
  const auto* slow = Find(r, rec, "K3", 150'000, b.t);
  ASSERT_NE(slow, nullptr);
  EXPECT_EQ(slow->source, localize::PeerSource::kBaseline);
  EXPECT_EQ(slow->peers, 1u);
  EXPECT_EQ(slow->expected_ns, 50'000);
  EXPECT_EQ(slow->noise_ns, 1468);
  EXPECT_NEAR(slow->z, 100'000.0 / 1467.97, 1e-2);
  EXPECT_TRUE(slow->evidence);
  size_t evidence = 0;
  for (const localize::Instance& in : r.instances) evidence += in.evidence;
  EXPECT_EQ(evidence, 1u);  // the 1.05x one is below min_ratio
  // Without the baseline, two instances per kernel are no peers at all.
  for (const localize::Instance& in : localize::Localize(b.t, rec).instances)
    EXPECT_EQ(in.source, localize::PeerSource::kNone);
  // The baseline against itself: nothing.
  for (const localize::Instance& in : localize::Localize(base.t, base_rec, {}, &model).instances)
    EXPECT_FALSE(in.evidence);
  // Laid out differently (K3 three times in the second iteration): its positions do not
  // correspond, so it is not paired.
  Builder other;
  build(other, {}, 3);
  const auto orec = reconstruct::Reconstruct(other.t);
  for (const localize::Instance& in : localize::Localize(other.t, orec, {}, &model).instances) {
    const std::string name(other.t.strings.Get(other.t.events.name[orec.nodes.event[in.node]]));
    if (name == "K3") EXPECT_EQ(in.source, localize::PeerSource::kNone);
  }
}

// Five decode steps of 1 ms, each running aten::mm twice and aten::add once. In the last
// step of the trace the two mm run as aten::bmm, an operator the baseline never ran: it has no
// peers there, and its time is compared with what the instances missing from its step took
// in the baseline. The baseline runs mm twice in each of its 5 steps, at 100 102 98 100 100
// us per instance (median 100, MAD 0): 2 instances missing at 100 us expect 200 us, with
// noise max(2 x 1.4826 x 0, 2% of 200 us, 0.25 us) = 4 us.
TEST(Localize, AnOperatorTheBaselineNeverRanIsComparedWithTheWorkItReplaced) {
  // `last`: the last step's operators, each (name, us), and its kind.
  auto build = [](Builder& b, const std::vector<std::pair<std::string, int>>& last,
                  const std::string& last_kind = "decode") {
    const uint32_t p = b.Process("h", 1);
    const std::vector<int> mm = {100, 102, 98, 100, 100};
    for (size_t s = 0; s < mm.size(); ++s) {
      const int64_t at = kT0 + static_cast<int64_t>(s) * 2'000'000;
      const std::string kind = s + 1 == mm.size() ? last_kind : "decode";
      b.Range(p, 1, "teller.step kind=" + kind + " seq=" + std::to_string(s), at, at + 1'000'000);
      std::vector<std::pair<std::string, int>> ops = {{"aten::mm", mm[s]}, {"aten::mm", mm[s]}};
      if (s + 1 == mm.size() && !last.empty()) ops = last;
      ops.push_back({"aten::add", 50});
      int64_t t = at + 10'000;
      for (const auto& [name, us] : ops) {
        b.Range(p, 1, name, t, t + us * 1000);
        t += us * 1000 + 10'000;
      }
    }
  };
  Builder base;
  build(base, {});
  const auto base_rec = reconstruct::Reconstruct(base.t);
  const localize::Model model = localize::FitBaseline({{&base.t, &base_rec}});
  auto localize = [&](const std::vector<std::pair<std::string, int>>& last, Builder& b,
                      const std::string& last_kind = "decode") {
    build(b, last, last_kind);
    const auto rec = reconstruct::Reconstruct(b.t);
    return std::make_pair(localize::Localize(b.t, rec, {}, &model), rec);
  };
  auto of = [](const localize::Result& r, const reconstruct::Reconstruction& rec, const Trace& t,
               const std::string& name) {
    std::vector<const localize::Instance*> out;
    for (const localize::Instance& in : r.instances) {
      if (t.strings.Get(t.events.name[rec.nodes.event[in.node]]) == name) out.push_back(&in);
    }
    return out;
  };
  {
    // As long as the mm it replaced (2 x 100 us): no extra time, no evidence.
    Builder b;
    const auto [r, rec] = localize({{"aten::bmm", 100}, {"aten::bmm", 100}}, b);
    const auto bmm = of(r, rec, b.t, "aten::bmm");
    ASSERT_EQ(bmm.size(), 2u);
    for (const auto* in : bmm) EXPECT_FALSE(in->evidence);
    EXPECT_EQ(r.group_excess_ns[r.group_of_unit[bmm[0]->unit]], 0);
  }
  {
    // Three times as long (2 x 300 us): 400 us more than 200 us, z = 400 / 4 = 100. Each
    // instance carries its share: expected 100 us, excess 200 us. The step's root excess is
    // the 400 us.
    Builder b;
    const auto [r, rec] = localize({{"aten::bmm", 300}, {"aten::bmm", 300}}, b);
    const auto bmm = of(r, rec, b.t, "aten::bmm");
    ASSERT_EQ(bmm.size(), 2u);
    for (const auto* in : bmm) {
      EXPECT_TRUE(in->evidence);
      EXPECT_EQ(in->source, localize::PeerSource::kReplaced);
      EXPECT_EQ(in->peers, 1u);  // one operator (mm) has instances missing
      EXPECT_EQ(in->expected_ns, 100'000);
      EXPECT_EQ(in->excess_ns, 200'000);
      EXPECT_EQ(in->noise_ns, 2000);
      EXPECT_NEAR(in->z, 100.0f, 1e-3);
    }
    EXPECT_EQ(r.group_excess_ns[r.group_of_unit[bmm[0]->unit]], 400'000);
    for (const auto* in : of(r, rec, b.t, "aten::add")) EXPECT_FALSE(in->evidence);
    // Self-fit it has no peers at all (two instances).
    const auto self = localize::Localize(b.t, rec);
    for (const auto* in : of(self, rec, b.t, "aten::bmm")) EXPECT_FALSE(in->evidence);
  }
  {
    // An operator added where nothing is missing (the two mm still run): all its 30 us is
    // excess, against the absolute noise floor.
    Builder b;
    const auto [r, rec] = localize({{"aten::mm", 100}, {"aten::mm", 100}, {"aten::copy_", 30}}, b);
    const auto copy = of(r, rec, b.t, "aten::copy_");
    ASSERT_EQ(copy.size(), 1u);
    EXPECT_TRUE(copy[0]->evidence);
    EXPECT_EQ(copy[0]->source, localize::PeerSource::kReplaced);
    EXPECT_EQ(copy[0]->peers, 0u);
    EXPECT_EQ(copy[0]->expected_ns, 0);
    EXPECT_EQ(copy[0]->excess_ns, 30'000);
    EXPECT_EQ(copy[0]->noise_ns, 250);
  }
  {
    // The same in a prefill step: the baseline has no step of that kind to say what it
    // should run, so nothing is compared.
    Builder b;
    const auto [r, rec] = localize({{"aten::bmm", 300}, {"aten::bmm", 300}}, b, "prefill");
    for (const auto* in : of(r, rec, b.t, "aten::bmm")) {
      EXPECT_FALSE(in->evidence);
      EXPECT_NE(in->source, localize::PeerSource::kReplaced);
    }
  }
  // The baseline against itself runs nothing new.
  for (const localize::Instance& in : localize::Localize(base.t, base_rec, {}, &model).instances)
    EXPECT_NE(in.source, localize::PeerSource::kReplaced);
}

// Two steps (a profiler window of two iterations), each running kernels K1..K6 once, 50 us
// in the first step and f x 50 us in the second. Self-fit, each kernel's position is held by
// two steps: too few for positions as peers, and each kernel's family holds two instances.
// The other step's time at the position is the reference; its noise is the spread of
// log(time / the other step's time) over all 12 instances: +-log f for each kernel, sorted
// -1.0986 -0.04879 -0.020203 x2 -0.019803 x2 0.019803 x2 0.020203 x2 0.04879 1.0986,
// median 0; |deviations| 0.019803 x4, 0.020203 x4, 0.04879 x2, 1.0986 x2, MAD (the upper
// median, the 7th) 0.020203, 1.4826 x MAD = 0.029953; the upper tail, the 90th percentile
// interpolated at (12 - 1) x 0.9 = 9.9 between the 10th, 0.020203, and the 11th, 0.04879:
// 0.045931) / 1.2816 = 0.035839, is larger and is the relative noise: 1791.9 ns at 50 us
// (above the 2% floor of 1000 ns). K3's 150 us: excess 100 us, z = 55.81: evidence. K6 at 1.05x is
// below min_ratio; every first-step instance is faster than its peer.
TEST(Localize, TwoStepsCompareEachPositionWithTheOtherStep) {
  const std::vector<double> f = {1.02, 0.98, 3.00, 1.02, 0.98, 1.05};
  Builder b;
  const uint32_t p = b.Process("h", 1, 0);
  for (int s = 0; s < 2; ++s) {
    const int64_t at = kT0 + s * 10'000'000;
    b.Range(p, 1, "teller.step kind=decode seq=" + std::to_string(5 + s), at, at + 5'000'000);
    for (int k = 1; k <= 6; ++k) {
      const int64_t start = at + k * 500'000;
      const int64_t d = s == 0 ? 50'000 : std::llround(50'000 * f[static_cast<size_t>(k - 1)]);
      b.Kernel(p, "K" + std::to_string(k), start, start + d);
    }
  }
  const auto rec = reconstruct::Reconstruct(b.t);
  ASSERT_EQ(rec.steps.size(), 2u);
  const auto r = localize::Localize(b.t, rec);
  const auto* slow = Find(r, rec, "K3", 150'000, b.t);
  ASSERT_NE(slow, nullptr);
  EXPECT_EQ(slow->source, localize::PeerSource::kPositions);
  EXPECT_EQ(slow->peers, 1u);
  EXPECT_EQ(slow->expected_ns, 50'000);
  EXPECT_EQ(slow->noise_ns, 1792);
  EXPECT_NEAR(slow->z, 55.81f, 1e-2);
  EXPECT_TRUE(slow->evidence);
  size_t evidence = 0;
  for (const localize::Instance& in : r.instances) evidence += in.evidence;
  EXPECT_EQ(evidence, 1u);
  // One step alone has no other step to compare with: nothing is scored.
  Builder one;
  const uint32_t q = one.Process("h", 1, 0);
  one.Range(q, 1, "teller.step kind=decode seq=5", kT0, kT0 + 5'000'000);
  for (int k = 1; k <= 6; ++k)
    one.Kernel(q, "K" + std::to_string(k), kT0 + k * 500'000, kT0 + k * 500'000 + 50'000);
  const auto orec = reconstruct::Reconstruct(one.t);
  for (const localize::Instance& in : localize::Localize(one.t, orec).instances)
    EXPECT_EQ(in.source, localize::PeerSource::kNone);
}

// Eight steps each running kernel K once: 10 us in the first three, 20 us from the fourth
// on (a slowdown that lasts). The positions' median is 20 us, so no instance stands out
// from its positions; the slower run of five against the first three is the deviation:
// the rest's median 10 us, MAD 0, noise max(0, 2% x 10 us, 250 ns) = 250 ns; each 20 us
// instance has excess 10 us, 2x, z = 40: evidence against the rest, 3 peers. (Its times'
// common divisor, 10 us, is no tick: the run is more than the 1 us cap above the rest.)
TEST(Localize, ASustainedSlowdownAcrossStepsIsFoundAgainstTheRest) {
  Builder b;
  const uint32_t p = b.Process("h", 1, 0);
  for (int s = 0; s < 8; ++s) {
    const int64_t at = kT0 + s * 1'000'000;
    b.Range(p, 1, "teller.step kind=decode seq=" + std::to_string(10 + s), at, at + 500'000);
    b.Kernel(p, "K", at + 100'000, at + 100'000 + (s < 3 ? 10'000 : 20'000));
  }
  const auto rec = reconstruct::Reconstruct(b.t);
  const auto r = localize::Localize(b.t, rec);
  size_t evidence = 0;
  for (const localize::Instance& in : r.instances) {
    if (in.time_ns == 10'000) EXPECT_FALSE(in.evidence);
    if (in.time_ns != 20'000) continue;
    EXPECT_TRUE(in.evidence);
    EXPECT_EQ(in.source, localize::PeerSource::kRest);
    EXPECT_EQ(in.expected_ns, 10'000);
    EXPECT_EQ(in.peers, 3u);
    EXPECT_NEAR(in.z, 40.0f, 1e-3);
    evidence += in.evidence;
  }
  EXPECT_EQ(evidence, 5u);
}

// A benchmark script profiled without step markers (the shape of PARAM's AlexNet run): an
// outer range around everything, two weight copies and a wait, then `iterations` passes
// of a range holding aten::conv, aten::relu, aten::mm, aten::relu, each launching one
// kernel (conv 50 us, relu 10 us, gemm 100 us, or `slow_gemm` in the last pass), the
// pass ending in cudaDeviceSynchronize when `sync` (a loop body waiting for its results).
struct ScriptOptions {
  int iterations = 3;
  bool sync = true;
  int64_t slow_gemm_ns = 100'000;
  int64_t first_pass_second_relu_launch_ns = 5000;
  int64_t first_gemm_ns = 100'000;  // the gemm of the first pass
  // Without the outer range, the set-up (allocations, copies and their wait) and the
  // tear-down (when `teardown`: a conv and a relu of an unfinished pass, then frees) lie
  // outside every pass.
  bool outer_range = true;
  bool teardown = false;
};
void ScriptWithoutMarkers(Builder& b, const ScriptOptions& o) {
  const uint32_t p = b.Process("h", 1);
  uint64_t corr = 1;
  int64_t at = kT0;
  if (o.outer_range) b.Range(p, 1, "[script]", at, at + 100'000'000);
  at += 1000;
  if (!o.outer_range) {
    // Allocations of very different sizes: 10 us and 300 us.
    b.Call(p, 1, "cudaMalloc", at, at + 10'000);
    b.Call(p, 1, "cudaMalloc", at + 20'000, at + 320'000);
    at += 330'000;
  }
  for (int c = 0; c < 2; ++c) {
    b.Launch(p, 1, "cudaMemcpyAsync", at, at + 5000, corr);
    b.Kernel(p, "Memcpy HtoD (Pageable -> Device)", at + 6000, at + 50'000, 7, corr++,
             EventType::kMemcpy);
    at += 60'000;
  }
  b.Call(p, 1, "cudaStreamSynchronize", at, at + 10'000);
  at += 20'000;
  const std::vector<std::pair<std::string, std::string>> ops = {{"aten::conv", "conv_kernel"},
                                                                {"aten::relu", "relu_kernel"},
                                                                {"aten::mm", "gemm_kernel"},
                                                                {"aten::relu", "relu_kernel"}};
  for (int k = 0; k < o.iterations; ++k) {
    const int64_t begin = at;
    at += 2000;
    int64_t gpu = at + 10'000;
    for (size_t j = 0; j < ops.size(); ++j) {
      const auto& [op, kernel] = ops[j];
      const int64_t launch_ns = k == 0 && j == 3 ? o.first_pass_second_relu_launch_ns : 5000;
      b.Range(p, 1, op, at, at + 3000 + launch_ns);
      b.Launch(p, 1, "cudaLaunchKernel", at + 1000, at + 1000 + launch_ns, corr);
      const int64_t dur = kernel == "conv_kernel"   ? 50'000
                          : kernel == "relu_kernel" ? 10'000
                          : k + 1 == o.iterations   ? o.slow_gemm_ns
                          : k == 0                  ? o.first_gemm_ns
                                                    : 100'000;
      gpu = std::max(gpu, at + 2000 + launch_ns);
      b.Kernel(p, kernel, gpu, gpu + dur, 7, corr++);
      gpu += dur;
      at += 5000 + launch_ns;
    }
    if (o.sync) {
      b.Call(p, 1, "cudaDeviceSynchronize", at, gpu + 1000);
      at = gpu + 2000;
    } else {
      at = gpu;
    }
    b.Range(p, 1, k == 0 ? "[warmup|forward]" : "[measure|forward]", begin, at);
    at += 5000;
  }
  if (o.teardown) {
    int64_t gpu = at + 10'000;
    for (size_t j = 0; j < 2; ++j) {
      b.Launch(p, 1, "cudaLaunchKernel", at, at + 5000, corr);
      const int64_t dur = j == 0 ? 50'000 : 10'000;
      b.Kernel(p, j == 0 ? "conv_kernel" : "relu_kernel", gpu, gpu + dur, 7, corr++);
      gpu += dur;
      at += 6000;
    }
    b.Call(p, 1, "cudaDeviceSynchronize", at, gpu + 1000);
    at = gpu + 2000;
    b.Call(p, 1, "cudaFree", at, at + 10'000);
    b.Call(p, 1, "cudaFree", at + 20'000, at + 420'000);
  }
}

TEST(Localize, IterationsWithoutStepMarkersAreFoundInTheRepeatingGpuWork) {
  Builder b;
  ScriptWithoutMarkers(b, {.iterations = 3,
                           .sync = true,
                           .slow_gemm_ns = 200'000,
                           .first_pass_second_relu_launch_ns = 400'000});
  const auto rec = reconstruct::Reconstruct(b.t);
  ASSERT_TRUE(rec.steps.empty());
  // Launch order: Memcpy Memcpy | conv relu gemm relu | x3. The distances between two
  // kernels of one name: relu 2 (five times), conv and gemm 4 (twice each), Memcpy 1. At
  // period 4 the copies match from the first conv to the end (8 of 8 positions): 12
  // operations covered; at period 2 only relu matches (5 of 9: under 90%). Of the phases
  // of period 4 only the one starting at the first conv has a synchronizing call at every
  // boundary, so 3 iterations; each cut is the start of the pass's own range (the outermost
  // node around its first launch that began after the previous pass's last launch).
  std::vector<uint32_t> roots;
  for (uint32_t i = 0; i < rec.nodes.size(); ++i) {
    if (rec.nodes.parent[i] < 0) roots.push_back(i);
  }
  const localize::Iterations it = localize::FindIterations(b.t, rec, roots);
  EXPECT_EQ(it.period, 4u);
  std::vector<int64_t> pass_starts;
  for (uint32_t i = 0; i < rec.nodes.size(); ++i) {
    if (b.t.strings.Get(b.t.events.name[rec.nodes.event[i]]) == "[measure|forward]")
      pass_starts.push_back(rec.nodes.start_ns[i]);
  }
  std::sort(pass_starts.begin(), pass_starts.end());
  EXPECT_EQ(it.cuts_ns, pass_starts);

  const auto r = localize::Localize(b.t, rec);
  EXPECT_TRUE(r.iterations);
  EXPECT_FALSE(r.whole_trace);
  ASSERT_EQ(r.units.size(), 3u);
  ASSERT_EQ(r.group_units.size(), 3u);
  for (uint32_t u = 0; u < 3; ++u) {
    EXPECT_EQ(r.units[u].iteration, static_cast<int32_t>(u));
    EXPECT_EQ(r.group_number[r.group_of_unit[u]], static_cast<int64_t>(u));
  }
  // The outer range lies around every pass: it belongs to none; the copies and their wait
  // belong to the first pass. Every GPU operation is in exactly one unit.
  size_t memcpy_in_first = 0, gpu_ops = 0;
  for (const localize::Instance& in : r.instances) {
    const std::string_view name = b.t.strings.Get(b.t.events.name[rec.nodes.event[in.node]]);
    EXPECT_NE(name, "[script]");
    if (IsGpuWork(b.t.events.type[rec.nodes.event[in.node]])) ++gpu_ops;
    if (name.starts_with("Memcpy")) memcpy_in_first += in.unit == 0;
  }
  EXPECT_EQ(memcpy_in_first, 2u);
  EXPECT_EQ(gpu_ops, 14u);
  // The last pass's gemm against the same position in the other two passes: their median,
  // 100 us. The passes stray from each other nowhere else (every other kernel takes the same
  // time in every pass), so the noise is the 2% floor, 2 us: excess 100 us, z = 50.
  const auto* slow = Find(r, rec, "gemm_kernel", 200'000, b.t);
  ASSERT_NE(slow, nullptr);
  EXPECT_EQ(slow->unit, 2u);
  EXPECT_EQ(slow->source, localize::PeerSource::kPositions);
  EXPECT_EQ(slow->peers, 2u);
  EXPECT_EQ(slow->expected_ns, 100'000);
  EXPECT_EQ(slow->excess_ns, 100'000);
  EXPECT_EQ(slow->noise_ns, 2000);
  EXPECT_TRUE(slow->evidence);
  // The first pass is the warm-up pass: its host side is slower throughout (allocator,
  // autotuning), so its second relu launch, 80x the other passes', is warm-up and not
  // evidence, though it is not the first launch of its kind.
  const auto* slow_launch = Find(r, rec, "cudaLaunchKernel", 400'000, b.t);
  ASSERT_NE(slow_launch, nullptr);
  EXPECT_EQ(slow_launch->unit, 0u);
  EXPECT_EQ(slow_launch->occurrence, 1u);
  EXPECT_TRUE(slow_launch->warmup);
  EXPECT_FALSE(slow_launch->evidence);
  // It is the last pass's only evidence (as one timeline, the gemm's family of three
  // instances would be under min_peers and not scored at all).
  ASSERT_EQ(r.suspicious[r.group_of_unit[2]].size(), 1u);
  EXPECT_TRUE(r.suspicious[r.group_of_unit[0]].empty());
  EXPECT_TRUE(r.suspicious[r.group_of_unit[1]].empty());
}

TEST(Localize, SetUpAndTearDownOutsideThePassesAreUnitsOfTheirOwn) {
  // No range around the script: the allocations, the two weight copies and their wait come
  // before the first pass at top level, and after the last pass come a conv and a relu of a
  // pass that never finished and two frees. In launch order: Memcpy Memcpy | conv relu gemm
  // relu | x3 | conv relu. At period 4 positions 2..11 match 4 later (the trailing conv and
  // relu match the last pass's), so the copies run from operation 2 to the end: 3 whole
  // passes from operation 2, the 2 copies before them a prologue and the 2 operations after
  // them an epilogue (no range holds both sides of either boundary).
  Builder b;
  ScriptWithoutMarkers(b, {.iterations = 3,
                           .sync = true,
                           .slow_gemm_ns = 200'000,
                           .outer_range = false,
                           .teardown = true});
  const auto rec = reconstruct::Reconstruct(b.t);
  std::vector<uint32_t> roots;
  for (uint32_t i = 0; i < rec.nodes.size(); ++i) {
    if (rec.nodes.parent[i] < 0) roots.push_back(i);
  }
  const localize::Iterations it = localize::FindIterations(b.t, rec, roots);
  EXPECT_EQ(it.period, 4u);
  EXPECT_TRUE(it.prologue);
  EXPECT_TRUE(it.epilogue);
  // Cuts: the first pass's range, the two measured passes' ranges, and the epilogue's first
  // launch call (the outermost node around it that began after the last pass's last launch).
  std::vector<int64_t> expected;
  for (uint32_t i = 0; i < rec.nodes.size(); ++i) {
    const std::string_view name = b.t.strings.Get(b.t.events.name[rec.nodes.event[i]]);
    if (name == "[warmup|forward]" || name == "[measure|forward]")
      expected.push_back(rec.nodes.start_ns[i]);
  }
  std::sort(expected.begin(), expected.end());
  int64_t teardown_launch = 0;
  for (uint32_t i = 0; i < rec.nodes.size(); ++i) {
    if (rec.nodes.parent[i] < 0 &&
        b.t.strings.Get(b.t.events.name[rec.nodes.event[i]]) == "cudaLaunchKernel")
      teardown_launch = std::max(teardown_launch, rec.nodes.start_ns[i] - 6000);
  }
  expected.push_back(teardown_launch);
  EXPECT_EQ(it.cuts_ns, expected);

  const auto r = localize::Localize(b.t, rec);
  EXPECT_TRUE(r.iterations);
  ASSERT_EQ(r.units.size(), 5u);
  const std::vector<int32_t> kinds = {localize::Unit::kPrologue, 0, 1, 2,
                                      localize::Unit::kEpilogue};
  const std::vector<int64_t> numbers = {-1, 0, 1, 2, -1};
  for (uint32_t u = 0; u < 5; ++u) {
    EXPECT_EQ(r.units[u].iteration, kinds[u]) << u;
    EXPECT_EQ(r.group_number[r.group_of_unit[u]], numbers[u]) << u;
  }
  // Allocations and frees happen once, sized as the program needs: warm-up, never evidence,
  // whatever their spread (30x and 40x).
  for (const auto& [name, ns] : std::vector<std::pair<std::string, int64_t>>{
           {"cudaMalloc", 300'000}, {"cudaFree", 400'000}}) {
    const auto* call = Find(r, rec, name, ns, b.t);
    ASSERT_NE(call, nullptr) << name;
    EXPECT_TRUE(call->warmup) << name;
    EXPECT_FALSE(call->evidence) << name;
  }
  // The last pass's gemm is still its evidence, against the same position in the others.
  const auto* slow = Find(r, rec, "gemm_kernel", 200'000, b.t);
  ASSERT_NE(slow, nullptr);
  EXPECT_EQ(slow->unit, 3u);
  EXPECT_TRUE(slow->evidence);
  EXPECT_EQ(slow->expected_ns, 100'000);
  // Every iteration as long as the others: the prologue's and epilogue's lengths are not
  // theirs to judge by (different step kinds).
  EXPECT_EQ(r.units[1].end_ns - r.units[1].start_ns, r.units[2].end_ns - r.units[2].start_ns);
}

TEST(Localize, RepeatsWithoutAWaitBetweenThemAreNotIterations) {
  // The same passes without the synchronizing call that ends each: as the layers of one
  // forward pass, they repeat but are one unit of work.
  Builder b;
  ScriptWithoutMarkers(b, {.iterations = 3, .sync = false});
  const auto rec = reconstruct::Reconstruct(b.t);
  const auto r = localize::Localize(b.t, rec);
  EXPECT_TRUE(r.whole_trace);
  EXPECT_FALSE(r.iterations);
  EXPECT_EQ(r.units.size(), 1u);
  EXPECT_EQ(r.units[0].iteration, -1);
  // One pass repeats nothing.
  Builder one;
  ScriptWithoutMarkers(one, {.iterations = 1, .sync = true});
  const auto rec1 = reconstruct::Reconstruct(one.t);
  EXPECT_TRUE(localize::Localize(one.t, rec1).whole_trace);
}

TEST(Localize, AFirstPassIsComparedWithTheBaselinesFirstPass) {
  // The first pass's gemm at 3x: self-fit it is the first instance of its kernel in the
  // first iteration, warm-up. Against the unchanged script as baseline, the baseline's
  // first pass paid the same one-time costs at this position: its 100 us is the
  // expectation, and the 300 us is evidence (excess 200 us; the trace strays from the
  // baseline nowhere else, so the noise is the 2% floor, 2 us: z = 100).
  Builder base, slow;
  ScriptWithoutMarkers(base, {});
  ScriptWithoutMarkers(slow, {.first_gemm_ns = 300'000});
  const auto base_rec = reconstruct::Reconstruct(base.t);
  const auto slow_rec = reconstruct::Reconstruct(slow.t);
  const auto self = localize::Localize(slow.t, slow_rec);
  const auto* warm = Find(self, slow_rec, "gemm_kernel", 300'000, slow.t);
  ASSERT_NE(warm, nullptr);
  EXPECT_TRUE(warm->warmup);
  EXPECT_FALSE(warm->evidence);
  const localize::Model model = localize::FitBaseline({{&base.t, &base_rec}});
  const auto r = localize::Localize(slow.t, slow_rec, {}, &model);
  const auto* in = Find(r, slow_rec, "gemm_kernel", 300'000, slow.t);
  ASSERT_NE(in, nullptr);
  EXPECT_EQ(in->unit, 0u);
  EXPECT_EQ(in->source, localize::PeerSource::kBaseline);
  EXPECT_FALSE(in->warmup);
  EXPECT_EQ(in->expected_ns, 100'000);
  EXPECT_EQ(in->noise_ns, 2000);
  EXPECT_TRUE(in->evidence);
  EXPECT_EQ(in->excess_ns, 200'000);
}

// Operators A = 0 (judged), B = 1, C = 2 interleaved; by hand from the rule: a deviation
// is shared when at least half of its up to 4 + 4 nearest other-operator instances deviate,
// with at least 4 of them found.
TEST(SharedDeviations, ByHand) {
  // index:                        0  1  2  3  4  5  6  7  8  9 10 11
  const std::vector<uint32_t> fam{1, 2, 1, 2, 0, 0, 0, 1, 2, 1, 2, 1};
  // Every instance around A's run deviates (a shared slow time): A's deviations at 4, 5, 6
  // see 4 of 4 before and 4 of 4 after deviating.
  const std::vector<uint8_t> all{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  const std::vector<uint8_t> s = localize::SharedDeviations(fam, all);
  EXPECT_EQ(s, std::vector<uint8_t>(12, 1));
  // Only A deviates: its neighbours (0..3 and 7..10) are within their peers.
  const std::vector<uint8_t> only_a{0, 0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0};
  EXPECT_EQ(localize::SharedDeviations(fam, only_a), std::vector<uint8_t>(12, 0));
  // Half of A's neighbours deviate (2 and 3 before, 7 and 8 after: 4 of 8): shared; with
  // 3 of 8 (7 not deviating) not.
  const std::vector<uint8_t> half{0, 0, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0};
  const std::vector<uint8_t> sh = localize::SharedDeviations(fam, half);
  EXPECT_EQ(sh[4], 1);
  EXPECT_EQ(sh[6], 1);
  const std::vector<uint8_t> three{0, 0, 1, 1, 1, 1, 1, 0, 1, 0, 0, 0};
  const std::vector<uint8_t> st = localize::SharedDeviations(fam, three);
  EXPECT_EQ(st[4], 0);
  EXPECT_EQ(st[5], 0);
  // Index 2 (B) in `three`: its other-operator neighbours are 1 (C) before it (0 is B) and
  // 3, 4, 5, 6 (C, A, A, A) after it; 4 of those 5 deviate: shared.
  EXPECT_EQ(st[2], 1);
}

TEST(SharedDeviations, TooFewOtherInstancesSayNothing) {
  // One other family instance on each side: 2 found, fewer than kSharedNeighbours.
  const std::vector<uint32_t> fam{1, 0, 0, 0, 1};
  const std::vector<uint8_t> dev{1, 1, 1, 1, 1};
  const std::vector<uint8_t> s = localize::SharedDeviations(fam, dev);
  EXPECT_EQ(s[2], 0);
  // A family alone on its process is never shared.
  EXPECT_EQ(localize::SharedDeviations({0, 0, 0}, {1, 1, 1}), std::vector<uint8_t>(3, 0));
}

// By hand from the rule: a deviation is contended when some class of concurrent work
// covers at least half of its window while that class covers that much of at most a
// quarter of the instances that do not deviate (at least 4 of them).
TEST(ContendedDeviations, ByHand) {
  const localize::ConcurrentCover alone{0, 0, 0, 0}, copy{0, 0, 0.8f, 0}, half_copy{0, 0, 0.5f, 0},
      comm{0, 1, 0, 0}, little{0, 0, 0.4f, 0};
  // Four usual instances alone; deviations beside a copy (0.8, and exactly half), beside
  // less than half a copy, and alone.
  std::vector<localize::ConcurrentCover> cover{alone, alone,     alone,  alone,
                                               copy,  half_copy, little, alone};
  const std::vector<uint8_t> dev{0, 0, 0, 0, 1, 1, 1, 1};
  // 1 + the class that contended them: copies (class 2).
  EXPECT_EQ(localize::ContendedDeviations(cover, dev),
            (std::vector<uint8_t>{0, 0, 0, 0, 3, 3, 0, 0}));
  // One usual instance of four beside a copy (a quarter): still contended; two (a half):
  // the family runs beside copies as a rule, and a deviation beside one is no news.
  cover[0] = copy;
  EXPECT_EQ(localize::ContendedDeviations(cover, dev)[4], 3);
  cover[1] = copy;
  EXPECT_EQ(localize::ContendedDeviations(cover, dev)[4], 0);
  // Beside a collective, which no usual instance ran beside: contended, whatever the copies.
  cover[7] = comm;
  EXPECT_EQ(localize::ContendedDeviations(cover, dev)[7], 2);
  // Beside both a collective (0.6) and a memset (0.9), neither usual: the one that covered
  // more names it.
  cover[7] = {0, 0.6f, 0, 0.9f};
  EXPECT_EQ(localize::ContendedDeviations(cover, dev)[7], 4);
  cover[7] = {0, 0.9f, 0, 0.6f};
  EXPECT_EQ(localize::ContendedDeviations(cover, dev)[7], 2);
  EXPECT_EQ(localize::ConcurrentClassName(1), "communication kernels");
  // Three usual instances are too few to say what is usual.
  EXPECT_EQ(localize::ContendedDeviations({alone, alone, alone, copy}, {0, 0, 0, 1}),
            (std::vector<uint8_t>{0, 0, 0, 0}));
}

// Eight decode steps, each running a scan kernel whose grid follows the step's data (1000
// + 3s blocks: a grid of its own in every step) for 200 us, and the same kernel on a grid
// twice as large (2000 + s blocks) for 400 us; in step 5 the small scan takes 800 us.
// Keyed by the exact grid each scan would be a family of one, never scored; by the grid's
// size class (per dimension, round(4 log2 blocks) + 1: x 41 for 1000..1021 blocks, 45 for
// 2000..2007; y and z 1) the small scans are eight peers and the large ones eight others.
TEST(Localize, AKernelWhoseGridFollowsTheDataIsComparedWithinItsGridsSizeClass) {
  Builder b;
  const uint32_t p = b.Process("h", 1);
  for (int s = 0; s < 8; ++s) {
    const int64_t at = kT0 + static_cast<int64_t>(s) * 2'000'000;
    b.Range(p, 1, "teller.step kind=decode seq=" + std::to_string(s), at, at + 1'500'000);
    const int64_t small = s == 5 ? 800'000 : 200'000;
    b.Kernel(p, "scan", at + 10'000, at + 10'000 + small);
    b.t.events.signature.back() =
        b.t.strings.Intern("grid=" + std::to_string(1000 + 3 * s) + ",1,1 block=256,1,1");
    b.Kernel(p, "scan", at + 900'000, at + 1'300'000);
    b.t.events.signature.back() =
        b.t.strings.Intern("grid=" + std::to_string(2000 + s) + ",1,1 block=256,1,1");
  }
  const auto rec = reconstruct::Reconstruct(b.t);
  ASSERT_EQ(rec.steps.size(), 8u);
  const auto r = localize::Localize(b.t, rec);
  size_t small_scored = 0, large_scored = 0;
  for (const localize::Instance& in : r.instances) {
    const uint32_t n = in.node;
    if (b.t.strings.Get(b.t.events.name[rec.nodes.event[n]]) != "scan") continue;
    const std::string& key = r.families[in.family].key;
    const bool large = rec.nodes.end_ns[n] - rec.nodes.start_ns[n] == 400'000;
    EXPECT_NE(key.find(large ? "grid~45,1,1 block=256,1,1" : "grid~41,1,1 block=256,1,1"),
              std::string::npos)
        << key;
    ASSERT_EQ(in.source, localize::PeerSource::kPositions);
    EXPECT_EQ(in.peers, 8u);
    // The small scans' median at their position is 200 us (seven of eight), the large
    // ones' 400 us: the size classes are not mixed.
    EXPECT_EQ(in.expected_ns, large ? 400'000 : 200'000);
    (large ? large_scored : small_scored) += 1;
    const bool slowed = in.time_ns == 800'000;
    EXPECT_EQ(in.evidence, slowed);
    // MAD 0: the noise is the 2% floor of 200 us, 4 us; the excess 600 us.
    if (slowed) {
      EXPECT_EQ(in.excess_ns, 600'000);
      EXPECT_EQ(in.noise_ns, 4'000);
    }
  }
  EXPECT_EQ(small_scored, 8u);
  EXPECT_EQ(large_scored, 8u);
}

// Two kernels of one name whose grids follow the data and are too rare for peers: A on
// 112-114 x 1 x 17 blocks (100 us; 200 us in step 5), B on 8 x 14 x 17 (2000 us), in
// alternating order (A first in even steps). By all their blocks they would be one size
// class (1904-1938 blocks, round(4 log2) = 44), A's positions mixing both kernels; per
// dimension (x: round(4 log2 112..114) + 1 = 28, y 1, z round(4 log2 17) + 1 = 17) A's
// eight are a family of their own: the slowed one is evidence against 100 us (MAD 0,
// noise the 2% floor, 2 us: z = 50), and no instance of B is.
TEST(Localize, KernelGridsOfOneBlockCountButOtherDimensionsAreNotPeers) {
  Builder b;
  const uint32_t p = b.Process("h", 1);
  for (int s = 0; s < 8; ++s) {
    const int64_t at = kT0 + static_cast<int64_t>(s) * 4'000'000;
    b.Range(p, 1, "teller.step kind=decode seq=" + std::to_string(s), at, at + 3'000'000);
    const int64_t a_us = s == 5 ? 200 : 100;
    const int64_t a_at = s % 2 == 0 ? at + 10'000 : at + 2'100'000;
    const int64_t b_at = s % 2 == 0 ? at + 200'000 : at + 10'000;
    b.Kernel(p, "cgemm", a_at, a_at + a_us * 1000);
    b.t.events.signature.back() =
        b.t.strings.Intern("grid=" + std::to_string(112 + s % 3) + ",1,17 block=64,1,1");
    b.Kernel(p, "cgemm", b_at, b_at + 2'000'000);
    b.t.events.signature.back() = b.t.strings.Intern("grid=8,14,17 block=64,1,1");
  }
  const auto rec = reconstruct::Reconstruct(b.t);
  ASSERT_EQ(rec.steps.size(), 8u);
  const auto r = localize::Localize(b.t, rec);
  size_t a_at_100 = 0, evidence = 0;
  for (const localize::Instance& in : r.instances) {
    if (b.t.strings.Get(b.t.events.name[rec.nodes.event[in.node]]) != "cgemm") continue;
    if (in.time_ns <= 200'000) a_at_100 += in.expected_ns == 100'000;
    if (!in.evidence) continue;
    ++evidence;
    EXPECT_EQ(in.time_ns, 200'000);
    EXPECT_EQ(in.expected_ns, 100'000);
    EXPECT_EQ(in.source, localize::PeerSource::kPositions);
    EXPECT_NE(r.families[in.family].key.find("grid~28,1,17 block=64,1,1"), std::string::npos)
        << r.families[in.family].key;
  }
  EXPECT_EQ(evidence, 1u);
  EXPECT_EQ(a_at_100, 8u);
}

// One kernel on one grid launched by a convolution for two input shapes: 30 us for a
// 7x7 filter on 3 channels, 75 us for a 3x3 filter on 64 (the work the grid does not
// show), in alternating order. Neither the name, the grid nor the kernel before it tells
// them apart; the launching operator's recorded shapes do: their medians, 30 and 75 us,
// are 2.5x apart (at least min_ratio, 1.2), so each shape is a family. Step 5's 7x7
// kernel takes 60 us: evidence against the other 7x7 ones (30 us, MAD 0, noise the 2%
// floor, 0.6 us: z = 30 / 0.6 = 50), and no 3x3 one is evidence. When the 3x3 launches
// take 32 us (medians 30 and 32 us, 1.07x apart) the shapes cost alike and the kernel
// keeps one family without them.
TEST(Localize, AKernelIsComparedWithTheKernelsLaunchedForItsOperatorsShapes) {
  const std::string small = "dims=[[32,3,224,224],[64,3,7,7]] types=[float,float]";
  const std::string large = "dims=[[32,64,56,56],[64,64,3,3]] types=[float,float]";
  auto fill = [&](Builder& b, int64_t large_us) {
    const uint32_t p = b.Process("h", 1);
    for (int s = 0; s < 8; ++s) {
      const int64_t at = kT0 + static_cast<int64_t>(s) * 4'000'000;
      b.Range(p, 1, "ProfilerStep#" + std::to_string(s), at, at + 3'000'000);
      for (int k = 0; k < 2; ++k) {
        const bool is_small = (k == 0) == (s % 2 == 0);
        const int64_t op = at + 10'000 + k * 1'000'000;
        const uint64_t corr = 10 * static_cast<uint64_t>(s + 1) + static_cast<uint64_t>(k);
        b.Range(p, 1, "aten::cudnn_convolution", op, op + 100'000);
        b.t.events.signature.back() = b.t.strings.Intern(is_small ? small : large);
        b.Launch(p, 1, "cudaLaunchKernel", op + 10'000, op + 15'000, corr);
        const int64_t us = is_small ? (s == 5 ? 60 : 30) : large_us;
        b.Kernel(p, "volta_gcgemm_32x32_nt", op + 20'000, op + 20'000 + us * 1000, 7, corr);
        b.t.events.signature.back() = b.t.strings.Intern("grid=2,1,544 block=64,1,1");
      }
    }
  };
  {
    Builder b;
    fill(b, 75);
    const auto rec = reconstruct::Reconstruct(b.t);
    ASSERT_EQ(rec.steps.size(), 8u);
    const auto r = localize::Localize(b.t, rec);
    size_t kernels = 0, evidence = 0;
    for (const localize::Instance& in : r.instances) {
      if (b.t.strings.Get(b.t.events.name[rec.nodes.event[in.node]]) != "volta_gcgemm_32x32_nt")
        continue;
      ++kernels;
      const std::string& key = r.families[in.family].key;
      const bool is_small = in.time_ns <= 60'000;
      EXPECT_NE(key.find("launched by aten::cudnn_convolution " + (is_small ? small : large)),
                std::string::npos)
          << key;
      EXPECT_EQ(in.expected_ns, is_small ? 30'000 : 75'000);
      if (!in.evidence) continue;
      ++evidence;
      EXPECT_EQ(in.time_ns, 60'000);
    }
    EXPECT_EQ(kernels, 16u);
    EXPECT_EQ(evidence, 1u);
  }
  Builder b;
  fill(b, 32);
  const auto rec = reconstruct::Reconstruct(b.t);
  const auto r = localize::Localize(b.t, rec);
  size_t kernels = 0;
  for (const localize::Instance& in : r.instances) {
    if (b.t.strings.Get(b.t.events.name[rec.nodes.event[in.node]]) != "volta_gcgemm_32x32_nt")
      continue;
    ++kernels;
    EXPECT_EQ(r.families[in.family].key.find("launched by"), std::string::npos)
        << r.families[in.family].key;
  }
  EXPECT_EQ(kernels, 16u);
}

// A capture that begins during a step's backward pass: its first step starts with four
// kernels of that pass that no recorded operator launched. Every step runs one ReLU kernel
// (one grid) for its forward operator, 63 us twice, and for its backward one, 89 us twice,
// both launched for the same input shapes. The leftover four (89 us) have no launching
// operator, so their identity is the kernel's without shapes, which the launched ones hold
// too: their position among that identity's instances counts every instance holding it,
// as in the other steps, and the first step's forward kernels stay peers of the other
// forward ones. Nothing here is slower than its peers.
TEST(Localize, KernelsWithoutALaunchingOperatorKeepTheOthersPositions) {
  Builder b;
  const uint32_t p = b.Process("h", 1);
  const std::string dims = "dims=[[32,64,56,56],[],[]] types=[float,Scalar,Scalar]";
  for (int s = 0; s < 8; ++s) {
    const int64_t at = kT0 + static_cast<int64_t>(s) * 4'000'000;
    b.Range(p, 1, "ProfilerStep#" + std::to_string(s), at, at + 3'500'000);
    int64_t gpu = at + 300'000;
    auto relu = [&](int64_t us, uint64_t corr) {
      b.Kernel(p, "relu_kernel", gpu, gpu + us * 1000, 7, corr);
      b.t.events.signature.back() = b.t.strings.Intern("grid=25088,1,1 block=64,1,1");
      gpu += us * 1000 + 20'000;
    };
    for (int k = 0; s == 0 && k < 4; ++k) relu(89, 0);
    for (int k = 0; k < 4; ++k) {
      const bool forward = k < 2;
      const int64_t op = at + 10'000 + k * 50'000;
      const uint64_t corr = 100 * static_cast<uint64_t>(s + 1) + static_cast<uint64_t>(k);
      b.Range(p, 1, forward ? "aten::threshold_" : "aten::threshold_backward", op, op + 20'000);
      b.t.events.signature.back() = b.t.strings.Intern(dims);
      b.Launch(p, 1, "cudaLaunchKernel", op + 5'000, op + 10'000, corr);
      relu(forward ? 63 : 89, corr);
    }
  }
  const auto rec = reconstruct::Reconstruct(b.t);
  ASSERT_EQ(rec.steps.size(), 8u);
  const auto r = localize::Localize(b.t, rec);
  size_t relus = 0;
  for (const localize::Instance& in : r.instances) {
    if (b.t.strings.Get(b.t.events.name[rec.nodes.event[in.node]]) != "relu_kernel") continue;
    ++relus;
    EXPECT_FALSE(in.evidence) << in.time_ns << " against " << in.expected_ns;
    if (in.time_ns == 63'000) EXPECT_EQ(in.expected_ns, 63'000);
  }
  EXPECT_EQ(relus, 36u);
}

// Six decode steps of five rounds of a gemm and a norm kernel (10 us each, stream 7). Step 3:
// a host-to-device copy on stream 8 runs beside its first two gemms, which take 20 us.
// Step 4: its third gemm takes 30 us alone (a fault of its own). Step 5: its fourth gemm
// takes 40 us and a copy starts 15 us after it, past the 10 us it should have taken.
TEST(Localize, AKernelSlowerBesideWorkItsPeersRanWithoutIsContended) {
  Builder b;
  const uint32_t p = b.Process("h", 1);
  for (int s = 0; s < 6; ++s) {
    const int64_t at = kT0 + static_cast<int64_t>(s) * 1'000'000;
    b.Range(p, 1, "teller.step kind=decode seq=" + std::to_string(s), at, at + 900'000);
    int64_t k_at = at + 10'000;
    for (int j = 0; j < 5; ++j) {
      int64_t gemm = 10'000;
      if (s == 3 && j < 2) gemm = 20'000;
      if (s == 4 && j == 2) gemm = 30'000;
      if (s == 5 && j == 3) gemm = 40'000;
      if (s == 3 && j == 0)
        b.Kernel(p, "Memcpy HtoD (Pinned -> Device)", k_at, k_at + 45'000, 8, 0,
                 EventType::kMemcpy);
      if (s == 5 && j == 3)
        b.Kernel(p, "Memcpy HtoD (Pinned -> Device)", k_at + 15'000, k_at + 35'000, 8, 0,
                 EventType::kMemcpy);
      b.Kernel(p, "gemm", k_at, k_at + gemm);
      b.Kernel(p, "norm", k_at + gemm + 1000, k_at + gemm + 11'000);
      k_at += gemm + 20'000;
    }
  }
  const auto rec = reconstruct::Reconstruct(b.t);
  const auto r = localize::Localize(b.t, rec);
  std::map<std::pair<int64_t, int64_t>, bool> gemm_evidence;  // (step, time) -> shared
  for (const localize::Instance& in : r.instances) {
    const std::string_view name = b.t.strings.Get(b.t.events.name[rec.nodes.event[in.node]]);
    if (name != "gemm" || !in.evidence) continue;
    const int64_t step = rec.steps[r.units[in.unit].step].number;
    gemm_evidence[{step, in.time_ns}] = in.shared;
    // The contended ones name the copy's class and stream.
    EXPECT_EQ(in.contended_by, step == 3 ? 3 : 0) << "step " << step;
    EXPECT_EQ(in.contended_stream, step == 3 ? 8u : 0u) << "step " << step;
  }
  // The contended two, the lone fault and the one that ran into a copy only when already
  // late; nothing else.
  const std::map<std::pair<int64_t, int64_t>, bool> expected{
      {{3, 20'000}, true}, {{4, 30'000}, false}, {{5, 40'000}, false}};
  EXPECT_EQ(gemm_evidence, expected);
}

// Six decode steps of five rounds of gemm, norm, act and add kernels (10 us each) and one
// scale kernel (10 us) per step. In step 2 every kernel takes 2x (a slow time: another
// process on the GPU); in step 4 only scale takes 4x (its fault).
TEST(Localize, DeviationsMostOperatorsAroundShareAreMarkedShared) {
  Builder b;
  const uint32_t p = b.Process("h", 1);
  const std::vector<std::string> kernels = {"gemm", "norm", "act", "add"};
  for (int s = 0; s < 6; ++s) {
    const int64_t at = kT0 + static_cast<int64_t>(s) * 1'000'000;
    b.Range(p, 1, "teller.step kind=decode seq=" + std::to_string(s), at, at + 900'000);
    int64_t k_at = at + 10'000;
    const int64_t slow = s == 2 ? 2 : 1;
    for (int j = 0; j < 5; ++j) {
      for (const std::string& k : kernels) {
        b.Kernel(p, k, k_at, k_at + slow * 10'000);
        k_at += 40'000;
      }
    }
    b.Kernel(p, "scale", k_at, k_at + (s == 4 ? 4 : slow) * 10'000);
  }
  const auto rec = reconstruct::Reconstruct(b.t);
  const auto r = localize::Localize(b.t, rec);
  size_t slow_time = 0, slow_time_shared = 0, fault = 0, fault_shared = 0;
  for (const localize::Instance& in : r.instances) {
    if (!in.evidence) continue;
    const std::string_view name = b.t.strings.Get(b.t.events.name[rec.nodes.event[in.node]]);
    const bool step4 = r.units[in.unit].step >= 0 && rec.steps[r.units[in.unit].step].number == 4;
    if (name == "scale" && step4) {
      ++fault;
      fault_shared += in.shared;
    } else {
      ++slow_time;
      slow_time_shared += in.shared;
    }
  }
  // Step 2: all 21 kernels are evidence against their positions' 10 us; each one's nearest
  // other operators are its step's (2x) and, at the step's ends, the neighbouring steps'
  // (1x): at least 4 of its 8 deviate, so every one is shared.
  EXPECT_EQ(slow_time, 21u);
  EXPECT_EQ(slow_time_shared, 21u);
  // Step 4's scale: its 4 neighbours before it are step 4's (1x), the 4 after it step 5's.
  EXPECT_EQ(fault, 1u);
  EXPECT_EQ(fault_shared, 0u);
}

// An operator alone in making its launch call (cuBLAS's cuLaunchKernel under aten::addmm)
// has no other caller of that call: it is compared with the other operators' launches
// through the other APIs, pooled, at min_other_api_ratio = 3. Three ops make 4
// cudaLaunchKernel calls of 5 us each (the first of each is warm-up: 9 scored peers,
// median 5 us, MAD 0, noise 0.25 us); aten::addmm makes 6 cuLaunchKernel calls of
// `addmm_ns` each.
size_t OtherApiEvidence(int64_t addmm_ns, int64_t* expected) {
  Builder b;
  const uint32_t p = b.Process("h", 1);
  int64_t at = kT0;
  for (int round = 0; round < 6; ++round) {
    for (const char* op : {"aten::add", "aten::mul", "aten::relu"}) {
      if (round >= 4) break;
      b.Range(p, 1, op, at, at + 100'000);
      b.Call(p, 1, "cudaLaunchKernel", at + 10'000, at + 15'000);
      at += 200'000;
    }
    b.Range(p, 1, "aten::addmm", at, at + 200'000);
    b.Call(p, 1, "cuLaunchKernel", at + 10'000, at + 10'000 + addmm_ns);
    at += 300'000;
  }
  const auto rec = reconstruct::Reconstruct(b.t);
  const auto r = localize::Localize(b.t, rec);
  size_t n = 0;
  for (const localize::Instance& in : r.instances) {
    if (!in.evidence ||
        b.t.strings.Get(b.t.events.name[rec.nodes.event[in.node]]) != "cuLaunchKernel")
      continue;
    EXPECT_EQ(in.source, localize::PeerSource::kCallers);
    EXPECT_EQ(in.peers, 9u);
    *expected = in.expected_ns;
    ++n;
  }
  return n;
}

TEST(Localize, ALaunchCallOnlyOneOperatorMakesIsComparedWithTheOtherApis) {
  int64_t expected = 0;
  // 25 us: 5x the others' 5 us; its 5 scored launches (the first is warm-up) are evidence.
  EXPECT_EQ(OtherApiEvidence(25'000, &expected), 5u);
  EXPECT_EQ(expected, 5'000);
  // 12 us: 2.4x, within how far launch APIs differ naturally: nothing.
  EXPECT_EQ(OtherApiEvidence(12'000, &expected), 0u);
}

}  // namespace
}  // namespace teller
