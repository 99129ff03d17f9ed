// Splits, scoring of units per view, the predictions file and the JSON output, on
// datasets built in memory; and the step features of hand-made records.
#include "teller/eval/evaluate.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include "simdjson.h"
#include "teller/eval/features.h"
#include "teller/eval/predictions.h"

namespace teller::eval {
namespace {

// `settings` settings of `requests` requests with `steps` steps each; every third request
// is faulty in its second step (both views, nodes {1, 2} vertical, {2} horizontal).
Dataset MakeDataset(int settings, int requests, int steps) {
  Dataset ds;
  ds.root = "/nonexistent";
  for (int s = 0; s < settings; ++s) {
    Setting st;
    st.name = "setting-" + std::to_string(s);
    st.engine =
        s == 2 ? "engine-0" : "engine-" + std::to_string(s);  // settings 0 and 2: one engine
    for (int q = 0; q < requests; ++q) {
      for (int k = 0; k < steps; ++k) {
        Unit u;
        u.setting = static_cast<uint32_t>(s);
        u.request = "req-" + std::to_string(q);
        u.step = static_cast<uint32_t>(k);
        u.seq = static_cast<uint64_t>(q * 100 + k);
        u.record = static_cast<uint32_t>(st.records.size());
        st.records.emplace_back();
        st.records.back().seq = u.seq;
        if (q % 3 == 0 && k == 1) {
          u.is_anomaly = true;
          u.fault_type = "communication";
          u.views[0] = {true, {1, 2}, {}, false};
          u.views[1] = {true, {2}, {}, false};
          u.explanation = "rank 4 arrived late at all_reduce";
        }
        ds.units.push_back(std::move(u));
      }
    }
    ds.settings.push_back(std::move(st));
  }
  return ds;
}

std::set<std::string> RequestsOf(const Dataset& ds, const std::vector<uint32_t>& units) {
  std::set<std::string> out;
  for (uint32_t i : units)
    out.insert(ds.settings[ds.units[i].setting].name + "/" + ds.units[i].request);
  return out;
}

TEST(SplitTest, RequestSplitIsDisjointSizedAndSeeded) {
  const Dataset ds = MakeDataset(2, 50, 3);
  auto folds = MakeFolds(ds, SplitKind::kRequest, 1);
  ASSERT_TRUE(folds.ok()) << folds.status().message();
  ASSERT_EQ(folds->size(), 1u);
  const Fold& f = folds->front();
  const auto train = RequestsOf(ds, f.train), val = RequestsOf(ds, f.validation),
             test = RequestsOf(ds, f.test);
  EXPECT_EQ(train.size(), 80u);  // 40 of 50 per setting
  EXPECT_EQ(val.size(), 10u);
  EXPECT_EQ(test.size(), 10u);
  for (const std::string& r : test) {
    EXPECT_EQ(train.count(r), 0u) << r;
    EXPECT_EQ(val.count(r), 0u) << r;
  }
  for (const std::string& r : val) EXPECT_EQ(train.count(r), 0u) << r;
  // Every step of a request in the same part; every unit in exactly one part.
  EXPECT_EQ(f.train.size() + f.validation.size() + f.test.size(), ds.units.size());
  EXPECT_EQ(f.test.size(), 30u);
  // Per setting: both settings have test requests.
  std::set<uint32_t> test_settings;
  for (uint32_t i : f.test) test_settings.insert(ds.units[i].setting);
  EXPECT_EQ(test_settings.size(), 2u);
  // Same seed, same split; another seed, another split.
  auto again = MakeFolds(ds, SplitKind::kRequest, 1);
  EXPECT_EQ(again->front().test, f.test);
  auto other = MakeFolds(ds, SplitKind::kRequest, 2);
  EXPECT_NE(other->front().test, f.test);
}

TEST(SplitTest, EngineAndRunSplitsHoldOutGroups) {
  const Dataset ds = MakeDataset(3, 10, 2);
  auto engine = MakeFolds(ds, SplitKind::kEngine, 1);
  ASSERT_TRUE(engine.ok());
  ASSERT_EQ(engine->size(), 2u);  // engine-0 (settings 0 and 2) and engine-1
  for (const Fold& f : engine.value()) {
    std::set<std::string> test_engines, train_engines;
    for (uint32_t i : f.test) test_engines.insert(ds.settings[ds.units[i].setting].engine);
    for (uint32_t i : f.train) train_engines.insert(ds.settings[ds.units[i].setting].engine);
    for (uint32_t i : f.validation) train_engines.insert(ds.settings[ds.units[i].setting].engine);
    EXPECT_EQ(test_engines, std::set<std::string>{f.name});
    EXPECT_EQ(train_engines.count(f.name), 0u);
    EXPECT_FALSE(f.validation.empty());
    EXPECT_EQ(f.train.size() + f.validation.size() + f.test.size(), ds.units.size());
  }
  EXPECT_EQ(engine->front().name, "engine-0");
  EXPECT_EQ(engine->front().test.size(), 40u);
  auto run = MakeFolds(ds, SplitKind::kRun, 1);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->size(), 3u);
  // One group only: an error, not an empty evaluation.
  const Dataset one = MakeDataset(1, 10, 2);
  EXPECT_FALSE(MakeFolds(one, SplitKind::kEngine, 1).ok());
  EXPECT_FALSE(ParseSplit("time").ok());
  EXPECT_EQ(ParseSplit("run").value(), SplitKind::kRun);
}

TEST(ScoreTest, PerViewMetricsOnHandCase) {
  // One setting, 3 requests x 2 steps: request 0 step 1 is faulty (views: V {1,2}, H {2}).
  const Dataset ds = MakeDataset(1, 3, 2);
  Predictions p;
  p.units.resize(ds.units.size());
  // Unit 1 (the faulty one): V abnormal with nodes {1, 5}, H abnormal with {2}.
  p.at(1, View::kVertical) = {true, true, 0.9, "communication", {1, 5}, "rank 4 arrived late"};
  p.at(1, View::kHorizontal) = {true, true, 0.9, "communication", {2}, ""};
  // Unit 2 (normal): a false alarm in V with a node, nothing in H.
  p.at(2, View::kVertical) = {true, true, 0.7, "cuda_kernel", {3}, ""};
  p.at(2, View::kHorizontal) = {true, false, 0.1, "", {}, ""};
  // Units 0, 3, 4, 5: absent (normal, score 0).
  std::vector<uint32_t> all = {0, 1, 2, 3, 4, 5};
  ScoreOptions o;
  o.low_prior_options.repetitions = 3;
  const Scores s = ScoreUnits(ds, p, all, o);
  const ViewScores& v = s.view(View::kVertical);
  EXPECT_EQ(v.units, 6u);
  EXPECT_EQ(v.missing, 4u);
  EXPECT_DOUBLE_EQ(v.step.accuracy, 5.0 / 6);
  EXPECT_DOUBLE_EQ(v.step.precision, 0.5);
  EXPECT_DOUBLE_EQ(v.step.recall, 1.0);
  // Operator sets: unit 1 {1,5} vs {1,2}: P 1/2, F1 1/2, J 1/3; unit 2 {3} vs {}: 0;
  // four normal units predicted normal: f = j = 1, p = 0.
  EXPECT_DOUBLE_EQ(v.op.macro.precision, 0.5 / 6);
  EXPECT_DOUBLE_EQ(v.op.macro.f1, (0.5 + 4) / 6);
  EXPECT_DOUBLE_EQ(v.op.macro.jaccard, (1.0 / 3 + 4) / 6);
  EXPECT_EQ(v.op.macro_plus.steps, 1u);
  EXPECT_DOUBLE_EQ(v.op.macro_plus.f1, 0.5);
  EXPECT_DOUBLE_EQ(v.op.detection_recall, 1.0);  // the one labelled unit was flagged
  EXPECT_DOUBLE_EQ(v.op.detected.f1, 0.5);
  EXPECT_DOUBLE_EQ(v.fault.accuracy, 1.0);
  EXPECT_EQ(v.fault.steps, 1u);
  EXPECT_GT(v.bleu.bleu[0], 0);
  const ViewScores& h = s.view(View::kHorizontal);
  EXPECT_DOUBLE_EQ(h.step.f1, 1.0);
  EXPECT_DOUBLE_EQ(h.op.macro_plus.f1, 1.0);
  EXPECT_DOUBLE_EQ(h.op.macro.precision, 1.0 / 6);
  EXPECT_EQ(h.bleu.bleu[0], 0);  // no candidate text
  ASSERT_EQ(v.low_prior.size(), 4u);

  // Averages over folds: means of rates, sums of counts.
  const Scores avg = AverageScores({s, s});
  EXPECT_DOUBLE_EQ(avg.view(View::kVertical).step.f1, v.step.f1);
  EXPECT_EQ(avg.view(View::kVertical).units, 12u);
}

// Root nodes and keys on a hand-made record: nodes 0 STEP r0, 1 GEMM kernel r0, 2 GEMM
// kernel r1, 3 all-reduce (COMM) r0, 4 all-reduce (COMM) r1. Labelled {1, 3, 4} (a slow
// GEMM on rank 0 made the all-reduces wait): the root is node 1; labelled {3, 4} only
// (a link fault): both. A prediction naming node 3 first then node 1 hits at top-3 only;
// one naming node 1 hits at top-1; node 2 (same family, other rank) never.
TEST(ScoreTest, RootCauseOnHandMadeRecord) {
  Dataset ds;
  Setting st;
  st.name = "s";
  StepColumns rec;
  rec.type = {0, 6, 6, 6, 6};
  rec.layer = {0, 5, 5, kLayerComm, kLayerComm};
  rec.name = {0, 1, 1, 2, 2};
  rec.rank = {0, 0, 1, 0, 1};
  rec.parent = {-1, 0, 0, 0, 0};
  rec.depth = {0, 1, 1, 1, 1};
  rec.offset_ns = {0, 0, 0, 0, 0};
  rec.dur_ns = {1, 1, 1, 1, 1};
  st.records.push_back(rec);
  ds.settings.push_back(st);
  EXPECT_EQ(RootNodesByLayer(rec, {1, 3, 4}), (std::vector<uint32_t>{1}));
  EXPECT_EQ(RootNodesByLayer(rec, {3, 4}), (std::vector<uint32_t>{3, 4}));
  // A label without roles (a dataset from older ground truth) takes the same rule.
  EXPECT_EQ(RootNodes(rec, ViewLabel{true, {1, 3, 4}, {}, false}), (std::vector<uint32_t>{1}));
  EXPECT_NE(RootCauseKey(rec, 1), RootCauseKey(rec, 2));  // same family, other rank
  EXPECT_NE(RootCauseKey(rec, 1), RootCauseKey(rec, 3));
  for (int k = 0; k < 4; ++k) {
    Unit u;
    u.record = 0;
    u.request = "q" + std::to_string(k);
    u.is_anomaly = true;
    u.views[0] = {true, {1, 3, 4}, {}, false};
    ds.units.push_back(u);
  }
  Predictions p;
  p.units.resize(4);
  p.at(0, View::kVertical) = {true, true, 1, "", {3, 1}, ""};  // top-3 only
  p.at(1, View::kVertical) = {true, true, 1, "", {1}, ""};     // top-1
  p.at(2, View::kVertical) = {true, true, 1, "", {2, 4}, ""};  // miss
  // unit 3: not predicted: a miss.
  ScoreOptions o;
  o.low_prior = false;
  const Scores s = ScoreUnits(ds, p, {0, 1, 2, 3}, o);
  const RootCauseMetrics& r = s.view(View::kVertical).root;
  EXPECT_EQ(r.units, 4u);
  EXPECT_DOUBLE_EQ(r.top1, 0.25);
  EXPECT_DOUBLE_EQ(r.top3, 0.5);
  EXPECT_EQ(s.view(View::kHorizontal).root.units, 0u);  // no horizontal labels
}

// The ground truth's roles, where the data has them, decide the root nodes instead of the
// layer rule. Record: 0 STEP r0, 1 GEMM kernel r0, 2 cudaMalloc call r1 (HOST),
// 3 all-reduce r0 (COMM), 4 all-reduce r1 (COMM), 5 aten::mm range r1 (BACKEND).
// Horizontal labels:
//   unit 0, a stalled worker on rank 1: nodes {3, 4}, roots {4} (rank 1's own
//     all-reduce; rank 0's only waited). The rule would take both. Prediction {3, 1, 4}:
//     by roles a top-1 miss (node 3 is rank 0) and a top-3 hit (node 4 third);
//   unit 1, an allocator stall on rank 1: nodes {2, 3, 4, 5}, roots {2} (the call; the
//     range around it only grew). The rule would take {2, 5}. Prediction {5, 4, 1}: by
//     roles a miss at top-1 and top-3 (node 2 never named); by the rule a top-1 hit;
//   unit 2, no roles (older data): nodes {3, 4}, rule -> {3, 4}; prediction {4}: top-1 hit;
//   unit 3, roles known but no root in the record: nodes {3}, roots {} -> not scored.
// Scored units 0, 1, 2: top-1 = 1/3 (unit 2), top-3 = 2/3 (units 0 and 2). The layer rule
// alone would score 4 units with top-1 3/4.
TEST(ScoreTest, RootCausePrefersGroundTruthRoles) {
  Dataset ds;
  Setting st;
  st.name = "s";
  StepColumns rec;
  rec.type = {0, 6, 4, 6, 6, 2};
  rec.layer = {0, 5, 4, kLayerComm, kLayerComm, 2};
  rec.name = {0, 1, 3, 2, 2, 4};
  rec.rank = {0, 0, 1, 0, 1, 1};
  rec.parent = {-1, 0, 5, 0, 0, 0};
  rec.depth = {0, 1, 2, 1, 1, 1};
  rec.offset_ns = {0, 0, 0, 0, 0, 0};
  rec.dur_ns = {1, 1, 1, 1, 1, 1};
  st.records.push_back(rec);
  ds.settings.push_back(st);
  const std::vector<ViewLabel> labels = {
      {true, {3, 4}, {4}, true},
      {true, {2, 3, 4, 5}, {2}, true},
      {true, {3, 4}, {}, false},
      {true, {3}, {}, true},
  };
  EXPECT_EQ(RootNodes(rec, labels[0]), std::vector<uint32_t>{4});
  EXPECT_EQ(RootNodes(rec, labels[1]), std::vector<uint32_t>{2});
  EXPECT_EQ(RootNodes(rec, labels[2]), (std::vector<uint32_t>{3, 4}));
  EXPECT_TRUE(RootNodes(rec, labels[3]).empty());
  // A root outside the record is dropped.
  EXPECT_TRUE(RootNodes(rec, ViewLabel{true, {3}, {9}, true}).empty());
  for (size_t k = 0; k < labels.size(); ++k) {
    Unit u;
    u.record = 0;
    u.request = "q" + std::to_string(k);
    u.is_anomaly = true;
    u.views[1] = labels[k];
    ds.units.push_back(u);
  }
  Predictions p;
  p.units.resize(labels.size());
  p.at(0, View::kHorizontal) = {true, true, 1, "", {3, 1, 4}, ""};
  p.at(1, View::kHorizontal) = {true, true, 1, "", {5, 4, 1}, ""};
  p.at(2, View::kHorizontal) = {true, true, 1, "", {4}, ""};
  p.at(3, View::kHorizontal) = {true, true, 1, "", {1}, ""};
  ScoreOptions o;
  o.low_prior = false;
  const RootCauseMetrics r = ScoreUnits(ds, p, {0, 1, 2, 3}, o).view(View::kHorizontal).root;
  EXPECT_EQ(r.units, 3u);
  EXPECT_DOUBLE_EQ(r.top1, 1.0 / 3);
  EXPECT_DOUBLE_EQ(r.top3, 2.0 / 3);
}

TEST(ScoreTest, JsonHasExactlyTheDocumentedKeys) {
  const Dataset ds = MakeDataset(1, 3, 2);
  Predictions p;
  p.units.resize(ds.units.size());
  const Scores s = ScoreUnits(ds, p, {0, 1, 2}, {});
  const std::string json = ScoresJson(s, "request", 7);
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(json).get(doc), simdjson::SUCCESS) << json;
  std::vector<std::string> top;
  for (auto [key, value] : doc.get_object()) top.emplace_back(key);
  EXPECT_EQ(top, (std::vector<std::string>{"horizontal", "vertical", "split", "seed"}));
  EXPECT_EQ(std::string(doc["split"].get_string().value()), "request");
  EXPECT_EQ(doc["seed"].get_uint64().value(), 7u);
  for (const char* view : {"horizontal", "vertical"}) {
    std::vector<std::string> keys;
    for (auto [key, value] : doc[view].get_object()) keys.emplace_back(key);
    EXPECT_EQ(keys, (std::vector<std::string>{"step", "operator", "fault_type"}));
    std::vector<std::string> step;
    for (auto [key, value] : doc[view]["step"].get_object()) step.emplace_back(key);
    EXPECT_EQ(step, (std::vector<std::string>{"accuracy", "precision", "recall", "f1"}));
    std::vector<std::string> ops;
    for (auto [key, value] : doc[view]["operator"].get_object()) ops.emplace_back(key);
    EXPECT_EQ(ops, (std::vector<std::string>{"macro", "macro_plus", "root_cause",
                                             "macro_plus_detected"}));
    std::vector<std::string> det;
    for (auto [key, value] : doc[view]["operator"]["macro_plus_detected"].get_object())
      det.emplace_back(key);
    EXPECT_EQ(det, (std::vector<std::string>{"detection_recall", "f1"}));
    for (const char* avg : {"macro", "macro_plus"}) {
      std::vector<std::string> op;
      for (auto [key, value] : doc[view]["operator"][avg].get_object()) op.emplace_back(key);
      EXPECT_EQ(op, (std::vector<std::string>{"precision", "f1", "jaccard"}));
    }
    std::vector<std::string> ft;
    for (auto [key, value] : doc[view]["fault_type"].get_object()) ft.emplace_back(key);
    EXPECT_EQ(ft, (std::vector<std::string>{"accuracy", "macro_recall", "macro_f1"}));
  }
  // Nothing predicted: the two normal units score f = 1 (empty-empty), the faulty one 0.
  EXPECT_NEAR(doc["vertical"]["operator"]["macro"]["f1"].get_double().value(), 2.0 / 3, 1e-4);
}

class PredictionFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/teller-evalpred-XXXXXX";
    const int fd = mkstemp(tmpl);
    ASSERT_GE(fd, 0);
    close(fd);
    path_ = tmpl;
  }
  void TearDown() override { std::remove(path_.c_str()); }
  void Write(const std::string& text) {
    std::ofstream out(path_);
    out << text;
  }
  std::string path_;
};

TEST_F(PredictionFileTest, RoundTrip) {
  const Dataset ds = MakeDataset(2, 3, 2);
  Predictions p;
  p.units.resize(ds.units.size());
  p.at(1, View::kVertical) = {true, true, 0.75, "communication", {4, 1}, "why \"quoted\""};
  p.at(1, View::kHorizontal) = {true, false, 0.25, "", {}, ""};
  p.at(7, View::kHorizontal) = {true, true, 1, "cuda_kernel", {}, ""};
  Write(PredictionsToJsonl(ds, p, {0, 1, 7}));
  PredictionFileStats st;
  auto back = ReadPredictions(path_, ds, &st);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(st.lines, 3u);
  const Prediction& a = back->at(1, View::kVertical);
  EXPECT_TRUE(a.present);
  EXPECT_TRUE(a.abnormal);
  EXPECT_DOUBLE_EQ(a.score, 0.75);
  EXPECT_EQ(a.fault_type, "communication");
  EXPECT_EQ(a.nodes, (std::vector<uint32_t>{4, 1}));
  EXPECT_EQ(a.explanation, "why \"quoted\"");
  EXPECT_FALSE(back->at(1, View::kHorizontal).abnormal);
  EXPECT_TRUE(back->at(1, View::kHorizontal).present);
  EXPECT_TRUE(back->at(7, View::kHorizontal).abnormal);
  EXPECT_FALSE(back->at(0, View::kVertical).present);
}

