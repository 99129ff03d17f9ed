// End-to-end tests of `teller dataset build` and `teller dataset stats` through the CLI:
// a real collection of the bundled demo (`teller run -- teller-demo`) labelled by a
// hand-made ground truth, and (DatasetSimulateE2eTest) a small simulation.
//
// The demo's step ranges carry no seq=, so the build groups its steps by their
// per-process ordinal (docs/dataset-format.md); the ground truth below numbers steps the
// same way. The demo runs 4 decoder layers per step with one "attention" range each, on
// one engine thread, so step k's attention ranges are occurrences 4k..4k+3.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <list>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "simdjson.h"
#include "teller/core/trace.h"
#include "teller/dataset/trace_file.h"
#include "teller/format/ground_truth.h"
#include "teller/ingest/ingest.h"
#include "teller/reconstruct/reconstruct.h"

namespace teller {
namespace {

struct Outcome {
  int exit_code = -1;
  std::string out, err;
};

// A file's text; a dataset's trace.json.gz gunzipped.
std::string ReadText(const std::string& path) {
  if (path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0) {
    Result<std::string> text = dataset::ReadTraceText(path);
    EXPECT_TRUE(text.ok()) << text.status().message();
    return text.ok() ? text.value() : std::string();
  }
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string DemoBinary() {
  std::string bin = TELLER_BIN;
  return bin.substr(0, bin.rfind('/') + 1) + "teller-demo";
}

std::vector<std::string> SubDirs(const std::string& dir) {
  std::vector<std::string> out;
  const std::string listing = dir + "/.listing";
  std::system(("ls -1 '" + dir + "' > '" + listing + "' 2>/dev/null").c_str());
  std::istringstream in(ReadText(listing));
  std::string name;
  while (std::getline(in, name)) {
    if (!name.empty() && std::system(("test -d '" + dir + "/" + name + "'").c_str()) == 0)
      out.push_back(name);
  }
  std::remove(listing.c_str());
  return out;
}

class DatasetCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/teller-dscli-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    tmp_ = tmpl;
  }
  void TearDown() override { std::system(("rm -rf '" + tmp_ + "'").c_str()); }

  Outcome Teller(const std::string& args) {
    Outcome o;
    const std::string cmd = "'" + std::string(TELLER_BIN) + "' " + args + " >'" + tmp_ +
                            "/out.txt' 2>'" + tmp_ + "/err.txt'";
    const int status = std::system(cmd.c_str());
    o.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    o.out = ReadText(tmp_ + "/out.txt");
    o.err = ReadText(tmp_ + "/err.txt");
    return o;
  }

  simdjson::dom::element Json(const std::string& text, const std::string& what) {
    docs_.emplace_back(text);
    parsers_.emplace_back();
    simdjson::dom::element e;
    EXPECT_EQ(parsers_.back().parse(docs_.back()).get(e), simdjson::SUCCESS)
        << what << ": " << text.substr(0, 200);
    return e;
  }
  simdjson::dom::element JsonFile(const std::string& path) { return Json(ReadText(path), path); }

