// Tests of the realism report (src/eval/realism.cc): the building blocks on small inputs,
// CompareRealism on hand-built traces and on real traces (tracelens in TELLER_REAL_DATA_DIR),
// and the whole `simulate --compare` run when the simulator works.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "real_data.h"
#include "teller/core/stats.h"
#include "teller/eval/realism.h"
#include "teller/ingest/ingest.h"
#include "teller/sim/sim.h"

namespace teller::eval {
namespace {

// Runs a shell command and returns what it printed on stdout; *rc is its exit status.
std::string Capture(const std::string& cmd, int* rc) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) {
    *rc = -1;
    return out;
  }
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int status = pclose(p);
  *rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

using reconstruct::ClassifyKernelName;
using reconstruct::OpClassName;
using reconstruct::OpClassPattern;

constexpr int64_t kT0 = 1'700'000'000'000'000'000;
using C = OpClass;

std::string Real(const std::string& name) { return real_data::Path("tracelens/" + name); }

TEST(CompareTest, KernelClassesOfRealNames) {
  // Names from docs/serving-notes.md §2.1 and §2.5.
  const std::pair<const char*, C> cases[] = {
      {"void vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, long)", C::kNorm},
      {"_ZN7ck_tile6kentryILi1ENS_13Rmsnorm2dFwdINS_21Rmsnorm2dFwdPipeline", C::kNorm},
      {"aiter::add_rmsnorm_quant_kernel<256, 16, true>", C::kNorm},
      {"triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_0", C::kNorm},
      {"ampere_bf16_s16816gemm_bf16_128x256_ldg8_f2f_stages_64x3_tn", C::kGemm},
      {"nvjet_tst_64x64_64x16_2x1_2cta_v_bz_bias_TNT", C::kGemm},
      {"Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT32x32x256_MI16x16x1", C::kGemm},
      {"bmm_MxE4m3_MxE2m1MxE4m3_Fp32_t128x16x256u2_s3_et64x16_m256x16x32", C::kGemm},
      {"_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1_swiglu", C::kGemm},
      {"void vllm::rotary_embedding_kernel<c10::BFloat16, true>(long const*)", C::kRotary},
      {"void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16, unsigned char, 1>", C::kKvWrite},
      {"store_kvcache<2048l, 4, false, long>", C::kKvWrite},
      {"flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4>>", C::kAttention},
      {"fmhaSm100aKernel_QkvE4m3OBfloat16H64PagedKvCausalP16VarSeqQ128Kv128PersistentContext",
       C::kAttention},
      {"kernel_unified_attention_3d", C::kAttention},
      {"paged_attention_ll4mi_QKV_mfma16_kernel<__hip_bfloat16>", C::kAttention},
      {"paged_attention_ll4mi_reduce_kernel<__hip_bfloat16>", C::kAttentionReduce},
      {"flash_fwd_splitkv_combine_kernel<Flash_fwd_kernel_traits>", C::kAttentionReduce},
      {"reduce_segments", C::kAttentionReduce},
      {"multimem_all_reduce_kernel<c10::BFloat16, 16>", C::kAllReduce},
      {"ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", C::kAllReduce},
      {"void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>", C::kAllReduce},
      {"ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", C::kAllGather},
      {"void vllm::act_and_mul_kernel<c10::BFloat16, &vllm::silu_kernel>", C::kActivation},
      {"sgl_hip::activation::act_and_mul_kernel<silu>", C::kActivation},
      {"moe::dev::routing::routingIndicesHistogramKernel<KernelParams>", C::kMoeRouting},
      {"moe::dev::finalize::finalizeKernelVecLoad<KernelParams>", C::kMoeRouting},
      {"_topk_forward", C::kMoeRouting},
      {"_finalize_matmul_scatter_bf16", C::kMoeRouting},
      {"at::native::reduce_kernel<512, 1, ReduceOp<float, ArgMaxOps<float>>>", C::kSampling},
      {"at::native::sbtopk::gatherTopK<float, unsigned int, 2>", C::kSampling},
      {"at::native::elementwise_kernel<128, 4, direct_copy_kernel_cuda>", C::kCopy},
      {"triton_poi_fused__to_copy_1", C::kCopy},
      {"at::native::vectorized_elementwise_kernel<8, FillFunctor<float>>", C::kElementwise},
      {"vllm::scaled_fp8_quant_kernel_strided<c10::BFloat16>", C::kElementwise},
      {"some_unknown_kernel", C::kOther},
  };
  for (const auto& [name, expected] : cases) {
    EXPECT_EQ(OpClassName(ClassifyKernelName(name)), OpClassName(expected)) << name;
  }
  for (size_t c = 0; c + 1 < reconstruct::kOpClassCount; ++c) {
    if (static_cast<C>(c) != C::kOther) {
      EXPECT_FALSE(OpClassPattern(static_cast<C>(c)).empty());
    }
  }
}

TEST(CompareTest, PeriodAndCyclicEditDistance) {
  const std::vector<C> layer = {C::kNorm,      C::kGemm, C::kRotary,   C::kKvWrite,
                                C::kAttention, C::kGemm, C::kAllReduce};
  std::vector<C> seq = {C::kCopy};  // embedding first, sampler last: noise at the ends
  for (int l = 0; l < 12; ++l) seq.insert(seq.end(), layer.begin(), layer.end());
  seq.push_back(C::kSampling);
  double share = 0;
  EXPECT_EQ(FindPeriod(seq, &share), 7u);
  EXPECT_GT(share, 0.95);
  const std::vector<C> noise = {C::kNorm,     C::kGemm,   C::kCopy, C::kAttention,
                                C::kSampling, C::kRotary, C::kOther};
  EXPECT_EQ(FindPeriod(noise, &share), 0u);
  // Rotations cost nothing; one missing class costs one.
  std::vector<C> rotated(layer.begin() + 3, layer.end());
  rotated.insert(rotated.end(), layer.begin(), layer.begin() + 3);
  EXPECT_EQ(CyclicEditDistance(layer, rotated), 0u);
  std::vector<C> missing = layer;
  missing.erase(missing.begin() + 2);
  EXPECT_EQ(CyclicEditDistance(layer, missing), 1u);
  EXPECT_EQ(CyclicEditDistance({}, layer), 7u);
}

TEST(CompareTest, KsAndWasserstein) {
  std::vector<double> a = {1, 2, 3, 4}, b = {1, 2, 3, 4};
  EXPECT_DOUBLE_EQ(KsStatistic(a, b), 0.0);
  EXPECT_DOUBLE_EQ(Wasserstein1(a, b), 0.0);
  std::vector<double> c = {11, 12, 13, 14};
  EXPECT_DOUBLE_EQ(KsStatistic(a, c), 1.0);
  EXPECT_NEAR(Wasserstein1(a, c), 10.0, 1e-12);  // a shift moves mass by the shift
  std::vector<double> d = {1, 2}, e = {1, 3};
  EXPECT_DOUBLE_EQ(KsStatistic(d, e), 0.5);
  EXPECT_NEAR(Wasserstein1(d, e), 0.5, 1e-12);
  std::vector<double> none;
  EXPECT_TRUE(std::isnan(KsStatistic(a, none)));
}

// A trace of `steps` steps; each holds `layers` layers of the given (name, duration us)
// kernels, launched from the step's thread.
void AddSteps(Trace& t, const std::vector<std::pair<std::string, int>>& layer, int layers,
              int steps, const std::string& kind, double scale) {
  const uint32_t p = t.ProcessIndex("h", 1);
  int64_t now = kT0;
  uint64_t corr = 1;
  for (int s = 0; s < steps; ++s) {
    EventRow step;
    step.type = EventType::kRange;
    step.name = t.strings.Intern("teller.step kind=" + kind + " seq=" + std::to_string(s));
    step.process = p;
    step.thread = 1;
    step.start_ns = now;
    const size_t row = t.events.Append(step);
    int64_t gpu = now + 10'000;
    for (int l = 0; l < layers; ++l) {
      for (const auto& [name, us] : layer) {
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
        k.start_ns = gpu;
        k.end_ns = gpu += static_cast<int64_t>(us * 1000 * scale);
        k.correlation = corr++;
        t.events.Append(k);
      }
    }
    now = std::max(now, gpu) + 5'000;
    t.events.end_ns[row] = now;
  }
}

const std::vector<std::pair<std::string, int>> kLayer = {
    {"vllm::fused_add_rms_norm_kernel", 5},
    {"sm90_xmma_gemm_qkv", 20},
    {"vllm::rotary_embedding_kernel", 3},
    {"vllm::reshape_and_cache_flash_kernel", 4},
    {"flash_fwd_splitkv_kernel", 40},
    {"sm90_xmma_gemm_o", 15},
    {"cross_device_reduce_1stage", 8},
    {"vllm::fused_add_rms_norm_kernel", 5},
    {"sm90_xmma_gemm_up", 50},
    {"vllm::act_and_mul_kernel", 6},
    {"sm90_xmma_gemm_down", 30},
    {"cross_device_reduce_1stage", 8}};

TEST(CompareTest, HandBuiltTraces) {
  Trace a, b, c;
  AddSteps(a, kLayer, 6, 4, "decode", 1.0);
  AddSteps(b, kLayer, 8, 3, "decode", 1.0);  // another model depth: same layer
  auto same = CompareRealism(a, b);
  ASSERT_TRUE(same.ok()) << same.status().message();
  EXPECT_TRUE(same->simulated_layer.found);
  EXPECT_EQ(same->simulated_layer.period, 12u);
  EXPECT_EQ(same->real_layer.layers, 8u);
  EXPECT_DOUBLE_EQ(same->layer_agreement, 1.0);
  EXPECT_NEAR(same->step_mix_overlap, 1.0, 1e-9);
  EXPECT_EQ(same->step_kind_filter, "decode");
  EXPECT_EQ(OpClassName(same->simulated_layer.classes.front()), "norm");
  for (const ClassDistance& d : same->classes)
    EXPECT_DOUBLE_EQ(d.ks, 0.0) << OpClassName(d.op_class);
  // No all-reduce (TP 1) and everything twice as slow.
  std::vector<std::pair<std::string, int>> tp1;
  for (const auto& k : kLayer) {
    if (k.first.find("reduce") == std::string::npos) tp1.push_back(k);
  }
  AddSteps(c, tp1, 6, 4, "decode", 2.0);
  auto diff = CompareRealism(a, c);
  ASSERT_TRUE(diff.ok());
  EXPECT_EQ(diff->layer_edit_distance, 2u);
  EXPECT_NEAR(diff->layer_agreement, 1.0 - 2.0 / 12.0, 1e-12);
  EXPECT_LT(diff->step_mix_overlap, 0.9);
  for (const ClassDistance& d : diff->classes) {
    if (d.op_class == C::kAllReduce) {
      EXPECT_EQ(d.real_count, 0u);
      EXPECT_TRUE(std::isnan(d.ks));
    } else {
      // Every duration doubled: the GEMMs (15, 20, 30, 50 us -> 30, 40, 60, 100 us)
      // overlap, the other classes have one duration each.
      EXPECT_DOUBLE_EQ(d.ks, d.op_class == C::kGemm ? 0.5 : 1.0) << OpClassName(d.op_class);
      EXPECT_NEAR(d.w1_log10, std::log10(2.0), 1e-9) << OpClassName(d.op_class);
    }
  }
  const std::string json = RealismReportJson(diff.value(), "a", "c");
  EXPECT_NE(json.find("\"format\":\"teller-realism\""), std::string::npos);
  EXPECT_NE(json.find("\"ks\":null"), std::string::npos);
  const std::string text = RealismReportText(diff.value(), "a", "c");
  EXPECT_NE(text.find("layer agreement: 0.833"), std::string::npos) << text;
}

TEST(CompareTest, ErrorsOnTracesWithoutGpuWork) {
  Trace empty, a;
  AddSteps(a, kLayer, 4, 1, "decode", 1.0);
  EXPECT_FALSE(CompareRealism(empty, a).ok());
  auto r = CompareRealism(a, empty);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("real trace has no GPU work"), std::string::npos);
}

