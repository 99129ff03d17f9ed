// Collective groups across processes (include/teller/reconstruct/collectives.h).
#include "teller/reconstruct/collectives.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <utility>

namespace teller::reconstruct {

CommKernelIndex IndexCommKernels(const Trace& trace, LayerCache& layers) {
  const EventTable& ev = trace.events;
  const size_t procs = trace.processes.size();
  CommKernelIndex out;
  out.keyed.resize(procs);
  out.count.resize(procs);
  out.is_comm.assign(ev.size(), 0);
  std::vector<std::vector<uint32_t>> comm(procs);
  for (uint32_t i = 0; i < ev.size(); ++i) {
    if (ev.type[i] != EventType::kKernel || ev.process[i] >= procs) continue;
    if (layers.Of(i) != Layer::kComm) continue;
    out.is_comm[i] = 1;
    comm[ev.process[i]].push_back(i);
  }
  for (size_t p = 0; p < procs; ++p) {
    auto& list = comm[p];
    std::stable_sort(list.begin(), list.end(),
                     [&](uint32_t a, uint32_t b) { return ev.start_ns[a] < ev.start_ns[b]; });
    for (const uint32_t e : list) {
      out.keyed[p].emplace(CommKernelIndex::Key{ev.name[e], out.count[p][ev.name[e]]++}, e);
    }
  }
  return out;
}

std::vector<int64_t> EndDifferences(const Trace& trace, const CommKernelIndex& index, uint32_t a,
                                    uint32_t b, bool same_count_only) {
  const EventTable& ev = trace.events;
  std::vector<int64_t> diff;
  for (const auto& [key, e] : index.keyed[a]) {
    const auto it = index.keyed[b].find(key);
    if (it == index.keyed[b].end()) continue;
    if (same_count_only && index.count[a].at(key.first) != index.count[b].at(key.first)) continue;
    diff.push_back(ev.end_ns[e] - ev.end_ns[it->second]);
  }
  return diff;
}

CollectiveGroups FindCollectiveGroups(const Trace& trace, const CommKernelIndex& index) {
  const size_t procs = index.keyed.size();
  CollectiveGroups out;
  out.proc_offset.assign(procs, 0);
  out.group_of.assign(trace.events.size(), -1);
  out.cluster_of.assign(procs, -1);
  std::vector<uint32_t> refs;
  for (uint32_t p = 0; p < procs; ++p) {
    if (index.keyed[p].empty()) continue;
    for (size_t c = 0; c < refs.size() && out.cluster_of[p] < 0; ++c) {
      const uint32_t r = refs[c];
      std::vector<int64_t> diff = EndDifferences(trace, index, p, r, false);
      if (diff.empty() ||
          diff.size() * 2 < std::min(index.keyed[p].size(), index.keyed[r].size())) {
        continue;
      }
      std::vector<int64_t> sorted = diff;
      std::sort(sorted.begin(), sorted.end());
      const int64_t offset = sorted[sorted.size() / 2];
      for (int64_t& d : diff) d = std::llabs(d - offset);
      std::sort(diff.begin(), diff.end());
      if (diff[diff.size() / 2] > CollectiveGroups::kEndSpreadNs) continue;
      out.cluster_of[p] = static_cast<int32_t>(c);
      out.proc_offset[p] = out.proc_offset[r] + offset;
    }
    if (out.cluster_of[p] < 0) {
      out.cluster_of[p] = static_cast<int32_t>(refs.size());
      refs.push_back(p);
    }
  }
  std::map<std::pair<int32_t, CommKernelIndex::Key>, std::vector<uint32_t>> members;
  for (uint32_t p = 0; p < procs; ++p) {
    for (const auto& [key, e] : index.keyed[p]) members[{out.cluster_of[p], key}].push_back(e);
  }
  for (auto& [key, list] : members) {
    if (list.size() < 2) continue;
    for (const uint32_t e : list) out.group_of[e] = static_cast<int32_t>(out.groups.size());
    out.groups.push_back(std::move(list));
  }
  return out;
}

}  // namespace teller::reconstruct
