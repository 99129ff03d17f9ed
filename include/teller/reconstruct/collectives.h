// Collective groups: which communication kernels on different processes are one
// collective operation. A collective ends at nearly the same instant on every rank (within
// microseconds, while starts spread by milliseconds and host clocks differ by their NTP/PTP
// offset), so the k-th kernel of a communication-kernel name on one process is paired with
// the k-th of the same name on another (in start order), and two processes are coupled when
// the end-time differences of their pairs agree around their median. The median is then the
// clock offset between them.
//
// One implementation serves cross-host clock alignment (AlignHostClocks), fault injection
// (a collective waits for its last member), and, through the groups that Reconstruct keeps
// (Reconstruction::collectives), the horizontal view, slices and localization.
#ifndef TELLER_RECONSTRUCT_COLLECTIVES_H_
#define TELLER_RECONSTRUCT_COLLECTIVES_H_

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "teller/core/trace.h"
#include "teller/reconstruct/reconstruct.h"

namespace teller::reconstruct {

// The communication kernels of every process, numbered per name in start order: the
// matching that every user of collectives shares.
struct CommKernelIndex {
  using Key = std::pair<StringId, uint32_t>;        // (kernel name, occurrence on the process)
  std::vector<std::map<Key, uint32_t>> keyed;       // per process: key -> event row
  std::vector<std::map<StringId, uint32_t>> count;  // per process: kernels per name
  std::vector<uint8_t> is_comm;                     // per event: a communication kernel
};
CommKernelIndex IndexCommKernels(const Trace& trace, LayerCache& layers);

// end(a's kernel) - end(b's kernel) for every key both processes have; with
// `same_count_only`, only for names that occur equally often on both (a rank that lost
// kernels at a trace's edge would pair the wrong occurrences).
std::vector<int64_t> EndDifferences(const Trace& trace, const CommKernelIndex& index, uint32_t a,
                                    uint32_t b, bool same_count_only);

struct CollectiveGroups {
  // Pairs of processes whose end times disagree by more than this around their median
  // offset are not the same communicator.
  static constexpr int64_t kEndSpreadNs = 20'000;

  std::vector<std::vector<uint32_t>> groups;  // event rows, one per process, by process
  std::vector<int32_t> group_of;              // per event: its group, -1 = none
  std::vector<int32_t> cluster_of;            // per process: coupled set, -1 = no collectives
  // Per process: the clock offset to the first process of its cluster (the median
  // end-time difference of their pairs), in ns; 0 for a cluster's first process.
  std::vector<int64_t> proc_offset;
};

// A process joins the first cluster whose first process it is coupled to (at least half of
// the smaller process's communication kernels paired, median absolute deviation of the
// differences within kEndSpreadNs). A group is one key on two or more processes of a
// cluster.
CollectiveGroups FindCollectiveGroups(const Trace& trace, const CommKernelIndex& index);

// AlignHostClocks (reconstruct.h) over an index of the trace's communication kernels; the
// index stays valid afterwards (a host's events all move by the same amount, so no
// process's kernels change their order).
void AlignHostClocks(Trace& trace, const CommKernelIndex& index);

}  // namespace teller::reconstruct

#endif  // TELLER_RECONSTRUCT_COLLECTIVES_H_
