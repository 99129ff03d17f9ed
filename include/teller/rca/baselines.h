// The learned baselines of the paper's Table 2 (docs/rca.md, "Learned baselines"): published
// log and metric anomaly detectors rebuilt in the spirit of each, small and trained from
// scratch (no pretrained weights can be had here), so that `teller eval` scores them on the
// same splits as Teller:
//  - LogRobust (supervised): each log event (a unit's line: its level and template text) is a
//    semantic vector, the TF-IDF-weighted mean of its words' embeddings, so that an event
//    never seen in training still reads by its words; a bidirectional LSTM with attention
//    over the unit's events; heads: abnormal per view, fault type.
//  - LAnoBERT: a bidirectional transformer over event ids trained by masked-event prediction
//    on normal units; a unit's score is the mean of its k largest predictive losses when each
//    of its events is masked in turn (an event never seen in training cannot be predicted).
//  - Logs2Graphs: a unit's events as a directed graph (one node per distinct event, an edge
//    per transition weighted by its count, node attributes the events' TF-IDF word vectors);
//    directed graph convolution without bias terms, mean and max pooling, trained on normal
//    units to lie near a fixed centre (one-class, as Deep SVDD); score = squared distance to
//    the centre.
//  - MAD-GAN: an LSTM generator and an LSTM discriminator over windows of consecutive step
//    feature rows, trained adversarially on normal windows; score = the mean of the
//    reconstruction residual of the unit's step (the latent found by gradient descent) and
//    the discrimination loss, each standardized on the training windows.
// The unsupervised three learn normal behaviour as published: they train on the training
// units that are normal in both views (labels enter there and in the alarm threshold only).
//
// This header does not include libtorch: without it Train is an error that says how to get it.
#ifndef TELLER_RCA_BASELINES_H_
#define TELLER_RCA_BASELINES_H_

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "teller/core/status.h"
#include "teller/core/vocabulary.h"
#include "teller/rca/rca.h"

namespace teller::rca {

enum class BaselineKind : uint8_t { kLogRobust, kLanoBert, kLogs2Graphs, kMadGan };
const char* BaselineKindName(BaselineKind kind);  // "LogRobust", "LAnoBERT", ...
// Whether it trains on labels (LogRobust); the others learn from normal units only.
inline bool BaselineSupervised(BaselineKind kind) { return kind == BaselineKind::kLogRobust; }
// Whether it reads log lines (all but MAD-GAN, which reads step feature rows).
inline bool BaselineReadsLogs(BaselineKind kind) { return kind != BaselineKind::kMadGan; }

// Step feature rows of a unit's step and the steps before it in its setting, oldest first
// (MAD-GAN): rows x cols values, row-major, the unit's own step last.
struct FeatureWindow {
  int rows = 0, cols = 0;
  std::vector<float> values;
};

// One unit as the baselines read it. The pointed-to data must outlive the call.
struct BaselineUnit {
  // The unit's log lines in order ("LEVEL template text"; null or empty: none).
  const std::vector<std::string>* logs = nullptr;
  const FeatureWindow* window = nullptr;  // MAD-GAN only
  // Training labels: abnormal per view, fault type (FaultCategory as int, -1 when normal).
  std::array<bool, kViewsCount> abnormal{};
  int fault = -1;
};

struct BaselineScore {
  // Higher is more abnormal. The unsupervised baselines give one score for both views;
  // LogRobust gives P(abnormal) per view.
  std::array<float, kViewsCount> score{};
  // LogRobust: P(fault type | abnormal); zero from the others.
  std::array<float, kFaultCategoryCount> fault{};
};

class LearnedBaseline {
 public:
  LearnedBaseline();
  ~LearnedBaseline();
  LearnedBaseline(LearnedBaseline&&) noexcept;
  LearnedBaseline& operator=(LearnedBaseline&&) noexcept;

  // Trains `kind` on `train` for options.epochs (batch, learning rate, seed and progress
  // from `options`; its config is not read). Deterministic for a seed. Errors: no unit to
  // learn from (the unsupervised ones need normal units), MAD-GAN units without a window or
  // with windows of different shapes, libtorch missing or failing.
  static Result<LearnedBaseline> Train(BaselineKind kind, const std::vector<BaselineUnit>& train,
                                       const TrainOptions& options);
  // One score per unit.
  Result<std::vector<BaselineScore>> Score(const std::vector<BaselineUnit>& units) const;

  BaselineKind kind() const;
  const std::vector<double>& epoch_loss() const;  // mean training loss per epoch
  uint64_t parameters() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace teller::rca

#endif  // TELLER_RCA_BASELINES_H_
