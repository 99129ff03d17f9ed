// Log evidence (include/teller/logs/log_evidence.h): lifecycle lines, lifecycles and their
// intervals, latency outliers against hand-computed statistics, template rarity and
// bursts of rare templates.
#include "teller/logs/log_evidence.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace teller::logs {
namespace {

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kSec = 1'000'000'000;
constexpr int64_t kT0 = 1'790'000'000 * kSec;  // any UTC time

struct Log {
  StringPool strings;
  LogTable table;
  void Add(int64_t ts, std::string_view request, std::string_view message,
           LogLevel level = LogLevel::kInfo) {
    table.ts_ns.push_back(ts);
    table.request.push_back(request.empty() ? 0 : strings.Intern(request));
    table.level.push_back(level);
    table.process.push_back(LogTable::kNoProcess);
    table.file.push_back(strings.Intern("serve.log"));
    table.line.push_back(static_cast<uint32_t>(table.ts_ns.size()));
    table.message.push_back(strings.Intern(message));
  }
};

TEST(LogEvidenceTest, LifecycleLinesOfEachEngine) {
  // vLLM (serving-reference §3.2 samples 4-6 and 11), SGLang's request log, a router, and
  // a plain serving loop.
  EXPECT_EQ(ClassifyRequestLine("Received request chatcmpl-a269: params: SamplingParams(n=1)"),
            LifecycleEvent::kArrival);
  EXPECT_EQ(ClassifyRequestLine("Added request chatcmpl-a269fdcb7c6ce890-a8a65d16."),
            LifecycleEvent::kArrival);
  EXPECT_EQ(ClassifyRequestLine("Finished request cmpl-3b37-0."), LifecycleEvent::kFinished);
  EXPECT_EQ(ClassifyRequestLine("Aborted request chatcmpl-e62b."), LifecycleEvent::kAborted);
  EXPECT_EQ(ClassifyRequestLine("Receive: obj=GenerateReqInput(rid='c056', text=None)"),
            LifecycleEvent::kArrival);
  EXPECT_EQ(ClassifyRequestLine("Finish: obj=GenerateReqInput(rid='c056'), out={}"),
            LifecycleEvent::kFinished);
  EXPECT_EQ(ClassifyRequestLine("Routing request fc469bec-b78e to http://localhost:8000"),
            LifecycleEvent::kArrival);
  EXPECT_EQ(ClassifyRequestLine("rank0: admitted request r-12 to the batch"),
            LifecycleEvent::kScheduled);
  EXPECT_EQ(ClassifyRequestLine("rank0: request r-12 first token after 41 ms"),
            LifecycleEvent::kFirstToken);
  // A preemption names its request but is no lifecycle event; neither is a stats line.
  EXPECT_EQ(ClassifyRequestLine("Sequence group chat-93 is preempted by PreemptionMode.RECOMPUTE"),
            LifecycleEvent::kNone);
  EXPECT_EQ(ClassifyRequestLine("Avg prompt throughput: 0.0 tokens/s, Running: 32 reqs"),
            LifecycleEvent::kNone);
}

TEST(LogEvidenceTest, LifecyclesTakeTheEarliestStartAndTheLatestEnd) {
  Log log;
  log.Add(kT0, "r-1", "queued request r-1 (prompt_tokens=12)");
  log.Add(kT0 + 2 * kMs, "r-1", "Added request r-1.");  // a second arrival line: later, ignored
  log.Add(kT0 + 5 * kMs, "r-2", "queued request r-2 (prompt_tokens=7)");
  log.Add(kT0 + 30 * kMs, "r-1", "admitted request r-1 to the batch");
  log.Add(kT0 + 45 * kMs, "r-1", "request r-1 first token");
  log.Add(kT0 + 50 * kMs, "r-2", "Sequence group r-2 is preempted");  // not a lifecycle line
  log.Add(LogTable::kNoTime, "r-2", "finished request r-2");          // no time: not used
  log.Add(kT0 + 90 * kMs, "r-1", "finished request r-1: 8 tokens in 0.090 s");
  log.Add(kT0 + 95 * kMs, "", "finished request without an id");
  log.Add(kT0 + 99 * kMs, "r-3", "Aborted request r-3.");
  const std::vector<RequestLifecycle> life = RequestLifecycles(log.table, log.strings);
  ASSERT_EQ(life.size(), 3u);
  EXPECT_EQ(log.strings.Get(life[0].request), "r-1");
  EXPECT_EQ(life[0].row, 0u);
  EXPECT_EQ(IntervalNs(life[0], Interval::kQueue), 30 * kMs);
  EXPECT_EQ(IntervalNs(life[0], Interval::kFirstToken), 45 * kMs);
  EXPECT_EQ(IntervalNs(life[0], Interval::kEndToEnd), 90 * kMs);
  EXPECT_EQ(log.strings.Get(life[1].request), "r-2");
  EXPECT_EQ(IntervalNs(life[1], Interval::kQueue), LogTable::kNoTime);
  EXPECT_EQ(IntervalNs(life[1], Interval::kEndToEnd), LogTable::kNoTime);
  // r-3 has no arrival, and an aborted request has no service latency.
  EXPECT_TRUE(life[2].aborted);
  EXPECT_EQ(IntervalNs(life[2], Interval::kEndToEnd), LogTable::kNoTime);
  RequestLifecycle aborted = life[0];
  aborted.aborted = true;
  EXPECT_EQ(IntervalNs(aborted, Interval::kEndToEnd), LogTable::kNoTime);
  EXPECT_EQ(IntervalNs(aborted, Interval::kQueue), 30 * kMs);
}

std::vector<RequestLifecycle> Queued(const std::vector<int64_t>& waits_ns) {
  std::vector<RequestLifecycle> out;
  for (size_t i = 0; i < waits_ns.size(); ++i) {
    RequestLifecycle r;
    r.request = static_cast<StringId>(i + 1);
    // Stamps to the nanosecond (+1): the clock's resolution does not raise the floor.
    r.arrival_ns = kT0 + static_cast<int64_t>(i) * kSec + 1;
    r.scheduled_ns = r.arrival_ns + waits_ns[i];
    out.push_back(r);
  }
  return out;
}

TEST(LogEvidenceTest, AStarvedRequestStandsOutOfItsPeers) {
  // Queue times 10, 20, ..., 100 ms and one of 3000 ms. Hand computation on the log scale
  // with the 250 ms floor as offset: the centre is the median ln(60 + 250) = ln 310; the
  // deviations |ln(x + 250) - ln 310| sorted are 0, ln(320/310), ln(310/300), ln(330/310),
  // ln(310/290), ln(340/310), ...: the median (6th of 11) is ln(340/310) = 0.0923733, the
  // noise 1.4826 times that = 0.1369527. The 3 s request: z = ln(3250/310) / 0.1369527 =
  // 17.158. Only the queue is measured, 11 requests: the bar is the normal quantile at
  // 1 - 0.001 / 11, 3.7430; its excess 2940 ms is over the floor. The 100 ms request has
  // z = ln(350/310) / 0.1369527 = 0.886: a peer.
  std::vector<int64_t> waits;
  for (int k = 1; k <= 10; ++k) waits.push_back(k * 10 * kMs);
  waits.push_back(3000 * kMs);
  const std::vector<LatencyOutlier> out = LatencyOutliers(Queued(waits));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].lifecycle, 10u);
  EXPECT_EQ(out[0].interval, Interval::kQueue);
  EXPECT_EQ(out[0].time_ns, 3000 * kMs);
  EXPECT_EQ(out[0].expected_ns, 60 * kMs);
  EXPECT_EQ(out[0].peers, 10u);
  EXPECT_NEAR(out[0].z, 17.158, 0.001);
  EXPECT_NEAR(out[0].z_min, 3.7430, 0.0001);
  // One noise unit at the centre: 310 ms x (e^0.1369527 - 1) = 45.50 ms.
  EXPECT_NEAR(static_cast<double>(out[0].noise_ns) / kMs, 45.50, 0.01);
}

