#include "teller/reconstruct/reconstruct.h"

#include <algorithm>
#include <limits>
#include <unordered_set>

#include "teller/core/progress.h"
#include "teller/core/request_id.h"
#include "teller/reconstruct/collectives.h"

namespace teller::reconstruct {
namespace {

constexpr int64_t kOpen = std::numeric_limits<int64_t>::max();

// Sort key of host events within a thread: by start; at equal starts the longer (outer)
// event first, and a pop before anything that starts at the same instant (it closes the
// previous range first).
struct HostOrder {
  const EventTable* t;
  bool operator()(uint32_t a, uint32_t b) const {
    if (t->start_ns[a] != t->start_ns[b]) return t->start_ns[a] < t->start_ns[b];
    const bool pa = t->type[a] == EventType::kPop, pb = t->type[b] == EventType::kPop;
    if (pa != pb) return pa;
    const bool push_a = t->type[a] == EventType::kPush, push_b = t->type[b] == EventType::kPush;
    if (push_a != push_b) return push_a;  // an open-ended range contains what starts with it
    if (t->end_ns[a] != t->end_ns[b]) return t->end_ns[a] > t->end_ns[b];
    return a < b;
  }
};

class Builder {
 public:
  Builder(Trace& trace, const Options& options, Reconstruction& out)
      : trace_(trace), ev_(trace.events), options_(options), out_(out), nodes_(out.nodes) {
    classifier_ = options.classifier ? options.classifier : Classifier::BuiltIn();
    layers_ = std::make_unique<LayerCache>(*classifier_, trace_);
  }

  void Run() {
    ProgressTask progress("reconstructing", 8, ProgressUnit::kItems, "stages");
    const CommKernelIndex comm = IndexCommKernels(trace_, *layers_);
    if (options_.align_clocks) AlignHostClocks(trace_, comm);
    progress.Advance();
    BuildHostForest();
    progress.Advance();
    BindGpuWork();
    progress.Advance();
    ComputeDepthAndChildren();
    progress.Advance();
    FindCollectives(comm);
    progress.Advance();
    CollectSteps();
    progress.Advance();
    AlignLogs();
    progress.Advance();
    FinishStats();
  }

 private:
  uint32_t AddNode(uint32_t event, int64_t start, int64_t end, int32_t parent) {
    nodes_.event.push_back(event);
    nodes_.start_ns.push_back(start);
    nodes_.end_ns.push_back(end);
    nodes_.parent.push_back(parent);
    nodes_.process.push_back(ev_.process[event]);
    nodes_.layer.push_back(layers_->Of(event));
    return static_cast<uint32_t>(nodes_.event.size() - 1);
  }

