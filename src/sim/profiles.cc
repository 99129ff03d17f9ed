// The five engine profiles. Names of ranges, kernels and launch APIs are the ones real
// engines produce (docs/serving-notes.md §1-§2, the tracelens traces): cpu-op names as
// PyTorch's NVTX emission records them, Teller's hook ranges (docs/python-hooks.md),
// and CUDA kernel names as CUPTI reports them on Hopper.
#include <cassert>
#include <cstdio>

#include "src/sim/sim_internal.h"
#include "teller/sim/sim.h"

namespace teller::sim {
namespace {

// --- kernel names (Hopper, bf16) --------------------------------------------------------
constexpr const char* kVllmFusedAddNorm =
    "void vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, long, "
    "c10::BFloat16*, c10::BFloat16 const*, float, int, int)";
constexpr const char* kVllmRmsNorm =
    "void vllm::rms_norm_kernel<c10::BFloat16>(c10::BFloat16*, c10::BFloat16 const*, long, "
    "c10::BFloat16 const*, float, int, int)";
constexpr const char* kGemmLarge =
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_"
    "execute_segment_k_off_kernel__5x_cublas";
constexpr const char* kGemmMid =
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_"
    "execute_segment_k_off_kernel__5x_cublas";
constexpr const char* kGemmSmall =
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x64x64_warpgroupsize1x1x1_"
    "execute_segment_k_off_kernel__5x_cublas";
constexpr const char* kVllmRotary =
    "void vllm::rotary_embedding_kernel<c10::BFloat16, true>(long const*, c10::BFloat16*, "
    "c10::BFloat16*, c10::BFloat16 const*, int, long, long, long, int, int, int)";
constexpr const char* kVllmCacheWrite =
    "void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16, __nv_bfloat16, "
    "(vllm::Fp8KVCacheDataType)0>(__nv_bfloat16 const*, __nv_bfloat16 const*, "
    "__nv_bfloat16*, __nv_bfloat16*, long const*, long, long, long, long, int, int, int, "
    "float const*, float const*)";
constexpr const char* kFlashSplitKv =
    "void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, "
    "false, cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 4, cutlass::bfloat16_t> >, "
    "false, true, false, false, true, true, false, false>(flash::Flash_fwd_params)";
constexpr const char* kFlashCombine =
    "void flash::flash_fwd_splitkv_combine_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, "
    "false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 4, "
    "cutlass::bfloat16_t> >, 4, 3, false>(flash::Flash_fwd_params)";
constexpr const char* kFlashFwd =
    "void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, "
    "cutlass::bfloat16_t, Flash_kernel_traits<128, 128, 64, 4, cutlass::bfloat16_t> >, false, "
    "true, false, false, true, true, false, false>(flash::Flash_fwd_params)";
constexpr const char* kVllmCustomAr =
    "void vllm::cross_device_reduce_1stage<__nv_bfloat16, 3>(vllm::RankData*, "
    "vllm::RankSignals, vllm::Signal*, __nv_bfloat16*, int, int)";
constexpr const char* kVllmSiluAndMul =
    "void vllm::act_and_mul_kernel<c10::BFloat16, &(c10::BFloat16 "
    "vllm::silu_kernel<c10::BFloat16>(c10::BFloat16 const&)), true>(c10::BFloat16*, "
    "c10::BFloat16 const*, int)";
constexpr const char* kEmbedding =
    "void at::native::(anonymous namespace)::indexSelectLargeIndex<c10::BFloat16, long, "
    "unsigned int, 2, 2, -2, true>(at::cuda::detail::TensorInfo<c10::BFloat16, unsigned int>, "
    "at::cuda::detail::TensorInfo<c10::BFloat16 const, unsigned int>, "
    "at::cuda::detail::TensorInfo<long const, unsigned int>, int, int, unsigned int, unsigned "
    "int, long)";
constexpr const char* kTopK =
    "void at::native::sbtopk::gatherTopK<float, unsigned int, 2, false>(at::cuda::detail::"
    "TensorInfo<float const, unsigned int>, unsigned int, unsigned int, bool, unsigned int, "
    "unsigned int, at::cuda::detail::TensorInfo<float, unsigned int>, unsigned int, "
    "at::cuda::detail::TensorInfo<long, unsigned int>, unsigned int, float*)";
constexpr const char* kArgMax =
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, "
    "at::native::ArgMaxOps<float>, unsigned int, long, 4> >(at::native::ReduceOp<float, "
    "at::native::ArgMaxOps<float>, unsigned int, long, 4>)";
constexpr const char* kSoftmax =
    "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, "
    "at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(float*, float const*, int)";
constexpr const char* kNcclAllReduce =
    "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)";
constexpr const char* kNcclAllGather =
    "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)";
constexpr const char* kNcclSendRecv = "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)";
// SGLang (sgl-kernel / flashinfer)
constexpr const char* kFiFusedAddNorm =
    "void flashinfer::norm::FusedAddRMSNormKernel<8u, __nv_bfloat16>(__nv_bfloat16*, "
    "__nv_bfloat16*, __nv_bfloat16*, unsigned int, unsigned int, unsigned int, float, float)";
constexpr const char* kFiRmsNorm =
    "void flashinfer::norm::RMSNormKernel<8u, __nv_bfloat16>(__nv_bfloat16*, __nv_bfloat16*, "
    "__nv_bfloat16*, unsigned int, unsigned int, unsigned int, float, float)";
constexpr const char* kFiRope =
    "void flashinfer::BatchQKApplyRotaryPosIdsCosSinCacheKernel<true, 128u, 8u, 16u, "
    "__nv_bfloat16, long>(__nv_bfloat16*, __nv_bfloat16*, __nv_bfloat16*, __nv_bfloat16*, "
    "float*, long*, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, "
    "unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int)";
constexpr const char* kSglStoreKv =
    "void store_kvcache<2048l, 4, false, long>(void const*, void const*, void*, void*, long "
    "const*, int, long, long, long, long)";
constexpr const char* kFiPrefill =
    "void flashinfer::BatchPrefillWithRaggedKVCacheKernel<flashinfer::KernelTraits<"
    "(flashinfer::MaskMode)1, 128u, 1u, 4u, 8u, 8u, 1u, 4u, (flashinfer::PosEncodingMode)0, "
    "__nv_bfloat16, __nv_bfloat16, __nv_bfloat16, float, int, "
    "flashinfer::DefaultAttention<false, false, false, false> >, flashinfer::RaggedParams<"
    "__nv_bfloat16, __nv_bfloat16, __nv_bfloat16, int> >(flashinfer::RaggedParams<"
    "__nv_bfloat16, __nv_bfloat16, __nv_bfloat16, int>)";
constexpr const char* kFiDecode =
    "void flashinfer::BatchDecodeWithPagedKVCacheKernel<(flashinfer::PosEncodingMode)0, 2u, "
    "8u, 8u, 16u, 1u, 4u, flashinfer::DefaultAttention<false, false, false, false>, "
    "flashinfer::BatchDecodeParams<__nv_bfloat16, __nv_bfloat16, __nv_bfloat16, int> >("
    "flashinfer::BatchDecodeParams<__nv_bfloat16, __nv_bfloat16, __nv_bfloat16, int>)";
constexpr const char* kFiMerge =
    "void flashinfer::PersistentVariableLengthMergeStatesKernel<8u, 16u, 8u, 4u, "
    "__nv_bfloat16, __nv_bfloat16, int>(__nv_bfloat16*, float*, int*, __nv_bfloat16*, float*, "
    "unsigned int, unsigned int*, unsigned int)";
constexpr const char* kSglCustomAr =
    "void sglang::cross_device_reduce_1stage<__nv_bfloat16, 3>(sglang::RankData*, "
    "sglang::RankSignals, sglang::Signal*, __nv_bfloat16*, int, int)";
constexpr const char* kFiSiluAndMul =
    "void flashinfer::activation::act_and_mul_kernel<__nv_bfloat16, &(float "
    "silu<float>(float const&))>(__nv_bfloat16*, __nv_bfloat16 const*, int)";
// plain PyTorch (HF modelling code, SDPA, eager)
constexpr const char* kTorchPow =
    "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::"
    "pow_tensor_scalar_kernel_impl<float, float>(at::TensorIteratorBase&, float)::{lambda(float)"
    "#1}, std::array<char*, 2ul> >(int, at::native::(anonymous namespace)::"
    "pow_tensor_scalar_kernel_impl<float, float>(at::TensorIteratorBase&, float)::{lambda(float)"
    "#1}, std::array<char*, 2ul>)";
constexpr const char* kTorchMean =
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, "
    "at::native::MeanOps<float, float, float, float>, unsigned int, float, 4> >("
    "at::native::ReduceOp<float, at::native::MeanOps<float, float, float, float>, unsigned int, "
    "float, 4>)";
constexpr const char* kTorchRsqrt =
    "void at::native::vectorized_elementwise_kernel<4, at::native::rsqrt_kernel_cuda("
    "at::TensorIteratorBase&)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() "
    "const::{lambda(float)#1}, std::array<char*, 2ul> >(int, at::native::rsqrt_kernel_cuda("
    "at::TensorIteratorBase&)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() "
    "const::{lambda(float)#1}, std::array<char*, 2ul>)";
constexpr const char* kTorchMul =
    "void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<c10::BFloat16, "
    "c10::BFloat16, c10::BFloat16, at::native::binary_internal::MulFunctor<float> >, "
    "std::array<char*, 3ul> >(int, at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, "
    "c10::BFloat16, at::native::binary_internal::MulFunctor<float> >, std::array<char*, 3ul>)";
constexpr const char* kTorchAdd =
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<"
    "c10::BFloat16>, std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, "
    "std::array<char*, 3ul>)";
constexpr const char* kTorchCat =
    "void at::native::(anonymous namespace)::CatArrayBatchedCopy_aligned16_contig<"
    "at::native::(anonymous namespace)::OpaqueType<2u>, unsigned int, 4, 64, 64>("
    "at::native::(anonymous namespace)::OpaqueType<2u>*, at::native::(anonymous namespace)::"
    "CatArrInputTensorMetadata<at::native::(anonymous namespace)::OpaqueType<2u>, unsigned "
    "int, 64, 64>, at::native::(anonymous namespace)::TensorSizeStride<unsigned int, 4u>, int, "
    "unsigned int)";
constexpr const char* kTorchSilu =
    "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::"
    "silu_kernel(at::TensorIteratorBase&)::{lambda()#1}::operator()() const::{lambda()#4}::"
    "operator()() const::{lambda(c10::BFloat16)#1}, std::array<char*, 2ul> >(int, "
    "at::native::(anonymous namespace)::silu_kernel(at::TensorIteratorBase&)::{lambda()#1}::"
    "operator()() const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16)#1}, "
    "std::array<char*, 2ul>)";
constexpr const char* kTorchIndexCopy =
    "void at::native::index_elementwise_kernel<128, 4, at::native::gpu_index_kernel<"
    "at::native::index_put_kernel_impl<at::native::OpaqueType<2> >(at::TensorIterator&, "
    "c10::ArrayRef<long>, c10::ArrayRef<long>)::{lambda(char*, char const*, long)#1}>("
    "at::TensorIteratorBase&, c10::ArrayRef<long>, c10::ArrayRef<long>, "
    "at::native::index_put_kernel_impl<at::native::OpaqueType<2> >(at::TensorIterator&, "
    "c10::ArrayRef<long>, c10::ArrayRef<long>)::{lambda(char*, char const*, long)#1} const&, "
    "bool)::{lambda(int)#1}>(long, at::native::gpu_index_kernel<...>::{lambda(int)#1})";
constexpr const char* kTorchSdpaFlash =
    "void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<128, 128, 64, "
    "4, false, false, cutlass::bfloat16_t, pytorch_flash::Flash_kernel_traits<128, 128, 64, 4, "
    "cutlass::bfloat16_t> >, false, true, false, false, true, true, false>("
    "pytorch_flash::Flash_fwd_params)";
constexpr const char* kTorchCopy =
    "void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<"
    "at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() "
    "const::{lambda()#7}::operator()() const::{lambda(c10::BFloat16)#1}>(at::TensorIteratorBase&, "
    "at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() "
    "const::{lambda()#7}::operator()() const::{lambda(c10::BFloat16)#1} const&)::{lambda(int)#1}>"
    "(int, at::native::gpu_kernel_impl_nocast<...>::{lambda(int)#1})";

OpSpec Op(std::string range, std::vector<KernelSpec> kernels, bool comm = false) {
  return OpSpec{std::move(range), std::move(kernels), comm, {}};
}
KernelSpec K(const char* name, Cost cost, const char* api = "cudaLaunchKernel") {
  return KernelSpec{name, cost, api};
}

// The nn.Module path of each operator, in order ("Outer/Inner#tag", "" = none); the
// lists must match (a profile bug otherwise, caught by the simulator tests).
void SetModules(std::vector<OpSpec>& ops, const std::vector<const char*>& paths) {
  assert(ops.size() == paths.size());
  for (size_t i = 0; i < ops.size() && i < paths.size(); ++i) {
    ops[i].modules.clear();
    std::string path = paths[i];
    size_t at = 0;
    while (at < path.size()) {
      const size_t slash = path.find('/', at);
      const size_t end = slash == std::string::npos ? path.size() : slash;
      ops[i].modules.push_back(path.substr(at, end - at));
      at = end + 1;
    }
  }
}

// vLLM's decoder layer (LlamaDecoderLayer / Qwen2DecoderLayer) on CUDA: custom ops under
// torch.compile-free eager execution.
std::vector<OpSpec> VllmLayer(bool decode, bool v0) {
  const char* gemm = decode ? kGemmSmall : kGemmMid;
  std::vector<OpSpec> ops = {
      Op("_C::fused_add_rms_norm", {K(kVllmFusedAddNorm, Cost::kNorm)}),
      Op("aten::linear", {K(gemm, Cost::kGemmQkv, "cuLaunchKernelEx")}),
      Op("_C::rotary_embedding", {K(kVllmRotary, Cost::kRotary)}),
      Op("_C_cache_ops::reshape_and_cache_flash", {K(kVllmCacheWrite, Cost::kKvWrite)}),
  };
  if (v0 && !decode) {
    ops.push_back(Op("vllm::unified_attention_with_output", {K(kFlashFwd, Cost::kAttention)}));
  } else {
    ops.push_back(
        Op("vllm::unified_attention_with_output",
           {K(kFlashSplitKv, Cost::kAttention), K(kFlashCombine, Cost::kAttentionReduce)}));
  }
  ops.push_back(Op("aten::linear", {K(gemm, Cost::kGemmO, "cuLaunchKernelEx")}));
  ops.push_back(Op("vllm::all_reduce", {K(kVllmCustomAr, Cost::kAllReduce)}, true));
  ops.push_back(Op("_C::fused_add_rms_norm", {K(kVllmFusedAddNorm, Cost::kNorm)}));
  ops.push_back(
      Op("aten::linear", {K(decode ? kGemmSmall : kGemmLarge, Cost::kGemmUp, "cuLaunchKernelEx")}));
  ops.push_back(Op("_C::silu_and_mul", {K(kVllmSiluAndMul, Cost::kActivation)}));
  ops.push_back(Op("aten::linear", {K(gemm, Cost::kGemmDown, "cuLaunchKernelEx")}));
  ops.push_back(Op("vllm::all_reduce", {K(kVllmCustomAr, Cost::kAllReduce)}, true));
  SetModules(
      ops,
      {"RMSNorm#in", "Qwen2Attention/QKVParallelLinear", "Qwen2Attention/RotaryEmbedding",
       "Qwen2Attention/Attention", "Qwen2Attention/Attention", "Qwen2Attention/RowParallelLinear",
       "Qwen2Attention/RowParallelLinear", "RMSNorm#post", "Qwen2MLP/MergedColumnParallelLinear",
       "Qwen2MLP/SiluAndMul", "Qwen2MLP/RowParallelLinear", "Qwen2MLP/RowParallelLinear"});
  return ops;
}

EngineProfile Vllm(std::string name, LogStyle style) {
  EngineProfile p;
  p.name = std::move(name);
  const bool v0 = style == LogStyle::kVllmV0;
  p.model = "Qwen/Qwen2.5-14B-Instruct";
  p.layers = 48;
  p.hidden = 5120, p.heads = 40, p.kv_heads = 8, p.head_dim = 128, p.intermediate = 13824;
  p.vocab = 152064;
  p.log_style = style;
  p.batch_policy = v0 ? BatchPolicy::kPrefillFirst : BatchPolicy::kMixedChunked;
  p.decode_graph = true;
  p.post_step_range = v0 ? "" : "teller.update_from_output";
  p.model_module = "teller.module cls=Qwen2ForCausalLM top=1";
  p.layer_module = "teller.module cls=Qwen2DecoderLayer";
  p.host_family = HostFamily::kVllm;
  p.model_classes = {"Qwen2ForCausalLM", "Qwen2Model"};
  p.layer_class = "Qwen2DecoderLayer";
  p.host_model_file = "qwen2.py(243)";
  p.head = {Op("aten::embedding", {K(kEmbedding, Cost::kEmbedding)}),
            Op("vllm::all_reduce", {K(kVllmCustomAr, Cost::kAllReduce)}, true)};
  SetModules(p.head, {"VocabParallelEmbedding", "VocabParallelEmbedding"});
  p.layer_prefill = VllmLayer(false, v0);
  p.layer_decode = VllmLayer(true, v0);
  p.tail = {Op("_C::rms_norm", {K(kVllmRmsNorm, Cost::kNorm)}),
            Op("aten::linear", {K(kGemmLarge, Cost::kLmHead, "cuLaunchKernelEx")}),
            Op("vllm::all_gather", {K(kNcclAllGather, Cost::kAllGather)}, true)};
  p.sampler = {Op("aten::softmax", {K(kSoftmax, Cost::kSample)}),
               Op("aten::topk", {K(kTopK, Cost::kSample)}),
               Op("aten::argmax", {K(kArgMax, Cost::kSample)})};
  SetModules(p.tail, {"RMSNorm#final", "LogitsProcessor", "LogitsProcessor"});
  SetModules(p.sampler, {"Sampler", "Sampler", "Sampler"});
  p.custom_allreduce = kVllmCustomAr;
  p.nccl_allreduce = kNcclAllReduce;
  p.nccl_sendrecv = kNcclSendRecv;
  p.nccl_allgather = kNcclAllGather;
  p.fallback_sampler_note =
      "FlashInfer is not available. Falling back to the PyTorch-native implementation of "
      "top-p & top-k sampling. For the best performance, please install FlashInfer.";
  return p;
}

// --- mixture of experts with fp8 (vLLM V1, gpt-oss-120b's shape: 36 layers, 128 experts,
// top-4). Hopper runs vLLM's Triton fused-MoE path with fp8 (w8a8) experts: top-k softmax,
// the token sort by expert (moe_align_block_size), per-token fp8 quantization, two grouped
// fused_moe_kernel launches around the activation and the weighted top-k sum that undoes the
// permutation; Blackwell the TRT-LLM-gen path of the tracelens b200 trace (mxfp8 quantize,
// three routing kernels, the MxE2m1 bmm pair, finalize); MI300 the Triton matmul_ogs path of
// the tracelens vLLM gpt-oss-20b traces. The KV cache is fp8 (scaled_fp8_quant before the
// cache write, as in the b200 trace).
constexpr const char* kTopkSoftmax =
    "void vllm::moe::topkGatingSoftmax<4, 128, 4, 16, 32, int, float>(float const*, bool const*, "
    "float*, int, int*, int*, int, int, int)";
constexpr const char* kMoeAlign =
    "void vllm::moe::moe_align_block_size_kernel<int>(int const*, int*, int*, int*, int, int, "
    "int, int, unsigned long, int*)";
constexpr const char* kPerTokenFp8 =
    "void vllm::dynamic_per_token_scaled_fp8_quant_kernel<c10::BFloat16, c10::Float8_e4m3fn>("
    "c10::Float8_e4m3fn*, float*, c10::BFloat16 const*, float const*, int)";
constexpr const char* kFusedMoe = "fused_moe_kernel";
constexpr const char* kMoeSum =
    "void vllm::moe::moe_sum_kernel<c10::BFloat16, 4>(c10::BFloat16*, c10::BFloat16 const*, int)";
constexpr const char* kStaticFp8 =
    "void vllm::scaled_fp8_quant_kernel_strided<c10::BFloat16, c10::Float8_e4m3fn>("
    "c10::Float8_e4m3fn*, c10::BFloat16 const*, float const*, int, long, long)";
constexpr const char* kFp8CacheWrite =
    "void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16, unsigned char, "
    "(vllm::Fp8KVCacheDataType)1>(__nv_bfloat16 const*, __nv_bfloat16 const*, unsigned char*, "
    "unsigned char*, long const*, long, long, long, long, long, int, int, int, float const*, "
    "float const*)";
constexpr const char* kB200Mxfp8Quant =
    "void "
    "tensorrt_llm::kernels::quantize_with_block_size<(tensorrt_llm::BlockScaleQuantizationType)"
    "2, __nv_bfloat16, 32, true>(int, int, int, int, __nv_bfloat16 const*, float const*, unsigned "
    "int*, unsigned int*, flashinfer::QuantizationSFLayout)";
constexpr const char* kB200RouteScores =
    "void moe::dev::routing::routingRenormalize::routingIndicesHistogramScoresKernel<moe::dev::"
    "routing::routingRenormalize::KernelParams<__nv_bfloat16, __nv_bfloat16, 128, false, true, "
    "true> >(moe::dev::routing::routingRenormalize::KernelParams<__nv_bfloat16, __nv_bfloat16, "
    "128, false, true, true>)";
constexpr const char* kB200RouteHistogram =
    "void moe::dev::routing::routingIndicesHistogramKernel<moe::dev::routing::routingRenormalize::"
    "KernelParams<__nv_bfloat16, __nv_bfloat16, 128, false, true, true> >(moe::dev::routing::"
    "routingRenormalize::KernelParams<__nv_bfloat16, __nv_bfloat16, 128, false, true, true>)";
constexpr const char* kB200RouteOffsets =
    "void moe::dev::routing::routingIndicesOffsetsKernel<moe::dev::routing::routingRenormalize::"
    "KernelParams<__nv_bfloat16, __nv_bfloat16, 128, false, true, true> >(moe::dev::routing::"
    "routingRenormalize::KernelParams<__nv_bfloat16, __nv_bfloat16, 128, false, true, true>)";
constexpr const char* kB200Fc1 =
    "bmm_MxE4m3_MxE2m1MxE4m3_Fp32_t128x16x256u2_s3_et128x16_m128x16x32_cga1x1x1_16dp256b_rM_TN_"
    "transOut_schedP2x1x2x3_biasM_bN_tma_tmaOpt_clmp_swiGlu_dynBatch_sm100f";
constexpr const char* kB200Fc2 =
    "bmm_Bfloat16_MxE2m1MxE4m3_Fp32_t128x16x256u2_s3_et128x16_m128x16x32_cga1x1x1_16dp256b_rM_TN_"
    "transOut_schedP2x1x2x3_biasM_bN_tmaOpt_clmp_dynBatch_sm100f";
constexpr const char* kB200Finalize =
    "void moe::dev::finalize::finalizeKernelVecLoad<moe::dev::finalize::KernelParams<cutlass::"
    "bfloat16_t, cutlass::bfloat16_t, 4, true> >(moe::dev::finalize::KernelParams<cutlass::"
    "bfloat16_t, cutlass::bfloat16_t, 4, true>)";
constexpr const char* kB200Fp8Attention =
    "fmhaSm100aKernel_QkvE4m3OBfloat16H64PagedKvCausalP16VarSeqQ128Kv128PersistentContext";

KernelSpec KV(const char* name, Cost cost, const char* b200, const char* mi300,
              const char* api = "cudaLaunchKernel") {
  return KernelSpec{name, cost, api, b200, mi300};
}

std::vector<OpSpec> MoeLayer(bool decode) {
  const char* gemm = decode ? kGemmSmall : kGemmMid;
  std::vector<OpSpec> ops = {
      Op("_C::fused_add_rms_norm", {K(kVllmFusedAddNorm, Cost::kNorm)}),
      Op("aten::linear", {K(gemm, Cost::kGemmQkv, "cuLaunchKernelEx")}),
      Op("_C::rotary_embedding", {K(kVllmRotary, Cost::kRotary)}),
      // fp8 KV cache: the new K/V quantized, then written as bytes.
      Op("_C::static_scaled_fp8_quant", {KV(kStaticFp8, Cost::kQuant, "", "-")}),
      Op("_C_cache_ops::reshape_and_cache_flash", {K(kFp8CacheWrite, Cost::kKvWrite)}),
      Op("vllm::unified_attention_with_output",
         {K(kFlashSplitKv, Cost::kAttention), K(kFlashCombine, Cost::kAttentionReduce)}),
      Op("aten::linear", {K(gemm, Cost::kGemmO, "cuLaunchKernelEx")}),
      Op("vllm::all_reduce", {K(kVllmCustomAr, Cost::kAllReduce)}, true),
      Op("_C::fused_add_rms_norm", {K(kVllmFusedAddNorm, Cost::kNorm)}),
      // The router (gate): a plain GEMM of tokens x experts.
      Op("aten::linear", {K(gemm, Cost::kGemmRouter, "cuLaunchKernelEx")}),
      // Routing and the token permutation by expert.
      Op("_moe_C::topk_softmax",
         {KV(kTopkSoftmax, Cost::kMoeRoute, kB200RouteScores, "_topk_forward"),
          KV(kMoeAlign, Cost::kMoePermute, kB200RouteHistogram, "_sum_bitmatrix_rows"),
          KV("-", Cost::kMoeRoute, kB200RouteOffsets, "_combined_routing_memset"),
          KV("-", Cost::kMoeRoute, "-", "_combined_routing_compute")}),
      // Expert parallelism (--expert-parallel): tokens go to the ranks that hold their
      // experts (NCCL's all-to-all is grouped send/recv) and come back after the experts;
      // without it every rank holds a slice of every expert and the block ends with an
      // all-reduce (the tracelens b200 trace).
      Op("c10d::alltoall_base_", {K(kNcclSendRecv, Cost::kAllToAll)}, true),
      Op("vllm::moe_forward",
         {KV(kPerTokenFp8, Cost::kQuant, kB200Mxfp8Quant,
             "triton_poi_fused_constant_pad_nd_moe_forward_0"),
          KV(kFusedMoe, Cost::kMoeGemmUp, kB200Fc1,
             "_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1_swiglu", "cuLaunchKernel"),
          KV(kVllmSiluAndMul, Cost::kActivation, "-", "-"),
          KV(kPerTokenFp8, Cost::kQuant, "-", "-"),
          KV(kFusedMoe, Cost::kMoeGemmDown, kB200Fc2,
             "_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1", "cuLaunchKernel")}),
      Op("c10d::alltoall_base_", {K(kNcclSendRecv, Cost::kAllToAll)}, true),
      Op("_moe_C::moe_sum",
         {KV(kMoeSum, Cost::kMoePermute, kB200Finalize, "_finalize_matmul_scatter_bf16")}),
      Op("vllm::all_reduce", {K(kVllmCustomAr, Cost::kAllReduce)}, true),
  };
  ops[11].ep = ops[13].ep = OpSpec::Ep::kOnly;
  ops[15].ep = OpSpec::Ep::kNever;
  SetModules(ops,
             {"RMSNorm#in", "OAIAttention/QKVParallelLinear", "OAIAttention/RotaryEmbedding",
              "OAIAttention/Attention/QuantFP8", "OAIAttention/Attention", "OAIAttention/Attention",
              "OAIAttention/RowParallelLinear", "OAIAttention/RowParallelLinear", "RMSNorm#post",
              "MLPBlock/ReplicatedLinear", "MLPBlock/FusedMoE", "MLPBlock/FusedMoE",
              "MLPBlock/FusedMoE", "MLPBlock/FusedMoE", "MLPBlock/FusedMoE", "MLPBlock/FusedMoE"});
  return ops;
}

EngineProfile VllmMoe() {
  EngineProfile p = Vllm("vllm-moe", LogStyle::kVllmV1Online);
  p.model = "openai/gpt-oss-120b";
  p.layers = 36;
  p.hidden = 2880, p.heads = 64, p.kv_heads = 8, p.head_dim = 64, p.intermediate = 2880;
  p.vocab = 201088;
  p.experts = 128, p.top_k = 4, p.expert_intermediate = 2880;
  p.model_module = "teller.module cls=GptOssForCausalLM top=1";
  p.layer_module = "teller.module cls=TransformerBlock";
  p.model_classes = {"GptOssForCausalLM", "GptOssModel"};
  p.layer_class = "TransformerBlock";
  p.host_model_file = "gpt_oss.py(221)";
  p.layer_prefill = MoeLayer(false);
  p.layer_decode = MoeLayer(true);
  return p;
}

EngineProfile Sglang() {
  EngineProfile p;
  p.name = "sglang";
  p.model = "Qwen/Qwen3-14B";
  p.layers = 40;
  p.hidden = 5120, p.heads = 40, p.kv_heads = 8, p.head_dim = 128, p.intermediate = 17408;
  p.vocab = 151936;
  p.log_style = LogStyle::kSglang;
  p.batch_policy = BatchPolicy::kPrefillFirst;
  p.decode_graph = true;
  p.engine_step_range = "";
  p.schedule_range = "";
  p.post_step_range = "teller.process_result";
  p.forward_ranges = {"teller.forward_batch", "teller.forward"};
  p.model_module = "teller.module cls=Qwen3ForCausalLM top=1";
  p.layer_module = "teller.module cls=Qwen3DecoderLayer";
  auto layer = [](bool decode) {
    std::vector<OpSpec> ops = {
        Op("sgl_kernel::fused_add_rmsnorm", {K(kFiFusedAddNorm, Cost::kNorm)}),
        Op("aten::linear", {K(decode ? kGemmSmall : kGemmMid, Cost::kGemmQkv, "cuLaunchKernelEx")}),
        // Qwen3 normalizes q and k per head before rotary.
        Op("sgl_kernel::rmsnorm", {K(kFiRmsNorm, Cost::kRotary)}),
        Op("sgl_kernel::rmsnorm", {K(kFiRmsNorm, Cost::kRotary)}),
        Op("sgl_kernel::apply_rope_pos_ids_cos_sin_cache", {K(kFiRope, Cost::kRotary)}),
        Op("sglang::store_cache", {K(kSglStoreKv, Cost::kKvWrite)}),
    };
    if (decode) {
      ops.push_back(Op("teller.module cls=RadixAttention",
                       {K(kFiDecode, Cost::kAttention), K(kFiMerge, Cost::kAttentionReduce)}));
    } else {
      ops.push_back(Op("teller.module cls=RadixAttention", {K(kFiPrefill, Cost::kAttention)}));
    }
    ops.push_back(
        Op("aten::linear", {K(decode ? kGemmSmall : kGemmMid, Cost::kGemmO, "cuLaunchKernelEx")}));
    ops.push_back(Op("sglang::inplace_all_reduce", {K(kSglCustomAr, Cost::kAllReduce)}, true));
    ops.push_back(Op("sgl_kernel::fused_add_rmsnorm", {K(kFiFusedAddNorm, Cost::kNorm)}));
    ops.push_back(Op("aten::linear",
                     {K(decode ? kGemmSmall : kGemmLarge, Cost::kGemmUp, "cuLaunchKernelEx")}));
    ops.push_back(Op("sgl_kernel::silu_and_mul", {K(kFiSiluAndMul, Cost::kActivation)}));
    ops.push_back(Op("aten::linear",
                     {K(decode ? kGemmSmall : kGemmMid, Cost::kGemmDown, "cuLaunchKernelEx")}));
    ops.push_back(Op("sglang::inplace_all_reduce", {K(kSglCustomAr, Cost::kAllReduce)}, true));
    SetModules(ops, {"RMSNorm#in", "Qwen3Attention/QKVParallelLinear", "Qwen3Attention/RMSNorm#q",
                     "Qwen3Attention/RMSNorm#k", "Qwen3Attention/RotaryEmbedding",
                     "Qwen3Attention/RadixAttention", "Qwen3Attention/RadixAttention",
                     "Qwen3Attention/RowParallelLinear", "Qwen3Attention/RowParallelLinear",
                     "RMSNorm#post", "Qwen3MLP/MergedColumnParallelLinear", "Qwen3MLP/SiluAndMul",
                     "Qwen3MLP/RowParallelLinear", "Qwen3MLP/RowParallelLinear"});
    return ops;
  };
  p.host_family = HostFamily::kSglang;
  p.model_classes = {"Qwen3ForCausalLM", "Qwen3Model"};
  p.layer_class = "Qwen3DecoderLayer";
  p.host_model_file = "qwen3.py(231)";
  p.head = {Op("aten::embedding", {K(kEmbedding, Cost::kEmbedding)}),
            Op("sglang::inplace_all_reduce", {K(kSglCustomAr, Cost::kAllReduce)}, true)};
  SetModules(p.head, {"VocabParallelEmbedding", "VocabParallelEmbedding"});
  p.layer_prefill = layer(false);
  p.layer_decode = layer(true);
  p.tail = {Op("sgl_kernel::rmsnorm", {K(kFiFusedAddNorm, Cost::kNorm)}),
            Op("aten::linear", {K(kGemmLarge, Cost::kLmHead, "cuLaunchKernelEx")}),
            Op("sglang::all_gather", {K(kNcclAllGather, Cost::kAllGather)}, true)};
  p.sampler = {Op("aten::softmax", {K(kSoftmax, Cost::kSample)}),
               Op("aten::argmax", {K(kArgMax, Cost::kSample)})};
  SetModules(p.tail, {"RMSNorm#final", "LogitsProcessor", "LogitsProcessor"});
  SetModules(p.sampler, {"Sampler", "Sampler"});
  p.custom_allreduce = kSglCustomAr;
  p.nccl_allreduce = kNcclAllReduce;
  p.nccl_sendrecv = kNcclSendRecv;
  p.nccl_allgather = kNcclAllGather;
  p.fallback_sampler_note =
      "flashinfer sampling kernels are not available; using torch.multinomial-based sampling.";
  return p;
}

EngineProfile TorchFsdp() {
  EngineProfile p;
  p.name = "torch-fsdp";
  p.model = "meta-llama/Llama-3.1-8B-Instruct";
  p.layers = 32;
  p.hidden = 4096, p.heads = 32, p.kv_heads = 8, p.head_dim = 128, p.intermediate = 14336;
  p.vocab = 128256;
  p.log_style = LogStyle::kTorch;
  p.batch_policy = BatchPolicy::kStatic;
  p.decode_graph = false;
  p.fsdp = true;
  p.engine_step_range = "";
  p.schedule_range = "";
  p.model_module = "teller.module cls=FSDPLlamaForCausalLM top=1";
  p.layer_module = "teller.module cls=LlamaDecoderLayer";
  auto norm = [] {
    return std::vector<OpSpec>{Op("aten::pow", {K(kTorchPow, Cost::kElementwise)}),
                               Op("aten::mean", {K(kTorchMean, Cost::kNorm)}),
                               Op("aten::rsqrt", {K(kTorchRsqrt, Cost::kElementwise)}),
                               Op("aten::mul", {K(kTorchMul, Cost::kElementwise)})};
  };
  std::vector<OpSpec> layer = {Op("FSDP::all_gather", {K(kNcclAllGather, Cost::kAllGather)}, true),
                               Op("FSDP::all_gather_copy_out", {K(kTorchCopy, Cost::kCopy)})};
  for (auto& o : norm()) layer.push_back(o);
  for (Cost c : {Cost::kGemmQkv, Cost::kGemmQkv, Cost::kGemmQkv}) {
    layer.push_back(Op("aten::linear", {K(kGemmMid, c)}));
  }
  layer.push_back(Op("aten::mul", {K(kTorchMul, Cost::kRotary)}));
  layer.push_back(Op("aten::cat", {K(kTorchCat, Cost::kRotary)}));
  layer.push_back(Op("aten::add", {K(kTorchAdd, Cost::kRotary)}));
  layer.push_back(Op("aten::index_copy_", {K(kTorchIndexCopy, Cost::kKvWrite)}));
  layer.push_back(Op("aten::scaled_dot_product_attention", {K(kTorchSdpaFlash, Cost::kAttention)}));
  layer.push_back(Op("aten::linear", {K(kGemmMid, Cost::kGemmO)}));
  layer.push_back(Op("aten::add", {K(kTorchAdd, Cost::kElementwise)}));
  for (auto& o : norm()) layer.push_back(o);
  layer.push_back(Op("aten::linear", {K(kGemmLarge, Cost::kGemmUp)}));
  layer.push_back(Op("aten::linear", {K(kGemmLarge, Cost::kGemmUp)}));
  layer.push_back(Op("aten::silu", {K(kTorchSilu, Cost::kActivation)}));
  layer.push_back(Op("aten::mul", {K(kTorchMul, Cost::kActivation)}));
  layer.push_back(Op("aten::linear", {K(kGemmLarge, Cost::kGemmDown)}));
  layer.push_back(Op("aten::add", {K(kTorchAdd, Cost::kElementwise)}));
  SetModules(layer, {"",
                     "",
                     "LlamaRMSNorm#in",
                     "LlamaRMSNorm#in",
                     "LlamaRMSNorm#in",
                     "LlamaRMSNorm#in",
                     "LlamaAttention/Linear#q",
                     "LlamaAttention/Linear#k",
                     "LlamaAttention/Linear#v",
                     "LlamaAttention",
                     "LlamaAttention",
                     "LlamaAttention",
                     "LlamaAttention",
                     "LlamaAttention",
                     "LlamaAttention/Linear#o",
                     "",
                     "LlamaRMSNorm#post",
                     "LlamaRMSNorm#post",
                     "LlamaRMSNorm#post",
                     "LlamaRMSNorm#post",
                     "LlamaMLP/Linear#gate",
                     "LlamaMLP/Linear#up",
                     "LlamaMLP/SiLU",
                     "LlamaMLP",
                     "LlamaMLP/Linear#down",
                     ""});
  p.host_family = HostFamily::kHf;
  p.model_classes = {"LlamaForCausalLM", "LlamaModel"};
  p.layer_class = "LlamaDecoderLayer";
  p.host_model_file = "llama/modeling_llama.py(283)";
  p.head = {Op("aten::embedding", {K(kEmbedding, Cost::kEmbedding)})};
  SetModules(p.head, {"Embedding"});
  p.layer_prefill = layer;
  p.layer_decode = layer;
  p.tail = norm();
  p.tail.push_back(Op("aten::linear", {K(kGemmLarge, Cost::kLmHead)}));
  SetModules(p.tail, {"LlamaRMSNorm#final", "LlamaRMSNorm#final", "LlamaRMSNorm#final",
                      "LlamaRMSNorm#final", "Linear#lm_head"});
  p.sampler = {Op("aten::softmax", {K(kSoftmax, Cost::kSample)}),
               Op("aten::argmax", {K(kArgMax, Cost::kSample)})};
  p.sampler_range = "teller.module cls=GreedySampler";
  p.custom_allreduce = kNcclAllReduce;
  p.nccl_allreduce = kNcclAllReduce;
  p.nccl_sendrecv = kNcclSendRecv;
  p.nccl_allgather = kNcclAllGather;
  p.fallback_sampler_note = "falling back to the unfused sampling path";
  return p;
}

}  // namespace

bool IsGemm(Cost c) {
  switch (c) {
    case Cost::kGemmQkv:
    case Cost::kGemmO:
    case Cost::kGemmUp:
    case Cost::kGemmDown:
    case Cost::kLmHead:
    case Cost::kGemmRouter:
      return true;
    default:
      return false;
  }
}

bool IsComputeBound(Cost c) {
  return IsGemm(c) || c == Cost::kAttention || c == Cost::kMoeGemmUp || c == Cost::kMoeGemmDown;
}

bool IsComm(Cost c) {
  return c == Cost::kAllReduce || c == Cost::kAllGather || c == Cost::kSendRecv ||
         c == Cost::kAllToAll;
}

std::string_view CostFamily(Cost c) {
  switch (c) {
    case Cost::kNorm:
      return "norm";
    case Cost::kRotary:
      return "rotary";
    case Cost::kKvWrite:
      return "kv_write";
    case Cost::kActivation:
      return "activation";
    case Cost::kElementwise:
      return "elementwise";
    case Cost::kCopy:
      return "copy";
    case Cost::kGemmQkv:
    case Cost::kGemmO:
    case Cost::kGemmUp:
    case Cost::kGemmDown:
    case Cost::kLmHead:
      return "gemm";
    case Cost::kAttention:
      return "attention";
    case Cost::kAttentionReduce:
      return "attention_reduce";
    case Cost::kAllReduce:
      return "allreduce";
    case Cost::kAllGather:
      return "allgather";
    case Cost::kSendRecv:
      return "sendrecv";
    case Cost::kSample:
      return "sampling";
    case Cost::kEmbedding:
      return "embedding";
    case Cost::kGemmRouter:
    case Cost::kMoeGemmUp:
    case Cost::kMoeGemmDown:
      return "gemm";
    case Cost::kMoeRoute:
      return "moe_routing";
    case Cost::kMoePermute:
      return "moe_permute";
    case Cost::kQuant:
      return "quant";
    case Cost::kAllToAll:
      return "alltoall";
  }
  return "other";
}

bool IsProfile(std::string_view name) { return FindProfile(name) != nullptr; }

const EngineProfile* FindProfile(std::string_view name) {
  static const std::vector<EngineProfile> kAll = {Sglang(),
                                                  TorchFsdp(),
                                                  VllmMoe(),
                                                  Vllm("vllm-v0", LogStyle::kVllmV0),
                                                  Vllm("vllm-v1-offline", LogStyle::kVllmV1Offline),
                                                  Vllm("vllm-v1-online", LogStyle::kVllmV1Online)};
  for (const EngineProfile& p : kAll) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

std::string MakeRequestId(LogStyle style, uint64_t index, Rng& rng) {
  auto hex = [&rng](int digits) {
    std::string s;
    static const char* kHex = "0123456789abcdef";
    for (int i = 0; i < digits; ++i) s += kHex[rng.Below(16)];
    return s;
  };
  switch (style) {
    case LogStyle::kVllmV0:
      return "cmpl-" + hex(32) + "-0";  // completions API: cmpl-<32 hex>-<prompt index>
    case LogStyle::kVllmV1Online:
      return "chatcmpl-" + hex(16) + "-" + hex(8);  // engine-internal id of a chat request
    case LogStyle::kVllmV1Offline:
      return std::to_string(index);  // LLM.generate numbers its requests
    case LogStyle::kSglang:
      return hex(32);  // rid = uuid4().hex
    case LogStyle::kTorch: {
      char buf[32];
      std::snprintf(buf, sizeof buf, "req-%06llu", static_cast<unsigned long long>(index));
      return buf;
    }
  }
  return std::to_string(index);
}

}  // namespace teller::sim
