// Constants shared by nvtx_workload.cc and the tests that check what it recorded.
#ifndef TELLER_TESTS_COLLECT_NVTX_WORKLOAD_H_
#define TELLER_TESTS_COLLECT_NVTX_WORKLOAD_H_

inline constexpr int kThreads = 3;
inline constexpr int kIterations = 200;
inline constexpr int kChildRanges = 50;
inline constexpr int kExitCode = 7;
inline constexpr int kTicks = 300;
inline constexpr int kSleepAfterTicksMs = 50;

#endif  // TELLER_TESTS_COLLECT_NVTX_WORKLOAD_H_
