// Step features for the classical baselines (docs/eval.md, "Features"), computed from the
// compact step records of steps.jsonl:
//  - stat:   standard statistics of a step: per type tag and per layer the node count and
//            the total, largest and mean duration; the step's node count, ranks, span,
//            the spread of its ranks' STEP durations, launch-to-kernel delays, depth;
//            and per unit (one request's step) the log features of its log.txt lines
//            (LogFeature in core/vocabulary.h): lines by level, distinct templates,
//            templates rare in the training part, failure-signature hits per fault
//            category, and its request's lifecycle times;
//  - struct: the structured features of the paper's Table 4: a bag of operator names and
//            of (parent name, name) pairs, hashed into fixed buckets (names normalized:
//            digits become '#'), with counts and, per name bucket, total duration.
// Values are log(1 + x) (durations in microseconds), then standardized per setting
// (median and MAD of the setting's steps, no labels involved), as Teller's own
// localization self-fits per trace: engines differ in scale by orders of magnitude.
#ifndef TELLER_EVAL_FEATURES_H_
#define TELLER_EVAL_FEATURES_H_

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "teller/eval/dataset.h"

namespace teller::eval {

enum class FeatureSet : uint8_t { kStat = 0, kStruct = 1 };
const char* FeatureSetName(FeatureSet set);

// Dense, row-major.
struct Matrix {
  size_t rows = 0, cols = 0;
  std::vector<double> v;
  Matrix() = default;
  Matrix(size_t r, size_t c) : rows(r), cols(c), v(r * c, 0.0) {}
  double& at(size_t r, size_t c) { return v[r * cols + c]; }
  double at(size_t r, size_t c) const { return v[r * cols + c]; }
  const double* row(size_t r) const { return v.data() + r * cols; }
  double* row(size_t r) { return v.data() + r * cols; }
};

inline constexpr size_t kStructBuckets = 128;  // per block: name counts, name time, pairs

struct Features {
  FeatureSet set = FeatureSet::kStat;
  std::vector<std::string> names;   // column names: the record's, then the log columns
  std::vector<Matrix> per_setting;  // rows = the setting's records (standardized)
  size_t record_cols = 0;           // columns of per_setting; the log columns follow
  // The stat set's log columns (kLogFeatureCount of them, in LogFeature order), per
  // setting one row per unit of the setting, in dataset order (standardized); empty for
  // the struct set.
  std::vector<Matrix> log_per_setting;
  std::vector<uint32_t> log_row;  // per unit: its row in its setting's log matrix
  // The rows of `units`, in order.
  Matrix Rows(const Dataset& dataset, const std::vector<uint32_t>& units) const;
  // A copy whose rare-template column counts, per unit, its templates with at most
  // logs::RarityOptions::rare_max_lines lines among the units of `train` (of the same
  // setting): template frequency comes from the training part only, so nothing of the
  // test part leaks into it. ComputeFeatures alone counts frequency over all units.
  Features ForTraining(const Dataset& dataset, const std::vector<uint32_t>& train) const;
};

// `with_logs` false: the stat set without its log columns (`teller eval --without-logs`).
Features ComputeFeatures(const Dataset& dataset, FeatureSet set, bool with_logs = true);

// Raw (not standardized, before log(1 + x)) log features of one unit, LogFeature order;
// the rare-template count uses `train_lines` (lines per template id among the training
// units of the unit's setting; ids past its end have none).
std::vector<double> LogFeatures(const Unit& unit, const std::vector<uint64_t>& train_lines);
std::vector<std::string> LogFeatureNames();

// Raw (not standardized) features of one record; `name_hash` maps names.json indices to
// hashes of their normalized names (struct only).
std::vector<double> StatFeatures(const StepColumns& record);
std::vector<std::string> StatFeatureNames();
std::vector<double> StructFeatures(const StepColumns& record,
                                   const std::vector<uint64_t>& name_hash);
std::string NormalizeName(std::string_view name);  // digits -> '#'
uint64_t HashName(std::string_view text);          // FNV-1a, 64 bit

// Operator sets for baselines that have no evidence of their own: the nodes of a step whose
// duration deviates most from their family (same name and layer) across the setting's
// steps, by robust z-score of log(1 + duration); no labels involved.
class NodeDeviations {
 public:
  explicit NodeDeviations(const Dataset& dataset);
  // Up to `k` nodes of the unit's record with z >= min_z, most deviating first; in the
  // horizontal view only communication (COMM-layer) nodes. STEP nodes never count.
  std::vector<uint32_t> Top(const Dataset& dataset, uint32_t unit, View view, size_t k = 8,
                            double min_z = 3.0) const;

 private:
  struct Stat {
    float median = 0, scale = 1;
  };
  // Per setting: family key (name << 3 | layer) -> its statistics.
  std::vector<std::unordered_map<uint64_t, Stat>> family_;
  mutable std::mutex mu_;
  mutable std::map<std::tuple<uint32_t, uint32_t, int, size_t, double>, std::vector<uint32_t>>
      cache_;
};

}  // namespace teller::eval

#endif  // TELLER_EVAL_FEATURES_H_