  // Algorithm 1 steps 2 and 4 for host events: per (process, thread), a stack scan.
  void BuildHostForest() {
    std::vector<uint32_t> host;
    host.reserve(ev_.size());
    for (uint32_t i = 0; i < ev_.size(); ++i) {
      const EventType t = ev_.type[i];
      if (t == EventType::kPush || t == EventType::kPop || t == EventType::kRange ||
          t == EventType::kMark || IsHostCall(t)) {
        host.push_back(i);
      }
    }
    // Group by thread, then order within the thread.
    std::sort(host.begin(), host.end(), [this](uint32_t a, uint32_t b) {
      if (ev_.process[a] != ev_.process[b]) return ev_.process[a] < ev_.process[b];
      if (ev_.thread[a] != ev_.thread[b]) return ev_.thread[a] < ev_.thread[b];
      return HostOrder{&ev_}(a, b);
    });
    nodes_.event.reserve(ev_.size());
    std::vector<uint32_t> stack;  // open node indices
    size_t i = 0;
    while (i < host.size()) {
      size_t j = i;
      const uint32_t proc = ev_.process[host[i]], thread = ev_.thread[host[i]];
      while (j < host.size() && ev_.process[host[j]] == proc && ev_.thread[host[j]] == thread) ++j;
      ++out_.stats.threads;
      stack.clear();
      int64_t last_time = 0;
      for (size_t k = i; k < j; ++k) {
        const uint32_t e = host[k];
        const int64_t start = ev_.start_ns[e];
        last_time = std::max(last_time, std::max(start, ev_.end_ns[e]));
        // Close complete ranges that ended before this event starts.
        while (!stack.empty() && nodes_.end_ns[stack.back()] != kOpen &&
               nodes_.end_ns[stack.back()] <= start) {
          stack.pop_back();
        }
        if (ev_.type[e] == EventType::kPop) {
          // The innermost open push closes; complete ranges still on top of it ended
          // inside it (their end was before this pop), so drop them first.
          while (!stack.empty() && nodes_.end_ns[stack.back()] != kOpen) stack.pop_back();
          if (stack.empty()) {
            ++out_.stats.unmatched_pop;
            continue;
          }
          nodes_.end_ns[stack.back()] = start;
          stack.pop_back();
          continue;
        }
        const int32_t parent = stack.empty() ? -1 : static_cast<int32_t>(stack.back());
        const bool push = ev_.type[e] == EventType::kPush;
        int64_t end = push ? kOpen : std::max(ev_.end_ns[e], start);
        if (ev_.end_ns[e] < start) trace_.counters.Add(CounterId::kReconstructNegativeDuration);
        if (parent >= 0 && end != kOpen && nodes_.end_ns[parent] != kOpen &&
            end > nodes_.end_ns[parent]) {
          // Starts inside its parent but ends after it (clock rounding, async ends):
          // keep it under the parent, counted.
          trace_.counters.Add(CounterId::kReconstructOverlappingRanges);
        }
        const uint32_t node = AddNode(e, start, end, parent);
        if (ev_.type[e] != EventType::kMark) {
          if (ev_.type[e] == EventType::kRange || push) ++out_.stats.ranges;
          if (end == kOpen || end > start || IsHostCall(ev_.type[e])) stack.push_back(node);
        }
      }
      // Pushes never popped (the process died, or the profiler window cut them): close
      // at the thread's last time, count them, flag them synthetic.
      for (uint32_t node : stack) {
        if (nodes_.end_ns[node] == kOpen) {
          nodes_.end_ns[node] = last_time;
          ++out_.stats.unmatched_push;
          ev_flags_synthetic_.push_back(node);
        }
      }
      i = j;
    }
    for (uint32_t node : ev_flags_synthetic_)
      trace_.events.flags[nodes_.event[node]] |= kEventSynthetic;
  }