void Load(const std::string& path, Trace& t) {
  const Status s = ingest::ImportPath(path, t);
  EXPECT_TRUE(s.ok()) << s.message();
}

// A real trace against itself is the same in every respect; against a copy whose GPU
// work all takes twice as long, the structure and the mix are the same and every class's
// durations are shifted by log10(2) in log space, which is its W1 distance.
TEST(CompareRealTest, ARealTraceAgainstItself) {
  for (const char* name :
       {"b200__eager_trace.json.gz", "inference__vllm_decode_full__graph_execution.json.gz",
        "inference__sglang_decode__sglang_Qwen3-8B_decode.json.gz"}) {
    SCOPED_TRACE(name);
    TELLER_REQUIRE_REAL_DATA("tracelens/" + std::string(name));
    const std::string path = Real(name);
    Trace t, slow;
    Load(path, t);
    Load(path, slow);
    for (size_t i = 0; i < slow.events.size(); ++i) {
      if (IsGpuWork(slow.events.type[i]))
        slow.events.end_ns[i] += slow.events.end_ns[i] - slow.events.start_ns[i];
    }
    auto r = CompareRealism(t, t);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_TRUE(r->real_layer.found);
    EXPECT_DOUBLE_EQ(r->layer_agreement, 1.0);
    EXPECT_NEAR(r->step_mix_overlap, 1.0, 1e-9);
    ASSERT_FALSE(r->classes.empty());
    for (const ClassDistance& d : r->classes) {
      EXPECT_DOUBLE_EQ(d.ks, 0.0) << OpClassName(d.op_class);
      EXPECT_DOUBLE_EQ(d.w1_log10, 0.0) << OpClassName(d.op_class);
      EXPECT_EQ(d.simulated_count, d.real_count) << OpClassName(d.op_class);
    }
    auto twice = CompareRealism(slow, t);
    ASSERT_TRUE(twice.ok()) << twice.status().message();
    EXPECT_EQ(twice->simulated_layer.classes, r->real_layer.classes);
    EXPECT_EQ(twice->simulated_layer.period, r->real_layer.period);
    EXPECT_DOUBLE_EQ(twice->layer_agreement, 1.0);
    EXPECT_NEAR(twice->step_mix_overlap, 1.0, 1e-9);
    ASSERT_EQ(twice->classes.size(), r->classes.size());
    for (const ClassDistance& d : twice->classes) {
      SCOPED_TRACE(OpClassName(d.op_class));
      EXPECT_EQ(d.simulated_count, d.real_count);
      EXPECT_NEAR(d.simulated_median_us, 2 * d.real_median_us, 1e-9 * d.real_median_us);
      EXPECT_NEAR(d.w1_log10, std::log10(2.0), 1e-9);
      EXPECT_GT(d.ks, 0.0);
    }
  }
}

