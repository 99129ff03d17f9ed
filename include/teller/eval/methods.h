// The methods `teller eval` can score by name: Teller's numeric diagnosis and learned models,
// the classical baselines, each with two feature sets, and the learned baselines
// (docs/eval.md, "Methods").
#ifndef TELLER_EVAL_METHODS_H_
#define TELLER_EVAL_METHODS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "teller/core/counters.h"
#include "teller/core/status.h"
#include "teller/eval/dataset.h"
#include "teller/eval/evaluate.h"
#include "teller/eval/features.h"
#include "teller/eval/predictions.h"
#include "teller/rca/rca.h"

namespace teller::eval {

enum class MethodKind : uint8_t {
  kTellerNumeric,
  kKMeans,
  kDbscan,
  kIsolationForest,
  kGmm,
  kLinearSvm,
  kRandomForest,
  kXgboost,
  // A leakage probe, not a detector: copies the labels of the training unit nearest in
  // time (same setting), without looking at the trace. On a split that does not leak it
  // scores no better than the base rate.
  kLabelCopy,
  // The learned trace encoder (src/rca, libtorch), trained per fold on its training units.
  kTellerGcn,
  // The learned mixture of transformers (trace, log and explanation; src/rca), likewise.
  kTellerMot,
  // The learned single-stream transformer (trace and log tokens in one sequence), likewise.
  kTellerSingle,
  // The learned baselines of the paper's Table 2 (rca/baselines.h, libtorch), trained per
  // fold: three over the units' log events, one over windows of step features.
  kLogRobust,
  kLanoBert,
  kLogs2Graphs,
  kMadGan,
  // The prompt-only baseline of the paper's Table 4: the single-stream transformer without
  // its trace stream, reading a plain text summary of the step (no numeric filter, no
  // comparison with other steps) and the unit's log lines.
  kStepSummary,
};
// The learned methods (src/rca, libtorch), and those of them that read the logs.
inline bool IsLearned(MethodKind k) {
  return k == MethodKind::kTellerGcn || k == MethodKind::kTellerMot ||
         k == MethodKind::kTellerSingle;
}
inline bool IsLearnedWithText(MethodKind k) {
  return k == MethodKind::kTellerMot || k == MethodKind::kTellerSingle;
}
inline bool IsLearnedBaseline(MethodKind k) {
  return k == MethodKind::kLogRobust || k == MethodKind::kLanoBert ||
         k == MethodKind::kLogs2Graphs || k == MethodKind::kMadGan || k == MethodKind::kStepSummary;
}

struct MethodSpec {
  std::string name;     // as given on the command line: "teller-numeric", "random-forest-struct"
  std::string display;  // in tables: "RandomForest (struct)"
  MethodKind kind = MethodKind::kTellerNumeric;
  FeatureSet features = FeatureSet::kStat;  // baselines only
  bool supervised = false;
  // The learned methods: the TPE vocabulary size they train (the paper's Table 3 ablation,
  // "teller-gcn@512" on the command line); 0 = the model's default (256).
  uint32_t tpe_vocab = 0;
  // teller-mot and teller-single: the modality ablation (the paper's Table 5),
  // "teller-mot:no-trace" and "teller-mot:no-log" (rca::ModelConfig::trace_stream,
  // log_stream).
  bool trace_stream = true, log_stream = true;
  // teller-mot and teller-single with ":summary": the step's text summary
  // (StepSummaryLines, the prompt-only baseline's) read before the log lines.
  bool summary = false;
};

// Every method name, in table order ("all" on the command line).
std::vector<std::string> MethodNames();
// A name or a comma-separated list of them, or "all"; errors list the valid names. A learned
// method may carry its TPE vocabulary size, "teller-gcn@512" (64 to 65536), and the MoT
// a modality left out, "teller-mot:no-log" or "teller-mot@512:no-trace".
Result<std::vector<MethodSpec>> ParseMethods(const std::string& text);
// Whether this build has the method (XGBoost needs libxgboost at build time, the learned
// methods and baselines libtorch).
bool MethodAvailable(MethodKind kind);

// The label-copy probe on `fold`: each test unit gets, per view, the step label (score 1
// or 0) and fault type of the training unit whose engine step starts nearest in time in
// the same setting (ties: the earlier), and no nodes. Needs steps.jsonl's start_ns.
Result<Predictions> PredictLabelCopy(const Dataset& dataset, const Fold& fold);

// The units of a dataset as the learned models (src/rca) read them: one corpus step per
// step record, and a training sample per unit (its views' labels and fault type; with
// `text`, also its log lines and reference explanation, which the MoT and the single stream read).
// Shared by the learned methods and `teller train`. Holds pointers into `dataset`, which must
// outlive it.
struct GcnInput {
  rca::Corpus corpus;
  std::vector<uint32_t> first;  // per setting: the corpus step of its record 0
  uint32_t StepOf(const Dataset& dataset, uint32_t unit) const {
    return first[dataset.units[unit].setting] + dataset.units[unit].record;
  }
  std::vector<rca::Sample> Samples(const Dataset& dataset, const std::vector<uint32_t>& units,
                                   bool text = false) const;
};
// A unit's log stream as text (docs/rca.md, "Log stream"): "<LEVEL> <template text>" for each
// of UnitLogs::sequence, "-" for an unknown level.
std::vector<std::string> UnitLogLines(const Dataset& dataset, uint32_t unit);
GcnInput MakeGcnInput(const Dataset& dataset);

// State shared by the methods of one `teller eval` run: the dataset, the seed, and what is
// worth computing once (the numeric diagnosis, the feature matrices).
class MethodRunner {
 public:
  MethodRunner(const Dataset& dataset, uint64_t seed,
               std::function<void(std::string_view)> progress = nullptr);
  ~MethodRunner();

  // Predictions of `method` for the test units of `fold` (a baseline trains on the fold's
  // train units and calibrates on its validation units; teller-numeric needs neither).
  Result<Predictions> Predict(const MethodSpec& method, const Fold& fold);

  // The seed of the models trained from now on (`teller eval --seeds`); cached
  // predictions that no seed affects (teller-numeric) are kept.
  void set_seed(uint64_t seed) { seed_ = seed; }
  // Training epochs of the learned methods and baselines (`teller eval --epochs`).
  void set_epochs(int epochs) { epochs_ = epochs; }
  // Whether the methods read the logs (`teller eval --without-logs`: false): teller-numeric
  // without the diagnosis's log evidence, the feature baselines without their log columns;
  // the methods that read logs by design (teller-mot, teller-single, the log baselines) are
  // refused. Set before the first Predict.
  void set_with_logs(bool with_logs) { with_logs_ = with_logs; }

  // Counters worth printing (evidence without a local id, units without a diagnosis...).
  const Counters& counters() const { return counters_; }

 private:
  const Features& FeaturesFor(FeatureSet set);

  const Dataset& dataset_;
  uint64_t seed_;
  int epochs_ = rca::TrainOptions().epochs;
  bool with_logs_ = true;
  std::function<void(std::string_view)> progress_;
  std::optional<Predictions> numeric_;
  std::map<FeatureSet, std::unique_ptr<Features>> features_;
  std::unique_ptr<NodeDeviations> deviations_;
  Counters counters_;
};

}  // namespace teller::eval

#endif  // TELLER_EVAL_METHODS_H_
