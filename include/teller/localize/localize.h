// Candidate localization (docs/method.md §3): which operator instances of which steps look
// abnormal, from a feature vector per instance scored by a Gaussian mixture per operator
// family. Works on a single trace (the mixture is fitted on the trace itself) or against
// healthy baseline traces (fitted on the baseline, then used to score the incident).
//
// Instances: every FRONTEND / BACKEND / COMM range inside a step, plus the GPU operations
// that no such range encloses (a CUDA graph's kernels, which replay with no operator
// ranges). A family is the set of instances with the same normalized name and layer.
// docs/localization.md describes the features, the scoring and the defaults.
#ifndef TELLER_LOCALIZE_LOCALIZE_H_
#define TELLER_LOCALIZE_LOCALIZE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "teller/core/trace.h"
#include "teller/core/vocabulary.h"
#include "teller/reconstruct/reconstruct.h"

namespace teller::localize {

// Features of one instance: teller::Feature (core/vocabulary.h, docs/method.md §3).

struct Options {
  double quantile = 0.1;            // q of A_{s,t}: mean of the floor(q*m) lowest rho (>= 1)
  double family_threshold = 0.5;    // families with A_{s,t} above it are candidates
  double instance_threshold = 0.5;  // candidate instances with a(x) above it are suspicious
  // A family is a candidate only when at least this many of its instances in the step are
  // anomalous (or all of them, when it has fewer): one isolated outlier kernel is noise
  // on real GPUs, a fault shows in every layer or on every rank.
  size_t min_suspicious = 2;
  // Deviations smaller than this in absolute time are not anomalies, however unusual:
  // sub-microsecond jitter of host ranges is noise for a diagnosis.
  int64_t min_excess_ns = 2000;
  size_t min_mixture = 24;  // families with fewer instances use robust z-scores
  int max_components = 3;
  double central_weight = 0.15;  // components at least this heavy (and the heaviest) are central
  uint64_t seed = 1;             // for the mixtures' initialization
  double min_ratio = 1.2;        // least time ratio to its peers that makes evidence
};

struct Family {
  std::string key;   // name, layer, step kind and preceding operator (the family's identity)
  std::string name;  // normalized
  Layer layer = Layer::kFrontend;
  uint32_t count = 0;    // instances scored
  bool mixture = false;  // false: robust z-scores (too few instances)
  bool from_baseline = false;
  double median_ns = 0;  // typical total time (GPU time, or own time when none)
};

struct Instance {
  uint32_t node = 0;
  uint32_t family = 0;
  uint32_t step = 0;              // index into Reconstruction::steps (the rank's step); without
                                  // steps, the index of the process's group
  float rho = 1;                  // responsibility of the central components (1 = typical)
  float anomaly = 0;              // a(x) = 1 - rho
  int64_t total_ns = 0;           // GPU time, or own time when the instance launches no GPU work
  int64_t expected_ns = 0;        // the family's median of that
  Feature top_feature = kSelfNs;  // the feature that deviates most (robust z)
  float top_z = 0;                // its signed robust z-score
};

// Suspiciousness is computed per engine step: the steps of all ranks that carry the same
// `seq=` in their step message form one group (a step without seq is its own group).
struct StepFamily {
  uint32_t step = 0;  // group index
  uint32_t family = 0;
  uint32_t m = 0;            // instances of the family in the step
  float suspiciousness = 0;  // A_{s,t}; in baseline mode, how much it exceeds the baseline's
  bool candidate = false;
};

struct Result {
  std::vector<Family> families;
  std::vector<Instance> instances;                 // by step, then node
  std::vector<StepFamily> step_families;           // by step, then family
  std::vector<uint32_t> group_of_step;             // Reconstruction::steps index -> group
  std::vector<std::vector<uint32_t>> group_steps;  // group -> its steps (one per rank)
  std::vector<std::vector<uint32_t>> group_roots;  // group -> the root nodes of its trees
  std::vector<float> group_score;                  // per group: max A_{s,t}
  std::vector<std::vector<uint32_t>> suspicious;   // per group: indices into instances
};

// A fitted model per family, to score other traces with (baseline mode).
class Model {
 public:
  Model();
  ~Model();
  Model(Model&&) noexcept;
  Model& operator=(Model&&) noexcept;
  struct Impl;
  Impl& impl() { return *impl_; }
  const Impl& impl() const { return *impl_; }
  size_t families() const;

 private:
  std::unique_ptr<Impl> impl_;
};

// Fits family models on healthy traces (each already reconstructed), and records each
// family's mean A_{s,t} over the baseline's own steps: outliers a family always has are
// not news, so in baseline mode a step's A_{s,t} counts only above that level.
Model FitBaseline(
    const std::vector<std::pair<const Trace*, const reconstruct::Reconstruction*>>& traces,
    const Options& options = {});

// Scores `trace`; with `baseline`, families it knows are scored with its models and the
// others are fitted on the trace itself.
Result Localize(const Trace& trace, const reconstruct::Reconstruction& r,
                const Options& options = {}, const Model* baseline = nullptr);

// The normalized family name of a node: digits in range names become '#'; kernel names
// stay as they are (their template arguments tell real kernels apart).
std::string FamilyName(const Trace& trace, const reconstruct::Reconstruction& r, uint32_t node);

}  // namespace teller::localize

#endif  // TELLER_LOCALIZE_LOCALIZE_H_
