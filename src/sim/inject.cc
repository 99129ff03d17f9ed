// Fault injection into recorded traces (include/teller/sim/inject.h, docs/inject.md).
//
// Three parts: what the fault changes directly (Apply*: a duration factor on GPU work,
// extra host time at the end of a call, a late arrival before a GPU record, a slower
// transfer inside a collective), the causal replay that turns those local changes into
// new times for every event (Replay), and the ground truth built from the result.
#include "teller/sim/inject.h"

#include <regex.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>

#include "teller/core/file_util.h"
#include "teller/ingest/ingest.h"
#include "teller/reconstruct/reconstruct.h"
#include "teller/sim/compare.h"

namespace teller::sim {
namespace {

using reconstruct::Layer;

constexpr int64_t kUs = 1'000;
constexpr int64_t kMs = 1'000'000;
constexpr int64_t kSec = 1'000'000'000;
constexpr int64_t kNever = std::numeric_limits<int64_t>::min();
// The replay repeats sweeps until nothing moves; a dependency cycle (only possible with
// damaged clocks) stops here and is reported.
constexpr int kMaxSweeps = 64;
// Two ranks run the same collectives when the end times of their k-th communication
// kernels of one name differ by a constant (the clock offset) within this spread (median
// absolute deviation): collectives end together on every rank (serving-reference.md
// §0.4, §5.3: <= 7 us on one host).
constexpr int64_t kCollectiveEndSpreadNs = 20 * kUs;
// The scales of the magnitudes that are not factors, the same as the simulator's
// (src/sim/executor.cc, docs/simulator.md), so that injected and simulated datasets mean
// the same by one magnitude:
//   sync_stall: a synchronization blocks magnitude x 0.9 ms longer;
//   allocator_stall: a caching-allocator miss (cudaMalloc) blocks magnitude x 180 us;
//   straggler_rank: the rank reaches each collective magnitude x 55 us late.
constexpr int64_t kSyncStallUnitNs = 900 * kUs;
constexpr int64_t kAllocatorStallUnitNs = 180 * kUs;
constexpr int64_t kStragglerUnitNs = 55 * kUs;
// allocator_stall on a trace without steps: misses inserted into at most this many ranges.
constexpr size_t kMaxInsertedWithoutSteps = 16;
// gpu_throttle: the slowdown ramps up over min(kThrottleRampNs, window / 4)
// (serving-reference.md §4.3 R3: 30-120 s ramps); memory-bound kernels feel a quarter of
// it, kernels of unknown kind half, communication none (it slows by waiting).
constexpr int64_t kThrottleRampNs = 60 * kSec;
constexpr double kMemoryBoundShare = 0.25;
constexpr double kUnknownShare = 0.5;
// Ground truth: a communication kernel counts as affected (horizontal view) when its
// duration or end moved by more than this much and this share.
constexpr int64_t kAffectedMinNs = kUs;
constexpr double kAffectedShare = 0.02;

uint64_t SplitMix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// A compiled POSIX extended regex with a per-name cache (names repeat millions of times).
class Pattern {
 public:
  static Result<Pattern> Compile(const std::string& text, const std::string& what, bool icase) {
    auto re = std::shared_ptr<regex_t>(new regex_t, [](regex_t* r) {
      regfree(r);
      delete r;
    });
    const int rc = regcomp(re.get(), text.c_str(), REG_EXTENDED | REG_NOSUB | (icase ? REG_ICASE : 0));
    if (rc != 0) {
      char buf[256];
      regerror(rc, re.get(), buf, sizeof buf);
      // regcomp failed: nothing to free, so drop the deleter's regfree.
      re.reset(new regex_t, [](regex_t* r) { delete r; });
      return Status::Error("bad " + what + " regex '" + text + "': " + buf);
    }
    Pattern p;
    p.re_ = std::move(re);
    p.text_ = text;
    return p;
  }
  bool Matches(const Trace& trace, StringId name) const {
    if (cache_.size() < trace.strings.size()) cache_.resize(trace.strings.size(), -1);
    int8_t& c = cache_[name];
    if (c < 0) {
      const std::string s(trace.strings.Get(name));
      c = regexec(re_.get(), s.c_str(), 0, nullptr, 0) == 0 ? 1 : 0;
    }
    return c == 1;
  }
  const std::string& text() const { return text_; }

