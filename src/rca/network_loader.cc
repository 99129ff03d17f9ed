// The network of a libtorch build: network_torch.cc is a module (libteller_rca_torch.so)
// opened here on first use. Linking libtorch into every program of the stage's users would
// cost each start of `teller` about 1 s of CPU (libtorch's relocations; 2 s on a loaded
// machine against 0.03 s), which every command and every CLI test would pay.
#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>

#include <climits>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include "src/rca/baseline_network.h"
#include "src/rca/network.h"

namespace teller::rca::internal {
namespace {

using Factory = Network* (*)(const ModelConfig*, uint32_t, uint32_t, uint64_t, std::string*);
using BaselineFactory = BaselineNetwork* (*)(BaselineKind, const BaselineShape*, uint64_t,
                                             std::string*);

// Where the module may be: beside the running program's lib/ folder (build/bin/teller ->
// build/lib/), then where this build wrote it.
std::vector<std::string> Candidates() {
  std::vector<std::string> out;
  char buf[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n > 0) {
    buf[n] = '\0';
    out.push_back((std::filesystem::path(buf).parent_path().parent_path() / "lib" /
                   TELLER_RCA_TORCH_MODULE_NAME)
                      .string());
  }
  out.push_back(TELLER_RCA_TORCH_MODULE_PATH);
  return out;
}

struct Loaded {
  Factory factory = nullptr;
  BaselineFactory baseline_factory = nullptr;
  std::string error;
};

const Loaded& Load() {
  static Loaded loaded;
  static std::once_flag once;
  std::call_once(once, [] {
    // One BLAS thread unless the user set otherwise. libtorch's BLAS here (Debian's
    // OpenBLAS, pthreads) sizes its own pool from the cores when it loads, outside
    // torch::set_num_threads; its threads spin while they wait, and beside one other busy
    // process on 2 cores they made the MoT's training 8x slower (12 against 101 units/s).
    // Read by OpenBLAS when the module below loads it.
    setenv("OPENBLAS_NUM_THREADS", "1", /*overwrite=*/0);
    for (const std::string& path : Candidates()) {
      void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (handle == nullptr) {
        const char* why = dlerror();
        loaded.error += (loaded.error.empty() ? "" : "; ") + std::string(why ? why : path);
        continue;
      }
      loaded.factory = reinterpret_cast<Factory>(dlsym(handle, "TellerRcaMakeTorchNetwork"));
      loaded.baseline_factory =
          reinterpret_cast<BaselineFactory>(dlsym(handle, "TellerRcaMakeTorchBaseline"));
      if (loaded.factory == nullptr || loaded.baseline_factory == nullptr)
        loaded.error = path + ": no TellerRcaMakeTorchNetwork or TellerRcaMakeTorchBaseline";
      return;
    }
  });
  return loaded;
}

}  // namespace

bool TorchAvailable() {
  // Without opening it (that loads libtorch): the module exists.
  std::error_code ec;
  for (const std::string& path : Candidates()) {
    if (std::filesystem::is_regular_file(path, ec)) return true;
  }
  return false;
}

Result<std::unique_ptr<Network>> MakeNetwork(const ModelConfig& config, uint32_t vocab,
                                             uint32_t text_vocab, uint64_t seed) {
  const Loaded& l = Load();
  if (l.factory == nullptr) {
    return Status::Error("cannot load the libtorch network (" + l.error + ")");
  }
  std::string error;
  Network* n = l.factory(&config, vocab, text_vocab, seed, &error);
  if (n == nullptr) return Status::Error(error);
  return std::unique_ptr<Network>(n);
}

Result<std::unique_ptr<BaselineNetwork>> MakeBaselineNetwork(BaselineKind kind,
                                                             const BaselineShape& shape,
                                                             uint64_t seed) {
  const Loaded& l = Load();
  if (l.baseline_factory == nullptr) {
    return Status::Error("cannot load the libtorch network (" + l.error + ")");
  }
  std::string error;
  BaselineNetwork* n = l.baseline_factory(kind, &shape, seed, &error);
  if (n == nullptr) return Status::Error(error);
  return std::unique_ptr<BaselineNetwork>(n);
}

}  // namespace teller::rca::internal
