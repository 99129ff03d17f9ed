// Engine steps straight from a trace's events, without building the forest: the
// outermost STEP-layer ranges of each process. Stages that need the steps of a trace they
// do not reconstruct (fault injection, which changes the trace, and the realism
// comparison, which only reads it) find them here, so that every one of them sees the
// same steps.
//
// Unlike Reconstruct, which nests ranges per thread and closes pushes that are never
// popped at their thread's last event, this works on intervals: a step range inside the
// interval of another step range of its process (on any thread) is not a step of its own,
// and a push without its pop is no step.
#ifndef TELLER_RECONSTRUCT_STEP_RANGES_H_
#define TELLER_RECONSTRUCT_STEP_RANGES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "teller/core/trace.h"
#include "teller/reconstruct/reconstruct.h"

namespace teller::reconstruct {

// The end of every range row given the events' times: a complete range's own end (at
// least its start), a push's matching pop (per process and thread, pops first at equal
// times); -1 for a push never popped and for every other row.
std::vector<int64_t> RangeEnds(const Trace& trace, const std::vector<int64_t>& start,
                               const std::vector<int64_t>& end);

struct StepRange {
  uint32_t event = 0;  // the outermost STEP range row
  uint32_t process = 0;
  uint32_t thread = 0;
  int64_t start = 0, end = 0;
  // The step kind its marker gives (StepKind), else that of the first range it holds that
  // gives one; "" when none does.
  std::string kind;
};

// The outermost STEP-layer ranges (by `layers`) with an end in `range_end`
// (RangeEnds), ordered by (process, start, longer first).
std::vector<StepRange> FindStepRanges(const Trace& trace, LayerCache& layers,
                                      const std::vector<int64_t>& range_end);

}  // namespace teller::reconstruct

#endif  // TELLER_RECONSTRUCT_STEP_RANGES_H_
