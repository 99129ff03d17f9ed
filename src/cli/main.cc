// teller: root-cause analysis of LLM inference. One executable, one file per subcommand.
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "src/cli/commands.h"
#include "teller/core/progress.h"

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

// Opt-in (TELLER_HUGEPAGES=1): the analysis commands re-execute themselves once with
// GLIBC_TUNABLES=glibc.malloc.hugetlb=1, so that malloc's large chunks get transparent huge
// pages (glibc reads the tunable only at process start). It used to be the default, but the
// kernel zeroes (and, with THP defrag=madvise, compacts memory for) every 2 MiB page on its
// first touch: on a busy machine `teller inspect` of 16 copies of df_index_resolver took
// 8.9 s with it against 1.6 s without, and on an idle one it gained nothing (docs/ingest-
// kineto.md, "Huge pages"). The Kineto importer's input buffer keeps its own madvise hint.
// `teller run` never re-executes, so the traced program's environment is untouched;
// TELLER_NO_HUGEPAGES=1 wins over TELLER_HUGEPAGES.
void ReexecWithHugePages(char** argv) {
  const char* opt_in = std::getenv("TELLER_HUGEPAGES");
  if (opt_in == nullptr || std::strcmp(opt_in, "1") != 0) return;
  if (std::getenv("TELLER_NO_HUGEPAGES") != nullptr) return;
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  const std::string current = tunables != nullptr ? tunables : "";
  if (current.find("glibc.malloc.hugetlb") != std::string::npos) return;  // set, or re-executed
  const std::string wanted =
      current.empty() ? "glibc.malloc.hugetlb=1" : current + ":glibc.malloc.hugetlb=1";
  setenv("GLIBC_TUNABLES", wanted.c_str(), 1);
  execv("/proc/self/exe", argv);
  // exec failed (no /proc?): carry on without huge pages.
  if (tunables != nullptr) {
    setenv("GLIBC_TUNABLES", tunables, 1);
  } else {
    unsetenv("GLIBC_TUNABLES");
  }
}

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
  if (command == "inspect" || command == "dataset" || command == "simulate" ||
      command == "inject" || command == "tpe" || command == "diagnose" || command == "eval" ||
      command == "export") {
    ReexecWithHugePages(argv);
  }
  const std::vector<std::string> args(argv + 2, argv + argc);
  // The commands that analyse one trace show their long work (import, reconstruction,
  // scoring) on a terminal's stderr; the others print progress lines of their own.
  std::optional<teller::ScopedTerminalProgress> progress;
  if (command == "inspect" || command == "diagnose" || command == "export" || command == "inject") {
    progress.emplace();
  }
  if (command == "run") return teller::cli::RunCommand(args, ExeDir());
  if (command == "dump") return teller::cli::DumpCommand(args);
  if (command == "inspect") return teller::cli::InspectCommand(args);
  if (command == "dataset") return teller::cli::DatasetCommand(args);
  if (command == "simulate") return teller::cli::SimulateCommand(args);
  if (command == "inject") return teller::cli::InjectCommand(args);
  if (command == "tpe") return teller::cli::TpeCommand(args);
  if (command == "diagnose") return teller::cli::DiagnoseCommand(args);
  if (command == "eval") return teller::cli::EvalCommand(args);
  if (command == "train") return teller::cli::ModelTrainCommand(args);
  if (command == "export") return teller::cli::TraceExportCommand(args);
  if (command == "logs") return teller::cli::LogsCommand(args);
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
