// teller-analyze: the analysis commands of teller (inspect, diagnose, simulate, dataset,
// train, eval...), one file per subcommand. Users start them as `teller <command>`: the
// small `teller` front (src/cli/main.cc) runs and dumps collections itself and execs this
// binary, from its own folder and with the same arguments, for everything else, so that
// `teller run` does not pay for loading the analysis libraries (xgboost, OpenBLAS,
// libtorch) before it starts the traced program.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "src/cli/commands.h"
#include "teller/core/progress.h"

namespace {

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

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fputs("usage: teller <command> [options] ('teller help' lists the commands)\n", stderr);
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
    teller::cli::KeepFreedMemory();
  }
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
  std::fprintf(stderr, "teller: unknown command '%s' ('teller help' lists the commands)\n",
               command.c_str());
  return 2;
}
