// The MoT (Variant::kMot, docs/rca.md "MoT") on the toy step records of toy_steps.h with log
// lines and one explanation sentence per fault type: a tiny model's loss falls, it
// classifies fresh units from the trace (the logs alike for all) and from the logs (the
// traces alike for all), generates each fault type's own sentence, keeps its explanations
// to the schema, is deterministic for a seed and survives its model file.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "teller/rca/rca.h"
#include "tests/rca/toy_text.h"

namespace teller::rca {
namespace {

TrainOptions MotOptions(uint64_t seed) { return TextToyOptions(Variant::kMot, seed); }

TEST(MotWithoutTorch, TrainingIsAClearError) {
  if (Available()) GTEST_SKIP() << "built with libtorch";
  Toy toy;
  MakeTextToy(toy, 10, 1, false);
  auto m = Model::Train(toy.corpus, toy.samples, MotOptions(1));
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("libtorch"), std::string::npos) << m.status().message();
}

class MotTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!Available()) GTEST_SKIP() << "built without libtorch";
  }
};

// The faults are in the traces, the logs alike: the trace stream carries the decision and
// selects the sentence.
TEST_F(MotTest, LearnsFromTheTraceAndWritesEachFaultsSentence) {
  Toy train, test;
  MakeTextToy(train, 60, 1, false);
  MakeTextToy(test, 40, 2, false);
  // 50 epochs: the toy is learnt by 40 whichever BLAS kernels libtorch's OpenBLAS
  // picks for the processor (its Haswell kernels on AMD EPYC, SkylakeX on Intel with
  // AVX-512, which round differently), so the result does not hang on the machine.
  TrainOptions o = MotOptions(7);
  o.epochs = 50;
  auto m = Model::Train(train.corpus, train.samples, o);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->config().variant, Variant::kMot);
  const std::vector<double>& loss = m->training().epoch_loss;
  ASSERT_EQ(loss.size(), 50u);
  EXPECT_LT(loss.back(), 0.25 * loss.front()) << "loss " << loss.front() << " -> " << loss.back();
  const Scores sc = Score(*m, test);
  EXPECT_EQ(sc.right, 40);
  EXPECT_EQ(sc.faults, 16);
  EXPECT_EQ(sc.faults_right, 16);
  EXPECT_EQ(sc.sentences_right, 16);
}

// The traces alike, the faults in the log lines: the log stream reaches the heads (the
// condition of trace and log tokens is seen whole by the trace stream).
// The MoT's evidence head, on the encoder's token vectors: as the trace encoder's (rca_test),
// the slowed GEMM in a layer drawn per step, the same log lines for all.
TEST_F(MotTest, TheEvidenceHeadFindsTheSlowedKernel) {
  Toy train, test;
  MakeToy(train, 80, 5, true);
  MakeToy(test, 40, 6, true);
  for (Toy* t : {&train, &test}) {
    for (Sample& s : t->samples) s.logs = kRoutineLines;
  }
  TrainOptions o = MotOptions(9);
  o.epochs = 40;
  auto m = Model::Train(train.corpus, train.samples, o);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_TRUE(m->config().evidence_head);
  auto out = m->Predict(test.corpus, Queries(test));
  ASSERT_TRUE(out.ok()) << out.status().message();
  ExpectEvidenceOnTheSlowedKernels(test, *out);
}

TEST_F(MotTest, LearnsFromTheLogLines) {
  Toy train, test;
  MakeTextToy(train, 60, 3, true);
  MakeTextToy(test, 40, 4, true);
  auto m = Model::Train(train.corpus, train.samples, MotOptions(8));
  ASSERT_TRUE(m.ok()) << m.status().message();
  const Scores sc = Score(*m, test);
  EXPECT_EQ(sc.right, 40);
  EXPECT_EQ(sc.faults, 16);
  EXPECT_EQ(sc.faults_right, 16);
  EXPECT_EQ(sc.sentences_right, 16);
}