 private:
  std::shared_ptr<regex_t> re_;
  std::string text_;
  mutable std::vector<int8_t> cache_;
};

bool IsHostEvent(EventType t) {
  return t == EventType::kPush || t == EventType::kPop || t == EventType::kRange ||
         t == EventType::kMark || IsHostCall(t);
}

std::string StripVersion(std::string_view name) {
  // nsys writes versioned API names: "cudaMemcpy_v3020".
  const size_t v = name.rfind("_v");
  if (v != std::string_view::npos && v + 2 < name.size() &&
      std::all_of(name.begin() + static_cast<long>(v) + 2, name.end(),
                  [](char c) { return c >= '0' && c <= '9'; })) {
    name = name.substr(0, v);
  }
  return std::string(name);
}

// Host calls that block until earlier GPU work is done: synchronizations, and the copy and
// free calls that synchronize implicitly.
bool IsSynchronizingCall(std::string_view name) {
  if (name.find("Synchronize") != std::string_view::npos) return true;
  static const char* const kBlocking[] = {
      "cudaMemcpy", "cudaMemcpy2D", "cudaMemcpy3D", "cudaMemcpyFromSymbol", "cudaMemcpyToSymbol",
      "cudaMemset", "cudaFree", "cudaFreeHost", "hipMemcpy", "hipMemcpyWithStream",
      "hipMemcpyDtoH", "hipMemcpyHtoD", "hipMemset", "hipFree", "cuMemcpy", "cuMemcpyDtoH",
      "cuMemcpyHtoD", "cuMemFree", "cuMemFreeHost"};
  const std::string base = StripVersion(name);
  for (const char* b : kBlocking) {
    if (base == b) return true;
  }
  return false;
}

bool IsAllocatorCall(std::string_view name) {
  static const char* const kAlloc[] = {
      "cudaMalloc", "cudaFree", "cudaMallocHost", "cudaHostAlloc", "cudaFreeHost", "hipMalloc",
      "hipFree", "hipExtMallocWithFlags", "hipHostMalloc", "cuMemAlloc", "cuMemFree",
      "cuMemCreate", "cuMemMap", "cuMemUnmap", "cuMemRelease", "cuMemAddressReserve"};
  const std::string base = StripVersion(name);
  for (const char* a : kAlloc) {
    if (base == a || base == std::string(a) + "_v2") return true;
  }
  return false;
}

std::string FormatNs(double ns) {
  char buf[48];
  const double a = std::fabs(ns);
  if (a >= kSec) {
    std::snprintf(buf, sizeof buf, "%.2f s", ns / kSec);
  } else if (a >= 10 * kMs) {
    std::snprintf(buf, sizeof buf, "%.1f ms", ns / kMs);
  } else if (a >= kMs) {
    std::snprintf(buf, sizeof buf, "%.2f ms", ns / kMs);
  } else if (a >= 10 * kUs) {
    std::snprintf(buf, sizeof buf, "%.0f us", ns / kUs);
  } else {
    std::snprintf(buf, sizeof buf, "%.1f us", ns / kUs);
  }
  return buf;
}

std::string FormatFactor(double f) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1fx", f);
  return buf;
}

int64_t MedianNs(std::vector<int64_t> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::string ShortKernel(std::string_view name) {
  // "void vllm::fused_add_rms_norm_kernel<...>(...)" -> "vllm::fused_add_rms_norm_kernel..."
  if (name.rfind("void ", 0) == 0) name.remove_prefix(5);
  const size_t cut = name.find_first_of("<(");
  std::string s(name.substr(0, std::min(cut, size_t{48})));
  if (s.size() < name.size()) s += "...";
  return s;
}

// "3-9", "3", "3-5, 8, 11-12".
std::string SeqRanges(const std::vector<uint64_t>& seqs) {
  std::string out;
  for (size_t i = 0; i < seqs.size();) {
    size_t j = i;
    while (j + 1 < seqs.size() && seqs[j + 1] == seqs[j] + 1) ++j;
    if (!out.empty()) out += ", ";
    out += std::to_string(seqs[i]);
    if (j > i) out += "-" + std::to_string(seqs[j]);
    i = j + 1;
  }
  return out;
}

// ---------------------------------------------------------------------------------------
// Replay

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
      if (!inserted && (ev_.flags[it->second] & kEventNestedCall) && !(ev_.flags[i] & kEventNestedCall)) {
        it->second = i;
      }
    }
    for (uint32_t i = 0; i < n; ++i) {
      const EventType t = ev_.type[i];
      if (!(IsGpuWork(t) || t == EventType::kSync) || ev_.correlation[i] == 0) continue;
      const auto it = call_of.find(key(i));
      if (it == call_of.end()) continue;
      const uint32_t c = it->second;
      if (IsGpuWork(t) && first_gpu_of_call_[c] < 0) first_gpu_of_call_[c] = static_cast<int32_t>(i);
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
      const size_t k = static_cast<size_t>(std::upper_bound(ends.begin(), ends.end(), e0_[c]) - ends.begin());
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
          if (c >= 0) start = std::max(start, ns[c] + std::min(s0_[i] - s0_[c], kLaunchLatencyCapNs));
          if (t == EventType::kSync) {
            ns[i] = start;
            break;
          }
          const int32_t p = pred_[i];
          if (p >= 0) start = std::max(start, ne[p] + std::min(s0_[i] - e0_[p], kQueuedGapNs));
          start += pre_delay[i];
          ns[i] = start;
          const int64_t d0 = e0_[i] - s0_[i];
          ne[i] = start + (group_of[i] >= 0 ? d0 : static_cast<int64_t>(std::llround(d0 * factor[i])));
          break;
        }
        case kGpuEnd: {
          // A collective ends on every rank when its last rank has arrived and the
          // transfer is done: the shift of the latest arrival moves every end.
          const auto& members = groups[group_of[i]];
          int64_t late_old = kNever, late_new = kNever;
          double slow = 1.0;
          for (const uint32_t m : members) {
            const int64_t off = ev_.process[m] < proc_offset_.size() ? proc_offset_[ev_.process[m]] : 0;
            late_old = std::max(late_old, s0_[m] - off);
            late_new = std::max(late_new, ns[m] - off);
            slow = std::max(slow, factor[m]);
          }
          slow = std::max(slow, group_transfer_factor[group_of[i]]);
          const int64_t extra = static_cast<int64_t>(std::llround((slow - 1.0) * group_w_[group_of[i]]));
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

// ---------------------------------------------------------------------------------------
// Collectives across ranks

struct Collectives {
  std::vector<int64_t> proc_offset;              // per process, to the cluster's first
  std::vector<std::vector<uint32_t>> groups;     // members (one per process)
  std::vector<int32_t> group_of;                 // per event
  std::vector<uint8_t> is_comm;                  // per event: a communication kernel
  std::vector<int32_t> cluster_of;               // per process, -1 = no collectives
};

Collectives FindCollectives(const Trace& trace, reconstruct::Classifier& classifier) {
  const EventTable& ev = trace.events;
  Collectives out;
  out.proc_offset.assign(trace.processes.size(), 0);
  out.group_of.assign(ev.size(), -1);
  out.is_comm.assign(ev.size(), 0);
  out.cluster_of.assign(trace.processes.size(), -1);
  // Per process: its communication kernels, numbered per name in start order.
  std::vector<std::vector<uint32_t>> comm(trace.processes.size());
  for (uint32_t i = 0; i < ev.size(); ++i) {
    if (ev.type[i] != EventType::kKernel || ev.process[i] >= comm.size()) continue;
    if (classifier.Classify(trace, i) != Layer::kComm) continue;
    out.is_comm[i] = 1;
    comm[ev.process[i]].push_back(i);
  }
  using Key = std::pair<StringId, uint32_t>;  // (name, occurrence)
  std::vector<std::map<Key, uint32_t>> keyed(trace.processes.size());
  for (size_t p = 0; p < comm.size(); ++p) {
    auto& list = comm[p];
    std::stable_sort(list.begin(), list.end(),
                     [&](uint32_t a, uint32_t b) { return ev.start_ns[a] < ev.start_ns[b]; });
    std::unordered_map<StringId, uint32_t> count;
    for (const uint32_t e : list) keyed[p].emplace(Key{ev.name[e], count[ev.name[e]]++}, e);
  }
  // Clusters: a process joins the first cluster whose reference process it is coupled to.
  std::vector<uint32_t> refs;
  for (uint32_t p = 0; p < keyed.size(); ++p) {
    if (keyed[p].empty()) continue;
    for (size_t c = 0; c < refs.size() && out.cluster_of[p] < 0; ++c) {
      const uint32_t r = refs[c];
      std::vector<int64_t> diff;
      for (const auto& [key, e] : keyed[p]) {
        const auto it = keyed[r].find(key);
        if (it != keyed[r].end()) diff.push_back(ev.end_ns[e] - ev.end_ns[it->second]);
      }
      if (diff.empty() || diff.size() * 2 < std::min(keyed[p].size(), keyed[r].size())) continue;
      std::vector<int64_t> sorted = diff;
      std::sort(sorted.begin(), sorted.end());
      const int64_t offset = sorted[sorted.size() / 2];
      for (int64_t& d : diff) d = std::llabs(d - offset);
      std::sort(diff.begin(), diff.end());
      if (diff[diff.size() / 2] > kCollectiveEndSpreadNs) continue;
      out.cluster_of[p] = static_cast<int32_t>(c);
      out.proc_offset[p] = out.proc_offset[r] + offset;
    }
    if (out.cluster_of[p] < 0) {
      out.cluster_of[p] = static_cast<int32_t>(refs.size());
      refs.push_back(p);
    }
  }
  // Groups: the same (name, occurrence) on at least two processes of a cluster.
  std::map<std::pair<int32_t, Key>, std::vector<uint32_t>> members;
  for (uint32_t p = 0; p < keyed.size(); ++p) {
    for (const auto& [key, e] : keyed[p]) members[{out.cluster_of[p], key}].push_back(e);
  }
  for (auto& [key, list] : members) {
    if (list.size() < 2) continue;
    for (const uint32_t e : list) out.group_of[e] = static_cast<int32_t>(out.groups.size());
    out.groups.push_back(std::move(list));
  }
  return out;
}

// ---------------------------------------------------------------------------------------
// Host ranges and steps

// Complete interval of each range row (kRange: its end; kPush: its pop), -1 when none.
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

struct StepRange {
  uint32_t event;  // the outermost STEP range row
  uint32_t process;
  uint32_t thread;
  int64_t start, end;  // original times
};

// Outermost STEP ranges (classifier rules), per process by start.
std::vector<StepRange> OuterSteps(const Trace& trace, reconstruct::Classifier& classifier,
                                  const std::vector<int64_t>& range_end) {
  const EventTable& ev = trace.events;
  std::vector<StepRange> all;
  for (uint32_t i = 0; i < ev.size(); ++i) {
    if ((ev.type[i] != EventType::kRange && ev.type[i] != EventType::kPush) || range_end[i] < 0) continue;
    if (classifier.Classify(trace, i) != Layer::kStep) continue;
    all.push_back({i, ev.process[i], ev.thread[i], ev.start_ns[i], range_end[i]});
  }
  std::sort(all.begin(), all.end(), [](const StepRange& a, const StepRange& b) {
    if (a.process != b.process) return a.process < b.process;
    if (a.start != b.start) return a.start < b.start;
    return a.end > b.end;
  });
  std::vector<StepRange> outer;
  for (const StepRange& s : all) {
    if (!outer.empty() && outer.back().process == s.process && s.start >= outer.back().start &&
        s.end <= outer.back().end) {
      continue;
    }
    outer.push_back(s);
  }
  return outer;
}

// ---------------------------------------------------------------------------------------
// The injection

struct Context {
  Trace& trace;
  const InjectOptions& options;
  const MechanismInfo& info;
  double magnitude;
  int64_t t0 = 0, t_end = 0, w0 = 0, w1 = 0;
  std::shared_ptr<reconstruct::Classifier> classifier;
  Collectives coll;
  std::vector<uint32_t> gpu_processes;  // processes with GPU work
  std::vector<int64_t> range_end;       // original ends of range rows
  std::vector<StepRange> steps;
  // Results of Apply*
  std::vector<uint32_t> modified;       // events acted on
  std::string target;                   // for the ground truth
  std::string what;                     // "ampere_bf16_s16816gemm... kernels" for texts
  int rank_process = -1;                // process acted on, -1 = all
  std::vector<uint32_t> inserted;       // rows added (allocator_stall)
  // Evidence nodes that the fault did not change but that locate it (the operator range
  // an allocator miss sits in): listed in the vertical view with the modified nodes.
  std::vector<uint32_t> context;

  Context(Trace& t, const InjectOptions& o, const MechanismInfo& i)
      : trace(t), options(o), info(i), magnitude(o.magnitude > 0 ? o.magnitude : i.default_magnitude) {}
  bool InWindow(int64_t t) const { return t >= w0 && t < w1; }
  int RankOf(uint32_t p) const {
    if (trace.processes[p].rank >= 0) return trace.processes[p].rank;
    const auto it = std::find(gpu_processes.begin(), gpu_processes.end(), p);
    return it == gpu_processes.end() ? -1 : static_cast<int>(it - gpu_processes.begin());
  }
};

std::string RankList(const Context& ctx, const std::vector<uint32_t>& procs) {
  std::string s;
  for (const uint32_t p : procs) {
    if (!s.empty()) s += ", ";
    s += std::to_string(ctx.RankOf(p));
  }
  return s;
}

// Picks the process a rank-scoped mechanism acts on among `candidates`.
Result<uint32_t> PickProcess(const Context& ctx, const std::vector<uint32_t>& candidates,
                             const std::string& why_none) {
  if (candidates.empty()) return Status::Error(why_none);
  if (ctx.options.rank >= 0) {
    for (const uint32_t p : candidates) {
      if (ctx.RankOf(p) == ctx.options.rank) return p;
    }
    return Status::Error("--rank " + std::to_string(ctx.options.rank) + ": no such rank among " +
                         "those the fault can act on (ranks " + RankList(ctx, candidates) + ")");
  }
  return candidates[SplitMix(ctx.options.seed) % candidates.size()];
}

// The kernel names with most GPU time, for error messages and the default target.
std::string TopKernelNames(const Trace& trace, size_t n) {
  std::unordered_map<StringId, int64_t> total;
  const EventTable& ev = trace.events;
  for (size_t i = 0; i < ev.size(); ++i) {
    if (ev.type[i] == EventType::kKernel) total[ev.name[i]] += ev.end_ns[i] - ev.start_ns[i];
  }
  std::vector<std::pair<int64_t, StringId>> v;
  for (const auto& [id, t] : total) v.emplace_back(-t, id);
  std::sort(v.begin(), v.end());
  std::string s;
  for (size_t k = 0; k < v.size() && k < n; ++k) {
    if (!s.empty()) s += ", ";
    s += "'" + ShortKernel(trace.strings.Get(v[k].second)) + "'";
  }
  return s.empty() ? "none, the trace has no kernels" : s;
}

// The kernel family a kernel mechanism acts on: the user's regex, or by default the
// compute class (compare.h) with the most GPU time in the window.
Result<Pattern> KernelPattern(Context& ctx) {
  if (!ctx.options.target.empty()) {
    auto p = Pattern::Compile(ctx.options.target, "--target", false);
    if (p.ok()) ctx.target = "kernels ~ " + ctx.options.target;
    return p;
  }
  const EventTable& ev = ctx.trace.events;
  int64_t total[kOpClassCount] = {};
  for (uint32_t i = 0; i < ev.size(); ++i) {
    if (ev.type[i] != EventType::kKernel || ctx.coll.is_comm[i] || !ctx.InWindow(ev.start_ns[i])) continue;
    total[static_cast<size_t>(ClassifyKernelName(ctx.trace.strings.Get(ev.name[i])))] +=
        ev.end_ns[i] - ev.start_ns[i];
  }
  size_t best = kOpClassCount;
  for (size_t c = 0; c < kOpClassCount; ++c) {
    const OpClass oc = static_cast<OpClass>(c);
    if (oc == OpClass::kOther || oc == OpClass::kAllReduce || oc == OpClass::kAllGather) continue;
    if (total[c] > 0 && (best == kOpClassCount || total[c] > total[best])) best = c;
  }
  if (best == kOpClassCount) {
    return Status::Error("no compute kernel in the window to slow down (kernels with most GPU time: " +
                         TopKernelNames(ctx.trace, 5) + ")");
  }
  const OpClass oc = static_cast<OpClass>(best);
  auto p = Pattern::Compile(std::string(OpClassPattern(oc)), "class", true);
  if (p.ok()) {
    ctx.target = "kernels ~ " + std::string(OpClassPattern(oc)) + " (class " +
                 std::string(OpClassName(oc)) + ", the most GPU time)";
  }
  return p;
}

// "<most common name>... kernels" for explanations.
std::string DescribeNames(const Context& ctx, const std::vector<uint32_t>& events, const char* noun) {
  std::unordered_map<StringId, size_t> count;
  for (const uint32_t e : events) ++count[ctx.trace.events.name[e]];
  StringId best = 0;
  size_t n = 0;
  for (const auto& [id, c] : count) {
    if (c > n || (c == n && id < best)) {
      best = id;
      n = c;
    }
  }
  std::string s = ShortKernel(ctx.trace.strings.Get(best)) + " " + noun;
  if (events.size() == 1 && !s.empty() && s.back() == 's') s.pop_back();
  if (count.size() > 1) s += " (and " + std::to_string(count.size() - 1) + " other names)";
  return s;
}

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
                         "' (the kernels with most GPU time: " + TopKernelNames(ctx.trace, 5) + ")");
  }
  if (one_gpu) {
    std::set<uint32_t> procs;
    for (const uint32_t i : hits) procs.insert(ev.process[i]);
    auto p = PickProcess(ctx, std::vector<uint32_t>(procs.begin(), procs.end()), "no GPU to slow down");
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
    if (ev.type[i] == EventType::kKernel && ctx.InWindow(ev.start_ns[i])) procs.insert(ev.process[i]);
  }
  auto picked = PickProcess(ctx, std::vector<uint32_t>(procs.begin(), procs.end()),
                            "no kernel in the window: gpu_throttle has nothing to slow down");
  if (!picked.ok()) return picked.status();
  const uint32_t proc = picked.value();
  ctx.rank_process = static_cast<int>(proc);
  const int64_t window = std::min(ctx.w1, ctx.t_end) - ctx.w0;
  const int64_t ramp = std::min(kThrottleRampNs, window / 4);
  for (uint32_t i = 0; i < ev.size(); ++i) {
    if (ev.type[i] != EventType::kKernel || ev.process[i] != proc || !ctx.InWindow(ev.start_ns[i])) continue;
    if (pattern && !pattern->Matches(ctx.trace, ev.name[i])) continue;
    double share = kMemoryBoundShare;
    if (ctx.coll.is_comm[i]) {
      share = 0;
    } else {
      switch (ClassifyKernelName(ctx.trace.strings.Get(ev.name[i]))) {
        case OpClass::kGemm:
        case OpClass::kAttention:
        case OpClass::kAttentionReduce: share = 1.0; break;
        case OpClass::kOther: share = kUnknownShare; break;
        case OpClass::kAllReduce:
        case OpClass::kAllGather: share = 0; break;
        default: break;
      }
    }
    const double ramped =
        ramp > 0 ? std::min(1.0, static_cast<double>(ev.start_ns[i] - ctx.w0) / static_cast<double>(ramp)) : 1.0;
    const double f = 1.0 + (ctx.magnitude - 1.0) * ramped * share;
    if (f <= 1.0005) continue;
    replay.factor[i] = f;
    ctx.modified.push_back(i);
  }
  if (ctx.modified.empty()) {
    return Status::Error("gpu_throttle: no compute kernel on rank " + std::to_string(ctx.RankOf(proc)) +
                         " in the window" + (pattern ? " matches --target '" + pattern->text() + "'" : ""));
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
    const bool launches = (g >= 0 && ev.type[g] == EventType::kKernel) ||
                          ctx.trace.strings.Get(ev.name[i]).find("Launch") != std::string_view::npos;
    if (!launches) continue;
    if (pattern && (g < 0 || !pattern->Matches(ctx.trace, ev.name[g]))) continue;
    calls.push_back(i);
  }
  if (calls.empty()) {
    return Status::Error(pattern ? "no launch call in the window launches a kernel matching --target '" +
                                       pattern->text() + "'"
                                 : std::string("no kernel launch call in the window (the trace has no "
                                               "runtime/driver API events)"));
  }
  auto filtered = RankFilter(ctx, std::move(calls));
  if (!filtered.ok()) return filtered.status();
  for (const uint32_t c : filtered.value()) {
    replay.added[c] = static_cast<int64_t>(std::llround((ctx.magnitude - 1.0) * (ev.end_ns[c] - ev.start_ns[c])));
  }
  ctx.modified = std::move(filtered).value();
  ctx.target = pattern ? "launch calls of kernels ~ " + pattern->text() : "kernel launch calls";
  if (ctx.rank_process >= 0) ctx.target += " on rank " + std::to_string(ctx.RankOf(ctx.rank_process));
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
    return Status::Error(pattern ? "no host call in the window matches --target '" + pattern->text() + "'"
                                 : std::string("no synchronization or blocking copy in the window"));
  }
  auto filtered = RankFilter(ctx, std::move(calls));
  if (!filtered.ok()) return filtered.status();
  for (const uint32_t c : filtered.value()) {
    replay.added[c] = static_cast<int64_t>(std::llround(ctx.magnitude * kSyncStallUnitNs));
  }
  ctx.modified = std::move(filtered).value();
  ctx.target = pattern ? "host calls ~ " + pattern->text() : "synchronizations";
  if (ctx.rank_process >= 0) ctx.target += " on rank " + std::to_string(ctx.RankOf(ctx.rank_process));
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
      if (IsHostCall(ev.type[i]) && ctx.InWindow(ev.start_ns[i]) && IsAllocatorCall(trace.strings.Get(ev.name[i]))) {
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
        if ((ev.type[i] == EventType::kRange || ev.type[i] == EventType::kPush) && ctx.InWindow(ev.start_ns[i])) {
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
    if ((ev.type[i] == EventType::kRange || ev.type[i] == EventType::kPush) && ctx.range_end[i] >= 0) {
      ranges[{ev.process[i], ev.thread[i]}].push_back(i);
    }
  }
  for (auto& [key, list] : ranges) {
    std::stable_sort(list.begin(), list.end(), [&](uint32_t a, uint32_t b) { return ev.start_ns[a] < ev.start_ns[b]; });
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
    return !step_rows.count(r) && ctx.classifier->Classify(trace, r) != Layer::kStep &&
           (!pattern || pattern->Matches(trace, ev.name[r]));
  };
  if (!ctx.steps.empty()) {
    for (const StepRange& s : ctx.steps) {
      if (!ctx.InWindow(s.start) || (only >= 0 && s.process != static_cast<uint32_t>(only))) continue;
      const auto it = ranges.find({s.process, s.thread});
      bool placed = false;
      if (it != ranges.end()) {
        const auto& list = it->second;
        auto r = std::lower_bound(list.begin(), list.end(), s.start,
                                  [&](uint32_t row, int64_t t) { return ev.start_ns[row] < t; });
        for (; r != list.end() && ev.start_ns[*r] <= s.end; ++r) {
          if (!usable(*r)) continue;
          spots.push_back({s.process, s.thread, ev.start_ns[*r] + (ctx.range_end[*r] > ev.start_ns[*r] ? 1 : 0),
                           static_cast<int64_t>(*r)});
          placed = true;
          break;
        }
      }
      if (!placed && !pattern) spots.push_back({s.process, s.thread, s.start + (s.end > s.start ? 1 : 0), -1});
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
        spots.push_back({proc, b.second, ev.start_ns[r] + (ctx.range_end[r] > ev.start_ns[r] ? 1 : 0),
                         static_cast<int64_t>(r)});
      }
    }
  }
  if (spots.empty()) {
    return Status::Error(pattern ? "no operator range in the window matches --target '" + pattern->text() + "'"
                                 : std::string("no step or range in the window to place allocator misses in"));
  }
  // New correlation ids above every id of the process, so they collide with nothing.
  std::vector<uint64_t> next_id(trace.processes.size(), 0);
  std::vector<uint8_t> hip(trace.processes.size(), 0);
  for (uint32_t i = 0; i < ev.size(); ++i) {
    const uint32_t p = ev.process[i];
    if (p >= next_id.size()) continue;
    next_id[p] = std::max(next_id[p], ev.correlation[i]);
    if (IsHostCall(ev.type[i]) && trace.strings.Get(ev.name[i]).rfind("hip", 0) == 0) hip[ctx.trace.events.process[i]] = 1;
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
    for (uint32_t p = 0; p < ctx.trace.processes.size(); ++p) with_comm += ctx.coll.cluster_of[p] >= 0;
    return Status::Error("straggler_rank needs collectives that line up across several ranks; this trace has " +
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
    if (ev.process[i] != proc || ctx.coll.group_of[i] < 0 || !ctx.InWindow(ev.start_ns[i])) continue;
    targets.push_back(i);
    only_p2p &= p2p(ev.name[i]);
  }
  if (!only_p2p) {
    targets.erase(std::remove_if(targets.begin(), targets.end(), [&](uint32_t i) { return p2p(ev.name[i]); }),
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
    return Status::Error("slow_link needs to know which host each rank ran on; this trace's ranks come from "
                         "Kineto files, which do not say (use a teller run / teller simulate trace)");
  }
  if (ctx.modified.empty()) {
    std::set<StringId> hosts;
    for (const ProcessInfo& p : ctx.trace.processes) hosts.insert(p.host);
    return Status::Error("slow_link needs collectives between ranks on different hosts; this trace has " +
                         std::to_string(ctx.coll.groups.size()) + " cross-rank collective(s) on " +
                         std::to_string(hosts.size()) + " host(s) and none spans two hosts");
  }
  std::sort(ctx.modified.begin(), ctx.modified.end());
  ctx.target = "links between hosts";
  for (const std::string& h : hosts_seen) ctx.target += " " + h;
  ctx.what = DescribeNames(ctx, ctx.modified, "collectives");
  return Status::Ok();
}

// ---------------------------------------------------------------------------------------
// Ground truth

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
    if (affected_comm[i] || (is_direct[i] && ctx.coll.is_comm[i])) aggs[a].affected.push_back(i);
  }
  if (!aggs.empty() && outside > 0) {
    fx.notes.push_back(std::to_string(outside) + " modified event(s) lie outside every step");
  }
  if (aggs.empty()) {
    fx.notes.push_back("the trace has no step ranges (teller.step, engine step markers, ProfilerStep#): "
                       "the ground truth has no steps, only the fault");
  }

  // The fault.
  const int64_t window_end = std::min(ctx.w1, ctx.t_end);
  FaultRecord f;
  f.id = 0;
  f.mechanism = ctx.info.name;
  f.category = ctx.info.category;
  f.onset_ns = ctx.w0;
  f.duration_ns = window_end - ctx.w0;
  f.magnitude = ctx.magnitude;
  f.target = ctx.target;

  // Which ranks, which steps.
  std::set<int> ranks;
  for (const uint32_t i : ctx.modified) ranks.insert(ctx.RankOf(ev.process[i]));
  std::string on_ranks;
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
  const std::string in_steps = faulty.empty() ? std::string("outside the trace's steps")
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
    auto plural = [&](const char* word) { return std::string(word) + (direct.size() == 1 ? "" : "s"); };
    switch (m) {
      case Mechanism::kKernelThrottle:
      case Mechanism::kKernelSlowOneGpu:
        return ctx.what + " ran " + FormatFactor(ratio) + " slower (" + FormatNs(after) + " vs " +
               FormatNs(before) + " median, " + n + " " + plural("kernel") + ") " + in_steps + " " + on_ranks;
      case Mechanism::kGpuThrottle:
        return "the GPU of " + on_ranks.substr(3) + " was throttled: its compute-bound kernels ran " +
               FormatFactor(ratio) + " slower (" + FormatNs(after) + " vs " + FormatNs(before) +
               " median, " + n + " " + plural("kernel") + ") " + in_steps;
      case Mechanism::kLaunchLatency:
        return "kernel launch calls (" + ctx.what + ") took " + FormatFactor(ratio) + " longer on the host (" +
               FormatNs(after) + " vs " + FormatNs(before) + " median, " + n + " " + plural("call") + ") " + in_steps + " " +
               on_ranks + ", so the GPU waited between kernels";
      case Mechanism::kSyncStall:
        return ctx.what + " blocked " + FormatNs(after) + " instead of " + FormatNs(before) + " (median, " + n + " " +
               plural("call") + ") " + in_steps + " " + on_ranks;
      case Mechanism::kAllocatorStall:
        if (!ctx.inserted.empty()) {
          return "caching-allocator misses: " + n + " added " + ctx.what + " stalled the host " + FormatNs(after) +
                 " each " + in_steps + " " + on_ranks;
        }
        return "caching-allocator misses: " + ctx.what + " stalled the host " + FormatNs(after) +
               " each (vs " + FormatNs(before) + ") " + in_steps + " " + on_ranks;
      case Mechanism::kStragglerRank: {
        std::vector<int64_t> delays;
        for (const uint32_t i : direct) delays.push_back(replay.pre_delay[i]);
        std::vector<int64_t> later;
        for (const uint32_t i : affected) {
          const int64_t grew = (replay.ne[i] - replay.ns[i]) - (replay.e0()[i] - replay.s0()[i]);
          if (static_cast<int>(ev.process[i]) != ctx.rank_process && grew > 0) later.push_back(grew);
        }
        std::string s = on_ranks.substr(3) + " reached " + n + " " + plural("collective") + " (" + ctx.what + ") " +
                        FormatNs(static_cast<double>(MedianNs(delays))) + " late (median) " + in_steps;
        if (!later.empty()) {
          s += "; " + std::to_string(later.size()) + " collective kernels on the other ranks waited for it (median +" +
               FormatNs(static_cast<double>(MedianNs(later))) + ", up to +" +
               FormatNs(static_cast<double>(*std::max_element(later.begin(), later.end()))) + ")";
        } else {
          s += "; the other ranks arrived later still, so nobody waited";
        }
        return s;
      }
      case Mechanism::kSlowLink:
        return "collectives between hosts (" + ctx.what + ") took " + FormatNs(after) + " instead of " +
               FormatNs(before) + " (median, " + n + " " + plural("kernel") + ") " + in_steps;
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
    f.description = std::string(ctx.info.summary) + ". Injected: " + sentence(ctx.modified, all_affected) + ".";
  }
  gt.faults.push_back(f);

  // Steps.
  const Occurrences occ = CountOccurrences(trace);
  std::sort(aggs.begin(), aggs.end(), [](const StepAgg& a, const StepAgg& b) { return a.seq < b.seq; });
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
      for (const uint32_t i : vertical) {
        NodeLocator loc;
        if (MakeLocator(trace, occ, i, &loc)) {
          st.vertical.nodes.push_back(loc);
        } else {
          ++unlocatable;
        }
      }
      for (const uint32_t i : horizontal) {
        NodeLocator loc;
        if (MakeLocator(trace, occ, i, &loc)) st.horizontal.nodes.push_back(loc);
      }
      const int64_t took = std::max(a.end, a.gpu_end) - a.start;
      const int64_t took0 = std::max(a.end0, a.gpu_end0) - a.start0;
      st.explanation = sentence(a.direct, a.affected) + "; step " + std::to_string(a.seq) +
                       (took == took0 ? " still took " + FormatNs(static_cast<double>(took)) +
                                            " (the delay was hidden by idle time)"
                                      : " took " + FormatNs(static_cast<double>(took)) + " instead of " +
                                            FormatNs(static_cast<double>(took0))) +
                       " from its start to its last GPU work.";
      if (a.direct.empty()) {
        st.explanation = "no operator of this step was changed, but its collectives waited for a slowed rank: " +
                         st.explanation;
      }
    }
    gt.steps.push_back(std::move(st));
  }
  if (unlocatable > 0) {
    fx.notes.push_back(std::to_string(unlocatable) +
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
      r.fault_type = ctx.info.category;
      r.mechanism = ctx.info.name;
      r.fault = 0;
    }
    gt.requests.push_back(std::move(r));
  }
}

