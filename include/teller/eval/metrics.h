// The metrics of docs/method.md §8, each a pure function of labels and predictions so that
// they can be checked against hand-computed cases (tests/eval/metrics_test.cc).
//
// Conventions for degenerate inputs (docs/eval.md, "Metrics"): a ratio whose denominator
// is zero is 0 (precision with no predicted positives, recall with no labelled
// positives, F1 when precision + recall = 0, a mean over no items), except where the
// method fixes another value (the empty-empty rule of operator sets) or the metric is a
// ranking metric (AUROC of a one-class sample is 0.5, see Auroc).
#ifndef TELLER_EVAL_METRICS_H_
#define TELLER_EVAL_METRICS_H_

#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace teller::eval {

// ---- Step level: the abnormal-step decision -------------------------------------------

struct BinaryCounts {
  uint64_t tp = 0, fp = 0, tn = 0, fn = 0;
  void Add(bool label, bool predicted) {
    if (label) {
      ++(predicted ? tp : fn);
    } else {
      ++(predicted ? fp : tn);
    }
  }
  uint64_t total() const { return tp + fp + tn + fn; }
};

struct StepMetrics {
  double accuracy = 0, precision = 0, recall = 0, f1 = 0;
  uint64_t steps = 0, positives = 0, predicted_positives = 0;
};
StepMetrics ComputeStepMetrics(const BinaryCounts& c);

// ---- Operator level: predicted set P_i against labelled set O_i of every step -----------

struct SetScores {
  double precision = 0, recall = 0, f1 = 0, jaccard = 0;
};
// Set precision, recall, F1 and Jaccard. Inputs need not be sorted; duplicates count once.
// Both empty: f = j = 1 and precision = recall = 0 (docs/method.md §8), so that a normal step
// predicted normal adds to F1 and Jaccard but cannot inflate precision.
SetScores ScoreSets(std::span<const uint32_t> predicted, std::span<const uint32_t> labelled);

struct SetAverages {
  double precision = 0, recall = 0, f1 = 0, jaccard = 0;
  uint64_t steps = 0;  // steps averaged
};
struct OperatorMetrics {
  SetAverages macro;       // mean over all steps
  SetAverages macro_plus;  // mean over steps with |O_i| > 0
  // Macro+ split into detection and localization: of the steps with |O_i| > 0, the
  // fraction predicted abnormal (detection recall) and the set scores averaged over those
  // detected steps. A missed step scores 0, so macro_plus = detection_recall x detected.
  double detection_recall = 0;
  SetAverages detected;
};

// Accumulates steps one at a time. `detected`: the method predicted the step abnormal
// (the two-argument form takes a non-empty prediction as detection).
class OperatorAccumulator {
 public:
  void Add(std::span<const uint32_t> predicted, std::span<const uint32_t> labelled) {
    Add(predicted, labelled, !predicted.empty());
  }
  void Add(std::span<const uint32_t> predicted, std::span<const uint32_t> labelled, bool detected);
  OperatorMetrics Finish() const;

 private:
  SetScores all_, plus_, detected_;  // sums
  uint64_t n_all_ = 0, n_plus_ = 0, n_detected_ = 0;
};

// ---- Fault type ----------------------------------------------------------------------

struct ClassScores {
  std::string name;
  uint64_t support = 0, predicted = 0, correct = 0;
  double precision = 0, recall = 0, f1 = 0;
};
struct FaultTypeMetrics {
  double accuracy = 0, macro_recall = 0, macro_f1 = 0;
  uint64_t steps = 0;
  std::vector<ClassScores> classes;  // the given classes, in order
};
// Multi-class scores over `classes` (the five fault categories). `labels[i]` and
// `predicted[i]` name a class; a prediction outside `classes` (e.g. "" when the step was
// predicted normal) is simply wrong. Macro averages run over the classes that occur in the
// labels or the predictions (a class absent from both has no defined recall or F1);
// labels outside `classes` count in accuracy but belong to no class's scores.
FaultTypeMetrics ComputeFaultTypeMetrics(std::span<const std::string> labels,
                                         std::span<const std::string> predicted,
                                         std::span<const std::string> classes);

// ---- Explanations: corpus BLEU -------------------------------------------------------

