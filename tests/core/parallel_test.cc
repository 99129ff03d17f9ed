// ParallelFor (core/parallel.h): every index exactly once, whatever the number of workers.
#include "teller/core/parallel.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <string>
#include <vector>

namespace teller {
namespace {

// Sets TELLER_THREADS for the scope of the object.
class Threads {
 public:
  explicit Threads(const char* n) { setenv("TELLER_THREADS", n, 1); }
  ~Threads() { unsetenv("TELLER_THREADS"); }
};

TEST(ParallelFor, EveryIndexOnceWithAnyNumberOfWorkers) {
  for (const char* workers : {"1", "2", "5"}) {
    Threads threads(workers);
    EXPECT_EQ(WorkerCount(1000), static_cast<size_t>(std::stoi(workers)));
    // Pieces of very different cost: 1000 slots, slot i sums 0..i*10.
    std::vector<std::atomic<int>> calls(1000);
    std::vector<long> sums(1000, 0);
    ParallelFor(1000, [&](size_t i) {
      ++calls[i];
      long s = 0;
      for (long k = 0; k <= static_cast<long>(i) * 10; ++k) s += k;
      sums[i] = s;
    });
    for (size_t i = 0; i < 1000; ++i) {
      ASSERT_EQ(calls[i].load(), 1) << workers << " workers, index " << i;
      const long m = static_cast<long>(i) * 10;
      ASSERT_EQ(sums[i], m * (m + 1) / 2) << i;  // Gauss's sum
    }
  }
}

TEST(ParallelFor, NoMoreWorkersThanPiecesAndNothingForNone) {
  Threads threads("4");
  EXPECT_EQ(WorkerCount(3), 3u);
  EXPECT_EQ(WorkerCount(0), 1u);
  int called = 0;
  ParallelFor(0, [&](size_t) { ++called; });
  EXPECT_EQ(called, 0);
  // A value that is not a number is ignored: the hardware's count, at most 8.
  setenv("TELLER_THREADS", "many", 1);
  EXPECT_GE(WorkerCount(100), 1u);
  EXPECT_LE(WorkerCount(100), 8u);
}

}  // namespace
}  // namespace teller
