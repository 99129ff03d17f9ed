// The fault mechanisms Teller can simulate (`teller simulate`) and inject into existing
// traces (`teller inject`), in the five categories of docs/method.md §7. Each is modelled on
// real cases (docs/serving-notes.md §4) and shows itself only through timestamps,
// structure and, for some, log lines. docs/simulator.md describes each one.
#ifndef TELLER_SIM_FAULTS_H_
#define TELLER_SIM_FAULTS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "teller/core/vocabulary.h"

namespace teller::sim {

enum class Mechanism : uint8_t {
  // memory / resource
  kKvPressure,      // free KV blocks shrink: preemption, later recompute (M1)
  kKvSwap,          // blocks swapped to host and back: large D2H/H2D copies in steps
  kAllocatorStall,  // caching allocator misses: cudaMalloc/cudaFree stalls inside ops
  // CUDA / kernel
  kKernelThrottle,    // one kernel family slower on every rank (slow path, bad tile)
  kKernelSlowOneGpu,  // one kernel family slower on one GPU only
  kFallbackKernel,    // a fused kernel replaced by a generic multi-kernel path (K4)
  // runtime / driver / hardware
  kLaunchLatency,  // launch calls take longer on the host; the GPU starves
  kSyncStall,      // synchronizations block far longer than the work they wait for
  kGpuThrottle,    // one GPU's compute-bound kernels slow down, ramping (R3)
  // communication / network
  kSlowLink,       // inter-node link slow: cross-node transfers widen (C4)
  kStragglerRank,  // one rank arrives late at collectives; the others wait (C2)
  kNcclFallback,   // custom all-reduce off: NCCL ring kernels, slower (C3)
  // scheduling / software
  kMisroute,     // a new request is run as decode: no prefill, decode kernels (K3)
  kStarvation,   // a request waits in the queue while later ones are served
  kOpReorder,    // two operators of each layer run in the wrong order
  kWorkerStall,  // a worker stops consuming its queue for a while (S1)
  kCount
};

struct MechanismInfo {
  Mechanism mechanism;
  const char* name;  // as spelled on the command line and in ground truth
  FaultCategory category;
  const char* summary;  // one line for --help and reports
  double default_magnitude;
  bool request_scoped;  // acts on chosen requests, not on whole steps
  bool injectable;      // `teller inject` can apply it to an existing trace
};

const std::vector<MechanismInfo>& Mechanisms();

// What one unit of magnitude means for the mechanisms whose magnitude is not a duration
// factor. The simulator and `teller inject` both read them here, so that one magnitude
// means the same in simulated and injected datasets (docs/simulator.md, docs/inject.md).
struct MagnitudeUnits {
  static constexpr double kSyncStallMs = 0.9;       // a synchronization blocks m x 0.9 ms longer
  static constexpr double kAllocatorStallUs = 180;  // a caching-allocator miss blocks m x 180 us
  static constexpr double kStragglerUs = 55;        // late at each eager collective by m x 55 us
  static constexpr double kStragglerGraphUs = 90;   // late at each graph replay by m x 90 us
  static constexpr double kWorkerStallMs = 45;      // the worker stops for m x 45 ms
  static constexpr double kKvSwapMiB = 96;          // m x 96 MiB swapped per step (over TP ranks)
  static constexpr double kStarvationSec = 1.2;     // the request waits m x 1.2 s
};
// nullptr when unknown.
const MechanismInfo* FindMechanism(std::string_view name);
const MechanismInfo& Info(Mechanism m);

// One fault to simulate. Times are relative to the start of serving (the first request).
struct FaultSpec {
  Mechanism mechanism = Mechanism::kKernelThrottle;
  int64_t onset_ns = 0;
  int64_t duration_ns = 0;  // 0 = to the end
  double magnitude = 0;     // 0 = the mechanism's default
  std::string target;       // kernel family regex / "" = mechanism default
  int rank = -1;            // rank-scoped mechanisms; -1 = chosen from the seed
  // Alternative to onset_ns/duration_ns used by presets: the fault starts when request
  // `onset_request` (in arrival order) arrives and lasts until request
  // `onset_request + span_requests` arrives. -1 = use onset_ns.
  int onset_request = -1;
  int span_requests = 0;
};

// Parses "MECHANISM[:key=value,...]" with keys target, magnitude, onset, duration
// (durations like 1.5s, 200ms, 30us) and rank. Errors name the offending part.
bool ParseFaultSpec(std::string_view text, FaultSpec* spec, std::string* error);
// "1.5s", "200ms", "30us", "15ns", plain numbers are seconds; false when malformed.
bool ParseDuration(std::string_view text, int64_t* ns);

}  // namespace teller::sim

#endif  // TELLER_SIM_FAULTS_H_