TEST_F(PredictionFileTest, MinimalLinesUnknownUnitsAndErrors) {
  const Dataset ds = MakeDataset(1, 2, 2);
  // Optional fields omitted or null; a step the dataset does not have is skipped.
  Write(
      "{\"setting\":\"setting-0\",\"request\":\"req-0\",\"seq\":1,\"view\":\"vertical\","
      "\"abnormal\":true,\"score\":1}\n"
      "\n"
      "{\"setting\":\"setting-0\",\"request\":\"req-9\",\"seq\":1,\"view\":\"vertical\","
      "\"abnormal\":true,\"score\":1,"
      "\"fault_type\":null,\"nodes\":null}\n");
  PredictionFileStats st;
  auto ok = ReadPredictions(path_, ds, &st);
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(st.unknown_units, 1u);
  EXPECT_TRUE(ok->at(1, View::kVertical).abnormal);

  const std::string line =
      "{\"setting\":\"setting-0\",\"request\":\"req-0\",\"seq\":1,\"view\":\"vertical\","
      "\"abnormal\":true,\"score\":1}\n";
  Write(line + line);
  auto dup = ReadPredictions(path_, ds);
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.status().message().find(path_ + ":2"), std::string::npos) << dup.status().message();
  EXPECT_NE(dup.status().message().find("second prediction"), std::string::npos);

  Write(line +
        "{\"setting\":\"setting-0\",\"request\":\"req-0\",\"seq\":0,\"view\":\"diagonal\","
        "\"abnormal\":true,\"score\":1}\n");
  auto view = ReadPredictions(path_, ds);
  ASSERT_FALSE(view.ok());
  EXPECT_NE(view.status().message().find(":2: \"view\" is \"diagonal\""), std::string::npos)
      << view.status().message();

  Write(
      "{\"setting\":\"setting-0\",\"request\":\"req-0\",\"seq\":0,\"view\":\"vertical\",\"score\":"
      "1}\n");
  auto missing = ReadPredictions(path_, ds);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find(path_ + ":1: byte "), std::string::npos)
      << missing.status().message();
  EXPECT_NE(missing.status().message().find(": missing field \"abnormal\""), std::string::npos)
      << missing.status().message();

  Write("not json\n");
  EXPECT_FALSE(ReadPredictions(path_, ds).ok());
  EXPECT_FALSE(ReadPredictions("/nonexistent/predictions.jsonl", ds).ok());
}

