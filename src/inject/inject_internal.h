// Internal to src/inject: the pieces of fault injection that its files share
// (include/teller/inject/inject.h, docs/inject.md). inject.cc drives them: what the fault
// changes directly (mechanisms.cc: a duration factor on GPU work, extra host time at the end
// of a call, a late arrival before a GPU record, a slower transfer inside a collective), the
// causal replay that turns those local changes into new times for every event (replay.h),
// the ground truth built from the result (truth.cc), log lines moved with their process
// (logs.cc) and the check that the written trace reads back (roundtrip.cc).
#ifndef TELLER_SRC_INJECT_INJECT_INTERNAL_H_
#define TELLER_SRC_INJECT_INJECT_INTERNAL_H_

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>

#include "teller/core/regex.h"
#include "teller/core/status.h"
#include "teller/core/trace.h"
#include "teller/core/vocabulary.h"
#include "teller/format/ground_truth.h"
#include "teller/inject/inject.h"
#include "teller/reconstruct/collectives.h"
#include "teller/reconstruct/op_class.h"
#include "teller/reconstruct/reconstruct.h"
#include "teller/reconstruct/step_ranges.h"
#include "teller/sim/faults.h"

namespace teller::inject::internal {

using format::FaultRecord;
using format::GroundTruth;
using format::kGroundTruthFile;
using format::NodeLocator;
using format::ProcessTruth;
using format::RequestTruth;
using format::StepTruth;
using format::ViewLabel;
using reconstruct::ClassifyGpuEvent;
using reconstruct::ClassifyKernelName;
using reconstruct::kOpClassCount;
using reconstruct::OpClass;
using reconstruct::OpClassName;
using reconstruct::OpClassPattern;
using sim::FindMechanism;
using sim::MagnitudeUnits;
using sim::Mechanism;
using sim::MechanismInfo;
using sim::Mechanisms;

constexpr int64_t kUs = 1'000;
constexpr int64_t kMs = 1'000'000;
constexpr int64_t kSec = 1'000'000'000;
constexpr int64_t kNever = std::numeric_limits<int64_t>::min();
// The replay repeats sweeps until nothing moves; a dependency cycle (only possible with
// damaged clocks) stops here and is reported.
constexpr int kMaxSweeps = 64;
// The scales of the magnitudes that are not factors, the same as the simulator's
// (src/sim/executor.cc, docs/simulator.md), so that injected and simulated datasets mean
// the same by one magnitude:
//   sync_stall: a synchronization blocks magnitude x 0.9 ms longer;
//   allocator_stall: a caching-allocator miss (cudaMalloc) blocks magnitude x 180 us;
//   straggler_rank: the rank reaches each collective magnitude x 55 us late.
constexpr int64_t kSyncStallUnitNs = static_cast<int64_t>(MagnitudeUnits::kSyncStallMs * kMs + 0.5);
constexpr int64_t kAllocatorStallUnitNs =
    static_cast<int64_t>(MagnitudeUnits::kAllocatorStallUs * kUs + 0.5);
constexpr int64_t kStragglerUnitNs = static_cast<int64_t>(MagnitudeUnits::kStragglerUs * kUs + 0.5);
// allocator_stall on a trace without steps: misses inserted into at most this many ranges.
constexpr size_t kMaxInsertedWithoutSteps = 16;
// gpu_throttle: the slowdown ramps up over min(kThrottleRampNs, window / 4)
// (docs/serving-notes.md §4.3 R3: 30-120 s ramps); memory-bound kernels feel a quarter of
// it, kernels of unknown kind half, communication none (it slows by waiting).
constexpr int64_t kThrottleRampNs = 60 * kSec;
constexpr double kMemoryBoundShare = 0.25;
constexpr double kUnknownShare = 0.5;
// Ground truth: a communication kernel counts as affected (horizontal view) when its
// duration or end moved by more than this much and this share.
constexpr int64_t kAffectedMinNs = kUs;
constexpr double kAffectedShare = 0.02;

uint64_t SplitMix(uint64_t x);

// A compiled POSIX extended regex with a per-name cache (names repeat millions of times).
class Pattern {
 public:
  static Result<Pattern> Compile(const std::string& text, const std::string& what, bool icase) {
    Regex::Flags flags;
    flags.icase = icase;
    auto re = Regex::Compile(text, flags);
    if (!re.ok()) {
      // Keep the user's words: "bad --target regex 'gemm(': <regerror's reason>".
      const std::string& msg = re.status().message();
      const size_t why = msg.rfind("': ");
      return Status::Error("bad " + what + " regex '" + text +
                           "': " + (why == std::string::npos ? msg : msg.substr(why + 3)));
    }
    Pattern p;
    p.re_ = std::make_shared<const Regex>(std::move(re.value()));
    p.text_ = text;
    return p;
  }
  bool Matches(const Trace& trace, StringId name) const {
    if (cache_.size() < trace.strings.size()) cache_.resize(trace.strings.size(), -1);
    int8_t& c = cache_[name];
    if (c < 0) c = re_->Matches(trace.strings.Get(name)) ? 1 : 0;
    return c == 1;
  }
  const std::string& text() const { return text_; }

