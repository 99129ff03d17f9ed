// Host ranges and the outermost engine steps of a trace, before any change.
#include "src/inject/inject_internal.h"

namespace teller::inject::internal {

// Complete interval of each range row (kRange: its end; kPush: its pop), -1 when none.
std::vector<int64_t> RangeEnds(const Trace& trace, const std::vector<int64_t>& start,
                               const std::vector<int64_t>& end) {
  const EventTable& ev = trace.events;
  std::vector<int64_t> out(ev.size(), -1);
  std::map<std::pair<uint32_t, uint32_t>, std::vector<uint32_t>> pushpop;
  for (uint32_t i = 0; i < ev.size(); ++i) {
    if (ev.type[i] == EventType::kRange) out[i] = std::max(end[i], start[i]);
    if (ev.type[i] == EventType::kPush || ev.type[i] == EventType::kPop) {
      pushpop[{ev.process[i], ev.thread[i]}].push_back(i);
    }
  }
  for (auto& [key, rows] : pushpop) {
    std::stable_sort(rows.begin(), rows.end(), [&](uint32_t a, uint32_t b) {
      if (start[a] != start[b]) return start[a] < start[b];
      return ev.type[a] == EventType::kPop && ev.type[b] != EventType::kPop;
    });
    std::vector<uint32_t> stack;
    for (const uint32_t r : rows) {
      if (ev.type[r] == EventType::kPush) {
        stack.push_back(r);
      } else if (!stack.empty()) {
        out[stack.back()] = start[r];
        stack.pop_back();
      }
    }
  }
  return out;
}

// Outermost STEP ranges (classifier rules), per process by start.
std::vector<StepRange> OuterSteps(const Trace& trace, reconstruct::LayerCache& layers,
                                  const std::vector<int64_t>& range_end) {
  const EventTable& ev = trace.events;
  std::vector<StepRange> all;
  for (uint32_t i = 0; i < ev.size(); ++i) {
    if ((ev.type[i] != EventType::kRange && ev.type[i] != EventType::kPush) || range_end[i] < 0)
      continue;
    if (layers.Of(i) != Layer::kStep) continue;
    all.push_back({i, ev.process[i], ev.thread[i], ev.start_ns[i], range_end[i]});
  }
  std::sort(all.begin(), all.end(), [](const StepRange& a, const StepRange& b) {
    if (a.process != b.process) return a.process < b.process;
    if (a.start != b.start) return a.start < b.start;
    return a.end > b.end;
  });
  std::vector<StepRange> outer;
  for (const StepRange& s : all) {
    if (!outer.empty() && outer.back().process == s.process && s.start >= outer.back().start &&
        s.end <= outer.back().end) {
      continue;
    }
    outer.push_back(s);
  }
  return outer;
}
}  // namespace teller::inject::internal
