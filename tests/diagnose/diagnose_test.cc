// Localization, slices and the numeric diagnosis on simulated traces with known faults
// and on real traces (TELLER_REAL_DATA_DIR; skipped when absent).
#include "teller/diagnose/diagnose.h"

#include <gtest/gtest.h>
#include <simdjson.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <string>

#include "real_data.h"
#include "teller/format/ground_truth.h"
#include "teller/ingest/ingest.h"
#include "teller/inject/inject.h"
#include "teller/localize/localize.h"
#include "teller/sim/sim.h"
#include "teller/slice/slice.h"

namespace teller {
namespace {

struct Loaded {
  std::string dir;
  Trace trace;
  reconstruct::Reconstruction rec;
  format::GroundTruth truth;
};

std::string TempDir(const std::string& tag) {
  static int counter = 0;
  const std::string dir =
      "/tmp/teller-diag-test-" + std::to_string(getpid()) + "-" + tag + std::to_string(counter++);
  EXPECT_EQ(std::system(("rm -rf '" + dir + "'").c_str()), 0);
  return dir;
}

void Simulate(sim::SimConfig c, Loaded* out) {
  out->dir = TempDir(c.profile);
  auto r = sim::Simulate(c, out->dir);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_TRUE(ingest::ImportPath(out->dir, out->trace).ok());
  out->rec = reconstruct::Reconstruct(out->trace);
  auto t = format::ReadGroundTruth(out->dir + "/" + format::kGroundTruthFile);
  ASSERT_TRUE(t.ok()) << t.status().message();
  out->truth = t.value();
}

sim::SimConfig Config(uint64_t seed) {
  sim::SimConfig c;
  c.profile = "vllm-v1-online";
  c.seed = seed;
  c.requests = 30;
  c.layers = 12;
  c.output_median = 24;
  return c;
}

struct Score {
  size_t tp = 0, fp = 0, fn = 0, abnormal = 0, steps = 0;
};
Score Compare(const diagnose::Diagnosis& d, const format::GroundTruth& t) {
  std::set<uint64_t> fault;
  for (const format::StepTruth& s : t.steps) {
    if (s.fault >= 0) fault.insert(s.seq);
  }
  Score sc;
  for (const diagnose::StepDiagnosis& s : d.steps) {
    ++sc.steps;
    EXPECT_TRUE(s.has_seq);
    const bool f = fault.count(s.seq) > 0;
    sc.abnormal += s.abnormal;
    if (s.abnormal && f) ++sc.tp;
    if (s.abnormal && !f) ++sc.fp;
    if (!s.abnormal && f) ++sc.fn;
  }
  return sc;
}

TEST(Diagnose, HealthyRunHasFewAbnormalSteps) {
  Loaded l;
  Simulate(Config(31), &l);
  const auto d = diagnose::Diagnose(l.trace, l.rec, {});
  const Score sc = Compare(d, l.truth);
  ASSERT_GT(sc.steps, 200u);
  // Benign outliers and host pauses exist in the simulation, as on real GPUs.
  EXPECT_LT(static_cast<double>(sc.abnormal) / sc.steps, 0.05) << sc.abnormal << " of " << sc.steps;
}

TEST(Diagnose, SlowGemmOnOneGpuIsFoundAndNamed) {
  sim::SimConfig c = Config(4);
  std::string error;
  sim::FaultSpec f;
  ASSERT_TRUE(sim::ParseFaultSpec(
      "kernel_slow_one_gpu:target=gemm,magnitude=3,onset=1s,duration=0.5s,rank=1", &f, &error));
  c.faults = {f};
  Loaded l;
  Simulate(c, &l);
  const auto d = diagnose::Diagnose(l.trace, l.rec, {});
  const Score sc = Compare(d, l.truth);
  ASSERT_GT(sc.tp + sc.fn, 20u);
  EXPECT_GE(static_cast<double>(sc.tp) / (sc.tp + sc.fn), 0.8);
  EXPECT_GE(static_cast<double>(sc.tp) / (sc.tp + sc.fp), 0.7);
  ASSERT_FALSE(d.top_operators.empty());
  EXPECT_NE(d.top_operators[0].name.find("gemm"), std::string::npos) << d.top_operators[0].name;
  // Fault steps: cuda_kernel, with rank-1 GEMM kernels as evidence and an explanation.
  std::map<std::string, int> types;
  for (const auto& s : d.steps) {
    if (!s.abnormal) continue;
    ++types[s.fault_type];
    ASSERT_FALSE(s.evidence.empty());
    EXPECT_FALSE(s.explanation.empty());
    EXPECT_LE(s.slice_nodes, s.step_nodes);
  }
  EXPECT_GT(types["cuda_kernel"], static_cast<int>(sc.abnormal * 0.7));
}

TEST(Diagnose, BaselineModeSeesAWholeRunSlowdown) {
  // Throttled attention on every rank for the whole run: nothing to compare with inside
  // the trace, but against a healthy run of the same deployment it stands out.
  sim::SimConfig c = Config(9);
  c.requests = 16;
  Loaded healthy, incident;
  Simulate(c, &healthy);
  sim::FaultSpec f;
  std::string error;
  ASSERT_TRUE(sim::ParseFaultSpec("kernel_throttle:target=attention,magnitude=2.5", &f, &error));
  c.faults = {f};
  c.seed = 10;
  Simulate(c, &incident);
  const auto model = localize::FitBaseline({{&healthy.trace, &healthy.rec}});
  EXPECT_GT(model.families(), 10u);
  const auto d = diagnose::Diagnose(incident.trace, incident.rec, {}, &model);
  EXPECT_EQ(d.mode, "baseline");
  EXPECT_GT(static_cast<double>(d.abnormal_steps) / d.steps.size(), 0.8);
  ASSERT_FALSE(d.top_operators.empty());
  EXPECT_NE(d.top_operators[0].name.find("flash_fwd"), std::string::npos)
      << d.top_operators[0].name;
}

// Seven decode steps (seq 0..6) of one process, each a step range holding two operator
// ranges: aten::mm of `mm_us` and aten::add of `add_us` microseconds.
void AddSmallFamilySteps(Trace& t, const std::vector<int>& mm_us, const std::vector<int>& add_us) {
  const uint32_t p = t.ProcessIndex("h", 1);
  constexpr int64_t kT0 = 1'700'000'000'000'000'000;
  auto add = [&](const std::string& name, int64_t start, int64_t end) {
    EventRow r;
    r.type = EventType::kRange;
    r.name = t.strings.Intern(name);
    r.process = p;
    r.thread = 1;
    r.start_ns = start;
    r.end_ns = end;
    t.events.Append(r);
  };
  for (size_t s = 0; s < mm_us.size(); ++s) {
    const int64_t at = kT0 + static_cast<int64_t>(s) * 1'000'000;
    add("teller.step kind=decode seq=" + std::to_string(s), at, at + 500'000);
    const int64_t mm_end = at + 10'000 + mm_us[s] * 1000;
    add("aten::mm", at + 10'000, mm_end);
    add("aten::add", mm_end + 1000, mm_end + 1000 + add_us[s] * 1000);
  }
}

TEST(Localize, SmallFamiliesFallBackToRobustZ) {
  {
    // On a simulated run: families below min_mixture instances are scored by robust
    // z-scores, larger ones by mixtures; both kinds occur.
    Loaded l;
    sim::SimConfig c = Config(5);
    c.requests = 6;
    Simulate(c, &l);
    const auto r = localize::Localize(l.trace, l.rec);
    size_t small = 0, mixtures = 0;
    for (const auto& f : r.families) {
      if (f.count < localize::Options{}.min_mixture) {
        EXPECT_FALSE(f.mixture) << f.name;
        ++small;
      }
      mixtures += f.mixture;
    }
    EXPECT_GT(small, 0u);
    EXPECT_GT(mixtures, 0u);
  }
  // By hand (docs/localization.md, smaller families): x = log(1 + own ns) per instance,
  // z = |x - median| / max(1.4826 MAD, 0.08), rho = exp(-(max(0, z - 4))^2 / 2).
  // aten::mm, 100 104 96 102 98 100 150 us: median 100 us; MAD = |log(98001/100001)| =
  // 0.0202, so the scale is the floor 0.08; the 150 us instance has
  // z = log(150001/100001) / 0.08 = 5.0683, rho = exp(-1.0683^2 / 2) = 0.5652; the others
  // z <= 0.51, rho = 1. One instance per step: A = 1 - 0.5652 = 0.4348 < 0.5, no candidate.
  // aten::add, 50 51 49 50 52 48 100 us: median 50 us, the same scale, so the 100 us one has
  // z = log(100001/50001) / 0.08 = 8.664, rho = exp(-4.664^2 / 2) = 1.9e-5: A = 1.0 > 0.5,
  // a candidate, and its one instance is suspicious.
  Trace t;
  AddSmallFamilySteps(t, {100, 104, 96, 102, 98, 100, 150}, {50, 51, 49, 50, 52, 48, 100});
  const auto rec = reconstruct::Reconstruct(t);
  ASSERT_EQ(rec.steps.size(), 7u);
  const auto r = localize::Localize(t, rec);
  ASSERT_EQ(r.families.size(), 2u);
  ASSERT_EQ(r.instances.size(), 14u);
  const float kRho150 = 0.56518f;
  for (const localize::Instance& in : r.instances) {
    const localize::Family& f = r.families[in.family];
    EXPECT_EQ(f.count, 7u);
    EXPECT_FALSE(f.mixture);
    const int64_t own = rec.nodes.end_ns[in.node] - rec.nodes.start_ns[in.node];
    EXPECT_EQ(in.total_ns, own);
    EXPECT_EQ(in.top_feature, kSelfNs);
    if (f.name == "aten::mm") {
      EXPECT_EQ(in.expected_ns, 100'000);
      EXPECT_NEAR(in.rho, own == 150'000 ? kRho150 : 1.0f, 1e-4) << own;
      if (own == 150'000) EXPECT_NEAR(in.top_z, 5.0683f, 1e-3);
      if (own == 96'000) EXPECT_NEAR(in.top_z, std::log(96001.0 / 100001.0) / 0.08, 1e-3);
    } else {
      ASSERT_EQ(f.name, "aten::add");
      EXPECT_EQ(in.expected_ns, 50'000);
      EXPECT_NEAR(in.rho, own == 100'000 ? 1.9e-5f : 1.0f, 1e-5) << own;
    }
  }
  // Step 6 (group 6): mm is suspicious at 0.4348 but no candidate, add is a candidate.
  size_t seen = 0;
  for (const localize::StepFamily& sf : r.step_families) {
    const std::string& name = r.families[sf.family].name;
    EXPECT_EQ(sf.m, 1u);
    if (sf.step != r.group_of_step[6]) {
      EXPECT_FLOAT_EQ(sf.suspiciousness, 0.0f) << name << " step " << sf.step;
      EXPECT_FALSE(sf.candidate);
      continue;
    }
    ++seen;
    EXPECT_NEAR(sf.suspiciousness, name == "aten::mm" ? 1.0f - kRho150 : 1.0f, 1e-4) << name;
    EXPECT_EQ(sf.candidate, name == "aten::add") << name;
  }
  EXPECT_EQ(seen, 2u);
  const uint32_t g6 = r.group_of_step[6];
  ASSERT_EQ(r.suspicious[g6].size(), 1u);
  EXPECT_EQ(r.families[r.instances[r.suspicious[g6][0]].family].name, "aten::add");
  EXPECT_NEAR(r.group_score[g6], 1.0f, 1e-4);
  for (uint32_t g = 0; g < r.suspicious.size(); ++g) {
    if (g != g6) EXPECT_TRUE(r.suspicious[g].empty()) << g;
  }
}

TEST(Slice, KeepsSuspiciousNodesTheirAncestorsAndLittleElse) {
  Loaded l;
  sim::SimConfig c = Config(6);
  c.requests = 8;
  Simulate(c, &l);
  // A step of rank 0 and one of its deep nodes.
  const auto& step = l.rec.steps[l.rec.steps.size() / 2];
  uint32_t deep = step.node;
  for (uint32_t i = 0; i < l.rec.nodes.size(); ++i) {
    int32_t p = l.rec.nodes.parent[i];
    while (p >= 0 && static_cast<uint32_t>(p) != step.node)
      p = l.rec.nodes.parent[static_cast<size_t>(p)];
    if (p >= 0 && l.rec.nodes.depth[i] > l.rec.nodes.depth[deep]) deep = i;
  }
  ASSERT_NE(deep, step.node);
  const auto s = slice::BuildSlice(l.trace, l.rec, {step.node}, {deep});
  ASSERT_FALSE(s.nodes.empty());
  EXPECT_TRUE(std::binary_search(s.nodes.begin(), s.nodes.end(), deep));
  const int32_t parent = l.rec.nodes.parent[deep];
  EXPECT_TRUE(std::binary_search(s.nodes.begin(), s.nodes.end(), static_cast<uint32_t>(parent)));
  EXPECT_LT(s.Share(), 0.5);
  // No suspicious nodes, no slice.
  EXPECT_TRUE(slice::BuildSlice(l.trace, l.rec, {step.node}, {}).nodes.empty());
}

TEST(Diagnose, JsonReportHasTheDocumentedShape) {
  sim::SimConfig c = Config(4);
  c.requests = 12;
  sim::FaultSpec f;
  std::string error;
  ASSERT_TRUE(sim::ParseFaultSpec("straggler_rank:rank=4,magnitude=8", &f, &error));
  c.faults = {f};
  Loaded l;
  Simulate(c, &l);
  const auto d = diagnose::Diagnose(l.trace, l.rec, {});
  const std::string json = diagnose::ToJson(l.trace, d, {l.dir});
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(json).get(doc), simdjson::SUCCESS);
  EXPECT_EQ(std::string_view(doc["format"]), "teller-diagnosis");
  EXPECT_EQ(int64_t(doc["version"]), diagnose::kSchemaVersion);
  size_t entries = 0, abnormal = 0;
  for (simdjson::dom::element s : doc["steps"].get_array()) {
    ++entries;
    for (const char* key : {"request", "step", "view", "abnormal", "score", "fault_type",
                            "evidence", "explanation", "logs"}) {
      EXPECT_FALSE(s[key].error()) << key;
    }
    const std::string_view view = s["view"];
    EXPECT_TRUE(view == "vertical" || view == "horizontal");
    if (bool(s["abnormal"])) {
      ++abnormal;
      for (simdjson::dom::element e : s["evidence"].get_array()) {
        for (const char* key : {"node", "name", "layer", "score", "self_ns", "expected_ns"})
          EXPECT_FALSE(e[key].error()) << key;
      }
    }
  }
  EXPECT_GT(entries, 2 * d.steps.size() - 1);  // every (request, view)
  EXPECT_GT(abnormal, 0u);
  size_t ops = 0;
  for (simdjson::dom::element o : doc["top_operators"].get_array()) {
    ++ops;
    for (const char* key : {"name", "layer", "score", "count"}) EXPECT_FALSE(o[key].error()) << key;
  }
  EXPECT_GT(ops, 0u);
  // Stragglers are a communication fault: the waiting collectives are the evidence.
  std::map<std::string, int> types;
  for (const auto& s : d.steps) {
    if (s.abnormal) ++types[s.fault_type];
  }
  EXPECT_GT(types["communication"], 0);
}

TEST(Diagnose, RealKinetoTraceGetsAReport) {
  TELLER_REQUIRE_REAL_DATA("tracelens/inference__sglang_decode__sglang_Qwen3-8B_decode.json.gz");
  Trace t;
  ASSERT_TRUE(
      ingest::ImportPath(
          real_data::Path("tracelens/inference__sglang_decode__sglang_Qwen3-8B_decode.json.gz"), t)
          .ok());
  const auto r = reconstruct::Reconstruct(t);
  ASSERT_FALSE(r.steps.empty());
  const auto d = diagnose::Diagnose(t, r, {});
  EXPECT_EQ(d.mode, "self");
  ASSERT_EQ(d.steps.size(), r.steps.size());
  // The step annotations of the file (tests/golden_scripts/kineto_golden.py): the engine's
  // execute_32_context_0(...)_generation_32(...) and SGLang's step[DECODE bs=32] inside
  // it, at baseTimeNanoseconds + ts: [1779988464216204635, +465716634 ns] and
  // [1779988464216408420, +465248054 ns]. A decode step each.
  const std::set<std::pair<int64_t, int64_t>> kAnnotations = {
      {1779988464216204635, 1779988464216204635 + 465716634},
      {1779988464216408420, 1779988464216408420 + 465248054}};
  std::set<std::pair<int64_t, int64_t>> bounds;
  for (const diagnose::StepDiagnosis& s : d.steps) {
    bounds.insert({s.start_ns, s.end_ns});
    EXPECT_EQ(s.kind, "decode");
    // A healthy trace: nothing abnormal, nothing to show as evidence.
    EXPECT_FALSE(s.abnormal);
    EXPECT_LE(s.score, diagnose::Options{}.step_threshold);
    EXPECT_TRUE(s.evidence.empty());
    EXPECT_EQ(s.fault_type, "");
  }
  EXPECT_EQ(bounds, kAnnotations);
  EXPECT_EQ(d.abnormal_steps, 0u);
  // Top operators: the ten most suspicious first, none with a suspicious instance.
  ASSERT_EQ(d.top_operators.size(), diagnose::Options{}.top_k);
  for (size_t i = 0; i < d.top_operators.size(); ++i) {
    const diagnose::TopOperator& o = d.top_operators[i];
    EXPECT_EQ(o.count, 0u) << o.name;
    EXPECT_EQ(o.excess_ns, 0) << o.name;
    EXPECT_GT(o.instances, 0u) << o.name;
    if (i > 0) EXPECT_LE(o.score, d.top_operators[i - 1].score) << o.name;
  }
  // The text report says so and lists them in that order.
  const std::string text = diagnose::ToText(t, d, 5);
  EXPECT_NE(text.find("0 of " + std::to_string(d.steps.size()) + " steps abnormal"),
            std::string::npos)
      << text;
  size_t at = text.find("top operators");
  ASSERT_NE(at, std::string::npos) << text;
  for (const diagnose::TopOperator& o : d.top_operators) {
    // Names are shortened there: Python frames to their file, kernels to 80 characters.
    const size_t next = text.find(o.name.substr(0, std::min<size_t>(o.name.find('('), 40)), at);
    ASSERT_NE(next, std::string::npos) << o.name << "\n" << text;
    at = next;
  }
}

TEST(Diagnose, NsightExportWithoutStepsIsDiagnosedPerProcess) {
  TELLER_REQUIRE_REAL_DATA("nsys_pipit/saxpy-mpi-cuda_nsys_perlmutter0.sqlite.gz");
  const std::string db = TempDir("nsys") + ".sqlite";
  ASSERT_EQ(std::system(("gzip -dc '" +
                         real_data::Path("nsys_pipit/saxpy-mpi-cuda_nsys_perlmutter0.sqlite.gz") +
                         "' > '" + db + "'")
                            .c_str()),
            0);
  Trace t;
  ASSERT_TRUE(ingest::ImportPath(db, t).ok());
  const auto r = reconstruct::Reconstruct(t);
  EXPECT_TRUE(r.steps.empty());
  const auto d = diagnose::Diagnose(t, r, {});
  ASSERT_FALSE(d.steps.empty());
  EXPECT_EQ(d.steps[0].kind, "whole trace");
  EXPECT_LT(d.steps[0].start_ns, d.steps[0].end_ns);
  bool saxpy = false;
  for (const auto& o : d.top_operators) saxpy |= o.name == "saxpy";
  EXPECT_TRUE(saxpy);
  std::remove(db.c_str());
}

// The quality check of the numeric diagnosis on real traces: slow one kernel family down
// with `teller inject`'s engine and diagnose against the original; the slowed family
// must be among the three most suspicious operators.
void ExpectInjectedFamilyInTop3(const std::string& file, const std::string& target,
                                const std::string& needle) {
  SCOPED_TRACE(file + " ~ " + target);
  const std::string path = real_data::Path("tracelens/" + file);
  Trace original, incident;
  ASSERT_TRUE(ingest::ImportPath(path, original).ok());
  ASSERT_TRUE(ingest::ImportPath(path, incident).ok());
  inject::InjectOptions o;
  o.mechanism = "kernel_throttle";
  o.target = target;
  o.magnitude = 2.0;
  auto injected = inject::InjectFault(incident, o);
  ASSERT_TRUE(injected.ok()) << injected.status().message();
  ASSERT_GT(injected->effect.modified, 0u);
  const auto base_rec = reconstruct::Reconstruct(original);
  const auto rec = reconstruct::Reconstruct(incident);
  const auto model = localize::FitBaseline({{&original, &base_rec}});
  const auto d = diagnose::Diagnose(incident, rec, {}, &model);
  ASSERT_GE(d.top_operators.size(), 3u);
  bool found = false;
  for (size_t i = 0; i < 3; ++i) found |= d.top_operators[i].name.find(needle) != std::string::npos;
  EXPECT_TRUE(found) << d.top_operators[0].name << " | " << d.top_operators[1].name << " | "
                     << d.top_operators[2].name;
}

TEST(Diagnose, InjectedSlowdownInRealB200TraceRanksTop3) {
  TELLER_REQUIRE_REAL_DATA("tracelens/b200__eager_trace.json.gz");
  ExpectInjectedFamilyInTop3("b200__eager_trace.json.gz", "fused_add_rms_norm",
                             "fused_add_rms_norm");
  ExpectInjectedFamilyInTop3("b200__eager_trace.json.gz", "^nvjet_tst_64x64", "nvjet_tst_64x64");
  ExpectInjectedFamilyInTop3("b200__eager_trace.json.gz", "fmhaSm100", "fmhaSm100");
}

TEST(Diagnose, InjectedSlowdownInRealH100TraceRanksTop3) {
  TELLER_REQUIRE_REAL_DATA("tracelens/h100__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz");
  ExpectInjectedFamilyInTop3("h100__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
                             "pytorch_flash::flash_fwd", "flash_fwd");
  ExpectInjectedFamilyInTop3("h100__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz", "^sm90_xmma_gemm",
                             "sm90_xmma_gemm");
  ExpectInjectedFamilyInTop3("h100__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz", "rsqrt_kernel",
                             "rsqrt");
}

}  // namespace
}  // namespace teller