// Log lines carry no thread: a line of a process moves with the host thread that runs
// its steps (or its busiest one), by the delay that thread had accumulated when the line
// was printed. Lines of no known process move with the only process that has host
// events, if there is one.
uint64_t ShiftLogs(Trace& trace, const Replay& replay, const std::vector<StepRange>& steps) {
  LogTable& logs = trace.logs;
  if (logs.size() == 0) return 0;
  const EventTable& ev = trace.events;
  const size_t procs = trace.processes.size();
  std::vector<std::map<uint32_t, size_t>> host_count(procs), step_count(procs);
  for (uint32_t i = 0; i < ev.size(); ++i) {
    if (IsHostEvent(ev.type[i]) && ev.process[i] < procs) ++host_count[ev.process[i]][ev.thread[i]];
  }
  for (const StepRange& s : steps) ++step_count[s.process][s.thread];
  std::vector<int64_t> thread(procs, -1);
  uint32_t with_host = 0, only = 0;
  for (uint32_t p = 0; p < procs; ++p) {
    const auto& counts = !step_count[p].empty() ? step_count[p] : host_count[p];
    size_t best = 0;
    for (const auto& [t, n] : counts) {
      if (n > best) {
        best = n;
        thread[p] = t;
      }
    }
    if (!host_count[p].empty()) {
      ++with_host;
      only = p;
    }
  }
  // Per process: (time, delay) at every start and end on its reference thread, with the
  // running maximum of the delay (a thread's delay never shrinks).
  std::vector<std::vector<std::pair<int64_t, int64_t>>> timeline(procs);
  for (uint32_t i = 0; i < ev.size(); ++i) {
    const uint32_t p = ev.process[i];
    if (p >= procs || !IsHostEvent(ev.type[i]) || static_cast<int64_t>(ev.thread[i]) != thread[p]) continue;
    timeline[p].emplace_back(replay.s0()[i], replay.ns[i] - replay.s0()[i]);
    timeline[p].emplace_back(replay.e0()[i], replay.ne[i] - replay.e0()[i]);
  }
  for (auto& t : timeline) {
    std::sort(t.begin(), t.end());
    for (size_t k = 1; k < t.size(); ++k) t[k].second = std::max(t[k].second, t[k - 1].second);
  }
  uint64_t moved = 0;
  for (uint32_t r = 0; r < logs.size(); ++r) {
    if (logs.ts_ns[r] == LogTable::kNoTime) continue;
    uint32_t p = logs.process[r];
    if (p == LogTable::kNoProcess || p >= procs || timeline[p].empty()) {
      if (with_host != 1) continue;
      p = only;
    }
    const auto& t = timeline[p];
    const auto it = std::upper_bound(t.begin(), t.end(), std::make_pair(logs.ts_ns[r], std::numeric_limits<int64_t>::max()));
    if (it == t.begin()) continue;
    const int64_t d = std::prev(it)->second;
    if (d > 0) {
      logs.ts_ns[r] += d;
      ++moved;
    }
  }
  return moved;
}