  std::string tmp_;
  std::list<simdjson::padded_string> docs_;
  std::list<simdjson::dom::parser> parsers_;
};

std::vector<uint64_t> Ids(simdjson::dom::element view) {
  std::vector<uint64_t> ids;
  for (auto v : view["affected_nodes"].get_array()) ids.push_back(v.get_uint64().value());
  return ids;
}

// What the test knows about a demo collection, read with the library.
struct DemoFacts {
  std::string host;
  int64_t pid = 0;
  uint32_t tid = 0;
  size_t steps = 0;
  std::vector<std::string> step_names;               // in order: ordinal k
  std::vector<uint32_t> step_occurrence;             // earlier steps with the same name
  std::vector<std::vector<std::string>> step_batch;  // requests of step k
  std::vector<std::string> requests;
};

DemoFacts ReadDemo(const std::string& raw) {
  DemoFacts f;
  Trace trace;
  const Status s = ingest::ImportPath(raw, trace);
  EXPECT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(trace.processes.size(), 1u);
  if (trace.processes.empty()) return f;
  f.host = std::string(trace.strings.Get(trace.processes[0].host));
  f.pid = trace.processes[0].pid;
  std::set<std::string> requests;
  for (size_t i = 0; i < trace.events.size(); ++i) {
    if (trace.events.type[i] != EventType::kPush) continue;
    const std::string_view name = trace.strings.Get(trace.events.name[i]);
    if (name.rfind("teller.step ", 0) != 0) continue;
    f.tid = trace.events.thread[i];
    f.step_occurrence.push_back(static_cast<uint32_t>(
        std::count(f.step_names.begin(), f.step_names.end(), std::string(name))));
    f.step_names.emplace_back(name);
    std::vector<std::string> batch;
    reconstruct::ParseStepMessage(name, &batch, nullptr, nullptr);
    for (const auto& q : batch) requests.insert(q);
    f.step_batch.push_back(batch);
  }
  f.steps = f.step_names.size();
  f.requests.assign(requests.begin(), requests.end());
  return f;
}

format::NodeLocator RangeAt(const DemoFacts& f, const std::string& name, uint32_t k) {
  format::NodeLocator n;
  n.kind = format::NodeLocator::Kind::kRange;
  n.host = f.host;
  n.pid = f.pid;
  n.tid = f.tid;
  n.name = name;
  n.occurrence = k;
  return n;
}

// Step `slow` (an ordinal) is faulty for its whole batch: the vertical evidence is the
// step range and its four attention ranges.
format::GroundTruth DemoTruth(const DemoFacts& f, const std::string& setting, uint64_t slow) {
  format::GroundTruth t;
  t.setting = setting;
  t.profile = "demo";
  format::FaultRecord fault;
  fault.id = 0;
  fault.mechanism = "kernel_throttle";
  fault.category = "cuda_kernel";
  fault.description = "attention 20x slower in one step";
  t.faults = {fault};
  const std::vector<std::string>& batch = f.step_batch[slow];
  for (const auto& q : f.requests) {
    format::RequestTruth r;
    r.id = q;
    r.is_fault = std::find(batch.begin(), batch.end(), q) != batch.end();
    if (r.is_fault) {
      r.fault_type = "cuda_kernel";
      r.mechanism = "kernel_throttle";
      r.fault = 0;
      r.steps = {slow};
    }
    t.requests.push_back(r);
  }
  for (uint64_t k = 0; k < f.steps; ++k) {
    format::StepTruth s;
    s.seq = k;
    s.requests = f.step_batch[k];
    if (k == slow) {
      s.fault = 0;
      s.affected_requests = batch;
      s.vertical.is_anomaly = true;
      s.vertical.nodes.push_back(RangeAt(f, f.step_names[k], f.step_occurrence[k]));
      for (uint32_t a = 0; a < 4; ++a)
        s.vertical.nodes.push_back(RangeAt(f, "attention", 4 * slow + a));
      s.explanation = "attention ran 20x slower in this step";
    }
    t.steps.push_back(s);
  }
  return t;
}

TEST_F(DatasetCliTest, DemoCollectionLabelledByHand) {
  const std::string raw = tmp_ + "/raw";
  Outcome run = Teller("run --out '" + raw + "' -- '" + DemoBinary() + "' 6 2");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const DemoFacts facts = ReadDemo(raw);
  ASSERT_GT(facts.steps, 3u);
  ASSERT_EQ(facts.requests.size(), 6u);
  const uint64_t slow = 2;
  const std::vector<std::string> batch = facts.step_batch[slow];
  ASSERT_FALSE(batch.empty());

  // Without ground truth the build refuses, naming the path and the alternative.
  Outcome unlabelled = Teller("dataset build '" + raw + "' --out '" + tmp_ + "/ds'");
  EXPECT_EQ(unlabelled.exit_code, 1);
  EXPECT_NE(unlabelled.err.find(raw), std::string::npos) << unlabelled.err;
  EXPECT_NE(unlabelled.err.find("dataset export"), std::string::npos) << unlabelled.err;

  ASSERT_TRUE(
      format::WriteGroundTruth(DemoTruth(facts, "demo", slow), raw + "/ground_truth.json").ok());
  const std::string ds = tmp_ + "/ds";
  Outcome build = Teller("dataset build '" + raw + "' --out '" + ds + "' --jobs 1");
  ASSERT_EQ(build.exit_code, 0) << build.err;
  EXPECT_NE(build.err.find("demo: 5 of 5 ground-truth locators resolved"), std::string::npos)
      << build.err;

  auto index = JsonFile(ds + "/index.json");
  auto entry = index["settings"].get_array().at(0);
  EXPECT_EQ(std::string_view(entry["name"]), "demo");
  EXPECT_EQ(uint64_t(entry["counters"]["locators"]), 5u);
  EXPECT_EQ(uint64_t(entry["counters"]["locators_unresolved"]), 0u);
  EXPECT_EQ(uint64_t(entry["counters"]["locators_outside_step"]), 0u);
  EXPECT_EQ(uint64_t(entry["counters"]["steps_without_seq"]), facts.steps);  // the ordinal fallback

  // Every request: anomalous exactly at the slow step when it was in its batch.
  uint64_t steps = 0, nodes = 0, faulty = 0;
  const std::vector<std::string> dirs = SubDirs(ds + "/demo");
  EXPECT_EQ(dirs.size(), 6u);
  for (const std::string& q : facts.requests) {
    const std::string dir = ds + "/demo/" + q;
    auto trace = JsonFile(dir + "/trace.json.gz");
    auto ann = JsonFile(dir + "/annotation.json");
    const bool in_batch = std::find(batch.begin(), batch.end(), q) != batch.end();
    EXPECT_EQ(bool(ann["is_fault"]), in_batch) << q;
    faulty += in_batch;
    auto trace_steps = trace["steps"].get_array();
    auto ann_steps = ann["steps"].get_array();
    ASSERT_EQ(trace_steps.size(), ann_steps.size()) << q;
    size_t anomalous = 0;
    for (size_t k = 0; k < trace_steps.size(); ++k) {
      auto ts = trace_steps.at(k);
      auto as = ann_steps.at(k);
      EXPECT_EQ(uint64_t(as["seq"]), uint64_t(ts["seq"]));
      auto list = ts["nodes"].get_array();
      ++steps;
      nodes += list.size();
      std::vector<uint64_t> attention;
      size_t i = 0;
      for (auto n : list) {
        EXPECT_EQ(uint64_t(n["id"]), i);
        EXPECT_LT(int64_t(n["parent"]), static_cast<int64_t>(i));
        EXPECT_EQ(int64_t(n["rank"]), -1);  // the demo has no distributed rank
        if (std::string_view(n["name"]) == "attention") attention.push_back(i);
        ++i;
      }
      const bool expect = in_batch && uint64_t(ts["seq"]) == slow;
      EXPECT_EQ(bool(as["is_anomaly"]), expect) << q << " step " << k;
      if (!expect) {
        EXPECT_TRUE(Ids(as["vertical"]).empty());
        EXPECT_TRUE(as["fault_type"].is_null());
        continue;
      }
      ++anomalous;
      EXPECT_EQ(std::string_view(as["fault_type"]), "cuda_kernel");
      EXPECT_FALSE(bool(as["horizontal"]["is_anomaly"]));
      EXPECT_TRUE(Ids(as["horizontal"]).empty());
      std::vector<uint64_t> expected = {0};  // the step itself
      expected.insert(expected.end(), attention.begin(), attention.end());
      EXPECT_EQ(attention.size(), 4u);
      EXPECT_EQ(Ids(as["vertical"]), expected) << q;
      for (uint64_t id : Ids(as["vertical"])) EXPECT_LT(id, list.size());
    }
    EXPECT_EQ(anomalous, in_batch ? 1u : 0u) << q;
    EXPECT_NE(ReadText(dir + "/log.txt").find("Received request " + q), std::string::npos) << q;
  }
  EXPECT_EQ(uint64_t(entry["steps"]), steps);
  EXPECT_EQ(uint64_t(entry["nodes"]), nodes);

  // Table 1 numbers, from the index and recounted from the files.
  Outcome stats = Teller("dataset stats --json '" + ds + "'");
  ASSERT_EQ(stats.exit_code, 0) << stats.err;
  auto st = Json(stats.out, "stats --json");
  ASSERT_EQ(st["settings"].get_array().size(), 1u);
  auto row = st["settings"].get_array().at(0);
  EXPECT_EQ(std::string_view(row["name"]), "demo");
  EXPECT_EQ(uint64_t(row["requests"]), 6u);
  EXPECT_EQ(uint64_t(row["faulty"]), faulty);
  EXPECT_EQ(uint64_t(row["steps"]), steps);
  EXPECT_EQ(uint64_t(row["nodes"]), nodes);
  EXPECT_EQ(uint64_t(st["total"]["nodes"]), nodes);
  EXPECT_DOUBLE_EQ(double(st["fault_mix"]["cuda_kernel"]), 1.0);
  EXPECT_DOUBLE_EQ(double(st["fault_mix"]["communication"]), 0.0);
  size_t categories = 0;
  for (auto field : st["fault_mix"].get_object()) {
    (void)field;
    ++categories;
  }
  EXPECT_EQ(categories, 5u);
  std::remove((ds + "/index.json").c_str());
  Outcome recount = Teller("dataset stats --json '" + ds + "'");
  ASSERT_EQ(recount.exit_code, 0) << recount.err;
  EXPECT_EQ(recount.out, stats.out);
  Outcome table = Teller("dataset stats '" + ds + "'");
  EXPECT_EQ(table.exit_code, 0);
  EXPECT_NE(table.out.find("total"), std::string::npos) << table.out;

  // Clear errors.
  Outcome again = Teller("dataset build '" + raw + "' --out '" + ds + "'");
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_NE(again.err.find("already exists"), std::string::npos) << again.err;
  Outcome not_dataset = Teller("dataset stats '" + raw + "'");
  EXPECT_EQ(not_dataset.exit_code, 1);
  EXPECT_NE(not_dataset.err.find("not a Teller dataset"), std::string::npos) << not_dataset.err;
  Outcome usage = Teller("dataset build --help");
  EXPECT_EQ(usage.exit_code, 0);
  EXPECT_NE(usage.out.find("--max-nodes-per-step"), std::string::npos);
  EXPECT_EQ(Teller("dataset stats --help").exit_code, 0);
  EXPECT_EQ(Teller("dataset build '" + raw + "'").exit_code, 2);  // no --out
}

TEST_F(DatasetCliTest, PresetDirectoryInParallelAndIndexMerge) {
  const std::string raw = tmp_ + "/raw";
  Outcome run = Teller("run --out '" + raw + "' -- '" + DemoBinary() + "' 4 1");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const DemoFacts facts = ReadDemo(raw);
  ASSERT_GT(facts.steps, 1u);
  // A preset directory of three settings (copies of the collection, different names).
  const std::string preset = tmp_ + "/preset";
  for (const char* setting : {"alpha", "beta", "gamma"}) {
    const std::string dir = preset + "/" + setting;
    ASSERT_EQ(
        std::system(("mkdir -p '" + preset + "' && cp -r '" + raw + "' '" + dir + "'").c_str()), 0);
    ASSERT_TRUE(
        format::WriteGroundTruth(DemoTruth(facts, setting, 1), dir + "/ground_truth.json").ok());
  }
  // gamma is built on its own first; the preset build of the others must keep it.
  const std::string ds = tmp_ + "/ds";
  ASSERT_EQ(Teller("dataset build '" + preset + "/gamma' --out '" + ds + "'").exit_code, 0);
  ASSERT_EQ(std::system(("mv '" + preset + "/gamma' '" + tmp_ + "/gamma'").c_str()), 0);
  Outcome build = Teller("dataset build '" + preset + "' --out '" + ds + "' --jobs 2");
  ASSERT_EQ(build.exit_code, 0) << build.err;
  EXPECT_NE(build.err.find("alpha: wrote"), std::string::npos) << build.err;
  EXPECT_NE(build.err.find("beta: wrote"), std::string::npos) << build.err;

  Outcome stats = Teller("dataset stats --json '" + ds + "'");
  ASSERT_EQ(stats.exit_code, 0) << stats.err;
  auto st = Json(stats.out, "stats");
  auto settings = st["settings"].get_array();
  ASSERT_EQ(settings.size(), 3u) << stats.out;
  uint64_t requests = 0, nodes = 0;
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(std::string_view(settings.at(i)["name"]),
              std::vector<std::string>({"alpha", "beta", "gamma"})[i]);
    requests += uint64_t(settings.at(i)["requests"]);
    nodes += uint64_t(settings.at(i)["nodes"]);
    // Same collection, same numbers.
    EXPECT_EQ(uint64_t(settings.at(i)["nodes"]), uint64_t(settings.at(0)["nodes"]));
  }
  EXPECT_EQ(uint64_t(st["total"]["requests"]), requests);
  EXPECT_EQ(requests, 3 * facts.requests.size());
  EXPECT_EQ(uint64_t(st["total"]["nodes"]), nodes);

