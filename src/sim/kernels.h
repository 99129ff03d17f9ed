// Kernel choice by shape and vendor (kernels.cc): which GEMM tile, attention variant,
// split-K/split-KV and reduction kernel a library picks for one launch, with the names
// CUPTI/roctracer report on Hopper, Blackwell and MI300-class devices
// (docs/serving-notes.md §2; the tracelens traces).
#ifndef TELLER_SRC_SIM_KERNELS_H_
#define TELLER_SRC_SIM_KERNELS_H_

#include <string>
#include <string_view>

#include "src/sim/sim_internal.h"

namespace teller::sim {

enum class Vendor : uint8_t { kHopper, kBlackwell, kMi300 };

// "h100", "b200", "mi300" (also "hopper", "blackwell", "mi300x"); false when unknown.
bool ParseVendor(std::string_view name, Vendor* out);
std::string_view VendorName(Vendor v);

// What the launch runs: its GEMM/attention shape as the library sees it.
struct LaunchShape {
  double m = 1;            // GEMM rows (tokens; padded batch inside a CUDA graph)
  double n = 1, k = 1;     // GEMM output columns and reduction depth
  double seqs = 1;         // sequences (attention batch)
  double q_per_seq = 1;    // mean query tokens per sequence (attention)
  double ctx_per_seq = 1;  // mean context per sequence (attention)
  double q_heads = 1;      // query heads on this rank
  bool prefill = false;
};

struct KernelChoice {
  std::string name;    // "" = keep the profile's name
  std::string reduce;  // a second kernel the choice needs (split-K reduce), "" = none
  bool skip = false;   // not launched for this shape (no split: no combine kernel)
  double speed = 1.0;  // duration factor of the variant against the profile's kernel
};

// Per-vendor machine constants for the cost model.
struct DeviceModel {
  double hbm_bytes_per_us;  // achievable HBM bandwidth
  double flops_per_us;      // dense bf16 at full efficiency
  double floor_us;          // extra fixed time of the smallest kernels
  int sms;                  // SMs / CUs (split heuristics)
};
const DeviceModel& Device(Vendor v);

KernelChoice ChooseKernel(Vendor v, const EngineProfile& p, const KernelSpec& k,
                          const LaunchShape& s);

// The name on this vendor of a kernel that no shape rule changes (HIP builds spell
// bfloat16 differently).
std::string VendorSpelling(Vendor v, const std::string& name);

// The captured CUDA-graph batch size for a decode batch of `seqs` (vLLM's and SGLang's
// capture sizes: 1, 2, 4, then multiples of 8 up to 512).
int GraphBucket(int seqs);

}  // namespace teller::sim

#endif  // TELLER_SRC_SIM_KERNELS_H_
