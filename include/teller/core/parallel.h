// Independent pieces of work run on the cores available. The body gets each index in
// [0, n) once, from whichever worker takes it next; results must go to places of their own
// (one slot per index), so that they are the same whatever the number of workers and the
// order they finish in.
#ifndef TELLER_CORE_PARALLEL_H_
#define TELLER_CORE_PARALLEL_H_

#include <cstddef>
#include <functional>

namespace teller {

// Workers: the hardware's threads, at most 8 and at most n; TELLER_THREADS=N sets another
// number (1: everything on the calling thread).
size_t WorkerCount(size_t n);

// Runs body(i) for every i in [0, n), on WorkerCount(n) threads (the calling one among
// them). The body must not throw.
void ParallelFor(size_t n, const std::function<void(size_t)>& body);

}  // namespace teller

#endif  // TELLER_CORE_PARALLEL_H_
