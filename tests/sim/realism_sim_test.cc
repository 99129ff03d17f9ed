// The simulator's realism options (src/sim/kernels.cc, executor.cc): kernel choice by
// shape and vendor, one graph per batch-size bucket, timing fitted to real traces, and
// the check that every planted fault acts.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <string>

#include "src/sim/kernels.h"
#include "teller/eval/realism.h"
#include "teller/ingest/ingest.h"
#include "teller/sim/sim.h"

namespace teller::sim {
namespace {

std::string TempDir(const std::string& tag) {
  static int counter = 0;
  const std::string dir = "/tmp/teller-realism-sim-" + std::to_string(getpid()) + "-" + tag + "-" +
                          std::to_string(counter++);
  EXPECT_EQ(std::system(("rm -rf '" + dir + "'").c_str()), 0);
  return dir;
}

const EngineProfile& Vllm() { return *FindProfile("vllm-v1-online"); }

LaunchShape Gemm(double m, double n, double k) {
  LaunchShape s;
  s.m = m, s.n = n, s.k = k;
  return s;
}

TEST(KernelChoice, HopperGemmTilesAndSplitK) {
  const KernelSpec qkv{"x", Cost::kGemmQkv};
  // One row: cuBLAS's GEMV.
  EXPECT_NE(ChooseKernel(Vendor::kHopper, Vllm(), qkv, Gemm(1, 7168, 5120))
                .name.find("internal::gemvx::kernel"),
            std::string::npos);
  // 32 rows, K = 13824 >= 2 N = 10240: split-K, and its reduce kernel.
  const KernelChoice down = ChooseKernel(Vendor::kHopper, Vllm(), qkv, Gemm(32, 5120, 13824));
  EXPECT_EQ(down.name,
            "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x64x64_warpgroupsize1x1x1_"
            "execute_segment_k_on_kernel__5x_cublas");
  EXPECT_NE(down.reduce.find("splitKreduce_kernel"), std::string::npos);
  // 2048 rows: the large tile, no split.
  const KernelChoice big = ChooseKernel(Vendor::kHopper, Vllm(), qkv, Gemm(2048, 5120, 5120));
  EXPECT_EQ(big.name,
            "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize256x128x64_warpgroupsize4x1x1_"
            "execute_segment_k_off_kernel__5x_cublas");
  EXPECT_TRUE(big.reduce.empty());
}

TEST(KernelChoice, NamesOfTheRealTraces) {
  // B200 lm_head of one sequence (tracelens b200 eager trace): nvjet_tst_192x8_64x8_4x1_v_bz_TNT.
  const KernelSpec head{"x", Cost::kLmHead};
  EXPECT_EQ(ChooseKernel(Vendor::kBlackwell, Vllm(), head, Gemm(1, 25136, 2880)).name,
            "nvjet_tst_192x8_64x8_4x1_v_bz_TNT");
  // MI300 decode at batch 32: gate_up (N = 2 x 12288) is MT256x32x64 and o_proj
  // (4096 x 4096) MT32x32x256 in the SGLang Qwen3-8B and vLLM decode traces.
  const KernelSpec up{"x", Cost::kGemmUp};
  EXPECT_EQ(
      ChooseKernel(Vendor::kMi300, Vllm(), up, Gemm(32, 24576, 4096))
          .name.rfind("Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT256x32x64_MI16x16x1_", 0),
      0u);
  EXPECT_EQ(
      ChooseKernel(Vendor::kMi300, Vllm(), up, Gemm(32, 4096, 4096))
          .name.rfind("Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT32x32x256_MI16x16x1_", 0),
      0u);
}

TEST(KernelChoice, KvSplitsAndTheirCombineKernel) {
  const EngineProfile& p = Vllm();
  KernelSpec combine;
  for (const OpSpec& op : p.layer_decode) {
    for (const KernelSpec& k : op.kernels) {
      if (k.cost == Cost::kAttentionReduce) combine = k;
    }
  }
  ASSERT_EQ(combine.cost, Cost::kAttentionReduce);
  LaunchShape s;
  s.q_heads = 40, s.ctx_per_seq = 2048;
  // One sequence x 40 heads = 40 CTAs on 132 SMs: ceil(132 / 40) = 4 splits (under the
  // 8 that 2048 tokens allow): log2 = 2 in the combine kernel's template.
  s.seqs = 1;
  const KernelChoice one = ChooseKernel(Vendor::kHopper, p, combine, s);
  EXPECT_FALSE(one.skip);
  EXPECT_NE(one.name.find(">, 4, 2, false>"), std::string::npos) << one.name;
  // 32 sequences fill the SMs: no split, no combine kernel.
  s.seqs = 32;
  EXPECT_TRUE(ChooseKernel(Vendor::kHopper, p, combine, s).skip);
  // MI300 (vLLM's Triton unified attention): split = 3-D kernel plus reduce_segments.
  s.seqs = 1;
  EXPECT_EQ(ChooseKernel(Vendor::kMi300, p, combine, s).name, "reduce_segments");
}

TEST(KernelChoice, GraphBucketsAndSpelling) {
  const int in[] = {1, 2, 3, 4, 5, 8, 9, 17, 600};
  const int want[] = {1, 2, 4, 4, 8, 8, 16, 24, 512};
  for (size_t i = 0; i < sizeof in / sizeof in[0]; ++i) EXPECT_EQ(GraphBucket(in[i]), want[i]);
  EXPECT_EQ(VendorSpelling(Vendor::kMi300, "f<__nv_bfloat16, __nv_bfloat16>"),
            "f<__hip_bfloat16, __hip_bfloat16>");
  EXPECT_EQ(VendorSpelling(Vendor::kHopper, "f<__nv_bfloat16>"), "f<__nv_bfloat16>");
  Vendor v;
  EXPECT_TRUE(ParseVendor("b200", &v));
  EXPECT_EQ(v, Vendor::kBlackwell);
  EXPECT_FALSE(ParseVendor("a100", &v));
}

// Simulates a one-node run and compares it with itself (the simulated side's statistics).
eval::RealismReport SelfReport(SimConfig c, const std::string& tag) {
  const std::string dir = TempDir(tag);
  auto r = Simulate(c, dir);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.status().message());
  Trace t;
  EXPECT_TRUE(ingest::ImportPath(dir, t).ok());
  auto rep = eval::CompareRealism(t, t);
  EXPECT_TRUE(rep.ok());
  std::system(("rm -rf '" + dir + "'").c_str());
  return rep.ok() ? rep.value() : eval::RealismReport{};
}

SimConfig OneGpu(const std::string& profile) {
  SimConfig c;
  c.profile = profile;
  c.nodes = 1, c.gpus_per_node = 1, c.tp = 1, c.pp = 1;
  c.requests = 16;
  c.layers = 8;
  c.output_median = 24;
  return c;
}

uint64_t Distinct(const eval::RealismReport& r, const std::string& kind) {
  for (const auto& v : r.variety) {
    if (v.kind == kind) return v.distinct;
  }
  return 0;
}

TEST(SimRealism, ShapeKernelsVaryTheSteps) {
  SimConfig c = OneGpu("vllm-v1-online");
  const eval::RealismReport fixed = SelfReport(c, "fixed");
  EXPECT_EQ(Distinct(fixed, "decode"), 1u);  // every decode step the same
  c.shape_kernels = true;
  const eval::RealismReport shaped = SelfReport(c, "shaped");
  // Batch sizes 1..16 fall in graph buckets 1, 2, 4, 8, 16 with their own kernels.
  EXPECT_GE(Distinct(shaped, "decode"), 2u);
}

TEST(SimRealism, RealisticTimingHasGapsAndSharedNoise) {
  SimConfig c = OneGpu("vllm-v0");
  c.prompt_median = 1024, c.output_median = 2;  // mostly prefill: eager steps
  const eval::RealismReport off = SelfReport(c, "gaps-off");
  c.realistic_timing = true;
  const eval::RealismReport on = SelfReport(c, "gaps-on");
  // Prefill steps (the dominant kind here) are eager: back to back without the option,
  // about 1.4 us apart (the H100 fit) with it.
  EXPECT_LT(off.simulated_steps.gap_p50_us, 0.05);
  EXPECT_GT(on.simulated_steps.gap_p50_us, 0.9);
  EXPECT_LT(on.simulated_steps.gap_p50_us, 2.0);
  EXPECT_GT(on.simulated_steps.gap_p99_us, 3.0 * on.simulated_steps.gap_p50_us);  // heavy tail

  // Three TP ranks: noise mostly shared, so the healthy all-reduce waits shrink.
  SimConfig tp = OneGpu("vllm-v1-online");
  tp.gpus_per_node = 3, tp.tp = 3;
  auto allreduce_cv = [](const eval::RealismReport& r) {
    for (const auto& d : r.classes) {
      if (d.op_class == reconstruct::OpClass::kAllReduce) return d.simulated_cv;
    }
    return std::nan("");
  };
  const double cv_off = allreduce_cv(SelfReport(tp, "tp-off"));
  tp.realistic_timing = true;
  const double cv_on = allreduce_cv(SelfReport(tp, "tp-on"));
  ASSERT_FALSE(std::isnan(cv_off));
  ASSERT_FALSE(std::isnan(cv_on));
  EXPECT_LT(cv_on, 0.8 * cv_off) << cv_on << " vs " << cv_off;
}

TEST(SimRealism, BlackwellAllReduceIsWrappedInDeviceCopies) {
  SimConfig c = OneGpu("vllm-v1-online");
  c.gpus_per_node = 2, c.tp = 2;
  c.requests = 4;
  c.gpu = "b200";
  const std::string dir = TempDir("b200");
  ASSERT_TRUE(Simulate(c, dir).ok());
  Trace t;
  ASSERT_TRUE(ingest::ImportPath(dir, t).ok());
  size_t multimem = 0, dtod = 0, cross_device = 0, nvjet = 0;
  for (uint32_t i = 0; i < t.events.size(); ++i) {
    const std::string_view name = t.strings.Get(t.events.name[i]);
    if (t.events.type[i] == EventType::kKernel) {
      multimem += name.find("multimem_all_reduce_kernel") != std::string_view::npos;
      cross_device += name.find("cross_device_reduce") != std::string_view::npos;
      nvjet += name.rfind("nvjet_tst_", 0) == 0;
    } else if (t.events.type[i] == EventType::kMemcpy) {
      dtod += name.find("DtoD") != std::string_view::npos;
    }
  }
  EXPECT_GT(multimem, 0u);
  EXPECT_EQ(dtod, 2 * multimem);  // one copy in, one out, per all-reduce
  EXPECT_EQ(cross_device, 0u);
  EXPECT_GT(nvjet, 0u);  // Blackwell GEMM names
  std::system(("rm -rf '" + dir + "'").c_str());
}

TEST(SimRealism, APlantedFaultThatNeverActsIsReported) {
  SimConfig c = OneGpu("vllm-v1-online");
  c.gpus_per_node = 2, c.tp = 2;
  FaultSpec f;
  f.mechanism = Mechanism::kSlowLink;  // one node: no cross-node transfer to slow
  c.faults.push_back(f);
  const std::string dir = TempDir("silent");
  auto r = Simulate(c, dir);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_NE(r.value().silent_faults.find("0 slow_link acted on no step"), std::string::npos)
      << r.value().silent_faults;
  std::system(("rm -rf '" + dir + "'").c_str());
  // A fault that acts leaves the summary clean.
  c.faults[0].mechanism = Mechanism::kKernelThrottle;
  const std::string dir2 = TempDir("acting");
  auto ok = Simulate(c, dir2);
  ASSERT_TRUE(ok.ok());
  EXPECT_TRUE(ok.value().silent_faults.empty()) << ok.value().silent_faults;
  std::system(("rm -rf '" + dir2 + "'").c_str());
}

TEST(SimRealism, PlacedFaultsAreResampledUntilTheyAct) {
  // A starvation fault anchored to one request arrival with a span of one: with
  // --random-faults-style placement the simulator widens its window until it acts.
  SimConfig c = OneGpu("vllm-v1-online");
  c.requests = 12;
  FaultSpec f;
  f.mechanism = Mechanism::kKvPressure;
  f.onset_request = 11;  // the last arrival: little left to preempt
  f.span_requests = 1;
  f.magnitude = 0.05;
  c.faults.push_back(f);
  const std::string dir = TempDir("resample");
  auto r = Simulate(c, dir);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r.value().silent_faults.empty());
  EXPECT_GT(r.value().faulty_requests, 0u);
  std::system(("rm -rf '" + dir + "'").c_str());
}

}  // namespace
}  // namespace teller::sim
