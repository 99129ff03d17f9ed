// The analysis subcommands, one file each, built into teller-analyze (the `teller` front
// execs it for every command but run and dump: src/cli/main.cc).
#ifndef TELLER_CLI_COMMANDS_H_
#define TELLER_CLI_COMMANDS_H_

#include <string>
#include <vector>

#include "src/cli/collect_commands.h"
#include "teller/core/status.h"
#include "teller/core/trace.h"
#include "teller/diagnose/diagnose.h"
#include "teller/ingest/parts.h"
#include "teller/reconstruct/reconstruct.h"
#include "teller/sim/sim.h"

namespace teller::cli {

// Each takes the arguments after the subcommand name and returns the process exit code.
int InspectCommand(const std::vector<std::string>& args);
int DatasetCommand(const std::vector<std::string>& args);
int SimulateCommand(const std::vector<std::string>& args);
int InjectCommand(const std::vector<std::string>& args);
int TpeCommand(const std::vector<std::string>& args);
// `parts` (teller-mpi): where the files of the TRACEs and baselines are imported; null:
// here (ingest/parts.h).
int DiagnoseCommand(const std::vector<std::string>& args, ingest::PartSource* parts = nullptr);
int EvalCommand(const std::vector<std::string>& args);
int ModelTrainCommand(const std::vector<std::string>& args);  // `teller train`
int TraceExportCommand(const std::vector<std::string>& args);

// Imports `paths` as one trace and reconstructs it with the rules of `rules` (built-in
// ones when empty), as `teller diagnose` and `teller export` read their TRACEs; the files
// of `paths` come from `parts` when it is given (ingest::ImportPaths).
Status LoadTrace(const std::vector<std::string>& paths, const std::string& rules, Trace* trace,
                 reconstruct::Reconstruction* r, ingest::PartSource* parts = nullptr);

// For the commands that end after one report (inspect, diagnose, export, inject): freed
// memory stays in the process, so that each stage's tables do not fault in fresh pages.
void KeepFreedMemory();
// Writes the Chrome trace-event export (report::ToChromeTrace) to `path` and prints what it
// holds; errors go to stderr prefixed with `who`. Returns 0, or 1 on an error.
int WriteChromeTrace(const Trace& trace, const reconstruct::Reconstruction& r,
                     const diagnose::Diagnosis* d, const std::string& path, const char* who);
int LogsCommand(const std::vector<std::string>& args);

// `simulate --compare`: simulates `config` (capped to kCompareRequests requests) into a
// temporary directory that is removed afterwards, imports it and `real_path`, compares and
// prints the realism report on stdout (errors on stderr). Returns 0, or 1 on an error.
inline constexpr int kCompareRequests = 16;
int RunRealismCompare(const sim::SimConfig& config, const std::string& real_path, bool json);

}  // namespace teller::cli

#endif  // TELLER_CLI_COMMANDS_H_
