// Log evidence in the diagnosis (include/teller/diagnose/log_evidence.h): a simulated
// starvation fault is found from the requests' own log lines, on the steps that first served
// them, as scheduling_software, and so is a new request that was never prefilled (simulated,
// and by hand where the engine prefills nothing); a healthy run gets none; a log without a trace
// names its abnormal period (`teller diagnose LOGFILE`), a healthy log none.
#include "teller/diagnose/log_evidence.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <string>

#include "teller/diagnose/diagnose.h"
#include "teller/format/ground_truth.h"
#include "teller/ingest/ingest.h"
#include "teller/reconstruct/reconstruct.h"
#include "teller/sim/sim.h"
#include "tests/command_test_util.h"
#include "tests/trace_builder.h"

namespace teller {
namespace {

struct Loaded {
  std::string dir;
  Trace trace;
  reconstruct::Reconstruction rec;
  format::GroundTruth truth;
};

void Simulate(const sim::SimConfig& c, const std::string& tag, Loaded* out) {
  out->dir = "/tmp/teller-logev-test-" + std::to_string(getpid()) + "-" + tag;
  ASSERT_EQ(std::system(("rm -rf '" + out->dir + "'").c_str()), 0);
  auto r = sim::Simulate(c, out->dir);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_TRUE(ingest::ImportPath(out->dir, out->trace).ok());
  out->rec = reconstruct::Reconstruct(out->trace);
  auto t = format::ReadGroundTruth(out->dir + "/" + format::kGroundTruthFile);
  ASSERT_TRUE(t.ok()) << t.status().message();
  out->truth = t.value();
  std::system(("rm -rf '" + out->dir + "'").c_str());
}

// One GPU and two layers: the requests' scheduling is what matters, and it runs in well
// under a second.
sim::SimConfig Small(uint64_t seed) {
  sim::SimConfig c;
  c.profile = "vllm-v0";
  c.seed = seed;
  c.requests = 30;
  c.nodes = 1;
  c.gpus_per_node = 1;
  c.tp = 1;
  c.pp = 1;
  c.layers = 2;
  return c;
}

// The requests of the log evidence entries of `kind` (all on abnormal steps), and their
// steps; request_latency entries must be queue waits of 250 ms or more.
std::set<std::string> EvidenceRequests(const diagnose::Diagnosis& d, const std::string& kind,
                                       std::set<uint64_t>* steps) {
  std::set<std::string> out;
  for (const diagnose::StepDiagnosis& s : d.steps) {
    for (const diagnose::LogEvidence& e : s.log_evidence) {
      if (e.kind != kind) continue;
      out.insert(e.request);
      steps->insert(s.seq);
      EXPECT_TRUE(s.abnormal);
      if (kind != "request_latency") continue;
      EXPECT_EQ(e.interval, "queue");
      EXPECT_GE(e.excess_ns, 250'000'000);
    }
  }
  return out;
}
std::set<std::string> LatencyRequests(const diagnose::Diagnosis& d, std::set<uint64_t>* steps) {
  return EvidenceRequests(d, "request_latency", steps);
}
std::set<std::string> RouteRequests(const diagnose::Diagnosis& d, std::set<uint64_t>* steps) {
  return EvidenceRequests(d, "request_route", steps);
}

// Simulates Small(seed) with one fault `spec` into `l`; `requests` and `steps` get the
// truth: the requests the fault acted on and the steps it acted in.
void SimulateFault(uint64_t seed, const std::string& spec, const std::string& tag, Loaded* l,
                   std::set<std::string>* requests, std::set<uint64_t>* steps) {
  sim::SimConfig c = Small(seed);
  sim::FaultSpec f;
  std::string error;
  ASSERT_TRUE(sim::ParseFaultSpec(spec, &f, &error)) << error;
  c.faults = {f};
  Simulate(c, tag, l);
  for (const format::StepTruth& s : l->truth.steps) {
    if (s.fault < 0) continue;
    steps->insert(s.seq);
    for (const std::string& q : s.affected_requests) requests->insert(q);
  }
}

TEST(LogEvidenceDiagnose, StarvedRequestsAreNamedOnTheStepsThatServedThem) {
  // The truth: the steps starvation acted on and the requests it held back.
  Loaded l;
  std::set<std::string> starved;
  std::set<uint64_t> truth_steps;
  SimulateFault(1, "starvation:onset=1s,duration=2s,magnitude=2", "starved", &l, &starved,
                &truth_steps);
  ASSERT_GE(starved.size(), 3u);
  const diagnose::Diagnosis d = diagnose::Diagnose(l.trace, l.rec, {});
  std::set<uint64_t> steps;
  EXPECT_EQ(LatencyRequests(d, &steps), starved);
  EXPECT_EQ(steps, truth_steps);
  for (const diagnose::StepDiagnosis& s : d.steps) {
    if (steps.count(s.seq) == 0) continue;
    EXPECT_EQ(s.fault_type, "scheduling_software") << s.explanation;
    EXPECT_NE(s.explanation.find("waited far longer than its peers"), std::string::npos)
        << s.explanation;
  }
  // The reports carry the entries as their own kind.
  const std::string json = diagnose::ToJson(l.trace, d, {l.dir});
  EXPECT_NE(json.find("\"log_evidence\":[{\"kind\":\"request_latency\""), std::string::npos);
  EXPECT_NE(diagnose::ToText(l.trace, d, 3).find("    wait  queue "), std::string::npos);
  // Without log evidence the same steps have nothing to show (operators are not slower).
  diagnose::Options off;
  off.log.enabled = false;
  const diagnose::Diagnosis without = diagnose::Diagnose(l.trace, l.rec, off);
  size_t found = 0;
  for (const diagnose::StepDiagnosis& s : without.steps)
    found += s.abnormal && steps.count(s.seq) > 0;
  EXPECT_LT(found, steps.size());
}

TEST(LogEvidenceDiagnose, RareLinesOfAnAbnormalStepAreListed) {
  sim::SimConfig c = Small(1);
  sim::FaultSpec f;
  std::string error;
  ASSERT_TRUE(sim::ParseFaultSpec("starvation:onset=1s,duration=2s,magnitude=2", &f, &error));
  c.faults = {f};
  Loaded l;
  Simulate(c, "rare", &l);
  // A line the run prints once, in the middle of the first step starvation acted on.
  const format::StepTruth* target = nullptr;
  for (const format::StepTruth& s : l.truth.steps) {
    if (s.fault >= 0) {
      target = &s;
      break;
    }
  }
  ASSERT_NE(target, nullptr);
  const diagnose::LogEvidenceOptions plain;
  const std::shared_ptr<const logs::TemplateMiner> before = diagnose::LogTemplatesOf(l.trace);
  LogTable& t = l.trace.logs;
  t.ts_ns.push_back((target->start_ns + target->end_ns) / 2);
  t.request.push_back(0);
  t.level.push_back(LogLevel::kWarning);
  t.process.push_back(t.process.front());
  t.file.push_back(t.file.front());
  t.line.push_back(9999);
  t.message.push_back(l.trace.strings.Intern("Scheduler queue reordered by priority 7"));
  l.rec = reconstruct::Reconstruct(l.trace);
  auto rare_of_target = [&](const diagnose::Diagnosis& d) -> const diagnose::LogEvidence* {
    for (const diagnose::StepDiagnosis& s : d.steps) {
      if (s.seq != target->seq) continue;
      EXPECT_TRUE(s.abnormal);
      for (const diagnose::LogEvidence& e : s.log_evidence) {
        if (e.kind == "rare_template") return &e;
      }
    }
    return nullptr;
  };
  diagnose::Diagnosis d = diagnose::Diagnose(l.trace, l.rec, {});
  const diagnose::LogEvidence* e = rare_of_target(d);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->template_text, "Scheduler queue reordered by priority <*>");
  EXPECT_EQ(e->template_lines, 1u);
  EXPECT_FALSE(e->is_new);  // no baseline: rare in the run, not new
  // Against the run's own lines before the added one: the template is new to it.
  diagnose::Options with_baseline;
  with_baseline.log.baseline_templates = before;
  d = diagnose::Diagnose(l.trace, l.rec, with_baseline);
  e = rare_of_target(d);
  ASSERT_NE(e, nullptr);
  EXPECT_TRUE(e->is_new);
  EXPECT_EQ(e->template_id, before->size());  // the first id after the baseline's
}

TEST(LogEvidenceDiagnose, AHealthyRunHasNoLogEvidence) {
  Loaded l;
  Simulate(Small(2), "healthy", &l);
  const diagnose::Diagnosis d = diagnose::Diagnose(l.trace, l.rec, {});
  std::set<uint64_t> steps;
  EXPECT_TRUE(LatencyRequests(d, &steps).empty());
  EXPECT_TRUE(RouteRequests(d, &steps).empty());
  for (const diagnose::Finding& f : d.findings) EXPECT_NE(f.kind, "log_period") << f.title;
}

TEST(LogEvidenceDiagnose, AMisroutedRequestIsNamedOnTheStepThatRanItWithoutAPrefill) {
  // The truth: the steps misroute acted on and the requests it ran as decodes.
  Loaded l;
  std::set<std::string> misrouted;
  std::set<uint64_t> truth_steps;
  SimulateFault(3, "misroute:onset=1s,duration=3s", "misroute", &l, &misrouted, &truth_steps);
  ASSERT_GE(misrouted.size(), 1u);
  const diagnose::Diagnosis d = diagnose::Diagnose(l.trace, l.rec, {});
  std::set<uint64_t> steps;
  EXPECT_EQ(RouteRequests(d, &steps), misrouted);
  EXPECT_EQ(steps, truth_steps);
  for (const diagnose::StepDiagnosis& s : d.steps) {
    if (steps.count(s.seq) == 0) continue;
    EXPECT_EQ(s.fault_type, "scheduling_software") << s.explanation;
    EXPECT_NE(s.explanation.find("without a prefill"), std::string::npos) << s.explanation;
  }
  const std::string json = diagnose::ToJson(l.trace, d, {l.dir});
  EXPECT_NE(json.find("{\"kind\":\"request_route\",\"request\":"), std::string::npos);
  EXPECT_NE(diagnose::ToText(l.trace, d, d.steps.size())
                .find("    route never prefilled: first run in a "),
            std::string::npos);
  // The run was traced from its start (it has a run manifest), so every request is new to
  // it: without reading the log, the trace alone names the same requests.
  ASSERT_TRUE(l.trace.run.known);
  diagnose::Options off;
  off.log.enabled = false;
  std::set<uint64_t> trace_steps;
  const diagnose::Diagnosis alone = diagnose::Diagnose(l.trace, l.rec, off);
  EXPECT_EQ(RouteRequests(alone, &trace_steps), misrouted);
  EXPECT_EQ(trace_steps, truth_steps);
  // No line is quoted then.
  const std::string alone_json = diagnose::ToJson(l.trace, alone, {l.dir});
  const size_t at = alone_json.find("{\"kind\":\"request_route\"");
  ASSERT_NE(at, std::string::npos);
  EXPECT_EQ(alone_json.substr(at, alone_json.find('}', at) - at).find("\"file\""),
            std::string::npos);
}

// Twelve 10 ms steps 20 ms apart from t = 1 s. r0 arrived before the first step (its
// prefill may precede the trace); r1..r5 arrive 5 ms before steps 2, 4, .., 10, and each
// of those steps prefills its new request, except that `decode_first` are run there as a
// decode. The other steps decode every request that has arrived.
void PrefillTrace(const std::set<int>& decode_first, testing::TraceBuilder& b) {
  const int64_t t0 = 1'000'000'000, gap = 20'000'000, len = 10'000'000, before = 5'000'000;
  b.Log(t0 - before, "r0", "Added request r0.");
  for (int i = 0; i < 12; ++i) {
    const int arrived = std::min(i / 2, 5);
    std::string reqs;
    for (int k = 0; k <= arrived; ++k) reqs += (k ? ",r" : "r") + std::to_string(k);
    const bool fresh = i % 2 == 0 && i >= 2 && i <= 10;
    const std::string n = " n=" + std::to_string(arrived + 1);
    const std::string step = "teller.step seq=" + std::to_string(i) +
                             (fresh && decode_first.count(arrived) == 0
                                  ? " kind=mixed" + n + " prefill=r" + std::to_string(arrived)
                                  : " kind=decode" + n) +
                             " reqs=" + reqs;
    if (fresh) {
      const std::string q = "r" + std::to_string(arrived);
      b.Log(t0 + i * gap - before, q, "Added request " + q + ".");
    }
    b.Add(EventType::kPush, step, t0 + i * gap);
    b.Add(EventType::kPop, "", t0 + i * gap + len);
  }
}

TEST(LogEvidenceDiagnose, ANewRequestFirstRunAsADecodeIsAbnormalForItAlone) {
  testing::TraceBuilder b;
  PrefillTrace({4}, b);
  const reconstruct::Reconstruction r = reconstruct::Reconstruct(b.trace());
  const diagnose::Options o;
  const diagnose::Diagnosis d = diagnose::Diagnose(b.trace(), r, o);
  std::set<uint64_t> steps;
  // r4 alone: r0 arrived before the trace; r1, r2, r3 and r5 are its 4 prefilled peers.
  EXPECT_EQ(RouteRequests(d, &steps), (std::set<std::string>{"r4"}));
  EXPECT_EQ(steps, (std::set<uint64_t>{8}));
  EXPECT_EQ(d.abnormal_steps, 1u);
  for (const diagnose::StepDiagnosis& s : d.steps) {
    if (s.seq != 8) continue;
    ASSERT_EQ(s.log_evidence.size(), 1u);
    EXPECT_EQ(s.log_evidence[0].peers, 4u);
    EXPECT_EQ(s.log_evidence[0].step_kind, "decode");
    EXPECT_EQ(s.fault_type, "scheduling_software");
    // Abnormal for r4 only, not for the four requests it decoded as usual.
    EXPECT_EQ(s.abnormal_requests, (std::vector<std::string>{"r4"}));
    // Strength 4 / (4 + 1) of the way from the threshold to 1.
    EXPECT_NEAR(s.score, o.step_threshold + (1 - o.step_threshold) * 0.8, 1e-6);
    EXPECT_NE(s.explanation.find("request r4 arrived at 00:00:01 and was first run in a decode "
                                 "step without a prefill, while the 4 other requests that "
                                 "arrived during the trace were prefilled first"),
              std::string::npos)
        << s.explanation;
  }
  const std::string json = diagnose::ToJson(b.trace(), d, {"hand"});
  EXPECT_NE(json.find("\"abnormal_requests\":[\"r4\"]"), std::string::npos) << json;
}

TEST(LogEvidenceDiagnose, AnEngineThatPrefillsNoNewRequestIsNotJudged) {
  // A decode instance of a disaggregated deployment: its requests arrive prefilled.
  testing::TraceBuilder all;
  PrefillTrace({1, 2, 3, 4, 5}, all);
  diagnose::Diagnosis d =
      diagnose::Diagnose(all.trace(), reconstruct::Reconstruct(all.trace()), {});
  std::set<uint64_t> steps;
  EXPECT_TRUE(RouteRequests(d, &steps).empty());
  EXPECT_EQ(d.abnormal_steps, 0u);
  // Two prefilled peers are too few to say what this engine does with new requests.
  testing::TraceBuilder few;
  PrefillTrace({3, 4, 5}, few);
  d = diagnose::Diagnose(few.trace(), reconstruct::Reconstruct(few.trace()), {});
  EXPECT_TRUE(RouteRequests(d, &steps).empty());
}

class LogOnlyTest : public testing::CommandTest {
 protected:
  LogOnlyTest() : CommandTest("teller_logev_cli_") {}
  // 24 requests, one a second, each queued at 10:00:<k>.000 and admitted 20 + 5 (k % 4) ms
  // later (20, 25, 30, 35 ms); `starved` is admitted 2.5 s after it arrived instead.
  std::string Log(int starved) {
    std::string out;
    char line[256];
    for (int k = 0; k < 24; ++k) {
      const int wait_ms = k == starved ? 2500 : 20 + 5 * (k % 4);
      std::snprintf(line, sizeof line,
                    "2026-05-12 10:00:%02d,000 INFO serve.py:88 rank0: queued request r-%d "
                    "(prompt_tokens=100, max_new_tokens=8)\n",
                    k, k);
      out += line;
      std::snprintf(line, sizeof line,
                    "2026-05-12 10:00:%02d,%03d INFO serve.py:97 rank0: admitted request r-%d "
                    "to the batch\n",
                    k + wait_ms / 1000, wait_ms % 1000, k);
      out += line;
    }
    return out;
  }
};

TEST_F(LogOnlyTest, AStarvedRequestIsAnAbnormalPeriod) {
  std::ofstream(tmp_ + "/serve.log") << Log(7);
  auto o = Shell("", TELLER_BIN, "diagnose '" + tmp_ + "/serve.log' --json '" + tmp_ + "/d.json'");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  // r-7 waited 2.5 s. The median of the 24 waits (six each of 20, 25 and 30 ms, five of
  // 35 ms, r-7's 2.5 s) is (25 + 30) / 2 = 27.5 ms; the bar for 24 requests tested (one
  // interval: no line says when a request finished) is the normal quantile at
  // 1 - 0.001 / 24, 3.935.
  EXPECT_NE(o.out.find("1 request(s) arriving 10:00:07 waited far longer than their peers before "
                       "service"),
            std::string::npos)
      << o.out;
  EXPECT_NE(o.out.find("request r-7: queue 2.50 s against 27.50 ms for its 23 peers"),
            std::string::npos)
      << o.out;
  EXPECT_NE(o.out.find("bar 3.9)"), std::string::npos) << o.out;
  const std::string json = testing::ReadFile(tmp_ + "/d.json");
  EXPECT_NE(json.find("\"kind\":\"log_period\""), std::string::npos) << json;
}

TEST_F(LogOnlyTest, AHealthyLogHasNoPeriod) {
  std::ofstream(tmp_ + "/serve.log") << Log(-1);
  auto o = Shell("", TELLER_BIN, "diagnose '" + tmp_ + "/serve.log'");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("no failures found in 48 log lines"), std::string::npos) << o.out;
}

}  // namespace
}  // namespace teller
