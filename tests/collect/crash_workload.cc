// A traced program that dies inside an NVTX range, for the end-to-end test of the failure
// findings (diagnose_failures_e2e_test.cc): it opens "ProfilerStep#7", runs and closes
// "embedding" inside it, opens "forward", waits longer than the test's flush interval so
// that the collector has written these events, then writes through a null pointer and dies
// of SIGSEGV with both ranges open.
#include "tests/collect/crash_workload.h"

#include <nvtx3/nvToolsExt.h>
#include <unistd.h>

#include <cstdio>

int main() {
  nvtxRangePushA("ProfilerStep#7");
  nvtxRangePushA("embedding");
  nvtxRangePop();
  nvtxRangePushA("forward");
  std::printf("step 7: forward started\n");
  std::fflush(stdout);
  usleep(kCrashDelayMs * 1000);
  // Both volatile: the compiler can neither prove the pointer null nor drop the store.
  volatile int* volatile target = nullptr;
  *target = 42;
  return 0;
}
