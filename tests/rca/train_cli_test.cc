// `teller train` and `teller eval --method teller-gcn|teller-mot` on a small simulated dataset
// (`teller simulate` + `teller dataset build`, as tests/eval builds its own).
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "teller/eval/dataset.h"
#include "teller/eval/methods.h"
#include "teller/format/dataset_node.h"
#include "teller/rca/rca.h"

namespace {

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Outcome {
  int exit_code = -1;
  std::string out, err;
};

class TrainCliTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    char tmpl[] = "/tmp/teller-traincli-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    tmp_ = tmpl;
    const Outcome sim =
        Run("simulate --profile vllm-v1-online --requests 16 --layers 4 "
            "--random-faults 4 --seed 5 --out '" +
            tmp_ + "/raw/vllm-v1-online'");
    ASSERT_EQ(sim.exit_code, 0) << sim.err;
    const Outcome build =
        Run("dataset build '" + tmp_ + "/raw' --out '" + tmp_ + "/ds' -q --jobs 1");
    ASSERT_EQ(build.exit_code, 0) << build.err;
  }
  static void TearDownTestSuite() { std::system(("rm -rf '" + tmp_ + "'").c_str()); }
  void SetUp() override {
    if (!teller::rca::Available()) GTEST_SKIP() << "built without libtorch";
  }

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
std::string TrainCliTest::tmp_;

TEST_F(TrainCliTest, TrainWritesAVersionedModelWithProgress) {
  const Outcome t = Run("train --data " + Ds() + " --out '" + tmp_ + "/model' --epochs 3 --seed 2");
  ASSERT_EQ(t.exit_code, 0) << t.err;
  // Progress per epoch on stderr: loss, rate, ETA.
  for (int e = 1; e <= 3; ++e) {
    EXPECT_NE(t.err.find("epoch " + std::to_string(e) + "/3: loss "), std::string::npos) << t.err;
  }
  EXPECT_NE(t.err.find("steps/s, ETA "), std::string::npos) << t.err;
  EXPECT_NE(t.out.find("3 epochs"), std::string::npos) << t.out;
  const std::string json = ReadText(tmp_ + "/model/model.json");
  EXPECT_NE(json.find("\"format\":\"teller-rca-model\",\"version\":2"), std::string::npos) << json;
  EXPECT_NE(json.find("\"network\":\"trace-encoder-gcn\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"split\":\"all\""), std::string::npos) << json;
  EXPECT_FALSE(ReadText(tmp_ + "/model/tpe/vocab.json").empty());
  EXPECT_FALSE(ReadText(tmp_ + "/model/weights.pt").empty());
  // The saved model loads and answers for every step record.
  auto m = teller::rca::Model::Load(tmp_ + "/model");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->training().epoch_loss.size(), 3u);
}

TEST_F(TrainCliTest, TrainRefusesBadArguments) {
  Outcome o = Run("train --data " + Ds() + " --out '" + tmp_ + "/m2' --split engine");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("--split is all, incident or request"), std::string::npos) << o.err;
  o = Run("train --data " + Ds() + " --out '" + tmp_ + "/m2' --epochs 0");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("--epochs expects a whole number"), std::string::npos) << o.err;
  o = Run("train --data " + Ds() + " --out '" + tmp_ + "/m2' --variant lstm");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("--variant is gcn, mot or single, got 'lstm'"), std::string::npos) << o.err;
  o = Run("train --data '" + tmp_ + "/nowhere' --out '" + tmp_ + "/m2'");
  EXPECT_EQ(o.exit_code, 1);
  EXPECT_NE(o.err.find("nowhere"), std::string::npos) << o.err;
}

// teller-gcn trains per fold inside eval: the same seed gives the same scores, and the
// predictions it writes, scored again through --predictions, give exactly those scores.
TEST_F(TrainCliTest, EvalOfTellerGcnIsDeterministicAndReproducible) {
  const std::string preds = "'" + tmp_ + "/gcn.jsonl'";
  const Outcome a = Run("eval --data " + Ds() +
                        " --method teller-gcn --split request --seed 3 --json -q "
                        "--write-predictions " +
                        preds);
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_NE(a.out.find("\"split\":\"request\""), std::string::npos) << a.out;
  const Outcome b =
      Run("eval --data " + Ds() + " --method teller-gcn --split request --seed 3 --json -q");
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_EQ(a.out, b.out);
  const Outcome again = Run("eval --data " + Ds() + " --predictions " + preds +
                            " --split request --seed 3 --json -q");
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(a.out, again.out);
  // Every predicted fault type is one of the five categories.
  const std::string lines = ReadText(tmp_ + "/gcn.jsonl");
  ASSERT_FALSE(lines.empty());
  size_t at = 0, typed = 0;
  while ((at = lines.find("\"fault_type\":\"", at)) != std::string::npos) {
    at += 14;
    const std::string type = lines.substr(at, lines.find('"', at) - at);
    teller::FaultCategory c;
    EXPECT_TRUE(teller::ParseFaultCategory(type, &c)) << type;
    ++typed;
  }
  EXPECT_GT(typed, 0u) << "no unit predicted abnormal";
}

