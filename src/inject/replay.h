// Internal to src/inject: the causal replay. Local changes (a factor on a GPU record's
// duration, time added at the end of a host call, a late arrival, a slower transfer in a
// collective) become new times for every event: stream order, host-call order on a
// thread, launches, synchronizations and collectives that wait for their last member.
#ifndef TELLER_SRC_INJECT_REPLAY_H_
#define TELLER_SRC_INJECT_REPLAY_H_

#include "src/inject/inject_internal.h"

namespace teller::inject::internal {

class Replay {
 public:
  explicit Replay(const Trace& trace, const std::vector<int64_t>& proc_offset)
      : trace_(trace), ev_(trace.events), proc_offset_(proc_offset) {
    const size_t n = ev_.size();
    s0_.assign(ev_.start_ns.begin(), ev_.start_ns.end());
    e0_.resize(n);
    for (size_t i = 0; i < n; ++i) e0_[i] = std::max(ev_.end_ns[i], ev_.start_ns[i]);
    factor.assign(n, 1.0);
    added.assign(n, 0);
    pre_delay.assign(n, 0);
    group_of.assign(n, -1);
    BuildThreads();
    BuildStreams();
    BuildCalls();
  }

  // Comm groups (set before Run): members, and per group an extra transfer factor.
  std::vector<std::vector<uint32_t>> groups;
  std::vector<int32_t> group_of;
  std::vector<double> group_transfer_factor;  // slow_link: >1 widens the transfer part

  std::vector<double> factor;
  std::vector<int64_t> added;
  std::vector<int64_t> pre_delay;

  std::vector<int64_t> ns, ne;
  int sweeps = 0;
  bool converged = true;

  const std::vector<int64_t>& s0() const { return s0_; }
  const std::vector<int64_t>& e0() const { return e0_; }
  const std::vector<std::vector<uint32_t>>& stream_events() const { return stream_events_; }
  const std::vector<int32_t>& gpu_of_call_first() const { return first_gpu_of_call_; }
  int8_t blocking(uint32_t i) const { return blocking_[i]; }

  // Transfer time of a collective: the last arriver's duration (it waits for no one).
  int64_t GroupTransfer(size_t g) const {
    int64_t w = std::numeric_limits<int64_t>::max();
    for (const uint32_t m : groups[g]) w = std::min(w, e0_[m] - s0_[m]);
    return w == std::numeric_limits<int64_t>::max() ? 0 : w;
  }

  void Run() {
    group_transfer_factor.resize(groups.size(), 1.0);
    group_w_.resize(groups.size());
    for (size_t g = 0; g < groups.size(); ++g) group_w_[g] = GroupTransfer(g);
    BuildItems();
    ns = s0_;
    ne = e0_;
    std::vector<int64_t> prev_s, prev_e;
    for (sweeps = 1; sweeps <= kMaxSweeps; ++sweeps) {
      prev_s = ns;
      prev_e = ne;
      Sweep();
      if (ns == prev_s && ne == prev_e) return;
    }
    sweeps = kMaxSweeps;
    converged = false;
  }

 private:
  enum Order : uint8_t { kGpuEnd = 0, kHostEnd = 1, kHostStart = 2, kGpuStart = 3 };
  struct Item {
    int64_t key;
    int64_t tie;
    uint32_t idx;
    uint8_t order;
  };

  void BuildThreads() {
    thread_slot_.assign(ev_.size(), -1);
    std::unordered_map<uint64_t, int32_t> slots;
    for (uint32_t i = 0; i < ev_.size(); ++i) {
      if (!IsHostEvent(ev_.type[i])) continue;
      const uint64_t key = (static_cast<uint64_t>(ev_.process[i]) << 32) | ev_.thread[i];
      const auto [it, inserted] = slots.emplace(key, static_cast<int32_t>(slots.size()));
      thread_slot_[i] = it->second;
    }
    threads_ = slots.size();
  }

  void BuildStreams() {
    pred_.assign(ev_.size(), -1);
    std::map<std::tuple<uint32_t, uint32_t, uint32_t>, int32_t> slots;
    for (uint32_t i = 0; i < ev_.size(); ++i) {
      if (!IsGpuWork(ev_.type[i])) continue;
      const auto key = std::make_tuple(ev_.process[i], ev_.device[i], ev_.stream[i]);
      const auto [it, inserted] = slots.emplace(key, static_cast<int32_t>(slots.size()));
      if (inserted) {
        stream_events_.emplace_back();
        stream_process_.push_back(ev_.process[i]);
        stream_id_.push_back(ev_.stream[i]);
      }
      stream_events_[it->second].push_back(i);
    }
    process_streams_.assign(trace_.processes.size(), {});
    stream_end_max_.resize(stream_events_.size());
    for (size_t s = 0; s < stream_events_.size(); ++s) {
      auto& list = stream_events_[s];
      std::stable_sort(list.begin(), list.end(), [this](uint32_t a, uint32_t b) {
        return s0_[a] != s0_[b] ? s0_[a] < s0_[b] : a < b;
      });
      int64_t m = kNever;
      for (size_t k = 0; k < list.size(); ++k) {
        if (k > 0) pred_[list[k]] = static_cast<int32_t>(list[k - 1]);
        m = std::max(m, e0_[list[k]]);
        stream_end_max_[s].push_back(m);
      }
      if (stream_process_[s] < process_streams_.size()) {
        process_streams_[stream_process_[s]].push_back(static_cast<uint32_t>(s));
      }
    }
  }