// A record of two ranks: STEP(0) -> FE(1) -> RT(2) -> K(3); STEP(4) -> COMM(5) -> K(6).
StepColumns TwoRankRecord() {
  StepColumns c;
  c.type = {0, 1, 4, 6, 0, 3, 6};
  c.layer = {0, 1, 4, 5, 0, 3, 3};
  c.name = {0, 1, 2, 3, 0, 4, 5};
  c.parent = {-1, 0, 1, 2, -1, 4, 5};
  c.rank = {0, 0, 0, 0, 1, 1, 1};
  c.offset_ns = {0, 1000, 2000, 5000, 0, 1000, 3000};
  c.dur_ns = {10000, 8000, 1000, 3000, 12000, 9000, 7000};
  return c;
}

TEST(FeaturesTest, StatFeaturesOfHandMadeRecord) {
  const StepColumns c = TwoRankRecord();
  const std::vector<double> f = StatFeatures(c);
  const std::vector<std::string> names = StatFeatureNames();
  ASSERT_EQ(f.size(), names.size());
  std::map<std::string, double> by_name;
  for (size_t i = 0; i < f.size(); ++i) by_name[names[i]] = f[i];
  EXPECT_DOUBLE_EQ(by_name["type.kernel.count"], std::log1p(2));
  EXPECT_DOUBLE_EQ(by_name["type.kernel.sum_us"], std::log1p(10));
  EXPECT_DOUBLE_EQ(by_name["type.kernel.max_us"], std::log1p(7));
  EXPECT_DOUBLE_EQ(by_name["type.kernel.mean_us"], std::log1p(5));
  EXPECT_DOUBLE_EQ(by_name["layer.COMM.count"], std::log1p(2));
  EXPECT_DOUBLE_EQ(by_name["step.ranks"], std::log1p(2));
  EXPECT_DOUBLE_EQ(by_name["step.step_spread_us"], std::log1p(2));  // 12 - 10 us
  EXPECT_DOUBLE_EQ(by_name["step.span_us"], std::log1p(12));
  EXPECT_DOUBLE_EQ(by_name["step.launch_delay_mean_us"],
                   std::log1p(3));  // kernel 5 us after its call at 2 us
  EXPECT_DOUBLE_EQ(by_name["step.depth_max"], std::log1p(3));
  EXPECT_EQ(NormalizeName("layers.12.attn_3"), "layers.##.attn_#");
}

