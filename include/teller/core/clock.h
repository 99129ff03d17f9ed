// The event clock. Every timestamp Teller records is CLOCK_MONOTONIC nanoseconds of the
// host that recorded it: immune to NTP steps inside a run. Clock anchors (REALTIME and
// MONOTONIC read back to back) map it to wall time across processes and nodes.
#ifndef TELLER_CORE_CLOCK_H_
#define TELLER_CORE_CLOCK_H_

#include <cstdint>
#include <ctime>

namespace teller {

inline int64_t ReadClockNs(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// Event-clock now (CLOCK_MONOTONIC, through the vDSO: about 20 ns).
inline int64_t EventClockNs() { return ReadClockNs(CLOCK_MONOTONIC); }

struct ClockPair {
  int64_t realtime_ns = 0;
  int64_t monotonic_ns = 0;
  int64_t uncertainty_ns = 0;  // width of the window the pair was read in
};

// Reads REALTIME between two MONOTONIC reads, several times, and keeps the tightest
// window, so that the pair is accurate to tens of nanoseconds.
ClockPair ReadClockPair();

}  // namespace teller

#endif  // TELLER_CORE_CLOCK_H_
