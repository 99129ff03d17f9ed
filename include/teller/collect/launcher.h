// `teller run`: launches a command unchanged with the collector injected through the
// environment (NVTX_INJECTION64_PATH, CUDA_INJECTION64_PATH, the Python hooks on
// PYTHONPATH), tees its stdout/stderr to the terminal and into timestamped log files,
// passes its exit status through, and writes a run manifest.
#ifndef TELLER_COLLECT_LAUNCHER_H_
#define TELLER_COLLECT_LAUNCHER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "teller/core/status.h"

namespace teller::collect {

struct RunOptions {
  std::string out_dir;                // "" = $TELLER_TRACE_DIR or ./teller-trace-<timestamp>
  std::string python_hooks = "auto";  // auto|vllm|sglang|torch|none
  int flush_ms = 100;
  std::vector<std::string> command;  // argv of the program to run
  // Directory of the `teller` executable; the injection libraries and the Python hooks
  // are found relative to it (../lib).
  std::string exe_dir;
  uint64_t min_free_bytes = 64ull << 20;  // refuse to start below this much free space
};

// Exit statuses of `teller run` itself, distinct from the command's, as in env(1).
inline constexpr int kExitTellerError = 125;
inline constexpr int kExitCannotExecute = 126;
inline constexpr int kExitNotFound = 127;

// The names of the files a run writes inside its trace directory.
inline constexpr const char* kManifestName = "manifest.json";
inline constexpr const char* kStdoutLogName = "logs/stdout.log";
inline constexpr const char* kStderrLogName = "logs/stderr.log";

// Checks the output directory (creating it), then runs the command. Returns an error,
// without starting the command, when the directory is unusable. Otherwise returns the
// exit status to propagate: the command's, or 128+N when it died of signal N.
Result<int> RunTraced(const RunOptions& options);

// Resolves the trace directory for `requested` (see RunOptions::out_dir).
std::string DefaultTraceDir();

}  // namespace teller::collect

#endif  // TELLER_COLLECT_LAUNCHER_H_
