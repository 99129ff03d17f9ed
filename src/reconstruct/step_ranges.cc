// Engine steps from a trace's events (include/teller/reconstruct/step_ranges.h).
#include "teller/reconstruct/step_ranges.h"

#include <algorithm>
#include <map>
#include <utility>

namespace teller::reconstruct {

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

std::vector<StepRange> FindStepRanges(const Trace& trace, LayerCache& layers,
                                      const std::vector<int64_t>& range_end) {
  const EventTable& ev = trace.events;
  std::vector<StepRange> all;
  for (uint32_t i = 0; i < ev.size(); ++i) {
    if ((ev.type[i] != EventType::kRange && ev.type[i] != EventType::kPush) || range_end[i] < 0)
      continue;
    if (layers.Of(i) != Layer::kStep) continue;
    all.push_back({i, ev.process[i], ev.thread[i], ev.start_ns[i], range_end[i], {}});
  }
  std::sort(all.begin(), all.end(), [](const StepRange& a, const StepRange& b) {
    if (a.process != b.process) return a.process < b.process;
    if (a.start != b.start) return a.start < b.start;
    return a.end > b.end;
  });
  std::vector<StepRange> outer;
  for (StepRange& s : all) {
    const bool inside = !outer.empty() && outer.back().process == s.process &&
                        s.start >= outer.back().start && s.end <= outer.back().end;
    if (inside && !outer.back().kind.empty()) continue;
    const std::string kind = StepKind(trace.strings.Get(ev.name[s.event]));
    if (inside) {
      outer.back().kind = kind;
      continue;
    }
    s.kind = kind;
    outer.push_back(std::move(s));
  }
  return outer;
}

}  // namespace teller::reconstruct
