// teller: root-cause analysis of LLM inference. One executable, one file per subcommand.
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "src/cli/commands.h"

#ifndef TELLER_VERSION
#define TELLER_VERSION "0.0.0"
#endif

namespace {

constexpr const char* kUsage =
    "usage: teller <command> [options]\n"
    "\n"
    "Collect:\n"
    "  run [--out DIR] [--python-hooks MODE] [--flush-ms N] -- CMD ARGS...\n"
    "                     run CMD unchanged, collecting NVTX ranges, CUDA calls and\n"
    "                     kernels, and its stdout/stderr, into a trace directory\n"
    "Read:\n"
    "  dump [--stats] [--meta] FILE|DIR\n"
    "                     print the events of raw trace files as JSON lines\n"
    "  inspect TRACE... [--json] [--request ID] [--tree]\n"
    "                     rebuild per-request, per-step call trees from a Teller trace,\n"
    "                     a Kineto JSON or an Nsight Systems export, with aligned logs\n"
    "  dataset export TRACE... --out DIR [--setting NAME]\n"
    "                     per-request examples (trace.json, log.txt, annotation.json)\n"
    "\n"
    "  help               this text;  version  the version\n"
    "Run 'teller <command> --help' for the options of a command.\n";

std::string ExeDir() {
  char buf[PATH_MAX + 1] = {};
  const ssize_t n = readlink("/proc/self/exe", buf, PATH_MAX);
  if (n <= 0) return ".";
  std::string path(buf, static_cast<size_t>(n));
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  const std::string command = argv[1];
  const std::vector<std::string> args(argv + 2, argv + argc);
  if (command == "run") return teller::cli::RunCommand(args, ExeDir());
  if (command == "dump") return teller::cli::DumpCommand(args);
  if (command == "inspect") return teller::cli::InspectCommand(args);
  if (command == "dataset") return teller::cli::DatasetCommand(args);
  if (command == "help" || command == "--help" || command == "-h") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (command == "version" || command == "--version") {
    std::printf("teller %s\n", TELLER_VERSION);
    return 0;
  }
  std::fprintf(stderr, "teller: unknown command '%s'\n\n%s", command.c_str(), kUsage);
  return 2;
}
