// The network when Teller is built without libtorch: every use is an error that says how
// to get it.
#include "src/rca/baseline_network.h"
#include "src/rca/network.h"

namespace teller::rca::internal {

bool TorchAvailable() { return false; }

namespace {
constexpr const char* kNoTorch =
    "this build of Teller has no libtorch, which the learned models need (apt-get install "
    "libtorch-dev libopenblas0-pthread, then re-run cmake with TELLER_WITH_TORCH=AUTO or ON)";
}  // namespace

Result<std::unique_ptr<Network>> MakeNetwork(const ModelConfig&, uint32_t, uint32_t, uint64_t) {
  return Status::Error(kNoTorch);
}

Result<std::unique_ptr<BaselineNetwork>> MakeBaselineNetwork(BaselineKind, const BaselineShape&,
                                                             uint64_t) {
  return Status::Error(kNoTorch);
}

}  // namespace teller::rca::internal
