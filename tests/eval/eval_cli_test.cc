// End-to-end tests of `teller eval` through the CLI, on a small dataset built once per
// suite from two simulated settings (`teller simulate` + `teller dataset build`), like
// the paper preset but a few seconds to make.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "simdjson.h"
#include "teller/eval/dataset.h"
#include "teller/eval/evaluate.h"
#include "teller/eval/features.h"
#include "teller/rca/rca.h"

namespace teller {
namespace {

struct Outcome {
  int exit_code = -1;
  std::string out, err;
};

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) out.push_back(line);
  }
  return out;
}

std::vector<std::string> Split(const std::string& line, char sep) {
  std::vector<std::string> out;
  std::stringstream in(line);
  for (std::string f; std::getline(in, f, sep);) out.push_back(f);
  return out;
}

// The labels of one unit (setting, request, seq) in a view, from steps.jsonl.
struct Label {
  bool abnormal = false;
  std::string fault_type;  // the step's, "" when none
  std::set<uint64_t> nodes;
};
using Unit = std::tuple<std::string, std::string, uint64_t>;
using UnitView = std::pair<Unit, std::string>;

struct Prediction {
  bool abnormal = false;
  std::string fault_type;
  std::set<uint64_t> nodes;
};

// The step, operator-set and fault-type metrics of docs/eval.md, computed here from the
// labels and a predictions file independently of src/eval.
struct Scores {
  double accuracy = 0, precision = 0, recall = 0, f1 = 0;
  double op_precision = 0, op_f1 = 0, op_jaccard = 0;
  double op_plus_precision = 0, op_plus_f1 = 0, op_plus_jaccard = 0;
  double det_recall = 0, det_f1 = 0;  // Macro+ over the labelled steps predicted abnormal
  double type_accuracy = 0, type_macro_recall = 0, type_macro_f1 = 0;
};
double Ratio(double a, double b) { return b == 0 ? 0 : a / b; }
double F1(double p, double r) { return p + r == 0 ? 0 : 2 * p * r / (p + r); }

Scores Score(const std::vector<std::pair<Label, Prediction>>& units) {
  Scores s;
  double tp = 0, fp = 0, fn = 0, tn = 0;
  double op_p = 0, op_f = 0, op_j = 0, plus_p = 0, plus_f = 0, plus_j = 0, plus_n = 0;
  double det_n = 0, det_f = 0;
  double type_n = 0, type_ok = 0;
  std::map<std::string, std::array<double, 3>> type;  // category -> labelled, predicted, correct
  for (const auto& [l, p] : units) {
    tp += l.abnormal && p.abnormal;
    fp += !l.abnormal && p.abnormal;
    fn += l.abnormal && !p.abnormal;
    tn += !l.abnormal && !p.abnormal;
    const std::set<uint64_t> predicted = p.abnormal ? p.nodes : std::set<uint64_t>{};
    double up = 0, uf = 0, uj = 0;
    if (predicted.empty() && l.nodes.empty()) {
      uf = uj = 1;
    } else if (!predicted.empty() && !l.nodes.empty()) {
      double both = 0;
      for (uint64_t n : predicted) both += l.nodes.count(n);
      up = both / predicted.size();
      uf = F1(up, both / l.nodes.size());
      uj = both / (predicted.size() + l.nodes.size() - both);
    }
    op_p += up;
    op_f += uf;
    op_j += uj;
    if (!l.nodes.empty()) {
      plus_p += up;
      plus_f += uf;
      plus_j += uj;
      ++plus_n;
      if (p.abnormal) {
        ++det_n;
        det_f += uf;
      }
    }
    if (l.abnormal) {
      // A missed fault is a misclassified one.
      const std::string guess = p.abnormal ? p.fault_type : "";
      ++type_n;
      type_ok += guess == l.fault_type;
      type[l.fault_type][0] += 1;
      if (!guess.empty()) type[guess][1] += 1;
      if (guess == l.fault_type) type[l.fault_type][2] += 1;
    }
  }
  const double n = static_cast<double>(units.size());
  s.accuracy = Ratio(tp + tn, n);
  s.precision = Ratio(tp, tp + fp);
  s.recall = Ratio(tp, tp + fn);
  s.f1 = F1(s.precision, s.recall);
  s.op_precision = Ratio(op_p, n);
  s.op_f1 = Ratio(op_f, n);
  s.op_jaccard = Ratio(op_j, n);
  s.op_plus_precision = Ratio(plus_p, plus_n);
  s.op_plus_f1 = Ratio(plus_f, plus_n);
  s.op_plus_jaccard = Ratio(plus_j, plus_n);
  s.det_recall = Ratio(det_n, plus_n);
  s.det_f1 = Ratio(det_f, det_n);
  s.type_accuracy = Ratio(type_ok, type_n);
  double recall = 0, f1 = 0;
  for (const auto& [c, v] : type) {
    recall += Ratio(v[2], v[0]);
    f1 += F1(Ratio(v[2], v[1]), Ratio(v[2], v[0]));
  }
  s.type_macro_recall = Ratio(recall, static_cast<double>(type.size()));
  s.type_macro_f1 = Ratio(f1, static_cast<double>(type.size()));
  return s;
}

class EvalCliTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    char tmpl[] = "/tmp/teller-evalcli-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    tmp_ = tmpl;
    for (const char* profile : {"vllm-v1-online", "sglang"}) {
      const Outcome sim = Run("simulate --profile " + std::string(profile) +
                              " --requests 12 --layers 4 --random-faults 3 --seed 3 --out '" +
                              tmp_ + "/raw/" + profile + "'");
      ASSERT_EQ(sim.exit_code, 0) << sim.err;
    }
    const Outcome build =
        Run("dataset build '" + tmp_ + "/raw' --out '" + tmp_ + "/ds' -q --jobs 1");
    ASSERT_EQ(build.exit_code, 0) << build.err;
  }
  static void TearDownTestSuite() { std::system(("rm -rf '" + tmp_ + "'").c_str()); }

  static Outcome Run(const std::string& args) {
    Outcome o;
    const std::string cmd = "'" + std::string(TELLER_BIN) + "' " + args + " >'" + tmp_ +
                            "/out.txt' 2>'" + tmp_ + "/err.txt'";
    const int status = std::system(cmd.c_str());
    o.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    o.out = ReadText(tmp_ + "/out.txt");
    o.err = ReadText(tmp_ + "/err.txt");
    return o;
  }
  static std::string Ds() { return "'" + tmp_ + "/ds'"; }

  // Labels of every unit of the dataset, per view.
  static std::map<UnitView, Label> Labels() {
    std::map<UnitView, Label> labels;
    for (const char* setting : {"vllm-v1-online", "sglang"}) {
      for (const std::string& line : Lines(ReadText(tmp_ + "/ds/" + setting + "/steps.jsonl"))) {
        simdjson::dom::parser p;
        simdjson::dom::element s;
        EXPECT_EQ(p.parse(line).get(s), simdjson::SUCCESS);
        const Unit unit{setting, std::string(s["request"].get_string().value()),
                        s["seq"].get_uint64().value()};
        std::string fault;
        if (!s["fault_type"].is_null()) fault = std::string(s["fault_type"].get_string().value());
        for (const char* view : {"vertical", "horizontal"}) {
          Label& l = labels[{unit, view}];
          l.abnormal = s[view]["is_anomaly"].get_bool().value();
          l.fault_type = fault;
          for (simdjson::dom::element n : s[view]["affected_nodes"].get_array())
            l.nodes.insert(n.get_uint64().value());
        }
      }
    }
    return labels;
  }
  static std::map<UnitView, Prediction> Predictions(const std::string& path) {
    std::map<UnitView, Prediction> out;
    for (const std::string& line : Lines(ReadText(path))) {
      simdjson::dom::parser p;
      simdjson::dom::element x;
      EXPECT_EQ(p.parse(line).get(x), simdjson::SUCCESS);
      const Unit unit{std::string(x["setting"].get_string().value()),
                      std::string(x["request"].get_string().value()),
                      x["seq"].get_uint64().value()};
      Prediction& pr = out[{unit, std::string(x["view"].get_string().value())}];
      pr.abnormal = x["abnormal"].get_bool().value();
      if (!x["fault_type"].error() && !x["fault_type"].is_null()) {
        pr.fault_type = std::string(x["fault_type"].get_string().value());
      }
      if (!x["nodes"].error()) {
        for (simdjson::dom::element n : x["nodes"].get_array())
          pr.nodes.insert(n.get_uint64().value());
      }
    }
    return out;
  }

  static std::string tmp_;
};
std::string EvalCliTest::tmp_;