// The modality ablation (Table 5): a MoT without one stream never reads it, and still
// learns from the other. Exact invariances: the trace-only model's outputs are the same
// with the queries' logs removed; the log-only model's are the same with every query
// pointed at another step's trace. And each learns the faults of the stream it keeps:
// the log-only model the faults only the log lines show (16 of 16 test faults), the
// trace-only model those only the traces show.
TEST_F(MotTest, AStreamLeftOutIsNotRead) {
  Toy by_logs, by_logs_test, by_trace, by_trace_test;
  MakeTextToy(by_logs, 60, 3, true);
  MakeTextToy(by_logs_test, 40, 4, true);
  MakeTextToy(by_trace, 60, 1, false);
  MakeTextToy(by_trace_test, 40, 2, false);
  auto faults_right = [](const Model& m, const Toy& test, const std::vector<Query>& q) {
    auto out = m.Predict(test.corpus, q);
    EXPECT_TRUE(out.ok()) << out.status().message();
    int right = 0;
    for (size_t i = 0; out.ok() && i < out->size(); ++i) {
      const int fault = test.samples[i].fault;
      right += fault >= 0 && static_cast<int>((*out)[i].Fault(m.fault_classes())) == fault;
    }
    return right;
  };
  auto same = [](const Result<std::vector<StepOutput>>& a,
                 const Result<std::vector<StepOutput>>& b) {
    ASSERT_TRUE(a.ok() && b.ok());
    const std::vector<StepOutput>& x = a.value();
    const std::vector<StepOutput>& y = b.value();
    ASSERT_EQ(x.size(), y.size());
    for (size_t i = 0; i < x.size(); ++i) {
      EXPECT_EQ(x[i].abnormal, y[i].abnormal) << i;
      EXPECT_EQ(x[i].fault, y[i].fault) << i;
      EXPECT_EQ(x[i].explanation, y[i].explanation) << i;
    }
  };
  TrainOptions no_trace = MotOptions(8);
  no_trace.config.trace_stream = false;
  auto log_only = Model::Train(by_logs.corpus, by_logs.samples, no_trace);
  ASSERT_TRUE(log_only.ok()) << log_only.status().message();
  EXPECT_EQ(faults_right(*log_only, by_logs_test, Queries(by_logs_test)), 16);
  std::vector<Query> other_steps = Queries(by_logs_test);
  for (size_t i = 0; i < other_steps.size(); ++i)
    other_steps[i].step = static_cast<uint32_t>((i + 7) % other_steps.size());
  same(log_only->Predict(by_logs_test.corpus, Queries(by_logs_test)),
       log_only->Predict(by_logs_test.corpus, other_steps));

  TrainOptions no_log = MotOptions(7);
  no_log.config.log_stream = false;
  auto trace_only = Model::Train(by_trace.corpus, by_trace.samples, no_log);
  ASSERT_TRUE(trace_only.ok()) << trace_only.status().message();
  const std::vector<Query> with_logs = Queries(by_trace_test);
  EXPECT_EQ(
      faults_right(*trace_only, by_trace_test, with_logs),
      static_cast<int>(std::count_if(by_trace_test.samples.begin(), by_trace_test.samples.end(),
                                     [](const Sample& x) { return x.fault >= 0; })));
  std::vector<Query> no_lines = with_logs;
  for (Query& q : no_lines) q.logs = nullptr;
  same(trace_only->Predict(by_trace_test.corpus, with_logs),
       trace_only->Predict(by_trace_test.corpus, no_lines));

  // The switches survive the model file; a model reading neither stream is refused.
  const std::string dir = TempDir();
  ASSERT_TRUE(trace_only->Save(dir + "/m", {}).ok());
  auto loaded = Model::Load(dir + "/m");
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_TRUE(loaded->config().trace_stream);
  EXPECT_FALSE(loaded->config().log_stream);
  std::system(("rm -rf '" + dir + "'").c_str());
  TrainOptions neither = MotOptions(7);
  neither.config.trace_stream = neither.config.log_stream = false;
  EXPECT_FALSE(Model::Train(by_trace.corpus, by_trace.samples, neither).ok());
}

