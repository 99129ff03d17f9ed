// Ground-truth locators -> event rows (include/teller/dataset/build.h). One pass over the
// event table, looking only at the (process, thread, name) and (process, correlation)
// keys that some locator asks for, so that a trace of millions of events costs a few
// array reads per event and no hashing for the events nobody labelled.
#include <cstring>
#include <unordered_map>
#include <unordered_set>

#include "teller/dataset/build.h"

namespace teller::dataset {
namespace {

constexpr uint32_t kNoProcess = UINT32_MAX;

struct RangeKey {
  uint32_t process, thread;
  StringId name;
  bool operator==(const RangeKey&) const = default;
};
struct RangeKeyHash {
  size_t operator()(const RangeKey& k) const {
    uint64_t h = (static_cast<uint64_t>(k.process) << 32) ^ k.thread;
    h = h * 0x9E3779B97F4A7C15ull ^ k.name;
    return static_cast<size_t>(h * 0xBF58476D1CE4E5B9ull);
  }
};
struct CorrKey {
  uint32_t process;
  uint64_t correlation;
  bool operator==(const CorrKey&) const = default;
};
struct CorrKeyHash {
  size_t operator()(const CorrKey& k) const {
    return static_cast<size_t>((k.correlation * 0x9E3779B97F4A7C15ull) ^
                               (static_cast<uint64_t>(k.process) << 48));
  }
};

}  // namespace

std::string DescribeLocator(const format::NodeLocator& n) {
  std::string where = n.host + "/" + std::to_string(n.pid);
  switch (n.kind) {
    case format::NodeLocator::Kind::kRange:
      return "range " + where + "/" + std::to_string(n.tid) + " \"" + n.name + "\" #" +
             std::to_string(n.occurrence);
    case format::NodeLocator::Kind::kCall:
      return "call " + where + " correlation " + std::to_string(n.correlation);
    case format::NodeLocator::Kind::kGpu:
      return "gpu " + where + " correlation " + std::to_string(n.correlation) + " #" +
             std::to_string(n.occurrence);
  }
  return "?";
}

std::vector<int64_t> ResolveLocators(const Trace& trace,
                                     const std::vector<const format::NodeLocator*>& locators) {
  std::vector<int64_t> result(locators.size(), -1);
  if (locators.empty()) return result;

  // (host, pid) -> process index. Host names are compared as text: the pool ids of the
  // trace are the truth's only link to its strings.
  std::unordered_map<std::string, uint32_t> process_of;
  for (uint32_t p = 0; p < trace.processes.size(); ++p) {
    const ProcessInfo& info = trace.processes[p];
    process_of.emplace(std::string(trace.strings.Get(info.host)) + '\0' + std::to_string(info.pid),
                       p);
  }
  auto find_process = [&](const format::NodeLocator& n) {
    const auto it = process_of.find(n.host + '\0' + std::to_string(n.pid));
    return it == process_of.end() ? kNoProcess : it->second;
  };

  // What the locators ask for: the keys to collect in the event pass.
  std::unordered_map<RangeKey, std::vector<uint32_t>, RangeKeyHash> ranges;
  std::unordered_map<CorrKey, int64_t, CorrKeyHash> calls;
  std::unordered_map<CorrKey, std::vector<uint32_t>, CorrKeyHash> gpu;
  std::vector<uint8_t> wanted_name(trace.strings.size(), 0);
  std::vector<uint32_t> process(locators.size(), kNoProcess);
  std::vector<StringId> name(locators.size(), StringPool::kNotFound);
  for (size_t i = 0; i < locators.size(); ++i) {
    const format::NodeLocator& n = *locators[i];
    process[i] = find_process(n);
    if (process[i] == kNoProcess) continue;
    switch (n.kind) {
      case format::NodeLocator::Kind::kRange:
        name[i] = trace.strings.Find(n.name);
        if (name[i] == StringPool::kNotFound) break;
        wanted_name[name[i]] = 1;
        ranges.try_emplace(RangeKey{process[i], n.tid, name[i]});
        break;
      case format::NodeLocator::Kind::kCall:
        calls.try_emplace(CorrKey{process[i], n.correlation}, -1);
        break;
      case format::NodeLocator::Kind::kGpu:
        gpu.try_emplace(CorrKey{process[i], n.correlation});
        break;
    }
  }

  const EventTable& ev = trace.events;
  const bool any_calls_or_gpu = !calls.empty() || !gpu.empty();
  for (uint32_t e = 0; e < ev.size(); ++e) {
    const EventType type = ev.type[e];
    if (type == EventType::kPush || type == EventType::kRange) {
      if (!wanted_name[ev.name[e]]) continue;
      const auto it = ranges.find(RangeKey{ev.process[e], ev.thread[e], ev.name[e]});
      if (it != ranges.end()) it->second.push_back(e);
    } else if (any_calls_or_gpu && ev.correlation[e] != 0) {
      if (IsHostCall(type)) {
        const auto it = calls.find(CorrKey{ev.process[e], ev.correlation[e]});
        if (it == calls.end()) continue;
        // A driver call nested in a runtime call shares its id: the outer call is the
        // node that owns the GPU work (reconstruction binds the same way).
        if (it->second < 0 ||
            ((ev.flags[it->second] & kEventNestedCall) && !(ev.flags[e] & kEventNestedCall))) {
          it->second = e;
        }
      } else if (IsGpuWork(type)) {
        const auto it = gpu.find(CorrKey{ev.process[e], ev.correlation[e]});
        if (it != gpu.end()) it->second.push_back(e);
      }
    }
  }

  for (size_t i = 0; i < locators.size(); ++i) {
    if (process[i] == kNoProcess) continue;
    const format::NodeLocator& n = *locators[i];
    switch (n.kind) {
      case format::NodeLocator::Kind::kRange: {
        if (name[i] == StringPool::kNotFound) break;
        const auto& rows = ranges.at(RangeKey{process[i], n.tid, name[i]});
        if (n.occurrence < rows.size()) result[i] = rows[n.occurrence];
        break;
      }
      case format::NodeLocator::Kind::kCall:
        result[i] = calls.at(CorrKey{process[i], n.correlation});
        break;
      case format::NodeLocator::Kind::kGpu: {
        const auto& rows = gpu.at(CorrKey{process[i], n.correlation});
        if (n.occurrence < rows.size()) result[i] = rows[n.occurrence];
        break;
      }
    }
  }
  return result;
}

}  // namespace teller::dataset