// The scores printed with --json are those of the predictions written with
// --write-predictions against the dataset's labels, recomputed here (Score above), for a
// split with one test fold (request) and one averaged over held-out runs (run); the
// numeric method finds few of these faults, so a supervised baseline that finds some is
// scored too.
TEST_F(EvalCliTest, NumericJsonAndPredictionsFileAgree) {
  const std::map<UnitView, Label> labels = Labels();
  const std::pair<const char*, const char*> kRuns[] = {
      {"teller-numeric", "request"}, {"teller-numeric", "run"}, {"random-forest-stat", "run"}};
  for (const auto& [method, split] : kRuns) {
    SCOPED_TRACE(std::string(method) + " " + split);
    const std::string pred = tmp_ + "/" + method + "-" + split + ".jsonl";
    const Outcome a = Run("eval --data " + Ds() + " --method " + method + " --split " + split +
                          " --json -q --write-predictions '" + pred + "'");
    ASSERT_EQ(a.exit_code, 0) << a.err;
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    ASSERT_EQ(parser.parse(a.out).get(doc), simdjson::SUCCESS) << a.out;
    std::vector<std::string> keys;
    for (auto [key, value] : doc.get_object()) keys.emplace_back(key);
    EXPECT_EQ(keys, (std::vector<std::string>{"horizontal", "vertical", "split", "seed"}));
    EXPECT_EQ(std::string(doc["split"].get_string().value()), split);
    // Units of each fold (the request split has one test fold; the run split holds out
    // each setting in turn and prints the mean over them).
    const std::map<UnitView, Prediction> predictions = Predictions(pred);
    ASSERT_FALSE(predictions.empty());
    for (const char* view : {"horizontal", "vertical"}) {
      SCOPED_TRACE(view);
      std::map<std::string, std::vector<std::pair<Label, Prediction>>> folds;
      for (const auto& [key, p] : predictions) {
        if (key.second != view) continue;
        ASSERT_TRUE(labels.count(key)) << std::get<1>(key.first);
        folds[std::string(split) == "run" ? std::get<0>(key.first) : "test"].emplace_back(
            labels.at(key), p);
      }
      ASSERT_EQ(folds.size(), std::string(split) == "run" ? 2u : 1u);
      Scores mean;
      for (const auto& [fold, units] : folds) {
        const Scores s = Score(units);
        const double w = 1.0 / static_cast<double>(folds.size());
        mean.accuracy += w * s.accuracy;
        mean.precision += w * s.precision;
        mean.recall += w * s.recall;
        mean.f1 += w * s.f1;
        mean.op_precision += w * s.op_precision;
        mean.op_f1 += w * s.op_f1;
        mean.op_jaccard += w * s.op_jaccard;
        mean.op_plus_precision += w * s.op_plus_precision;
        mean.op_plus_f1 += w * s.op_plus_f1;
        mean.op_plus_jaccard += w * s.op_plus_jaccard;
        mean.det_recall += w * s.det_recall;
        mean.det_f1 += w * s.det_f1;
        mean.type_accuracy += w * s.type_accuracy;
        mean.type_macro_recall += w * s.type_macro_recall;
        mean.type_macro_f1 += w * s.type_macro_f1;
      }
      const simdjson::dom::element v = doc[view];
      auto near = [](simdjson::dom::element e, double want, const char* what) {
        EXPECT_NEAR(e.get_double().value(), want, 5.0001e-5) << what;  // printed to 4 digits
      };
      near(v["step"]["accuracy"], mean.accuracy, "step accuracy");
      near(v["step"]["precision"], mean.precision, "step precision");
      near(v["step"]["recall"], mean.recall, "step recall");
      near(v["step"]["f1"], mean.f1, "step f1");
      near(v["operator"]["macro"]["precision"], mean.op_precision, "operator macro precision");
      near(v["operator"]["macro"]["f1"], mean.op_f1, "operator macro f1");
      near(v["operator"]["macro"]["jaccard"], mean.op_jaccard, "operator macro jaccard");
      near(v["operator"]["macro_plus"]["precision"], mean.op_plus_precision,
           "operator macro+ precision");
      near(v["operator"]["macro_plus"]["f1"], mean.op_plus_f1, "operator macro+ f1");
      near(v["operator"]["macro_plus"]["jaccard"], mean.op_plus_jaccard, "operator macro+ jaccard");
      near(v["operator"]["macro_plus_detected"]["detection_recall"], mean.det_recall,
           "operator detection recall");
      near(v["operator"]["macro_plus_detected"]["f1"], mean.det_f1, "operator F1 on detected");
      near(v["fault_type"]["accuracy"], mean.type_accuracy, "fault type accuracy");
      near(v["fault_type"]["macro_recall"], mean.type_macro_recall, "fault type macro recall");
      near(v["fault_type"]["macro_f1"], mean.type_macro_f1, "fault type macro f1");
    }
    // The same predictions through the documented file format score the same.
    const Outcome b = Run("eval --data " + Ds() + " --split " + split + " --predictions '" + pred +
                          "' --json -q");
    ASSERT_EQ(b.exit_code, 0) << b.err;
    EXPECT_EQ(a.out, b.out);
  }
  // Text output: Table 2 with both views and the low-prior table.
  const Outcome t =
      Run("eval --data " + Ds() + " --predictions '" + tmp_ + "/teller-numeric-request.jsonl'");
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_NE(t.out.find("Table 2, split incident"), std::string::npos) << t.out;  // the default
  EXPECT_NE(t.out.find("predictions                        H"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("| predictions | V | 5% |"), std::string::npos) << t.out;
}

// On the simulated dataset: the incident split puts no engine-step record and no fault
// window in two parts (every request, batch sibling and rank of a fault's steps together);
// the request split says how many records its test part shares with training.
TEST_F(EvalCliTest, IncidentSplitSharesNoRecordAndRequestSplitWarns) {
  auto loaded = eval::LoadDataset(tmp_ + "/ds", eval::LoadOptions{false, false});
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  const eval::Dataset& ds = loaded.value();
  uint64_t abnormal = 0;
  for (const auto& u : ds.units) {
    ASSERT_TRUE(u.has_incident);
    abnormal += u.is_anomaly;
    if (u.is_anomaly) {
      EXPECT_GE(u.fault, 0);
      EXPECT_FALSE(u.mechanism.empty());
    }
  }
  ASSERT_GT(abnormal, 0u);
  for (uint64_t seed : {1, 2, 3}) {
    auto folds = eval::MakeFolds(ds, eval::SplitKind::kIncident, seed);
    ASSERT_TRUE(folds.ok()) << folds.status().message();
    const eval::Fold& f = folds->front();
    std::map<std::pair<uint32_t, uint32_t>, std::set<int>> record_parts;
    std::map<std::pair<uint32_t, int64_t>, std::set<int>> fault_parts;
    int part = 0;
    for (const std::vector<uint32_t>* units : {&f.train, &f.validation, &f.test}) {
      for (uint32_t i : *units) {
        record_parts[{ds.units[i].setting, ds.units[i].record}].insert(part);
        if (ds.units[i].fault >= 0)
          fault_parts[{ds.units[i].setting, ds.units[i].fault}].insert(part);
      }
      ++part;
    }
    EXPECT_EQ(f.train.size() + f.validation.size() + f.test.size(), ds.units.size());
    for (const auto& [key, parts] : record_parts) EXPECT_EQ(parts.size(), 1u);
    for (const auto& [key, parts] : fault_parts) EXPECT_EQ(parts.size(), 1u);
    EXPECT_FALSE(fault_parts.empty());
  }
  auto request = eval::MakeFolds(ds, eval::SplitKind::kRequest, 1);
  ASSERT_TRUE(request.ok());
  const eval::SharedRecordCount shared = eval::CountSharedRecords(ds, request->front());
  const Outcome o = Run("eval --data " + Ds() + " --method teller-numeric --split request -q");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.err.find("warning: the request split leaks: " + std::to_string(shared.records) +
                       " engine-step records are in both train and test (" +
                       std::to_string(shared.test_units) + " of " +
                       std::to_string(request->front().test.size())),
            std::string::npos)
      << o.err;
  EXPECT_NE(o.out.find("WARNING: this split leaks"), std::string::npos);
}