  void BuildCalls() {
    const size_t n = ev_.size();
    launch_.assign(n, -1);
    blocking_.assign(n, 0);
    own_copy_.assign(n, -1);
    first_gpu_of_call_.assign(n, -1);
    std::unordered_map<uint64_t, uint32_t> call_of;
    auto key = [this](uint32_t i) {
      return (static_cast<uint64_t>(ev_.process[i]) << 40) ^ ev_.correlation[i];
    };
    for (uint32_t i = 0; i < n; ++i) {
      if (!IsHostCall(ev_.type[i]) || ev_.correlation[i] == 0) continue;
      const auto [it, inserted] = call_of.emplace(key(i), i);
      // A driver call nested in a runtime call shares its id: the outer call launches.
      if (!inserted && (ev_.flags[it->second] & kEventNestedCall) &&
          !(ev_.flags[i] & kEventNestedCall)) {
        it->second = i;
      }
    }
    for (uint32_t i = 0; i < n; ++i) {
      const EventType t = ev_.type[i];
      if (!(IsGpuWork(t) || t == EventType::kSync) || ev_.correlation[i] == 0) continue;
      const auto it = call_of.find(key(i));
      if (it == call_of.end()) continue;
      const uint32_t c = it->second;
      if (IsGpuWork(t) && first_gpu_of_call_[c] < 0)
        first_gpu_of_call_[c] = static_cast<int32_t>(i);
      // Work recorded before its launch (clock skew, pytorch#192021) gets no launch edge:
      // it would tie the launch back to itself.
      if (s0_[i] >= s0_[c]) launch_[i] = static_cast<int32_t>(c);
      // A copy call that returned only after its copy ended waited for it (pageable D2H
      // copies are synchronous even when "Async").
      if ((ev_.type[i] == EventType::kMemcpy) && e0_[i] <= e0_[c] && e0_[i] >= s0_[c]) {
        own_copy_[c] = static_cast<int32_t>(i);
      }
    }
    for (uint32_t i = 0; i < n; ++i) {
      if (!IsHostCall(ev_.type[i])) continue;
      if (IsSynchronizingCall(trace_.strings.Get(ev_.name[i]))) {
        blocking_[i] = 1;
      } else if (own_copy_[i] >= 0) {
        blocking_[i] = 2;
      }
    }
  }

  int64_t Key(uint32_t i, int64_t t) const {
    const uint32_t p = ev_.process[i];
    return p < proc_offset_.size() ? t - proc_offset_[p] : t;
  }

  void BuildItems() {
    items_.clear();
    items_.reserve(ev_.size() * 2);
    for (uint32_t i = 0; i < ev_.size(); ++i) {
      const EventType t = ev_.type[i];
      if (IsHostEvent(t)) {
        items_.push_back({Key(i, s0_[i]), -e0_[i], i, kHostStart});
        // A call or range of zero length ends in its start item: a separate end item would
        // sort before it (ends come first at one instant) and move the call after its own
        // delay.
        if ((t == EventType::kRange || IsHostCall(t)) && e0_[i] > s0_[i]) {
          items_.push_back({Key(i, e0_[i]), -s0_[i], i, kHostEnd});
        }
      } else if (IsGpuWork(t)) {
        items_.push_back({Key(i, s0_[i]), 0, i, kGpuStart});
        if (group_of[i] >= 0) items_.push_back({Key(i, e0_[i]), 0, i, kGpuEnd});
      } else if (t == EventType::kSync) {
        items_.push_back({Key(i, s0_[i]), 0, i, kGpuStart});
        items_.push_back({Key(i, e0_[i]), -s0_[i], i, kHostEnd});
      }
    }
    // At one instant: collectives finish, then calls and ranges end (inner ones first:
    // they started later), then host events start (outer first), then GPU work starts.
    std::sort(items_.begin(), items_.end(), [](const Item& a, const Item& b) {
      if (a.key != b.key) return a.key < b.key;
      if (a.order != b.order) return a.order < b.order;
      if (a.tie != b.tie) return a.tie < b.tie;
      return a.idx < b.idx;
    });
  }

