// The fault mechanism catalog (include/teller/sim/faults.h). The order of the table is
// the order of the Mechanism enum.
#include "teller/sim/faults.h"

#include <cassert>
#include <cctype>
#include <cstdlib>

namespace teller::sim {

const std::vector<MechanismInfo>& Mechanisms() {
  using M = Mechanism;
  // name, category, summary, default magnitude, request-scoped, injectable
  static const std::vector<MechanismInfo> kTable = {
      {M::kKvPressure, "kv_pressure", FaultCategory::kMemoryResource,
       "free KV-cache blocks shrink; running requests are preempted and later recomputed", 0.7,
       false, false},
      {M::kKvSwap, "kv_swap", FaultCategory::kMemoryResource,
       "KV blocks are swapped to host memory and back: large D2H/H2D copies stall the step", 1.0,
       false, false},
      {M::kAllocatorStall, "allocator_stall", FaultCategory::kMemoryResource,
       "caching-allocator misses: cudaMalloc/cudaFree calls block inside operators", 3.0, false,
       true},
      {M::kKernelThrottle, "kernel_throttle", FaultCategory::kCudaKernel,
       "one kernel family runs slower on every rank (slow code path, bad tile choice)", 2.5, false,
       true},
      {M::kKernelSlowOneGpu, "kernel_slow_one_gpu", FaultCategory::kCudaKernel,
       "one kernel family runs slower on a single GPU; its peers wait in the next collective", 3.0,
       false, true},
      {M::kFallbackKernel, "fallback_kernel", FaultCategory::kCudaKernel,
       "a fused kernel is replaced by a generic multi-kernel path that grows with batch size", 2.0,
       false, false},
      {M::kLaunchLatency, "launch_latency", FaultCategory::kRuntimeDriver,
       "kernel launch calls take far longer on the host; the GPU starves between kernels", 6.0,
       false, true},
      {M::kSyncStall, "sync_stall", FaultCategory::kRuntimeDriver,
       "synchronizations block for milliseconds beyond the work they wait for", 4.0, false, true},
      {M::kGpuThrottle, "gpu_throttle", FaultCategory::kRuntimeDriver,
       "one GPU is power/thermal throttled: compute-bound kernels slow down, ramping up", 1.35,
       false, true},
      {M::kSlowLink, "slow_link", FaultCategory::kCommunication,
       "the inter-node link is slow: cross-node transfers and collectives widen", 8.0, false, true},
      {M::kStragglerRank, "straggler_rank", FaultCategory::kCommunication,
       "one rank arrives late at collectives; every other rank waits inside them", 6.0, false,
       true},
      {M::kNcclFallback, "nccl_fallback", FaultCategory::kCommunication,
       "the custom all-reduce is disabled: NCCL ring kernels run instead, slower", 3.0, false,
       false},
      {M::kMisroute, "misroute", FaultCategory::kSchedulingSoftware,
       "a new request is scheduled as decode: it never gets a prefill and runs decode kernels", 1.0,
       true, false},
      {M::kStarvation, "starvation", FaultCategory::kSchedulingSoftware,
       "a request waits in the queue while later requests are served", 1.0, true, false},
      {M::kOpReorder, "op_reorder", FaultCategory::kSchedulingSoftware,
       "two operators of every decoder layer run in the wrong order, with a sync between", 1.0,
       false, false},
      {M::kWorkerStall, "worker_stall", FaultCategory::kSchedulingSoftware,
       "a worker stops consuming its input queue for a while; no kernels run on its GPU", 1.0,
       false, false},
  };
  return kTable;
}

const MechanismInfo& Info(Mechanism m) {
  const auto& t = Mechanisms();
  assert(static_cast<size_t>(m) < t.size() && t[static_cast<size_t>(m)].mechanism == m);
  return t[static_cast<size_t>(m)];
}

const MechanismInfo* FindMechanism(std::string_view name) {
  for (const MechanismInfo& info : Mechanisms()) {
    if (name == info.name) return &info;
  }
  return nullptr;
}

}  // namespace teller::sim

namespace teller::sim {

bool ParseDuration(std::string_view text, int64_t* ns) {
  if (text.empty()) return false;
  size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'))
    ++i;
  if (i == 0) return false;
  const std::string number(text.substr(0, i));
  char* end = nullptr;
  const double v = std::strtod(number.c_str(), &end);
  if (end == number.c_str() || *end != '\0' || v < 0) return false;
  const std::string_view unit = text.substr(i);
  double scale = 1e9;
  if (unit.empty() || unit == "s") {
    scale = 1e9;
  } else if (unit == "ms") {
    scale = 1e6;
  } else if (unit == "us") {
    scale = 1e3;
  } else if (unit == "ns") {
    scale = 1;
  } else if (unit == "m" || unit == "min") {
    scale = 60e9;
  } else {
    return false;
  }
  *ns = static_cast<int64_t>(v * scale);
  return true;
}

bool ParseFaultSpec(std::string_view text, FaultSpec* spec, std::string* error) {
  const size_t colon = text.find(':');
  const std::string_view name = text.substr(0, colon);
  const MechanismInfo* info = FindMechanism(name);
  if (info == nullptr) {
    *error = "unknown fault mechanism '" + std::string(name) + "'; known:";
    for (const MechanismInfo& m : Mechanisms()) *error += std::string(" ") + m.name;
    return false;
  }
  *spec = FaultSpec{};
  spec->mechanism = info->mechanism;
  if (colon == std::string_view::npos) return true;
  std::string_view rest = text.substr(colon + 1);
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      *error = "fault option '" + std::string(item) + "' is not key=value";
      return false;
    }
    const std::string_view key = item.substr(0, eq);
    const std::string value(item.substr(eq + 1));
    char* end = nullptr;
    if (key == "target") {
      spec->target = value;
    } else if (key == "magnitude") {
      spec->magnitude = std::strtod(value.c_str(), &end);
      if (end == value.c_str() || *end != '\0' || spec->magnitude <= 0) {
        *error = "fault magnitude '" + value + "' is not a positive number";
        return false;
      }
    } else if (key == "onset" || key == "duration") {
      int64_t ns = 0;
      if (!ParseDuration(value, &ns)) {
        *error =
            "fault " + std::string(key) + " '" + value + "' is not a duration (e.g. 2s, 150ms)";
        return false;
      }
      (key == "onset" ? spec->onset_ns : spec->duration_ns) = ns;
    } else if (key == "rank") {
      spec->rank = static_cast<int>(std::strtol(value.c_str(), &end, 10));
      if (end == value.c_str() || *end != '\0' || spec->rank < 0) {
        *error = "fault rank '" + value + "' is not a rank number";
        return false;
      }
    } else {
      *error = "unknown fault option '" + std::string(key) +
               "' (target, magnitude, onset, duration, rank)";
      return false;
    }
  }
  return true;
}

}  // namespace teller::sim