// --folds K: every test unit once over the K folds, so the recall per mechanism (summed
// over folds) counts every abnormal unit of the dataset, per view; K rows per method and
// view in per_fold.csv.
TEST_F(EvalCliTest, KFoldIncidentSplitTestsEveryAbnormalUnit) {
  auto loaded = eval::LoadDataset(tmp_ + "/ds", eval::LoadOptions{false, false});
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  uint64_t abnormal[2] = {0, 0};
  for (const auto& u : loaded->units) {
    for (int v = 0; v < 2; ++v) abnormal[v] += u.views[v].is_anomaly;
  }
  ASSERT_GT(abnormal[0] + abnormal[1], 0u);
  const std::string report = tmp_ + "/kfold-report";
  const Outcome o = Run("eval --data " + Ds() + " --method teller-numeric,label-copy --folds 3 " +
                        "--split incident -q --report '" + report + "'");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("mean over 3 folds (every incident tested once)"), std::string::npos)
      << o.out;
  uint64_t positives[2] = {0, 0};
  for (const std::string& line : Lines(ReadText(report + "/mechanism_recall.csv"))) {
    const std::vector<std::string> f = Split(line, ',');
    if (f.size() < 6 || f[1] != "Teller (numeric)" || f[2] == "healthy" || f[0] != "incident")
      continue;
    positives[f[4] == "vertical" ? 0 : 1] += std::stoull(f[5]);
  }
  EXPECT_EQ(positives[0], abnormal[0]);
  EXPECT_EQ(positives[1], abnormal[1]);
  size_t fold_rows = 0;
  for (const std::string& line : Lines(ReadText(report + "/per_fold.csv")))
    fold_rows +=
        line.find(",fold ") != std::string::npos && line.find("Label copy") != std::string::npos;
  EXPECT_EQ(fold_rows, 3u * 2u) << ReadText(report + "/per_fold.csv");  // 3 folds x 2 views
  const Outcome two = Run("eval --data " + Ds() + " --method teller-numeric --folds 2");
  EXPECT_EQ(two.exit_code, 2);
  EXPECT_NE(two.err.find("--folds expects 1 or a whole number in [3, 100]"), std::string::npos)
      << two.err;
}

