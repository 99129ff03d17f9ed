// Kernel choice by shape and vendor (kernels.h). The rules follow what the libraries do
// (cuBLAS/cuBLASLt and hipBLASLt pick a tile by M/N/K and split the reduction when few
// output tiles would leave the GPU idle; FlashAttention, FlashInfer, the Triton unified
// attention and the ROCm paged attention split the KV sequence when batch x heads cannot
// fill the SMs and then launch a combine/reduce kernel); the names are the ones the real
// traces show (docs/serving-notes.md §2, tracelens).
#include "src/sim/kernels.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace teller::sim {
namespace {

std::string Format(const char* fmt, int a, int b, int c = 0, int d = 0) {
  char buf[256];
  std::snprintf(buf, sizeof buf, fmt, a, b, c, d);
  return buf;
}

constexpr const char* kSplitKReduce =
    "void cublasLt::splitKreduce_kernel<32, 16, int, float, __nv_bfloat16, float, "
    "__nv_bfloat16, true, false, false>(cublasLt::cublasSplitKParams<float>, float const*, "
    "__nv_bfloat16 const*, __nv_bfloat16*, float const*, float const*, __nv_bfloat16 const*, "
    "float const*, __nv_bfloat16*, void*, long, float*, int*)";

// Split-K: a skinny GEMM (few rows) with a deep reduction splits K across CTAs.
bool SplitK(const LaunchShape& s) { return s.m <= 64 && s.k >= 2 * s.n; }

KernelChoice Gemm(Vendor v, const LaunchShape& s) {
  KernelChoice c;
  const bool split = SplitK(s);
  switch (v) {
    case Vendor::kHopper: {
      if (s.m <= 1) {
        c.name =
            "void internal::gemvx::kernel<int, int, __nv_bfloat16, __nv_bfloat16, "
            "__nv_bfloat16, float, false, true, true, false, 7, false, "
            "cublasGemvParamsEx<int, cublasGemvTensorStridedBatched<__nv_bfloat16 const>, "
            "cublasGemvTensorStridedBatched<__nv_bfloat16 const>, "
            "cublasGemvTensorStridedBatched<__nv_bfloat16>, float> >(cublasGemvParamsEx<int, "
            "cublasGemvTensorStridedBatched<__nv_bfloat16 const>, "
            "cublasGemvTensorStridedBatched<__nv_bfloat16 const>, "
            "cublasGemvTensorStridedBatched<__nv_bfloat16>, float>)";
        return c;
      }
      int tm = 64, tn = 64;
      if (s.m <= 64) {
        tn = s.n >= 8192 ? 128 : 64;
      } else if (s.m <= 128) {
        tm = 128, tn = 128;
      } else if (s.m <= 256) {
        tm = 128, tn = 192;
      } else if (s.m <= 1024) {
        tm = 128, tn = 256;
      } else {
        tm = 256, tn = 128;
      }
      char buf[192];
      std::snprintf(buf, sizeof buf,
                    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize%dx%dx64_warpgroupsize%dx1x1_"
                    "execute_segment_k_%s_kernel__5x_cublas",
                    tm, tn, tm / 64, split ? "on" : "off");
      c.name = buf;
      if (split) c.reduce = kSplitKReduce;
      return c;
    }
    case Vendor::kBlackwell: {
      // nvjet tiles: for few tokens cuBLASLt swaps A and B (the tile's second number is
      // the token side).
      int a = 256, b = 128, stages = 6;
      const char* cluster = "2x1_2cta_v";
      if (s.m <= 8) {
        a = 192, b = 8, stages = 8, cluster = "4x1_v";
      } else if (s.m <= 16) {
        a = 64, b = 16, stages = 16, cluster = "2x4_2cta_h";
      } else if (s.m <= 64) {
        a = 64, b = 64, stages = 16, cluster = "2x1_2cta_v";
      } else if (s.m <= 128) {
        a = 128, b = 64, stages = 8, cluster = "2x1_v";
      } else if (s.m <= 1024) {
        a = 144, b = 128, stages = 6, cluster = "2x1_v";
      }
      char buf[128];
      std::snprintf(buf, sizeof buf, "nvjet_tst_%dx%d_64x%d_%s_bz%s_TNT", a, b, stages, cluster,
                    split ? "_splitK" : "");
      c.name = buf;
      if (split) c.reduce = kSplitKReduce;
      return c;
    }
    case Vendor::kMi300: {
      // hipBLASLt MT<weight tile>x<token tile>x<depth>; GSU = global split-U (split-K),
      // reduced inside the kernel.
      const int token = s.m <= 16    ? 16
                        : s.m <= 32  ? 32
                        : s.m <= 48  ? 48
                        : s.m <= 64  ? 64
                        : s.m <= 128 ? 128
                        : s.m <= 512 ? 192
                                     : 224;
      int weight = 0, depth = 64;
      if (s.m <= 64) {
        weight = s.n >= 16384 ? 256 : s.n >= 8192 ? 64 : 32;
        depth = s.n >= 16384 ? 64 : s.k >= 2 * s.n ? 512 : 256;
      } else {
        weight = s.n >= 16384 ? 320 : s.n >= 8192 ? 256 : 128;
      }
      char buf[512];
      std::snprintf(buf, sizeof buf,
                    "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT%dx%dx%d_MI16x16x1_SN_LDSB1_"
                    "AFC1_AFEM1_AFEM1_ASEM1_CLR1_CADS0_DTVA0_DTVB0_EPS0_FDSI0_GRPM1_GRVWA8_GRVWB8_"
                    "GSU%d_GSUAMB_GLS0_ISA942_IU1_K1_LBSPPA128_LBSPPB128_LBSPPM0_LPA16_LPB16_LPM0_"
                    "LRVW8_LWPMn1_MIAV0_MIWT1_1_MO40_NTn1_NTA0_NTB0_NTC0_NTD0_NTM0_NEPBS16_NLCA1_"
                    "NLCB1_ONLL1_PGR2_PLR1_PKA1_SIA3_SS1_SPO0_SRVW0_SSO0_SVW8_SK0_SNLL0_TT1_1_"
                    "TLDS1_ULSGRO0_USL1_UIOFGRO0_USFGROn1_VSn1_VWA1_VWB1_WSGRA0_WSGRB0_WS64_WG%d_"
                    "%d_1_WGM8",
                    weight, token, depth, split ? 4 : 1, std::min(weight, 64), 256 / 64);
      c.name = buf;
      return c;
    }
  }
  return c;
}

// KV splits of decode attention: enough CTAs to fill the device, at most one split per
// 256 tokens of context, at most 8.
int KvSplits(const DeviceModel& d, const LaunchShape& s) {
  if (s.prefill) return 1;
  const double ctas = s.seqs * std::max(1.0, s.q_heads);
  if (ctas >= 0.8 * d.sms) return 1;
  const int by_fill = static_cast<int>(std::ceil(d.sms / ctas));
  const int by_ctx = static_cast<int>(std::ceil(s.ctx_per_seq / 256.0));
  return std::clamp(std::min(by_fill, by_ctx), 1, 8);
}

int CeilLog2(int x) {
  int l = 0;
  while ((1 << l) < x) ++l;
  return l;
}

enum class Family : uint8_t { kFlash, kFlashInfer, kTorch, kOther };
Family FamilyOf(const std::string& name) {
  if (name.find("flashinfer") != std::string::npos) return Family::kFlashInfer;
  if (name.find("pytorch_flash") != std::string::npos) return Family::kTorch;
  if (name.find("flash::") != std::string::npos) return Family::kFlash;
  return Family::kOther;
}

KernelChoice Attention(Vendor v, const KernelSpec& k, const LaunchShape& s) {
  KernelChoice c;
  const Family fam = FamilyOf(k.name);
  if (fam == Family::kTorch || fam == Family::kOther) return c;
  const int splits = KvSplits(Device(v), s);
  const bool reduce = k.cost == Cost::kAttentionReduce;
  switch (v) {
    case Vendor::kHopper:
      if (reduce) {
        if (splits <= 1) {
          c.skip = true;
        } else if (fam == Family::kFlash) {
          c.name = Format(
              "void flash::flash_fwd_splitkv_combine_kernel<Flash_fwd_kernel_traits<128, 64, "
              "128, 4, false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 4, "
              "cutlass::bfloat16_t> >, %d, %d, false>(flash::Flash_fwd_params)",
              4, CeilLog2(splits));
        }
        return c;
      }
      if (fam == Family::kFlashInfer && s.prefill) {
        // CTA tile over queries by the mean query length.
        const int tile = s.q_per_seq >= 128 ? 128 : s.q_per_seq >= 64 ? 64 : 16;
        c.name = k.name;
        const std::string from = "(flashinfer::MaskMode)1, 128u,";
        const size_t at = c.name.find(from);
        if (at != std::string::npos)
          c.name.replace(at, from.size(),
                         "(flashinfer::MaskMode)1, " + std::to_string(tile) + "u,");
      } else if (fam == Family::kFlash && s.prefill &&
                 k.name.find("splitkv") != std::string::npos) {
        // Varlen prefill without KV splits: the plain forward kernel, M tile by length.
        c.name = Format(
            "void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, %d, %d, 4, false, false, "
            "cutlass::bfloat16_t, Flash_kernel_traits<128, %d, %d, 4, cutlass::bfloat16_t> >, "
            "false, true, false, false, true, true, false, false>(flash::Flash_fwd_params)",
            s.q_per_seq >= 128 ? 128 : 64, s.q_per_seq >= 128 ? 64 : 128,
            s.q_per_seq >= 128 ? 128 : 64, s.q_per_seq >= 128 ? 64 : 128);
      }
      return c;
    case Vendor::kBlackwell:
      if (reduce) {
        c.skip = true;  // trtllm-gen kernels reduce their KV splits inside
        return c;
      }
      c.name = s.prefill
                   ? "fmhaSm100aKernel_QkvBfloat16OBfloat16H128PagedKvCausalP32VarSeqQ128Kv128"
                     "PersistentContext"
                   : std::string(
                         "fmhaSm100aKernel_QkvBfloat16OBfloat16H128PagedKvDenseP32"
                         "VarSeqQ") +
                         (s.seqs <= 8 ? "8" : "16") + "Kv128" + (splits > 1 ? "MultiCtasKv" : "") +
                         "PersistentSwapsAbForGen";
      return c;
    case Vendor::kMi300:
      if (fam == Family::kFlash) {
        // vLLM's Triton unified attention: 3-D (segmented) with a reduce when split.
        if (reduce) {
          if (splits <= 1)
            c.skip = true;
          else
            c.name = "reduce_segments";
        } else {
          c.name = splits > 1 ? "kernel_unified_attention_3d" : "kernel_unified_attention_2d";
        }
        return c;
      }
      // SGLang on ROCm: ck_tile prefill, paged-attention ll4mi decode with a reduce over
      // 256-token partitions.
      if (s.prefill) {
        if (reduce) {
          c.skip = true;
        } else {
          c.name =
              "_ZN7ck_tile6kentryILi2ENS_38FmhaBatchPrefillWithPagedKVCacheKernelINS_"
              "40BlockFmhaBatchPrefillPipelineQRKSVSAsyncINS_29BlockFmhaPipelineProblemIDF16bDF16b"
              "DF16bfffDF16bhDF16bDF16bNS_13TileFmhaShapeINS_8sequenceIJLi128ELi128ELi32ELi128E"
              "Li32ELi128EEEE";
        }
        return c;
      }
      {
        const int partitions = std::max(1, static_cast<int>(std::ceil(s.ctx_per_seq / 256.0)));
        if (reduce) {
          if (partitions <= 1) {
            c.skip = true;
          } else {
            c.name = Format(
                "void paged_attention_ll4mi_reduce_kernel<__hip_bfloat16, __hip_bfloat16, 128, "
                "128, 256, %d, false>(__hip_bfloat16*, float const*, float const*, "
                "__hip_bfloat16 const*, int const*, int const*, int, float const*)",
                std::clamp(CeilLog2(partitions), 1, 8), 0);
          }
        } else {
          c.name =
              "void paged_attention_ll4mi_QKV_mfma16_kernel<0, __hip_bfloat16, __hip_bfloat16, "
              "(vllm::Fp8KVCacheDataType)0, 1, 128, 256, false, 4, 1, "
              "ck_tile::ComposedAttention<0u, true> >(__hip_bfloat16 const*, "
              "__hip_bfloat16 const*, __hip_bfloat16 const*, int, float, int const*, int const*, "
              "int const*, int, float const*, int, int, int, float*, float*, __hip_bfloat16*, "
              "__hip_bfloat16*, int, float const*, float const*, float const*)";
        }
      }
      return c;
  }
  return c;
}

}  // namespace

