// The host stack (src/sim/host_stack.cc, --host-stack): recipe parsing, the module
// ranges numbered per class, the aten nesting down to the launch calls, and the CPU-bound
// regime it produces at small batches.
#include "src/sim/host_stack.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "real_data.h"
#include "teller/eval/realism.h"
#include "teller/ingest/ingest.h"
#include "teller/sim/sim.h"

namespace teller::sim {
namespace {

std::string TempDir(const std::string& tag) {
  static int counter = 0;
  const std::string dir = "/tmp/teller-host-stack-" + std::to_string(getpid()) + "-" + tag + "-" +
                          std::to_string(counter++);
  EXPECT_EQ(std::system(("rm -rf '" + dir + "'").c_str()), 0);
  return dir;
}

TEST(HostRecipe, ParsesNestingLaunchAndOperatorMarks) {
  const std::vector<HostNode> n =
      ParseRecipe("f.py(1): g[*[aten::t[aten::as_strided];@]];aten::view");
  ASSERT_EQ(n.size(), 2u);
  EXPECT_EQ(n[0].name, "f.py(1): g");
  ASSERT_EQ(n[0].children.size(), 1u);
  const HostNode& op = n[0].children[0];
  EXPECT_TRUE(op.op);
  ASSERT_EQ(op.children.size(), 2u);
  EXPECT_EQ(op.children[0].name, "aten::t");
  ASSERT_EQ(op.children[0].children.size(), 1u);
  EXPECT_EQ(op.children[0].children[0].name, "aten::as_strided");
  EXPECT_TRUE(op.children[1].launch);
  EXPECT_EQ(n[1].name, "aten::view");
  // Without '*' the operator range wraps everything; without '@' the launch goes last
  // inside the operator.
  const std::vector<HostNode> bare = ParseRecipe("aten::empty");
  ASSERT_EQ(bare.size(), 1u);
  EXPECT_TRUE(bare[0].op);
  ASSERT_EQ(bare[0].children.size(), 2u);
  EXPECT_EQ(bare[0].children[0].name, "aten::empty");
  EXPECT_TRUE(bare[0].children[1].launch);
}

TEST(HostRecipe, CostsComeFromTheFittedTables) {
  const EngineProfile& vllm = *FindProfile("vllm-v1-online");
  const EngineProfile& hf = *FindProfile("torch-fsdp");
  // b200 trace: aten::addmm self p50 50.55 us; H100 HF trace: aten::mm 26.61 us.
  EXPECT_DOUBLE_EQ(HostCostOf(vllm, "aten::addmm").median_us, 50.55);
  EXPECT_DOUBLE_EQ(HostCostOf(hf, "aten::mm").median_us, 26.61);
  // Groups by name form.
  EXPECT_DOUBLE_EQ(HostCostOf(vllm, "nn.Module: RMSNorm_3").median_us, 1.22);
  EXPECT_DOUBLE_EQ(HostCostOf(hf, "torch/nn/modules/module.py(1743): _call_impl").median_us, 2.75);
  EXPECT_EQ(ModuleClass("Linear#q"), "Linear");
  EXPECT_EQ(ModuleClass("RMSNorm"), "RMSNorm");
  // Every profile's operators have a module path of their own op list's size or none.
  for (const char* name : kProfiles) {
    const EngineProfile& p = *FindProfile(name);
    EXPECT_FALSE(p.layer_class.empty()) << name;
    EXPECT_FALSE(p.model_classes.empty()) << name;
    for (const OpSpec& op : p.layer_prefill) {
      const HostOp h = HostOpFor(p, op);
      EXPECT_FALSE(h.tree.empty()) << name << " " << op.range;
    }
  }
}

struct Stepped {
  Trace trace;
  bool ok = false;
};

// Simulates into a temporary directory and imports the result into `out`.
void SimulateInto(const SimConfig& c, const std::string& tag, Stepped* out) {
  const std::string dir = TempDir(tag);
  auto r = Simulate(c, dir);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.status().message());
  out->ok = r.ok() && ingest::ImportPath(dir, out->trace).ok();
  std::system(("rm -rf '" + dir + "'").c_str());
}

SimConfig OneGpu(const std::string& profile, int requests) {
  SimConfig c;
  c.profile = profile;
  c.nodes = 1, c.gpus_per_node = 1, c.tp = 1, c.pp = 1;
  c.requests = requests;
  c.layers = 4;
  c.output_median = 6;
  c.host_stack = true;
  return c;
}

// Host ranges of a trace: name, thread, interval.
struct Range {
  std::string name;
  uint32_t thread;
  int64_t start, end;
};
// The raw import keeps NVTX pushes and pops; pair them per thread in time order (ties in
// emission order).
std::vector<Range> Ranges(const Trace& t) {
  const EventTable& ev = t.events;
  std::vector<uint32_t> idx;
  for (uint32_t i = 0; i < ev.size(); ++i) {
    if (ev.type[i] == EventType::kPush || ev.type[i] == EventType::kPop) idx.push_back(i);
  }
  std::stable_sort(idx.begin(), idx.end(),
                   [&](uint32_t a, uint32_t b) { return ev.start_ns[a] < ev.start_ns[b]; });
  std::vector<Range> out;
  std::map<uint32_t, std::vector<uint32_t>> open;
  for (uint32_t i : idx) {
    auto& stack = open[ev.thread[i]];
    if (ev.type[i] == EventType::kPush) {
      stack.push_back(i);
    } else if (!stack.empty()) {
      const uint32_t p = stack.back();
      stack.pop_back();
      out.push_back(
          {std::string(t.strings.Get(ev.name[p])), ev.thread[p], ev.start_ns[p], ev.start_ns[i]});
    }
  }
  return out;
}

TEST(HostStack, ModulesAreNumberedPerClassAsKinetoNamesThem) {
  // torch-fsdp (HF Llama), 4 layers, one GPU: every step is eager.
  Stepped s;
  SimulateInto(OneGpu("torch-fsdp", 2), "modules", &s);
  ASSERT_TRUE(s.ok);
  std::set<std::string> modules;
  for (const Range& r : Ranges(s.trace)) {
    if (r.name.rfind("nn.Module: ", 0) == 0) modules.insert(r.name.substr(11));
  }
  // Per layer: the layer, 2 RMSNorms, attention, 7 Linears (q k v o gate up down), MLP,
  // SiLU; around them the model, its base model, the embedding, the final norm and
  // lm_head (the 29th Linear).
  std::set<std::string> want = {"LlamaForCausalLM_0", "LlamaModel_0", "Embedding_0"};
  for (int l = 0; l < 4; ++l) {
    for (const char* c : {"LlamaDecoderLayer_", "LlamaAttention_", "LlamaMLP_", "SiLU_"})
      want.insert(c + std::to_string(l));
  }
  for (int i = 0; i < 9; ++i) want.insert("LlamaRMSNorm_" + std::to_string(i));
  for (int i = 0; i < 29; ++i) want.insert("Linear_" + std::to_string(i));
  EXPECT_EQ(modules, want);
}

TEST(HostStack, LaunchesSitUnderTheAtenDecomposition) {
  Stepped s;
  SimulateInto(OneGpu("torch-fsdp", 2), "nesting", &s);
  ASSERT_TRUE(s.ok);
  const std::vector<Range> ranges = Ranges(s.trace);
  const EventTable& ev = s.trace.events;
  // The kernel name of each correlation id.
  std::map<uint64_t, std::string> kernel;
  for (uint32_t i = 0; i < ev.size(); ++i) {
    if (ev.type[i] == EventType::kKernel)
      kernel[ev.correlation[i]] = std::string(s.trace.strings.Get(ev.name[i]));
  }
  size_t gemms = 0, under_mm = 0;
  for (uint32_t i = 0; i < ev.size(); ++i) {
    if (!IsHostCall(ev.type[i])) continue;
    const auto k = kernel.find(ev.correlation[i]);
    if (k == kernel.end() || k->second.find("xmma_gemm") == std::string::npos) continue;
    ++gemms;
    // The innermost range holding the launch, and whether aten::linear and a Linear
    // module hold it too.
    const Range* inner = nullptr;
    bool linear = false, module = false;
    for (const Range& r : ranges) {
      if (r.thread != ev.thread[i] || r.start > ev.start_ns[i] || r.end < ev.end_ns[i]) continue;
      if (inner == nullptr || r.start >= inner->start) inner = &r;
      linear |= r.name == "aten::linear";
      module |= r.name.rfind("nn.Module: Linear_", 0) == 0;
    }
    if (inner != nullptr && inner->name == "aten::mm" && linear && module) ++under_mm;
  }
  ASSERT_GT(gemms, 0u);
  EXPECT_EQ(under_mm, gemms);  // every GEMM launch: Linear > aten::linear > ... > aten::mm
}

TEST(HostStack, SmallBatchesAreCpuBoundAndSymbolsGrow) {
  // One request of a small model: the GPU kernels take a few us, the host's op stack
  // tens: the kernels wait for their launches.
  SimConfig c = OneGpu("torch-fsdp", 1);
  c.realistic_timing = true;
  const std::string off_dir = TempDir("cpu-off"), on_dir = TempDir("cpu-on");
  SimConfig off = c;
  off.host_stack = false;
  ASSERT_TRUE(Simulate(off, off_dir).ok());
  ASSERT_TRUE(Simulate(c, on_dir).ok());
  Trace t_off, t_on;
  ASSERT_TRUE(ingest::ImportPath(off_dir, t_off).ok());
  ASSERT_TRUE(ingest::ImportPath(on_dir, t_on).ok());
  std::system(("rm -rf '" + off_dir + "' '" + on_dir + "'").c_str());
  auto r_off = eval::CompareRealism(t_off, t_off);
  auto r_on = eval::CompareRealism(t_on, t_on);
  ASSERT_TRUE(r_off.ok() && r_on.ok());
  // Between two elementwise kernels the host runs at least an aten op (HF aten::mul p50
  // 5.4 us) and its launch (cudaLaunchKernel 3.2 us): gaps of several us, against the
  // eager fit's 1.4 us without the stack.
  EXPECT_LT(r_off.value().simulated_steps.gap_p50_us, 3.0);
  EXPECT_GT(r_on.value().simulated_steps.gap_p50_us, 5.0);
  // Symbols: the 57 module names of the test above (and their frames) on top.
  EXPECT_GE(r_on.value().simulated_steps.symbols, r_off.value().simulated_steps.symbols + 57);
}

TEST(HostStack, GraphDecodeKeepsOnlyTheGraphLaunch) {
  // vLLM decode steps replay a graph: no module or aten ranges between the step range's
  // start and the graph launch's end, only in the eager prefill and the sampler after it.
  SimConfig c = OneGpu("vllm-v1-online", 2);
  Stepped s;
  SimulateInto(c, "graph", &s);
  ASSERT_TRUE(s.ok);
  const EventTable& ev = s.trace.events;
  size_t graphs = 0, modules_inside = 0;
  std::vector<Range> ranges = Ranges(s.trace);
  for (uint32_t i = 0; i < ev.size(); ++i) {
    if (!IsHostCall(ev.type[i]) || s.trace.strings.Get(ev.name[i]) != "cudaGraphLaunch") continue;
    ++graphs;
    for (const Range& r : ranges) {
      if (r.thread == ev.thread[i] && r.start <= ev.start_ns[i] && r.end >= ev.end_ns[i] &&
          r.name.rfind("nn.Module: ", 0) == 0)
        ++modules_inside;
    }
  }
  EXPECT_GT(graphs, 0u);
  EXPECT_EQ(modules_inside, 0u);
}

}  // namespace
}  // namespace teller::sim