// The numeric method's node ids are the dataset builder's local ids: the nodes they name
// in steps.jsonl are the evidence operators `teller diagnose --json` reports for the same
// (request, seq, view), in the same order.
TEST_F(EvalCliTest, NumericEvidenceMapsToTheDiagnosedOperators) {
  const std::string setting = "vllm-v1-online";
  const std::string pred = tmp_ + "/all.jsonl", diag = tmp_ + "/diag.json";
  // The run split tests on every setting, so the predictions cover every step.
  const Outcome e =
      Run("eval --data " + Ds() + " --method teller-numeric --split run -q --write-predictions '" +
          pred + "'");
  ASSERT_EQ(e.exit_code, 0) << e.err;
  const Outcome d = Run("diagnose '" + tmp_ + "/raw/" + setting + "' --json '" + diag + "'");
  ASSERT_EQ(d.exit_code, 0) << d.err;

  using Key = std::tuple<std::string, uint64_t, std::string>;            // request, seq, view
  std::map<Key, std::vector<std::pair<std::string, int64_t>>> evidence;  // (name, rank)
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.load(diag).get(doc), simdjson::SUCCESS);
  // Version 2: one entry per engine step with its requests and views; the horizontal view
  // holds the communication evidence (include/teller/eval/numeric.h).
  for (simdjson::dom::element s : doc["steps"].get_array()) {
    if (!s["abnormal"].get_bool().value() || s["step"].is_null()) continue;
    const uint64_t seq = s["step"].get_uint64().value();
    for (simdjson::dom::element q : s["requests"].get_array()) {
      for (const char* view : {"vertical", "horizontal"}) {
        if (!s[view].get_bool().value()) continue;
        const Key k{std::string(q.get_string().value()), seq, view};
        for (simdjson::dom::element ev : s["evidence"].get_array()) {
          if (view[0] == 'h' && std::string_view(ev["layer"].get_string().value()) != "COMM")
            continue;
          evidence[k].emplace_back(eval::NormalizeName(ev["name"].get_string().value()),
                                   ev["rank"].get_int64().value());
        }
      }
    }
  }
  ASSERT_FALSE(evidence.empty()) << "the simulated faults gave no abnormal step with evidence";

  // Names and ranks of every node of the setting's records, by (request, seq).
  std::vector<std::string> names;
  simdjson::dom::parser names_parser;
  simdjson::dom::element nd;
  ASSERT_EQ(names_parser.load(tmp_ + "/ds/" + setting + "/names.json").get(nd), simdjson::SUCCESS);
  for (simdjson::dom::element n : nd["names"].get_array())
    names.emplace_back(n.get_string().value());
  std::map<std::pair<std::string, uint64_t>, std::pair<std::vector<uint64_t>, std::vector<int64_t>>>
      record;
  for (const std::string& line : Lines(ReadText(tmp_ + "/ds/" + setting + "/steps.jsonl"))) {
    simdjson::dom::parser p;
    simdjson::dom::element s;
    ASSERT_EQ(p.parse(line).get(s), simdjson::SUCCESS);
    auto& r =
        record[{std::string(s["request"].get_string().value()), s["seq"].get_uint64().value()}];
    for (simdjson::dom::element v : s["name"].get_array())
      r.first.push_back(v.get_uint64().value());
    for (simdjson::dom::element v : s["rank"].get_array())
      r.second.push_back(v.get_int64().value());
  }

  size_t checked = 0;
  for (const std::string& line : Lines(ReadText(pred))) {
    simdjson::dom::parser p;
    simdjson::dom::element x;
    ASSERT_EQ(p.parse(line).get(x), simdjson::SUCCESS);
    if (std::string(x["setting"].get_string().value()) != setting ||
        !x["abnormal"].get_bool().value())
      continue;
    const std::string request(x["request"].get_string().value());
    const uint64_t seq = x["seq"].get_uint64().value();
    const Key k{request, seq, std::string(x["view"].get_string().value())};
    const auto& want = evidence[k];
    const auto& r = record.at({request, seq});
    std::vector<std::pair<std::string, int64_t>> got;
    for (simdjson::dom::element id : x["nodes"].get_array()) {
      const uint64_t i = id.get_uint64().value();
      ASSERT_LT(i, r.first.size());
      got.emplace_back(eval::NormalizeName(names.at(r.first[i])), r.second[i]);
    }
    // The report lists the first 8 suspicious instances; the predictions hold all of them,
    // in the same order.
    ASSERT_GE(got.size(), want.size()) << request << " seq " << seq;
    const std::vector<std::pair<std::string, int64_t>> head(
        got.begin(), got.begin() + static_cast<long>(want.size()));
    EXPECT_EQ(head, want) << request << " seq " << seq << " " << std::get<2>(k);
    checked += got.size();
  }
  EXPECT_GT(checked, 0u);
}

