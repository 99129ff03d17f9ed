// Realism report: how close a simulated trace is to a real one (docs/realism.md).
// `teller simulate --profile P --compare REAL_TRACE [--json]` shows it (src/cli).
//
// Two views, both on GPU work mapped to operator classes (OpClass, by the name patterns
// of docs/serving-notes.md §2.1-§2.5, listed in docs/realism.md):
//   - structure: the per-decoder-layer class sequence. Within one step (or one graph
//     launch) the class sequence of a transformer repeats once per layer; its period is
//     found by self-matching (the smallest shift under which the sequence agrees with
//     itself nearly as well as under the best shift), the layer is the per-position
//     majority class, and the two traces' layers are compared by edit distance under the
//     best rotation (where a layer "starts" is a convention): agreement = 1 - d / max(len).
//     Plus the step-level class mix: sum over classes of min(p_sim, p_real) of the
//     per-class shares of GPU work (1 = same mix);
//   - timing: per class, the two-sample Kolmogorov-Smirnov statistic and the
//     1-Wasserstein distance of log10(duration in ns), with counts and medians.
// When the real trace's steps are mostly of one kind (decode, prefill) and the simulated
// trace has steps of that kind, both sides are restricted to steps of that kind.
#ifndef TELLER_EVAL_REALISM_H_
#define TELLER_EVAL_REALISM_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "teller/core/status.h"
#include "teller/core/trace.h"
#include "teller/reconstruct/op_class.h"

namespace teller::eval {

using reconstruct::OpClass;

// One trace's repeating decoder layer.
struct LayerPattern {
  bool found = false;
  std::vector<OpClass> classes;  // one layer, rotated to start at its first norm
  uint32_t period = 0;           // kernels per repeating unit
  // Decoder layers in one unit (its attention kernels): models that alternate layer
  // types (gpt-oss: sliding and full attention) repeat every two layers.
  uint32_t layers_per_period = 1;
  uint32_t layers = 0;             // repetitions of the unit in the segment it was found in
  double periodicity = 0;          // share of positions i with c[i] == c[i + period]
  uint32_t segments = 0;           // step segments examined
  uint32_t agreeing_segments = 0;  // of which gave this layer
};

struct ClassDistance {
  OpClass op_class = OpClass::kOther;
  uint64_t simulated_count = 0, real_count = 0;
  double simulated_median_us = 0, real_median_us = 0;  // 0 when the side is empty
  double simulated_share = 0, real_share = 0;          // share of GPU work items of the side
  // NaN when one side has no sample.
  double ks = 0;
  double w1_log10 = 0;
  // Duration CV of the class across the repeated decoder layers of one step: per kernel
  // name and slot (its k-th instance within a layer), std/mean over the layers; the
  // median over the step's (name, slot) groups and the compared steps. NaN: no group of
  // at least kMinLayersForCv layers.
  double simulated_cv = 0, real_cv = 0;
};

// What one step of a trace shows, over the compared steps (medians per step).
struct StepStatistics {
  double kernel_names = 0;  // distinct kernel names per step (NaN: no step)
  double symbols = 0;       // distinct event names per step: ranges, calls, GPU work
  // Inter-kernel gaps on one GPU stream within a step (start minus the previous item's
  // end, negative as 0, gaps over kMaxGapNs left out as idle), in us.
  uint64_t gaps = 0;
  double gap_p50_us = 0, gap_p90_us = 0, gap_p99_us = 0;
  double zero_gap_share = 0;  // gaps under 0.1 us
};

// Distinct GPU-work name sequences among the steps of one kind (simulated side).
struct StepVariety {
  std::string kind;
  uint64_t steps = 0, distinct = 0;
  double per_100 = 0;  // distinct sequences per 100 steps (steps < 100: distinct * 100 / steps)
};

// One realism target: simulated and real value of a statistic, met when within a
// factor of 1.5 (ratio statistics) or at KS <= 0.2 (distributions).
struct RealismTarget {
  std::string statistic;
  double simulated = 0, real = 0;
  bool distribution = false;  // `simulated` holds the KS statistic, `real` 0
  bool met = false;
};

inline constexpr uint32_t kMinLayersForCv = 6;
inline constexpr int64_t kMaxGapNs = 1'000'000;

struct TraceSummary {
  uint64_t processes = 0, steps = 0, steps_compared = 0;
  uint64_t gpu_work = 0;      // GPU work items compared (kernels, memcpy, memset)
  std::string dominant_kind;  // most common step kind by GPU work, "" = none
};

struct RealismReport {
  TraceSummary simulated, real;
  std::string step_kind_filter;  // "" = all GPU work compared
  LayerPattern simulated_layer, real_layer;
  // 1 - d / max(len) with d the edit distance under the best rotation, after repeating
  // each side's unit to the same number of decoder layers; NaN when either side has no
  // repeating unit.
  double layer_agreement = 0;
  uint32_t layer_edit_distance = 0;
  double step_mix_overlap = 0;         // sum_c min(p_sim(c), p_real(c))
  std::vector<ClassDistance> classes;  // classes present on either side, by real share
  StepStatistics simulated_steps, real_steps;
  double gap_ks = 0;                 // KS of log10(gap + 0.1 us); NaN when a side has none
  std::vector<StepVariety> variety;  // simulated side, by kind
  std::vector<RealismTarget> targets;
};

// Pure comparison of two imported traces (no files read).
Result<RealismReport> CompareRealism(const Trace& simulated, const Trace& real);

// Text table for people; JSON (schema in docs/realism.md) for tools.
std::string RealismReportText(const RealismReport& report, std::string_view simulated_label,
                              std::string_view real_label);
std::string RealismReportJson(const RealismReport& report, std::string_view simulated_label,
                              std::string_view real_label);

// Building blocks, exposed for tests.
// Smallest period p >= 2 (at most n/3) whose self-match share is within 0.03 of the best
// and at least 0.7; 0 when there is none. `periodicity` receives its share.
uint32_t FindPeriod(const std::vector<OpClass>& seq, double* periodicity);
// Edit distance minimised over the rotations of `b`.
uint32_t CyclicEditDistance(const std::vector<OpClass>& a, const std::vector<OpClass>& b);

}  // namespace teller::eval

#endif  // TELLER_EVAL_REALISM_H_
