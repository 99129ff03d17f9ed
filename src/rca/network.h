// The network of the learned stage behind a torch-free interface, so that only
// network_torch.cc includes libtorch (each such file takes 15-18 s to compile) and the stage
// builds without it (network_none.cc). Private to src/rca.
#ifndef TELLER_SRC_RCA_NETWORK_H_
#define TELLER_SRC_RCA_NETWORK_H_

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "teller/core/status.h"
#include "teller/rca/rca.h"

namespace teller::rca::internal {

// One step as the network reads it: the TPE tokens of the step with their side channels.
struct EncodedStep {
  std::vector<int64_t> token;   // TPE token id
  std::vector<int64_t> parent;  // token index, -1 for a root (one root per rank)
  std::vector<int64_t> depth;   // clipped to ModelConfig::max_depth
  // Per token: log(1 + lambda * D), and the same minus the median of that token's value in
  // the step's setting (what makes a slowed operator stand out across engines whose
  // durations differ by orders of magnitude).
  std::vector<float> log_duration, relative;
  // What each token covers: its serialized positions [first, last] and, per position, the
  // step record's node id (tpe::Sequence's span and node), so that a token the evidence
  // head flags maps back to nodes.
  std::vector<std::pair<uint32_t, uint32_t>> span;
  std::vector<uint32_t> node;
  size_t size() const { return token.size(); }
};

// One unit as the network reads it: its step and, for the MoT, its log stream (word ids,
// LogTokens in text.h; the trace encoder ignores it). The step outlives the example.
struct Example {
  const EncodedStep* step = nullptr;
  std::vector<int64_t> log;
};

struct Target {
  std::array<float, kViewsCount> abnormal{};
  int64_t fault = -1;  // -1: no fault-type loss for this sample
  // The MoT: the explanation's word ids without <bos>/<eos>; empty: no explanation loss.
  std::vector<int64_t> explanation;
  // The evidence head: per view, 1 for each token that covers an evidence node of the unit,
  // else 0 (one value per token of the step); empty: no evidence loss for that view.
  std::array<std::vector<float>, kViewsCount> evidence;
};

// What the network says about one example: the step's heads and, from the MoT, the greedy
// explanation (word ids, end token excluded, at most max_explanation_tokens).
struct Output {
  StepOutput heads;
  std::vector<int64_t> explanation;
  // The evidence head's P(evidence) per view and token; empty without the head.
  std::array<std::vector<float>, kViewsCount> evidence;
};

class Network {
 public:
  virtual ~Network() = default;
  // Trains for options.epochs; returns the mean loss of every epoch.
  virtual Result<std::vector<double>> Train(const std::vector<Example>& x,
                                            const std::vector<Target>& y,
                                            const TrainOptions& options) = 0;
  virtual Result<std::vector<Output>> Predict(const std::vector<Example>& x) const = 0;
  virtual Result<std::string> SaveWeights() const = 0;
  virtual Status LoadWeights(std::string_view bytes) = 0;
  virtual uint64_t Parameters() const = 0;
};

bool TorchAvailable();
// A network of config.variant with freshly initialized weights (seeded) for a TPE
// vocabulary of `vocab` tokens and (the MoT) a text vocabulary of `text_vocab` words.
Result<std::unique_ptr<Network>> MakeNetwork(const ModelConfig& config, uint32_t vocab,
                                             uint32_t text_vocab, uint64_t seed);

}  // namespace teller::rca::internal

#endif  // TELLER_SRC_RCA_NETWORK_H_