  // Algorithm 1 step 4, device side: GPU work belongs to the host call of the same
  // process with the same correlation id; one call may own many (graph launches).
  void BindGpuWork() {
    std::unordered_map<uint64_t, uint32_t> by_correlation;
    by_correlation.reserve(nodes_.size());
    for (uint32_t n = 0; n < nodes_.size(); ++n) {
      const uint32_t e = nodes_.event[n];
      if (!IsHostCall(ev_.type[e]) || ev_.correlation[e] == 0) continue;
      const uint64_t key = (static_cast<uint64_t>(ev_.process[e]) << 40) ^ ev_.correlation[e];
      auto [it, inserted] = by_correlation.emplace(key, n);
      if (!inserted) {
        // Nested driver calls share the runtime call's id: the outer call wins.
        const uint32_t other = nodes_.event[it->second];
        if ((ev_.flags[other] & kEventNestedCall) && !(ev_.flags[e] & kEventNestedCall)) {
          it->second = n;
        } else if (!((ev_.flags[e] & kEventNestedCall) && !(ev_.flags[other] & kEventNestedCall))) {
          trace_.counters.Add(CounterId::kReconstructDuplicateCorrelation);
        }
      }
    }
    std::vector<uint32_t> gpu_count(nodes_.size(), 0);
    std::vector<uint32_t> gpu;
    for (uint32_t i = 0; i < ev_.size(); ++i) {
      const EventType t = ev_.type[i];
      if (IsGpuWork(t) || t == EventType::kSync || t == EventType::kGpuAnnotation) gpu.push_back(i);
    }
    std::sort(gpu.begin(), gpu.end(), [this](uint32_t a, uint32_t b) {
      return ev_.start_ns[a] != ev_.start_ns[b] ? ev_.start_ns[a] < ev_.start_ns[b] : a < b;
    });
    for (uint32_t e : gpu) {
      const EventType t = ev_.type[e];
      int32_t parent = -1;
      if (ev_.correlation[e] != 0 && t != EventType::kGpuAnnotation) {
        const uint64_t key = (static_cast<uint64_t>(ev_.process[e]) << 40) ^ ev_.correlation[e];
        if (auto it = by_correlation.find(key); it != by_correlation.end()) {
          parent = static_cast<int32_t>(it->second);
        }
      }
      const uint32_t node =
          AddNode(e, ev_.start_ns[e], std::max(ev_.end_ns[e], ev_.start_ns[e]), parent);
      if (t == EventType::kKernel) {
        ++out_.stats.kernels;
        if (nodes_.layer[node] == Layer::kComm) ++out_.stats.comm_kernels;
      }
      if (t == EventType::kMemcpy) ++out_.stats.memcpy;
      if (t == EventType::kMemset) ++out_.stats.memset;
      if (t == EventType::kGpuAnnotation || t == EventType::kSync) continue;
      if (parent >= 0) {
        if (t == EventType::kKernel) {
          ++out_.stats.kernels_linked;
          ++gpu_count[parent];
        }
        ++out_.stats.gpu_linked;
      } else {
        if (t == EventType::kKernel) ++out_.stats.kernels_orphan;
        ++out_.stats.gpu_orphan;
      }
    }
    for (uint32_t n = 0; n < gpu_count.size(); ++n) {
      if (gpu_count[n] == 0) continue;
      const std::string_view name = trace_.strings.Get(ev_.name[nodes_.event[n]]);
      if (gpu_count[n] > 1 || name.find("raphLaunch") != std::string_view::npos) {
        ++out_.stats.graph_launches;
      }
    }
  }

  void ComputeDepthAndChildren() {
    const size_t n = nodes_.size();
    nodes_.depth.assign(n, 0);
    // Parents always precede children: host nodes are added in containment order per
    // thread and GPU nodes after all host nodes.
    for (size_t i = 0; i < n; ++i) {
      const int32_t p = nodes_.parent[i];
      if (p >= 0)
        nodes_.depth[i] = static_cast<uint16_t>(std::min<int>(nodes_.depth[p] + 1, 65535));
    }
    nodes_.child_begin.assign(n + 1, 0);
    for (size_t i = 0; i < n; ++i) {
      if (nodes_.parent[i] >= 0) ++nodes_.child_begin[nodes_.parent[i] + 1];
    }
    for (size_t i = 0; i < n; ++i) nodes_.child_begin[i + 1] += nodes_.child_begin[i];
    nodes_.child_index.assign(nodes_.child_begin[n], 0);
    std::vector<uint32_t> fill(nodes_.child_begin.begin(), nodes_.child_begin.end() - 1);
    for (size_t i = 0; i < n; ++i) {
      if (nodes_.parent[i] >= 0)
        nodes_.child_index[fill[nodes_.parent[i]]++] = static_cast<uint32_t>(i);
    }
    for (size_t i = 0; i < n; ++i) {
      auto begin = nodes_.child_index.begin() + nodes_.child_begin[i];
      auto end = nodes_.child_index.begin() + nodes_.child_begin[i + 1];
      std::sort(begin, end, [this](uint32_t a, uint32_t b) {
        return nodes_.start_ns[a] != nodes_.start_ns[b] ? nodes_.start_ns[a] < nodes_.start_ns[b]
                                                        : a < b;
      });
    }
  }