TEST(FeaturesTest, StructFeaturesAndStandardization) {
  const StepColumns c = TwoRankRecord();
  const std::vector<uint64_t> hash = {HashName("step"), HashName("fe"),   HashName("rt"),
                                      HashName("k"),    HashName("comm"), HashName("nccl")};
  const std::vector<double> f = StructFeatures(c, hash);
  ASSERT_EQ(f.size(), 3 * kStructBuckets);
  double count = 0, pairs = 0;
  for (size_t i = 0; i < kStructBuckets; ++i) {
    count += std::expm1(f[i]);
    pairs += std::expm1(f[2 * kStructBuckets + i]);
  }
  EXPECT_NEAR(count, 7, 1e-9);  // every node once
  EXPECT_NEAR(pairs, 5, 1e-9);  // every node with a parent once
  EXPECT_NEAR(std::expm1(f[HashName("step") % kStructBuckets]), 2, 1e-9);

  // Standardized per setting: a column's median becomes 0.
  Dataset ds;
  Setting s;
  s.name = "x";
  s.names = {"step", "fe", "rt", "k", "comm", "nccl"};
  for (int i = 0; i < 5; ++i) {
    StepColumns r = TwoRankRecord();
    r.dur_ns[3] = i < 4 ? 3000 + 200 * i : 15000;  // record 4: the kernel is 5x slower
    s.records.push_back(r);
  }
  ds.settings.push_back(s);
  for (uint32_t i = 0; i < 5; ++i) {
    Unit u;
    u.record = i;
    ds.units.push_back(u);
  }
  const Features feats = ComputeFeatures(ds, FeatureSet::kStat);
  const Matrix rows = feats.Rows(ds, {0, 1, 2, 3, 4});
  size_t sum_col = 0;
  while (feats.names[sum_col] != "type.kernel.sum_us") ++sum_col;
  EXPECT_DOUBLE_EQ(rows.at(2, sum_col), 0.0);  // the median row
  EXPECT_LT(rows.at(0, sum_col), 0);
  EXPECT_GT(rows.at(4, sum_col), 3);

  // Node deviations: the kernel that grew 5x in record 4 is the top vertical node there;
  // the horizontal view only names COMM nodes.
  const NodeDeviations dev(ds);
  const std::vector<uint32_t> top = dev.Top(ds, 4, View::kVertical, 8, 1.0);
  ASSERT_FALSE(top.empty());
  EXPECT_EQ(top.front(), 3u);
  EXPECT_TRUE(dev.Top(ds, 4, View::kHorizontal, 8, 1.0).empty());
  EXPECT_TRUE(dev.Top(ds, 2, View::kVertical, 8, 1.0).empty());
}

}  // namespace
}  // namespace teller::eval
