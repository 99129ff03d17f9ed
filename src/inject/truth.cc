// The ground truth of an injection, built from the replayed trace.
#include <algorithm>

#include "src/inject/replay.h"

namespace teller::inject::internal {

struct Occurrences {
  std::vector<uint32_t> range, gpu;  // per event
};

Occurrences CountOccurrences(const Trace& trace) {
  const EventTable& ev = trace.events;
  Occurrences o;
  o.range.assign(ev.size(), 0);
  o.gpu.assign(ev.size(), 0);
  struct Hash {
    size_t operator()(const std::tuple<uint32_t, uint32_t, StringId>& k) const {
      return (static_cast<size_t>(std::get<0>(k)) * 0x9E3779B97F4A7C15ull) ^
             (static_cast<size_t>(std::get<1>(k)) << 20) ^ std::get<2>(k);
    }
  };
  std::unordered_map<std::tuple<uint32_t, uint32_t, StringId>, uint32_t, Hash> ranges;
  std::unordered_map<uint64_t, uint32_t> gpu;
  for (uint32_t i = 0; i < ev.size(); ++i) {
    const EventType t = ev.type[i];
    if (t == EventType::kPush || t == EventType::kRange) {
      o.range[i] = ranges[{ev.process[i], ev.thread[i], ev.name[i]}]++;
    } else if (IsGpuWork(t) && ev.correlation[i] != 0) {
      o.gpu[i] = gpu[(static_cast<uint64_t>(ev.process[i]) << 40) ^ ev.correlation[i]]++;
    }
  }
  return o;
}

bool MakeLocator(const Trace& trace, const Occurrences& occ, uint32_t i, NodeLocator* out) {
  const EventTable& ev = trace.events;
  const ProcessInfo& p = trace.processes[ev.process[i]];
  out->host = std::string(trace.strings.Get(p.host));
  out->pid = p.pid;
  const EventType t = ev.type[i];
  if (t == EventType::kPush || t == EventType::kRange) {
    out->kind = NodeLocator::Kind::kRange;
    out->tid = ev.thread[i];
    out->name = std::string(trace.strings.Get(ev.name[i]));
    out->occurrence = occ.range[i];
    return true;
  }
  if (ev.correlation[i] == 0) return false;
  if (IsHostCall(t)) {
    out->kind = NodeLocator::Kind::kCall;
    out->correlation = ev.correlation[i];
    return true;
  }
  if (IsGpuWork(t)) {
    out->kind = NodeLocator::Kind::kGpu;
    out->correlation = ev.correlation[i];
    out->occurrence = occ.gpu[i];
    return true;
  }
  return false;
}

struct StepAgg {
  uint64_t seq = 0;
  std::string kind;
  int64_t start = std::numeric_limits<int64_t>::max(), end = kNever;
  int64_t start0 = std::numeric_limits<int64_t>::max(), end0 = kNever;
  int64_t gpu_end = kNever, gpu_end0 = kNever;  // last GPU work launched in the step
  std::vector<std::string> requests;
  std::set<std::string> request_set;
  std::set<uint32_t> processes;
  std::vector<uint32_t> direct, affected;  // events
  std::vector<uint32_t> context;           // unchanged evidence (the op around a miss)
};

void BuildTruth(Context& ctx, const Replay& replay, const std::vector<uint8_t>& affected_comm,
                InjectResult& result) {
  Trace& trace = ctx.trace;
  const EventTable& ev = trace.events;
  GroundTruth& gt = result.truth;
  InjectEffect& fx = result.effect;
  gt.setting = "injected";
  gt.profile = "injected";
  gt.seed = ctx.options.seed;

  // Processes and topology.
  std::set<StringId> hosts;
  std::map<StringId, int> per_host;
  for (const uint32_t p : ctx.gpu_processes) {
    const ProcessInfo& info = trace.processes[p];
    ProcessTruth pt;
    pt.host = std::string(trace.strings.Get(info.host));
    pt.pid = info.pid;
    pt.rank = pt.tp_rank = ctx.RankOf(p);
    gt.processes.push_back(pt);
    hosts.insert(info.host);
    ++per_host[info.host];
  }
  gt.nodes = std::max<int>(1, static_cast<int>(hosts.size()));
  gt.gpus_per_node = 1;
  for (const auto& [h, n] : per_host) gt.gpus_per_node = std::max(gt.gpus_per_node, n);
  gt.tp = std::max<int>(1, static_cast<int>(ctx.gpu_processes.size()));
  gt.pp = 1;

  // Steps: the outermost STEP ranges of the modified trace, by seq.
  reconstruct::Options ro;
  ro.align_clocks = false;
  ro.classifier = ctx.classifier;
  const reconstruct::Reconstruction rec = reconstruct::Reconstruct(trace, ro);
  const auto& nodes = rec.nodes;
  std::vector<int32_t> node_of(ev.size(), -1);
  for (uint32_t n = 0; n < nodes.size(); ++n) node_of[nodes.event[n]] = static_cast<int32_t>(n);
  auto outer_step_of_node = [&](int32_t n) {
    int32_t found = -1;
    for (int32_t k = n; k >= 0; k = nodes.parent[k]) {
      if (nodes.layer[k] == Layer::kStep) found = k;
    }
    return found;
  };
  std::map<int32_t, size_t> agg_of_node;  // outer step node -> index in aggs
  std::vector<StepAgg> aggs;
  std::map<uint64_t, size_t> agg_of_seq;
  std::vector<std::vector<int32_t>> outer_by_process(trace.processes.size());
  {
    std::vector<int32_t> outer;
    for (const auto& step : rec.steps) {
      const int32_t o = outer_step_of_node(static_cast<int32_t>(step.node));
      if (o >= 0 && static_cast<uint32_t>(o) == step.node) outer.push_back(o);
    }
    std::sort(outer.begin(), outer.end(), [&](int32_t a, int32_t b) {
      if (nodes.process[a] != nodes.process[b]) return nodes.process[a] < nodes.process[b];
      return nodes.start_ns[a] < nodes.start_ns[b];
    });
    std::vector<uint64_t> ordinal(trace.processes.size(), 0);
    for (const int32_t o : outer) {
      const uint32_t e = nodes.event[o];
      std::string kind, seq_text;
      std::vector<std::string> ids;
      reconstruct::ParseStepMessage(trace.strings.Get(ev.name[e]), &ids, &kind, &seq_text);
      uint64_t seq = ordinal[nodes.process[o]]++;
      if (!seq_text.empty()) seq = std::strtoull(seq_text.c_str(), nullptr, 10);
      auto [it, inserted] = agg_of_seq.emplace(seq, aggs.size());
      if (inserted) {
        aggs.emplace_back();
        aggs.back().seq = seq;
      }
      StepAgg& a = aggs[it->second];
      agg_of_node[o] = it->second;
      a.start = std::min(a.start, nodes.start_ns[o]);
      a.end = std::max(a.end, nodes.end_ns[o]);
      a.start0 = std::min(a.start0, replay.s0()[e]);
      a.end0 = std::max(a.end0, ctx.range_end[e] >= 0 ? ctx.range_end[e] : replay.e0()[e]);
      a.processes.insert(nodes.process[o]);
      outer_by_process[nodes.process[o]].push_back(o);
    }
    // Kinds and requests come from every STEP node under the outer one.
    for (const auto& step : rec.steps) {
      const int32_t o = outer_step_of_node(static_cast<int32_t>(step.node));
      const auto it = agg_of_node.find(o);
      if (it == agg_of_node.end()) continue;
      StepAgg& a = aggs[it->second];
      if (a.kind.empty() && step.kind != 0) a.kind = std::string(trace.strings.Get(step.kind));
      for (const StringId r : step.requests) {
        std::string id(trace.strings.Get(r));
        if (a.request_set.insert(id).second) a.requests.push_back(std::move(id));
      }
    }
  }
  auto agg_of_event = [&](uint32_t i) -> int64_t {
    int32_t o = node_of[i] >= 0 ? outer_step_of_node(node_of[i]) : -1;
    if (o < 0) {
      // Work issued outside the step's own ranges (autograd and NCCL threads, orphan GPU
      // records) belongs to the step of its process whose interval holds its host-side
      // time: the launch call's start for GPU work (as Reconstruction::CommAcrossRanks).
      int64_t t = ev.start_ns[i];
      const int32_t n = node_of[i];
      if (n >= 0 && IsGpuWork(ev.type[i]) && nodes.parent[n] >= 0 &&
          nodes.layer[nodes.parent[n]] == Layer::kHostCall) {
        t = nodes.start_ns[nodes.parent[n]];
      }
      const auto& list = outer_by_process[ev.process[i]];
      auto it = std::upper_bound(list.begin(), list.end(), t,
                                 [&](int64_t v, int32_t s) { return v < nodes.start_ns[s]; });
      if (it != list.begin() && t <= nodes.end_ns[*std::prev(it)]) o = *std::prev(it);
    }
    const auto it = agg_of_node.find(o);
    return it == agg_of_node.end() ? -1 : static_cast<int64_t>(it->second);
  };
  // Each step's span runs to its last GPU work (eager engines return from the step long
  // before the GPU is done).
  for (uint32_t i = 0; i < ev.size(); ++i) {
    if (!IsGpuWork(ev.type[i])) continue;
    const int64_t a = agg_of_event(i);
    if (a < 0) continue;
    aggs[a].gpu_end = std::max(aggs[a].gpu_end, replay.ne[i]);
    aggs[a].gpu_end0 = std::max(aggs[a].gpu_end0, replay.e0()[i]);
  }
  std::vector<uint8_t> is_direct(ev.size(), 0);
  for (const uint32_t i : ctx.modified) is_direct[i] = 1;
  for (const uint32_t i : ctx.context) {
    const int64_t a = agg_of_event(i);
    if (a >= 0) aggs[a].context.push_back(i);
  }
  uint64_t outside = 0;
  for (uint32_t i = 0; i < ev.size(); ++i) {
    if (!is_direct[i] && !affected_comm[i]) continue;
    const int64_t a = agg_of_event(i);
    if (a < 0) {
      outside += is_direct[i];
      continue;
    }
    if (is_direct[i]) aggs[a].direct.push_back(i);
    if (affected_comm[i] || (is_direct[i] && ctx.is_comm[i])) aggs[a].affected.push_back(i);
  }
  if (!aggs.empty() && outside > 0) {
    fx.notes.push_back(std::to_string(outside) + " modified event(s) lie outside every step");
  }
  if (aggs.empty()) {
    fx.notes.push_back(
        "the trace has no step ranges (teller.step, engine step markers, ProfilerStep#): "
        "the ground truth has no steps, only the fault");
  }

  // The fault.
  const int64_t window_end = std::min(ctx.w1, ctx.t_end);
  FaultRecord f;
  f.id = 0;
  f.mechanism = ctx.info.name;
  f.category = FaultCategoryName(ctx.info.category);
  f.onset_ns = ctx.w0;
  f.duration_ns = window_end - ctx.w0;
  f.magnitude = ctx.magnitude;
  f.target = ctx.target;

  // Which ranks, which steps.
  std::set<int> ranks;
  for (const uint32_t i : ctx.modified) ranks.insert(ctx.RankOf(ev.process[i]));
  std::string on_ranks;
  // The culprit rank of a mechanism that acts on one process (FaultRecord::ranks).
  if (ctx.rank_process >= 0) f.ranks = {ctx.RankOf(static_cast<uint32_t>(ctx.rank_process))};
  if (ranks.size() == 1) {
    on_ranks = "on rank " + std::to_string(*ranks.begin());
  } else if (ranks.size() == ctx.gpu_processes.size() && ranks.size() > 1) {
    on_ranks = "on all " + std::to_string(ranks.size()) + " ranks";
  } else {
    on_ranks = "on ranks";
    bool first = true;
    for (const int r : ranks) {
      on_ranks += (first ? " " : ", ") + std::to_string(r);
      first = false;
    }
  }
  std::vector<uint64_t> faulty;
  for (const StepAgg& a : aggs) {
    if (!a.direct.empty() || !a.affected.empty()) faulty.push_back(a.seq);
  }
  std::sort(faulty.begin(), faulty.end());
  const std::string in_steps =
      faulty.empty() ? std::string("outside the trace's steps")
                     : (faulty.size() == 1 ? "in step " : "in steps ") + SeqRanges(faulty);

  auto durations = [&](const std::vector<uint32_t>& events, bool after) {
    std::vector<int64_t> d;
    for (const uint32_t i : events) {
      d.push_back(after ? replay.ne[i] - replay.ns[i] : replay.e0()[i] - replay.s0()[i]);
    }
    return d;
  };
  auto measured = [&](const std::vector<uint32_t>& events) {
    const int64_t before = MedianNs(durations(events, false));
    const int64_t after = MedianNs(durations(events, true));
    const double ratio = before > 0 ? static_cast<double>(after) / static_cast<double>(before) : 0;
    return std::make_tuple(before, after, ratio);
  };
  const Mechanism m = ctx.info.mechanism;
  auto sentence = [&](const std::vector<uint32_t>& direct, const std::vector<uint32_t>& affected) {
    const auto [before, after, ratio] = measured(direct);
    const std::string n = std::to_string(direct.size());
    auto plural = [&](const char* word) {
      return std::string(word) + (direct.size() == 1 ? "" : "s");
    };
    switch (m) {
      case Mechanism::kKernelThrottle:
      case Mechanism::kKernelSlowOneGpu:
        return ctx.what + " ran " + FormatFactor(ratio) + " slower (" + FormatNs(after) + " vs " +
               FormatNs(before) + " median, " + n + " " + plural("kernel") + ") " + in_steps + " " +
               on_ranks;
      case Mechanism::kGpuThrottle:
        return "the GPU of " + on_ranks.substr(3) +
               " was throttled: its compute-bound kernels ran " + FormatFactor(ratio) +
               " slower (" + FormatNs(after) + " vs " + FormatNs(before) + " median, " + n + " " +
               plural("kernel") + ") " + in_steps;
      case Mechanism::kLaunchLatency:
        return "kernel launch calls (" + ctx.what + ") took " + FormatFactor(ratio) +
               " longer on the host (" + FormatNs(after) + " vs " + FormatNs(before) + " median, " +
               n + " " + plural("call") + ") " + in_steps + " " + on_ranks +
               ", so the GPU waited between kernels";
      case Mechanism::kSyncStall:
        return ctx.what + " blocked " + FormatNs(after) + " instead of " + FormatNs(before) +
               " (median, " + n + " " + plural("call") + ") " + in_steps + " " + on_ranks;
      case Mechanism::kAllocatorStall:
        if (!ctx.inserted.empty()) {
          return "caching-allocator misses: " + n + " added " + ctx.what + " stalled the host " +
                 FormatNs(after) + " each " + in_steps + " " + on_ranks;
        }
        return "caching-allocator misses: " + ctx.what + " stalled the host " + FormatNs(after) +
               " each (vs " + FormatNs(before) + ") " + in_steps + " " + on_ranks;
      case Mechanism::kStragglerRank: {
        std::vector<int64_t> delays;
        for (const uint32_t i : direct) delays.push_back(replay.pre_delay[i]);
        std::vector<int64_t> later;
        for (const uint32_t i : affected) {
          const int64_t grew = (replay.ne[i] - replay.ns[i]) - (replay.e0()[i] - replay.s0()[i]);
          if (static_cast<int>(ev.process[i]) != ctx.rank_process && grew > 0)
            later.push_back(grew);
        }
        std::string s = on_ranks.substr(3) + " reached " + n + " " + plural("collective") + " (" +
                        ctx.what + ") " + FormatNs(static_cast<double>(MedianNs(delays))) +
                        " late (median) " + in_steps;
        if (!later.empty()) {
          s += "; " + std::to_string(later.size()) +
               " collective kernels on the other ranks waited for it (median +" +
               FormatNs(static_cast<double>(MedianNs(later))) + ", up to +" +
               FormatNs(static_cast<double>(*std::max_element(later.begin(), later.end()))) + ")";
        } else {
          s += "; the other ranks arrived later still, so nobody waited";
        }
        return s;
      }
      case Mechanism::kSlowLink:
        return "collectives between hosts (" + ctx.what + ") took " + FormatNs(after) +
               " instead of " + FormatNs(before) + " (median, " + n + " " + plural("kernel") +
               ") " + in_steps;
      default:
        return std::string(ctx.info.summary);
    }
  };
  fx.median_before_ns = std::get<0>(measured(ctx.modified));
  fx.median_after_ns = std::get<1>(measured(ctx.modified));
  {
    std::vector<uint32_t> all_affected;
    for (uint32_t i = 0; i < ev.size(); ++i) {
      if (affected_comm[i]) all_affected.push_back(i);
    }
    f.description =
        std::string(ctx.info.summary) + ". Injected: " + sentence(ctx.modified, all_affected) + ".";
  }
  gt.faults.push_back(f);

  // Steps.
  const Occurrences occ = CountOccurrences(trace);
  std::sort(aggs.begin(), aggs.end(),
            [](const StepAgg& a, const StepAgg& b) { return a.seq < b.seq; });
  uint64_t unlocatable = 0;
  std::set<uint64_t> faulty_set(faulty.begin(), faulty.end());
  for (StepAgg& a : aggs) {
    StepTruth st;
    st.seq = a.seq;
    st.kind = a.kind;
    st.start_ns = a.start;
    st.end_ns = a.end;
    st.requests = a.requests;
    if (faulty_set.count(a.seq)) {
      st.fault = 0;
      st.affected_requests = a.requests;
      std::sort(a.direct.begin(), a.direct.end());
      std::vector<uint32_t> vertical = a.direct;
      vertical.insert(vertical.end(), a.context.begin(), a.context.end());
      std::sort(vertical.begin(), vertical.end());
      vertical.erase(std::unique(vertical.begin(), vertical.end()), vertical.end());
      // The horizontal view (collectives across ranks and the compute around them) is
      // anomalous when collectives waited or widened: then its evidence is those
      // collective kernels with the faulting rank's nodes. A fault that slows every rank
      // alike (kernel_throttle) makes nobody wait: that view stays normal, as in the
      // simulator's ground truth (docs/simulator.md).
      std::vector<uint32_t> horizontal;
      if (m != Mechanism::kKernelThrottle && !a.affected.empty()) {
        horizontal = a.affected;
        horizontal.insert(horizontal.end(), vertical.begin(), vertical.end());
        std::sort(horizontal.begin(), horizontal.end());
        horizontal.erase(std::unique(horizontal.begin(), horizontal.end()), horizontal.end());
      }
      st.vertical.is_anomaly = true;
      st.horizontal.is_anomaly = !horizontal.empty();
      // Roles (ground truth version 3): the events the injection modified are roots; the
      // unchanged context around them and the collectives that only waited are impact.
      auto role = [&a](uint32_t i) {
        return std::binary_search(a.direct.begin(), a.direct.end(), i) ? NodeLocator::Role::kRoot
                                                                       : NodeLocator::Role::kImpact;
      };
      for (const uint32_t i : vertical) {
        NodeLocator loc;
        if (MakeLocator(trace, occ, i, &loc)) {
          loc.role = role(i);
          st.vertical.nodes.push_back(loc);
        } else {
          ++unlocatable;
        }
      }
      for (const uint32_t i : horizontal) {
        NodeLocator loc;
        if (MakeLocator(trace, occ, i, &loc)) {
          loc.role = role(i);
          st.horizontal.nodes.push_back(loc);
        }
      }
      const int64_t took = std::max(a.end, a.gpu_end) - a.start;
      const int64_t took0 = std::max(a.end0, a.gpu_end0) - a.start0;
      st.explanation = sentence(a.direct, a.affected) + "; step " + std::to_string(a.seq) +
                       (took == took0 ? " still took " + FormatNs(static_cast<double>(took)) +
                                            " (the delay was hidden by idle time)"
                                      : " took " + FormatNs(static_cast<double>(took)) +
                                            " instead of " + FormatNs(static_cast<double>(took0))) +
                       " from its start to its last GPU work.";
      if (a.direct.empty()) {
        st.explanation =
            "no operator of this step was changed, but its collectives waited for a slowed rank: " +
            st.explanation;
      }
    }
    gt.steps.push_back(std::move(st));
  }
  if (unlocatable > 0) {
    fx.notes.push_back(
        std::to_string(unlocatable) +
        " modified event(s) carry no correlation id and cannot be named by a locator");
  }

  // Requests.
  for (const StringId rid : rec.request_order) {
    RequestTruth r;
    r.id = std::string(trace.strings.Get(rid));
    std::set<uint64_t> seqs;
    for (const StepAgg& a : aggs) {
      if (a.request_set.count(r.id)) seqs.insert(a.seq);
    }
    r.steps.assign(seqs.begin(), seqs.end());
    for (const uint64_t s : r.steps) {
      if (faulty_set.count(s)) r.is_fault = true;
    }
    if (r.is_fault) {
      r.fault_type = FaultCategoryName(ctx.info.category);
      r.mechanism = ctx.info.name;
      r.fault = 0;
    }
    gt.requests.push_back(std::move(r));
  }
}

}  // namespace teller::inject::internal