TEST(LogEvidenceTest, BelowTheFloorOrFasterIsNoEvidence) {
  // The same shape a thousand times shorter: as far out in z, but 2.94 ms of excess is
  // under the 250 ms floor.
  std::vector<int64_t> waits;
  for (int k = 1; k <= 10; ++k) waits.push_back(k * 10 * 1000);
  waits.push_back(3000 * 1000);
  EXPECT_TRUE(LatencyOutliers(Queued(waits)).empty());
  // Direction: a request served at once among peers that all waited about a second is no
  // evidence (less waiting is never a fault).
  waits.clear();
  for (int k = 0; k < 10; ++k) waits.push_back(kSec + k * 20 * kMs);
  waits.push_back(0);
  EXPECT_TRUE(LatencyOutliers(Queued(waits)).empty());
  // Too few peers: nothing is judged.
  waits = {10 * kMs, 20 * kMs, 30 * kMs, 40 * kMs, 50 * kMs, 60 * kMs, 70 * kMs, 9000 * kMs};
  EXPECT_TRUE(LatencyOutliers(Queued(waits)).empty());
  OutlierOptions few;
  few.min_peers = 7;
  EXPECT_EQ(LatencyOutliers(Queued(waits), few).size(), 1u);
}

TEST(LogEvidenceTest, WholeSecondStampsRaiseTheFloor) {
  // A log that prints whole seconds: 20 requests of about 0.3 s, 14 printed as finishing in
  // their arrival's second (0 s), 6 in the next one (1 s), and one held back for 3 s. The
  // floor becomes 2 x 1 s: the 1 s requests (1 s over the median 0) are no evidence, the
  // 3 s one (3 s over it, far beyond the peers on the log scale) is.
  std::vector<RequestLifecycle> life;
  for (int k = 0; k < 21; ++k) {
    RequestLifecycle r;
    r.request = static_cast<StringId>(k + 1);
    r.arrival_ns = kT0 + k * 10 * kSec;
    r.finished_ns = r.arrival_ns + (k == 20 ? 3 : k % 10 < 7 ? 0 : 1) * kSec;
    life.push_back(r);
  }
  const std::vector<LatencyOutlier> out = LatencyOutliers(life);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].lifecycle, 20u);
  EXPECT_EQ(out[0].interval, Interval::kEndToEnd);
  EXPECT_EQ(out[0].expected_ns, 0);
  // The same with millisecond stamps: 0.3 s and 1.3 s are then told apart at the 250 ms
  // floor, and the six 1.3 s requests stand out of the fourteen 0.3 s ones too.
  for (int k = 0; k < 21; ++k) {
    life[k].arrival_ns += 1;
    life[k].finished_ns += (k < 20 ? 300 * kMs : 0) + 1;
  }
  EXPECT_EQ(LatencyOutliers(life).size(), 7u);
}