TEST_F(EvalCliTest, BaselinesSplitsAndReport) {
  const std::string report = tmp_ + "/report";
  // --epochs 2: the learned methods (in "all" where the build has libtorch) train once per
  // fold; what is checked here is the report's shape, not what they learn.
  const Outcome r =
      Run("eval --data " + Ds() + " --method all --split request,engine,run --epochs 2 --report '" +
          report + "' -q");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* name : {"Teller (numeric)", "KMeans (stat)", "DBSCAN (stat)",
                           "IsolationForest (stat)", "GMM (stat)", "LinearSVM (stat)",
                           "RandomForest (stat)", "RandomForest (struct)", "GMM (struct)"}) {
    EXPECT_NE(r.out.find(name), std::string::npos) << name;
  }
  EXPECT_NE(r.out.find("Table 2, split engine"), std::string::npos);
  EXPECT_NE(r.out.find("per held-out engine"), std::string::npos);
  EXPECT_NE(r.out.find("@ sglang"), std::string::npos);
  EXPECT_NE(r.out.find("@ vllm-v1-online"), std::string::npos);
  const std::string md = ReadText(report + "/report.md");
  EXPECT_NE(md.find("## Table 2, split request"), std::string::npos);
  EXPECT_NE(md.find("### Per held-out engine (engine split)"), std::string::npos);
  EXPECT_NE(md.find("### Low prior (request split)"), std::string::npos);
  EXPECT_NE(md.find("### Recall per fault mechanism (engine split)"), std::string::npos);
  // One row per (split, method, mechanism or healthy, view) in mechanism_recall.csv; the
  // positives of a method on the engine split are the dataset's abnormal units per view.
  const std::vector<std::string> mech = Lines(ReadText(report + "/mechanism_recall.csv"));
  ASSERT_GT(mech.size(), 1u);
  EXPECT_EQ(mech[0].rfind("split,method,mechanism,timing_invisible,view,positives,", 0), 0u);
  std::map<std::string, uint64_t> engine_positives;
  for (size_t i = 1; i < mech.size(); ++i) {
    const std::vector<std::string> f = Split(mech[i], ',');
    ASSERT_EQ(f.size(), 10u) << mech[i];
    if (f[0] == "engine" && f[1] == "RandomForest (stat)" && f[2] != "healthy")
      engine_positives[f[4]] += std::stoull(f[5]);
  }
  std::map<std::string, uint64_t> abnormal;
  for (const auto& [key, label] : Labels()) abnormal[key.second] += label.abnormal;
  EXPECT_EQ(engine_positives["vertical"], abnormal["vertical"]);
  EXPECT_EQ(engine_positives["horizontal"], abnormal["horizontal"]);
  const std::vector<std::string> csv = Lines(ReadText(report + "/table2.csv"));
  ASSERT_FALSE(csv.empty());
  EXPECT_EQ(csv[0].rfind("split,fold,method,view,step acc,", 0), 0u) << csv[0];
  // One row per method, view and split: 16 methods (14 without XGBoost; eight more with
  // libtorch: the trace encoder, the MoT, the single stream and the five learned
  // baselines) x 2 x 3.
  const bool torch = r.out.find("Teller (trace encoder)") != std::string::npos;
  for (const char* name : {"Teller (MoT: trace + log)", "Teller (single stream: trace + log)",
                           "LogRobust (log)", "LAnoBERT (log)", "Logs2Graphs (log)",
                           "MAD-GAN (stat)", "Prompt-only (step summary + log)"}) {
    EXPECT_EQ(r.out.find(name) != std::string::npos, torch) << name;
  }
  const size_t methods = (r.out.find("XGBoost") == std::string::npos ? 14 : 16) + (torch ? 8 : 0);
  EXPECT_EQ(csv.size(), 1 + methods * 2 * 3);
  // The per-fold rows: every (split, method, view) once per held-out group (the request
  // split's one test fold, each engine, each run: here both settings).
  const std::vector<std::string> folds = Lines(ReadText(report + "/per_fold.csv"));
  ASSERT_FALSE(folds.empty());
  EXPECT_EQ(folds[0], csv[0]);
  using Key = std::tuple<std::string, std::string, std::string>;  // split, method, view
  std::map<Key, std::vector<std::vector<std::string>>> per_fold;
  for (size_t i = 1; i < folds.size(); ++i) {
    const std::vector<std::string> f = Split(folds[i], ',');
    ASSERT_EQ(f.size(), 25u) << folds[i];
    per_fold[{f[0], f[2], f[3]}].push_back(f);
  }
  EXPECT_EQ(folds.size(), 1 + methods * 2 * (1 + 2 + 2));
  // Table 2's row of a split is its one fold (request) or the mean over the folds, to the
  // 4 digits printed.
  std::map<Key, std::vector<std::string>> table;
  for (size_t i = 1; i < csv.size(); ++i) {
    const std::vector<std::string> row = Split(csv[i], ',');
    ASSERT_EQ(row.size(), 25u) << csv[i];
    const Key key{row[0], row[2], row[3]};
    table[key] = row;
    ASSERT_TRUE(per_fold.count(key)) << csv[i];
    const auto& fs = per_fold.at(key);
    EXPECT_EQ(row[1], row[0] == "request" ? "test" : "mean") << csv[i];
    ASSERT_EQ(fs.size(), row[0] == "request" ? 1u : 2u) << csv[i];
    if (row[0] == "engine" || row[0] == "run") {
      std::set<std::string> groups;
      for (const auto& f : fs) groups.insert(f[1]);
      EXPECT_EQ(groups, (std::set<std::string>{"sglang", "vllm-v1-online"})) << csv[i];
    }
    for (size_t c = 4; c < 25; ++c) {
      double mean = 0;
      for (const auto& f : fs) mean += std::stod(f[c]) / static_cast<double>(fs.size());
      EXPECT_NEAR(std::stod(row[c]), mean, 1.0001e-4) << csv[0] << "\n" << csv[i];
    }
  }
  // The same numbers as a single-method run prints (--json, the run split's mean).
  const Outcome one =
      Run("eval --data " + Ds() + " --method random-forest-stat --split run --json -q");
  ASSERT_EQ(one.exit_code, 0) << one.err;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(one.out).get(doc), simdjson::SUCCESS) << one.out;
  for (const auto& [view, letter] :
       {std::pair<const char*, const char*>{"horizontal", "H"}, {"vertical", "V"}}) {
    const Key key{"run", "RandomForest (stat)", letter};
    ASSERT_TRUE(table.count(key));
    const std::vector<std::string>& row = table.at(key);
    const simdjson::dom::element v = doc[view];
    const double want[] = {v["step"]["accuracy"].get_double().value(),
                           v["step"]["precision"].get_double().value(),
                           v["step"]["recall"].get_double().value(),
                           v["step"]["f1"].get_double().value(),
                           v["operator"]["macro"]["precision"].get_double().value(),
                           v["operator"]["macro"]["f1"].get_double().value(),
                           v["operator"]["macro"]["jaccard"].get_double().value(),
                           v["operator"]["macro_plus"]["precision"].get_double().value(),
                           v["operator"]["macro_plus"]["f1"].get_double().value(),
                           v["operator"]["macro_plus"]["jaccard"].get_double().value(),
                           v["fault_type"]["accuracy"].get_double().value(),
                           v["fault_type"]["macro_recall"].get_double().value(),
                           v["fault_type"]["macro_f1"].get_double().value()};
    for (size_t c = 0; c < std::size(want); ++c) {
      EXPECT_NEAR(std::stod(row[4 + c]), want[c], 1e-9) << view << " column " << csv[0];
    }
  }
  EXPECT_GT(Lines(ReadText(report + "/low_prior.csv")).size(), 1u);
}

