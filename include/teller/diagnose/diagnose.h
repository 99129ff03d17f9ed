// The first, numeric diagnosis (`teller diagnose`): localization (docs/method.md §3) and
// causal-context slices (§4) decide which engine steps are abnormal, which operators are
// the evidence, a likely fault category from rules over that evidence, and a sentence
// that says why, with the log lines aligned to the step. No training data is needed.
// docs/diagnose.md documents the JSON schema ("teller-diagnosis", version 1).
#ifndef TELLER_DIAGNOSE_DIAGNOSE_H_
#define TELLER_DIAGNOSE_DIAGNOSE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "teller/core/trace.h"
#include "teller/core/vocabulary.h"
#include "teller/localize/localize.h"
#include "teller/reconstruct/reconstruct.h"
#include "teller/slice/slice.h"

namespace teller::diagnose {

inline constexpr int kSchemaVersion = 1;

struct Options {
  localize::Options localize;
  slice::Weights slice;
  double step_threshold = 0.6;  // a step is abnormal when its score exceeds this
  size_t max_evidence = 8;      // evidence entries per step
  size_t top_k = 10;            // top_operators listed
};

struct Evidence {
  uint32_t node = 0;
  std::string name;
  Layer layer = Layer::kFrontend;
  int rank = -1;
  int64_t pid = 0;
  float score = 0;            // a(x)
  int64_t self_ns = 0;        // the instance's time (GPU time, or own time without GPU work)
  int64_t expected_ns = 0;    // its family's median
  Feature feature = kSelfNs;  // what deviates most (FeatureName: "gpu_ns", ...)
  float z = 0;
};

// One engine step: the STEP ranges of every rank with the same seq (or, without seq,
// one process's step).
struct StepDiagnosis {
  uint64_t seq = 0;
  bool has_seq = false;
  uint32_t ordinal = 0;
  std::string kind;
  std::vector<uint32_t> rank_steps;  // indices into Reconstruction::steps
  std::vector<std::string> requests;
  int64_t start_ns = 0, end_ns = 0;
  float score = 0;
  bool abnormal = false, vertical = false, horizontal = false;
  std::string fault_type;  // FaultCategoryName of the category, "" when normal
  std::string explanation;
  std::vector<Evidence> evidence;  // suspicious instances, most anomalous first
  std::vector<uint32_t> logs;      // rows of Trace::logs
  size_t slice_nodes = 0, step_nodes = 0;
};

struct TopOperator {
  std::string name;
  Layer layer = Layer::kFrontend;
  // 0.5 * (mean A_{s,t} over the steps that run the family) + 0.5 * (the family's share of
  // the excess time of all suspicious instances): suspicious and costly first.
  float score = 0;
  int64_t excess_ns = 0;  // time its suspicious instances took beyond their family's median
  uint32_t count = 0;     // suspicious instances
  uint32_t instances = 0;
  int64_t median_ns = 0;  // the family's typical time
};

struct Diagnosis {
  std::string mode;  // "self" (fitted on the trace) or "baseline"
  std::vector<StepDiagnosis> steps;
  std::vector<TopOperator> top_operators;
  size_t abnormal_steps = 0;
};

Diagnosis Diagnose(const Trace& trace, const reconstruct::Reconstruction& r, const Options& options,
                   const localize::Model* baseline = nullptr);

// The JSON report (docs/diagnose.md); `sources` are the input paths.
std::string ToJson(const Trace& trace, const Diagnosis& d, const std::vector<std::string>& sources);
// The terminal report: abnormal steps with evidence and explanation, top operators.
std::string ToText(const Trace& trace, const Diagnosis& d, size_t max_steps);

}  // namespace teller::diagnose

#endif  // TELLER_DIAGNOSE_DIAGNOSE_H_
