// Iterations of a timeline without step markers (include/teller/localize/iterations.h).
#include "teller/localize/iterations.h"

#include <algorithm>
#include <unordered_map>
#include <utility>

#include "teller/core/vocabulary.h"

namespace teller::localize {

using reconstruct::Nodes;

namespace {

// At most this many candidate periods are scored: the most frequent distances between
// consecutive operations of one name. An iteration's period is such a distance for every
// operation that runs once per iteration, so it is among the most frequent.
constexpr size_t kMaxCandidates = 256;
// Candidates, best covering first, checked against the host side before giving up.
constexpr size_t kMaxChecked = 16;
// A run of copies tolerates substitutions (a kernel variant chosen differently once): at
// most 10% of its positions unmatched, never more than P/16 (at least 1) in a row.
constexpr double kMinMatchShare = 0.9;

struct GpuOp {
  int64_t host_ns;  // when the host launched it (its launch call's start), else its start
  uint32_t node;
  StringId name;
  int64_t dur_ns;
};

// One run of copies of period P: S[i] == S[i + P] (mostly) for i in [a, b).
struct Run {
  size_t period = 0, a = 0, b = 0;
  size_t covered() const { return b - a + period; }
};

Run BestRun(const std::vector<GpuOp>& ops, size_t p) {
  const size_t n = ops.size();
  const size_t max_gap = std::max<size_t>(1, p / 16);
  Run best;
  best.period = p;
  size_t i = 0;
  while (i + p < n) {
    if (ops[i].name != ops[i + p].name) {
      ++i;
      continue;
    }
    const size_t a = i;
    size_t last = i, matches = 0;
    for (; i + p < n; ++i) {
      if (ops[i].name == ops[i + p].name) {
        last = i;
        ++matches;
      } else if (i - last > max_gap) {
        break;
      }
    }
    const size_t b = last + 1;
    if (b - a >= p && matches >= kMinMatchShare * static_cast<double>(b - a) &&
        b - a > best.b - best.a) {
      best.a = a;
      best.b = b;
    }
    i = last + 1;
  }
  return best;
}

}  // namespace

Iterations FindIterations(const Trace& t, const reconstruct::Reconstruction& r,
                          const std::vector<uint32_t>& roots) {
  const Nodes& n = r.nodes;
  const EventTable& ev = t.events;
  std::vector<GpuOp> ops;
  std::vector<int64_t> syncs;  // starts of synchronizing host calls
  int64_t gpu_total = 0;
  std::vector<uint32_t> todo(roots.rbegin(), roots.rend());
  while (!todo.empty()) {
    const uint32_t i = todo.back();
    todo.pop_back();
    const EventType type = ev.type[n.event[i]];
    if (IsGpuWork(type)) {
      const int32_t parent = n.parent[i];
      const bool launched =
          parent >= 0 && IsHostCall(ev.type[n.event[static_cast<size_t>(parent)]]);
      const int64_t dur = n.end_ns[i] - n.start_ns[i];
      ops.push_back({launched ? n.start_ns[static_cast<size_t>(parent)] : n.start_ns[i], i,
                     ev.name[n.event[i]], dur});
      gpu_total += dur;
    } else if (IsHostCall(type) && IsSynchronizingCall(t.strings.Get(ev.name[n.event[i]]))) {
      syncs.push_back(n.start_ns[i]);
    }
    for (uint32_t c = n.child_begin[i + 1]; c-- > n.child_begin[i];)
      todo.push_back(n.child_index[c]);
  }
  Iterations out;
  if (ops.size() < 2 || syncs.empty()) return out;
  std::sort(ops.begin(), ops.end(), [&](const GpuOp& x, const GpuOp& y) {
    if (x.host_ns != y.host_ns) return x.host_ns < y.host_ns;
    if (n.start_ns[x.node] != n.start_ns[y.node]) return n.start_ns[x.node] < n.start_ns[y.node];
    return x.node < y.node;
  });
  std::sort(syncs.begin(), syncs.end());
  const size_t count = ops.size();

  // Candidate periods.
  std::unordered_map<size_t, size_t> gaps;
  {
    std::unordered_map<StringId, size_t> last;
    for (size_t i = 0; i < count; ++i) {
      const auto [it, added] = last.emplace(ops[i].name, i);
      if (!added) {
        const size_t gap = i - it->second;
        if (2 * gap <= count) ++gaps[gap];
        it->second = i;
      }
    }
  }
  std::vector<std::pair<size_t, size_t>> candidates(gaps.begin(), gaps.end());  // (gap, count)
  std::sort(candidates.begin(), candidates.end(), [](const auto& x, const auto& y) {
    return x.second != y.second ? x.second > y.second : x.first < y.first;
  });
  if (candidates.size() > kMaxCandidates) candidates.resize(kMaxCandidates);
  std::vector<Run> runs;
  for (const auto& [p, _] : candidates) {
    Run run = BestRun(ops, p);
    if (run.b > run.a) runs.push_back(run);
  }
  // Most operations covered first; of equal coverage the shorter period (two iterations
  // are also one copy of a period twice as long).
  std::sort(runs.begin(), runs.end(), [](const Run& x, const Run& y) {
    return x.covered() != y.covered() ? x.covered() > y.covered() : x.period < y.period;
  });
  if (runs.size() > kMaxChecked) runs.resize(kMaxChecked);

  auto sync_between = [&](int64_t after, int64_t before) {
    const auto it = std::upper_bound(syncs.begin(), syncs.end(), after);
    return it != syncs.end() && *it < before;
  };
  for (const Run& run : runs) {
    const size_t p = run.period, end = run.b + p;
    // Where the copies begin within the run: every boundary between two copies must hold
    // a synchronizing call; of the phases where all do, the one whose boundaries leave
    // the host longest between launches (an iteration's end: results, the next input).
    size_t best_first = SIZE_MAX;
    int64_t best_gap = -1;
    for (size_t d = 0; d < p; ++d) {
      const size_t first = run.a + d;
      if (first + 2 * p > end) break;
      const size_t copies = (end - first) / p;
      bool all = true;
      int64_t gap = 0;
      for (size_t j = 1; j < copies && all; ++j) {
        const size_t x = first + j * p;
        all = sync_between(ops[x - 1].host_ns, ops[x].host_ns);
        gap += ops[x].host_ns - ops[x - 1].host_ns;
      }
      if (all && gap > best_gap) {
        best_gap = gap;
        best_first = first;
      }
    }
    if (best_first == SIZE_MAX) continue;
    const size_t copies = (end - best_first) / p;
    int64_t covered_ns = 0;
    for (size_t i = best_first; i < best_first + copies * p; ++i) covered_ns += ops[i].dur_ns;
    if (2 * copies * p < count && 2 * covered_ns < gpu_total) continue;
    // Each cut: the start of the outermost node around the copy's first launch that began
    // after the previous copy's last launch (its enclosing range, when it has one of its own).
    auto cut_node = [&](size_t x) {
      const int64_t prev = ops[x - 1].host_ns;
      int64_t node = n.parent[ops[x].node] >= 0 ? n.parent[ops[x].node] : ops[x].node;
      while (n.parent[static_cast<size_t>(node)] >= 0 &&
             n.start_ns[static_cast<size_t>(n.parent[static_cast<size_t>(node)])] > prev)
        node = n.parent[static_cast<size_t>(node)];
      return static_cast<size_t>(node);
    };
    auto cut_before = [&](size_t x) { return n.start_ns[cut_node(x)]; };
    // GPU work before the first copy (set-up: weight copies, allocations) and after the
    // last (a partial pass, tear-down) are units of their own, so that every iteration
    // compares with the others at the same length; but not when a range holds both sides
    // of the boundary: then the extra work is the first pass's own (a warm-up pass that
    // autotunes before its kernels) or the last's.
    const size_t last = best_first + copies * p;
    out.prologue = best_first > 0 && n.parent[cut_node(best_first)] < 0;
    out.epilogue = last < count && n.parent[cut_node(last)] < 0;
    for (size_t j = out.prologue ? 0 : 1; j <= copies; ++j) {
      const size_t x = best_first + j * p;
      if (j == copies && !out.epilogue) break;
      const int64_t cut = cut_before(x);
      if (!out.cuts_ns.empty() && cut <= out.cuts_ns.back()) {
        out.cuts_ns.clear();
        break;
      }
      out.cuts_ns.push_back(cut);
    }
    if (out.cuts_ns.empty()) continue;
    out.period = static_cast<uint32_t>(p);
    return out;
  }
  out.prologue = out.epilogue = false;
  return out;
}

std::vector<std::vector<uint32_t>> SplitAtCuts(const reconstruct::Reconstruction& r,
                                               const std::vector<uint32_t>& roots,
                                               const std::vector<int64_t>& cuts) {
  const Nodes& n = r.nodes;
  std::vector<std::vector<uint32_t>> out(cuts.size() + 1);
  auto unit_at = [&](int64_t ts) {
    return static_cast<size_t>(std::upper_bound(cuts.begin(), cuts.end(), ts) - cuts.begin());
  };
  std::vector<uint32_t> todo(roots.rbegin(), roots.rend());
  while (!todo.empty()) {
    const uint32_t i = todo.back();
    todo.pop_back();
    const size_t u = unit_at(n.start_ns[i]);
    const bool children = n.child_begin[i + 1] > n.child_begin[i];
    // GPU work runs after its launch: only host extents decide, and a node's GPU work
    // goes with it.
    const bool spans = u != unit_at(std::max(n.start_ns[i], n.end_ns[i] - 1));
    if (!spans || !children) {
      out[u].push_back(i);
      continue;
    }
    // A range around several iterations (the script's own outer range) belongs to none;
    // its children are split.
    for (uint32_t c = n.child_begin[i + 1]; c-- > n.child_begin[i];)
      todo.push_back(n.child_index[c]);
  }
  for (auto& list : out) {
    std::sort(list.begin(), list.end(), [&](uint32_t a, uint32_t b) {
      return n.start_ns[a] != n.start_ns[b] ? n.start_ns[a] < n.start_ns[b] : a < b;
    });
  }
  return out;
}

}  // namespace teller::localize
