// Locators resolved in a trace, and the comparison of a written trace with its re-import.
#include "src/inject/inject_internal.h"

namespace teller::inject {
using namespace internal;

namespace {

// Resolves many locators in one pass over the events (the check after an injection
// resolves hundreds of thousands).
struct RangeKey {
  uint32_t process, thread;
  StringId name;
  bool operator==(const RangeKey&) const = default;
};
struct CorrKey {
  uint32_t process;
  uint64_t correlation;
  bool operator==(const CorrKey&) const = default;
};
struct KeyHash {
  size_t operator()(const RangeKey& k) const {
    return SplitMix((static_cast<uint64_t>(k.process) << 32 | k.thread) ^
                    (static_cast<uint64_t>(k.name) << 17));
  }
  size_t operator()(const CorrKey& k) const {
    return SplitMix(k.correlation ^ (static_cast<uint64_t>(k.process) << 48));
  }
};

}  // namespace

namespace internal {
std::vector<int64_t> ResolveAll(const Trace& trace,
                                const std::vector<const NodeLocator*>& locators) {
  std::vector<int64_t> out(locators.size(), -1);
  std::map<std::pair<std::string, int64_t>, uint32_t> process_of;
  for (uint32_t p = 0; p < trace.processes.size(); ++p) {
    process_of.emplace(std::make_pair(std::string(trace.strings.Get(trace.processes[p].host)),
                                      trace.processes[p].pid),
                       p);
  }
  // Per key: the locators asking for it, and how many rows of the key were seen.
  struct Want {
    std::vector<size_t> locators;  // sorted by occurrence before the pass
    uint32_t seen = 0;
    size_t cursor = 0;
  };
  std::unordered_map<RangeKey, Want, KeyHash> ranges;
  std::unordered_map<CorrKey, Want, KeyHash> calls, gpus;
  for (size_t k = 0; k < locators.size(); ++k) {
    const NodeLocator& l = *locators[k];
    const auto it = process_of.find({l.host, l.pid});
    if (it == process_of.end()) continue;
    const uint32_t p = it->second;
    switch (l.kind) {
      case NodeLocator::Kind::kRange: {
        const StringId name = trace.strings.Find(l.name);
        if (name != StringPool::kNotFound) ranges[RangeKey{p, l.tid, name}].locators.push_back(k);
        break;
      }
      case NodeLocator::Kind::kCall:
        calls[CorrKey{p, l.correlation}].locators.push_back(k);
        break;
      case NodeLocator::Kind::kGpu:
        gpus[CorrKey{p, l.correlation}].locators.push_back(k);
        break;
    }
  }
  auto by_occurrence = [&](Want& w) {
    std::sort(w.locators.begin(), w.locators.end(), [&](size_t a, size_t b) {
      return locators[a]->occurrence < locators[b]->occurrence;
    });
  };
  for (auto& [key, w] : ranges) by_occurrence(w);
  for (auto& [key, w] : gpus) by_occurrence(w);
  // The row that is the `seen`-th of its key answers the locators asking for that one.
  auto take = [&](Want& w, uint32_t row) {
    const uint32_t seen = w.seen++;
    while (w.cursor < w.locators.size() && locators[w.locators[w.cursor]]->occurrence < seen)
      ++w.cursor;
    for (size_t c = w.cursor; c < w.locators.size() && locators[w.locators[c]]->occurrence == seen;
         ++c) {
      out[w.locators[c]] = row;
    }
  };
  const EventTable& ev = trace.events;
  for (uint32_t i = 0; i < ev.size(); ++i) {
    const EventType t = ev.type[i];
    if (t == EventType::kPush || t == EventType::kRange) {
      if (ranges.empty()) continue;
      const auto it = ranges.find(RangeKey{ev.process[i], ev.thread[i], ev.name[i]});
      if (it != ranges.end()) take(it->second, i);
    } else if (ev.correlation[i] != 0 && IsHostCall(t)) {
      const auto it = calls.find(CorrKey{ev.process[i], ev.correlation[i]});
      if (it == calls.end()) continue;
      for (const size_t k : it->second.locators) {
        // The outer call of a nested pair owns the GPU work.
        if (out[k] < 0 ||
            ((ev.flags[out[k]] & kEventNestedCall) && !(ev.flags[i] & kEventNestedCall)))
          out[k] = i;
      }
    } else if (ev.correlation[i] != 0 && IsGpuWork(t)) {
      const auto it = gpus.find(CorrKey{ev.process[i], ev.correlation[i]});
      if (it != gpus.end()) take(it->second, i);
    }
  }
  return out;
}

}  // namespace internal

int64_t ResolveLocator(const Trace& trace, const NodeLocator& loc) {
  return ResolveAll(trace, {&loc}).front();
}

uint64_t CountRoundTripDifferences(const Trace& written, const Trace& read, std::string* first) {
  uint64_t diffs = 0;
  auto note = [&](const std::string& what) {
    if (diffs++ == 0 && first != nullptr) *first = what;
  };
  if (written.processes.size() != read.processes.size()) {
    note("process count " + std::to_string(written.processes.size()) + " vs " +
         std::to_string(read.processes.size()));
  }
  const size_t procs = std::min(written.processes.size(), read.processes.size());
  for (size_t p = 0; p < procs; ++p) {
    const ProcessInfo& a = written.processes[p];
    const ProcessInfo& b = read.processes[p];
    if (a.pid != b.pid || written.strings.Get(a.host) != read.strings.Get(b.host) ||
        written.strings.Get(a.label) != read.strings.Get(b.label) || a.rank != b.rank ||
        a.local_rank != b.local_rank || a.world_size != b.world_size) {
      note("process " + std::to_string(p) + " (pid " + std::to_string(a.pid) + ") differs");
    }
  }
  // Events per process in table order (GPU annotations are not written).
  std::vector<std::vector<uint32_t>> wa(written.processes.size()), rb(read.processes.size());
  for (uint32_t i = 0; i < written.events.size(); ++i) {
    if (written.events.type[i] != EventType::kGpuAnnotation &&
        written.events.process[i] < wa.size()) {
      wa[written.events.process[i]].push_back(i);
    }
  }
  for (uint32_t i = 0; i < read.events.size(); ++i) {
    if (read.events.process[i] < rb.size()) rb[read.events.process[i]].push_back(i);
  }
  const EventTable& x = written.events;
  const EventTable& y = read.events;
  for (size_t p = 0; p < procs; ++p) {
    if (wa[p].size() != rb[p].size()) {
      note("process " + std::to_string(p) + ": " + std::to_string(wa[p].size()) +
           " events written, " + std::to_string(rb[p].size()) + " read");
    }
    const size_t n = std::min(wa[p].size(), rb[p].size());
    for (size_t k = 0; k < n; ++k) {
      const uint32_t i = wa[p][k], j = rb[p][k];
      const EventType t = x.type[i];
      bool same = t == y.type[j] && written.strings.Get(x.name[i]) == read.strings.Get(y.name[j]) &&
                  x.thread[i] == y.thread[j] && x.start_ns[i] == y.start_ns[j] &&
                  x.end_ns[i] == y.end_ns[j] && x.correlation[i] == y.correlation[j];
      if (t == EventType::kPush || t == EventType::kPop || t == EventType::kMark ||
          t == EventType::kRange) {
        same = same && written.strings.Get(x.domain[i]) == read.strings.Get(y.domain[j]);
      }
      if (IsGpuWork(t) || t == EventType::kSync) {
        same = same && x.device[i] == y.device[j] && x.stream[i] == y.stream[j] &&
               (x.flags[i] & kEventInGraph) == (y.flags[j] & kEventInGraph);
      }
      if (t == EventType::kMemcpy || t == EventType::kMemset)
        same = same && x.bytes[i] == y.bytes[j];
      if (IsHostCall(t))
        same = same && (x.flags[i] & kEventNestedCall) == (y.flags[j] & kEventNestedCall);
      if (!same) {
        note("process " + std::to_string(p) + " event " + std::to_string(k) + " (" +
             std::string(written.strings.Get(x.name[i])) + ") differs");
      }
    }
  }
  // Log lines as a multiset (files and order are not kept).
  auto log_key = [](const Trace& t, uint32_t r) {
    const LogTable& l = t.logs;
    return std::to_string(l.ts_ns[r]) + '\x1f' + std::string(t.strings.Get(l.request[r])) + '\x1f' +
           std::to_string(static_cast<int>(l.level[r])) + '\x1f' + std::to_string(l.process[r]) +
           '\x1f' + std::string(t.strings.Get(l.message[r]));
  };
  std::multiset<std::string> la, lb;
  for (uint32_t r = 0; r < written.logs.size(); ++r) la.insert(log_key(written, r));
  for (uint32_t r = 0; r < read.logs.size(); ++r) lb.insert(log_key(read, r));
  if (la != lb) {
    std::vector<std::string> only_a;
    std::set_difference(la.begin(), la.end(), lb.begin(), lb.end(), std::back_inserter(only_a));
    note(std::to_string(only_a.size()) + " log line(s) differ" +
         (only_a.empty() ? std::string() : ", e.g. " + only_a.front().substr(0, 160)));
    diffs += only_a.empty() ? 0 : only_a.size() - 1;
  }
  return diffs;
}

}  // namespace teller::inject