  // A bad locator in a setting fails the build and says why.
  const std::string bad = tmp_ + "/bad";
  ASSERT_EQ(std::system(("cp -r '" + raw + "' '" + bad + "'").c_str()), 0);
  format::GroundTruth truth = DemoTruth(facts, "bad", 1);
  truth.steps[1].vertical.nodes.push_back(RangeAt(facts, "no-such-range", 0));
  ASSERT_TRUE(format::WriteGroundTruth(truth, bad + "/ground_truth.json").ok());
  Outcome failed = Teller("dataset build '" + bad + "' --out '" + tmp_ + "/ds2'");
  EXPECT_EQ(failed.exit_code, 1);
  EXPECT_NE(failed.err.find("1 of 6 ground-truth node locators"), std::string::npos) << failed.err;
  EXPECT_NE(failed.err.find("no-such-range"), std::string::npos) << failed.err;
}

// Two runs of one setting with different seeds (seeds of a preset, merged so that the test
// parts grow) are kept apart as NAME.seedN, both; the same run given twice is refused.
TEST_F(DatasetCliTest, RunsOfOneSettingWithDifferentSeedsAreKeptApart) {
  const std::string raw = tmp_ + "/raw";
  Outcome run = Teller("run --out '" + raw + "' -- '" + DemoBinary() + "' 4 1");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const DemoFacts facts = ReadDemo(raw);
  for (uint64_t seed : {3, 11}) {
    const std::string dir = tmp_ + "/seed" + std::to_string(seed) + "/sglang";
    ASSERT_EQ(
        std::system(("mkdir -p '" + dir + "' && cp -r '" + raw + "/.' '" + dir + "'").c_str()), 0);
    format::GroundTruth truth = DemoTruth(facts, "sglang", 1);
    truth.seed = seed;
    ASSERT_TRUE(format::WriteGroundTruth(truth, dir + "/ground_truth.json").ok());
  }
  const std::string ds = tmp_ + "/ds";
  Outcome build =
      Teller("dataset build '" + tmp_ + "/seed11' '" + tmp_ + "/seed3' --out '" + ds + "' -q");
  ASSERT_EQ(build.exit_code, 0) << build.err;
  Outcome stats = Teller("dataset stats --json '" + ds + "'");
  ASSERT_EQ(stats.exit_code, 0) << stats.err;
  auto st = Json(stats.out, "stats");
  auto settings = st["settings"].get_array();
  ASSERT_EQ(settings.size(), 2u) << stats.out;
  EXPECT_EQ(std::string_view(settings.at(0)["name"]), "sglang.seed11");
  EXPECT_EQ(std::string_view(settings.at(1)["name"]), "sglang.seed3");
  EXPECT_EQ(uint64_t(settings.at(0)["requests"]), facts.requests.size());
  EXPECT_EQ(uint64_t(settings.at(1)["requests"]), facts.requests.size());

  Outcome twice = Teller("dataset build '" + tmp_ + "/seed3' '" + tmp_ + "/seed3/sglang' --out '" +
                         tmp_ + "/ds2' -q");
  EXPECT_EQ(twice.exit_code, 1);
  EXPECT_NE(twice.err.find("two inputs are setting \"sglang\" with seed 3"), std::string::npos)
      << twice.err;
}

