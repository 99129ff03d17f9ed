#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "src/cli/collect_commands.h"
#include "teller/collect/launcher.h"

namespace teller::cli {
namespace {

constexpr const char* kRunUsage =
    "usage: teller run [--out DIR] [--python-hooks auto|vllm|sglang|torch|none]\n"
    "                  [--flush-ms N] -- CMD ARGS...\n"
    "\n"
    "Runs CMD unchanged and collects, into a trace directory:\n"
    "  <host>.<pid>.<n>.tlr  one raw trace per process (NVTX ranges, CUDA API calls,\n"
    "                        kernels, memcpy/memset, synchronization)\n"
    "  logs/stdout.log, logs/stderr.log\n"
    "                        every line CMD printed, prefixed with its capture time\n"
    "                        (CLOCK_MONOTONIC ns, the clock of the events)\n"
    "  manifest.json         command, host, start/end time, exit status, files\n"
    "CMD's output still reaches the terminal, and its exit status is teller's (128+N\n"
    "when it died of signal N). Forked and exec'd children are traced too.\n"
    "\n"
    "options:\n"
    "  --out DIR            trace directory (default: $TELLER_TRACE_DIR, else\n"
    "                       ./teller-trace-<date>-<time>); created if missing\n"
    "  --python-hooks MODE  NVTX ranges around Python engine functions: auto (every\n"
    "                       known engine whose modules get imported), vllm, sglang,\n"
    "                       torch, or none (default: auto)\n"
    "  --flush-ms N         how often the collector writes a clock anchor into each\n"
    "                       trace file (default: 100); events go straight into the\n"
    "                       file, so nothing recorded is lost even on SIGKILL\n"
    "\n"
    "exit status: CMD's; 125 when teller itself fails (nothing is started), 126 when\n"
    "CMD cannot be executed, 127 when it is not found.\n";

bool ParseInt(const std::string& text, int& out) {
  char* end = nullptr;
  const long v = std::strtol(text.c_str(), &end, 10);
  if (end == text.c_str() || *end != '\0' || v <= 0 || v > 3600000) return false;
  out = static_cast<int>(v);
  return true;
}

}  // namespace

int RunCommand(const std::vector<std::string>& args, const std::string& exe_dir) {
  collect::RunOptions options;
  options.exe_dir = exe_dir;
  if (const char* mb = std::getenv("TELLER_MIN_FREE_MB")) {
    options.min_free_bytes = std::strtoull(mb, nullptr, 10) << 20;
  }
  size_t i = 0;
  auto value = [&](const std::string& flag) -> const std::string* {
    if (i + 1 >= args.size()) {
      std::fprintf(stderr, "teller run: %s needs a value\n", flag.c_str());
      return nullptr;
    }
    return &args[++i];
  };
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a == "-h" || a == "--help") {
      std::fputs(kRunUsage, stdout);
      return 0;
    }
    if (a == "--out" || a == "-o") {
      const std::string* v = value(a);
      if (!v) return 2;
      options.out_dir = *v;
    } else if (a == "--python-hooks") {
      const std::string* v = value(a);
      if (!v) return 2;
      if (*v != "auto" && *v != "vllm" && *v != "sglang" && *v != "torch" && *v != "none") {
        std::fprintf(
            stderr,
            "teller run: --python-hooks must be auto, vllm, sglang, torch or none, not '%s'\n",
            v->c_str());
        return 2;
      }
      options.python_hooks = *v;
    } else if (a == "--flush-ms") {
      const std::string* v = value(a);
      if (!v) return 2;
      if (!ParseInt(*v, options.flush_ms)) {
        std::fprintf(stderr,
                     "teller run: --flush-ms must be a positive number of milliseconds, not '%s'\n",
                     v->c_str());
        return 2;
      }
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "teller run: unknown option '%s'\n\n%s", a.c_str(), kRunUsage);
      return 2;
    } else {
      break;  // the command starts here (the "--" is optional when CMD has no dash)
    }
  }
  options.command.assign(args.begin() + static_cast<long>(i), args.end());
  if (options.command.empty()) {
    std::fprintf(stderr, "teller run: no command given\n\n%s", kRunUsage);
    return 2;
  }
  auto result = collect::RunTraced(options);
  if (!result.ok()) {
    std::fprintf(stderr, "teller run: %s\n", result.status().message().c_str());
    return collect::kExitTellerError;
  }
  return result.value();
}

}  // namespace teller::cli