  // The collective groups of the (aligned) trace, from event rows to nodes: every GPU
  // operation is a node.
  void FindCollectives(const CommKernelIndex& comm) {
    CollectiveGroups found = FindCollectiveGroups(trace_, comm);
    std::vector<int32_t> node_of_event(ev_.size(), -1);
    for (uint32_t n = 0; n < nodes_.size(); ++n) {
      if (comm.is_comm[nodes_.event[n]]) node_of_event[nodes_.event[n]] = static_cast<int32_t>(n);
    }
    Collectives& c = out_.collectives;
    c.group_of.assign(nodes_.size(), -1);
    c.groups.resize(found.groups.size());
    for (size_t g = 0; g < found.groups.size(); ++g) {
      for (const uint32_t e : found.groups[g]) {
        const int32_t n = node_of_event[e];
        c.groups[g].push_back(static_cast<uint32_t>(n));
        c.group_of[static_cast<size_t>(n)] = static_cast<int32_t>(g);
      }
    }
    c.cluster_of = std::move(found.cluster_of);
    c.proc_offset = std::move(found.proc_offset);
  }

  // Algorithm 1 step 5: step ranges and the requests they list.
  void CollectSteps() {
    // A step marker inside another (SGLang's "step[DECODE bs=32]" inside an enclosing
    // execute range, a teller.step inside ProfilerStep#N) is the same engine step: only
    // the outermost counts, and it takes the kind of the first inner marker that has one.
    std::vector<uint32_t> step_nodes;
    std::unordered_map<uint32_t, uint32_t> inner_kind_of;  // outer step node -> inner node
    for (uint32_t n = 0; n < nodes_.size(); ++n) {
      if (nodes_.layer[n] != Layer::kStep) continue;
      int32_t outer = -1;
      for (int32_t p = nodes_.parent[n]; p >= 0; p = nodes_.parent[static_cast<size_t>(p)]) {
        if (nodes_.layer[static_cast<size_t>(p)] == Layer::kStep) outer = p;
      }
      if (outer < 0) {
        step_nodes.push_back(n);
      } else {
        inner_kind_of.emplace(static_cast<uint32_t>(outer), n);
        ++out_.stats.nested_steps;
      }
    }
    std::sort(step_nodes.begin(), step_nodes.end(), [this](uint32_t a, uint32_t b) {
      if (nodes_.process[a] != nodes_.process[b]) return nodes_.process[a] < nodes_.process[b];
      return nodes_.start_ns[a] != nodes_.start_ns[b] ? nodes_.start_ns[a] < nodes_.start_ns[b]
                                                      : a < b;
    });
    uint32_t ordinal = 0;
    std::vector<std::string> ids;
    std::string kind, seq;
    for (size_t k = 0; k < step_nodes.size(); ++k) {
      const uint32_t n = step_nodes[k];
      if (k > 0 && nodes_.process[n] != nodes_.process[step_nodes[k - 1]]) ordinal = 0;
      Step step;
      step.node = n;
      step.process = nodes_.process[n];
      step.ordinal = ordinal++;
      ids.clear();
      const std::string_view step_name = trace_.strings.Get(ev_.name[nodes_.event[n]]);
      seq.clear();
      ParseStepMessage(step_name, &ids, nullptr, &seq);
      kind = StepKind(step_name);
      if (const auto inner = inner_kind_of.find(n); inner != inner_kind_of.end()) {
        const std::string_view inner_name =
            trace_.strings.Get(ev_.name[nodes_.event[inner->second]]);
        std::string inner_seq;
        ParseStepMessage(inner_name, nullptr, nullptr, &inner_seq);
        if (kind.empty()) kind = StepKind(inner_name);
        if (seq.empty()) seq = inner_seq;
      }
      step.number = StepNumber(step_name, seq);
      step.size = StepSize(step_name);
      if (const auto inner = inner_kind_of.find(n); step.size < 0 && inner != inner_kind_of.end())
        step.size = StepSize(trace_.strings.Get(ev_.name[nodes_.event[inner->second]]));
      // Long id lists continue in "teller.reqs" marks inside the step.
      for (uint32_t c = nodes_.child_begin[n]; c < nodes_.child_begin[n + 1]; ++c) {
        const uint32_t child = nodes_.child_index[c];
        const std::string_view name = trace_.strings.Get(ev_.name[nodes_.event[child]]);
        if (name.rfind("teller.reqs ", 0) == 0) ParseStepMessage(name, &ids, nullptr, nullptr);
      }
      if (!kind.empty()) step.kind = trace_.strings.Intern(kind);
      std::unordered_set<StringId> seen;
      for (const auto& id : ids) {
        const StringId rid = trace_.strings.Intern(id);
        if (!seen.insert(rid).second) continue;
        step.requests.push_back(rid);
        auto& list = out_.request_steps[rid];
        if (list.empty()) {
          out_.request_order.push_back(rid);
          // Logs name vLLM chat requests by their API id, steps by the internal one.
          const std::string_view external = ExternalRequestId(id);
          if (external.size() != id.size()) log_alias_[trace_.strings.Intern(external)] = rid;
        }
        list.push_back(static_cast<uint32_t>(out_.steps.size()));
      }
      out_.steps.push_back(std::move(step));
    }
  }

