// Cross-host clock alignment (docs/method.md §2 step 1; docs/serving-notes.md §5.3, §5.5).
// Processes on one host share its clock; hosts differ by their NTP/PTP offset. A
// collective ends at nearly the same instant on every rank (within microseconds, while
// starts spread by milliseconds), so the median difference of matching collective
// kernels' end times between a host and the reference host estimates that host's offset.
// Matching (collectives.h): the k-th kernel of a given communication-kernel name on one
// process is paired with the k-th of the same name on the other, for names that occur
// equally often on both.
#include <algorithm>
#include <unordered_map>

#include "teller/reconstruct/collectives.h"
#include "teller/reconstruct/reconstruct.h"

namespace teller::reconstruct {
namespace {

constexpr size_t kMinPairs = 3;

}  // namespace

void AlignHostClocks(Trace& trace, const Classifier& classifier) {
  LayerCache layers(classifier, trace);
  AlignHostClocks(trace, layers);
}

void AlignHostClocks(Trace& trace, LayerCache& layers) {
  AlignHostClocks(trace, IndexCommKernels(trace, layers));
}

void AlignHostClocks(Trace& trace, const CommKernelIndex& index) {
  const EventTable& ev = trace.events;
  std::unordered_map<StringId, bool> has_events;
  for (size_t i = 0; i < ev.size(); ++i) has_events[trace.processes[ev.process[i]].host] = true;
  // Hosts in order of first appearance; the first is the reference.
  std::vector<StringId> hosts;
  for (const auto& p : trace.processes) {
    if (std::find(hosts.begin(), hosts.end(), p.host) == hosts.end()) hosts.push_back(p.host);
  }
  if (hosts.size() < 2) return;
  std::unordered_map<StringId, int64_t> offset_of_host;
  offset_of_host[hosts[0]] = 0;
  for (size_t h = 1; h < hosts.size(); ++h) {
    // A host with no events (processes only log lines name) has nothing to align.
    if (!has_events[hosts[h]]) continue;
    std::vector<int64_t> diffs;
    for (uint32_t a = 0; a < trace.processes.size(); ++a) {
      if (trace.processes[a].host != hosts[h]) continue;
      for (uint32_t b = 0; b < trace.processes.size(); ++b) {
        if (trace.processes[b].host != hosts[0]) continue;
        const std::vector<int64_t> d = EndDifferences(trace, index, b, a, true);
        diffs.insert(diffs.end(), d.begin(), d.end());
      }
    }
    if (diffs.size() < kMinPairs) {
      trace.counters.Add(CounterId::kReconstructClockUnalignedHosts);
      continue;
    }
    std::nth_element(diffs.begin(), diffs.begin() + diffs.size() / 2, diffs.end());
    offset_of_host[hosts[h]] = diffs[diffs.size() / 2];
    trace.counters.Add(CounterId::kReconstructClockAlignedHosts);
  }
  // Apply: shift every event and log line of the host's processes.
  std::vector<int64_t> shift(trace.processes.size(), 0);
  for (uint32_t p = 0; p < trace.processes.size(); ++p) {
    const auto it = offset_of_host.find(trace.processes[p].host);
    if (it == offset_of_host.end() || it->second == 0) continue;
    // Idempotent: only the change relative to an earlier alignment is applied.
    shift[p] = it->second - trace.processes[p].clock_offset_ns;
    trace.processes[p].clock_offset_ns = it->second;
  }
  EventTable& mut = trace.events;
  for (size_t i = 0; i < mut.size(); ++i) {
    const int64_t s = shift[mut.process[i]];
    if (s == 0) continue;
    mut.start_ns[i] += s;
    mut.end_ns[i] += s;
  }
  LogTable& logs = trace.logs;
  for (size_t i = 0; i < logs.size(); ++i) {
    if (logs.process[i] == LogTable::kNoProcess || logs.ts_ns[i] == LogTable::kNoTime) continue;
    logs.ts_ns[i] += shift[logs.process[i]];
  }
}

}  // namespace teller::reconstruct
