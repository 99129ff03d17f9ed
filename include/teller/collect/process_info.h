// Who a traced process is: host, pid, parent, command line, and its place in a
// distributed job (rank variables of torchrun, MPI, Slurm and vLLM). Written into every
// raw trace file and into the run manifest.
#ifndef TELLER_COLLECT_PROCESS_INFO_H_
#define TELLER_COLLECT_PROCESS_INFO_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace teller::collect {

struct ProcessIdentity {
  std::string host;
  int64_t pid = 0;
  // Ordered key/value fields: host, pid, ppid, exe, cmdline, start_realtime_ns,
  // start_monotonic_ns, rank, local_rank, world_size (when known) and env.<NAME> for
  // every rank-related variable present.
  std::vector<std::pair<std::string, std::string>> fields;
};

ProcessIdentity ReadProcessIdentity();

// Rank variables looked up, in precedence order for rank/local_rank/world_size.
const std::vector<const char*>& RankVariableNames();

// "<host>.<pid>.<n>.tlr": n disambiguates a pid that execs (same pid, new image).
std::string RawFileName(const std::string& host, int64_t pid, int n);

// The machine's host name ("unknown-host" when it cannot be read).
std::string HostName();

}  // namespace teller::collect

#endif  // TELLER_COLLECT_PROCESS_INFO_H_
