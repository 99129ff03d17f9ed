// Internals of the simulator shared by its files: the seeded random source, engine
// profiles (what a real engine's trace and logs look like), and the cost model.
#ifndef TELLER_SRC_SIM_SIM_INTERNAL_H_
#define TELLER_SRC_SIM_SIM_INTERNAL_H_

#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace teller::sim {

// xoshiro256** seeded through splitmix64. Our own distributions (not <random>'s, whose
// algorithms differ between standard libraries) keep "same seed, same bytes" portable.
class Rng {
 public:
  explicit Rng(uint64_t seed) {
    for (uint64_t& w : s_) {
      seed += 0x9E3779B97F4A7C15ull;
      uint64_t z = seed;
      z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
      z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
      w = z ^ (z >> 31);
    }
  }
  uint64_t Next() {
    const uint64_t result = Rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = Rotl(s_[3], 45);
    return result;
  }
  // [0, 1)
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }
  double Uniform(double lo, double hi) { return lo + (hi - lo) * Uniform(); }
  uint64_t Below(uint64_t n) { return n == 0 ? 0 : Next() % n; }
  bool Chance(double p) { return Uniform() < p; }
  double Normal() {
    // Box-Muller; the second value is dropped to keep the stream simple.
    const double u1 = 1.0 - Uniform();
    const double u2 = Uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
  // Lognormal with the given median and log-space sigma.
  double LogNormal(double median, double sigma) { return median * std::exp(sigma * Normal()); }
  double Exponential(double mean) { return -mean * std::log(1.0 - Uniform()); }
  // A fork for an independent sub-stream (per rank, per request...).
  Rng Fork(uint64_t salt) { return Rng(Next() ^ (salt * 0xD1B54A32D192ED03ull)); }

 private:
  static uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

// What decides a kernel's duration (the cost model in executor.cc).
enum class Cost : uint8_t {
  kNorm,
  kRotary,
  kKvWrite,
  kActivation,
  kElementwise,
  kCopy,  // memory-bound, per token
  kGemmQkv,
  kGemmO,
  kGemmUp,
  kGemmDown,
  kLmHead,  // matmuls
  kAttention,
  kAttentionReduce,  // attention over the KV cache
  kAllReduce,
  kAllGather,
  kSendRecv,  // communication
  kSample,
  kEmbedding,
  // Mixture of experts (the vllm-moe profile) and fp8.
  kGemmRouter,   // router/gate GEMM: tokens x experts
  kMoeRoute,     // top-k softmax / routing bookkeeping
  kMoePermute,   // tokens sorted by expert, and back (weighted top-k sum)
  kMoeGemmUp,    // grouped expert GEMM, gate_up (fp8 / mxfp4 weights)
  kMoeGemmDown,  // grouped expert GEMM, down
  kQuant,        // activation quantization to fp8
  kAllToAll,     // expert-parallel dispatch / combine
};
// The projection and LM-head GEMMs.
bool IsGemm(Cost c);
bool IsComputeBound(Cost c);
bool IsComm(Cost c);

// Operator classes for fault targets and reports ("attention", "gemm", ...).
std::string_view CostFamily(Cost c);

struct KernelSpec {
  std::string name;
  Cost cost;
  std::string api = "cudaLaunchKernel";  // the host call that launches it (eager)
  // With kernel choice by device (--gpu), the name on Blackwell and on MI300 where the
  // engine runs another kernel there ("" = this name; "-" = none launched on that device).
  std::string b200 = {}, mi300 = {};
};

// One operator of a layer: the framework range around it (the cpu-op name that PyTorch's
// NVTX emission or a hook records; "" = no range) and its kernels, in order.
struct OpSpec {
  std::string range;
  std::vector<KernelSpec> kernels;
  bool comm = false;  // a collective across the tensor-parallel group
  // The nn.Module path of the operator inside its decoder layer (or head, tail, sampler),
  // outermost first: "Class" or "Class#tag" (the tag tells sibling instances of one class
  // apart: q_proj / k_proj). Consecutive operators with the same element at a depth share
  // that module call. Only the host stack (--host-stack) emits them.
  std::vector<std::string> modules;
  // Expert parallelism (SimConfig::expert_parallel): kAlways, or only with / without it
  // (the all-to-alls of EP; the all-reduce of tensor-parallel experts).
  enum class Ep : uint8_t { kAlways, kOnly, kNever } ep = Ep::kAlways;
};

// Whose framework code runs on the host (the host stack's Python frames and recipes).
enum class HostFamily : uint8_t { kVllm, kSglang, kHf };

enum class LogStyle : uint8_t { kVllmV0, kVllmV1Online, kVllmV1Offline, kSglang, kTorch };
enum class BatchPolicy : uint8_t {
  kMixedChunked,  // vLLM v1: decodes and prefill chunks share a step
  kPrefillFirst,  // vLLM v0 / SGLang: an all-prefill step when waiting requests fit
  kStatic,        // plain PyTorch: a fixed batch runs to completion
};

struct EngineProfile {
  std::string name;
  std::string model;  // shown in logs
  int layers = 32;
  int hidden = 4096, heads = 32, kv_heads = 8, head_dim = 128, intermediate = 14336;
  int vocab = 128256;
  // Mixture of experts: experts (0 = dense), experts per token, expert FFN width. The
  // experts are sharded over the tensor-parallel group (expert parallelism, EP = TP).
  int experts = 0, top_k = 0, expert_intermediate = 0;
  LogStyle log_style = LogStyle::kVllmV1Online;
  BatchPolicy batch_policy = BatchPolicy::kMixedChunked;
  bool decode_graph = true;  // decode replays one CUDA graph per step
  bool fsdp = false;         // parameters all-gathered per layer on a side stream
  std::string step_marker;   // engine's own step marker inside teller.step ("" = none)
  // Ranges on the scheduling process around the step (outermost first).
  std::string engine_step_range = "teller.engine_step";
  std::string schedule_range = "teller.schedule";
  std::string post_step_range;              // after the forward (update_from_output...); "" = none
  std::vector<std::string> forward_ranges;  // inside teller.step, around the model
  std::string model_module, layer_module;
  // nn.Module classes of the model (outermost first) and of one decoder layer, for the
  // host stack's module ranges.
  HostFamily host_family = HostFamily::kVllm;
  std::vector<std::string> model_classes;
  std::string layer_class;
  std::string host_model_file;  // "qwen2.py(NNN)": the model file's frames
  std::vector<OpSpec> head;     // before the first layer (embedding)
  std::vector<OpSpec> layer_prefill, layer_decode;
  std::vector<OpSpec> tail;     // final norm, lm_head, gather (last stage)
  std::vector<OpSpec> sampler;  // inside the sampler range
  std::string sampler_range = "teller.sample";
  std::string custom_allreduce;  // kernel name of the custom all-reduce
  std::string nccl_allreduce;    // NCCL all-reduce kernel name
  std::string nccl_sendrecv;
  std::string nccl_allgather;
  std::string fallback_sampler_note;  // startup warning text of kFallbackKernel
};

// The five built-in profiles (profiles.cc). nullptr for an unknown name.
const EngineProfile* FindProfile(std::string_view name);

// Request ids in the engine's format (profiles.cc).
std::string MakeRequestId(LogStyle style, uint64_t index, Rng& rng);

}  // namespace teller::sim

#endif  // TELLER_SRC_SIM_SIM_INTERNAL_H_
