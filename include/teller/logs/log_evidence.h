// Log evidence (docs/logs.md, "Log evidence"): what the lines of a serving log say about
// requests and periods, beside what their signatures say about failures.
//  - Request lifecycles: the times a request arrived, was scheduled, gave its first token
//    and finished, from the request lines of vLLM, SGLang, routers and plain serving loops.
//  - Latency outliers: a request whose queue time, time to first token or end-to-end time
//    is far beyond its peers' (the other requests of the log), judged against their noise
//    with a significance bar that accounts for how many requests were tested, an absolute
//    floor, and one direction only (more waiting is evidence, less is not).
//  - Templates: every line's template (TemplateMiner), so that lines of templates new to a
//    baseline or rare in the run stand out, and bursts of them make an abnormal period.
// A starved request shows only here: its own lines are the only place its wait is written.
#ifndef TELLER_LOGS_LOG_EVIDENCE_H_
#define TELLER_LOGS_LOG_EVIDENCE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "teller/core/trace.h"
#include "teller/logs/template_miner.h"

namespace teller::logs {

// What a request line says happened to its request.
enum class LifecycleEvent : uint8_t {
  kNone,        // not a lifecycle line (a request id in another kind of line)
  kArrival,     // received, added, queued, routed
  kScheduled,   // admitted to a batch
  kFirstToken,  // first output token
  kFinished,    // finished (a response was sent)
  kAborted,     // aborted by the client or the engine
};
const char* LifecycleEventName(LifecycleEvent e);

// The lifecycle event of a message (docs/logs.md lists the phrases). The message is the
// line without its header, as the importer keeps it.
LifecycleEvent ClassifyRequestLine(std::string_view message);

struct RequestLifecycle {
  StringId request = 0;  // the id as the importer found it (external form)
  int64_t arrival_ns = LogTable::kNoTime;
  int64_t scheduled_ns = LogTable::kNoTime;
  int64_t first_token_ns = LogTable::kNoTime;
  int64_t finished_ns = LogTable::kNoTime;
  bool aborted = false;
  uint32_t row = 0;  // the first lifecycle row of the request (for file and line)
};

// The intervals of a lifecycle that waiting lengthens, all from the arrival.
enum class Interval : uint8_t { kQueue, kFirstToken, kEndToEnd };
inline constexpr int kIntervals = 3;
const char* IntervalName(Interval i);  // "queue", "time_to_first_token", "end_to_end"
// The interval's length, or LogTable::kNoTime when one of its ends is missing (or it
// would be negative: the clocks of the lines disagree).
int64_t IntervalNs(const RequestLifecycle& r, Interval i);

// One lifecycle per request id with a timed lifecycle line, in order of first appearance.
// Earliest time wins for arrival, scheduled and first token; the latest for finished.
std::vector<RequestLifecycle> RequestLifecycles(const LogTable& logs, const StringPool& strings);

struct OutlierOptions {
  // Family-wise chance of naming any healthy request: the bar on each request's z rises
  // with the number of requests and intervals tested (Bonferroni over a normal tail).
  double alpha = 1e-3;
  // Absolute floor: an excess over the peers' median below this is never evidence (a wait
  // this short is not a fault whatever the peers do). Also the offset of the log scale.
  // It is raised to twice the clock resolution of the interval's ends (the largest power
  // of ten, up to 1 s, that divides all their times): a log printing whole seconds makes
  // a short request that spans a printed second look a second long.
  int64_t min_excess_ns = 250'000'000;
  // Peers an interval needs before any request is judged on it.
  uint32_t min_peers = 8;
};

struct LatencyOutlier {
  uint32_t lifecycle = 0;  // index into the lifecycles
  Interval interval = Interval::kQueue;
  int64_t time_ns = 0;      // the request's interval
  int64_t expected_ns = 0;  // its peers' median
  int64_t noise_ns = 0;     // the peers' spread at the request's time (log-scale MAD)
  uint32_t peers = 0;
  double z = 0;      // (log-scale) excess over the noise
  double z_min = 0;  // the bar it passed
};

// Requests whose intervals are far beyond their peers'. The scale is logarithmic with
// `min_excess_ns` added (latencies are skewed: ten times a short wait is as telling as ten
// times a long one, and the floor keeps near-zero waits from looking huge in ratio); the
// centre is the median of all requests measured, the noise 1.4826 x their median absolute
// deviation there (robust to the outliers themselves, up to half of the requests). Most
// excess first.
std::vector<LatencyOutlier> LatencyOutliers(const std::vector<RequestLifecycle>& lifecycles,
                                            const OutlierOptions& options = {});

// Templates of every line of a log, optionally against a baseline's templates.
struct LogTemplates {
  TemplateMiner miner;
  std::vector<TemplateId> of_row;  // per row of the log table
  std::vector<uint64_t> count;     // lines of each template in this log (not the baseline's)
  size_t known = 0;                // templates of the baseline: ids below this are known
  bool has_baseline = false;
};

struct RarityOptions {
  // A template with at most this many lines in the run is rare (or, with a baseline, one
  // the baseline has at most this many lines of, or none).
  uint64_t rare_max_lines = 2;
};

// `baseline` may be null (rarity against the rest of the run).
LogTemplates MineTemplates(const LogTable& logs, const StringPool& strings,
                           const TemplateMiner* baseline);
bool IsNew(const LogTemplates& t, TemplateId id);
bool IsRare(const LogTemplates& t, TemplateId id, const RarityOptions& options = {});

// A period of the log with more lines of rare templates than the log's rate explains.
struct RareBurst {
  int64_t start_ns = 0, end_ns = 0;
  std::vector<uint32_t> rows;  // the rare lines, in time order
  uint32_t templates = 0;      // distinct templates among them
  double expected = 0;         // rare lines the period would hold at the log's rate
  double p = 0;                // chance of as many at that rate, times the periods tested
};

struct BurstOptions {
  RarityOptions rarity;
  // Family-wise chance of naming a healthy period (the Poisson tail times the number of
  // rare lines, each a possible start of a period).
  double alpha = 1e-3;
  uint32_t min_lines = 3;  // a burst holds at least this many rare lines
  // Resolution of the log's clock: a burst lasts at least this long (vLLM prints seconds).
  int64_t resolution_ns = 1'000'000'000;
};

// Bursts of rare-template lines while the log serves requests: between its first and last
// request lifecycle line (start-up and shutdown print lines of their own once, which is
// their nature, not a fault). A log without lifecycle lines has no serving period and so no
// bursts. Rare lines closer than the log's mean spacing of rare lines are one candidate.
std::vector<RareBurst> RareBursts(const LogTable& logs, const StringPool& strings,
                                  const LogTemplates& templates, const BurstOptions& options = {});

// Inverse of the standard normal tail: z with P(Z > z) = p, for p in (0, 0.5].
double NormalTailInverse(double p);
// P(X >= k) for X Poisson with mean `mean`.
double PoissonTail(uint64_t k, double mean);

}  // namespace teller::logs

#endif  // TELLER_LOGS_LOG_EVIDENCE_H_
