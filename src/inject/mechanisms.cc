// What each fault mechanism changes directly; the replay (replay.h) does the rest.
#include "src/inject/replay.h"

namespace teller::inject::internal {

Status ApplyKernelFactor(Context& ctx, Replay& replay, bool one_gpu) {
  auto pattern = KernelPattern(ctx);
  if (!pattern.ok()) return pattern.status();
  const EventTable& ev = ctx.trace.events;
  std::vector<uint32_t> hits;
  for (uint32_t i = 0; i < ev.size(); ++i) {
    if (ev.type[i] == EventType::kKernel && ctx.InWindow(ev.start_ns[i]) &&
        pattern->Matches(ctx.trace, ev.name[i])) {
      hits.push_back(i);
    }
  }
  if (hits.empty()) {
    return Status::Error("no kernel in the window matches --target '" + pattern->text() +
                         "' (the kernels with most GPU time: " + TopKernelNames(ctx.trace, 5) +
                         ")");
  }
  if (one_gpu) {
    std::set<uint32_t> procs;
    for (const uint32_t i : hits) procs.insert(ev.process[i]);
    auto p =
        PickProcess(ctx, std::vector<uint32_t>(procs.begin(), procs.end()), "no GPU to slow down");
    if (!p.ok()) return p.status();
    ctx.rank_process = static_cast<int>(p.value());
    hits.erase(std::remove_if(hits.begin(), hits.end(),
                              [&](uint32_t i) { return ev.process[i] != p.value(); }),
               hits.end());
    ctx.target += " on rank " + std::to_string(ctx.RankOf(p.value()));
  }
  for (const uint32_t i : hits) replay.factor[i] = ctx.magnitude;
  ctx.modified = hits;
  ctx.what = DescribeNames(ctx, hits, "kernels");
  return Status::Ok();
}

Status ApplyGpuThrottle(Context& ctx, Replay& replay) {
  const EventTable& ev = ctx.trace.events;
  std::optional<Pattern> pattern;
  if (!ctx.options.target.empty()) {
    auto p = Pattern::Compile(ctx.options.target, "--target", false);
    if (!p.ok()) return p.status();
    pattern = std::move(p).value();
  }
  std::set<uint32_t> procs;
  for (uint32_t i = 0; i < ev.size(); ++i) {
    if (ev.type[i] == EventType::kKernel && ctx.InWindow(ev.start_ns[i]))
      procs.insert(ev.process[i]);
  }
  auto picked = PickProcess(ctx, std::vector<uint32_t>(procs.begin(), procs.end()),
                            "no kernel in the window: gpu_throttle has nothing to slow down");
  if (!picked.ok()) return picked.status();
  const uint32_t proc = picked.value();
  ctx.rank_process = static_cast<int>(proc);
  const int64_t window = std::min(ctx.w1, ctx.t_end) - ctx.w0;
  const int64_t ramp = std::min(kThrottleRampNs, window / 4);
  for (uint32_t i = 0; i < ev.size(); ++i) {
    if (ev.type[i] != EventType::kKernel || ev.process[i] != proc || !ctx.InWindow(ev.start_ns[i]))
      continue;
    if (pattern && !pattern->Matches(ctx.trace, ev.name[i])) continue;
    double share = kMemoryBoundShare;
    if (ctx.is_comm[i]) {
      share = 0;
    } else {
      switch (ClassifyKernelName(ctx.trace.strings.Get(ev.name[i]))) {
        case OpClass::kGemm:
        case OpClass::kAttention:
        case OpClass::kAttentionReduce:
          share = 1.0;
          break;
        case OpClass::kOther:
          share = kUnknownShare;
          break;
        case OpClass::kAllReduce:
        case OpClass::kAllGather:
          share = 0;
          break;
        default:
          break;
      }
    }
    const double ramped = ramp > 0 ? std::min(1.0, static_cast<double>(ev.start_ns[i] - ctx.w0) /
                                                       static_cast<double>(ramp))
                                   : 1.0;
    const double f = 1.0 + (ctx.magnitude - 1.0) * ramped * share;
    if (f <= 1.0005) continue;
    replay.factor[i] = f;
    ctx.modified.push_back(i);
  }
  if (ctx.modified.empty()) {
    return Status::Error("gpu_throttle: no compute kernel on rank " +
                         std::to_string(ctx.RankOf(proc)) + " in the window" +
                         (pattern ? " matches --target '" + pattern->text() + "'" : ""));
  }
  ctx.target = "GPU of rank " + std::to_string(ctx.RankOf(proc)) +
               (pattern ? " (kernels ~ " + pattern->text() + ")" : " (compute-bound kernels)");
  ctx.what = "compute-bound kernels";
  return Status::Ok();
}

// Host-side mechanisms act on one rank (as in the simulator): --rank, or one chosen by
// the seed among the ranks that have such calls.
Result<std::vector<uint32_t>> RankFilter(Context& ctx, std::vector<uint32_t> calls) {
  std::set<uint32_t> procs;
  for (const uint32_t c : calls) procs.insert(ctx.trace.events.process[c]);
  auto p = PickProcess(ctx, std::vector<uint32_t>(procs.begin(), procs.end()), "no call to act on");
  if (!p.ok()) return p.status();
  ctx.rank_process = static_cast<int>(p.value());
  calls.erase(std::remove_if(calls.begin(), calls.end(),
                             [&](uint32_t c) { return ctx.trace.events.process[c] != p.value(); }),
              calls.end());
  return calls;
}

Status ApplyLaunchLatency(Context& ctx, Replay& replay) {
  const EventTable& ev = ctx.trace.events;
  std::optional<Pattern> pattern;
  if (!ctx.options.target.empty()) {
    auto p = Pattern::Compile(ctx.options.target, "--target", false);
    if (!p.ok()) return p.status();
    pattern = std::move(p).value();
  }
  const auto& first_gpu = replay.gpu_of_call_first();
  std::vector<uint32_t> calls;
  for (uint32_t i = 0; i < ev.size(); ++i) {
    if (!IsHostCall(ev.type[i]) || !ctx.InWindow(ev.start_ns[i])) continue;
    const int32_t g = first_gpu[i];
    const bool launches =
        (g >= 0 && ev.type[g] == EventType::kKernel) ||
        ctx.trace.strings.Get(ev.name[i]).find("Launch") != std::string_view::npos;
    if (!launches) continue;
    if (pattern && (g < 0 || !pattern->Matches(ctx.trace, ev.name[g]))) continue;
    calls.push_back(i);
  }
  if (calls.empty()) {
    return Status::Error(
        pattern ? "no launch call in the window launches a kernel matching --target '" +
                      pattern->text() + "'"
                : std::string("no kernel launch call in the window (the trace has no "
                              "runtime/driver API events)"));
  }
  auto filtered = RankFilter(ctx, std::move(calls));
  if (!filtered.ok()) return filtered.status();
  for (const uint32_t c : filtered.value()) {
    replay.added[c] =
        static_cast<int64_t>(std::llround((ctx.magnitude - 1.0) * (ev.end_ns[c] - ev.start_ns[c])));
  }
  ctx.modified = std::move(filtered).value();
  ctx.target = pattern ? "launch calls of kernels ~ " + pattern->text() : "kernel launch calls";
  if (ctx.rank_process >= 0)
    ctx.target += " on rank " + std::to_string(ctx.RankOf(ctx.rank_process));
  ctx.what = DescribeNames(ctx, ctx.modified, "calls");
  return Status::Ok();
}

Status ApplySyncStall(Context& ctx, Replay& replay) {
  const EventTable& ev = ctx.trace.events;
  std::optional<Pattern> pattern;
  if (!ctx.options.target.empty()) {
    auto p = Pattern::Compile(ctx.options.target, "--target", false);
    if (!p.ok()) return p.status();
    pattern = std::move(p).value();
  }
  std::vector<uint32_t> calls, fallback;
  for (uint32_t i = 0; i < ev.size(); ++i) {
    if (!IsHostCall(ev.type[i]) || !ctx.InWindow(ev.start_ns[i])) continue;
    const std::string_view name = ctx.trace.strings.Get(ev.name[i]);
    if (pattern) {
      if (pattern->Matches(ctx.trace, ev.name[i])) calls.push_back(i);
    } else if (replay.blocking(i) == 1 && name.find("Synchronize") != std::string_view::npos) {
      calls.push_back(i);
    } else if (replay.blocking(i) != 0) {
      fallback.push_back(i);  // blocking copies and frees, when no explicit sync exists
    }
  }
  if (calls.empty()) calls = std::move(fallback);
  if (calls.empty()) {
    return Status::Error(
        pattern ? "no host call in the window matches --target '" + pattern->text() + "'"
                : std::string("no synchronization or blocking copy in the window"));
  }
  auto filtered = RankFilter(ctx, std::move(calls));
  if (!filtered.ok()) return filtered.status();
  for (const uint32_t c : filtered.value()) {
    replay.added[c] = static_cast<int64_t>(std::llround(ctx.magnitude * kSyncStallUnitNs));
  }
  ctx.modified = std::move(filtered).value();
  ctx.target = pattern ? "host calls ~ " + pattern->text() : "synchronizations";
  if (ctx.rank_process >= 0)
    ctx.target += " on rank " + std::to_string(ctx.RankOf(ctx.rank_process));
  ctx.what = DescribeNames(ctx, ctx.modified, "calls");
  return Status::Ok();
}

// allocator_stall, before the replay exists: existing allocator calls are used when the
// window has some (and no --target names operators); otherwise one cudaMalloc miss is
// added per step, at the start of its first operator range (matching --target).
Status PrepareAllocatorStall(Context& ctx) {
  Trace& trace = ctx.trace;
  const EventTable& ev = trace.events;
  if (ctx.options.target.empty()) {
    std::vector<uint32_t> existing;
    for (uint32_t i = 0; i < ev.size(); ++i) {
      if (IsHostCall(ev.type[i]) && ctx.InWindow(ev.start_ns[i]) &&
          IsAllocatorCall(trace.strings.Get(ev.name[i]))) {
        existing.push_back(i);
      }
    }
    if (!existing.empty()) {
      auto filtered = RankFilter(ctx, std::move(existing));
      if (!filtered.ok()) return filtered.status();
      ctx.modified = std::move(filtered).value();
      ctx.target = "caching allocator (the trace's own allocator calls)";
      return Status::Ok();
    }
  }
  std::optional<Pattern> pattern;
  if (!ctx.options.target.empty()) {
    auto p = Pattern::Compile(ctx.options.target, "--target", false);
    if (!p.ok()) return p.status();
    pattern = std::move(p).value();
  }
  // One rank, as in the simulator: --rank or the seed's choice among those with steps
  // (or ranges).
  int32_t only = -1;
  {
    std::set<uint32_t> procs;
    for (const StepRange& st : ctx.steps) {
      if (ctx.InWindow(st.start)) procs.insert(st.process);
    }
    if (procs.empty()) {
      for (uint32_t i = 0; i < ev.size(); ++i) {
        if ((ev.type[i] == EventType::kRange || ev.type[i] == EventType::kPush) &&
            ctx.InWindow(ev.start_ns[i])) {
          procs.insert(ev.process[i]);
        }
      }
    }
    auto p = PickProcess(ctx, std::vector<uint32_t>(procs.begin(), procs.end()),
                         "no step or range in the window to place allocator misses in");
    if (!p.ok()) return p.status();
    only = static_cast<int32_t>(p.value());
    ctx.rank_process = only;
  }
  // Range rows per (process, thread), by start, for the search of each step's first op.
  std::map<std::pair<uint32_t, uint32_t>, std::vector<uint32_t>> ranges;
  for (uint32_t i = 0; i < ev.size(); ++i) {
    if ((ev.type[i] == EventType::kRange || ev.type[i] == EventType::kPush) &&
        ctx.range_end[i] >= 0) {
      ranges[{ev.process[i], ev.thread[i]}].push_back(i);
    }
  }
  for (auto& [key, list] : ranges) {
    std::stable_sort(list.begin(), list.end(),
                     [&](uint32_t a, uint32_t b) { return ev.start_ns[a] < ev.start_ns[b]; });
  }
  std::set<uint32_t> step_rows;
  for (const StepRange& s : ctx.steps) step_rows.insert(s.event);
  struct Spot {
    uint32_t process, thread;
    int64_t at;
    int64_t range;  // the operator range the miss sits in, -1 = the step itself
  };
  std::vector<Spot> spots;
  auto usable = [&](uint32_t r) {
    return !step_rows.count(r) && ctx.layers->Of(r) != Layer::kStep &&
           (!pattern || pattern->Matches(trace, ev.name[r]));
  };
  if (!ctx.steps.empty()) {
    for (const StepRange& s : ctx.steps) {
      if (!ctx.InWindow(s.start) || (only >= 0 && s.process != static_cast<uint32_t>(only)))
        continue;
      const auto it = ranges.find({s.process, s.thread});
      bool placed = false;
      if (it != ranges.end()) {
        const auto& list = it->second;
        auto r = std::lower_bound(list.begin(), list.end(), s.start,
                                  [&](uint32_t row, int64_t t) { return ev.start_ns[row] < t; });
        for (; r != list.end() && ev.start_ns[*r] <= s.end; ++r) {
          if (!usable(*r)) continue;
          spots.push_back({s.process, s.thread,
                           ev.start_ns[*r] + (ctx.range_end[*r] > ev.start_ns[*r] ? 1 : 0),
                           static_cast<int64_t>(*r)});
          placed = true;
          break;
        }
      }
      if (!placed && !pattern)
        spots.push_back({s.process, s.thread, s.start + (s.end > s.start ? 1 : 0), -1});
    }
  } else {
    // No steps: the busiest host thread of each process, up to kMaxInsertedWithoutSteps
    // matching ranges spread over the window.
    std::map<uint32_t, std::pair<size_t, uint32_t>> busiest;  // process -> (ranges, thread)
    for (const auto& [key, list] : ranges) {
      auto& b = busiest[key.first];
      if (list.size() > b.first) b = {list.size(), key.second};
    }
    for (const auto& [proc, b] : busiest) {
      if (only >= 0 && proc != static_cast<uint32_t>(only)) continue;
      std::vector<uint32_t> cands;
      for (const uint32_t r : ranges[{proc, b.second}]) {
        if (ctx.InWindow(ev.start_ns[r]) && usable(r)) cands.push_back(r);
      }
      const size_t n = std::min(cands.size(), kMaxInsertedWithoutSteps);
      for (size_t k = 0; k < n; ++k) {
        const uint32_t r = cands[k * cands.size() / n];
        spots.push_back({proc, b.second,
                         ev.start_ns[r] + (ctx.range_end[r] > ev.start_ns[r] ? 1 : 0),
                         static_cast<int64_t>(r)});
      }
    }
  }
  if (spots.empty()) {
    return Status::Error(
        pattern ? "no operator range in the window matches --target '" + pattern->text() + "'"
                : std::string("no step or range in the window to place allocator misses in"));
  }
  // New correlation ids above every id of the process, so they collide with nothing.
  std::vector<uint64_t> next_id(trace.processes.size(), 0);
  std::vector<uint8_t> hip(trace.processes.size(), 0);
  for (uint32_t i = 0; i < ev.size(); ++i) {
    const uint32_t p = ev.process[i];
    if (p >= next_id.size()) continue;
    next_id[p] = std::max(next_id[p], ev.correlation[i]);
    if (IsHostCall(ev.type[i]) && trace.strings.Get(ev.name[i]).rfind("hip", 0) == 0)
      hip[ctx.trace.events.process[i]] = 1;
  }
  const StringId category = trace.strings.Intern("cuda_runtime");
  const StringId cuda_malloc = trace.strings.Intern("cudaMalloc");
  const StringId hip_malloc = trace.strings.Intern("hipMalloc");
  for (const Spot& spot : spots) {
    EventRow row;
    row.type = EventType::kRuntime;
    row.name = hip[spot.process] ? hip_malloc : cuda_malloc;
    row.category = category;
    row.process = spot.process;
    row.thread = spot.thread;
    row.start_ns = row.end_ns = spot.at;
    row.correlation = ++next_id[spot.process];
    row.flags = kEventSynthetic;
    const size_t idx = trace.events.Append(row);
    ctx.inserted.push_back(static_cast<uint32_t>(idx));
    ctx.modified.push_back(static_cast<uint32_t>(idx));
    if (spot.range >= 0) ctx.context.push_back(static_cast<uint32_t>(spot.range));
  }
  ctx.range_end.resize(trace.events.size(), -1);
  ctx.target = pattern ? "caching allocator, misses in operators ~ " + pattern->text()
                       : std::string("caching allocator, one miss per step");
  return Status::Ok();
}

void ApplyAllocatorStall(Context& ctx, Replay& replay) {
  const int64_t stall = static_cast<int64_t>(std::llround(ctx.magnitude * kAllocatorStallUnitNs));
  for (const uint32_t c : ctx.modified) replay.added[c] = stall;
  ctx.what = DescribeNames(ctx, ctx.modified, "calls");
}

Status ApplyStraggler(Context& ctx, Replay& replay) {
  const EventTable& ev = ctx.trace.events;
  std::set<uint32_t> procs;
  std::set<int32_t> clusters_with_peers;
  for (uint32_t i = 0; i < ev.size(); ++i) {
    if (ctx.coll.group_of[i] >= 0 && ctx.InWindow(ev.start_ns[i])) procs.insert(ev.process[i]);
  }
  if (procs.size() < 2) {
    size_t with_comm = 0;
    for (uint32_t p = 0; p < ctx.trace.processes.size(); ++p)
      with_comm += ctx.coll.cluster_of[p] >= 0;
    return Status::Error(
        "straggler_rank needs collectives that line up across several ranks; this trace has " +
        std::to_string(with_comm) + " process(es) with communication kernels" +
        (with_comm > 1 ? " whose collectives do not end together" : "") +
        " (give a folder of all ranks' traces)");
  }
  auto picked = PickProcess(ctx, std::vector<uint32_t>(procs.begin(), procs.end()), "no rank");
  if (!picked.ok()) return picked.status();
  const uint32_t proc = picked.value();
  ctx.rank_process = static_cast<int>(proc);
  // Collectives, not point-to-point transfers: a pipeline recv's duration is mostly
  // waiting for the previous stage, which no rank "arrives late" at. P2P kernels are used
  // only when the rank has nothing else.
  auto p2p = [&](StringId name) {
    std::string n(ctx.trace.strings.Get(name));
    std::transform(n.begin(), n.end(), n.begin(), [](unsigned char c) { return std::tolower(c); });
    return n.find("send") != std::string::npos || n.find("recv") != std::string::npos;
  };
  std::vector<uint32_t> targets;
  bool only_p2p = true;
  for (uint32_t i = 0; i < ev.size(); ++i) {
    if (ev.process[i] != proc || ctx.coll.group_of[i] < 0 || !ctx.InWindow(ev.start_ns[i]))
      continue;
    targets.push_back(i);
    only_p2p &= p2p(ev.name[i]);
  }
  if (!only_p2p) {
    targets.erase(
        std::remove_if(targets.begin(), targets.end(), [&](uint32_t i) { return p2p(ev.name[i]); }),
        targets.end());
  }
  const int64_t late = static_cast<int64_t>(std::llround(ctx.magnitude * kStragglerUnitNs));
  for (const uint32_t i : targets) {
    replay.pre_delay[i] = late;
    ctx.modified.push_back(i);
  }
  ctx.target = "rank " + std::to_string(ctx.RankOf(proc));
  ctx.what = DescribeNames(ctx, ctx.modified, "collectives");
  return Status::Ok();
}

// Kineto files do not name their host: the importer keys their processes by the file, so
// a host that is a trace file's path says nothing about machines.
bool HostKnown(std::string_view host) {
  auto ends = [&](std::string_view suffix) {
    return host.size() >= suffix.size() && host.substr(host.size() - suffix.size()) == suffix;
  };
  return !host.empty() && !ends(".json") && !ends(".json.gz");
}

Status ApplySlowLink(Context& ctx, Replay& replay) {
  const EventTable& ev = ctx.trace.events;
  std::set<std::string> hosts_seen;
  bool unknown_hosts = false;
  for (size_t g = 0; g < ctx.coll.groups.size(); ++g) {
    std::set<StringId> hosts;
    bool in_window = false;
    for (const uint32_t m : ctx.coll.groups[g]) {
      const StringId h = ctx.trace.processes[ev.process[m]].host;
      if (!HostKnown(ctx.trace.strings.Get(h))) unknown_hosts = true;
      hosts.insert(h);
      in_window |= ctx.InWindow(ev.start_ns[m]);
    }
    if (unknown_hosts) break;
    if (hosts.size() < 2 || !in_window) continue;
    replay.group_transfer_factor.resize(ctx.coll.groups.size(), 1.0);
    replay.group_transfer_factor[g] = ctx.magnitude;
    for (const uint32_t m : ctx.coll.groups[g]) ctx.modified.push_back(m);
    for (const StringId h : hosts) hosts_seen.insert(std::string(ctx.trace.strings.Get(h)));
  }
  if (unknown_hosts) {
    ctx.modified.clear();
    return Status::Error(
        "slow_link needs to know which host each rank ran on; this trace's ranks come from "
        "Kineto files, which do not say (use a teller run / teller simulate trace)");
  }
  if (ctx.modified.empty()) {
    std::set<StringId> hosts;
    for (const ProcessInfo& p : ctx.trace.processes) hosts.insert(p.host);
    return Status::Error(
        "slow_link needs collectives between ranks on different hosts; this trace has " +
        std::to_string(ctx.coll.groups.size()) + " cross-rank collective(s) on " +
        std::to_string(hosts.size()) + " host(s) and none spans two hosts");
  }
  std::sort(ctx.modified.begin(), ctx.modified.end());
  ctx.target = "links between hosts";
  for (const std::string& h : hosts_seen) ctx.target += " " + h;
  ctx.what = DescribeNames(ctx, ctx.modified, "collectives");
  return Status::Ok();
}

}  // namespace teller::inject::internal
