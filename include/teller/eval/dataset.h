// A labelled dataset (docs/dataset-format.md) in memory, as `teller eval` scores it.
//
// The unit of evaluation is a dataset step: one engine step of one request (setting,
// request, seq), judged separately in the vertical and the horizontal view with the
// labels of annotation.json (is_anomaly and affected_nodes per view, the step's
// fault_type and reference explanation). A batch of n requests gives n units that share
// one step record (the same trees), so records are stored once per (setting, seq).
#ifndef TELLER_EVAL_DATASET_H_
#define TELLER_EVAL_DATASET_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "teller/core/status.h"
#include "teller/core/trace.h"
#include "teller/core/vocabulary.h"
#include "teller/format/dataset_node.h"

namespace teller::eval {

enum class View : uint8_t { kVertical = 0, kHorizontal = 1 };
inline constexpr View kViews[2] = {View::kVertical, View::kHorizontal};
const char* ViewName(View view);

struct ViewLabel {
  bool is_anomaly = false;
  std::vector<uint32_t> nodes;  // local node ids, sorted
  // The root nodes among `nodes` (what the fault acted on, sorted) when the data marks
  // them (steps.jsonl `root_nodes`, from ground truth version 3): has_roots is false for
  // datasets built from older ground truth and for views without nodes.
  std::vector<uint32_t> roots;
  bool has_roots = false;
};

// The columns of one step record (steps.jsonl), index = local node id.
// The node columns (format::DatasetColumns, read without `depth`; names index
// Setting::names) of one engine step.
struct StepColumns : format::DatasetColumns {
  uint64_t seq = 0;
};
inline constexpr int kTypeTags = format::kNumTypeTags;  // format::TypeTag 0..10
inline constexpr int kLayers = kLayerCount;             // Layer 0..6
inline constexpr uint8_t kLayerComm = static_cast<uint8_t>(Layer::kComm);
inline constexpr int kLogLevels = 6;  // LogLevel kUnknown..kCritical

// What the log lines of a unit (its request's log.txt lines of that step, L_q(s)) say, as
// read by LoadDataset; features.h turns them into the log features.
struct UnitLogs {
  static constexpr int64_t kUnknown = -1;
  uint32_t lines = 0;
  uint32_t by_level[kLogLevels] = {};  // by LogLevel
  // (template id in the setting's templates, lines), by id.
  std::vector<std::pair<uint32_t, uint32_t>> templates;
  uint32_t signatures[kFaultCategoryCount] = {};  // lines matching a failure signature
  // The unit's log stream as the MoT model reads it (docs/rca.md, "Log stream"): its
  // distinct (level, template id) pairs in order of first appearance in log.txt. Repeats
  // are dropped: a decode step's lines are mostly the same few templates again.
  std::vector<std::pair<LogLevel, uint32_t>> sequence;
  // The request's lifecycle (logs::RequestLifecycles over all its lines naming it), ns;
  // kUnknown when its lines do not carry both ends.
  int64_t queue_ns = kUnknown, first_token_ns = kUnknown, end_to_end_ns = kUnknown;
  int64_t age_ns = kUnknown;  // the step's start minus the request's arrival
};

struct Setting {
  std::string name;
  std::string source;  // the simulation output it was built from (index.json), "" if unknown
  // What engine-disjoint splits group by: the ground truth's `profile` when the source's
  // ground_truth.json is readable, else the setting's name.
  std::string engine;
  std::vector<std::string> names;    // names.json
  std::vector<StepColumns> records;  // one per seq, in order of first appearance
  // Log templates of the setting: those of <setting>/templates.txt, or, for a dataset whose
  // log.txt carries no template ids (log.txt version 1), mined while loading.
  uint32_t templates = 0;
  bool templates_mined = false;            // true in the second case
  std::vector<std::string> template_text;  // by template id (TemplateMiner::Text)
  uint64_t log_lines = 0;
  uint64_t log_files_missing = 0;  // requests without log.txt (version 1 datasets only)
};

struct Unit {
  uint32_t setting = 0;
  std::string request;
  uint32_t step = 0;  // position among the request's steps (trace.json's `step`)
  uint64_t seq = 0;
  uint32_t record = 0;  // index into Setting::records
  bool is_anomaly = false;
  std::string fault_type;  // "" when normal
  std::string mechanism;   // the fault mechanism when abnormal, else ""
  // The engine step's span (UTC ns, all ranks) and the ground-truth fault acting on it
  // (-1: none), shared by every request of the batch; has_incident is false for datasets
  // written before steps.jsonl carried them.
  int64_t start_ns = 0, end_ns = 0;
  int64_t fault = -1;
  bool has_incident = false;
  ViewLabel views[2];       // by View
  std::string explanation;  // the reference explanation, "" when normal or not loaded
  UnitLogs logs;            // empty when not loaded
  const ViewLabel& view(View v) const { return views[static_cast<int>(v)]; }
};

struct Dataset {
  std::string root;
  std::vector<Setting> settings;
  std::vector<Unit> units;  // by setting, then steps.jsonl order
};

struct LoadOptions {
  bool columns = true;       // read the step records' columns (the baselines' features)
  bool explanations = true;  // read reference explanations from annotation.json (BLEU)
  bool logs = true;          // read every request's log.txt (the log features)
};

// Reads DIR/index.json (or, without one, every DIR/<setting>/steps.jsonl), each
// setting's steps.jsonl and names.json, and optionally the annotation.json and log.txt
// files (with <setting>/templates.txt). Errors name the file and the line or byte offset.
// A log.txt line names a step steps.jsonl lists for its request and, in a dataset with
// templates.txt, a template id of that file.
Result<Dataset> LoadDataset(const std::string& dir, const LoadOptions& options = {});

}  // namespace teller::eval

#endif  // TELLER_EVAL_DATASET_H_
