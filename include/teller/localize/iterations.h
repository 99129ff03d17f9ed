// Iterations of a timeline that has no step markers (docs/localization.md, "No step
// markers"): a benchmark or training script profiled without ProfilerStep still runs its
// loop body several times, and each pass is a unit whose positions can be compared with
// the other passes'.
#ifndef TELLER_LOCALIZE_ITERATIONS_H_
#define TELLER_LOCALIZE_ITERATIONS_H_

#include <cstdint>
#include <vector>

#include "teller/core/trace.h"
#include "teller/reconstruct/reconstruct.h"

namespace teller::localize {

struct Iterations {
  // Host times at which the units after the first begin: the iterations, and the
  // prologue and epilogue when there are; empty when the process's work shows no
  // iterations.
  std::vector<int64_t> cuts_ns;
  uint32_t period = 0;  // GPU operations per iteration
  // GPU work ran before the first iteration (set-up: weight copies, allocations): the
  // first unit is this prologue, not an iteration. It also holds the host work before it.
  bool prologue = false;
  // GPU work ran after the last whole iteration (a partial pass, tear-down): the last unit
  // is this epilogue.
  bool epilogue = false;
};

// The iterations of one process, found in the sequence of its GPU operations in launch
// order: the period P whose consecutive copies (operation i named as operation i + P, a
// few substitutions allowed) cover the most operations in one run, at least two copies
// holding at least half the process's GPU time, and a synchronizing host call between
// every two copies (a loop body ends by waiting for its results; the layers of one
// forward pass do not). `roots` are the process's root nodes.
Iterations FindIterations(const Trace& t, const reconstruct::Reconstruction& r,
                          const std::vector<uint32_t>& roots);

// The process's work split at the cuts: per iteration, the nodes whose subtrees it holds,
// by start. A node lies in the iteration its host extent lies in (its GPU work goes with
// it); a range around several iterations belongs to none and its children are split;
// a node without children that straddles a cut goes where it starts.
std::vector<std::vector<uint32_t>> SplitAtCuts(const reconstruct::Reconstruction& r,
                                               const std::vector<uint32_t>& roots,
                                               const std::vector<int64_t>& cuts);

}  // namespace teller::localize

#endif  // TELLER_LOCALIZE_ITERATIONS_H_