// The value of `"key":` in `text` from `from` on (a number or a quoted string), and where it
// ends; npos when absent.
std::string JsonValueAfter(const std::string& text, const std::string& key, size_t* from) {
  const size_t at = text.find("\"" + key + "\":", *from);
  if (at == std::string::npos) {
    *from = std::string::npos;
    return "";
  }
  size_t v = at + key.size() + 3;
  size_t end = text[v] == '"' ? text.find('"', v + 1) + 1 : text.find_first_of(",}", v);
  *from = end;
  return text[v] == '"' ? text.substr(v + 1, end - v - 2) : text.substr(v, end - v);
}

// `teller diagnose --model`: the model reads the trace's steps as `teller dataset build`
// wrote them. Second path: the same model on the dataset built from the same run (its
// steps.jsonl read back by the evaluation's loader); every step's probabilities and fault
// type must be the same, and an abnormal step's fault type is the model's, the rules' kept.
TEST_F(TrainCliTest, DiagnoseWithAModelReadsTheStepsAsTheDatasetHasThem) {
  const std::string model = tmp_ + "/diag-model";
  const Outcome t = Run("train --data " + Ds() + " --out '" + model + "' --epochs 2 --seed 4");
  ASSERT_EQ(t.exit_code, 0) << t.err;
  const std::string json = tmp_ + "/diag.json";
  const Outcome d = Run("diagnose '" + tmp_ + "/raw/vllm-v1-online' --model '" + model +
                        "' --json '" + json + "'");
  ASSERT_EQ(d.exit_code, 0) << d.err;
  EXPECT_NE(d.out.find("learned model " + model + " (gcn): read "), std::string::npos) << d.out;
  const std::string report = ReadText(json);
  EXPECT_NE(report.find("\"model\":{\"path\":\"" + model + "\",\"network\":\"gcn\""),
            std::string::npos);

  auto m = teller::rca::Model::Load(model);
  ASSERT_TRUE(m.ok()) << m.status().message();
  auto ds = teller::eval::LoadDataset(tmp_ + "/ds");
  ASSERT_TRUE(ds.ok()) << ds.status().message();
  const teller::eval::GcnInput input = teller::eval::MakeGcnInput(*ds);
  std::map<uint64_t, uint32_t> step_of_seq;
  for (uint32_t u = 0; u < ds->units.size(); ++u)
    step_of_seq[ds->units[u].seq] = input.StepOf(*ds, u);
  std::vector<uint32_t> asked;
  for (const auto& [seq, step] : step_of_seq) asked.push_back(step);
  auto out = m->Predict(input.corpus, asked);
  ASSERT_TRUE(out.ok()) << out.status().message();
  std::map<uint64_t, teller::rca::StepOutput> expected;
  size_t k = 0;
  for (const auto& [seq, step] : step_of_seq) expected[seq] = (*out)[k++];

  // Each step object of the report: "step", then its verdicts, in that order.
  size_t at = report.find("\"steps\":[");
  size_t compared = 0, abnormal = 0;
  while (true) {
    size_t from = at;
    const std::string step = JsonValueAfter(report, "step", &from);
    if (from == std::string::npos || report.find("\"top_operators\"", at) < from) break;
    const std::string is_abnormal = JsonValueAfter(report, "abnormal", &from);
    const std::string fault = JsonValueAfter(report, "fault_type", &from);
    const std::string explanation = JsonValueAfter(report, "explanation", &from);
    const std::string rule = JsonValueAfter(report, "rule_fault_type", &from);
    const double pv = std::stod(JsonValueAfter(report, "vertical", &from));
    const double ph = std::stod(JsonValueAfter(report, "horizontal", &from));
    const std::string model_fault = JsonValueAfter(report, "fault_type", &from);
    at = from;
    const auto e = expected.find(std::stoull(step));
    ASSERT_NE(e, expected.end()) << "step " << step;
    EXPECT_NEAR(pv, e->second.abnormal[0], 1e-5) << "step " << step;
    EXPECT_NEAR(ph, e->second.abnormal[1], 1e-5) << "step " << step;
    const std::string want(teller::FaultCategoryName(e->second.Fault(m->fault_classes())));
    EXPECT_EQ(model_fault, want) << "step " << step;
    if (is_abnormal == "true") {
      ++abnormal;
      EXPECT_EQ(fault, want) << "step " << step;
      // The sentence names the rules' category, and then whose the fault type is.
      EXPECT_NE(explanation.find("Likely " + rule + ": "), std::string::npos) << explanation;
      EXPECT_NE(explanation.find("The learned model (gcn) names " + want + " (probability "),
                std::string::npos)
          << explanation;
      teller::FaultCategory c;
      EXPECT_TRUE(teller::ParseFaultCategory(rule, &c)) << "step " << step << ": " << rule;
    } else {
      EXPECT_EQ(fault, "null") << "step " << step;
      EXPECT_EQ(rule, "null") << "step " << step;
    }
    ++compared;
  }
  EXPECT_EQ(compared, step_of_seq.size());
  EXPECT_GT(abnormal, 0u);

  // The evidence head's operators: per step and view those at P >= 0.5, at most 5, highest
  // first, named and ranked as the dataset's record has them (probabilities to 1e-5: the
  // report writes 6 digits).
  using Listed = std::map<std::string, std::vector<double>>;  // "seq view rank name" -> P
  Listed want_evidence, got_evidence;
  for (const auto& [seq, step] : step_of_seq) {
    const teller::format::DatasetColumns& c = *input.corpus.steps[step].columns;
    const std::vector<std::string>& names = *input.corpus.names[input.corpus.steps[step].setting];
    for (int v = 0; v < 2; ++v) {
      size_t listed = 0;
      for (const auto& [node, p] : expected[seq].evidence[v]) {
        if (p < 0.5f || listed == 5) break;
        want_evidence[std::to_string(seq) + (v == 0 ? " vertical " : " horizontal ") +
                      std::to_string(c.rank[node]) + " " + names[c.name[node]]]
            .push_back(p);
        ++listed;
      }
    }
  }
  const std::string listed = tmp_ + "/diag-evidence.txt";
  const std::string extract =
      "python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))\n"
      "for s in d[\"steps\"]:\n"
      "  for e in (s[\"model\"] or {}).get(\"evidence\", []):\n"
      "    print(\"%.9f\" % e[\"probability\"], s[\"step\"], e[\"view\"], e[\"rank\"], "
      "e[\"name\"])' '" +
      json + "' > '" + listed + "'";
  ASSERT_EQ(std::system(extract.c_str()), 0) << extract;
  std::istringstream lines(ReadText(listed));
  for (std::string line; std::getline(lines, line);) {
    const size_t space = line.find(' ');
    got_evidence[line.substr(space + 1)].push_back(std::stod(line.substr(0, space)));
  }
  EXPECT_FALSE(want_evidence.empty());
  ASSERT_EQ(got_evidence.size(), want_evidence.size());
  for (auto& [key, want] : want_evidence) {
    std::vector<double>& got = got_evidence[key];
    ASSERT_EQ(got.size(), want.size()) << key;
    std::sort(got.begin(), got.end());
    std::sort(want.begin(), want.end());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << key;
  }
  const std::string validate =
      "python3 -c 'import json, sys, jsonschema; "
      "jsonschema.validate(json.load(open(sys.argv[1])), json.load(open(sys.argv[2])))' '" +
      json + "' '" TELLER_SOURCE_DIR "/docs/diagnosis.schema.json'";
  EXPECT_EQ(std::system(validate.c_str()), 0) << validate;

  const Outcome missing =
      Run("diagnose '" + tmp_ + "/raw/vllm-v1-online' --model '" + tmp_ + "/no-model'");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("--model " + tmp_ + "/no-model"), std::string::npos) << missing.err;
}

