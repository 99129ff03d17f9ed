#include "teller/core/clock.h"

namespace teller {

ClockPair ReadClockPair() {
  ClockPair best;
  best.uncertainty_ns = INT64_MAX;
  for (int attempt = 0; attempt < 5; ++attempt) {
    const int64_t before = ReadClockNs(CLOCK_MONOTONIC);
    const int64_t real = ReadClockNs(CLOCK_REALTIME);
    const int64_t after = ReadClockNs(CLOCK_MONOTONIC);
    if (after - before < best.uncertainty_ns) {
      best.realtime_ns = real;
      best.monotonic_ns = before + (after - before) / 2;
      best.uncertainty_ns = after - before;
    }
  }
  return best;
}

}  // namespace teller
