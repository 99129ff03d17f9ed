// The learned baselines of the paper's Table 2 as `teller eval` methods (docs/eval.md,
// "Learned baselines"; the networks: include/teller/rca/baselines.h). Private to src/eval.
#ifndef TELLER_SRC_EVAL_LEARNED_BASELINES_H_
#define TELLER_SRC_EVAL_LEARNED_BASELINES_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

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

// The prompt-only baseline's text of a unit's step (docs/rca.md, "Learned baselines"): what
// a prompt would say about the step without a numeric filter, as words the text vocabulary
// can hold (durations as powers of two of microseconds, "2^7us"):
//   "step ranks R nodes 2^k span 2^k"
//   "layer L count 2^k total 2^k"       per layer present, in Layer order
//   "op L NAME 2^k"                     the kStepSummaryOps longest operators (not STEP
//                                       nodes), longest first, names as the trace has them
std::vector<std::string> StepSummaryLines(const Dataset& dataset, uint32_t unit);
inline constexpr size_t kStepSummaryOps = 12;
// The word budget of the summary and the log lines (rca::ModelConfig::max_log_tokens).
inline constexpr int kStepSummaryLogTokens = 192;

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
