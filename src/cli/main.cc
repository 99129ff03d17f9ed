// teller: root-cause analysis of LLM inference. This is the small front that users start.
// It runs and dumps collections itself and execs teller-analyze, from its own folder and
// with the same arguments, for the analysis commands.
//
// Why two binaries: `teller run` is a fixed cost in front of every traced program. When
// one executable held every command, starting it loaded the libraries of every stage
// (xgboost, OpenBLAS, which starts its thread pool, libtorch, simdjson...) and ran their
// static initialisers before `run` could start the program: about 90 ms of wall and
// 40 ms of CPU on the development VM. This binary links only the launcher, the raw format
// and core (libc and libstdc++ besides), and has no static initialisers of its own
// (bench/README.md, "Start-up of teller run"). An analysis command pays one more exec,
// about a millisecond.
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "src/cli/collect_commands.h"

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
    "Diagnose:\n"
    "  diagnose TRACE... [--baseline TRACE...] [--json FILE] [--top K]\n"
    "                     abnormal steps, the operators that are the evidence, a likely\n"
    "                     fault category and why (Teller, Kineto or Nsight traces);\n"
    "                     --html FILE writes a report to open in a browser\n"
    "  export TRACE... --perfetto FILE [--diagnosis JSON]\n"
    "                     the trace for Perfetto and trace-event viewers, with the findings\n"
    "Read:\n"
    "  dump [--stats] [--meta] FILE|DIR\n"
    "                     print the events of raw trace files as JSON lines\n"
    "  inspect TRACE... [--json] [--request ID] [--tree]\n"
    "                     rebuild per-request, per-step call trees from a Teller trace,\n"
    "                     a Kineto JSON or an Nsight Systems export, with aligned logs\n"
    "  logs mine LOGFILE... [--templates FILE] [--out FILE]\n"
    "                     log templates, reusing a baseline's; new ones marked\n"
    "  dataset export TRACE... --out DIR [--setting NAME]\n"
    "                     per-request examples (trace.json, log.txt, annotation.json)\n"
    "  dataset build RAW... --out DIR   labelled per-request examples from simulated or\n"
    "                     injected traces;  dataset stats [--json] DIR   Table 1\n"
    "Simulate:\n"
    "  simulate [--profile P] [--seed S] [--fault SPEC]... --out DIR\n"
    "                     simulate LLM serving with faults: raw traces, logs, ground truth\n"
    "  simulate --preset paper --seed S --out DIR   the paper-shaped dataset (5 settings)\n"
    "  simulate --profile P --compare REAL_TRACE    realism report against a real trace\n"
    "  inject TRACE --fault MECHANISM --out OUT     apply a fault to an existing trace\n"
    "Learn:\n"
    "  tpe train|encode|stats ...   Trace Pair Encoding of dataset steps (docs/method.md §5)\n"
    "  train --data DIR --out MODEL [--epochs E] [--seed S] [--split all|incident|request]\n"
    "                     train the trace encoder (libtorch; docs/rca.md) on a labelled dataset\n"
    "  eval --data DIR --method NAME|--predictions FILE [--split request|engine|run]\n"
    "                     score methods or predictions on a labelled dataset (Table 2)\n"
    "\n"
    "  help               this text;  version  the version\n"
    "Run 'teller <command> --help' for the options of a command.\n";

// The commands that live in teller-analyze.
constexpr std::string_view kAnalysisCommands[] = {"inspect", "dataset",  "simulate", "inject",
                                                  "tpe",     "diagnose", "eval",     "train",
                                                  "export",  "logs"};

std::string ExeDir() {
  char buf[PATH_MAX + 1] = {};
  const ssize_t n = readlink("/proc/self/exe", buf, PATH_MAX);
  if (n <= 0) return ".";
  std::string path(buf, static_cast<size_t>(n));
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

// Replaces this process with teller-analyze; returns only when that fails.
int ExecAnalysis(char** argv) {
  const std::string analyze = ExeDir() + "/teller-analyze";
  execv(analyze.c_str(), argv);
  const int e = errno;
  std::fprintf(stderr, "teller: cannot execute %s (it holds the command '%s'): %s\n",
               analyze.c_str(), argv[1], std::strerror(e));
  return e == ENOENT ? 127 : 126;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  const std::string_view command = argv[1];
  if (command == "run") {
    return teller::cli::RunCommand(std::vector<std::string>(argv + 2, argv + argc), ExeDir());
  }
  if (command == "dump") {
    return teller::cli::DumpCommand(std::vector<std::string>(argv + 2, argv + argc));
  }
  for (std::string_view analysis : kAnalysisCommands) {
    if (command == analysis) return ExecAnalysis(argv);
  }
  if (command == "help" || command == "--help" || command == "-h") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (command == "version" || command == "--version") {
    std::printf("teller %s\n", TELLER_VERSION);
    return 0;
  }
  std::fprintf(stderr, "teller: unknown command '%s'\n\n%s", argv[1], kUsage);
  return 2;
}