TEST(CompareRealTest, LayersOfTheMeasuredTraces) {
  // docs/serving-notes.md §2.5: SGLang decode, 15 kernels x 36 layers; vLLM FULL graph of
  // gpt-oss-20b, 24 layers; b200 prefill, one layer of gpt-oss-120b per period.
  const std::string sglang = Real("inference__sglang_decode__sglang_Qwen3-8B_decode.json.gz");
  const std::string b200 = Real("b200__eager_trace.json.gz");
  TELLER_REQUIRE_REAL_DATA("tracelens/inference__sglang_decode__sglang_Qwen3-8B_decode.json.gz");
  TELLER_REQUIRE_REAL_DATA("tracelens/b200__eager_trace.json.gz");
  Trace s, b;
  Load(sglang, s);
  Load(b200, b);
  auto r = CompareRealism(b, s);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->real_layer.period, 15u);
  EXPECT_GE(r->real_layer.layers, 36u);
  EXPECT_EQ(r->real.dominant_kind, "decode");
  EXPECT_EQ(r->simulated.dominant_kind, "prefill");
  EXPECT_EQ(r->step_kind_filter, "");  // the b200 prefill trace has no decode steps
  // A MoE prefill on B200 and a dense decode on MI300X differ in structure and timing.
  EXPECT_LT(r->layer_agreement, 0.9);
  EXPECT_LT(r->step_mix_overlap, 0.9);
  double max_ks = 0;
  for (const ClassDistance& d : r->classes) {
    if (!std::isnan(d.ks)) max_ks = std::max(max_ks, d.ks);
  }
  EXPECT_GT(max_ks, 0.3);
}