struct BleuScores {
  double bleu[4] = {0, 0, 0, 0};       // BLEU-1..4 (cumulative, uniform weights)
  double precision[4] = {0, 0, 0, 0};  // clipped n-gram precisions p_1..p_4
  double brevity_penalty = 0;
  uint64_t candidate_tokens = 0, reference_tokens = 0, sentences = 0;
};
// Whitespace tokens, case-sensitive.
std::vector<std::string_view> Tokenize(std::string_view text);
// Corpus BLEU (Papineni et al. 2002) of candidates against one reference each: clipped
// n-gram counts summed over the corpus, BLEU-N = BP * exp(sum_{n<=N} log(p_n) / N),
// BP = exp(1 - r/c) when c <= r (c, r: total candidate and reference lengths), else 1.
// No smoothing: a zero p_n makes BLEU-N (and above) 0; an empty candidate corpus scores 0.
BleuScores CorpusBleu(std::span<const std::string> candidates,
                      std::span<const std::string> references);

// ---- Ranking metrics from step scores --------------------------------------------------

// Area under the ROC curve: the probability that a random positive scores above a random
// negative, ties counting one half (Mann-Whitney U with mid-ranks). 0.5 when the sample
// has no positives or no negatives (no ranking to judge).
double Auroc(std::span<const double> scores, std::span<const uint8_t> labels);
// Area under the precision-recall curve as average precision: sum over thresholds of
// (R_k - R_{k-1}) * P_k, tied scores entering together as one threshold (so a tie is
// neither rewarded nor punished by input order). 0 with no positives.
double Auprc(std::span<const double> scores, std::span<const uint8_t> labels);

// ---- Low prior: resampling to rarer faults (docs/method.md §8) -------------------------------

struct LowPriorOptions {
  std::vector<double> priors = {0.5, 0.2, 0.1, 0.05};
  int repetitions = 50;
  uint64_t seed = 1;
};
struct LowPriorRow {
  double prior = 0;
  uint64_t positives = 0, negatives = 0;  // in each resample
  int repetitions = 0;  // 0 when the sample cannot be drawn (no positives or negatives)
  // Means over the repetitions, and their standard deviations.
  double recall = 0, f1 = 0, auprc = 0, auroc = 0;
  double recall_sd = 0, f1_sd = 0, auprc_sd = 0, auroc_sd = 0;
};
// For each prior pi: draws, without replacement, a sample whose positive share is pi
// while keeping as many steps as possible (all negatives and pi/(1-pi) times as many
// positives; when there are too few positives, all positives and (1-pi)/pi times as many
// negatives), `repetitions` times from one seeded generator; recall and F1 from the
// predicted flags, AUPRC and AUROC from the scores.
std::vector<LowPriorRow> LowPrior(std::span<const uint8_t> labels,
                                  std::span<const uint8_t> predicted,
                                  std::span<const double> scores, const LowPriorOptions& options);

// ---- Deterministic randomness ----------------------------------------------------------

// std::mt19937_64 is specified bit for bit by the standard, but the distributions and
// std::shuffle are not: these two are ours so that splits and resamples are the same on
// every platform.
uint64_t UniformIndex(std::mt19937_64& rng, uint64_t n);  // uniform in [0, n), n > 0
template <typename T>
void Shuffle(std::vector<T>& v, std::mt19937_64& rng) {
  for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[UniformIndex(rng, i)]);
}

// ---- Root cause: top-k hit rate on (operator family, rank) --------------------------

// Whether one of the first k distinct keys of `ranked` (a method's evidence in its order,
// as root-cause keys) is in `truth`. k = 0 or an empty truth: false.
bool TopKHit(std::span<const uint64_t> ranked, std::span<const uint64_t> truth, size_t k);

struct RootCauseMetrics {
  double top1 = 0, top3 = 0;  // hit rates over the units with a root-cause label
  uint64_t units = 0;
};
class RootCauseAccumulator {
 public:
  // `detected` false (the method said normal) counts as a miss whatever `ranked` holds.
  void Add(std::span<const uint64_t> ranked, std::span<const uint64_t> truth, bool detected);
  RootCauseMetrics Finish() const;

 private:
  uint64_t n_ = 0, top1_ = 0, top3_ = 0;
};

}  // namespace teller::eval

#endif  // TELLER_EVAL_METRICS_H_
