// Constants shared by crash_workload.cc and the test that diagnoses its trace.
#ifndef TELLER_TESTS_COLLECT_CRASH_WORKLOAD_H_
#define TELLER_TESTS_COLLECT_CRASH_WORKLOAD_H_

inline constexpr int kCrashFlushMs = 50;   // the test runs it with --flush-ms 50
inline constexpr int kCrashDelayMs = 400;  // 8 flush intervals before it crashes

#endif  // TELLER_TESTS_COLLECT_CRASH_WORKLOAD_H_
