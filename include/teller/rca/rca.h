// The learned stage (docs/method.md §6; docs/rca.md): a trace encoder over the TPE tokens of
// a step (token, depth and log-duration embeddings; graph convolution over the parent graph
// with self-loops; pooling per step; projection to the backbone width) with two heads: the
// step abnormal or not (one output per view) and its fault type.
//
// This header does not include libtorch: the stage builds without it, and then Available()
// is false and training or loading a model is an error that says so. libtorch exceptions
// never leave the stage; they become Status errors.
//
// The model directory (docs/rca.md, "Model files"):
//   model.json   {"format":"teller-rca-model","version":1,"config":{..},"trained_on":{..},
//                 "training":{..},"weights":{"file":"weights.pt","bytes":N,"crc32c":X}}
//   weights.pt   the network's parameters (libtorch archive), checked against model.json
//   tpe/         the TPE vocabulary the network reads (docs/tpe.md, "Files")
#ifndef TELLER_RCA_RCA_H_
#define TELLER_RCA_RCA_H_

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "teller/core/status.h"
#include "teller/core/vocabulary.h"
#include "teller/format/dataset_node.h"

namespace teller::rca {

// Version of model.json and of the network it describes; Load refuses any other.
inline constexpr int kModelVersion = 1;
inline constexpr int kViewsCount = 2;  // vertical, horizontal (teller::eval::View order)

// Whether this build has libtorch (TELLER_WITH_TORCH).
bool Available();

// What the model reads: step records (a dataset's steps.jsonl lines, one per engine step)
// and the names they index. Views: the columns and names must outlive every call.
struct StepRef {
  uint32_t setting = 0;  // index into Corpus::names
  const format::DatasetColumns* columns = nullptr;
};
struct Corpus {
  std::vector<const std::vector<std::string>*> names;  // per setting: names.json
  std::vector<StepRef> steps;
};

// One training example: a step of the corpus with the labels of one unit (a request's view
// of the step; batch siblings share the step and may differ in labels).
struct Sample {
  uint32_t step = 0;  // index into Corpus::steps
  std::array<bool, kViewsCount> abnormal{};
  int fault = -1;  // FaultCategory as int when abnormal, else -1
};

// The network's shape. The backbone width is what later modules (the log stream, the
// mixture of transformers) will share.
struct ModelConfig {
  uint32_t tpe_vocab = 256;      // TPE vocabulary trained on the training steps
  int width = 64;                // backbone width: the projection's output
  int hidden = 64;               // encoder width (embeddings, graph convolution)
  int layers = 2;                // graph-convolution layers
  int max_depth = 64;            // depths above this share the last depth embedding
  double duration_scale = 1e-3;  // lambda of log(1 + lambda * D), D in ns (so: microseconds)
};

struct TrainOptions {
  ModelConfig config;
  int epochs = 30;
  int batch = 32;
  double learning_rate = 3e-3;
  uint64_t seed = 1;
  // Progress lines (epoch, loss, steps/s, ETA), about one per epoch; may be empty.
  std::function<void(std::string_view)> progress;
};

// What training recorded, also kept in model.json.
struct TrainingLog {
  std::vector<double> epoch_loss;  // mean loss per epoch
  double seconds = 0;
  uint64_t samples = 0, steps = 0;
  uint64_t parameters = 0;
};

// What the model says about one step.
struct StepOutput {
  std::array<float, kViewsCount> abnormal{};       // P(abnormal) per view
  std::array<float, kFaultCategoryCount> fault{};  // P(fault type | abnormal)
  // The most likely fault type among `allowed` (all when empty).
  FaultCategory Fault(const std::vector<int>& allowed = {}) const;
};

// Provenance written into model.json (what a user reads to know what a model saw).
struct TrainedOn {
  std::string data;   // the dataset directory
  std::string split;  // "all", or the split whose training part was used
  uint64_t split_seed = 0;
  uint64_t units = 0;
};

class Model {
 public:
  Model();
  ~Model();
  Model(Model&&) noexcept;
  Model& operator=(Model&&) noexcept;

  // Trains a TPE vocabulary on the steps of `train`, then the network on `train`.
  // Deterministic for a seed. Errors: no samples, libtorch missing, libtorch failures.
  static Result<Model> Train(const Corpus& corpus, const std::vector<Sample>& train,
                             const TrainOptions& options);

  // One output per entry of `steps` (indices into corpus.steps). Durations are read
  // relative to the same token's median in the step's setting over all of corpus.steps
  // (no labels), so the corpus should hold the whole setting, as the training corpus did.
  Result<std::vector<StepOutput>> Predict(const Corpus& corpus,
                                          const std::vector<uint32_t>& steps) const;

  // Writes the model directory (created if needed). Loading checks the format, the
  // version, the TPE files and the weights' size and checksum, naming the file at fault.
  Status Save(const std::string& dir, const TrainedOn& trained_on) const;
  static Result<Model> Load(const std::string& dir);

  const ModelConfig& config() const;
  const TrainingLog& training() const;
  // The fault types seen in training (the only ones Fault() should pick).
  const std::vector<int>& fault_classes() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace teller::rca

#endif  // TELLER_RCA_RCA_H_