TEST(LogEvidenceTest, AHealthySpreadNamesNoRequest) {
  // 200 requests whose waits spread over a factor of 20 (25 ms to 500 ms, a cycle of 20
  // values): the spread is the peers' own, and no request is beyond it.
  std::vector<int64_t> waits;
  for (int k = 0; k < 200; ++k) waits.push_back((25 + 25 * (k % 20)) * kMs);
  EXPECT_TRUE(LatencyOutliers(Queued(waits)).empty());
}

TEST(LogEvidenceTest, NormalTailAndPoissonTail) {
  EXPECT_NEAR(NormalTailInverse(0.025), 1.959964, 1e-6);
  EXPECT_NEAR(NormalTailInverse(0.5), 0.0, 1e-9);
  EXPECT_NEAR(NormalTailInverse(1e-10), 6.361341, 1e-5);
  // P(X >= 2), mean 1: 1 - e^-1 - e^-1 = 0.2642411; P(X >= 5), mean 0.025: 7.9703e-11.
  EXPECT_NEAR(PoissonTail(2, 1.0), 0.2642411, 1e-7);
  EXPECT_NEAR(PoissonTail(5, 0.025) / 7.9703e-11, 1.0, 1e-4);
  EXPECT_EQ(PoissonTail(0, 3.0), 1.0);
}

TEST(LogEvidenceTest, RareAgainstTheRunOrTheBaseline) {
  Log log;
  for (int k = 0; k < 5; ++k)
    log.Add(kT0 + k * kSec, "", "Avg prompt throughput: " + std::to_string(k) + ".0 tokens/s");
  log.Add(kT0 + 6 * kSec, "", "CUDA error: an illegal memory access was encountered",
          LogLevel::kError);
  LogTemplates t = MineTemplates(log.table, log.strings, nullptr);
  ASSERT_EQ(t.miner.size(), 2u);
  EXPECT_EQ(t.of_row[0], t.of_row[4]);
  EXPECT_EQ(t.count[t.of_row[0]], 5u);
  EXPECT_FALSE(IsRare(t, t.of_row[0]));
  EXPECT_TRUE(IsRare(t, t.of_row[5]));
  EXPECT_FALSE(IsNew(t, t.of_row[5]));  // no baseline: nothing is new
  // Against a baseline that has the stats line only: the error is new (and rare), the
  // stats line known and common there.
  TemplateMiner base;
  for (int k = 0; k < 3; ++k)
    base.Add("Avg prompt throughput: 1" + std::to_string(k) + ".0 tokens/s");
  t = MineTemplates(log.table, log.strings, &base);
  EXPECT_EQ(t.known, 1u);
  EXPECT_EQ(t.of_row[0], 0u);
  EXPECT_FALSE(IsRare(t, 0));
  EXPECT_TRUE(IsNew(t, t.of_row[5]));
  EXPECT_TRUE(IsRare(t, t.of_row[5]));
  EXPECT_EQ(base.size(), 1u);  // the baseline's miner is left as it was
  EXPECT_EQ(base.Count(0), 3u);
}

