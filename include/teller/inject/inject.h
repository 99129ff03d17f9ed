// `teller inject`: applies one fault mechanism of the catalog (sim/faults.h) to a
// recorded trace and writes the modified trace as a Teller raw directory together with
// its ground truth (sim/ground_truth.h), so that diagnosis can be checked on a user's own
// traces. docs/inject.md is the user's description.
//
// The fault acts through timestamps, as it would on a real machine, and its effect is
// propagated causally by a replay of the trace's dependencies (InjectFault):
//   - GPU work on one stream runs in order: a record starts no earlier than its
//     predecessor's new end plus the original gap when that gap was a queueing gap
//     (<= kQueuedGapNs), and no earlier than its launch call's new start plus the
//     original launch latency (capped at kLaunchLatencyCapNs); larger gaps were idle
//     time and absorb delay;
//   - host threads run in order: every host event after a delay point shifts by the
//     delay; blocking calls (synchronizations, blocking copies) end no earlier than the
//     GPU work they waited for now ends, plus their original return latency; enclosing
//     ranges end later by whatever happened inside them;
//   - a collective ends on every rank when its last rank arrives (docs/serving-notes.md
//     §0.4): the k-th communication kernel of one name on each rank is one collective
//     when their end times agree (after a constant clock offset), and a late arrival on
//     one rank delays the end on all of them.
// The replay sweeps the events in time order and repeats until nothing moves (dependency
// chains that run backwards in recorded time, e.g. clock skew between ranks, need a
// second sweep).
#ifndef TELLER_INJECT_INJECT_H_
#define TELLER_INJECT_INJECT_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "teller/core/status.h"
#include "teller/core/trace.h"
#include "teller/format/ground_truth.h"
#include "teller/format/trace_export.h"

namespace teller::inject {

// Replay constants (see the file comment).
inline constexpr int64_t kQueuedGapNs = 4'000;          // back-to-back kernels on a stream
inline constexpr int64_t kLaunchLatencyCapNs = 30'000;  // launch -> start when not queued

struct InjectOptions {
  std::string mechanism;    // catalog name (faults.cc), e.g. "kernel_throttle"
  std::string target;       // POSIX extended regex; "" = the mechanism's default
  double magnitude = 0;     // 0 = the catalog's default
  int64_t onset_ns = 0;     // window start, relative to the first event of the trace
  int64_t duration_ns = 0;  // window length; 0 = to the end of the trace
  int rank = -1;            // rank-scoped mechanisms; -1 = chosen from the seed
  uint64_t seed = 1;
};

// What the injection did, for the command's summary and the tests.
struct InjectEffect {
  std::string mechanism, category, target;  // target as written in the ground truth
  double magnitude = 0;
  int rank = -1;          // the rank acted on, -1 = all
  uint64_t modified = 0;  // events the fault acted on directly
  uint64_t inserted = 0;  // events added (allocator_stall)
  uint64_t shifted = 0;   // events whose times changed (incl. modified)
  int sweeps = 0;         // replay sweeps until nothing moved
  bool converged = true;
  int64_t median_before_ns = 0, median_after_ns = 0;  // of the modified events' durations
  int64_t span_before_ns = 0, span_after_ns = 0;      // first start .. last end
  std::vector<std::string> notes;                     // warnings for the user
};

struct InjectResult {
  InjectEffect effect;
  format::GroundTruth truth;
};

// Applies the fault to `trace` in place (times change; allocator_stall adds host calls at
// the end of the event table) and builds the ground truth. Locators count ranges and GPU
// records in table order per process, which is the order ExportTrace writes. Errors: an
// unknown or non-injectable mechanism (the message lists the supported ones), a bad
// regex, a target that matches nothing, a rank that does not exist, a mechanism that
// needs several ranks or hosts on a trace without them.
Result<InjectResult> InjectFault(Trace& trace, const InjectOptions& options);

struct InjectRun {
  InjectResult result;
  raw::ExportStats exported;
  uint64_t verified_events = 0;    // rows compared after re-importing the output
  uint64_t verify_mismatches = 0;  // rows that did not read back identically
  uint64_t locators = 0, locators_unresolved = 0;
};

// The whole command: imports `input` (anything ImportPath reads), injects, exports to
// `out_dir` (which must not hold a trace), writes ground_truth.json there, re-imports the
// output and checks that it reads back as written and that every locator resolves.
Result<InjectRun> InjectIntoTrace(const std::string& input, const std::string& out_dir,
                                  const InjectOptions& options,
                                  const raw::ExportOptions& export_options);

// "1.5s", "200ms", "30us", "100ns", "2m"; a bare number is seconds.
Result<int64_t> ParseDurationNs(std::string_view text);

// Names of the mechanisms `teller inject` supports, in catalog order.
std::vector<std::string> InjectableMechanisms();

// Differences between a trace and what was read back from its export (per process and in
// table order: type, name, domain, thread, times, correlation, device, stream, graph and
// nested flags, copy bytes; processes; log lines as a multiset), 0 when it is faithful.
// `first` receives a description of the first difference.
uint64_t CountRoundTripDifferences(const Trace& written, const Trace& read, std::string* first);

// Index of the event row a locator names in `trace` (counting as ExportTrace writes and
// the raw importer reads), or -1.
int64_t ResolveLocator(const Trace& trace, const format::NodeLocator& locator);

}  // namespace teller::inject

#endif  // TELLER_INJECT_INJECT_H_
