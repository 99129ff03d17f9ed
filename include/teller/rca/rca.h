// The learned stage (docs/method.md §6; docs/rca.md): a trace encoder over the TPE tokens of
// a step (token, depth and log-duration embeddings; graph convolution over the parent graph
// with self-loops; pooling per step; projection to the backbone width) with two heads: the
// step abnormal or not (one output per view) and its fault type (Variant::kGcn); or the same
// encoder as the trace stream of a mixture of transformers (Variant::kMot) that also reads
// the unit's log lines and generates the explanation; or one causal transformer over the
// step's TPE tokens and log words serialized into one sequence, generating its verdicts,
// `<fault_type> y </fault_type>` and the explanation (Variant::kSingle).
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
//   text.json    the word vocabulary of the networks that read text (kMot, kSingle),
//                checked against model.json
#ifndef TELLER_RCA_RCA_H_
#define TELLER_RCA_RCA_H_

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "teller/core/status.h"
#include "teller/core/vocabulary.h"
#include "teller/format/dataset_node.h"

namespace teller::rca {

// Version of model.json that Save writes. Load reads it and version 1 (trace-encoder-gcn
// models written before the MoT existed, the same network) and refuses any other.
inline constexpr int kModelVersion = 2;
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
  // What only the MoT reads: the unit's log lines in order ("LEVEL template text"), and the
  // reference explanation it learns to generate ("" when normal or unknown).
  std::vector<std::string> logs;
  std::string explanation;
  // The evidence head's targets: per view, the unit's evidence nodes
  // (local node ids of the step record; its root nodes where the data marks them, else
  // the view's labelled nodes). Read for the abnormal views only.
  std::array<std::vector<uint32_t>, kViewsCount> nodes;
};

// What a prediction is asked about: a step of the corpus and, for the MoT, the unit's log
// lines (null: none). The lines must outlive the call.
struct Query {
  uint32_t step = 0;
  const std::vector<std::string>* logs = nullptr;
};

// Which network: the trace encoder with its two heads, the mixture of transformers over
// trace, log and explanation tokens, or the single-stream transformer (docs/rca.md,
// "Network", "MoT", "Single stream").
enum class Variant : uint8_t { kGcn, kMot, kSingle };
const char* VariantName(Variant variant);  // "gcn", "mot", "single"
bool ParseVariant(std::string_view text, Variant* out);
// The networks that read log lines and write explanations (a text vocabulary, text.json).
inline bool ReadsText(Variant variant) { return variant != Variant::kGcn; }

// The network's shape. The backbone width is what the trace encoder's projection and the
// MoT's transformer share.
struct ModelConfig {
  Variant variant = Variant::kGcn;
  uint32_t tpe_vocab = 256;      // TPE vocabulary trained on the training steps
  int width = 64;                // backbone width: the projection's output
  int hidden = 64;               // encoder width (embeddings, graph convolution)
  int layers = 2;                // graph-convolution layers
  int max_depth = 64;            // depths above this share the last depth embedding
  double duration_scale = 1e-3;  // lambda of log(1 + lambda * D), D in ns (so: microseconds)
  // The MoT and the single stream.
  uint32_t text_vocab = 2048;  // words of the text tokenizer, special tokens included
  int mot_layers = 2;          // transformer layers (MoT: shared attention, FFN per modality)
  int heads = 4;               // attention heads; divides width
  int max_ranks = 8;           // trace stream: the step token and one per rank (more share one)
  int max_log_tokens = 96;     // log stream length
  int max_explanation_tokens = 48;  // generated explanation length, end token excluded
  // The single stream only: the step's TPE tokens it reads, at most this many (the rank
  // roots, then the tokens that ran longest against their usual duration; docs/rca.md).
  int max_trace_tokens = 192;
  // A per-token evidence head (docs/rca.md, "Evidence head") on the trace tokens' vectors
  // (the trace encoder's, the MoT's encoder's, the single stream's trace positions), whose
  // token scores map back to the step's nodes; not without a trace stream. Models written
  // before it existed have none (their model.json lacks "evidence_head").
  bool evidence_head = true;
  // The modality ablation (the paper's Table 5) of the networks that read text: one without
  // its trace stream reads one blank token for every step; one without its log stream
  // reads no log line. At least one of the two; the trace encoder always reads the trace.
  bool trace_stream = true;
  bool log_stream = true;
};

struct TrainOptions {
  ModelConfig config;
  int epochs = 30;
  int batch = 32;
  double learning_rate = 3e-3;
  uint64_t seed = 1;
  // The MoT's loss: BCE(abnormal) + fault_weight * CE(fault) + explanation_weight *
  // NLL(explanation) (lambda_f, lambda_r of method.md §6).
  double fault_weight = 1.0, explanation_weight = 1.0;
  // With an evidence head the loss adds evidence_weight * BCE(evidence) over the tokens of
  // each abnormal view.
  double evidence_weight = 1.0;
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
  // The MoT's generated explanation: vocabulary words joined by one space, at most
  // max_explanation_tokens of them, no special token; "" from the trace encoder.
  std::string explanation;
  // The evidence head's nodes per view (local node ids of the step record) with
  // P(evidence) of the token that covers each, highest first (ties: lower id), at most
  // kEvidenceNodes of them; empty from a network without the head.
  std::array<std::vector<std::pair<uint32_t, float>>, kViewsCount> evidence;
};
inline constexpr size_t kEvidenceNodes = 32;

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
  // The same with each step's log lines (what the MoT reads; the trace encoder ignores them).
  Result<std::vector<StepOutput>> Predict(const Corpus& corpus,
                                          const std::vector<Query>& queries) const;

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