// A log serving one request a second for 200 s: arrival and finish lines, a stats line
// every 10 s, start-up lines once before and shutdown lines once after.
void Serving(Log& log) {
  log.Add(kT0 - 30 * kSec, "", "vLLM API server version 0.9.0");
  log.Add(kT0 - 29 * kSec, "", "Chunked prefill is enabled with max_num_batched_tokens=2048.");
  log.Add(kT0 - 28 * kSec, "", "GPU KV cache size: 1,028,832 tokens");
  log.Add(kT0 - 28 * kSec, "", "Graph capturing finished in 4 secs, took 0.58 GiB");
  for (int k = 0; k < 200; ++k) {
    const std::string id = "cmpl-" + std::to_string(1000 + k);
    log.Add(kT0 + k * kSec, id, "Received request " + id + ": params: SamplingParams(n=1)");
    log.Add(kT0 + k * kSec + 300 * kMs, id, "Finished request " + id + ".");
    if (k % 10 == 0)
      log.Add(kT0 + k * kSec + 500 * kMs, "",
              "Avg prompt throughput: 12.5 tokens/s, Running: 1 reqs");
  }
  log.Add(kT0 + 201 * kSec, "", "Shutting down FastAPI HTTP server.");
  log.Add(kT0 + 201 * kSec, "", "Waiting for application shutdown.");
  log.Add(kT0 + 201 * kSec, "", "Application shutdown complete.");
}

TEST(LogEvidenceTest, AHealthyLogHasNoBurstNorOutlier) {
  Log log;
  Serving(log);
  const LogTemplates t = MineTemplates(log.table, log.strings, nullptr);
  // Start-up and shutdown lines are rare but outside the serving period.
  EXPECT_TRUE(RareBursts(log.table, log.strings, t).empty());
  EXPECT_TRUE(LatencyOutliers(RequestLifecycles(log.table, log.strings)).empty());
}

TEST(LogEvidenceTest, ABurstOfRareLinesWhileServing) {
  Log log;
  Serving(log);
  // At 100 s, four lines of templates the log prints once each, within one second; and one
  // lone rare line at 150 s.
  log.Add(kT0 + 100 * kSec + 100 * kMs, "", "NCCL WARN Call to ibv_reg_mr failed",
          LogLevel::kWarning);
  log.Add(kT0 + 100 * kSec + 200 * kMs, "", "Retrying the collective on a new communicator");
  log.Add(kT0 + 100 * kSec + 300 * kMs, "", "KV cache pool is full. Retracting requests");
  log.Add(kT0 + 100 * kSec + 900 * kMs, "", "No available shared memory broadcast block found");
  log.Add(kT0 + 150 * kSec, "", "Detected the chat template content format to be 'string'.");
  const LogTemplates t = MineTemplates(log.table, log.strings, nullptr);
  const std::vector<RareBurst> b = RareBursts(log.table, log.strings, t);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].rows.size(), 4u);
  EXPECT_EQ(b[0].templates, 4u);
  EXPECT_EQ(b[0].start_ns, kT0 + 100 * kSec + 100 * kMs);
  EXPECT_EQ(b[0].end_ns, kT0 + 100 * kSec + 900 * kMs);
  // The serving period runs from the first arrival (0 s) to the last finish (199.3 s) and
  // holds 5 rare lines: 5 / 199.3 s; the burst's 0.8 s counts as the 1 s resolution, so
  // m = 0.0250878 lines were expected, and P(X >= 4) times the 5 rare lines is about
  // 5 x e^-m m^4 / 4! = 8.048e-8, the terms past 4 adding 0.5%: 8.089e-8.
  EXPECT_NEAR(b[0].expected, 5.0 / 199.3, 1e-6);
  EXPECT_NEAR(b[0].p / 8.089e-8, 1.0, 0.001);
}

}  // namespace
}  // namespace teller::logs
