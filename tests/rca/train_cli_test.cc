// `teller train` and `teller eval --method teller-gcn|teller-mot` on a small simulated dataset
// (`teller simulate` + `teller dataset build`, as tests/eval builds its own).
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

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
  o = Run("train --data " + Ds() + " --out '" + tmp_ + "/m2' --variant single");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("--variant is gcn or mot, got 'single'"), std::string::npos) << o.err;
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
