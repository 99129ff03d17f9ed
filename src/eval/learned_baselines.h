// The learned baselines of the paper's Table 2 as `teller eval` methods (docs/eval.md,
// "Learned baselines"; the networks: include/teller/rca/baselines.h). Private to src/eval.
#ifndef TELLER_SRC_EVAL_LEARNED_BASELINES_H_
#define TELLER_SRC_EVAL_LEARNED_BASELINES_H_

#include <cstdint>
#include <functional>
#include <string_view>

#include "teller/core/status.h"
#include "teller/eval/dataset.h"
#include "teller/eval/evaluate.h"
#include "teller/eval/features.h"
#include "teller/eval/methods.h"
#include "teller/eval/predictions.h"
#include "teller/rca/baselines.h"

namespace teller::eval {

// Steps a MAD-GAN window holds: the unit's step and the 7 before it in its setting.
inline constexpr int kMadGanWindow = 8;

rca::BaselineKind BaselineOf(MethodKind kind);

// `spec` (a learned baseline) on `fold`: trained on the fold's training units (the
// unsupervised ones on those normal in both views; MAD-GAN on one window per distinct step
// record), the alarm threshold per view the best step F1 on the validation units (without
// a positive there: 0.5 for LogRobust's probabilities, the 90th percentile of the training
// units' scores for the others), LogRobust's fault type its head's among the types seen in
// training, evidence nodes by the baselines' rule (`deviations`). MAD-GAN reads the record
// columns of `stat` (the stat feature set).
Result<Predictions> PredictLearnedBaseline(const Dataset& dataset, const Fold& fold,
                                           const MethodSpec& spec, uint64_t seed, int epochs,
                                           const Features& stat, const NodeDeviations& deviations,
                                           const std::function<void(std::string_view)>& progress);

}  // namespace teller::eval

#endif  // TELLER_SRC_EVAL_LEARNED_BASELINES_H_
