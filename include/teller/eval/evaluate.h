// Experiments: splits of a dataset into folds, scoring a method's predictions on a fold's
// test units per view (docs/method.md §8), averaging over folds, and the tables of
// `teller eval` (docs/eval.md).
#ifndef TELLER_EVAL_EVALUATE_H_
#define TELLER_EVAL_EVALUATE_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "teller/core/status.h"
#include "teller/eval/dataset.h"
#include "teller/eval/metrics.h"
#include "teller/eval/predictions.h"

namespace teller::eval {

// ---- Splits ----------------------------------------------------------------------------

enum class SplitKind : uint8_t {
  kIncident,  // fault windows and healthy time blocks kept whole, 80/10/10 (default)
  kRequest,   // request-disjoint 80/10/10 per setting, fixed seed; evaluated on test
  kEngine,    // leave one engine out: train on the others, test on it; every rotation
  kRun,       // leave one run (setting) out
};
const char* SplitName(SplitKind kind);
Result<SplitKind> ParseSplit(const std::string& name);

struct Fold {
  std::string name;  // "test" for the request split; the held-out engine or run otherwise
  std::vector<uint32_t> train, validation, test;  // unit indices
};

// An incident: what the incident split keeps in one part. A fault window is every engine
// step a ground-truth fault acted on, with every request of those steps (batch siblings
// included: they share the record) and every healthy step that starts inside the window's
// span; windows that overlap in time merge. A healthy block is a run of consecutive
// healthy steps outside any window, cut every `block_ns` of time.
struct Incident {
  uint32_t setting = 0;
  bool fault = false;
  std::string category, mechanism;  // of the earliest fault of a window; "" for healthy
  std::vector<int64_t> faults;      // ground-truth fault ids (a window may merge several)
  int64_t start_ns = 0, end_ns = 0;
  std::vector<uint32_t> units;  // unit indices, ascending
  uint32_t records = 0;         // distinct engine steps
};
struct Incidents {
  std::vector<Incident> incidents;  // by setting, then start time
  std::vector<uint32_t> of_unit;    // incident index of every unit
  std::vector<int64_t> block_ns;    // per setting: the healthy block length used
};
// Groups the units of `dataset` into incidents. Healthy blocks are as long as the median
// fault window of the setting (of the dataset when the setting has none; 1 s when the
// dataset has none). Needs the engine-step times and fault ids of steps.jsonl
// (Unit::has_incident); units of one record that disagree on them are an error.
Result<Incidents> GroupIncidents(const Dataset& dataset);

// Step records (setting, record) that units of `fold.test` and of `fold.train` share, and
// how many test units sit on such a record: the leakage of the request split (batch
// siblings share one engine-step record).
struct SharedRecordCount {
  uint64_t records = 0, test_units = 0;
};
SharedRecordCount CountSharedRecords(const Dataset& dataset, const Fold& fold);

// The folds of a split. Incident (the default): fault windows stratified by fault category
// across settings, healthy blocks per setting, each stratum shuffled with `seed` and cut
// 10 % test, 10 % validation, 80 % train (10 % rounded, at least one test incident in a
// stratum of 3 or more); no engine-step record, fault window or healthy block in two
// parts. Request: every setting's requests shuffled with `seed` and cut
// 80/10/10 (at least one test request per setting with 3 or more requests), all steps of a
// request in one part. Engine: one fold per engine (Setting::engine), trained on the other
// engines' units, of which a seeded tenth of the requests is the validation part. Run: the
// same with each setting as its own group. Needs two groups at least.
//
// `folds` = K >= 3 turns the incident and request splits into K-fold cross-validation:
// each stratum's shuffled groups are dealt round-robin into K parts (the deal goes on
// from one stratum to the next, so small strata do not all land in the first parts), and
// fold i tests part i, validates on part i+1 (mod K) and trains on the others; every
// incident (request) is tested exactly once. K = 1 is the single 80/10/10 cut above; the
// engine and run splits take only 1.
inline constexpr int kMaxFolds = 100;
Result<std::vector<Fold>> MakeFolds(const Dataset& dataset, SplitKind kind, uint64_t seed,
                                    int folds = 1);

// ---- Scores ----------------------------------------------------------------------------

struct ViewScores {
  StepMetrics step;
  OperatorMetrics op;
  RootCauseMetrics root;  // needs the step records' columns (else units = 0)
  FaultTypeMetrics fault;
  BleuScores bleu;
  std::vector<LowPriorRow> low_prior;
  uint64_t units = 0, missing = 0;  // units scored; of them, without a prediction
};
struct Scores {
  ViewScores views[2];  // by View
  const ViewScores& view(View v) const { return views[static_cast<int>(v)]; }
};

struct ScoreOptions {
  bool low_prior = true;
  LowPriorOptions low_prior_options;
};

// Root-cause keys of a step record: (operator family = name and layer, rank) of node i.
uint64_t RootCauseKey(const StepColumns& record, uint32_t node);
// The root nodes of a view's label (what the fault acted on: the slowed kernel or copy,
// the inflated launch or host call, the stalled allocation, the late rank's delayed
// compute, the collective of a link or NCCL fault), as opposed to its impact nodes (peers'
// collectives that waited for a late rank, the operator range around a stalled call).
// The ground truth's roles when the data has them (`label.has_roots`: steps.jsonl
// `root_nodes`, from ground truth version 3 on); otherwise, for datasets built from older
// ground truth, the rule RootNodesByLayer applies to the labelled nodes. Nodes outside
// `record` are dropped.
std::vector<uint32_t> RootNodes(const StepColumns& record, const ViewLabel& label);
// The rule for data without roles: the labelled nodes outside the COMM layer, or, when
// all are COMM (a link or NCCL fault), all of them. It takes collectives that widened
// because a peer was late for impact, but also the operator range around a stalled call
// for a root, and where the late rank's own evidence is COMM too (a straggler's jitter in
// its collective operator's range, a stalled worker's collective) it takes every rank's
// collectives (docs/eval.md).
std::vector<uint32_t> RootNodesByLayer(const StepColumns& record,
                                       const std::vector<uint32_t>& labelled);

// Scores `predictions` on `units`, per view:
// - step: label = the view's is_anomaly; prediction = abnormal (absent = normal);
// - operator sets: P_i = the prediction's nodes when it is abnormal, else empty;
//   O_i = the view's affected_nodes;
// - fault type over the units labelled abnormal in the view, five categories; a unit
//   predicted normal has no category and counts as wrong;
// - root cause: top-1/top-3 hit rate of the prediction's nodes (in order) as root-cause
//   keys against the keys of RootNodes (the ground truth's roots, or the layer rule for
//   older datasets), over the units with root nodes in the view;
// - BLEU over the units labelled abnormal in the view with a reference explanation;
//   candidate = the prediction's explanation when abnormal, else empty;
// - low prior from the step labels, flags and scores.
Scores ScoreUnits(const Dataset& dataset, const Predictions& predictions,
                  const std::vector<uint32_t>& units, const ScoreOptions& options = {});

// Engine-step units (the incidents' own unit, beside the paper's per-request units): one
// unit per engine step (setting, record). Its label per view is abnormal when any of its
// requests is, with the union of their evidence nodes and the first abnormal request's
// fault type, mechanism and explanation; a prediction is abnormal when the method says so
// for any of its requests (score: the highest; nodes, fault type, explanation: of the
// first abnormal one). The collapsed dataset's settings keep their names but not the
// records' columns (no root-cause keys in this view).
struct EngineStepUnits {
  Dataset dataset;                // one unit per engine step, in order of first appearance
  std::vector<uint32_t> unit_of;  // per original unit: its engine-step unit
};
EngineStepUnits CollapseToEngineSteps(const Dataset& dataset);
// The engine-step units of `units` (each once, ascending).
std::vector<uint32_t> EngineStepsOf(const EngineStepUnits& steps,
                                    const std::vector<uint32_t>& units);
// `predictions` of the original units `units`, collapsed onto their engine steps.
Predictions CollapsePredictions(const EngineStepUnits& steps, const Predictions& predictions,
                                const std::vector<uint32_t>& units);

// Mean of every number over folds (the counts are summed).
Scores AverageScores(const std::vector<Scores>& folds);

// ---- Recall per fault mechanism -------------------------------------------------------

// Per mechanism and view: the test units labelled abnormal in the view (positives), how
// many the method predicted abnormal, and of the positives those with no evidence node
// in the view (|O_i| = 0, e.g. starvation) and how many of those were predicted abnormal.
// The row with an empty mechanism counts the healthy units (no fault on their engine
// step, normal in the view) and their false alarms in the same fields.
struct MechanismRecall {
  std::string mechanism;  // "" = healthy units
  // Its steps look normal in operator timing (a request held back, run as a decode,
  // operators reordered): reported apart from the mechanisms timing can show.
  bool timing_invisible = false;
  struct PerView {
    uint64_t positives = 0, detected = 0;
    uint64_t without_evidence = 0, without_evidence_detected = 0;
  } views[2];  // by View
};
// Adds `units` (scored with `predictions`) to `rows`, keyed by mechanism; call once per
// fold to sum over folds (each unit is tested in one fold). `timing_invisible` names the
// mechanisms to list apart (the simulator's vocabulary: the CLI passes them).
void AddMechanismRecall(const Dataset& dataset, const Predictions& predictions,
                        const std::vector<uint32_t>& units,
                        const std::set<std::string>& timing_invisible,
                        std::map<std::string, MechanismRecall>* rows);
// The table for report.md: timing-visible mechanisms, then the timing-invisible ones
// apart, then the healthy units' false-alarm rate; recall as "hits/positives (rate)".
std::string MechanismRecallMarkdown(const std::string& method,
                                    const std::map<std::string, MechanismRecall>& rows);
// CSV rows: split,method,mechanism,timing_invisible,view,positives,detected,recall,
// without_evidence,without_evidence_detected (header with `header`).
std::string MechanismRecallCsv(const std::string& split, const std::string& method,
                               const std::map<std::string, MechanismRecall>& rows, bool header);

// ---- Variance over seeds -------------------------------------------------------------

// Mean and 95 % confidence interval of the mean of `values` (Student's t with n - 1
// degrees of freedom: mean ± t · s / √n, s the sample standard deviation). One value: the
// interval is that value (half = 0); none: all 0.
struct MeanInterval {
  double mean = 0, half = 0;  // the interval is [mean - half, mean + half]
  size_t n = 0;
};
MeanInterval MeanWithInterval(const std::vector<double>& values);
// The two-sided 97.5 % quantile of Student's t with `dof` degrees of freedom (exact
// table to 30, then 1.96 as the normal limit; dof 0 gives 0).
double StudentT975(size_t dof);

// Table 2 over seeds: for each (split, method, view), the Scores of every seed (same
// order in every row). Markdown with mean ± half-width of the 95 % interval of the
// headline metrics: step P, R, F1, Macro+ F1, detection recall, F1 on detected, fault-type
// accuracy and macro F1.
struct SeedRow {
  std::string method, split, view;
  std::vector<Scores> seeds;
};
std::string SeedTableMarkdown(const std::vector<SeedRow>& rows, const std::string& seeds);
std::string SeedTableCsv(const std::vector<SeedRow>& rows);

// ---- Output ----------------------------------------------------------------------------

// The `--json` object: {"horizontal": {...}, "vertical": {...}, "split": .., "seed": ..}.
std::string ScoresJson(const Scores& s, const std::string& split, uint64_t seed);

// One row of Table 2 per view (method, view, step acc/P/R/F1, Op Macro P/F1/J,
// Macro+ P/F1/J, fault-type acc/macro recall/macro F1, BLEU-1..4).
struct TableRow {
  std::string method, split, fold, view;
  Scores scores;  // the row shows scores.view(view)
};
std::string Table2Text(const std::vector<TableRow>& rows);
std::string Table2Markdown(const std::vector<TableRow>& rows);
std::string Table2Csv(const std::vector<TableRow>& rows);
// Low prior: one line per (method, view, prior).
std::string LowPriorMarkdown(const std::vector<TableRow>& rows);
std::string LowPriorCsv(const std::vector<TableRow>& rows);

}  // namespace teller::eval

#endif  // TELLER_EVAL_EVALUATE_H_
