// The words every stage shares, defined once: the five fault categories, the layers of the
// reconstructed call tree, the features of localization and the kinds of runtime/driver
// calls. Each is an enum with one name table; files and reports spell the names exactly as
// the tables do (docs/method.md §2 step 3, §3 and §7).
#ifndef TELLER_CORE_VOCABULARY_H_
#define TELLER_CORE_VOCABULARY_H_

#include <array>
#include <cstdint>
#include <string_view>

namespace teller {

// ---- Fault categories (docs/method.md §7) ----------------------------------------------
enum class FaultCategory : uint8_t {
  kMemoryResource = 0,
  kCudaKernel = 1,
  kRuntimeDriver = 2,
  kCommunication = 3,
  kSchedulingSoftware = 4,
};
inline constexpr int kFaultCategoryCount = 5;
inline constexpr std::array<FaultCategory, kFaultCategoryCount> kAllFaultCategories = {
    FaultCategory::kMemoryResource, FaultCategory::kCudaKernel, FaultCategory::kRuntimeDriver,
    FaultCategory::kCommunication, FaultCategory::kSchedulingSoftware};
// "memory_resource", "cuda_kernel", "runtime_driver", "communication", "scheduling_software".
std::string_view FaultCategoryName(FaultCategory category);
// False when `text` is not one of the names.
bool ParseFaultCategory(std::string_view text, FaultCategory* out);

// ---- Layers of the call tree (docs/method.md §2 step 3) --------------------------------
enum class Layer : uint8_t {
  kStep = 0,      // an engine step (one scheduler decision and forward pass)
  kFrontend = 1,  // framework op or module (aten::, nn.Module, Python functions)
  kBackend = 2,   // library / custom op level (vllm::, _C::, sgl_kernel::, cuBLAS...)
  kComm = 3,      // communication (collectives, their kernels)
  kHostCall = 4,  // CUDA/HIP runtime or driver call
  kGpu = 5,       // kernel, memcpy, memset, synchronization, GPU annotation
  kMark = 6,      // instant annotation
};
inline constexpr int kLayerCount = 7;
// "STEP", "FRONTEND", "BACKEND", "COMM", "HOST", "GPU", "MARK".
std::string_view LayerName(Layer layer);
// Accepts every name of LayerName; false otherwise.
bool ParseLayer(std::string_view text, Layer* out);

// ---- Features of an operator instance (docs/method.md §3) ------------------------------
// Before log(1+x) and standardization.
enum Feature : uint8_t {
  kSelfNs = 0,     // own time: a range minus its child ranges; a GPU operation's duration
  kHostCallNs,     // runtime/driver time in the subtree
  kHostCalls,      // runtime/driver calls in the subtree
  kGpuOps,         // kernels / copies in the subtree
  kGpuNs,          // their total time
  kLaunchDelayNs,  // mean launch-to-start delay of those GPU operations
  kBytes,          // bytes copied or set
  kOverlapNs,      // time the subtree's GPU work overlaps other streams of its device
  kFeatureCount
};
// "self_ns", "host_call_ns", "host_calls", "gpu_ops", "gpu_ns", "launch_delay_ns", "bytes",
// "overlap_ns"; "?" for anything else.
const char* FeatureName(Feature f);
// Features that measure GPU time or work (the compute evidence of a diagnosis).
inline bool IsGpuTimeFeature(Feature f) { return f == kGpuNs || f == kSelfNs || f == kGpuOps; }
// Features that measure the host side of launching work.
inline bool IsHostFeature(Feature f) {
  return f == kHostCallNs || f == kHostCalls || f == kLaunchDelayNs;
}

// ---- Log features of a dataset step (docs/eval.md, "Features") -------------------------
// What the log lines of one step of one request (log.txt's L_q(s)) say, as the evaluation's
// baselines see them. Before log(1+x) and standardization.
enum class LogFeature : uint8_t {
  kLines = 0,   // lines of the step
  kDebugLines,  // ... by level
  kInfoLines,
  kWarningLines,
  kErrorLines,        // ERROR and CRITICAL
  kTemplates,         // distinct templates among them
  kRareTemplates,     // of those, templates rare in the training part (0-2 lines there)
  kMemorySignatures,  // lines matching a failure signature, per fault category (FaultCategory)
  kCudaKernelSignatures,
  kRuntimeDriverSignatures,
  kCommunicationSignatures,
  kSchedulingSignatures,
  kQueueUs,       // the request's queue time (arrival to scheduled), from its lifecycle lines
  kFirstTokenUs,  // its time to first token
  kEndToEndUs,    // its end-to-end time
  kAgeUs,         // the step's start minus the request's arrival
  kCount
};
inline constexpr int kLogFeatureCount = static_cast<int>(LogFeature::kCount);
// "log.lines", "log.lines.debug", "log.lines.info", "log.lines.warning", "log.lines.error",
// "log.templates", "log.rare_templates", "log.signature.<category>" (FaultCategoryName),
// "log.queue_us", "log.time_to_first_token_us", "log.end_to_end_us", "log.age_us".
std::string_view LogFeatureName(LogFeature f);
// The signature count feature of a category.
inline LogFeature SignatureFeature(FaultCategory c) {
  return static_cast<LogFeature>(static_cast<int>(LogFeature::kMemorySignatures) +
                                 static_cast<int>(c));
}

// ---- Kinds of CUDA/HIP runtime and driver calls ----------------------------------------
// What a host call does, from its API name (cudaX, cuX, hipX; versioned names as Nsight
// Systems writes them, "cudaMemcpy_v3020", and "_v2"/"_ptsz"/"_ptds" variants included).
enum class CallKind : uint8_t {
  kOther = 0,
  kLaunch,       // kernel launches (cudaLaunchKernel, cuLaunchKernelEx, hipModuleLaunchKernel)
  kGraphLaunch,  // cudaGraphLaunch, cuGraphLaunch
  kSynchronize,  // explicit synchronizations (device, context, stream, event)
  kMemcpy,       // copies, synchronous or not
  kMemset,
  kAlloc,  // device or pinned-host allocations, virtual memory mapping
  kFree,
};
inline constexpr int kCallKindCount = 8;
std::string_view CallKindName(CallKind kind);
CallKind ClassifyCall(std::string_view api_name);
// The API name without Nsight Systems' version suffix ("cudaMemcpy_v3020" -> "cudaMemcpy").
std::string_view StripApiVersion(std::string_view api_name);
// Calls that block the host until earlier GPU work is done: explicit synchronizations and
// the synchronous copies, memsets and frees that synchronize implicitly.
bool IsSynchronizingCall(std::string_view api_name);
// Calls of the caching allocator's slow path: allocations, frees and VMM mapping.
inline bool IsAllocatorCall(CallKind kind) {
  return kind == CallKind::kAlloc || kind == CallKind::kFree;
}

}  // namespace teller

#endif  // TELLER_CORE_VOCABULARY_H_