Status CheckMagnitude(const MechanismInfo& info, double magnitude) {
  if (!(magnitude > 0) || !std::isfinite(magnitude)) {
    return Status::Error("--magnitude must be a positive number");
  }
  switch (info.mechanism) {
    case Mechanism::kKernelThrottle:
    case Mechanism::kKernelSlowOneGpu:
    case Mechanism::kGpuThrottle:
    case Mechanism::kLaunchLatency:
    case Mechanism::kSlowLink:
      if (magnitude < 1.0) {
        return Status::Error(std::string(info.name) + ": --magnitude is a slowdown factor and must be at least 1 (got " +
                             std::to_string(magnitude) + ")");
      }
      break;
    default:
      break;
  }
  return Status::Ok();
}

std::string SupportedList() {
  std::string s;
  for (const std::string& name : InjectableMechanisms()) s += (s.empty() ? "" : ", ") + name;
  return s;
}

}  // namespace

std::vector<std::string> InjectableMechanisms() {
  std::vector<std::string> out;
  for (const MechanismInfo& info : Mechanisms()) {
    if (info.injectable) out.emplace_back(info.name);
  }
  return out;
}

Result<int64_t> ParseDurationNs(std::string_view text) {
  const std::string s(text);
  if (s.empty()) return Status::Error("empty duration");
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || !std::isfinite(v)) {
    return Status::Error("bad duration '" + s + "' (expected e.g. 1.5s, 200ms, 30us)");
  }
  if (v < 0) return Status::Error("negative duration '" + s + "'");
  const std::string unit(end);
  double scale = 0;
  if (unit.empty() || unit == "s") {
    scale = 1e9;
  } else if (unit == "ms") {
    scale = 1e6;
  } else if (unit == "us" || unit == "\xC2\xB5s") {
    scale = 1e3;
  } else if (unit == "ns") {
    scale = 1;
  } else if (unit == "m" || unit == "min") {
    scale = 60e9;
  } else if (unit == "h") {
    scale = 3600e9;
  } else {
    return Status::Error("bad duration unit in '" + s + "' (use s, ms, us, ns, m or h)");
  }
  const double ns = v * scale;
  if (ns > 9.2e18) return Status::Error("duration '" + s + "' is too long");
  return static_cast<int64_t>(std::llround(ns));
}

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
    return SplitMix((static_cast<uint64_t>(k.process) << 32 | k.thread) ^ (static_cast<uint64_t>(k.name) << 17));
  }
  size_t operator()(const CorrKey& k) const {
    return SplitMix(k.correlation ^ (static_cast<uint64_t>(k.process) << 48));
  }
};

