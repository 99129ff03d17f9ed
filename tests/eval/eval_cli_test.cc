// End-to-end tests of `teller eval` through the CLI, on a small dataset built once per
// suite from two simulated settings (`teller simulate` + `teller dataset build`), like
// the paper preset but a few seconds to make.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

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
#include "teller/eval/features.h"

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

  static std::string tmp_;
};
std::string EvalCliTest::tmp_;

TEST_F(EvalCliTest, NumericJsonAndPredictionsFileAgree) {
  const std::string pred = tmp_ + "/numeric.jsonl";
  const Outcome a = Run("eval --data " + Ds() +
                        " --method teller-numeric --json -q --write-predictions '" + pred + "'");
  ASSERT_EQ(a.exit_code, 0) << a.err;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(a.out).get(doc), simdjson::SUCCESS) << a.out;
  std::vector<std::string> keys;
  for (auto [key, value] : doc.get_object()) keys.emplace_back(key);
  EXPECT_EQ(keys, (std::vector<std::string>{"horizontal", "vertical", "split", "seed"}));
  EXPECT_EQ(std::string(doc["split"].get_string().value()), "request");
  for (const char* view : {"horizontal", "vertical"}) {
    for (const char* m : {"accuracy", "precision", "recall", "f1"}) {
      const double v = doc[view]["step"][m].get_double().value();
      EXPECT_GE(v, 0);
      EXPECT_LE(v, 1);
    }
  }
  // The same predictions through the documented file format score the same.
  const std::vector<std::string> lines = Lines(ReadText(pred));
  ASSERT_FALSE(lines.empty());
  const Outcome b = Run("eval --data " + Ds() + " --predictions '" + pred + "' --json -q");
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_EQ(a.out, b.out);
  // Text output: Table 2 with both views and the low-prior table.
  const Outcome t = Run("eval --data " + Ds() + " --predictions '" + pred + "'");
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_NE(t.out.find("Table 2, split request"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("predictions                        H"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("| predictions | V | 5% |"), std::string::npos) << t.out;
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
  for (simdjson::dom::element s : doc["steps"].get_array()) {
    if (!s["abnormal"].get_bool().value() || s["request"].is_null()) continue;
    Key k{std::string(s["request"].get_string().value()), s["seq"].get_uint64().value(),
          std::string(s["view"].get_string().value())};
    for (simdjson::dom::element ev : s["evidence"].get_array()) {
      evidence[k].emplace_back(eval::NormalizeName(ev["name"].get_string().value()),
                               ev["rank"].get_int64().value());
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
    const std::vector<std::pair<std::string, int64_t>> head(got.begin(), got.begin() + static_cast<long>(want.size()));
    EXPECT_EQ(head, want) << request << " seq " << seq << " " << std::get<2>(k);
    checked += got.size();
  }
  EXPECT_GT(checked, 0u);
}

TEST_F(EvalCliTest, BaselinesSplitsAndReport) {
  const std::string report = tmp_ + "/report";
  const Outcome r = Run("eval --data " + Ds() +
                        " --method all --split request,engine,run --report '" + report + "' -q");
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
  const std::vector<std::string> csv = Lines(ReadText(report + "/table2.csv"));
  ASSERT_FALSE(csv.empty());
  EXPECT_EQ(csv[0].rfind("split,fold,method,view,step acc,", 0), 0u) << csv[0];
  // Per method: 2 views x 3 splits.
  EXPECT_GE(csv.size(),
            1u + 15 * 2 * 3 - (r.out.find("XGBoost") == std::string::npos ? 2 * 2 * 3 : 0));
  const std::vector<std::string> folds = Lines(ReadText(report + "/per_fold.csv"));
  size_t sglang = 0;
  for (const std::string& line : folds) sglang += line.rfind("engine,sglang,", 0) == 0;
  EXPECT_GE(sglang, 2u);
  EXPECT_FALSE(ReadText(report + "/low_prior.csv").empty());
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
}

}  // namespace
}  // namespace teller