// Every explanation, of normal units too (never trained to explain), is made of words of
// the training texts seen at least twice, and no longer than max_explanation_tokens.
TEST_F(MotTest, ExplanationsKeepToTheSchema) {
  Toy train;
  MakeTextToy(train, 30, 5, false);
  TrainOptions o = MotOptions(9);
  o.epochs = 3;
  o.config.max_explanation_tokens = 4;
  auto m = Model::Train(train.corpus, train.samples, o);
  ASSERT_TRUE(m.ok()) << m.status().message();
  std::set<std::string> known;
  for (const std::string& text : {kGemmSentence, kAllReduceSentence}) {
    for (const std::string& w : Words(text)) known.insert(w);
  }
  for (const std::string& line : kRoutineLines) {
    for (const std::string& w : Words(line)) known.insert(w);
  }
  auto out = m->Predict(train.corpus, Queries(train));
  ASSERT_TRUE(out.ok()) << out.status().message();
  for (size_t i = 0; i < out->size(); ++i) {
    const std::vector<std::string> words = Words((*out)[i].explanation);
    EXPECT_LE(words.size(), 4u) << (*out)[i].explanation;
    for (const std::string& w : words) EXPECT_TRUE(known.count(w)) << "unit " << i << ": " << w;
    // Words joined by one space, nothing around them.
    std::string joined;
    for (const std::string& w : words) joined += (joined.empty() ? "" : " ") + w;
    EXPECT_EQ((*out)[i].explanation, joined);
    const FaultCategory f = (*out)[i].Fault(m->fault_classes());
    EXPECT_TRUE(f == FaultCategory::kCudaKernel || f == FaultCategory::kCommunication);
  }
  // Without log lines (a query that has none) the model still answers.
  auto bare = m->Predict(train.corpus, std::vector<uint32_t>{0, 1});
  ASSERT_TRUE(bare.ok()) << bare.status().message();
  EXPECT_EQ(bare->size(), 2u);
}

// Same seed: the same weights byte for byte, losses and explanations; another seed: other
// weights and outputs.
TEST_F(MotTest, SameSeedSameModel) {
  Toy toy;
  MakeTextToy(toy, 30, 6, false);
  TrainOptions o = MotOptions(11);
  o.epochs = 4;
  auto a = Model::Train(toy.corpus, toy.samples, o);
  auto b = Model::Train(toy.corpus, toy.samples, o);
  o.seed = 12;
  auto c = Model::Train(toy.corpus, toy.samples, o);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(a->training().epoch_loss, b->training().epoch_loss);
  auto pa = a->Predict(toy.corpus, Queries(toy));
  auto pb = b->Predict(toy.corpus, Queries(toy));
  auto pc = c->Predict(toy.corpus, Queries(toy));
  ASSERT_TRUE(pa.ok() && pb.ok() && pc.ok());
  bool differs = false;
  for (size_t i = 0; i < pa->size(); ++i) {
    EXPECT_EQ((*pa)[i].abnormal, (*pb)[i].abnormal) << i;
    EXPECT_EQ((*pa)[i].fault, (*pb)[i].fault) << i;
    EXPECT_EQ((*pa)[i].explanation, (*pb)[i].explanation) << i;
    differs |= (*pa)[i].abnormal != (*pc)[i].abnormal;
  }
  EXPECT_TRUE(differs) << "another seed gave the same outputs";
  const std::string dir = TempDir();
  ASSERT_TRUE(a->Save(dir + "/a", {}).ok());
  ASSERT_TRUE(b->Save(dir + "/b", {}).ok());
  ASSERT_TRUE(c->Save(dir + "/c", {}).ok());
  EXPECT_EQ(Slurp(dir + "/a/weights.pt"), Slurp(dir + "/b/weights.pt"));
  EXPECT_NE(Slurp(dir + "/a/weights.pt"), Slurp(dir + "/c/weights.pt"));
  EXPECT_EQ(Slurp(dir + "/a/text.json"), Slurp(dir + "/b/text.json"));
  std::system(("rm -rf '" + dir + "'").c_str());
}

