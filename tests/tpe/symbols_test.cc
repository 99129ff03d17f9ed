// Symbol normalization, rule v1 (include/teller/tpe/symbols.h): what is replaced, and
// what must stay because it names different code.
#include "teller/tpe/symbols.h"

#include <gtest/gtest.h>

namespace teller::tpe {
namespace {

std::string K(std::string_view name) { return NormalizeName(TypeTag::kKernel, name); }
std::string FE(std::string_view name) { return NormalizeName(TypeTag::kFrontend, name); }

TEST(NormalizeName, StepRangesLoseTheirPerStepValues) {
  EXPECT_EQ(NormalizeName(TypeTag::kStep,
                          "teller.step seq=12 kind=decode n=3 tokens=3 "
                          "reqs=chatcmpl-e2a4da5ae432f354-50da846f,cmpl-b7"),
            "teller.step seq=* kind=decode n=* tokens=* reqs=*");
  EXPECT_EQ(NormalizeName(
                TypeTag::kStep,
                "teller.step seq=1 kind=mixed n=2 prefill=req-000001,req-000002 reqs=req-000001"),
            "teller.step seq=* kind=mixed n=* prefill=* reqs=*");
  // An empty value (a rank with no requests) stays: an idle step is a different step.
  EXPECT_EQ(NormalizeName(TypeTag::kStep, "teller.step seq=1 kind=prefill n=0 tokens=0 reqs="),
            "teller.step seq=* kind=prefill n=* tokens=* reqs=");
  // Hex request ids, whether they start with a digit or a letter.
  EXPECT_EQ(NormalizeName(TypeTag::kStep, "teller.step reqs=bbdd357ca43cec34ee5125f68aeb87d9"),
            "teller.step reqs=*");
  EXPECT_EQ(NormalizeName(TypeTag::kStep, "teller.step reqs=0d3508c8b08142e17e82e785e9ae0068"),
            "teller.step reqs=*");
  // The engine's own markers, with the request ids inline.
  EXPECT_EQ(NormalizeName(TypeTag::kStep, "step#812 decode reqs=cmpl-a1,cmpl-b7"),
            "step## decode reqs=*");
}

TEST(NormalizeName, IdentifierValuesAndDigitsInsideIdentifiersStay) {
  EXPECT_EQ(FE("teller.module cls=Qwen2DecoderLayer"), "teller.module cls=Qwen2DecoderLayer");
  EXPECT_EQ(FE("teller.module cls=Qwen2ForCausalLM top=1"),
            "teller.module cls=Qwen2ForCausalLM top=*");
  EXPECT_EQ(NormalizeName(TypeTag::kComm, "teller.comm op=send"), "teller.comm op=send");
  EXPECT_EQ(FE("model.layers.17.self_attn"), "model.layers.#.self_attn");
  EXPECT_EQ(FE("aten::view [4, 4096] 0x7f3a2c001000"), "aten::view [#, #] #");
  EXPECT_EQ(FE("bucket_size 0.5 ms"), "bucket_size # ms");
  EXPECT_EQ(FE("layer_3"), "layer_3");  // '_' joins it to the identifier
}

TEST(NormalizeName, KernelsDropSignaturesAndNumericTemplateArguments) {
  EXPECT_EQ(K("void vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, long, "
              "c10::BFloat16*, c10::BFloat16 const*, float, int, int)"),
            "vllm::fused_add_rms_norm_kernel<c10::BFloat16, #>");
  // The same kernel with other tuning constants is the same symbol...
  EXPECT_EQ(K("void vllm::fused_add_rms_norm_kernel<c10::BFloat16, 4>(c10::BFloat16*)"),
            K("void vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*)"));
  // ...but another dtype, boolean or enum argument is different code.
  EXPECT_NE(K("void vllm::fused_add_rms_norm_kernel<float, 8>(float*)"),
            K("void vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*)"));
  EXPECT_NE(K("void vllm::rotary_embedding_kernel<c10::BFloat16, true>(long const*)"),
            K("void vllm::rotary_embedding_kernel<c10::BFloat16, false>(long const*)"));
  EXPECT_EQ(K("void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16, "
              "(vllm::Fp8KVCacheDataType)0>(int)"),
            "vllm::reshape_and_cache_flash_kernel<__nv_bfloat16, (vllm::Fp8KVCacheDataType)0>");
  EXPECT_EQ(K("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)"),
            "ncclDevKernel_SendRecv");
  EXPECT_EQ(
      K("void at::native::(anonymous namespace)::indexSelectLargeIndex<c10::BFloat16, long, "
        "unsigned int, 2, 2, -2, true>(at::cuda::detail::TensorInfo<c10::BFloat16, unsigned int>)"),
      "at::native::(anonymous namespace)::indexSelectLargeIndex<c10::BFloat16, long, unsigned "
      "int, #, #, -#, true>");
  // Lambda ordinals tell different lambdas apart.
  EXPECT_EQ(K("void at::native::vectorized_elementwise_kernel<4, "
              "at::native::silu_kernel(at::TensorIteratorBase&)::"
              "{lambda()#1}::operator()() const::{lambda()#4}, std::array<char*, 2ul> >(int)"),
            "at::native::vectorized_elementwise_kernel<#, "
            "at::native::silu_kernel(at::TensorIteratorBase&)::"
            "{lambda()#1}::operator()() const::{lambda()#4}, std::array<char*, #> >");
  // cuBLAS names its algorithm in the identifier: another tile size is another kernel.
  const std::string gemm =
      "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_"
      "segment_k_off_kernel__5x_cublas";
  EXPECT_EQ(K(gemm), gemm);
  // Non-kernels keep their parentheses.
  EXPECT_EQ(NormalizeName(TypeTag::kMemory, "Memcpy DtoH (Device -> Pinned)"),
            "Memcpy DtoH (Device -> Pinned)");
}

TEST(NormalizeName, IdLikeHexWordsBecomeHashes) {
  EXPECT_EQ(FE("request 3f2a9c1b-77aa-4e0f-9d7c-0a1b2c3d4e5f done"), "request # done");
  EXPECT_EQ(FE("chatcmpl-e2a4da5ae432f354-50da846f"), "chatcmpl-#");
  EXPECT_EQ(FE("req-000017"), "req-#");
  EXPECT_EQ(FE("cafebabe"), "cafebabe");  // no digit: a word
  EXPECT_EQ(FE("sm90_xmma_bf16bf16"), "sm90_xmma_bf16bf16");
}

TEST(SymbolText, TagThenName) {
  EXPECT_EQ(SymbolText(TypeTag::kKernel, "gemm"), "[K] gemm");
  EXPECT_EQ(SymbolText(TypeTag::kRuntime, ""), "[RT]");
  EXPECT_EQ(TypeTagText(TypeTag::kGpuAnnotation), "[GANN]");
}

}  // namespace
}  // namespace teller::tpe
