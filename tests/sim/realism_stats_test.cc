// The per-step statistics of the realism report (src/eval/realism.cc): distinct kernel
// names and event symbols per step, inter-kernel gap quantiles, duration CV across the
// repeated layers by class, step variety, and the targets, on a hand-built trace whose
// values are computed by hand below.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "teller/eval/realism.h"

namespace teller::eval {
namespace {

constexpr int64_t kT0 = 1'700'000'000'000'000'000;

// `steps` decode steps of 8 layers. Per layer: attention (10 us on even layers, 12 us on
// odd ones), then two GEMMs of one name (20 us, then 30 us). Every kernel starts
// `gap_ns` after the previous one ends. Step `odd_step` runs a differently named
// attention kernel.
void Build(Trace& t, int steps, int64_t gap_ns, int odd_step) {
  const uint32_t p = t.ProcessIndex("h", 1);
  int64_t now = kT0;
  uint64_t corr = 1;
  for (int s = 0; s < steps; ++s) {
    EventRow step;
    step.type = EventType::kRange;
    step.name = t.strings.Intern("teller.step kind=decode seq=" + std::to_string(s));
    step.process = p;
    step.thread = 1;
    step.start_ns = now;
    const size_t row = t.events.Append(step);
    int64_t gpu = now + 10'000;
    bool first = true;
    for (int l = 0; l < 8; ++l) {
      const std::pair<std::string, int64_t> layer[] = {
          {s == odd_step ? "flash_fwd_splitkv_kernel_b" : "flash_fwd_splitkv_kernel",
           l % 2 ? 12'000 : 10'000},
          {"sm90_xmma_gemm_bf16", 20'000},
          {"sm90_xmma_gemm_bf16", 30'000}};
      for (const auto& [name, ns] : layer) {
        EventRow call;
        call.type = EventType::kRuntime;
        call.name = t.strings.Intern("cudaLaunchKernel");
        call.process = p;
        call.thread = 1;
        call.start_ns = now += 1'000;
        call.end_ns = now + 500;
        call.correlation = corr;
        t.events.Append(call);
        EventRow k;
        k.type = EventType::kKernel;
        k.name = t.strings.Intern(name);
        k.process = p;
        k.thread = k.stream = 7;
        if (!first) gpu += gap_ns;
        first = false;
        k.start_ns = gpu;
        k.end_ns = gpu += ns;
        k.correlation = corr++;
        t.events.Append(k);
      }
    }
    now = std::max(now, gpu) + 5'000;
    t.events.end_ns[row] = now;
  }
}

const ClassDistance* Find(const RealismReport& r, OpClass c) {
  for (const ClassDistance& d : r.classes) {
    if (d.op_class == c) return &d;
  }
  return nullptr;
}

TEST(RealismStatsTest, HandBuiltStep) {
  Trace sim, real;
  Build(sim, 3, 2'000, 1);
  Build(real, 1, 4'000, -1);
  auto r = CompareRealism(sim, real);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const RealismReport& rep = r.value();
  // Two kernel names per step; symbols: the step range, cudaLaunchKernel, two kernels.
  EXPECT_DOUBLE_EQ(rep.real_steps.kernel_names, 2);
  EXPECT_DOUBLE_EQ(rep.real_steps.symbols, 4);
  // 24 kernels per step, 23 gaps, all of gap_ns.
  EXPECT_EQ(rep.real_steps.gaps, 23u);
  EXPECT_EQ(rep.simulated_steps.gaps, 69u);
  EXPECT_NEAR(rep.real_steps.gap_p50_us, 4.0, 1e-9);
  EXPECT_NEAR(rep.simulated_steps.gap_p99_us, 2.0, 1e-9);
  EXPECT_DOUBLE_EQ(rep.real_steps.zero_gap_share, 0);
  // Every gap differs between the sides: the gap distributions are disjoint.
  EXPECT_DOUBLE_EQ(rep.gap_ks, 1.0);
  // Attention alternates 10 and 12 us over 8 layers: mean 11, population std 1.
  const ClassDistance* att = Find(rep, OpClass::kAttention);
  ASSERT_NE(att, nullptr);
  EXPECT_NEAR(att->real_cv, 1.0 / 11.0, 1e-9);
  EXPECT_NEAR(att->simulated_cv, 1.0 / 11.0, 1e-9);
  // The two GEMM slots are constant per layer (20 and 30 us): CV 0, not the 0.2 that
  // pooling both slots would give.
  const ClassDistance* gemm = Find(rep, OpClass::kGemm);
  ASSERT_NE(gemm, nullptr);
  EXPECT_NEAR(gemm->real_cv, 0.0, 1e-12);
  // Variety: three decode steps, one of them with another attention kernel.
  ASSERT_EQ(rep.variety.size(), 1u);
  EXPECT_EQ(rep.variety[0].kind, "decode");
  EXPECT_EQ(rep.variety[0].steps, 3u);
  EXPECT_EQ(rep.variety[0].distinct, 2u);
  EXPECT_NEAR(rep.variety[0].per_100, 200.0 / 3.0, 1e-9);
  // Targets: names and symbols equal (met), gap p50 2 vs 4 us (ratio 2: not met).
  bool saw_names = false, saw_gap = false;
  for (const RealismTarget& t : rep.targets) {
    if (t.statistic == "kernel names per step") {
      saw_names = true;
      EXPECT_TRUE(t.met);
    }
    if (t.statistic == "gap p50") {
      saw_gap = true;
      EXPECT_FALSE(t.met);
      EXPECT_NEAR(t.simulated, 2.0, 1e-9);
      EXPECT_NEAR(t.real, 4.0, 1e-9);
    }
  }
  EXPECT_TRUE(saw_names);
  EXPECT_TRUE(saw_gap);
  const std::string json = RealismReportJson(rep, "s", "r");
  EXPECT_NE(json.find("\"variety\":[{\"kind\":\"decode\",\"steps\":3,\"distinct\":2"),
            std::string::npos);
}

TEST(RealismStatsTest, BackToBackGapsMeetTheGapTarget) {
  // 20 ns and 60 ns gaps are both "back to back" (under the 0.1 us floor).
  Trace sim, real;
  Build(sim, 2, 20, -1);
  Build(real, 1, 60, -1);
  auto r = CompareRealism(sim, real);
  ASSERT_TRUE(r.ok());
  for (const RealismTarget& t : r.value().targets) {
    if (t.statistic == "gap p50") {
      EXPECT_TRUE(t.met);
    }
  }
  EXPECT_DOUBLE_EQ(r.value().real_steps.zero_gap_share, 1.0);
}

}  // namespace
}  // namespace teller::eval
