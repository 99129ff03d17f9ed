#include "teller/collect/process_info.h"

#include <fcntl.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <string_view>

#include "teller/core/clock.h"

namespace teller::collect {
namespace {

std::string ReadSmallFile(const char* path) {
  std::string out;
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0 && out.size() < (1u << 20)) {
    out.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return out;
}

// The first variable of `names` that is set, or "".
std::string FirstSet(std::initializer_list<const char*> names) {
  for (const char* name : names) {
    if (const char* v = std::getenv(name); v != nullptr && *v != '\0') return v;
  }
  return {};
}

}  // namespace

const std::vector<const char*>& RankVariableNames() {
  static const std::vector<const char*> kNames = {
      // torchrun / torch.distributed
      "RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "ROLE_RANK",
      "NODE_RANK", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID",
      // vLLM data parallelism
      "VLLM_DP_RANK", "VLLM_DP_RANK_LOCAL", "VLLM_DP_SIZE",
      // MPI launchers and Slurm
      "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_SIZE", "PMI_RANK",
      "PMI_SIZE", "PMIX_RANK", "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS", "SLURM_NODEID",
      // device selection
      "CUDA_VISIBLE_DEVICES",
      // set by `teller run`
      "TELLER_RUN_ID"};
  return kNames;
}

std::string HostName() {
  char host[HOST_NAME_MAX + 1] = {};
  if (gethostname(host, sizeof(host) - 1) != 0 || host[0] == '\0') return "unknown-host";
  return host;
}

std::string RawFileName(const std::string& host, int64_t pid, int n) {
  return host + "." + std::to_string(pid) + "." + std::to_string(n) + ".tlr";
}

ProcessIdentity ReadProcessIdentity() {
  ProcessIdentity id;
  id.host = HostName();
  id.pid = getpid();
  auto& f = id.fields;
  f.emplace_back("host", id.host);
  f.emplace_back("pid", std::to_string(id.pid));
  f.emplace_back("ppid", std::to_string(getppid()));
  char exe[PATH_MAX + 1] = {};
  if (readlink("/proc/self/exe", exe, PATH_MAX) > 0) f.emplace_back("exe", exe);
  std::string cmdline = ReadSmallFile("/proc/self/cmdline");
  while (!cmdline.empty() && cmdline.back() == '\0') cmdline.pop_back();
  // Arguments are NUL-separated in /proc; keep them as one line with a unit separator
  // (\x1f) so that arguments with spaces survive.
  for (char& c : cmdline) {
    if (c == '\0') c = '\x1f';
  }
  f.emplace_back("argv", cmdline);
  std::string display = cmdline;
  for (char& c : display) {
    if (c == '\x1f') c = ' ';
  }
  f.emplace_back("cmdline", display);
  const ClockPair now = ReadClockPair();
  f.emplace_back("start_realtime_ns", std::to_string(now.realtime_ns));
  f.emplace_back("start_monotonic_ns", std::to_string(now.monotonic_ns));
  if (auto v = FirstSet({"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"});
      !v.empty()) {
    f.emplace_back("rank", v);
  }
  if (auto v = FirstSet({"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID"});
      !v.empty()) {
    f.emplace_back("local_rank", v);
  }
  if (auto v = FirstSet({"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS"});
      !v.empty()) {
    f.emplace_back("world_size", v);
  }
  for (const char* name : RankVariableNames()) {
    if (const char* v = std::getenv(name); v != nullptr) {
      f.emplace_back(std::string("env.") + name, v);
    }
  }
  return id;
}

}  // namespace teller::collect
