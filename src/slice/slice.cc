// Causal-context slices (include/teller/slice/slice.h, docs/method.md §4).
#include "teller/slice/slice.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

namespace teller::slice {

using reconstruct::Nodes;

Slice BuildSlice(const Trace& trace, const reconstruct::Reconstruction& r,
                 const std::vector<uint32_t>& roots, const std::vector<uint32_t>& suspicious,
                 const Weights& w) {
  const Nodes& n = r.nodes;
  const EventTable& ev = trace.events;
  Slice out;
  // The step's nodes (every rank's subtree), in depth-first order per root.
  std::vector<uint32_t> members;
  for (uint32_t root : roots) {
    std::vector<uint32_t> todo = {root};
    while (!todo.empty()) {
      const uint32_t i = todo.back();
      todo.pop_back();
      members.push_back(i);
      for (uint32_t c = n.child_begin[i + 1]; c-- > n.child_begin[i];)
        todo.push_back(n.child_index[c]);
    }
  }
  out.step_nodes = members.size();
  if (suspicious.empty()) return out;
  const std::unordered_set<uint32_t> in_step(members.begin(), members.end());
  std::unordered_map<uint32_t, double> relevance;
  const std::unordered_set<uint32_t> sus(suspicious.begin(), suspicious.end());
  auto bump = [&](uint32_t v, double x) {
    if (in_step.count(v) == 0) return;
    double& r0 = relevance[v];
    r0 += x;
  };
  // alpha and beta.
  for (uint32_t u : suspicious) {
    bump(u, w.alpha);
    if (n.parent[u] >= 0) bump(static_cast<uint32_t>(n.parent[u]), w.beta);
    for (uint32_t c = n.child_begin[u]; c < n.child_begin[u + 1]; ++c)
      bump(n.child_index[c], w.beta);
  }
  // gamma: temporal proximity, over the step's nodes sorted by start.
  std::vector<uint32_t> by_start = members;
  std::sort(by_start.begin(), by_start.end(),
            [&](uint32_t a, uint32_t b) { return n.start_ns[a] < n.start_ns[b]; });
  std::unordered_map<uint32_t, double> temporal;
  for (uint32_t u : suspicious) {
    const int64_t t0 = n.start_ns[u];
    auto lo = std::lower_bound(by_start.begin(), by_start.end(), t0 - w.window_ns,
                               [&](uint32_t a, int64_t t) { return n.start_ns[a] < t; });
    for (auto it = lo; it != by_start.end() && n.start_ns[*it] <= t0 + w.window_ns; ++it) {
      if (*it == u || n.process[*it] != n.process[u]) continue;
      const double dt = static_cast<double>(std::llabs(n.start_ns[*it] - t0));
      double& best = temporal[*it];
      best = std::max(best, std::exp(-dt / w.tau0_ns));
    }
  }
  for (const auto& [v, x] : temporal) bump(v, w.gamma * x);
  // eta: communication coupling. The same collective on the other ranks is the
  // reconstruction's collective group of a communication kernel; a COMM range or call is
  // coupled through the collectives it launched, with the node of its own name above each
  // other rank's kernel.
  std::vector<uint32_t> kernels, todo;
  std::unordered_set<uint32_t> coupled;
  auto couple_collective = [&](uint32_t u) {
    kernels.clear();
    todo.assign(1, u);
    while (!todo.empty()) {
      const uint32_t i = todo.back();
      todo.pop_back();
      if (!r.CollectiveOf(i).empty()) kernels.push_back(i);
      for (uint32_t c = n.child_begin[i]; c < n.child_begin[i + 1]; ++c)
        todo.push_back(n.child_index[c]);
    }
    const StringId name = ev.name[n.event[u]];
    coupled.clear();
    for (const uint32_t k : kernels) {
      for (const uint32_t m : r.CollectiveOf(k)) {
        if (n.process[m] == n.process[u]) continue;
        for (int32_t a = static_cast<int32_t>(m); a >= 0; a = n.parent[static_cast<size_t>(a)]) {
          const uint32_t v = static_cast<uint32_t>(a);
          if (n.layer[v] == Layer::kComm && ev.name[n.event[v]] == name) {
            if (coupled.insert(v).second) bump(v, w.eta);
            break;
          }
        }
      }
    }
  };
  // GPU work per (process, stream) in start order, for "the kernel that feeds it".
  std::map<std::pair<uint32_t, uint32_t>, std::vector<uint32_t>> stream_ops;
  for (uint32_t i : by_start) {
    if (IsGpuWork(ev.type[n.event[i]]))
      stream_ops[{n.process[i], ev.stream[n.event[i]]}].push_back(i);
  }
  for (uint32_t u : suspicious) {
    const bool comm = n.layer[u] == Layer::kComm;
    if (comm) couple_collective(u);
    if (IsGpuWork(ev.type[n.event[u]])) {
      const auto& ops = stream_ops[{n.process[u], ev.stream[n.event[u]]}];
      const auto it = std::find(ops.begin(), ops.end(), u);
      if (it != ops.end()) {
        // The operation before feeds a collective; a collective after consumes this one.
        if (comm && it != ops.begin()) bump(*(it - 1), w.eta);
        if (!comm && it + 1 != ops.end() && n.layer[*(it + 1)] == Layer::kComm)
          bump(*(it + 1), w.eta);
      }
    }
  }
  std::map<uint32_t, float> kept;
  for (const auto& [v, x] : relevance) {
    if (x >= w.kappa || sus.count(v)) kept[v] = static_cast<float>(x);
  }
  for (uint32_t u : suspicious) {
    int32_t p = n.parent[u];
    for (int h = 0; h < w.hops && p >= 0; ++h, p = n.parent[static_cast<size_t>(p)]) {
      if (in_step.count(static_cast<uint32_t>(p)) == 0) break;
      kept.emplace(static_cast<uint32_t>(p), 0.0f);
    }
  }
  for (const auto& [v, x] : kept) {
    out.nodes.push_back(v);
    out.relevance.push_back(x);
  }
  return out;
}

}  // namespace teller::slice