// --seeds 1-3: the table over seeds shows the mean of what --seed 1, 2 and 3 give alone
// (printed to 3 digits), and its interval; the report gets seeds.csv.
TEST_F(EvalCliTest, SeedsGiveMeanAndIntervalOfSingleSeedRuns) {
  std::vector<double> f1;
  for (int seed = 1; seed <= 3; ++seed) {
    const Outcome o = Run("eval --data " + Ds() + " --method svm-stat --split incident --json -q " +
                          "--seed " + std::to_string(seed));
    ASSERT_EQ(o.exit_code, 0) << o.err;
    simdjson::dom::parser p;
    simdjson::dom::element doc;
    ASSERT_EQ(p.parse(o.out).get(doc), simdjson::SUCCESS) << o.out;
    f1.push_back(doc["vertical"]["step"]["f1"].get_double().value());
  }
  const double mean = (f1[0] + f1[1] + f1[2]) / 3;
  double ss = 0;
  for (double x : f1) ss += (x - mean) * (x - mean);
  const double half = 4.303 * std::sqrt(ss / 2) / std::sqrt(3.0);  // t(2) = 4.303
  const std::string report = tmp_ + "/seeds-report";
  const Outcome o =
      Run("eval --data " + Ds() + " --method svm-stat --split incident --seeds 1-3 -q --report '" +
          report + "'");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("Table 2 over seeds (3)"), std::string::npos) << o.out;
  const std::vector<std::string> csv = Lines(ReadText(report + "/seeds.csv"));
  bool found = false;
  for (const std::string& line : csv) {
    if (line.rfind("incident,LinearSVM (stat),vertical,step F1,3,", 0) != 0) continue;
    found = true;
    const std::vector<std::string> f = Split(line, ',');
    ASSERT_EQ(f.size(), 8u);
    EXPECT_NEAR(std::stod(f[5]), mean, 1e-4) << line;
    EXPECT_NEAR(std::stod(f[7]) - std::stod(f[5]), half, 2e-4) << line;
  }
  EXPECT_TRUE(found) << ReadText(report + "/seeds.csv");
  EXPECT_NE(Run("eval --data " + Ds() + " --method svm-stat --seeds 3-1").exit_code, 0);
  EXPECT_NE(Run("eval --data " + Ds() + " --method svm-stat --seeds 1-3 --json").exit_code, 0);
}