 private:
  std::shared_ptr<const Regex> re_;
  std::string text_;
  mutable std::vector<int8_t> cache_;
};

bool IsHostEvent(EventType t);
bool IsAllocatorCall(std::string_view name);
std::string FormatNs(double ns);
std::string FormatFactor(double f);
int64_t MedianNs(std::vector<int64_t> v);
std::string ShortKernel(std::string_view name);
std::string SeqRanges(const std::vector<uint64_t>& seqs);

using reconstruct::RangeEnds;
using reconstruct::StepRange;

class Replay;

struct Context {
  Trace& trace;
  const InjectOptions& options;
  const MechanismInfo& info;
  double magnitude;
  int64_t t0 = 0, t_end = 0, w0 = 0, w1 = 0;
  std::shared_ptr<reconstruct::Classifier> classifier;
  std::unique_ptr<reconstruct::LayerCache> layers;  // of `trace`, over `classifier`
  reconstruct::CollectiveGroups coll;
  std::vector<uint8_t> is_comm;         // per event: a communication kernel
  std::vector<uint32_t> gpu_processes;  // processes with GPU work
  std::vector<int64_t> range_end;       // original ends of range rows
  std::vector<StepRange> steps;
  // Results of Apply*
  std::vector<uint32_t> modified;  // events acted on
  std::string target;              // for the ground truth
  std::string what;                // "ampere_bf16_s16816gemm... kernels" for texts
  int rank_process = -1;           // process acted on, -1 = all
  std::vector<uint32_t> inserted;  // rows added (allocator_stall)
  // Evidence nodes that the fault did not change but that locate it (the operator range
  // an allocator miss sits in): listed in the vertical view with the modified nodes.
  std::vector<uint32_t> context;

  Context(Trace& t, const InjectOptions& o, const MechanismInfo& i)
      : trace(t),
        options(o),
        info(i),
        magnitude(o.magnitude > 0 ? o.magnitude : i.default_magnitude) {}
  bool InWindow(int64_t t) const { return t >= w0 && t < w1; }
  int RankOf(uint32_t p) const {
    if (trace.processes[p].rank >= 0) return trace.processes[p].rank;
    const auto it = std::find(gpu_processes.begin(), gpu_processes.end(), p);
    return it == gpu_processes.end() ? -1 : static_cast<int>(it - gpu_processes.begin());
  }
};

std::string RankList(const Context& ctx, const std::vector<uint32_t>& procs);
Result<uint32_t> PickProcess(const Context& ctx, const std::vector<uint32_t>& candidates,
                             const std::string& why_none);
std::string TopKernelNames(const Trace& trace, size_t n);
Result<Pattern> KernelPattern(Context& ctx);
std::string DescribeNames(const Context& ctx, const std::vector<uint32_t>& events,
                          const char* noun);

// The mechanisms (mechanisms.cc).
Status ApplyKernelFactor(Context& ctx, Replay& replay, bool one_gpu);
Status ApplyGpuThrottle(Context& ctx, Replay& replay);
Result<std::vector<uint32_t>> RankFilter(Context& ctx, std::vector<uint32_t> calls);
Status ApplyLaunchLatency(Context& ctx, Replay& replay);
Status ApplySyncStall(Context& ctx, Replay& replay);
Status PrepareAllocatorStall(Context& ctx);
void ApplyAllocatorStall(Context& ctx, Replay& replay);
Status ApplyStraggler(Context& ctx, Replay& replay);
bool HostKnown(std::string_view host);
Status ApplySlowLink(Context& ctx, Replay& replay);

// Ground truth (truth.cc).
void BuildTruth(Context& ctx, const Replay& replay, const std::vector<uint8_t>& affected_comm,
                InjectResult& result);

// Resolves many locators in one pass over the events (roundtrip.cc): the event row of
// each, -1 when it matches none.
std::vector<int64_t> ResolveAll(const Trace& trace,
                                const std::vector<const NodeLocator*>& locators);

// Log lines (logs.cc).
uint64_t ShiftLogs(Trace& trace, const Replay& replay, const std::vector<StepRange>& steps);

}  // namespace teller::inject::internal

#endif  // TELLER_SRC_INJECT_INJECT_INTERNAL_H_