// The TPE-vocabulary ablation: "teller-gcn@V" trains the trace encoder on a vocabulary of V
// tokens. At 64 (little more than the base alphabet) the tokens differ from the default's,
// so the predictions do; at the same size they are the same.
TEST_F(TrainCliTest, EvalOfTellerGcnTrainsTheVocabularyItNames) {
  auto predictions = [&](const std::string& method) {
    const std::string file = tmp_ + "/vocab-" + method + ".jsonl";
    const Outcome o =
        Run("eval --data " + Ds() + " --method " + method +
            " --split request --seed 3 --epochs 2 -q --write-predictions '" + file + "'");
    EXPECT_EQ(o.exit_code, 0) << o.err;
    return ReadText(file);
  };
  const std::string small = predictions("teller-gcn@64");
  ASSERT_FALSE(small.empty());
  EXPECT_NE(small, predictions("teller-gcn"));
  EXPECT_EQ(predictions("teller-gcn"), predictions("teller-gcn@256"));
  const Outcome table = Run("eval --data " + Ds() + " --method teller-gcn@64 --split request " +
                            "--seed 3 --epochs 1 -q");
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("Teller (trace encoder, vocab 64)"), std::string::npos) << table.out;
}

// `--variant mot`: the MoT's model directory holds its word vocabulary, and it loads.
TEST_F(TrainCliTest, TrainTheMot) {
  const Outcome t =
      Run("train --data " + Ds() + " --out '" + tmp_ + "/mot' --variant mot --epochs 2 --width 32");
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_NE(t.err.find("teller train: mot, "), std::string::npos) << t.err;
  EXPECT_NE(t.err.find("epoch 2/2: loss "), std::string::npos) << t.err;
  EXPECT_NE(t.out.find("ms per unit"), std::string::npos) << t.out;
  const std::string json = ReadText(tmp_ + "/mot/model.json");
  EXPECT_NE(json.find("\"network\":\"mot\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"width\":32"), std::string::npos) << json;
  EXPECT_NE(ReadText(tmp_ + "/mot/text.json").find("\"format\":\"teller-rca-text\""),
            std::string::npos);
  auto m = teller::rca::Model::Load(tmp_ + "/mot");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->config().variant, teller::rca::Variant::kMot);
}