  // The latest new end of the GPU work a blocking call (or sync record) waited for, plus
  // its original return latency: per stream of the process, the last record that ended
  // by the call's original end.
  int64_t Release(uint32_t c, int32_t copy, uint32_t stream_hint, bool use_hint) const {
    const int64_t dur = e0_[c] - s0_[c];
    int64_t best = kNever;
    auto consider = [&](uint32_t rec) {
      const int64_t r = std::clamp<int64_t>(e0_[c] - e0_[rec], 0, dur);
      best = std::max(best, ne[rec] + r);
    };
    if (copy >= 0) consider(static_cast<uint32_t>(copy));
    if (blocking_[c] != 1 && ev_.type[c] != EventType::kSync) return best;
    const uint32_t p = ev_.process[c];
    if (p >= process_streams_.size()) return best;
    bool hinted = false;
    if (use_hint) {
      for (const uint32_t s : process_streams_[p]) hinted |= stream_id_[s] == stream_hint;
    }
    for (const uint32_t s : process_streams_[p]) {
      if (hinted && stream_id_[s] != stream_hint) continue;
      const auto& ends = stream_end_max_[s];
      const size_t k =
          static_cast<size_t>(std::upper_bound(ends.begin(), ends.end(), e0_[c]) - ends.begin());
      if (k == 0) continue;
      consider(stream_events_[s][k - 1]);
    }
    return best;
  }

  // A call or range ends: after everything that happened inside it on its thread, after
  // the GPU work it waited for (blocking calls), plus the fault's extra host time.
  void EndHostEvent(uint32_t i, std::vector<int64_t>& shift) {
    int64_t& d = shift[thread_slot_[i]];
    int64_t end = e0_[i] + d;
    if (IsHostCall(ev_.type[i])) {
      if (blocking_[i] != 0) {
        end = std::max(end, Release(i, own_copy_[i], ev_.stream[i], ev_.stream[i] != 0));
      }
      end += added[i];
    }
    ne[i] = std::max(end, ns[i]);
    d = std::max(d, ne[i] - e0_[i]);
  }

  void Sweep() {
    std::vector<int64_t> shift(threads_, 0);  // per host thread: delay accumulated so far
    for (const Item& item : items_) {
      const uint32_t i = item.idx;
      const EventType t = ev_.type[i];
      switch (item.order) {
        case kHostStart: {
          const int64_t d = shift[thread_slot_[i]];
          ns[i] = s0_[i] + d;
          if (!(t == EventType::kRange || IsHostCall(t))) {
            ne[i] = e0_[i] + d;
          } else if (e0_[i] <= s0_[i]) {
            EndHostEvent(i, shift);
          }
          break;
        }
        case kHostEnd: {
          if (t == EventType::kSync) {
            // A CUPTI/Kineto synchronization record: it ends when what it waited for ends.
            const int64_t rel = Release(i, -1, ev_.stream[i], true);
            ne[i] = std::max(ns[i] + (e0_[i] - s0_[i]), rel);
            break;
          }
          EndHostEvent(i, shift);
          break;
        }
        case kGpuStart: {
          int64_t start = s0_[i];
          const int32_t c = launch_[i];
          if (c >= 0)
            start = std::max(start, ns[c] + std::min(s0_[i] - s0_[c], kLaunchLatencyCapNs));
          if (t == EventType::kSync) {
            ns[i] = start;
            break;
          }
          const int32_t p = pred_[i];
          if (p >= 0) start = std::max(start, ne[p] + std::min(s0_[i] - e0_[p], kQueuedGapNs));
          start += pre_delay[i];
          ns[i] = start;
          const int64_t d0 = e0_[i] - s0_[i];
          ne[i] =
              start + (group_of[i] >= 0 ? d0 : static_cast<int64_t>(std::llround(d0 * factor[i])));
          break;
        }
        case kGpuEnd: {
          // A collective ends on every rank when its last rank has arrived and the
          // transfer is done: the shift of the latest arrival moves every end.
          const auto& members = groups[group_of[i]];
          int64_t late_old = kNever, late_new = kNever;
          double slow = 1.0;
          for (const uint32_t m : members) {
            const int64_t off =
                ev_.process[m] < proc_offset_.size() ? proc_offset_[ev_.process[m]] : 0;
            late_old = std::max(late_old, s0_[m] - off);
            late_new = std::max(late_new, ns[m] - off);
            slow = std::max(slow, factor[m]);
          }
          slow = std::max(slow, group_transfer_factor[group_of[i]]);
          const int64_t extra =
              static_cast<int64_t>(std::llround((slow - 1.0) * group_w_[group_of[i]]));
          // A rank that arrived later than before waits less: its own part after arriving
          // is only the transfer.
          const int64_t own = std::min(e0_[i] - s0_[i], group_w_[group_of[i]]);
          ne[i] = std::max(ns[i] + own, e0_[i] + (late_new - late_old)) + extra;
          break;
        }
      }
    }
  }

  const Trace& trace_;
  const EventTable& ev_;
  const std::vector<int64_t>& proc_offset_;
  std::vector<int64_t> s0_, e0_;
  std::vector<int32_t> thread_slot_;
  size_t threads_ = 0;
  std::vector<int32_t> pred_;
  std::vector<std::vector<uint32_t>> stream_events_;
  std::vector<uint32_t> stream_process_, stream_id_;
  std::vector<std::vector<int64_t>> stream_end_max_;
  std::vector<std::vector<uint32_t>> process_streams_;
  std::vector<int32_t> launch_, own_copy_, first_gpu_of_call_;
  std::vector<int8_t> blocking_;
  std::vector<int64_t> group_w_;
  std::vector<Item> items_;
};

}  // namespace teller::inject::internal

#endif  // TELLER_SRC_INJECT_REPLAY_H_
