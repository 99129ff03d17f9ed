// The framework op stack (host_stack.h): recipes per operator and engine, the module
// frames, and the CPU self times fitted to the real traces.
//
// The recipes follow the nesting the tracelens Kineto traces record (bench/sim/
// fit_host_ops.py prints the statistics; `python3 bench/sim/fit_host_ops.py` on the
// real-trace set): vLLM from b200__eager_trace (vLLM V1 eager, gpt-oss-120b, TP8), HF
// transformers from h100__Qwen_Qwen1.5-0.5B-Chat, SGLang from
// inference__sglang_prefilldecode__sglang_Qwen3-8B. File and function names of the frames
// are the ones those traces show where the engine's code path is the same; line numbers of
// frames the traces do not contain are illustrative.
#include "src/sim/host_stack.h"

#include <cstring>

namespace teller::sim {
namespace {

size_t ParseNodes(std::string_view s, size_t i, std::vector<HostNode>* out) {
  while (i < s.size()) {
    const size_t start = i;
    while (i < s.size() && s[i] != '[' && s[i] != ']' && s[i] != ';') ++i;
    HostNode node;
    std::string_view name = s.substr(start, i - start);
    while (!name.empty() && name.front() == ' ') name.remove_prefix(1);
    while (!name.empty() && name.back() == ' ') name.remove_suffix(1);
    if (name == "@") {
      node.launch = true;
    } else if (name == "*") {
      node.op = true;
    } else {
      node.name = std::string(name);
    }
    if (i < s.size() && s[i] == '[') {
      i = ParseNodes(s, i + 1, &node.children);
      if (i < s.size() && s[i] == ']') ++i;
    }
    if (!name.empty()) out->push_back(std::move(node));
    if (i < s.size() && s[i] == ';') {
      ++i;
      continue;
    }
    if (i < s.size() && s[i] == ']') return i;
  }
  return i;
}

bool Contains(const std::vector<HostNode>& nodes, bool HostNode::*flag) {
  for (const HostNode& n : nodes) {
    if (n.*flag || Contains(n.children, flag)) return true;
  }
  return false;
}

HostNode* FindOp(std::vector<HostNode>& nodes) {
  for (HostNode& n : nodes) {
    if (n.op) return &n;
    if (HostNode* c = FindOp(n.children)) return c;
  }
  return nullptr;
}

struct Recipe {
  const char* range;  // OpSpec::range ("" = any)
  int cost;           // Cost as int, -1 = any
  const char* tree;
};

// vLLM V1 eager on CUDA (b200__eager_trace: the RMSNorm, QKVParallelLinear, rotary,
// Attention and RowParallelLinear + all-reduce subtrees of TransformerBlock_3).
constexpr Recipe kVllm[] = {
    {"aten::linear", -1,
     "vllm/model_executor/layers/linear.py(234): apply[vllm/model_executor/layers/utils.py(245): "
     "dispatch_unquantized_gemm[vllm/platforms/interface.py(153): is_rocm];"
     "vllm/model_executor/layers/utils.py(99): default_unquantized_gemm["
     "vllm/model_executor/parameter.py(122): __torch_function__["
     "*[aten::t[aten::transpose[aten::as_strided]];aten::addmm[@]]]]]"},
    {"_C::fused_add_rms_norm", -1,
     "vllm/model_executor/layers/layernorm.py(194): forward_cuda["
     "vllm/model_executor/layers/layernorm.py(35): fused_add_rms_norm["
     "vllm/model_executor/layers/batch_invariant.py(1003): vllm_is_batch_invariant;"
     "vllm/_custom_ops.py(334): fused_add_rms_norm[torch/_ops.py(1244): __call__[*]]]]"},
    {"_C::rms_norm", -1,
     "vllm/model_executor/layers/layernorm.py(194): forward_cuda[aten::empty_like[aten::empty_"
     "strided];vllm/_custom_ops.py(322): rms_norm[torch/_ops.py(1244): __call__[*]]]"},
    {"_C::rotary_embedding", -1,
     "vllm/model_executor/layers/rotary_embedding/base.py(170): forward_cuda["
     "vllm/model_executor/layers/rotary_embedding/base.py(81): _match_cos_sin_cache_dtype;"
     "vllm/_custom_ops.py(314): rotary_embedding[torch/_ops.py(1244): __call__[*]]]"},
    {"_C_cache_ops::reshape_and_cache_flash", -1,
     "aten::select[aten::as_strided];aten::select[aten::as_strided];"
     "torch/_ops.py(1244): __call__[*]"},
    {"vllm::unified_attention_with_output", -1,
     "aten::empty;aten::view;aten::view;aten::view;torch/_ops.py(1244): __call__[*["
     "vllm/attention/utils/kv_transfer_utils.py(36): wrapper["
     "vllm/attention/layer.py(852): unified_attention_with_output["
     "vllm/attention/layer.py(793): get_attention_context[vllm/forward_context.py(217): "
     "get_forward_context];vllm/v1/attention/backends/flash_attn.py(560): forward["
     "aten::slice[aten::as_strided];aten::slice[aten::as_strided];aten::permute[aten::as_"
     "strided];@]]]]];aten::view"},
    {"vllm::all_reduce", -1,
     "vllm/distributed/communication_op.py(12): tensor_model_parallel_all_reduce["
     "vllm/distributed/parallel_state.py(1075): get_tp_group;"
     "vllm/distributed/parallel_state.py(480): all_reduce[torch/_ops.py(1244): __call__[*["
     "vllm/distributed/parallel_state.py(117): all_reduce["
     "vllm/distributed/parallel_state.py(504): _all_reduce_out_place["
     "vllm/distributed/device_communicators/cuda_communicator.py(126): all_reduce["
     "vllm/distributed/device_communicators/custom_all_reduce.py(233): should_custom_ar;"
     "aten::empty_like[aten::empty_strided];@]]]]]]"},
    {"vllm::all_gather", -1,
     "vllm/model_executor/layers/logits_processor.py(89): _gather_logits["
     "vllm/distributed/communication_op.py(24): tensor_model_parallel_all_gather["
     "torch/_ops.py(1244): __call__[*[aten::empty;c10d::_allgather_base_[@];aten::reshape["
     "aten::view]]]]"},
    {"_C::silu_and_mul", -1,
     "vllm/model_executor/layers/activation.py(84): forward_cuda[aten::empty;"
     "torch/_ops.py(1244): __call__[*]]"},
    {"aten::embedding", -1,
     "vllm/model_executor/layers/vocab_parallel_embedding.py(459): forward["
     "torch/nn/functional.py(2516): embedding[*[aten::reshape[aten::view];aten::index_select[@]"
     ";aten::view]]]"},
    {"aten::softmax", -1, "*[aten::_softmax[@]]"},
    {"aten::argmax", -1, "*[aten::empty;@]"},
    // The MoE block (b200 trace, FusedMoE_3): forward_cuda > forward_native, the
    // configuration look-ups, then the custom op and the quantization method's apply.
    {"_C::static_scaled_fp8_quant", -1,
     "vllm/model_executor/layers/quantization/input_quant_fp8.py(67): "
     "forward_cuda[vllm/_custom_ops.py(1678): scaled_fp8_quant[vllm/platforms/interface.py(544): "
     "fp8_dtype;aten::empty;torch/_ops.py(1244): __call__[*]]]"},
    {"_moe_C::topk_softmax", -1,
     "vllm/model_executor/layers/fused_moe/layer.py(1760): forward_cuda["
     "vllm/model_executor/layers/fused_moe/layer.py(1696): forward_native["
     "vllm/model_executor/layers/fused_moe/layer.py(677): shared_experts;"
     "vllm/model_executor/layers/fused_moe/layer.py(745): use_dp_chunking["
     "vllm/model_executor/layers/fused_moe/config.py(812): use_pplx_kernels["
     "vllm/model_executor/layers/fused_moe/config.py(808): use_all2all_kernels];"
     "vllm/model_executor/layers/fused_moe/config.py(823): use_deepep_ll_kernels;"
     "vllm/model_executor/layers/fused_moe/layer.py(689): dp_size];"
     "vllm/model_executor/layers/fused_moe/layer.py(1548): select_experts[aten::empty;aten::empty;"
     "torch/_ops.py(1244): __call__[*]]]]"},
    {"c10d::alltoall_base_", -1,
     "vllm/distributed/device_communicators/all2all.py(108): dispatch[torch/distributed/"
     "distributed_c10d.py(4381): all_to_all_single[aten::empty;*[@]]]"},
    {"vllm::moe_forward", -1,
     "torch/_ops.py(1244): __call__[*[vllm/model_executor/layers/fused_moe/layer.py(2074): "
     "moe_forward[vllm/forward_context.py(217): get_forward_context;"
     "vllm/model_executor/layers/fused_moe/layer.py(1889): forward_impl["
     "vllm/model_executor/layers/fused_moe/layer.py(1486): ensure_moe_quant_config_init;"
     "vllm/model_executor/layers/fused_moe/layer.py(858): _maybe_setup_shared_experts_stream["
     "vllm/platforms/interface.py(150): is_cuda];"
     "vllm/model_executor/layers/fused_moe/fused_moe.py(1480): fused_experts[aten::empty;"
     "aten::empty;aten::view;@;aten::view]]]]]"},
    {"_moe_C::moe_sum", -1,
     "vllm/model_executor/layers/fused_moe/fused_moe.py(1820): moe_sum[torch/_ops.py(1244): "
     "__call__[*]]"},
};

// SGLang (sgl-kernel custom ops under torch/_ops.py, unquantized linear through
// aten::matmul > aten::mm as in the Qwen3-8B extend trace).
constexpr Recipe kSglang[] = {
    {"aten::linear", -1,
     "sglang/srt/layers/quantization/unquant.py(127): apply[*[aten::t[aten::transpose["
     "aten::as_strided]];aten::matmul[aten::mm[@]]]]"},
    {"sgl_kernel::fused_add_rmsnorm", -1,
     "sglang/srt/layers/layernorm.py(80): forward_cuda[sgl_kernel/elementwise.py(71): "
     "fused_add_rmsnorm[torch/_ops.py(1244): __call__[*]]]"},
    {"sgl_kernel::rmsnorm", -1,
     "sglang/srt/layers/utils.py(486): reshape_for_qk_norm[aten::reshape[aten::view]];"
     "sglang/srt/layers/layernorm.py(80): forward_cuda[aten::empty_like[aten::empty_strided];"
     "sgl_kernel/elementwise.py(42): rmsnorm[torch/_ops.py(1244): __call__[*]]]"},
    {"sgl_kernel::apply_rope_pos_ids_cos_sin_cache", -1,
     "sglang/srt/layers/rotary_embedding.py(201): forward_cuda[sgl_kernel/elementwise.py(262): "
     "apply_rope_with_cos_sin_cache_inplace[torch/_ops.py(1244): __call__[*]]]"},
    {"sglang::store_cache", -1,
     "sglang/srt/mem_cache/memory_pool.py(353): _set_kv_buffer_impl[aten::view;aten::view;"
     "torch/_ops.py(1244): __call__[*]]"},
    {"teller.module cls=RadixAttention", -1,
     "*[sglang/srt/layers/attention/flashinfer_backend.py(650): forward[aten::view;"
     "aten::empty_like[aten::empty_strided];@;aten::view]]"},
    {"sglang::inplace_all_reduce", -1,
     "sglang/srt/distributed/communication_op.py(12): tensor_model_parallel_all_reduce["
     "sglang/srt/distributed/parallel_state.py(430): all_reduce[torch/_ops.py(1244): "
     "__call__[*]]]"},
    {"sglang::all_gather", -1,
     "sglang/srt/layers/logits_processor.py(563): _get_logits[sglang/srt/distributed/"
     "communication_op.py(20): tensor_model_parallel_all_gather[*[aten::empty;@]]]"},
    {"sgl_kernel::silu_and_mul", -1,
     "sglang/srt/layers/activation.py(62): forward_cuda[aten::empty;sgl_kernel/"
     "elementwise.py(181): silu_and_mul[torch/_ops.py(1244): __call__[*]]]"},
    {"aten::embedding", -1,
     "sglang/srt/layers/vocab_parallel_embedding.py(482): forward[torch/nn/functional.py(2516): "
     "embedding[*[aten::reshape[aten::view];aten::index_select[@];aten::view]]]"},
    {"aten::softmax", -1, "*[aten::_softmax[@]]"},
    {"aten::argmax", -1, "*[aten::empty;@]"},
};

// HF transformers eager (h100__Qwen_Qwen1.5-0.5B-Chat: Linear, RMSNorm, rotary and SDPA
// subtrees of Qwen2DecoderLayer_3; the cuBLAS attribute queries before the GEMM launch).
constexpr Recipe kHf[] = {
    {"aten::linear", -1,
     "*[aten::t[aten::transpose[aten::as_strided]];aten::matmul[aten::reshape[aten::view];"
     "aten::mm[cudaFuncGetAttributes;cudaFuncSetAttribute;@];aten::_unsafe_view]]"},
    {"aten::pow", -1, "*[aten::result_type;aten::to;@]"},
    {"aten::mean", -1, "*[@]"},
    {"aten::rsqrt", -1, "*[@]"},
    {"aten::mul", static_cast<int>(Cost::kRotary),
     "transformers/models/llama/modeling_llama.py(160): apply_rotary_pos_emb[aten::unsqueeze["
     "aten::as_strided];*[@]]"},
    {"aten::cat", static_cast<int>(Cost::kRotary),
     "transformers/models/llama/modeling_llama.py(152): rotate_half[aten::slice[aten::as_"
     "strided];aten::slice[aten::as_strided];aten::neg[@];*]"},
    {"aten::scaled_dot_product_attention", -1,
     "transformers/integrations/sdpa_attention.py(19): sdpa_attention_forward[aten::transpose["
     "aten::as_strided];*[aten::_scaled_dot_product_flash_attention[aten::transpose[aten::as_"
     "strided];aten::_flash_attention_forward[aten::empty;aten::empty;cudaStreamIsCapturing;@]]"
     "]]"},
    {"aten::index_copy_", -1, "transformers/cache_utils.py(398): update[*[@]]"},
    {"FSDP::all_gather", -1,
     "torch/distributed/fsdp/_runtime_utils.py(847): _pre_forward_unshard["
     "torch/distributed/fsdp/_flat_param.py(1392): unshard[aten::empty;*[@]]]"},
    {"FSDP::all_gather_copy_out", -1, "*[aten::split_with_sizes[aten::as_strided];@]"},
    {"aten::embedding", -1,
     "torch/nn/modules/sparse.py(189): forward[torch/nn/functional.py(2516): embedding[*["
     "aten::reshape[aten::view];aten::index_select[@];aten::view]]]"},
    {"aten::softmax", -1, "*[aten::_softmax[@]]"},
    {"aten::argmax", -1, "*[aten::empty;@]"},
};

struct CostEntry {
  const char* name;
  double median_us, sigma;
};

// Self CPU time per name, `fit_host_ops.py` "self p50" and the lognormal sigma through
// p50 and p90 (ln(p90/p50)/1.2816; the widest capped at 0.6: their tails are frames the
// simulator does not emit). b200__eager_trace (vLLM V1 on B200, the engine's own thread).
constexpr CostEntry kVllmCosts[] = {
    {"aten::as_strided", 0.44, 0.6},  // n=1054, p90 1.21
    {"aten::empty", 2.55, 0.36},      // n=796
    {"aten::slice", 1.54, 0.38},
    {"aten::view", 0.93, 0.6},  // n=439, p90 2.99
    {"aten::copy_", 8.12, 0.38},
    {"aten::select", 1.38, 0.6},
    {"aten::empty_like", 3.89, 0.21},
    {"aten::transpose", 2.44, 0.36},
    {"aten::t", 2.93, 0.26},
    {"aten::linear", 4.00, 0.28},
    {"aten::addmm", 50.55, 0.29},  // n=108: cuBLASLt heuristics before the launch
    {"aten::empty_strided", 6.28, 0.12},
    {"aten::reshape", 2.19, 0.08},
    {"aten::permute", 2.48, 0.08},
    {"aten::fill_", 8.67, 0.05},
    {"aten::split_with_sizes", 4.87, 0.10},
    {"aten::unbind", 2.53, 0.18},
    {"vllm::all_reduce", 5.62, 0.13},
    {"_C::fused_add_rms_norm", 6.73, 0.13},
    {"_C::rotary_embedding", 7.70, 0.07},
    {"_C_cache_ops::reshape_and_cache_flash", 5.85, 0.04},
    {"vllm::unified_attention_with_output", 7.67, 0.12},
    {"_C::static_scaled_fp8_quant", 4.57, 0.08},
    {"vllm::moe_forward", 7.27, 0.10},
    {"symm_mem::multimem_all_reduce_", 8.56, 0.10},
    {"[nn.Module]", 1.22, 0.6},   // n=436, p90 2.87
    {"[_call_impl]", 3.60, 0.6},  // n=436, p90 8.24
    // torch/_ops.py __call__: p50 21.8 us; sigma from the SGLang trace's 0.75 (b200's own
    // p90 holds whole Python subtrees the simulator does not emit).
    {"[ops call]", 21.84, 0.75},
    {"[forward]", 3.91, 0.6},  // module forward frames, p50 3.91
    {"[frame]", 1.20, 0.6},    // other Python frames, p50 1.20
    // Launch calls: cudaLaunchKernel n=367 p50 6.60 sigma 0.11, cuLaunchKernelEx n=220
    // 7.77 / 0.12, cudaLaunchKernelExC 5.66 / 0.25, cudaMemcpyAsync 13.83 / 0.57.
    {"cudaLaunchKernel", 6.60, 0.11},
    {"cuLaunchKernelEx", 7.77, 0.12},
    {"cudaLaunchKernelExC", 5.66, 0.25},
    {"cudaMemcpyAsync", 13.83, 0.57},
    {"cudaDeviceGetAttribute", 0.12, 0.6},
};
// h100__Qwen_Qwen1.5-0.5B-Chat (HF transformers eager on H100).
constexpr CostEntry kHfCosts[] = {
    {"aten::as_strided", 0.46, 0.6},
    {"aten::transpose", 1.33, 0.6},
    {"aten::view", 0.40, 0.49},
    {"aten::empty", 2.59, 0.16},
    {"aten::mul", 5.39, 0.49},
    {"aten::copy_", 3.72, 0.29},
    {"aten::reshape", 0.92, 0.42},
    {"aten::t", 1.96, 0.16},
    {"aten::linear", 3.04, 0.6},
    {"aten::to", 0.90, 0.31},
    {"aten::add", 5.83, 0.24},
    {"aten::empty_strided", 3.38, 0.16},
    {"aten::empty_like", 1.17, 0.6},
    {"aten::slice", 1.42, 0.33},
    {"aten::_unsafe_view", 0.55, 0.22},
    {"aten::matmul", 6.12, 0.22},
    {"aten::mm", 26.61, 0.10},
    {"aten::addmm", 24.95, 0.21},
    {"aten::unsqueeze", 1.25, 0.18},
    {"aten::cat", 9.18, 0.06},
    {"aten::result_type", 0.37, 0.05},
    {"aten::pow", 7.75, 0.26},
    {"aten::mean", 8.38, 0.07},
    {"aten::rsqrt", 4.74, 0.12},
    {"aten::neg", 5.85, 0.06},
    {"aten::silu", 7.85, 0.05},
    {"aten::scaled_dot_product_attention", 7.25, 0.08},
    {"aten::_scaled_dot_product_flash_attention", 5.84, 0.28},
    {"aten::_flash_attention_forward", 12.08, 0.6},  // p90 59.8
    {"[nn.Module]", 1.33, 0.27},
    {"[_call_impl]", 2.75, 0.38},
    // Module forward frames: HF forwards hold the Python of the model code (attribute
    // look-ups, config reads, cache bookkeeping) that is not itself recorded as frames;
    // p50 of their self time over the 340 forward frames is 61 us but that of a Linear's
    // forward about 5 us: 8 us with sigma 0.9 gives the trace's host time per decoder
    // layer (1.3 ms for 24 + 7 launches) with this recipe set.
    {"[forward]", 8.0, 0.9},
    {"[frame]", 0.98, 0.6},
    {"cudaLaunchKernel", 3.20, 0.27},  // n=860
    {"cudaLaunchKernelExC", 6.05, 0.10},
    {"cuLaunchKernelEx", 6.05, 0.10},
    {"cudaFuncGetAttributes", 2.06, 0.15},
    {"cudaFuncSetAttribute", 0.25, 0.6},
    {"cudaStreamIsCapturing", 0.70, 0.12},
    {"cudaMemcpyAsync", 13.83, 0.57},
};
// inference__sglang_prefilldecode__sglang_Qwen3-8B (SGLang on MI300X; the launch calls
// are hipLaunchKernel 4.11 / 0.12 and hipExtModuleLaunchKernel 4.72 / 0.12).
constexpr CostEntry kSglangCosts[] = {
    {"aten::empty", 0.94, 0.45},
    {"aten::view", 0.73, 0.21},
    {"aten::as_strided", 0.43, 0.27},
    {"aten::empty_like", 0.83, 0.25},
    {"aten::empty_strided", 1.20, 0.26},
    {"aten::mm", 13.76, 0.30},
    {"aten::matmul", 0.59, 0.31},
    {"aten::transpose", 0.72, 0.33},
    {"aten::t", 0.83, 0.16},
    {"aten::linear", 0.84, 0.19},
    {"aten::reshape", 1.96, 0.18},
    {"aten::copy_", 2.83, 0.26},
    {"sgl_kernel::fused_add_rmsnorm", 0.88, 0.08},  // aiter::add_rmsnorm
    {"sgl_kernel::rmsnorm", 0.75, 0.12},            // aiter::rmsnorm
    {"sgl_kernel::apply_rope_pos_ids_cos_sin_cache", 1.31, 0.05},
    {"sglang::store_cache", 1.48, 0.11},
    {"sgl_kernel::silu_and_mul", 1.18, 0.04},
    {"[nn.Module]", 0.53, 0.27},
    {"[_call_impl]", 1.23, 0.37},
    {"[ops call]", 16.84, 0.75},
    {"[forward]", 3.91, 0.6},  // as vLLM (the SGLang trace's frames are mostly profiler hooks)
    {"[frame]", 1.20, 0.6},
    {"cudaLaunchKernel", 4.11, 0.12},
    {"cuLaunchKernelEx", 4.72, 0.12},
    {"cudaMemcpyAsync", 13.83, 0.57},
};

template <size_t N>
const CostEntry* Lookup(const CostEntry (&table)[N], std::string_view name) {
  for (const CostEntry& e : table) {
    if (name == e.name) return &e;
  }
  return nullptr;
}

template <size_t N>
const char* FindRecipe(const Recipe (&table)[N], const OpSpec& op) {
  const int cost = op.kernels.empty() ? -1 : static_cast<int>(op.kernels[0].cost);
  for (const Recipe& r : table) {
    if (op.range == r.range && (r.cost < 0 || r.cost == cost)) return r.tree;
  }
  return nullptr;
}

}  // namespace

std::vector<HostNode> ParseRecipe(std::string_view recipe) {
  std::vector<HostNode> nodes;
  ParseNodes(recipe, 0, &nodes);
  if (!Contains(nodes, &HostNode::op)) {
    HostNode op;
    op.op = true;
    op.children = std::move(nodes);
    nodes.clear();
    nodes.push_back(std::move(op));
  }
  if (!Contains(nodes, &HostNode::launch)) {
    HostNode* op = FindOp(nodes);
    HostNode launch;
    launch.launch = true;
    op->children.push_back(std::move(launch));
  }
  return nodes;
}

std::vector<HostNode> ParseFrames(std::string_view recipe) {
  std::vector<HostNode> nodes;
  ParseNodes(recipe, 0, &nodes);
  return nodes;
}

std::string_view RunnerPrologue(const EngineProfile& p) {
  // vLLM V1 (b200__eager_trace, before the first module: 5.5 ms, 228 distinct names): the
  // input batch, block tables and slot mapping, the attention metadata builder, the
  // host-to-device copies of the inputs, the Triton launcher's specialization.
  static constexpr const char* kVllmPrologue =
      "vllm/v1/utils.py(387): record_function_or_nullcontext[contextlib.py(299): helper["
      "contextlib.py(104): __init__];contextlib.py(132): __enter__];"
      "vllm/v1/worker/gpu_input_batch.py(956): num_reqs;"
      "vllm/v1/worker/gpu_input_batch.py(277): req_ids;"
      "vllm/v1/worker/gpu_input_batch.py(65): num_tokens;"
      "vllm/utils/__init__.py(45): length_from_prompt_token_ids_or_embeds;"
      "vllm/v1/worker/block_table.py(117): add_row[vllm/v1/worker/block_table.py(99): append_row];"
      "vllm/v1/worker/block_table.py(192): commit_block_table[vllm/v1/utils.py(131): copy_to_gpu["
      "aten::slice[aten::as_strided];aten::copy_[cudaMemcpyAsync]]];"
      "numpy/_core/fromnumeric.py(2879): cumsum[numpy/_core/fromnumeric.py(51): _wrapfunc];"
      "numpy/_core/fromnumeric.py(462): repeat[numpy/_core/fromnumeric.py(51): _wrapfunc];"
      "vllm/v1/worker/block_table.py(132): compute_slot_mapping;"
      "vllm/v1/worker/block_table.py(195): commit_slot_mapping[vllm/v1/utils.py(131): copy_to_gpu["
      "aten::slice[aten::as_strided];aten::copy_[cudaMemcpyAsync]]];"
      "vllm/v1/worker/gpu_model_runner.py(1777): _compute_cascade_attn_prefix_len;"
      "vllm/config/model.py(1495): is_encoder_decoder[vllm/transformers_utils/config.py(437): "
      "is_encoder_decoder[vllm/transformers_utils/config.py(440): _is_encoder_decoder["
      "transformers/configuration_utils.py(1193): get_text_config]]];"
      "vllm/v1/worker/gpu_model_runner.py(1566): _get_block_table_and_slot_mapping["
      "vllm/v1/worker/block_table.py(341): __getitem__;vllm/v1/worker/block_table.py(232): "
      "get_device_tensor[aten::slice[aten::as_strided]]];"
      "vllm/v1/worker/gpu_model_runner.py(1263): _get_encoder_seq_lens;"
      "vllm/v1/worker/gpu_model_runner.py(1631): _build_attn_group_metadata["
      "vllm/v1/worker/utils.py(170): get_metadata_builder;copy.py(61): copy[copy.py(247): "
      "_reconstruct[copyreg.py(98): __newobj__]];"
      "vllm/v1/attention/backends/flashinfer.py(664): build["
      "vllm/v1/attention/backends/utils.py(879): split_decodes_and_prefills["
      "vllm/v1/attention/backends/utils.py(102): seq_lens_cpu;typing_extensions.py(3001): wrapper];"
      "aten::to[aten::_to_copy[aten::empty_strided;aten::copy_[cudaMemcpyAsync]]];aten::sub;"
      "aten::fill_;triton/runtime/jit.py(413): __getitem__[triton/runtime/jit.py(419): <lambda>["
      "triton/runtime/jit.py(709): run[torch/cuda/__init__.py(1067): current_device["
      "torch/cuda/__init__.py(382): _lazy_init[torch/cuda/__init__.py(333): is_initialized]];"
      "triton/runtime/jit.py(602): compute_cache_key;triton/runtime/jit.py(353): specialize_impl["
      "triton/backends/compiler.py(81): get_arg_specialization];triton/runtime/driver.py(25): "
      "active;triton/backends/nvidia/driver.py(701): allocate_scratch;"
      "triton/compiler/compiler.py(487): launch_metadata]]]];"
      "aten::select[aten::as_strided];aten::item[aten::_local_scalar_dense];"
      "vllm/v1/sample/logits_processor/builtin.py(240): process_dict_updates;"
      "vllm/v1/worker/gpu_input_batch.py(960): all_greedy;"
      "vllm/v1/worker/gpu_input_batch.py(968): no_top_p;"
      "vllm/v1/worker/gpu_input_batch.py(972): no_top_k;"
      "vllm/v1/worker/gpu_input_batch.py(976): no_penalties;"
      "vllm/distributed/parallel_state.py(1094): get_pp_group;"
      "numpy/_core/_methods.py(50): _sum;numpy/_core/_methods.py(58): _any;"
      "numpy/_core/_methods.py(42): _amax;aten::detach;aten::resolve_conj;aten::resolve_neg";
  // SGLang (the Qwen3-8B extend trace, before the first module: 142 distinct frames): the
  // batch handed to the model worker, sampling info, the overlap scheduler's futures.
  static constexpr const char* kSglangPrologue =
      "sglang/srt/managers/scheduler.py(2919): _run_batch_inner["
      "sglang/srt/observability/req_time_stats.py(1128): set_time_batch["
      "sglang/srt/observability/req_time_stats.py(723): set_prefill_run_batch_start_time];"
      "sglang/srt/model_executor/forward_batch_info.py(187): is_prebuilt;"
      "sglang/srt/speculative/spec_info.py(34): is_none;"
      "sglang/srt/managers/schedule_batch.py(2501): get_model_worker_batch["
      "sglang/srt/model_executor/forward_batch_info.py(142): is_decode_or_idle;"
      "sglang/srt/sampling/sampling_batch_info.py(205): __len__[torch/_tensor.py(1145): __len__["
      "torch/overrides.py(1677): handle_torch_function[torch/overrides.py(1599): "
      "_get_overloaded_args]]];sglang/srt/managers/schedule_batch.py(2549): <listcomp>;"
      "sglang/srt/managers/schedule_batch.py(2575): <listcomp>;<string>(2): __init__];"
      "sglang/srt/managers/scheduler.py(2892): record_batch_in_overlap;"
      "sglang/srt/sampling/sampling_batch_info.py(404): copy_for_forward["
      "sglang/srt/sampling/sampling_batch_info.py(235): update_penalties;dataclasses.py(1405): "
      "replace[dataclasses.py(1205): _is_dataclass_instance]];"
      "sglang/srt/managers/overlap_utils.py(121): "
      "alloc_future_indices[torch/cuda/__init__.py(661): "
      "__enter__[torch/cuda/__init__.py(1099): current_stream[torch/cuda/__init__.py(382): "
      "_lazy_init[torch/cuda/__init__.py(333): is_initialized];torch/cuda/_utils.py(344): "
      "_get_device_index[torch/_jit_internal.py(106): is_scripting;torch/_utils.py(831): "
      "_get_device_index[torch/_utils.py(805): _get_current_device_index[torch/_utils.py(789): "
      "_get_device_attr[torch/_utils.py(772): _get_available_device_type[torch/cuda/__init__.py("
      "163): is_available[torch/cuda/__init__.py(154): _is_compiled;torch/cuda/__init__.py(159): "
      "_nvml_based_avail[os.py(772): getenv[_collections_abc.py(821): get[os.py(675): "
      "__getitem__[os.py(755): encode]]]]]]]]]];torch/cuda/__init__.py(1067): current_device;"
      "torch/cuda/streams.py(34): __new__;torch/cuda/__init__.py(718): set_stream];"
      "aten::empty;aten::copy_[cudaMemcpyAsync];aten::to[aten::_to_copy[aten::empty_strided;"
      "aten::copy_[cudaMemcpyAsync]]];aten::arange;aten::cumsum;aten::item[aten::_local_scalar_"
      "dense]]";
  switch (p.host_family) {
    case HostFamily::kVllm:
      return kVllmPrologue;
    case HostFamily::kSglang:
      return kSglangPrologue;
    case HostFamily::kHf:
      return "";
  }
  return "";
}

HostOp HostOpFor(const EngineProfile& p, const OpSpec& op) {
  HostOp out;
  out.modules = op.modules;
  const char* tree = nullptr;
  switch (p.host_family) {
    case HostFamily::kVllm:
      tree = FindRecipe(kVllm, op);
      break;
    case HostFamily::kSglang:
      tree = FindRecipe(kSglang, op);
      break;
    case HostFamily::kHf:
      tree = FindRecipe(kHf, op);
      break;
  }
  out.tree = ParseRecipe(tree != nullptr ? tree : "*[@]");
  return out;
}

std::string_view ModuleClass(std::string_view element) {
  const size_t hash = element.find('#');
  return hash == std::string_view::npos ? element : element.substr(0, hash);
}

std::vector<std::string> ModuleFrames(const EngineProfile& p, std::string_view cls) {
  // The module call wrapper (torch 2.8 in the b200 trace, 2.6 in the HF traces) and the
  // class's forward; custom ops dispatch through CustomOp.forward (custom_op.py(46)).
  std::string forward;
  const std::string c(cls);
  switch (p.host_family) {
    case HostFamily::kVllm:
      if (c == "RMSNorm" || c == "SiluAndMul" || c.find("Rotary") != std::string::npos ||
          c.find("QuantFP8") != std::string::npos) {
        forward = "vllm/model_executor/custom_op.py(46): forward";
      } else if (c == "QKVParallelLinear" || c == "MergedColumnParallelLinear" ||
                 c == "ReplicatedLinear") {
        forward = "vllm/model_executor/layers/linear.py(557): forward";
      } else if (c == "RowParallelLinear") {
        forward = "vllm/model_executor/layers/linear.py(1388): forward";
      } else if (c == "Attention") {
        forward = "vllm/attention/layer.py(290): forward";
      } else if (c == "FusedMoE") {
        forward = "vllm/model_executor/layers/fused_moe/layer.py(1900): forward_cuda";
      } else if (c == "VocabParallelEmbedding" || c == "LogitsProcessor" || c == "Sampler") {
        forward = "vllm/model_executor/layers/" +
                  std::string(c == "Sampler"           ? "sampler.py(52)"
                              : c == "LogitsProcessor" ? "logits_processor.py(57)"
                                                       : "vocab_parallel_embedding.py(459)") +
                  ": forward";
      } else {
        forward = "vllm/model_executor/models/" + p.host_model_file + ": forward";
      }
      break;
    case HostFamily::kSglang:
      if (c == "RMSNorm" || c == "SiluAndMul" || c.find("Rotary") != std::string::npos) {
        forward = "sglang/srt/custom_op.py(38): forward";
      } else if (c.find("Linear") != std::string::npos) {
        forward = "sglang/srt/layers/linear.py(" +
                  std::string(c == "RowParallelLinear" ? "1290" : "426") + "): forward";
      } else if (c == "RadixAttention") {
        forward = "sglang/srt/layers/radix_attention.py(94): forward";
      } else {
        forward = "sglang/srt/models/" + p.host_model_file + ": forward";
      }
      break;
    case HostFamily::kHf:
      if (c == "Linear") {
        forward = "torch/nn/modules/linear.py(124): forward";
      } else if (c == "SiLU") {
        forward = "torch/nn/modules/activation.py(432): forward";
      } else if (c == "Embedding") {
        forward = "torch/nn/modules/sparse.py(189): forward";
      } else {
        forward = "transformers/models/" + p.host_model_file + ": forward";
      }
      break;
  }
  return {p.host_family == HostFamily::kVllm ? "torch/nn/modules/module.py(1779): _call_impl"
                                             : "torch/nn/modules/module.py(1743): _call_impl",
          forward};
}

HostCost HostCostOf(const EngineProfile& p, std::string_view name) {
  std::string_view key = name;
  if (name.rfind("nn.Module: ", 0) == 0) {
    key = "[nn.Module]";
  } else if (name.find("_call_impl") != std::string_view::npos) {
    key = "[_call_impl]";
  } else if (name.rfind("torch/_ops.py", 0) == 0) {
    key = "[ops call]";
  } else if (name.find(".py(") != std::string_view::npos) {
    const bool forward = name.size() > 7 && (name.substr(name.size() - 7) == "forward" ||
                                             name.find("): forward") != std::string_view::npos);
    key = forward ? "[forward]" : "[frame]";
  }
  const CostEntry* e = nullptr;
  switch (p.host_family) {
    case HostFamily::kVllm:
      e = Lookup(kVllmCosts, key);
      break;
    case HostFamily::kSglang:
      e = Lookup(kSglangCosts, key);
      break;
    case HostFamily::kHf:
      e = Lookup(kHfCosts, key);
      break;
  }
  if (e == nullptr) e = Lookup(kVllmCosts, key);
  if (e == nullptr) e = Lookup(kHfCosts, key);
  if (e != nullptr) return {e->median_us, e->sigma};
  // Unlisted: aten view-like ops cost what aten::reshape does, other operators what the
  // custom ops of the b200 trace do (p50 5.6-7.7 us).
  if (name.rfind("aten::", 0) == 0) return {2.2, 0.3};
  if (name.find("::") != std::string_view::npos) return {6.5, 0.15};
  return {1.2, 0.6};
}

}  // namespace teller::sim
