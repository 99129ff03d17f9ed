// The metrics of docs/method.md §8 against hand-computed cases, including the empty-empty
// rule and degenerate inputs.
#include "teller/eval/metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>
#include <vector>

namespace teller::eval {
namespace {

TEST(StepMetricsTest, HandComputed) {
  // labels:    1 1 1 0 0 0 0 1
  // predicted: 1 0 1 1 0 0 0 1   -> tp 3, fn 1, fp 1, tn 3
  BinaryCounts c;
  const int labels[] = {1, 1, 1, 0, 0, 0, 0, 1};
  const int predicted[] = {1, 0, 1, 1, 0, 0, 0, 1};
  for (int i = 0; i < 8; ++i) c.Add(labels[i], predicted[i]);
  EXPECT_EQ(c.tp, 3u);
  EXPECT_EQ(c.fn, 1u);
  EXPECT_EQ(c.fp, 1u);
  EXPECT_EQ(c.tn, 3u);
  const StepMetrics m = ComputeStepMetrics(c);
  EXPECT_DOUBLE_EQ(m.accuracy, 6.0 / 8);
  EXPECT_DOUBLE_EQ(m.precision, 3.0 / 4);
  EXPECT_DOUBLE_EQ(m.recall, 3.0 / 4);
  EXPECT_DOUBLE_EQ(m.f1, 0.75);
  EXPECT_EQ(m.steps, 8u);
  EXPECT_EQ(m.positives, 4u);
  EXPECT_EQ(m.predicted_positives, 4u);
}

TEST(StepMetricsTest, Degenerate) {
  // Nothing at all.
  StepMetrics m = ComputeStepMetrics({});
  EXPECT_EQ(m.accuracy, 0);
  EXPECT_EQ(m.f1, 0);
  // No positives, all predicted normal: accuracy 1, precision/recall/F1 0.
  BinaryCounts c;
  for (int i = 0; i < 5; ++i) c.Add(false, false);
  m = ComputeStepMetrics(c);
  EXPECT_DOUBLE_EQ(m.accuracy, 1);
  EXPECT_EQ(m.precision, 0);
  EXPECT_EQ(m.recall, 0);
  EXPECT_EQ(m.f1, 0);
  // All positives, all predicted abnormal.
  BinaryCounts all;
  for (int i = 0; i < 5; ++i) all.Add(true, true);
  m = ComputeStepMetrics(all);
  EXPECT_DOUBLE_EQ(m.accuracy, 1);
  EXPECT_DOUBLE_EQ(m.precision, 1);
  EXPECT_DOUBLE_EQ(m.recall, 1);
  EXPECT_DOUBLE_EQ(m.f1, 1);
  // All positives, none found.
  BinaryCounts miss;
  for (int i = 0; i < 3; ++i) miss.Add(true, false);
  m = ComputeStepMetrics(miss);
  EXPECT_EQ(m.accuracy, 0);
  EXPECT_EQ(m.precision, 0);
  EXPECT_EQ(m.f1, 0);
}

TEST(SetScoresTest, HandComputed) {
  // P = {1,2,3,4}, O = {3,4,5}: common 2, precision 1/2, recall 2/3, F1 4/7, J 2/5.
  const std::vector<uint32_t> p = {4, 2, 1, 3}, o = {5, 3, 4};
  const SetScores s = ScoreSets(p, o);
  EXPECT_DOUBLE_EQ(s.precision, 0.5);
  EXPECT_DOUBLE_EQ(s.recall, 2.0 / 3);
  EXPECT_DOUBLE_EQ(s.f1, 4.0 / 7);
  EXPECT_DOUBLE_EQ(s.jaccard, 0.4);
}

TEST(SetScoresTest, EmptyEmptyRule) {
  const SetScores s = ScoreSets({}, {});
  EXPECT_EQ(s.f1, 1);
  EXPECT_EQ(s.jaccard, 1);
  EXPECT_EQ(s.precision, 0);
  EXPECT_EQ(s.recall, 0);
}

TEST(SetScoresTest, OneSideEmptyAndDuplicates) {
  const std::vector<uint32_t> some = {7, 7, 8};
  SetScores s = ScoreSets(some, {});
  EXPECT_EQ(s.precision, 0);
  EXPECT_EQ(s.recall, 0);
  EXPECT_EQ(s.f1, 0);
  EXPECT_EQ(s.jaccard, 0);
  s = ScoreSets({}, some);
  EXPECT_EQ(s.f1, 0);
  EXPECT_EQ(s.jaccard, 0);
  // Duplicates count once: {7,8} against {7}: P 1/2, R 1, F1 2/3, J 1/2.
  const std::vector<uint32_t> seven = {7};
  s = ScoreSets(some, seven);
  EXPECT_DOUBLE_EQ(s.precision, 0.5);
  EXPECT_DOUBLE_EQ(s.recall, 1);
  EXPECT_DOUBLE_EQ(s.f1, 2.0 / 3);
  EXPECT_DOUBLE_EQ(s.jaccard, 0.5);
}

TEST(OperatorAccumulatorTest, MacroAndMacroPlus) {
  OperatorAccumulator acc;
  const std::vector<uint32_t> a = {1, 2}, b = {2, 3}, c = {9};
  acc.Add({}, {});  // normal step predicted normal: f = j = 1, p = r = 0
  acc.Add(a, b);    // p = r = f = 1/2, j = 1/3
  acc.Add({}, c);   // missed: all 0
  acc.Add(c, {});   // false evidence on a normal step: all 0; not in Macro+
  const OperatorMetrics m = acc.Finish();
  EXPECT_EQ(m.macro.steps, 4u);
  EXPECT_DOUBLE_EQ(m.macro.precision, 0.5 / 4);
  EXPECT_DOUBLE_EQ(m.macro.recall, 0.5 / 4);
  EXPECT_DOUBLE_EQ(m.macro.f1, 1.5 / 4);
  EXPECT_DOUBLE_EQ(m.macro.jaccard, (1 + 1.0 / 3) / 4);
  EXPECT_EQ(m.macro_plus.steps, 2u);
  EXPECT_DOUBLE_EQ(m.macro_plus.precision, 0.25);
  EXPECT_DOUBLE_EQ(m.macro_plus.f1, 0.25);
  EXPECT_DOUBLE_EQ(m.macro_plus.jaccard, 1.0 / 6);
}

// Macro+ as detection recall x F1 on the detected steps. Four labelled steps:
// detected {1,2} vs {1,2} (f 1), detected {1,3} vs {1,2} (f 1/2), detected with no nodes
// vs {5} (f 0), missed vs {7} (f 0); one normal step predicted normal (not in Macro+).
// Macro+ F1 = 1.5 / 4; detection recall 3/4; F1 on detected 1.5 / 3 = 1/2; and
// 3/4 x 1/2 = 1.5 / 4.
TEST(OperatorAccumulatorTest, MacroPlusIsDetectionRecallTimesDetectedF1) {
  OperatorAccumulator acc;
  const std::vector<uint32_t> o12 = {1, 2}, p13 = {1, 3}, o5 = {5}, o7 = {7};
  acc.Add(o12, o12, true);
  acc.Add(p13, o12, true);
  acc.Add({}, o5, true);
  acc.Add({}, o7, false);
  acc.Add({}, {}, false);
  const OperatorMetrics m = acc.Finish();
  EXPECT_DOUBLE_EQ(m.macro_plus.f1, 1.5 / 4);
  EXPECT_DOUBLE_EQ(m.detection_recall, 0.75);
  EXPECT_EQ(m.detected.steps, 3u);
  EXPECT_DOUBLE_EQ(m.detected.f1, 0.5);
  EXPECT_DOUBLE_EQ(m.detected.precision, 1.5 / 3);
  EXPECT_DOUBLE_EQ(m.detected.jaccard, (1 + 1.0 / 3) / 3);
  EXPECT_DOUBLE_EQ(m.detection_recall * m.detected.f1, m.macro_plus.f1);
  // The two-argument form counts a non-empty prediction as detected.
  OperatorAccumulator two;
  two.Add({}, o5);
  two.Add(o12, o12);
  EXPECT_DOUBLE_EQ(two.Finish().detection_recall, 0.5);
  EXPECT_EQ(OperatorAccumulator().Finish().detection_recall, 0);
}

// Top-k on distinct keys: ranked 5 5 7 9 2 -> distinct 5 7 9 2; truth {9}: top-1 no,
// top-3 yes (5, 7, 9), top-2 no. Duplicates do not use up the k places.
TEST(RootCauseTest, TopKHitOnDistinctKeys) {
  const std::vector<uint64_t> ranked = {5, 5, 7, 9, 2}, nine = {9}, five = {5}, none = {};
  EXPECT_FALSE(TopKHit(ranked, nine, 1));
  EXPECT_FALSE(TopKHit(ranked, nine, 2));
  EXPECT_TRUE(TopKHit(ranked, nine, 3));
  EXPECT_TRUE(TopKHit(ranked, five, 1));
  EXPECT_FALSE(TopKHit(ranked, none, 3));
  EXPECT_FALSE(TopKHit(ranked, five, 0));
  // Units: hit at 1; hit at 3 only; detected but wrong; missed (ranked ignored); no truth
  // (not counted). top-1 = 1/4, top-3 = 2/4.
  RootCauseAccumulator acc;
  acc.Add(five, five, true);
  acc.Add(ranked, nine, true);
  const std::vector<uint64_t> other = {1, 2, 3, 4};
  acc.Add(other, nine, true);
  acc.Add(five, five, false);
  acc.Add(five, none, true);
  const RootCauseMetrics m = acc.Finish();
  EXPECT_EQ(m.units, 4u);
  EXPECT_DOUBLE_EQ(m.top1, 0.25);
  EXPECT_DOUBLE_EQ(m.top3, 0.5);
  EXPECT_EQ(RootCauseAccumulator().Finish().top1, 0);
}

TEST(OperatorAccumulatorTest, NoLabelledSetsGivesZeroMacroPlus) {
  OperatorAccumulator acc;
  acc.Add({}, {});
  const OperatorMetrics m = acc.Finish();
  EXPECT_EQ(m.macro_plus.steps, 0u);
  EXPECT_EQ(m.macro_plus.f1, 0);
  EXPECT_EQ(m.macro.f1, 1);
  EXPECT_EQ(OperatorAccumulator().Finish().macro.f1, 0);
}

TEST(FaultTypeMetricsTest, HandComputed) {
  const std::vector<std::string> classes = {"a", "b", "c", "d", "e"};
  // labels a a b b c ; predicted a b b "" a
  const std::vector<std::string> labels = {"a", "a", "b", "b", "c"};
  const std::vector<std::string> predicted = {"a", "b", "b", "", "a"};
  const FaultTypeMetrics m = ComputeFaultTypeMetrics(labels, predicted, classes);
  EXPECT_DOUBLE_EQ(m.accuracy, 2.0 / 5);
  // a: support 2, predicted 2, correct 1 -> P 1/2 R 1/2 F1 1/2
  // b: support 2, predicted 2, correct 1 -> P 1/2 R 1/2 F1 1/2
  // c: support 1, predicted 0            -> R 0 F1 0
  // d, e: absent from labels and predictions: not averaged.
  EXPECT_DOUBLE_EQ(m.macro_recall, (0.5 + 0.5 + 0) / 3);
  EXPECT_DOUBLE_EQ(m.macro_f1, (0.5 + 0.5 + 0) / 3);
  ASSERT_EQ(m.classes.size(), 5u);
  EXPECT_EQ(m.classes[0].support, 2u);
  EXPECT_EQ(m.classes[3].support, 0u);
}

TEST(FaultTypeMetricsTest, PredictedClassWithoutSupportCounts) {
  const std::vector<std::string> classes = {"a", "b"};
  const std::vector<std::string> labels = {"a", "a"};
  const std::vector<std::string> predicted = {"a", "b"};
  const FaultTypeMetrics m = ComputeFaultTypeMetrics(labels, predicted, classes);
  // a: P 1, R 1/2, F1 2/3; b: P 0, R 0 (no support), F1 0 -> averaged over both.
  EXPECT_DOUBLE_EQ(m.macro_recall, 0.25);
  EXPECT_DOUBLE_EQ(m.macro_f1, 1.0 / 3);
  const FaultTypeMetrics empty = ComputeFaultTypeMetrics({}, {}, classes);
  EXPECT_EQ(empty.accuracy, 0);
  EXPECT_EQ(empty.macro_f1, 0);
}

TEST(BleuTest, PerfectMatchIsOne) {
  const std::vector<std::string> c = {"the rank 4 arrived late at all_reduce"};
  const BleuScores b = CorpusBleu(c, c);
  for (int k = 0; k < 4; ++k) EXPECT_DOUBLE_EQ(b.bleu[k], 1.0) << k;
  EXPECT_DOUBLE_EQ(b.brevity_penalty, 1.0);
}

TEST(BleuTest, HandComputedWithBrevityPenalty) {
  // candidate: "a b c d"  reference: "a b c e f g"
  // p1 = 3/4, p2 = 2/3, p3 = 1/2, p4 = 0/1; c = 4, r = 6 -> BP = exp(1 - 6/4)
  const std::vector<std::string> c = {"a b  c\td"}, r = {"a b c e f g"};
  const BleuScores b = CorpusBleu(c, r);
  const double bp = std::exp(1.0 - 6.0 / 4.0);
  EXPECT_DOUBLE_EQ(b.brevity_penalty, bp);
  EXPECT_DOUBLE_EQ(b.precision[0], 0.75);
  EXPECT_DOUBLE_EQ(b.precision[1], 2.0 / 3);
  EXPECT_DOUBLE_EQ(b.precision[2], 0.5);
  EXPECT_EQ(b.precision[3], 0);
  EXPECT_NEAR(b.bleu[0], bp * 0.75, 1e-12);
  EXPECT_NEAR(b.bleu[1], bp * std::sqrt(0.75 * 2.0 / 3), 1e-12);
  EXPECT_NEAR(b.bleu[2], bp * std::cbrt(0.75 * 2.0 / 3 * 0.5), 1e-12);
  EXPECT_EQ(b.bleu[3], 0);  // no smoothing
}

TEST(BleuTest, ClippingAndCorpusSums) {
  // "the the the" vs "the cat": clipped unigram matches 1 of 3.
  // Second pair identical "x y": 2 of 2. Corpus p1 = 3/5; c = 5, r = 4 -> BP 1.
  const std::vector<std::string> c = {"the the the", "x y"}, r = {"the cat", "x y"};
  const BleuScores b = CorpusBleu(c, r);
  EXPECT_DOUBLE_EQ(b.precision[0], 0.6);
  EXPECT_DOUBLE_EQ(b.bleu[0], 0.6);
  EXPECT_DOUBLE_EQ(b.brevity_penalty, 1.0);
  EXPECT_EQ(b.candidate_tokens, 5u);
  EXPECT_EQ(b.reference_tokens, 4u);
}

TEST(BleuTest, EmptyCandidates) {
  const std::vector<std::string> c = {"", ""}, r = {"a b", "c"};
  const BleuScores b = CorpusBleu(c, r);
  EXPECT_EQ(b.bleu[0], 0);
  EXPECT_EQ(CorpusBleu({}, {}).bleu[0], 0);
}

TEST(RankingTest, AurocHandComputed) {
  // scores: pos {0.9, 0.4}, neg {0.5, 0.1}: pairs (0.9>0.5,0.9>0.1,0.4<0.5,0.4>0.1) = 3/4.
  const std::vector<double> s = {0.9, 0.5, 0.4, 0.1};
  const std::vector<uint8_t> l = {1, 0, 1, 0};
  EXPECT_DOUBLE_EQ(Auroc(s, l), 0.75);
  // AP: thresholds 0.9 (P 1, R 1/2), 0.5 (no recall gain), 0.4 (P 2/3, R 1): 1/2 + 1/3.
  EXPECT_DOUBLE_EQ(Auprc(s, l), 0.5 + 0.5 * 2.0 / 3);
}

TEST(RankingTest, TiesCountHalf) {
  // All scores equal: AUROC 0.5 whatever the order; AP = the positive rate.
  const std::vector<double> s = {1, 1, 1, 1};
  const std::vector<uint8_t> l = {1, 0, 0, 1}, l2 = {0, 1, 1, 0};
  EXPECT_DOUBLE_EQ(Auroc(s, l), 0.5);
  EXPECT_DOUBLE_EQ(Auroc(s, l2), 0.5);
  EXPECT_DOUBLE_EQ(Auprc(s, l), 0.5);
  EXPECT_DOUBLE_EQ(Auprc(s, l2), 0.5);
  // A tie between one positive and one negative above the rest: 0.5 * 1 + 1 * 1 over 2*2.
  const std::vector<double> t = {0.8, 0.8, 0.2, 0.1};
  const std::vector<uint8_t> tl = {1, 0, 1, 0};
  EXPECT_DOUBLE_EQ(Auroc(t, tl), (0.5 + 1 + 0 + 1) / 4);
}

TEST(RankingTest, OneClassSamples) {
  const std::vector<double> s = {0.3, 0.2};
  const std::vector<uint8_t> none = {0, 0}, all = {1, 1};
  EXPECT_DOUBLE_EQ(Auroc(s, none), 0.5);
  EXPECT_DOUBLE_EQ(Auroc(s, all), 0.5);
  EXPECT_EQ(Auprc(s, none), 0);
  EXPECT_DOUBLE_EQ(Auprc(s, all), 1);
  EXPECT_DOUBLE_EQ(Auroc({}, {}), 0.5);
  EXPECT_EQ(Auprc({}, {}), 0);
}

TEST(LowPriorTest, SampleSizesAndPerfectDetector) {
  // 40 positives, 60 negatives; a perfect detector scores 1 everywhere.
  std::vector<uint8_t> labels, flags;
  std::vector<double> scores;
  for (int i = 0; i < 100; ++i) {
    const bool pos = i < 40;
    labels.push_back(pos);
    flags.push_back(pos);
    scores.push_back(pos ? 0.9 : 0.1);
  }
  LowPriorOptions o;
  o.repetitions = 5;
  const std::vector<LowPriorRow> rows = LowPrior(labels, flags, scores, o);
  ASSERT_EQ(rows.size(), 4u);
  // 50 %: 60 positives would be needed; all 40 positives and 40 negatives instead.
  EXPECT_EQ(rows[0].positives, 40u);
  EXPECT_EQ(rows[0].negatives, 40u);
  // 20 %: all 60 negatives and 15 positives; 10 %: 7 (6.67 rounded); 5 %: 3 (3.16).
  EXPECT_EQ(rows[1].positives, 15u);
  EXPECT_EQ(rows[1].negatives, 60u);
  EXPECT_EQ(rows[2].positives, 7u);
  EXPECT_EQ(rows[3].positives, 3u);
  for (const LowPriorRow& r : rows) {
    EXPECT_EQ(r.repetitions, 5);
    EXPECT_DOUBLE_EQ(r.recall, 1);
    EXPECT_DOUBLE_EQ(r.f1, 1);
    EXPECT_DOUBLE_EQ(r.auprc, 1);
    EXPECT_DOUBLE_EQ(r.auroc, 1);
    EXPECT_EQ(r.f1_sd, 0);
  }
}

TEST(LowPriorTest, DeterministicAndDegenerate) {
  std::vector<uint8_t> labels, flags;
  std::vector<double> scores;
  for (int i = 0; i < 200; ++i) {
    labels.push_back(i % 3 == 0);
    flags.push_back(i % 4 == 0);
    scores.push_back((i * 37 % 101) / 101.0);
  }
  const LowPriorOptions o;
  const auto a = LowPrior(labels, flags, scores, o), b = LowPrior(labels, flags, scores, o);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].f1, b[i].f1);
    EXPECT_EQ(a[i].auprc, b[i].auprc);
    EXPECT_EQ(a[i].repetitions, 50);
  }
  // No positives: nothing can be drawn.
  const std::vector<uint8_t> none(10, 0);
  const std::vector<double> s(10, 0.5);
  for (const LowPriorRow& r : LowPrior(none, none, s, o)) EXPECT_EQ(r.repetitions, 0);
  // All positives: no negatives to keep either.
  const std::vector<uint8_t> all(10, 1);
  for (const LowPriorRow& r : LowPrior(all, all, s, o)) EXPECT_EQ(r.repetitions, 0);
}

TEST(RandomTest, UniformIndexAndShuffleAreDeterministic) {
  std::mt19937_64 a(7), b(7);
  std::vector<int> x = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, y = x;
  Shuffle(x, a);
  Shuffle(y, b);
  EXPECT_EQ(x, y);
  EXPECT_EQ(std::set<int>(x.begin(), x.end()).size(), 10u);
  std::mt19937_64 r(1);
  for (int i = 0; i < 1000; ++i) EXPECT_LT(UniformIndex(r, 3), 3u);
  EXPECT_EQ(UniformIndex(r, 1), 0u);
}

}  // namespace
}  // namespace teller::eval
