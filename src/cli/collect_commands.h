// The subcommands built into the small `teller` front (src/cli/main.cc): those that run
// or read a collection and need none of the analysis libraries.
#ifndef TELLER_CLI_COLLECT_COMMANDS_H_
#define TELLER_CLI_COLLECT_COMMANDS_H_

#include <string>
#include <vector>

namespace teller::cli {

// `teller run`: `exe_dir` is the folder of the running binary; the injection libraries are
// in `exe_dir`/../lib.
int RunCommand(const std::vector<std::string>& args, const std::string& exe_dir);
int DumpCommand(const std::vector<std::string>& args);

}  // namespace teller::cli

#endif  // TELLER_CLI_COLLECT_COMMANDS_H_