// A small simulation with faults, built and summarised: labels agree with the ground
// truth, every locator resolves to a node of its step, Table 1 adds up.
// One rank's raw trace deleted or cut to a tenth: the build fails (exit 1) naming the
// file, with the manifest (sizes recorded at the end of the run) and without it (the
// ground truth's processes and the raw reader's damage counters); nothing is written.
TEST_F(DatasetCliTest, MissingOrCutRawTraceFailsLoudly) {
  const std::string ok = tmp_ + "/ok";
  Outcome sim = Teller(
      "simulate --profile vllm-v1-online --requests 4 --layers 2 --seed 2 --out '" + ok + "'");
  ASSERT_EQ(sim.exit_code, 0) << sim.err;
  auto truth = format::ReadGroundTruth(ok + "/ground_truth.json");
  ASSERT_TRUE(truth.ok());
  ASSERT_GE(truth->processes.size(), 2u);
  const format::ProcessTruth& victim = truth->processes[1];
  const std::string file = victim.host + "." + std::to_string(victim.pid) + ".0.tlr";
  ASSERT_EQ(std::system(("test -f '" + ok + "/" + file + "'").c_str()), 0) << file;
  const Outcome intact = Teller("dataset build '" + ok + "' --out '" + tmp_ + "/ds-ok' -q");
  ASSERT_EQ(intact.exit_code, 0) << intact.err;

  struct Case {
    const char* name;  // "deleted..." removes the file, "cut..." keeps its first tenth
    bool manifest;
    const char* expect;  // in the message, besides the setting
  };
  const std::string cut = "truncate -s $(( $(stat -c %s " + file + ") / 10 )) " + file;
  const std::vector<Case> cases = {
      {"deleted", true, ": missing (manifest.json lists it"},
      {"cut", true, "bytes, but manifest.json records"},
      {"deleted-nomanifest", false, "no raw trace of rank"},
      {"cut-nomanifest", false, "the raw traces are damaged (raw."},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string dir = tmp_ + "/" + c.name;
    ASSERT_EQ(std::system(("cp -r '" + ok + "' '" + dir + "'").c_str()), 0);
    const bool is_cut = std::string(c.name).rfind("cut", 0) == 0;
    const std::string damage = is_cut ? cut : "rm " + file;
    ASSERT_EQ(std::system(("cd '" + dir + "' && " + damage).c_str()), 0);
    if (!c.manifest) {
      ASSERT_EQ(std::remove((dir + "/manifest.json").c_str()), 0);
    }
    const std::string out = tmp_ + "/ds-" + c.name;
    const Outcome o = Teller("dataset build '" + dir + "' --out '" + out + "' -q");
    EXPECT_EQ(o.exit_code, 1) << o.err;
    EXPECT_NE(o.err.find(c.expect), std::string::npos) << o.err;
    EXPECT_NE(o.err.find(truth->setting + ": "), std::string::npos) << o.err;
    if (c.manifest) {
      EXPECT_NE(o.err.find(dir + "/" + file), std::string::npos) << o.err;
    }
    if (!c.manifest && !is_cut) {
      EXPECT_NE(o.err.find("pid " + std::to_string(victim.pid)), std::string::npos) << o.err;
    }
    EXPECT_NE(std::system(("test -e '" + out + "/index.json'").c_str()), 0);
  }
}

