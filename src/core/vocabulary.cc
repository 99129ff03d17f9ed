// Name tables of the shared vocabulary (include/teller/core/vocabulary.h).
#include "teller/core/vocabulary.h"

#include <algorithm>

namespace teller {
namespace {

constexpr std::array<std::string_view, kFaultCategoryCount> kFaultCategoryNames = {
    "memory_resource", "cuda_kernel", "runtime_driver", "communication", "scheduling_software"};

constexpr std::array<std::string_view, kLayerCount> kLayerNames = {
    "STEP", "FRONTEND", "BACKEND", "COMM", "HOST", "GPU", "MARK"};

constexpr std::array<const char*, kFeatureCount> kFeatureNames = {
    "self_ns", "host_call_ns",    "host_calls", "gpu_ops",
    "gpu_ns",  "launch_delay_ns", "bytes",      "overlap_ns"};

constexpr std::array<std::string_view, kLogFeatureCount> kLogFeatureNames = {
    "log.lines",
    "log.lines.debug",
    "log.lines.info",
    "log.lines.warning",
    "log.lines.error",
    "log.templates",
    "log.rare_templates",
    "log.signature.memory_resource",
    "log.signature.cuda_kernel",
    "log.signature.runtime_driver",
    "log.signature.communication",
    "log.signature.scheduling_software",
    "log.queue_us",
    "log.time_to_first_token_us",
    "log.end_to_end_us",
    "log.age_us"};

constexpr std::array<std::string_view, kCallKindCount> kCallKindNames = {
    "other", "launch", "graph_launch", "synchronize", "memcpy", "memset", "alloc", "free"};

bool Contains(std::string_view s, std::string_view needle) {
  return s.find(needle) != std::string_view::npos;
}
bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

}  // namespace

std::string_view FaultCategoryName(FaultCategory category) {
  const auto i = static_cast<size_t>(category);
  return i < kFaultCategoryNames.size() ? kFaultCategoryNames[i] : "?";
}

bool ParseFaultCategory(std::string_view text, FaultCategory* out) {
  for (size_t i = 0; i < kFaultCategoryNames.size(); ++i) {
    if (kFaultCategoryNames[i] == text) {
      *out = static_cast<FaultCategory>(i);
      return true;
    }
  }
  return false;
}

std::string_view LayerName(Layer layer) {
  const auto i = static_cast<size_t>(layer);
  return i < kLayerNames.size() ? kLayerNames[i] : "?";
}

bool ParseLayer(std::string_view text, Layer* out) {
  for (size_t i = 0; i < kLayerNames.size(); ++i) {
    if (kLayerNames[i] == text) {
      *out = static_cast<Layer>(i);
      return true;
    }
  }
  return false;
}

const char* FeatureName(Feature f) { return f < kFeatureCount ? kFeatureNames[f] : "?"; }

std::string_view LogFeatureName(LogFeature f) {
  const auto i = static_cast<size_t>(f);
  return i < kLogFeatureNames.size() ? kLogFeatureNames[i] : "?";
}

std::string_view CallKindName(CallKind kind) {
  const auto i = static_cast<size_t>(kind);
  return i < kCallKindNames.size() ? kCallKindNames[i] : "?";
}

std::string_view StripApiVersion(std::string_view name) {
  // Nsight Systems writes versioned API names: "cudaMemcpy_v3020".
  const size_t v = name.rfind("_v");
  if (v != std::string_view::npos && v + 2 < name.size() &&
      std::all_of(name.begin() + static_cast<long>(v) + 2, name.end(),
                  [](char c) { return c >= '0' && c <= '9'; })) {
    name = name.substr(0, v);
  }
  return name;
}

CallKind ClassifyCall(std::string_view api_name) {
  const std::string_view base = StripApiVersion(api_name);
  if (Contains(base, "Synchronize")) return CallKind::kSynchronize;
  if (Contains(base, "GraphLaunch")) return CallKind::kGraphLaunch;
  if (Contains(base, "LaunchKernel") || Contains(base, "LaunchCooperativeKernel") ||
      StartsWith(base, "cuLaunch") || StartsWith(base, "hipExtLaunch")) {
    return CallKind::kLaunch;
  }
  if (StartsWith(base, "cudaMemcpy") || StartsWith(base, "hipMemcpy") ||
      StartsWith(base, "cuMemcpy")) {
    return CallKind::kMemcpy;
  }
  if (StartsWith(base, "cudaMemset") || StartsWith(base, "hipMemset") ||
      StartsWith(base, "cuMemset")) {
    return CallKind::kMemset;
  }
  if (StartsWith(base, "cudaFree") || StartsWith(base, "hipFree") ||
      StartsWith(base, "cuMemFree") || base == "cuMemUnmap" || base == "cuMemRelease") {
    return CallKind::kFree;
  }
  if (Contains(base, "Malloc") || Contains(base, "MemAlloc") || Contains(base, "HostAlloc") ||
      base == "cuMemCreate" || base == "cuMemMap" || base == "cuMemAddressReserve") {
    return CallKind::kAlloc;
  }
  return CallKind::kOther;
}

bool IsSynchronizingCall(std::string_view api_name) {
  if (ClassifyCall(api_name) == CallKind::kSynchronize) return true;
  // The synchronous forms only: their asynchronous siblings (cudaMemcpyAsync) return at once.
  static constexpr std::string_view kBlocking[] = {"cudaMemcpy",         "cudaMemcpy2D",
                                                   "cudaMemcpy3D",       "cudaMemcpyFromSymbol",
                                                   "cudaMemcpyToSymbol", "cudaMemset",
                                                   "cudaFree",           "cudaFreeHost",
                                                   "hipMemcpy",          "hipMemcpyWithStream",
                                                   "hipMemcpyDtoH",      "hipMemcpyHtoD",
                                                   "hipMemset",          "hipFree",
                                                   "cuMemcpy",           "cuMemcpyDtoH",
                                                   "cuMemcpyHtoD",       "cuMemFree",
                                                   "cuMemFreeHost"};
  const std::string_view base = StripApiVersion(api_name);
  return std::find(std::begin(kBlocking), std::end(kBlocking), base) != std::end(kBlocking);
}

}  // namespace teller