// Saved and loaded: the same config, outputs and explanations; a damaged text.json, a MoT
// that claims model version 1 (which knew no MoT) and a missing text entry are refused.
TEST_F(MotTest, ModelFileRoundTrip) {
  Toy toy;
  MakeTextToy(toy, 20, 7, false);
  TrainOptions o = MotOptions(5);
  o.epochs = 3;
  auto m = Model::Train(toy.corpus, toy.samples, o);
  ASSERT_TRUE(m.ok()) << m.status().message();
  const std::string dir = TempDir();
  ASSERT_TRUE(m->Save(dir + "/m", {}).ok());
  auto loaded = Model::Load(dir + "/m");
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ(loaded->config().variant, Variant::kMot);
  EXPECT_EQ(loaded->config().mot_layers, 1);
  EXPECT_EQ(loaded->config().heads, 2);
  EXPECT_EQ(loaded->config().max_ranks, 2);
  EXPECT_EQ(loaded->config().max_log_tokens, 32);
  EXPECT_EQ(loaded->config().max_explanation_tokens, 24);
  auto a = m->Predict(toy.corpus, Queries(toy));
  auto b = loaded->Predict(toy.corpus, Queries(toy));
  ASSERT_TRUE(a.ok() && b.ok());
  for (size_t i = 0; i < a->size(); ++i) {
    EXPECT_EQ((*a)[i].abnormal, (*b)[i].abnormal) << i;
    EXPECT_EQ((*a)[i].fault, (*b)[i].fault) << i;
    EXPECT_EQ((*a)[i].explanation, (*b)[i].explanation) << i;
  }

  const std::string text = Slurp(dir + "/m/text.json");
  ASSERT_GT(text.size(), 40u);
  std::string damaged = text;
  damaged[damaged.size() / 2] = static_cast<char>(damaged[damaged.size() / 2] ^ 0x20);
  Spit(dir + "/m/text.json", damaged);
  auto e = Model::Load(dir + "/m");
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("text.json"), std::string::npos) << e.status().message();
  EXPECT_NE(e.status().message().find("checksum"), std::string::npos) << e.status().message();
  Spit(dir + "/m/text.json", text);

  const std::string json = Slurp(dir + "/m/model.json");
  std::string v1 = json;
  v1.replace(v1.find("\"version\":2"), 11, "\"version\":1");
  Spit(dir + "/m/model.json", v1);
  e = Model::Load(dir + "/m");
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("unknown network \"mot\" in a version 1 model"),
            std::string::npos)
      << e.status().message();

  std::string no_text = json;
  const size_t at = no_text.find(",\"text\":{");
  ASSERT_NE(at, std::string::npos);
  no_text.erase(at, no_text.find('}', at) + 1 - at);
  Spit(dir + "/m/model.json", no_text);
  e = Model::Load(dir + "/m");
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("missing field \"text\""), std::string::npos)
      << e.status().message();

  Spit(dir + "/m/model.json", json);
  EXPECT_TRUE(Model::Load(dir + "/m").ok());
  std::system(("rm -rf '" + dir + "'").c_str());
}

// A config the network cannot be built with is refused before training.
TEST_F(MotTest, HeadsMustDivideTheWidth) {
  Toy toy;
  MakeTextToy(toy, 10, 8, false);
  TrainOptions o = MotOptions(1);
  o.config.heads = 3;
  auto m = Model::Train(toy.corpus, toy.samples, o);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("heads must divide width"), std::string::npos)
      << m.status().message();
}

}  // namespace
}  // namespace teller::rca