bool ParseVendor(std::string_view name, Vendor* out) {
  if (name == "h100" || name == "hopper" || name == "h200") {
    *out = Vendor::kHopper;
  } else if (name == "b200" || name == "blackwell") {
    *out = Vendor::kBlackwell;
  } else if (name == "mi300" || name == "mi300x") {
    *out = Vendor::kMi300;
  } else {
    return false;
  }
  return true;
}

std::string_view VendorName(Vendor v) {
  switch (v) {
    case Vendor::kHopper:
      return "h100";
    case Vendor::kBlackwell:
      return "b200";
    case Vendor::kMi300:
      return "mi300";
  }
  return "h100";
}

const DeviceModel& Device(Vendor v) {
  // Achievable (not peak) bandwidth and bf16 rate. H100: the model's original fit
  // (docs/serving-notes.md §2.3). B200: 8 TB/s HBM3e and ~2.2 PF dense bf16, scaled by the
  // same efficiency as the H100 pair. MI300X: 5.3 TB/s, ~1.3 PF; its smallest kernels take
  // about 2.5 us more than on H100 (tracelens SGLang Qwen3-8B decode: norm, rotary and KV
  // write medians 4.7-5.3 us against 2.0-2.5 us for the same shapes on H100).
  static const DeviceModel kHopper{2.2e6, 6.5e8, 0.0, 132};
  static const DeviceModel kBlackwell{5.2e6, 1.45e9, 0.0, 148};
  static const DeviceModel kMi300{3.5e6, 8.5e8, 2.5, 304};
  switch (v) {
    case Vendor::kHopper:
      return kHopper;
    case Vendor::kBlackwell:
      return kBlackwell;
    case Vendor::kMi300:
      return kMi300;
  }
  return kHopper;
}

KernelChoice ChooseKernel(Vendor v, const EngineProfile& p, const KernelSpec& k,
                          const LaunchShape& s) {
  (void)p;
  if (IsGemm(k.cost)) return Gemm(v, s);
  if (k.cost == Cost::kAttention || k.cost == Cost::kAttentionReduce) return Attention(v, k, s);
  return {};
}

std::string VendorSpelling(Vendor v, const std::string& name) {
  if (v != Vendor::kMi300) return name;
  std::string out = name;
  for (const std::string from : {"__nv_bfloat16", "cutlass::bfloat16_t"}) {
    for (size_t at = out.find(from); at != std::string::npos; at = out.find(from, at))
      out.replace(at, from.size(), "__hip_bfloat16");
  }
  return out;
}

int GraphBucket(int seqs) {
  if (seqs <= 1) return 1;
  if (seqs <= 2) return 2;
  if (seqs <= 4) return 4;
  if (seqs >= 512) return 512;
  return (seqs + 7) / 8 * 8;
}

}  // namespace teller::sim