TEST_F(DatasetCliTest, SimulatedSettingEndToEnd) {
  const std::string raw = tmp_ + "/sim";
  Outcome sim = Teller(
      "simulate --profile vllm-v1-online --requests 12 --seed 3 --random-faults 3 --layers 4 --out "
      "'" +
      raw + "'");
  ASSERT_EQ(sim.exit_code, 0) << sim.err;
  auto truth = format::ReadGroundTruth(raw + "/ground_truth.json");
  ASSERT_TRUE(truth.ok()) << truth.status().message();
  size_t truth_faulty = 0;
  std::map<std::string, const format::RequestTruth*> by_id;
  for (const auto& q : truth->requests) {
    truth_faulty += q.is_fault;
    by_id[q.id] = &q;
  }
  ASSERT_GT(truth_faulty, 0u) << "the seed should give faulty requests";

  const std::string ds = tmp_ + "/ds";
  Outcome build = Teller("dataset build '" + raw + "' --out '" + ds + "'");
  ASSERT_EQ(build.exit_code, 0) << build.err;
  auto index = JsonFile(ds + "/index.json");
  auto entry = index["settings"].get_array().at(0);
  const std::string setting{std::string_view(entry["name"])};
  EXPECT_EQ(setting, truth->setting);
  auto counters = entry["counters"];
  EXPECT_GT(uint64_t(counters["locators"]), 0u);
  for (const char* zero :
       {"locators_unresolved", "locators_outside_step", "truth_steps_missing",
        "truth_requests_missing", "requests_without_truth", "affected_requests_not_in_step",
        "steps_without_seq", "truncated_steps", "faulty_requests_without_anomalous_step",
        "healthy_requests_with_anomalous_step"}) {
    EXPECT_EQ(uint64_t(counters[zero]), 0u) << zero;
  }

  uint64_t steps = 0, nodes = 0, faulty = 0, labelled = 0;
  std::map<std::string, uint64_t> mix;
  const std::vector<std::string> dirs = SubDirs(ds + "/" + setting);
  EXPECT_EQ(dirs.size(), truth->requests.size());
  for (const std::string& dir_name : dirs) {
    const std::string dir = ds + "/" + setting + "/" + dir_name;
    auto ann = JsonFile(dir + "/annotation.json");
    const std::string id{std::string_view(ann["request"])};
    ASSERT_TRUE(by_id.count(id)) << id;
    const format::RequestTruth& q = *by_id[id];
    EXPECT_EQ(bool(ann["is_fault"]), q.is_fault) << id;
    if (q.is_fault) {
      ++faulty;
      ++mix[q.fault_type];
      EXPECT_EQ(std::string_view(ann["fault_type"]), q.fault_type) << id;
    }
    auto trace = JsonFile(dir + "/trace.json.gz");
    auto trace_steps = trace["steps"].get_array();
    auto ann_steps = ann["steps"].get_array();
    ASSERT_EQ(trace_steps.size(), ann_steps.size());
    size_t anomalous = 0;
    for (size_t k = 0; k < ann_steps.size(); ++k) {
      auto as = ann_steps.at(k);
      auto list = trace_steps.at(k)["nodes"].get_array();
      ++steps;
      nodes += list.size();
      std::set<int64_t> ranks;
      int64_t i = 0, bad_parents = 0;
      for (auto n : list) {  // iterate: DOM arrays index in linear time
        bad_parents += int64_t(n["parent"]) >= i++;
        ranks.insert(int64_t(n["rank"]));
      }
      EXPECT_EQ(bad_parents, 0);
      EXPECT_EQ(ranks.size(), truth->processes.size()) << "every rank's tree is in the step";
      if (bool(as["is_anomaly"])) {
        ++anomalous;
        EXPECT_FALSE(as["fault_type"].is_null());
      }
      for (const char* view : {"vertical", "horizontal"}) {
        for (uint64_t node : Ids(as[view])) {
          EXPECT_LT(node, list.size());
          ++labelled;
        }
      }
    }
    EXPECT_EQ(anomalous > 0, q.is_fault) << id;
  }
  EXPECT_GT(labelled, 0u);

  Outcome stats = Teller("dataset stats --json '" + ds + "'");
  ASSERT_EQ(stats.exit_code, 0) << stats.err;
  auto st = Json(stats.out, "stats");
  EXPECT_EQ(uint64_t(st["total"]["requests"]), truth->requests.size());
  EXPECT_EQ(uint64_t(st["total"]["faulty"]), truth_faulty);
  EXPECT_EQ(faulty, truth_faulty);
  EXPECT_EQ(uint64_t(st["total"]["steps"]), steps);
  EXPECT_EQ(uint64_t(st["total"]["nodes"]), nodes);
  double sum = 0;
  for (auto field : st["fault_mix"].get_object()) {
    const double share = double(field.value);
    sum += share;
    const std::string category{field.key};
    EXPECT_DOUBLE_EQ(share, static_cast<double>(mix[category]) / static_cast<double>(truth_faulty))
        << category;
  }
  EXPECT_NEAR(sum, 1.0, 1e-9);
}

}  // namespace
}  // namespace teller