  // Algorithm 1 step 6. A line naming a request goes to that request's step whose
  // (widened) interval holds it, else its nearest step in time; a line without a request
  // goes to every step whose widened interval holds it (on the line's process, when known).
  void AlignLogs() {
    const LogTable& logs = trace_.logs;
    const int64_t tol = options_.log_tolerance_ns;
    // Steps by start, for the time-window search.
    std::vector<uint32_t> by_start(out_.steps.size());
    for (uint32_t s = 0; s < by_start.size(); ++s) by_start[s] = s;
    auto step_start = [this](uint32_t s) { return nodes_.start_ns[out_.steps[s].node]; };
    auto step_end = [this](uint32_t s) { return nodes_.end_ns[out_.steps[s].node]; };
    std::sort(by_start.begin(), by_start.end(),
              [&](uint32_t a, uint32_t b) { return step_start(a) < step_start(b); });
    int64_t longest = 0;
    for (uint32_t s = 0; s < out_.steps.size(); ++s)
      longest = std::max(longest, step_end(s) - step_start(s));
    for (uint32_t row = 0; row < logs.size(); ++row) {
      const int64_t ts = logs.ts_ns[row];
      bool aligned = false;
      if (logs.request[row] != 0) {
        StringId rid = logs.request[row];
        if (const auto alias = log_alias_.find(rid); alias != log_alias_.end()) rid = alias->second;
        const auto it = out_.request_steps.find(rid);
        if (it != out_.request_steps.end() && !it->second.empty()) {
          uint32_t best = it->second.front();
          int64_t best_gap = std::numeric_limits<int64_t>::max();
          if (ts != LogTable::kNoTime) {
            for (uint32_t s : it->second) {
              const int64_t gap = ts < step_start(s) ? step_start(s) - ts
                                  : ts > step_end(s) ? ts - step_end(s)
                                                     : 0;
              if (gap < best_gap) {
                best_gap = gap;
                best = s;
              }
            }
          }
          out_.steps[best].logs.push_back(row);
          aligned = true;
        }
      } else if (ts != LogTable::kNoTime) {
        // Candidates start no earlier than ts - tol - longest step.
        auto first = std::lower_bound(by_start.begin(), by_start.end(), ts - tol - longest,
                                      [&](uint32_t s, int64_t t) { return step_start(s) < t; });
        for (auto it = first; it != by_start.end() && step_start(*it) <= ts + tol; ++it) {
          const uint32_t s = *it;
          if (ts < step_start(s) - tol || ts > step_end(s) + tol) continue;
          if (logs.process[row] != LogTable::kNoProcess &&
              logs.process[row] != out_.steps[s].process)
            continue;
          out_.steps[s].logs.push_back(row);
          aligned = true;
        }
      }
      if (aligned) ++out_.stats.log_lines_aligned;
    }
  }

