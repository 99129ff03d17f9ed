// Cross-host clock alignment (method.md §2 step 1; serving-reference.md §5.3, §5.5).
// Processes on one host share its clock; hosts differ by their NTP/PTP offset. A
// collective ends at nearly the same instant on every rank (within microseconds, while
// starts spread by milliseconds), so the median difference of matching collective
// kernels' end times between a host and the reference host estimates that host's offset.
// Matching: the k-th kernel of a given communication-kernel name on one process is paired
// with the k-th of the same name on the other, for names that occur equally often on both.
#include <algorithm>
#include <map>
#include <unordered_map>

#include "teller/reconstruct/reconstruct.h"

namespace teller::reconstruct {
namespace {

constexpr size_t kMinPairs = 3;

using EndsByName = std::map<StringId, std::vector<int64_t>>;

}  // namespace

void AlignHostClocks(Trace& trace, Classifier& classifier) {
  const EventTable& ev = trace.events;
  // Communication-kernel end times per process and kernel name, in time order.
  std::vector<EndsByName> ends(trace.processes.size());
  std::unordered_map<StringId, bool> has_events;
  for (size_t i = 0; i < ev.size(); ++i) has_events[trace.processes[ev.process[i]].host] = true;
  for (size_t i = 0; i < ev.size(); ++i) {
    if (ev.type[i] != EventType::kKernel) continue;
    if (classifier.Classify(trace, i) != Layer::kComm) continue;
    ends[ev.process[i]][ev.name[i]].push_back(ev.end_ns[i]);
  }
  for (auto& by_name : ends) {
    for (auto& [name, times] : by_name) std::sort(times.begin(), times.end());
  }
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
        for (const auto& [name, mine] : ends[a]) {
          const auto it = ends[b].find(name);
          if (it == ends[b].end() || it->second.size() != mine.size()) continue;
          for (size_t k = 0; k < mine.size(); ++k) diffs.push_back(it->second[k] - mine[k]);
        }
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