// `simulate --compare`: the report printed is the one of the same simulation compared
// by hand (Simulate, import, CompareRealism), with the request count capped at
// kCompareRequests and labels naming both sides; a missing real trace is an error naming it.
TEST(CompareRealTest, RunAgainstTheSimulator) {
  TELLER_REQUIRE_REAL_DATA("tracelens/inference__sglang_decode__sglang_Qwen3-8B_decode.json.gz");
  const std::string sglang = Real("inference__sglang_decode__sglang_Qwen3-8B_decode.json.gz");
  sim::SimConfig config;
  config.profile = "sglang";
  config.nodes = config.gpus_per_node = config.tp = config.pp = 1;
  config.requests = 40;
  config.seed = 7;
  // `teller simulate --compare` (src/cli/realism_compare.cc) with the same configuration.
  const std::string cmd = std::string(TELLER_BIN) +
                          " simulate --profile sglang --nodes 1 --gpus-per-node 1 --tp 1 --pp 1"
                          " --requests 40 --seed 7 --compare ";
  int rc = 0;
  const std::string printed = Capture(cmd + "'" + sglang + "' --json", &rc);
  ASSERT_EQ(rc, 0);

  char tmpl[] = "/tmp/teller-compare-test-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  sim::SimConfig small = config;
  small.requests = 16;  // the cap of --compare (src/cli/commands.h, kCompareRequests)
  ASSERT_TRUE(sim::Simulate(small, dir + "/sim").ok());
  Trace simulated, real;
  Load(dir + "/sim", simulated);
  Load(sglang, real);
  std::system(("rm -rf '" + dir + "'").c_str());
  auto report = CompareRealism(simulated, real);
  ASSERT_TRUE(report.ok()) << report.status().message();
  const std::string expected = RealismReportJson(
      report.value(), "sglang, 16 requests, seed 7, tp 1 pp 1 (1 node(s) x 1 GPU)",
      "inference__sglang_decode__sglang_Qwen3-8B_decode.json.gz");
  EXPECT_EQ(printed, expected);
  // The real side is the measured SGLang decode (docs/serving-notes.md §2.5: 15 kernels a
  // layer), the simulated one an SGLang deployment: both decode-dominated.
  EXPECT_EQ(report->real_layer.period, 15u);
  EXPECT_EQ(report->real.dominant_kind, "decode");
  EXPECT_EQ(report->simulated.dominant_kind, "decode");

  const std::string error = Capture(cmd + "'" + Real("no_such_file.json") + "' 2>&1", &rc);
  EXPECT_EQ(rc, 1);
  EXPECT_EQ(error.rfind("teller simulate --compare: ", 0), 0u) << error;
  EXPECT_NE(error.find(Real("no_such_file.json")), std::string::npos) << error;
}

}  // namespace
}  // namespace teller::eval
