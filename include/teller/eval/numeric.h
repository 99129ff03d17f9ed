// `teller eval --method teller-numeric`: the numeric diagnosis of `teller diagnose`
// (diagnose::Diagnose, self-fitted on each trace, no training) as predictions for the
// units of a dataset.
//
// For every setting it imports the simulation output the dataset was built from
// (index.json's `source`), reconstructs and diagnoses it, and maps each engine step's
// diagnosis to the dataset steps of its requests. Evidence nodes are reconstruction node
// indices; they become the step record's local node ids through the dataset builder's
// own grouping and node order (teller/dataset/step_record.h), so they are comparable
// with annotation.json's affected_nodes.
#ifndef TELLER_EVAL_NUMERIC_H_
#define TELLER_EVAL_NUMERIC_H_

#include <cstdint>
#include <functional>
#include <string_view>

#include "teller/core/status.h"
#include "teller/diagnose/diagnose.h"
#include "teller/eval/dataset.h"
#include "teller/eval/predictions.h"

namespace teller::eval {

struct NumericOptions {
  // As `teller diagnose`, but every suspicious instance is evidence (the report shows 8):
  // the operator sets are scored whole.
  diagnose::Options diagnose = [] {
    diagnose::Options o;
    o.max_evidence = size_t{1} << 20;
    return o;
  }();
  // The dataset build's --max-nodes-per-step (its default): evidence beyond a cut record
  // has no local id.
  size_t max_nodes_per_step = size_t{1} << 20;
  std::function<void(std::string_view)> progress;  // one line per setting
};

struct NumericStats {
  uint64_t engine_steps = 0, abnormal_steps = 0;
  uint64_t evidence = 0;                 // evidence nodes of abnormal steps
  uint64_t evidence_outside_record = 0;  // without a local id (not in the step's record)
  uint64_t unmatched_requests = 0;       // (engine step, request) pairs the dataset lacks
  uint64_t units_without_diagnosis = 0;  // dataset steps no diagnosed engine step covers
};

// Predictions for every unit of the dataset, per view:
//   vertical:   abnormal = StepDiagnosis.abnormal && vertical, nodes = all evidence;
//   horizontal: abnormal = StepDiagnosis.abnormal && horizontal, nodes = COMM evidence
// (the views and evidence lists of `teller diagnose --json`); score = StepDiagnosis.score
// in both; fault_type and explanation when the view is abnormal. Fails when a setting's
// source is unknown or unreadable.
Result<Predictions> PredictTellerNumeric(const Dataset& dataset, const NumericOptions& options,
                                         NumericStats* stats = nullptr);

}  // namespace teller::eval

#endif  // TELLER_EVAL_NUMERIC_H_
