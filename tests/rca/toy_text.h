// The toy set with text, shared by the tests of the networks that read logs and write
// explanations (the MoT, the single stream): the step records of toy_steps.h with log lines
// and one explanation sentence per fault type, and what those tests share beyond toy_steps.h.
#ifndef TELLER_TESTS_RCA_TOY_TEXT_H_
#define TELLER_TESTS_RCA_TOY_TEXT_H_

#include <gtest/gtest.h>

#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "teller/rca/rca.h"
#include "tests/rca/toy_steps.h"

namespace teller::rca {

// The reference sentences: shared words ("Step", "Fault:") so that the model must choose
// by what it read, not by the first word.
inline const std::string kGemmSentence =
    "Step slow: GEMM kernels on rank 0 run 10x longer than in other steps. Fault: cuda_kernel "
    "(slow kernel).";
inline const std::string kAllReduceSentence =
    "Step slow: the all-reduce kernel waits 37x longer for a late peer. Fault: communication "
    "(straggler rank).";

// Log lines every unit has (the trace-separable set) and those that mark a fault (the
// log-separable set).
inline const std::vector<std::string> kRoutineLines = {"INFO decode batch running <*> requests",
                                                       "INFO <*> tokens generated"};
inline const std::string kKernelErrorLine =
    "ERROR CUDA error: an illegal memory access was encountered";
inline const std::string kTimeoutLine = "WARNING NCCL watchdog: collective operation timed out";

inline const std::string& SentenceOf(Kind k) {
  return k == Kind::kSlowGemm ? kGemmSentence : kAllReduceSentence;
}

// The toy set with text. by_logs: every trace is normal (Kind::kNormal) and the labels come
// from the log lines; otherwise the traces carry the faults and the logs are alike.
inline void MakeTextToy(Toy& toy, int n, uint64_t seed, bool by_logs) {
  MakeToy(toy, n, seed);
  if (by_logs) {
    std::mt19937_64 rng(seed + 1000);
    toy.records.clear();
    for (int i = 0; i < n; ++i) toy.records.push_back(MakeStep(Kind::kNormal, rng));
    toy.corpus.steps.clear();
    for (const auto& r : toy.records) toy.corpus.steps.push_back({0, &r});
  }
  for (int i = 0; i < n; ++i) {
    Sample& s = toy.samples[i];
    const Kind k = toy.kinds[i];
    s.logs = kRoutineLines;
    if (by_logs && k == Kind::kSlowGemm) s.logs.insert(s.logs.begin() + 1, kKernelErrorLine);
    if (by_logs && k == Kind::kSlowAllReduce) s.logs.push_back(kTimeoutLine);
    if (by_logs) s.nodes = {};  // no operator is slower
    if (k != Kind::kNormal) s.explanation = SentenceOf(k);
  }
}

// A tiny text model's options for the toy set: ToyOptions with two heads, 128 words, one
// layer and 30 epochs (the tests change what their variant needs).
inline TrainOptions TextToyOptions(Variant variant, uint64_t seed) {
  TrainOptions o = ToyOptions(seed);
  o.config.variant = variant;
  o.config.mot_layers = 1;
  o.config.heads = 2;
  o.config.text_vocab = 128;
  o.config.max_ranks = 2;
  o.config.max_log_tokens = 32;
  o.config.max_explanation_tokens = 24;
  o.epochs = 30;
  return o;
}

inline std::vector<Query> Queries(const Toy& toy) {
  std::vector<Query> out;
  for (uint32_t i = 0; i < toy.samples.size(); ++i) out.push_back({i, &toy.samples[i].logs});
  return out;
}

inline std::vector<std::string> Words(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// Scores of a model on a fresh set: units whose both views are right, abnormal units whose
// fault type is right, abnormal units whose explanation is exactly their kind's sentence.
struct Scores {
  int right = 0, faults = 0, faults_right = 0, sentences_right = 0;
};
inline Scores Score(const Model& m, const Toy& test) {
  auto out = m.Predict(test.corpus, Queries(test));
  EXPECT_TRUE(out.ok()) << out.status().message();
  Scores sc;
  if (!out.ok()) return sc;
  EXPECT_EQ(out->size(), test.samples.size());
  for (size_t i = 0; i < out->size(); ++i) {
    const Sample& s = test.samples[i];
    const StepOutput& o = (*out)[i];
    sc.right += (o.abnormal[0] > 0.5f) == s.abnormal[0] && (o.abnormal[1] > 0.5f) == s.abnormal[1];
    if (s.fault < 0) continue;
    ++sc.faults;
    sc.faults_right += static_cast<int>(o.Fault(m.fault_classes())) == s.fault;
    sc.sentences_right += o.explanation == s.explanation;
    EXPECT_EQ(o.explanation, s.explanation) << "unit " << i;
  }
  return sc;
}

}  // namespace teller::rca

#endif  // TELLER_TESTS_RCA_TOY_TEXT_H_