  void FinishStats() {
    Stats& s = out_.stats;
    s.events = ev_.size();
    s.processes = trace_.processes.size();
    s.steps = out_.steps.size();
    s.requests = out_.request_steps.size();
    s.log_lines = trace_.logs.size();
    for (uint32_t n = 0; n < nodes_.size(); ++n) {
      if (nodes_.layer[n] == Layer::kHostCall) ++s.host_calls;
    }
    trace_.counters.Add(CounterId::kReconstructUnmatchedPush, s.unmatched_push);
    trace_.counters.Add(CounterId::kReconstructUnmatchedPop, s.unmatched_pop);
    trace_.counters.Add(CounterId::kReconstructOrphanGpuEvents, s.gpu_orphan);
  }

  Trace& trace_;
  const EventTable& ev_;
  const Options& options_;
  Reconstruction& out_;
  std::unordered_map<StringId, StringId> log_alias_;  // API id -> engine id
  Nodes& nodes_;
  std::shared_ptr<Classifier> classifier_;
  std::unique_ptr<LayerCache> layers_;  // of trace_, shared by clock alignment and the forest
  std::vector<uint32_t> ev_flags_synthetic_;
};

}  // namespace

Reconstruction Reconstruct(Trace& trace, const Options& options) {
  Reconstruction out;
  Builder(trace, options, out).Run();
  return out;
}

const std::vector<uint32_t>& Reconstruction::CollectiveOf(uint32_t node) const {
  static const std::vector<uint32_t> kNone;
  if (node >= collectives.group_of.size() || collectives.group_of[node] < 0) return kNone;
  return collectives.groups[static_cast<size_t>(collectives.group_of[node])];
}

HorizontalView Reconstruction::CommAcrossRanks(uint32_t ordinal) const {
  // Communication is often issued from threads other than the step's (autograd and
  // NCCL threads), so the horizontal view takes every COMM node of the step's process
  // whose host-side time lies in the step's interval: a kernel counts at the time of the
  // call that launched it, an orphan kernel at its own start. Which kernels on the ranks
  // are one collective is the reconstruction's collective groups' to say, not their
  // positions in these lists.
  HorizontalView view;
  std::vector<uint8_t> listed(collectives.groups.size(), 0);
  for (const Step& step : steps) {
    if (step.ordinal != ordinal) continue;
    const int64_t begin = nodes.start_ns[step.node], end = nodes.end_ns[step.node];
    std::vector<uint32_t> comm;
    for (uint32_t n = 0; n < nodes.size(); ++n) {
      if (nodes.layer[n] != Layer::kComm || nodes.process[n] != step.process) continue;
      const int32_t p = nodes.parent[n];
      const bool launched = p >= 0 && nodes.layer[p] == Layer::kHostCall;
      const int64_t t = launched ? nodes.start_ns[p] : nodes.start_ns[n];
      if (t >= begin && t <= end) comm.push_back(n);
    }
    std::sort(comm.begin(), comm.end(),
              [this](uint32_t a, uint32_t b) { return nodes.start_ns[a] < nodes.start_ns[b]; });
    for (const uint32_t n : comm) {
      const int32_t g = n < collectives.group_of.size() ? collectives.group_of[n] : -1;
      if (g < 0 || listed[static_cast<size_t>(g)]) continue;
      listed[static_cast<size_t>(g)] = 1;
      view.collectives.push_back(static_cast<uint32_t>(g));
    }
    view.comm.push_back(std::move(comm));
  }
  return view;
}

}  // namespace teller::reconstruct
