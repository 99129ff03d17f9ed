// `teller simulate`: a discrete-event simulation of LLM serving that writes what
// `teller run` writes for a real deployment (per-process raw traces, the captured
// service log, manifest.json) plus ground_truth.json (ground_truth.h). Everything
// downstream (import, reconstruction, diagnosis) runs on it exactly as on a real
// collection. docs/simulator.md is the user's description.
#ifndef TELLER_SIM_SIM_H_
#define TELLER_SIM_SIM_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "teller/core/status.h"
#include "teller/sim/faults.h"

namespace teller::sim {

// Engine profiles: step structure, range names, kernel names, log formats and request id
// formats of one real serving system (docs/serving-notes.md §1-§3).
inline constexpr const char* kProfiles[6] = {"sglang",  "torch-fsdp",      "vllm-moe",
                                             "vllm-v0", "vllm-v1-offline", "vllm-v1-online"};
bool IsProfile(std::string_view name);

enum class Arrival : uint8_t { kPoisson, kBursty, kReplay };

struct SimConfig {
  std::string profile = "vllm-v1-online";
  std::string setting;  // dataset setting name; "" = the profile name
  uint64_t seed = 1;
  int nodes = 2, gpus_per_node = 3;
  int tp = 3, pp = 2;  // tp * pp must equal nodes * gpus_per_node
  int requests = 40;
  Arrival arrival = Arrival::kPoisson;
  double rate = 8.0;        // requests per second (Poisson / bursty mean)
  std::string replay_file;  // kReplay: lines "<arrival s> <prompt tokens> <output tokens>"
  // Prompt and output lengths: lognormal with these medians, clamped.
  int prompt_median = 512, prompt_max = 4096;
  int output_median = 64, output_max = 1024;
  int max_batched_tokens = 2048;  // token budget per step (chunked prefill above it)
  int max_running = 64;           // concurrent requests
  int kv_blocks = 0;              // KV-cache blocks per engine; 0 = sized from the model
  int layers = 0;                 // decoder layers; 0 = the profile's model
  // The GPU: "h100" (Hopper), "b200" (Blackwell), "mi300" (MI300X): kernel names, tile
  // and split choices, and the cost model's bandwidth, compute and smallest-kernel time.
  std::string gpu = "h100";
  // Timing fitted to the real traces (docs/simulator.md "Realistic timing"): duration
  // noise by kernel class, shared across tensor-parallel ranks, slow drift, heavy-tailed
  // inter-kernel gaps. Off: one lognormal (sigma 0.045) per kernel and rank, back-to-back
  // eager kernels, 0.5-1.5 us between graph kernels.
  bool realistic_timing = false;
  // Kernel choice by shape (GEMM tiles, split-K, KV splits, graph per batch-size bucket):
  // on with --shape-kernels or any --gpu other than h100; off: the profile's fixed names.
  bool shape_kernels = false;
  // The framework op stack on the host (src/sim/host_stack.h): nn.Module ranges, Python
  // frames, aten decompositions and their CPU cost fitted to real traces, in eager steps;
  // small batches become CPU-bound. On with --host-stack or --realistic.
  bool host_stack = false;
  // MoE profiles: experts sharded over the tensor-parallel group with all-to-all dispatch
  // and combine (EP = TP) instead of tensor-parallel experts and an all-reduce.
  bool expert_parallel = false;
  // Healthy confounders (docs/simulator.md "Healthy confounders"): events that make some
  // healthy steps unusual without being faults: long prompts, prefix-cache hits, arrival
  // bursts, Python GC pauses on a worker, KV-shortage preemption bursts. Never labelled
  // abnormal; ground_truth.json lists them. On in the paper preset and with --realistic.
  bool confounders = false;
  std::vector<FaultSpec> faults;
  // Where simulator-placed windows (presets, --random-faults) lie: false = anchored to the
  // run (the steps that serve a share of the requests, or request arrivals); true =
  // uniformly over the serving period, whatever arrives then (starvation, which acts on
  // arrivals, keeps its anchored window). docs/simulator.md "Faults".
  bool uniform_fault_windows = false;
  // Presets: place the faults' windows (in order, spread over the run) so that about
  // this fraction of requests is affected, from a fault-free dry run of the same seed.
  bool plan_fault_windows = false;
  double faulty_fraction = 0.42;
  // Layer-to-clock realism: per-host clock offsets (up to this many ms) and drift (ppm).
  double max_clock_offset_ms = 5.0, max_drift_ppm = 30.0;
};

// Materiality of a fault that acts on time (docs/simulator.md "Ground truth"): it labels a
// step only where the time it added there (the step laid out with and without the faults'
// added time) is at least kMaterialShare of the step's healthy duration and at least
// kMaterialSpreadZ times the healthy step-to-step spread of the step's kind (robust sigma
// of the log-ratio of adjacent fault-free steps of that kind).
inline constexpr double kMaterialShare = 0.05;
inline constexpr double kMaterialSpreadZ = 2.0;

// Healthy confounders (SimConfig::confounders; docs/simulator.md "Healthy confounders").
// Rates per request or per step, and sizes:
inline constexpr double kLongPromptShare = 0.04;     // of requests: prompt x 4-8
inline constexpr double kPrefixHitShare = 0.15;      // of requests: 50-90% of the prompt cached
inline constexpr double kBurstShare = 0.03;          // of arrivals: the next 4-8 within ~5 ms
inline constexpr double kGcPauseShare = 0.005;       // of steps: one worker pauses 2-8 ms
inline constexpr double kPreemptBurstShare = 0.004;  // of steps with >= 4 running requests
// The paper preset draws a subtle magnitude, uniform in 1.2-1.5x, for this share of its
// faults with a multiplicative slowdown (kernel_throttle, kernel_slow_one_gpu,
// gpu_throttle, launch_latency, slow_link, nccl_fallback).
inline constexpr double kSubtleShare = 0.35;

struct SimSummary {
  uint64_t requests = 0, faulty_requests = 0, steps = 0, events = 0, log_lines = 0;
  uint64_t processes = 0, bytes = 0;
  int64_t simulated_ns = 0;  // span of serving time
  // Non-empty when a fault given with an explicit window acted on no step (it says which);
  // `teller simulate` prints it as a warning.
  std::string silent_faults;
  // The healthy step-to-step spread of each step kind that the materiality test used
  // (robust sigma of the log-ratio of adjacent fault-free steps of one kind and shape).
  std::map<std::string, double> healthy_spread;
};

// Simulates into `out_dir` (created; must not hold a trace). Progress lines go to
// `progress` when set.
Result<SimSummary> Simulate(const SimConfig& config, const std::string& out_dir,
                            const std::function<void(std::string_view)>& progress = {});

// The paper preset (docs/method.md §7): five settings with 100/50/50/50/50 requests, about
// 42% faulty, the five fault categories about equally often. One sub-directory per
// setting under out_dir, simulated in parallel on `jobs` threads.
std::vector<SimConfig> PaperPreset(uint64_t seed);
Result<std::vector<SimSummary>> SimulatePreset(
    const std::vector<SimConfig>& configs, const std::string& out_dir, int jobs,
    const std::function<void(std::string_view)>& progress = {});

}  // namespace teller::sim

#endif  // TELLER_SIM_SIM_H_