std::vector<int64_t> ResolveAll(const Trace& trace, const std::vector<const NodeLocator*>& locators) {
  std::vector<int64_t> out(locators.size(), -1);
  std::map<std::pair<std::string, int64_t>, uint32_t> process_of;
  for (uint32_t p = 0; p < trace.processes.size(); ++p) {
    process_of.emplace(std::make_pair(std::string(trace.strings.Get(trace.processes[p].host)),
                                      trace.processes[p].pid), p);
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
      case NodeLocator::Kind::kCall: calls[CorrKey{p, l.correlation}].locators.push_back(k); break;
      case NodeLocator::Kind::kGpu: gpus[CorrKey{p, l.correlation}].locators.push_back(k); break;
    }
  }
  auto by_occurrence = [&](Want& w) {
    std::sort(w.locators.begin(), w.locators.end(),
              [&](size_t a, size_t b) { return locators[a]->occurrence < locators[b]->occurrence; });
  };
  for (auto& [key, w] : ranges) by_occurrence(w);
  for (auto& [key, w] : gpus) by_occurrence(w);
  // The row that is the `seen`-th of its key answers the locators asking for that one.
  auto take = [&](Want& w, uint32_t row) {
    const uint32_t seen = w.seen++;
    while (w.cursor < w.locators.size() && locators[w.locators[w.cursor]]->occurrence < seen) ++w.cursor;
    for (size_t c = w.cursor; c < w.locators.size() && locators[w.locators[c]]->occurrence == seen; ++c) {
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
        if (out[k] < 0 || ((ev.flags[out[k]] & kEventNestedCall) && !(ev.flags[i] & kEventNestedCall))) out[k] = i;
      }
    } else if (ev.correlation[i] != 0 && IsGpuWork(t)) {
      const auto it = gpus.find(CorrKey{ev.process[i], ev.correlation[i]});
      if (it != gpus.end()) take(it->second, i);
    }
  }
  return out;
}

}  // namespace

