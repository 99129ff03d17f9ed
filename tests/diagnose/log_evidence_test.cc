// Log evidence in the diagnosis (include/teller/diagnose/log_evidence.h): a simulated
// starvation fault is found from the requests' own log lines, on the steps that first served
// them, as scheduling_software; a healthy run gets none; a log without a trace names its
// abnormal period (`teller diagnose LOGFILE`), a healthy log none.
#include "teller/diagnose/log_evidence.h"

#include <gtest/gtest.h>
#include <unistd.h>

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

std::set<std::string> LatencyRequests(const diagnose::Diagnosis& d, std::set<uint64_t>* steps) {
  std::set<std::string> out;
  for (const diagnose::StepDiagnosis& s : d.steps) {
    for (const diagnose::LogEvidence& e : s.log_evidence) {
      if (e.kind != "request_latency") continue;
      out.insert(e.request);
      steps->insert(s.seq);
      EXPECT_TRUE(s.abnormal);
      EXPECT_EQ(e.interval, "queue");
      EXPECT_GE(e.excess_ns, 250'000'000);
    }
  }
  return out;
}

TEST(LogEvidenceDiagnose, StarvedRequestsAreNamedOnTheStepsThatServedThem) {
  sim::SimConfig c = Small(1);
  sim::FaultSpec f;
  std::string error;
  ASSERT_TRUE(sim::ParseFaultSpec("starvation:onset=1s,duration=2s,magnitude=2", &f, &error))
      << error;
  c.faults = {f};
  Loaded l;
  Simulate(c, "starved", &l);
  // The truth: the steps starvation acted on and the requests it held back.
  std::set<std::string> starved;
  std::set<uint64_t> truth_steps;
  for (const format::StepTruth& s : l.truth.steps) {
    if (s.fault < 0) continue;
    truth_steps.insert(s.seq);
    for (const std::string& q : s.affected_requests) starved.insert(q);
  }
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
  for (const diagnose::Finding& f : d.findings) EXPECT_NE(f.kind, "log_period") << f.title;
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
