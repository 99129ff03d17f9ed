// What a method says about each unit of evaluation and view, and the predictions file
// through which outside tools are scored (docs/eval.md, "Predictions file"):
// JSON lines, one per (dataset step, view),
//   {"setting":"sglang","request":"c05..","seq":12,"view":"horizontal","abnormal":true,
//    "score":0.93,"fault_type":"communication","nodes":[37,2180],"explanation":"..."}
// `nodes` are local node ids of the step record (trace.json / steps.jsonl);
// `fault_type`, `nodes` and `explanation` may be omitted (or null).
#ifndef TELLER_EVAL_PREDICTIONS_H_
#define TELLER_EVAL_PREDICTIONS_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "teller/core/status.h"
#include "teller/eval/dataset.h"

namespace teller::eval {

struct Prediction {
  bool present = false;  // false: the method said nothing (scored as normal, score 0)
  bool abnormal = false;
  double score = 0;             // higher = more abnormal (ranking metrics)
  std::string fault_type;       // "" = none
  std::vector<uint32_t> nodes;  // evidence, local node ids
  std::string explanation;
};

// One entry per unit of the dataset (same index), per view.
struct Predictions {
  std::vector<std::array<Prediction, 2>> units;
  Prediction& at(size_t unit, View v) { return units[unit][static_cast<int>(v)]; }
  const Prediction& at(size_t unit, View v) const { return units[unit][static_cast<int>(v)]; }
};

struct PredictionFileStats {
  uint64_t lines = 0;
  uint64_t unknown_units = 0;  // lines naming a (setting, request, seq) the dataset lacks
};

// Reads a predictions file against `dataset`. Malformed lines and a second line for the
// same (unit, view) are errors naming the file and line; lines for units the dataset does
// not have are counted and skipped (a predictions file may cover several datasets).
Result<Predictions> ReadPredictions(const std::string& path, const Dataset& dataset,
                                    PredictionFileStats* stats = nullptr);

// The predictions file of `units` (present predictions only), in the format above.
std::string PredictionsToJsonl(const Dataset& dataset, const Predictions& predictions,
                               const std::vector<uint32_t>& units);

}  // namespace teller::eval

#endif  // TELLER_EVAL_PREDICTIONS_H_
