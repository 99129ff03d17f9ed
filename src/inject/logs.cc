// Log lines move with the host timeline of their process.
#include "src/inject/replay.h"

namespace teller::inject::internal {

// Log lines carry no thread: a line of a process moves with the host thread that runs
// its steps (or its busiest one), by the delay that thread had accumulated when the line
// was printed. Lines of no known process move with the only process that has host
// events, if there is one.
uint64_t ShiftLogs(Trace& trace, const Replay& replay, const std::vector<StepRange>& steps) {
  LogTable& logs = trace.logs;
  if (logs.size() == 0) return 0;
  const EventTable& ev = trace.events;
  const size_t procs = trace.processes.size();
  std::vector<std::map<uint32_t, size_t>> host_count(procs), step_count(procs);
  for (uint32_t i = 0; i < ev.size(); ++i) {
    if (IsHostEvent(ev.type[i]) && ev.process[i] < procs) ++host_count[ev.process[i]][ev.thread[i]];
  }
  for (const StepRange& s : steps) ++step_count[s.process][s.thread];
  std::vector<int64_t> thread(procs, -1);
  uint32_t with_host = 0, only = 0;
  for (uint32_t p = 0; p < procs; ++p) {
    const auto& counts = !step_count[p].empty() ? step_count[p] : host_count[p];
    size_t best = 0;
    for (const auto& [t, n] : counts) {
      if (n > best) {
        best = n;
        thread[p] = t;
      }
    }
    if (!host_count[p].empty()) {
      ++with_host;
      only = p;
    }
  }
  // Per process: (time, delay) at every start and end on its reference thread, with the
  // running maximum of the delay (a thread's delay never shrinks).
  std::vector<std::vector<std::pair<int64_t, int64_t>>> timeline(procs);
  for (uint32_t i = 0; i < ev.size(); ++i) {
    const uint32_t p = ev.process[i];
    if (p >= procs || !IsHostEvent(ev.type[i]) || static_cast<int64_t>(ev.thread[i]) != thread[p])
      continue;
    timeline[p].emplace_back(replay.s0()[i], replay.ns[i] - replay.s0()[i]);
    timeline[p].emplace_back(replay.e0()[i], replay.ne[i] - replay.e0()[i]);
  }
  for (auto& t : timeline) {
    std::sort(t.begin(), t.end());
    for (size_t k = 1; k < t.size(); ++k) t[k].second = std::max(t[k].second, t[k - 1].second);
  }
  uint64_t moved = 0;
  for (uint32_t r = 0; r < logs.size(); ++r) {
    if (logs.ts_ns[r] == LogTable::kNoTime) continue;
    uint32_t p = logs.process[r];
    if (p == LogTable::kNoProcess || p >= procs || timeline[p].empty()) {
      if (with_host != 1) continue;
      p = only;
    }
    const auto& t = timeline[p];
    const auto it = std::upper_bound(
        t.begin(), t.end(), std::make_pair(logs.ts_ns[r], std::numeric_limits<int64_t>::max()));
    if (it == t.begin()) continue;
    const int64_t d = std::prev(it)->second;
    if (d > 0) {
      logs.ts_ns[r] += d;
      ++moved;
    }
  }
  return moved;
}

}  // namespace teller::inject::internal