namespace teller::sim {
namespace {

std::map<std::string, size_t> KernelCounts(const Trace& t) {
  std::map<std::string, size_t> out;
  for (uint32_t i = 0; i < t.events.size(); ++i) {
    if (t.events.type[i] == EventType::kKernel) ++out[std::string(t.strings.Get(t.events.name[i]))];
  }
  return out;
}
size_t CountWith(const std::map<std::string, size_t>& counts, const std::string& part) {
  size_t n = 0;
  for (const auto& [name, c] : counts) {
    if (name.find(part) != std::string::npos) n += c;
  }
  return n;
}

TEST(MoeProfile, ExpertParallelTradesTheAllReduceForAllToAlls) {
  SimConfig c;
  c.profile = "vllm-moe";
  c.nodes = 1, c.gpus_per_node = 2, c.tp = 2, c.pp = 1;
  c.requests = 3, c.layers = 2, c.output_median = 4;
  Stepped tp_experts, ep_experts;
  SimulateInto(c, "moe-tp", &tp_experts);
  c.expert_parallel = true;
  SimulateInto(c, "moe-ep", &ep_experts);
  ASSERT_TRUE(tp_experts.ok && ep_experts.ok);
  const auto tp = KernelCounts(tp_experts.trace), ep = KernelCounts(ep_experts.trace);
  // Per step and rank: two grouped expert GEMMs per layer (2 layers: 4), the embedding's
  // all-reduce, and per layer the attention all-reduce plus, with TP experts, the MoE
  // all-reduce (5 in all) or, with EP, two all-to-alls instead (3 all-reduces, 4 send/recv).
  const size_t tp_moe = tp.at("fused_moe_kernel"), ep_moe = ep.at("fused_moe_kernel");
  EXPECT_EQ(CountWith(tp, "cross_device_reduce") * 4, tp_moe * 5);
  EXPECT_EQ(CountWith(tp, "ncclDevKernel_SendRecv"), 0u);
  EXPECT_EQ(CountWith(ep, "cross_device_reduce") * 4, ep_moe * 3);
  EXPECT_EQ(CountWith(ep, "ncclDevKernel_SendRecv"), ep_moe);
  // The Hopper path: top-k softmax, the token sort, per-token fp8 quantization (twice),
  // the weighted top-k sum; fp8 KV cache written as bytes after its quantization.
  EXPECT_EQ(CountWith(tp, "topkGatingSoftmax") * 2, tp_moe);
  EXPECT_EQ(CountWith(tp, "moe_align_block_size_kernel") * 2, tp_moe);
  EXPECT_EQ(CountWith(tp, "dynamic_per_token_scaled_fp8_quant_kernel"), tp_moe);
  EXPECT_EQ(CountWith(tp, "moe_sum_kernel") * 2, tp_moe);
  EXPECT_EQ(CountWith(tp, "scaled_fp8_quant_kernel_strided"),
            CountWith(tp, "Fp8KVCacheDataType)1"));
}

TEST(MoeProfile, DeviceNamesFollowTheRealTraces) {
  SimConfig c;
  c.profile = "vllm-moe";
  c.nodes = 1, c.gpus_per_node = 1, c.tp = 1, c.pp = 1;
  c.requests = 2, c.layers = 2, c.output_median = 3;
  c.gpu = "b200";
  Stepped b200, mi300;
  SimulateInto(c, "moe-b200", &b200);
  c.gpu = "mi300";
  SimulateInto(c, "moe-mi300", &mi300);
  ASSERT_TRUE(b200.ok && mi300.ok);
  const auto b = KernelCounts(b200.trace), m = KernelCounts(mi300.trace);
  // B200 (tracelens b200 trace): mxfp8 quantize, three routing kernels, the MxE2m1 bmm
  // pair with the fused SwiGLU, finalize; no Hopper MoE kernel, no separate activation.
  const size_t fc1 = CountWith(b, "bmm_MxE4m3_MxE2m1MxE4m3");
  ASSERT_GT(fc1, 0u);
  EXPECT_EQ(CountWith(b, "bmm_Bfloat16_MxE2m1MxE4m3"), fc1);
  EXPECT_EQ(CountWith(b, "quantize_with_block_size"), fc1);
  EXPECT_EQ(CountWith(b, "moe::dev::routing::"), 3 * fc1);
  EXPECT_EQ(CountWith(b, "finalizeKernelVecLoad"), fc1);
  EXPECT_EQ(CountWith(b, "fused_moe_kernel") + CountWith(b, "topkGatingSoftmax"), 0u);
  // MI300 (tracelens vLLM gpt-oss traces): Triton routing and matmul_ogs.
  const size_t ogs = CountWith(m, "_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1_swiglu");
  ASSERT_GT(ogs, 0u);
  for (const char* k : {"_topk_forward", "_sum_bitmatrix_rows", "_combined_routing_memset",
                        "_combined_routing_compute", "_finalize_matmul_scatter_bf16"})
    EXPECT_EQ(CountWith(m, k), ogs) << k;
}

TEST(HostStack, EagerSymbolsWithinTheTargetOfTheRealExtendTrace) {
  // The realism table's SGLang extend pair (docs/realism.md): with --realistic the
  // simulated eager steps show about as many distinct event names as the real one (931),
  // and the inter-kernel gaps stay those of the real MI300 trace.
  const char* rel =
      "tracelens/inference__sglang_prefilldecode__sglang_Qwen3-8B_prefilldecode.json.gz";
  TELLER_REQUIRE_REAL_DATA(rel);
  SimConfig c;
  c.profile = "sglang";
  c.nodes = 1, c.gpus_per_node = 1, c.tp = 1, c.pp = 1;
  c.requests = 16;
  c.gpu = "mi300";
  c.shape_kernels = c.realistic_timing = c.host_stack = true;
  Stepped sim;
  SimulateInto(c, "extend", &sim);
  ASSERT_TRUE(sim.ok);
  Trace real;
  ASSERT_TRUE(ingest::ImportPath(real_data::Path(rel), real).ok());
  auto rep = eval::CompareRealism(sim.trace, real);
  ASSERT_TRUE(rep.ok());
  const double s = rep.value().simulated_steps.symbols, r = rep.value().real_steps.symbols;
  EXPECT_GT(r, 900.0);  // the real step's count (931)
  EXPECT_LE(std::max(s, r) / std::min(s, r), 1.5) << s << " vs " << r;
  EXPECT_LE(rep.value().gap_ks, 0.2);
}

}  // namespace
}  // namespace teller::sim
