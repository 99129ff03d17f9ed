// A traced program for the collector's end-to-end tests. It uses NVTX the way real
// programs do (C API and C++ nvtx3 API, several threads, domains, registered strings,
// start/end ranges, payloads), forks a child and execs a copy of itself, and prints to
// stdout and stderr. The expected events are a function of the constants below, which
// the test shares through nvtx_workload.h.
#include "tests/collect/nvtx_workload.h"

#include <nvtx3/nvToolsExt.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <nvtx3/nvtx3.hpp>
#include <string>
#include <thread>
#include <vector>

namespace {

struct WorkloadDomain {
  static constexpr const char* name{"workload"};
};

void ThreadBody(int t) {
  // Registered strings and a domain, through the C++ API.
  static nvtx3::registered_string_in<WorkloadDomain> kRegistered{"registered-step"};
  for (int i = 0; i < kIterations; ++i) {
    const std::string outer = "t" + std::to_string(t) + "/outer/" + std::to_string(i);
    nvtxRangePushA(outer.c_str());
    {
      nvtx3::scoped_range_in<WorkloadDomain> inner{kRegistered};
      nvtxEventAttributes_t attr{};
      attr.version = NVTX_VERSION;
      attr.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
      attr.messageType = NVTX_MESSAGE_TYPE_ASCII;
      attr.message.ascii = "leaf";
      attr.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
      attr.payload.ullValue = static_cast<uint64_t>(t * 1000 + i);
      nvtxRangePushEx(&attr);
      nvtxRangePop();
    }
    nvtxRangePop();
  }
}

int RunMain(const char* self) {
  nvtxNameOsThreadA(static_cast<uint32_t>(gettid()), "main-thread");
  nvtxRangeId_t across = nvtxRangeStartA("across-threads");
  nvtxRangePushA("main/setup");
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(ThreadBody, t);
  for (auto& th : threads) th.join();
  nvtxRangePop();

  std::fflush(stdout);
  const pid_t forked = fork();
  if (forked == 0) {
    for (int i = 0; i < kChildRanges; ++i) {
      nvtxRangePushA("fork-child/range");
      nvtxRangePop();
    }
    std::printf("fork child done\n");
    std::fflush(stdout);
    std::exit(0);
  }
  const pid_t execed = fork();
  if (execed == 0) {
    execl(self, self, "exec-child", static_cast<char*>(nullptr));
    _exit(99);
  }
  int status = 0;
  waitpid(forked, &status, 0);
  const bool fork_ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  waitpid(execed, &status, 0);
  const bool exec_ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  nvtxRangeEnd(across);
  nvtxMarkA("main/done");
  std::printf("workload done fork_ok=%d exec_ok=%d\n", fork_ok, exec_ok);
  std::fprintf(stderr, "workload stderr line\n");
  return kExitCode;
}

int RunExecChild() {
  for (int i = 0; i < kChildRanges; ++i) {
    nvtxRangePushA("exec-child/outer");
    nvtxRangePushA("exec-child/inner");
    nvtxRangePop();
    nvtxRangePop();
  }
  std::printf("exec child done\n");
  return 0;
}

// Marks "tick <i>" every millisecond, sleeps a little, marks once more and dies by
// SIGKILL: every mark must survive.
int RunKilled() {
  char name[32];
  for (int i = 0; i < kTicks; ++i) {
    std::snprintf(name, sizeof(name), "tick %d", i);
    nvtxMarkA(name);
    usleep(1000);
  }
  usleep(kSleepAfterTicksMs * 1000);
  nvtxMarkA("after-sleep");
  std::printf("about to be killed\n");
  std::fflush(stdout);
  raise(SIGKILL);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "exec-child") == 0) return RunExecChild();
  if (argc > 1 && std::strcmp(argv[1], "killed") == 0) return RunKilled();
  if (argc > 1 && std::strcmp(argv[1], "hold") == 0) {  // for signal forwarding tests
    std::printf("holding\n");
    std::fflush(stdout);
    pause();
    return 0;
  }
  return RunMain(argv[0]);
}