TEST_F(EvalCliTest, ErrorsAreClear) {
  Outcome o = Run("eval --method teller-numeric");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("--data"), std::string::npos);
  o = Run("eval --data " + Ds() + " --method nearest-neighbour");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("unknown method \"nearest-neighbour\""), std::string::npos) << o.err;
  o = Run("eval --data " + Ds() + " --method teller-numeric,svm-stat --json");
  EXPECT_EQ(o.exit_code, 2);
  o = Run("eval --data " + Ds() + " --method teller-numeric --split time");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("unknown split"), std::string::npos);
  o = Run("eval --data '" + tmp_ + "/nope' --method teller-numeric");
  EXPECT_EQ(o.exit_code, 1);
  EXPECT_NE(o.err.find("nope: not a directory"), std::string::npos) << o.err;

  const std::string bad = tmp_ + "/bad.jsonl";
  const std::string lines =
      "{\"setting\":\"sglang\",\"request\":\"r\",\"seq\":1,\"view\":\"vertical\","
      "\"abnormal\":true,\"score\":1}\n"
      "{\"setting\":\"sglang\",\"request\":\"r\",\"seq\":1,\"view\":\"vertical\","
      "\"abnormal\":1}\n";
  std::ofstream(bad) << lines;
  o = Run("eval --data " + Ds() + " --predictions '" + bad + "'");
  EXPECT_EQ(o.exit_code, 1);
  // The offset is the file byte of the offending value, the 1 of line 2's "abnormal":1.
  const size_t value_at = lines.find("\"abnormal\":1}") + std::string("\"abnormal\":").size();
  EXPECT_NE(o.err.find(bad + ":2: byte " + std::to_string(value_at) +
                       ": \"abnormal\": expected a boolean"),
            std::string::npos)
      << o.err;

  // A dataset whose source simulation is gone: teller-numeric says so; the baselines
  // (features from steps.jsonl) do not need it.
  const std::string moved = tmp_ + "/moved";
  std::system(
      ("mkdir -p '" + moved + "' && cp -r '" + tmp_ + "/ds/sglang' '" + moved + "/'").c_str());
  std::ofstream(moved + "/index.json")
      << "{\"format\":\"teller-dataset-index\",\"version\":1,\"settings\":[{\"name\":\"sglang\","
         "\"source\":\"/nonexistent/sglang\"}]}\n";
  o = Run("eval --data '" + moved + "' --method teller-numeric");
  EXPECT_EQ(o.exit_code, 1);
  EXPECT_NE(o.err.find("/nonexistent/sglang (from index.json) is not a directory"),
            std::string::npos)
      << o.err;
  o = Run("eval --data '" + moved + "' --method random-forest-stat -q");
  EXPECT_EQ(o.exit_code, 0) << o.err;

  // The log baselines read the logs by design: the ablation without logs refuses them
  // (MAD-GAN reads step features and is not refused: --epochs 1 keeps it short).
  if (rca::Available()) {
    o = Run("eval --data " + Ds() + " --method lanobert --split request --without-logs -q");
    EXPECT_EQ(o.exit_code, 1);
    EXPECT_NE(o.err.find("lanobert: reads the logs by design"), std::string::npos) << o.err;
    o = Run("eval --data " + Ds() +
            " --method mad-gan --split request --without-logs --epochs 1 -q");
    EXPECT_EQ(o.exit_code, 0) << o.err;
  }
}

}  // namespace
}  // namespace teller
