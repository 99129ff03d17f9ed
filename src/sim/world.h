// State of one simulated run shared by the scheduler (scheduler.cc), the executor that
// turns a scheduled step into per-rank timelines (executor.cc), the log writer (logs.cc)
// and the driver (simulate.cc).
#ifndef TELLER_SRC_SIM_WORLD_H_
#define TELLER_SRC_SIM_WORLD_H_

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "src/sim/sim_internal.h"
#include "teller/format/ground_truth.h"
#include "teller/format/raw_format.h"
#include "teller/sim/sim.h"

namespace teller::sim {

// The simulator writes the ground-truth format (format/ground_truth.h) throughout.
using format::ConfounderRecord;
using format::FaultRecord;
using format::GroundTruth;
using format::kGroundTruthFile;
using format::NodeLocator;
using format::ProcessTruth;
using format::RequestTruth;
using format::StepTruth;
using format::ViewLabel;

inline constexpr int64_t kUs = 1000;
inline constexpr int64_t kMs = 1000 * kUs;
inline constexpr int64_t kSec = 1000 * kMs;
// True time of the simulation's start: 2026-11-29T10:00:00Z.
inline constexpr int64_t kEpochStart = 1795946400LL * kSec;
inline constexpr int kBlockTokens = 16;  // vLLM's KV block size on CUDA

struct Request {
  int index = 0;
  std::string id;           // engine id (what the step ranges carry)
  std::string external_id;  // API id (what the request log prints), may equal id
  int64_t arrival = 0;
  int prompt = 0, output = 0;
  int computed = 0;   // tokens whose KV is computed
  int generated = 0;  // output tokens so far
  int blocks = 0;
  int cached = 0;  // prefix-cache hit: prompt tokens whose KV is found cached on arrival
  enum class State : uint8_t { kPending, kWaiting, kRunning, kFinished } state = State::kPending;
  int preemptions = 0;
  bool needs_recompute = false;  // preempted: the next prefill recomputes
  bool misrouted = false;
  int64_t hold_until = 0;  // starvation: not schedulable before this time
  int64_t first_step = -1, finished_at = -1;
  std::vector<uint64_t> steps;
  int fault = -1;  // first fault that made one of its steps anomalous
};

// One scheduler decision.
struct StepPlan {
  uint64_t seq = 0;
  std::vector<int> reqs;       // request indices
  std::vector<int> tokens;     // tokens scheduled per request
  std::vector<bool> prefill;   // request is (re)computing its prompt
  std::vector<int> preempted;  // preempted while scheduling this step
  std::vector<int> recompute;  // prefill that recomputes after a preemption
  std::vector<int> misrouted;  // new requests scheduled as decode
  int total_tokens = 0;
  bool any_prefill = false;
  std::string kind;  // prefill / decode / mixed
};

// A host clock: monotonic = (t - start) * (1 + drift) + boot, realtime = t + offset.
struct HostClock {
  std::string name;
  int64_t boot_ns = 0;
  double drift = 0;
  int64_t offset_ns = 0;
  int64_t Mono(int64_t t) const {
    return boot_ns + static_cast<int64_t>(static_cast<double>(t - kEpochStart) * (1.0 + drift));
  }
  int64_t Real(int64_t t) const { return t + offset_ns; }
};

// One simulated process (one GPU): its events, strings and locator bookkeeping.
struct RankOut {
  int rank = 0, tp_rank = 0, pp_rank = 0, node = 0, local = 0;
  int64_t pid = 0;
  uint32_t tid = 0;
  const HostClock* clock = nullptr;
  std::vector<raw::EventRecord> events;
  std::vector<std::string> strings{""};
  std::unordered_map<std::string, uint32_t> string_ids{{"", 0}};
  std::unordered_map<uint64_t, uint32_t> range_occurrence;  // (tid, name id) -> count
  // GPU records sharing a correlation (a graph's kernels) are emitted back to back.
  uint64_t last_gpu_correlation = 0;
  uint32_t last_gpu_count = 0;
  uint64_t next_correlation = 1;
  std::vector<int64_t> open_ranges;  // start times of open pushes (for sanity)
  // Cursors in true time.
  int64_t host = 0;    // host thread is busy until
  int64_t gpu = 0;     // compute stream is busy until
  int64_t comm = 0;    // side stream (FSDP all-gathers)
  double speed = 1.0;  // this GPU's static speed factor (silicon lottery)

  uint32_t Str(const std::string& s) {
    const auto it = string_ids.find(s);
    if (it != string_ids.end()) return it->second;
    const uint32_t id = static_cast<uint32_t>(strings.size());
    strings.push_back(s);
    string_ids.emplace(s, id);
    return id;
  }
  NodeLocator Push(const std::string& name, int64_t t);
  void Pop(int64_t t);
  void Mark(const std::string& name, int64_t t);
  // A runtime/driver call [start, end) with a fresh correlation id (returned).
  uint64_t Call(const std::string& name, int64_t start, int64_t end, bool driver = false);
  NodeLocator CallLocator(uint64_t correlation) const;
  // GPU work with the given correlation; returns its locator.
  NodeLocator Gpu(raw::EventKind kind, const std::string& name, int64_t start, int64_t end,
                  uint64_t correlation, uint32_t stream, bool in_graph, uint64_t bytes = 0);
  std::string host_name() const { return clock->name; }
};

// Ground-truth collection for the step being executed.
struct StepLabels {
  int fault = -1;
  std::vector<NodeLocator> vertical, horizontal;
  std::vector<int> affected_requests;  // empty + whole_step = every request of the step
  bool whole_step = false;
  std::vector<NodeLocator> attention;  // the step's attention kernels (request-scoped evidence)
};

}  // namespace teller::sim

#endif  // TELLER_SRC_SIM_WORLD_H_
