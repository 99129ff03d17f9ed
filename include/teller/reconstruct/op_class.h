// Operator classes of GPU work by kernel name: what kind of computation a kernel is
// (GEMM, attention, norm, collective...), for the realism comparison and for fault
// injection's choice of compute- or memory-bound kernels. The patterns follow the kernel
// names of real serving engines (docs/realism.md lists them). This is not the layer
// classification of the call tree (classify.rules); it refines GPU work inside a layer.
#ifndef TELLER_RECONSTRUCT_OP_CLASS_H_
#define TELLER_RECONSTRUCT_OP_CLASS_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "teller/core/trace.h"

namespace teller::reconstruct {

enum class OpClass : uint8_t {
  kNorm,
  kGemm,
  kRotary,
  kKvWrite,
  kAttention,
  kAttentionReduce,
  kAllReduce,
  kAllGather,
  kActivation,
  kMoeRouting,
  kSampling,
  kCopy,
  kElementwise,
  kOther,
  kCount
};
inline constexpr size_t kOpClassCount = static_cast<size_t>(OpClass::kCount);
std::string_view OpClassName(OpClass c);
// The POSIX extended, case-insensitive pattern that selects the class (docs/realism.md).
// Patterns are tried in a fixed order (comm, attention_reduce, attention, kv_write,
// rotary, norm, moe_routing, gemm, activation, sampling, copy, elementwise) and the
// first match wins; kOther has none.
std::string_view OpClassPattern(OpClass c);
// Class of a kernel name.
OpClass ClassifyKernelName(std::string_view name);
// Class of a GPU row: kernels by name, memcpy -> copy, memset -> elementwise; kOther for
// anything that is not GPU work.
OpClass ClassifyGpuEvent(const Trace& trace, size_t event);

}  // namespace teller::reconstruct

#endif  // TELLER_RECONSTRUCT_OP_CLASS_H_