int64_t ResolveLocator(const Trace& trace, const NodeLocator& loc) {
  return ResolveAll(trace, {&loc}).front();
}

Result<InjectResult> InjectFault(Trace& trace, const InjectOptions& options) {
  const MechanismInfo* info = FindMechanism(options.mechanism);
  if (info == nullptr) {
    return Status::Error("unknown fault mechanism '" + options.mechanism + "'; teller inject supports: " +
                         SupportedList());
  }
  if (!info->injectable) {
    return Status::Error("'" + options.mechanism + "' cannot be injected into a recorded trace (it changes what " +
                         "the engine schedules, which only the simulator can replay: teller simulate --faults " +
                         options.mechanism + "); teller inject supports: " + SupportedList());
  }
  Context ctx(trace, options, *info);
  TELLER_RETURN_IF_ERROR(CheckMagnitude(*info, ctx.magnitude));
  EventTable& ev = trace.events;
  if (ev.size() == 0) return Status::Error("the trace has no events");
  ctx.t0 = std::numeric_limits<int64_t>::max();
  ctx.t_end = kNever;
  for (size_t i = 0; i < ev.size(); ++i) {
    ctx.t0 = std::min(ctx.t0, ev.start_ns[i]);
    ctx.t_end = std::max(ctx.t_end, std::max(ev.end_ns[i], ev.start_ns[i]));
  }
  if (options.onset_ns < 0 || options.duration_ns < 0) return Status::Error("--onset and --duration must not be negative");
  ctx.w0 = ctx.t0 + options.onset_ns;
  ctx.w1 = options.duration_ns > 0 ? ctx.w0 + options.duration_ns : std::numeric_limits<int64_t>::max();
  if (ctx.w0 >= ctx.t_end) {
    return Status::Error("--onset " + FormatNs(static_cast<double>(options.onset_ns)) +
                         " is after the end of the trace (it spans " +
                         FormatNs(static_cast<double>(ctx.t_end - ctx.t0)) + ")");
  }
  ctx.classifier = reconstruct::Classifier::BuiltIn();
  {
    // The ranks: processes with GPU work, or, in a trace without any (NVTX only), every
    // process with events.
    std::vector<uint8_t> gpu(trace.processes.size(), 0), any(trace.processes.size(), 0);
    for (size_t i = 0; i < ev.size(); ++i) {
      if (ev.process[i] >= gpu.size()) continue;
      any[ev.process[i]] = 1;
      if (IsGpuWork(ev.type[i])) gpu[ev.process[i]] = 1;
    }
    const bool none = std::find(gpu.begin(), gpu.end(), 1) == gpu.end();
    for (uint32_t p = 0; p < gpu.size(); ++p) {
      if (none ? any[p] : gpu[p]) ctx.gpu_processes.push_back(p);
    }
  }
  ctx.range_end = RangeEnds(trace, ev.start_ns, ev.end_ns);
  ctx.steps = OuterSteps(trace, *ctx.classifier, ctx.range_end);

  if (info->mechanism == Mechanism::kAllocatorStall) TELLER_RETURN_IF_ERROR(PrepareAllocatorStall(ctx));

  ctx.coll = FindCollectives(trace, *ctx.classifier);
  Replay replay(trace, ctx.coll.proc_offset);
  replay.groups = ctx.coll.groups;
  replay.group_of = ctx.coll.group_of;
  replay.group_transfer_factor.assign(ctx.coll.groups.size(), 1.0);

  switch (info->mechanism) {
    case Mechanism::kKernelThrottle: TELLER_RETURN_IF_ERROR(ApplyKernelFactor(ctx, replay, false)); break;
    case Mechanism::kKernelSlowOneGpu: TELLER_RETURN_IF_ERROR(ApplyKernelFactor(ctx, replay, true)); break;
    case Mechanism::kGpuThrottle: TELLER_RETURN_IF_ERROR(ApplyGpuThrottle(ctx, replay)); break;
    case Mechanism::kLaunchLatency: TELLER_RETURN_IF_ERROR(ApplyLaunchLatency(ctx, replay)); break;
    case Mechanism::kSyncStall: TELLER_RETURN_IF_ERROR(ApplySyncStall(ctx, replay)); break;
    case Mechanism::kAllocatorStall: ApplyAllocatorStall(ctx, replay); break;
    case Mechanism::kStragglerRank: TELLER_RETURN_IF_ERROR(ApplyStraggler(ctx, replay)); break;
    case Mechanism::kSlowLink: TELLER_RETURN_IF_ERROR(ApplySlowLink(ctx, replay)); break;
    default:
      return Status::Error("'" + options.mechanism + "' is marked injectable but teller inject has no "
                           "implementation of it; supported: kernel_throttle, kernel_slow_one_gpu, "
                           "gpu_throttle, launch_latency, sync_stall, allocator_stall, straggler_rank, slow_link");
  }
  std::sort(ctx.modified.begin(), ctx.modified.end());
  replay.Run();

  InjectResult result;
  InjectEffect& fx = result.effect;
  fx.mechanism = info->name;
  fx.category = info->category;
  fx.magnitude = ctx.magnitude;
  fx.rank = ctx.rank_process >= 0 ? ctx.RankOf(static_cast<uint32_t>(ctx.rank_process)) : -1;
  fx.modified = ctx.modified.size();
  fx.inserted = ctx.inserted.size();
  fx.sweeps = replay.sweeps;
  fx.converged = replay.converged;
  if (!replay.converged) {
    fx.notes.push_back("the timing replay did not settle after " + std::to_string(kMaxSweeps) +
                       " sweeps (a dependency cycle, likely from clock skew); times are those of the last sweep");
  }
  fx.span_before_ns = ctx.t_end - ctx.t0;

  // Which communication kernels changed (the horizontal view's evidence).
  std::vector<uint8_t> affected(ev.size(), 0);
  for (uint32_t i = 0; i < ev.size(); ++i) {
    if (!ctx.coll.is_comm[i]) continue;
    const int64_t d0 = replay.e0()[i] - replay.s0()[i];
    const int64_t d1 = replay.ne[i] - replay.ns[i];
    const int64_t limit = std::max<int64_t>(kAffectedMinNs, static_cast<int64_t>(kAffectedShare * d0));
    if (std::llabs(d1 - d0) > limit) affected[i] = 1;
  }

  // New times into the trace; GPU annotations follow the work on their stream.
  int64_t first = std::numeric_limits<int64_t>::max(), last = kNever;
  for (uint32_t i = 0; i < ev.size(); ++i) {
    if (ev.type[i] == EventType::kGpuAnnotation) continue;
    if (replay.ns[i] != replay.s0()[i] || replay.ne[i] != replay.e0()[i]) {
      ev.start_ns[i] = replay.ns[i];
      ev.end_ns[i] = replay.ne[i];
      ++fx.shifted;
    }
    first = std::min(first, ev.start_ns[i]);
    last = std::max(last, ev.end_ns[i]);
  }
  {
    std::map<std::tuple<uint32_t, uint32_t, uint32_t>, size_t> slot;
    const auto& streams = replay.stream_events();
    for (size_t s = 0; s < streams.size(); ++s) {
      const uint32_t e = streams[s].front();
      slot[{ev.process[e], ev.device[e], ev.stream[e]}] = s;
    }
    for (uint32_t i = 0; i < ev.size(); ++i) {
      if (ev.type[i] != EventType::kGpuAnnotation) continue;
      const auto it = slot.find({ev.process[i], ev.device[i], ev.stream[i]});
      if (it == slot.end()) continue;
      const auto& list = streams[it->second];
      const int64_t a0 = ev.start_ns[i], a1 = ev.end_ns[i];
      int64_t ds = 0, de = 0;
      for (const uint32_t g : list) {
        if (replay.s0()[g] >= a0) {
          ds = replay.ns[g] - replay.s0()[g];
          break;
        }
      }
      for (auto r = list.rbegin(); r != list.rend(); ++r) {
        if (replay.e0()[*r] <= a1) {
          de = replay.ne[*r] - replay.e0()[*r];
          break;
        }
      }
      if (ds != 0 || de != 0) {
        ev.start_ns[i] = a0 + ds;
        ev.end_ns[i] = std::max(a0 + ds, a1 + de);
        ++fx.shifted;
      }
    }
  }
  fx.span_after_ns = last - first;
  fx.target = ctx.target;
  const uint64_t moved_logs = ShiftLogs(trace, replay, ctx.steps);
  if (moved_logs > 0) {
    fx.notes.push_back(std::to_string(moved_logs) + " log line(s) moved with their process's host timeline");
  }

  BuildTruth(ctx, replay, affected, result);
  return result;
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
    if (written.events.type[i] != EventType::kGpuAnnotation && written.events.process[i] < wa.size()) {
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
      note("process " + std::to_string(p) + ": " + std::to_string(wa[p].size()) + " events written, " +
           std::to_string(rb[p].size()) + " read");
    }
    const size_t n = std::min(wa[p].size(), rb[p].size());
    for (size_t k = 0; k < n; ++k) {
      const uint32_t i = wa[p][k], j = rb[p][k];
      const EventType t = x.type[i];
      bool same = t == y.type[j] && written.strings.Get(x.name[i]) == read.strings.Get(y.name[j]) &&
                  x.thread[i] == y.thread[j] && x.start_ns[i] == y.start_ns[j] && x.end_ns[i] == y.end_ns[j] &&
                  x.correlation[i] == y.correlation[j];
      if (t == EventType::kPush || t == EventType::kPop || t == EventType::kMark || t == EventType::kRange) {
        same = same && written.strings.Get(x.domain[i]) == read.strings.Get(y.domain[j]);
      }
      if (IsGpuWork(t) || t == EventType::kSync) {
        same = same && x.device[i] == y.device[j] && x.stream[i] == y.stream[j] &&
               (x.flags[i] & kEventInGraph) == (y.flags[j] & kEventInGraph);
      }
      if (t == EventType::kMemcpy || t == EventType::kMemset) same = same && x.bytes[i] == y.bytes[j];
      if (IsHostCall(t)) same = same && (x.flags[i] & kEventNestedCall) == (y.flags[j] & kEventNestedCall);
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
           std::to_string(static_cast<int>(l.level[r])) + '\x1f' + std::to_string(l.process[r]) + '\x1f' +
           std::string(t.strings.Get(l.message[r]));
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

Result<InjectRun> InjectIntoTrace(const std::string& input, const std::string& out_dir,
                                  const InjectOptions& options, const raw::ExportOptions& export_options) {
  // Cheap checks first: an unusable output should not cost an import.
  TELLER_RETURN_IF_ERROR(raw::CheckExportDir(out_dir));
  if (FindMechanism(options.mechanism) == nullptr || !FindMechanism(options.mechanism)->injectable) {
    Trace empty;
    auto r = InjectFault(empty, options);  // the same error text as the library's
    return r.status();
  }
  Trace trace;
  TELLER_RETURN_IF_ERROR(ingest::ImportPath(input, trace));
  auto injected = InjectFault(trace, options);
  if (!injected.ok()) return injected.status();
  InjectRun run;
  run.result = std::move(injected).value();
  const size_t slash = input.find_last_of('/', input.size() > 1 ? input.size() - 2 : 0);
  std::string base = slash == std::string::npos ? input : input.substr(slash + 1);
  while (!base.empty() && base.back() == '/') base.pop_back();
  run.result.truth.setting = "injected:" + base;

  raw::ExportOptions eo = export_options;
  if (eo.source.empty()) eo.source = input;
  eo.manifest_fields.emplace_back("injected_fault", options.mechanism);
  auto exported = raw::ExportTrace(trace, out_dir, eo);
  if (!exported.ok()) return exported.status();
  run.exported = exported.value();
  TELLER_RETURN_IF_ERROR(WriteGroundTruth(run.result.truth, out_dir + "/" + kGroundTruthFile));

  // Read the output back: it must hold what was written, and every locator must name an
  // event of it.
  Trace back;
  TELLER_RETURN_IF_ERROR(ingest::ImportPath(out_dir, back));
  std::string first;
  run.verify_mismatches = CountRoundTripDifferences(trace, back, &first);
  run.verified_events = back.events.size();
  if (run.verify_mismatches > 0) {
    run.result.effect.notes.push_back("the output does not read back exactly as written (" +
                                      std::to_string(run.verify_mismatches) + " difference(s); first: " + first + ")");
  }
  std::vector<const NodeLocator*> all;
  for (const StepTruth& st : run.result.truth.steps) {
    for (const ViewLabel* view : {&st.vertical, &st.horizontal}) {
      for (const NodeLocator& loc : view->nodes) all.push_back(&loc);
    }
  }
  const std::vector<int64_t> resolved = ResolveAll(back, all);
  run.locators = all.size();
  run.locators_unresolved = static_cast<uint64_t>(std::count(resolved.begin(), resolved.end(), -1));
  if (run.locators_unresolved > 0) {
    run.result.effect.notes.push_back(std::to_string(run.locators_unresolved) + " of " +
                                      std::to_string(run.locators) + " locators do not resolve in the output");
  }
  return run;
}

}  // namespace teller::sim