// `--variant single`: the single stream's model directory holds its word vocabulary and
// its trace budget, it loads, and `teller diagnose --model` reads the trace's steps and
// their log lines with it, naming it in the text and the JSON.
TEST_F(TrainCliTest, TrainTheSingleStreamAndDiagnoseWithIt) {
  const std::string model = tmp_ + "/single";
  const Outcome t =
      Run("train --data " + Ds() + " --out '" + model + "' --variant single --epochs 1 --width 32");
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_NE(t.err.find("teller train: single, "), std::string::npos) << t.err;
  EXPECT_NE(t.out.find("ms per unit"), std::string::npos) << t.out;
  const std::string json = ReadText(model + "/model.json");
  EXPECT_NE(json.find("\"network\":\"single-stream\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"max_trace_tokens\":192"), std::string::npos) << json;
  EXPECT_NE(ReadText(model + "/text.json").find("\"format\":\"teller-rca-text\""),
            std::string::npos);
  auto m = teller::rca::Model::Load(model);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->config().variant, teller::rca::Variant::kSingle);
  const std::string report = tmp_ + "/single-diag.json";
  const Outcome d = Run("diagnose '" + tmp_ + "/raw/vllm-v1-online' --model '" + model +
                        "' --json '" + report + "'");
  ASSERT_EQ(d.exit_code, 0) << d.err;
  EXPECT_NE(d.out.find("learned model " + model + " (single): read "), std::string::npos) << d.out;
  EXPECT_NE(ReadText(report).find("\"model\":{\"path\":\"" + model + "\",\"network\":\"single\""),
            std::string::npos);
  // The report with the single stream's verdicts keeps to the published schema.
  const std::string validate =
      "python3 -c 'import json, sys, jsonschema; "
      "jsonschema.validate(json.load(open(sys.argv[1])), json.load(open(sys.argv[2])))' '" +
      report + "' '" TELLER_SOURCE_DIR "/docs/diagnosis.schema.json'";
  EXPECT_EQ(std::system(validate.c_str()), 0) << validate;
}

// teller-mot in eval: trained per fold, it explains its alarms (BLEU-1 above 0, where the
// trace encoder's is 0), and the same seed gives the same scores.
TEST_F(TrainCliTest, EvalOfTellerMotExplains) {
  const std::string preds = "'" + tmp_ + "/mot.jsonl'";
  const Outcome a = Run("eval --data " + Ds() +
                        " --method teller-mot --split request --seed 3 --epochs 4 --json -q "
                        "--write-predictions " +
                        preds);
  ASSERT_EQ(a.exit_code, 0) << a.err;
  const Outcome again = Run("eval --data " + Ds() + " --predictions " + preds +
                            " --split request --seed 3 --json -q");
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(a.out, again.out);
  const std::string lines = ReadText(tmp_ + "/mot.jsonl");
  size_t at = 0, explained = 0;
  while ((at = lines.find("\"explanation\":\"", at)) != std::string::npos) {
    at += 15;
    const std::string text = lines.substr(at, lines.find('"', at) - at);
    explained += !text.empty();
  }
  EXPECT_GT(explained, 0u) << lines.substr(0, 2000);
  // BLEU-1 of some view is above 0: the fourth column from the end of Table 2's rows.
  const Outcome table =
      Run("eval --data " + Ds() + " --predictions " + preds + " --split request --seed 3 -q");
  ASSERT_EQ(table.exit_code, 0) << table.err;
  bool positive = false;
  std::istringstream rows(table.out);
  for (std::string row; std::getline(rows, row);) {
    if (row.find(" | ") == std::string::npos || row.rfind("method", 0) == 0 || row[0] == ' ')
      continue;
    std::istringstream cells(row.substr(row.rfind('|') + 1));
    double bleu1 = 0;
    if (cells >> bleu1) positive |= bleu1 > 0;
  }
  EXPECT_TRUE(positive) << table.out;
}

}  // namespace
