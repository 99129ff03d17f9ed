// The subcommands of the `teller` executable, one file each.
#ifndef TELLER_CLI_COMMANDS_H_
#define TELLER_CLI_COMMANDS_H_

#include <string>
#include <vector>

namespace teller::cli {

// Each takes the arguments after the subcommand name and returns the process exit code.
int RunCommand(const std::vector<std::string>& args, const std::string& exe_dir);
int DumpCommand(const std::vector<std::string>& args);
int InspectCommand(const std::vector<std::string>& args);
int DatasetCommand(const std::vector<std::string>& args);
int SimulateCommand(const std::vector<std::string>& args);
int InjectCommand(const std::vector<std::string>& args);
int TpeCommand(const std::vector<std::string>& args);
int DiagnoseCommand(const std::vector<std::string>& args);
int EvalCommand(const std::vector<std::string>& args);

}  // namespace teller::cli

#endif  // TELLER_CLI_COMMANDS_H_
