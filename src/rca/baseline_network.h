// The learned baselines' networks (include/teller/rca/baselines.h) behind a torch-free
// interface, as network.h does for Teller's own: baselines_torch.cc, in the libtorch module,
// implements it. Private to src/rca.
#ifndef TELLER_SRC_RCA_BASELINE_NETWORK_H_
#define TELLER_SRC_RCA_BASELINE_NETWORK_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "src/rca/network.h"
#include "teller/core/status.h"
#include "teller/rca/baselines.h"

namespace teller::rca::internal {

// The log events one call reads (baselines.cc builds it from the units' lines): per event
// its word ids with their TF-IDF weights (summing to 1), and its id among the events seen
// in training, from 1 (0: never seen, what LAnoBERT reads as its unknown token).
struct EventTable {
  std::vector<std::vector<int64_t>> words;
  std::vector<std::vector<float>> weights;
  std::vector<int64_t> known;
  size_t size() const { return words.size(); }
};

// One unit: its events in order (indices into the call's EventTable; at least one, a unit
// without log lines reads as one event of its own) and, for MAD-GAN, its feature window.
struct BaselineExample {
  std::vector<int64_t> events;
  const FeatureWindow* window = nullptr;
};

class BaselineNetwork {
 public:
  virtual ~BaselineNetwork() = default;
  // Trains for options.epochs; returns the mean loss of every epoch (MAD-GAN: the
  // discriminator's).
  virtual Result<std::vector<double>> Train(const EventTable& events,
                                            const std::vector<BaselineExample>& x,
                                            const std::vector<Target>& y,
                                            const TrainOptions& options) = 0;
  virtual Result<std::vector<BaselineScore>> Score(const EventTable& events,
                                                   const std::vector<BaselineExample>& x) const = 0;
  virtual uint64_t Parameters() const = 0;
};

// The shape a baseline network is made for: the word vocabulary (ids below `words`), the
// events seen in training (ids 1..known_events), MAD-GAN's window (rows x cols).
struct BaselineShape {
  int64_t words = 0, known_events = 0;
  int window_rows = 0, window_cols = 0;
};

// A network of `kind` with freshly initialized weights (seeded).
Result<std::unique_ptr<BaselineNetwork>> MakeBaselineNetwork(BaselineKind kind,
                                                             const BaselineShape& shape,
                                                             uint64_t seed);

}  // namespace teller::rca::internal

#endif  // TELLER_SRC_RCA_BASELINE_NETWORK_H_
