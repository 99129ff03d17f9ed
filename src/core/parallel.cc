#include "teller/core/parallel.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <thread>
#include <vector>

namespace teller {

size_t WorkerCount(size_t n) {
  size_t workers = std::max(1u, std::thread::hardware_concurrency());
  workers = std::min<size_t>(workers, 8);
  if (const char* env = std::getenv("TELLER_THREADS")) {
    char* end = nullptr;
    const long t = std::strtol(env, &end, 10);
    if (end != env && *end == '\0' && t >= 1 && t <= 256) workers = static_cast<size_t>(t);
  }
  return std::max<size_t>(1, std::min(workers, n));
}

void ParallelFor(size_t n, const std::function<void(size_t)>& body) {
  const size_t workers = WorkerCount(n);
  if (workers <= 1) {
    for (size_t i = 0; i < n; ++i) body(i);
    return;
  }
  // Indices are taken one at a time: pieces differ in cost by orders of magnitude (a
  // family of 8 instances and one of 96), so a static split would leave a core idle.
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next.fetch_add(1); i < n; i = next.fetch_add(1)) body(i);
  };
  std::vector<std::thread> threads;
  threads.reserve(workers - 1);
  for (size_t w = 1; w < workers; ++w) threads.emplace_back(work);
  work();
  for (std::thread& t : threads) t.join();
}

}  // namespace teller
