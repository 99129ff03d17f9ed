// One simulated serving run. Its parts live in separate files: the scheduler
// (scheduler.cc), the executor that lays a scheduled step out on every rank's host thread
// and GPU streams (executor.cc), the service log (logs.cc) and the driver that writes the
// files and the ground truth (simulate.cc).
#ifndef TELLER_SRC_SIM_ENGINE_H_
#define TELLER_SRC_SIM_ENGINE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "src/sim/host_stack.h"
#include "src/sim/kernels.h"
#include "src/sim/sim_internal.h"
#include "src/sim/world.h"
#include "teller/core/regex.h"
#include "teller/format/ground_truth.h"
#include "teller/sim/faults.h"
#include "teller/sim/sim.h"

namespace teller::sim {

struct ActiveFault {
  int id = 0;
  FaultSpec spec;
  const MechanismInfo* info = nullptr;
  int64_t onset = 0, end = 0;          // true time
  int rank = -1;                       // rank-scoped mechanisms
  std::string target;                  // family name or regex source
  std::shared_ptr<const Regex> regex;  // compiled target when it is a regex
  bool used = false;                   // acted at least once
  bool Active(int64_t t) const { return t >= onset && t < end; }
};

// Whether a fault is labelled by the time it adds to a step (the materiality test in
// simulate.cc). KV-pressure preemption, misroute and starvation are request-scoped;
// operator reordering and the fallback sampler are structural (the step runs other
// operators, or the same ones in another order, whatever the time): they are labelled
// where they act, by their own rules.
inline bool ActsOnTime(const ActiveFault& f) {
  switch (f.info->mechanism) {
    case Mechanism::kKvPressure:
    case Mechanism::kMisroute:
    case Mechanism::kStarvation:
    case Mechanism::kOpReorder:
    case Mechanism::kFallbackKernel:
      return false;
    default:
      return true;
  }
}

// What one step's execution left for its labels, decided once the whole run is known
// (Run::LabelSteps): the step-wide fault the executor recorded with the time it added,
// and the request-scoped fault the scheduler saw.
struct PendingStep {
  int wide = -1;  // step-wide fault (first to act), -1 = none
  std::vector<NodeLocator> vertical, horizontal;
  int64_t extra_ns = 0, healthy_ns = 0;  // added time; the step without the faults' time
  bool measured = false;                 // healthy_ns comes from the counterfactual
  bool clean = true;                     // no fault was active at the step's start
  int scoped = -1;                       // request-scoped fault, -1 = none
  std::vector<int> scoped_requests;
  std::vector<NodeLocator> scoped_vertical;
  std::vector<int> requests;  // every request of the step
  int tokens = 0;             // tokens scheduled (with requests: the step's shape)
};

struct LogLine {
  int64_t t = 0;  // true time the line was printed
  int node = 0;   // host whose clock the header shows
  std::string text;
};

class Run {
 public:
  Run(const SimConfig& config, const EngineProfile& profile);
  Status Prepare();  // requests, ranks, clocks, faults
  void Simulate(const std::function<void(std::string_view)>& progress);
  Status WriteFiles(const std::string& out_dir, SimSummary* summary);

  // --- scheduler.cc
  // Builds the next step at time `now`; false when nothing is schedulable.
  bool Schedule(int64_t now, StepPlan* plan);
  void FinishStep(const StepPlan& plan, int64_t end);
  int FreeBlocks(int64_t now) const;

  // --- executor.cc: lays the step out; returns the time the engine is free again. With
  // `healthy_end`, a step during a fault that acts on time (ActsOnTime) is first laid out
  // without the faults' added time and rolled back: *healthy_end is when that step would
  // have ended (-1 when no such fault was active).
  int64_t Execute(const StepPlan& plan, int64_t start, StepLabels* labels,
                  int64_t* healthy_end = nullptr);
  // Dry runs (fault-window planning) skip the counterfactual steps.
  void set_measure_effects(bool on) { measure_effects_ = on; }

  // --- logs.cc
  void LogStartup(int64_t t);
  void LogArrival(const Request& r);
  void LogAdmitted(const Request& r, int64_t t);
  void LogFinished(const Request& r, int64_t t);
  void LogStep(const StepPlan& plan, int64_t start, int64_t end);
  void LogPreempted(const Request& r, int64_t t);
  void LogPeriodic(int64_t t);

  const SimConfig& config() const { return config_; }
  GroundTruth Truth() const;
  size_t unfinished() const { return unfinished_; }
  // Ids of the planted faults that labelled no step: acted on none (KV pressure that never
  // made the pool run out, a cross-node fault in a one-node deployment) or on none
  // materially (a slowdown below the step's noise; LabelSteps).
  std::vector<int> SilentFaults() const {
    std::vector<int> out;
    for (const ActiveFault& f : faults_) {
      if (!f.used) out.push_back(f.id);
    }
    return out;
  }
  // Steps that fault `id` slowed by less than the materiality threshold (LabelSteps).
  int ImmaterialSteps(int id) const {
    return static_cast<size_t>(id) < immaterial_.size() ? immaterial_[static_cast<size_t>(id)] : 0;
  }
  struct StepWindow {
    int64_t start = 0, end = 0;  // true time
    std::vector<int> requests;
  };
  const std::vector<StepWindow>& step_windows() const { return step_windows_; }
  int64_t serve_start() const { return serve_start_; }
  // True arrival time of each request, by index.
  std::vector<int64_t> arrivals() const {
    std::vector<int64_t> out;
    for (const Request& r : requests_) out.push_back(r.arrival);
    return out;
  }

 private:
  friend class Executor;
  // executor helpers
  double KernelFactor(const KernelSpec& k, int rank, int64_t t, int* fault) const;
  bool TargetMatches(const ActiveFault& f, const KernelSpec& k) const;
  const ActiveFault* Active(Mechanism m, int64_t t) const;
  std::string StepMessage(const StepPlan& plan, const std::vector<int>& reqs) const;
  // Labels every step from pending_ once the run is over: a fault that acts on time
  // labels a step only where the time it added is material.
  void LabelSteps();
  // The host stack of one operator (host_stack.h), built once per distinct operator.
  const HostOp& HostOpOf(const OpSpec& op);
  const std::vector<HostNode>& RunnerPrologueNodes();  // parsed RunnerPrologue, once

  SimConfig config_;
  const EngineProfile& profile_;
  Rng rng_;
  int layers_ = 0;
  Vendor vendor_ = Vendor::kHopper;
  bool shape_kernels_ = false;
  std::vector<double> drift_, own_drift_;  // per rank: speed drift factor, its own part
  double common_drift_ = 0;
  int kv_blocks_ = 0;
  std::vector<Request> requests_;
  std::vector<HostClock> clocks_;
  std::vector<RankOut> ranks_;
  std::vector<ActiveFault> faults_;
  std::vector<LogLine> logs_;
  std::vector<StepTruth> steps_;
  std::vector<PendingStep> pending_;  // by step, until LabelSteps
  bool measure_effects_ = true;
  std::vector<int> immaterial_;           // per fault: steps it slowed immaterially
  std::map<std::string, double> spread_;  // healthy step-to-step spread by kind (LabelSteps)
  bool neutral_ = false;                  // laying out the counterfactual step: faults add no time
  uint64_t next_seq_ = 1;
  int64_t engine_free_ = 0;
  int64_t end_time_ = 0;
  int64_t api_pid_ = 0;
  uint64_t cumulative_preemptions_ = 0;
  int64_t next_stats_ = 0;
  uint64_t tokens_prompt_since_stats_ = 0, tokens_gen_since_stats_ = 0;
  uint64_t decode_steps_ = 0;
  int64_t serve_start_ = 0;
  int64_t next_kv_spike_ = 0;
  size_t unfinished_ = 0;
  std::vector<StepWindow> step_windows_;
  std::unordered_map<std::string, HostOp> host_ops_;  // HostOpOf's cache
  std::vector<HostNode> prologue_;
  bool prologue_parsed_ = false;
  std::unordered_map<int, int> preempted_by_;  // request -> kv fault that preempted it
  // Healthy confounders (SimConfig::confounders), in the order they happened. A record
  // with `first_steps` takes the first step of each of its requests when the truth is
  // written (a long prompt's or a cache hit's prefill, a burst's admissions).
  struct Confounder {
    ConfounderRecord record;
    std::vector<int> reqs;
    int64_t t = 0;  // true time
    bool first_steps = false;
  };
  std::vector<Confounder> confounders_;
  Rng confounder_rng_{0};
  std::unordered_map<int, size_t> burst_preempted_;  // request -> its preemption burst
  bool squeeze_pending_ = false;  // the next Schedule preempts a burst (a KV shortage)
  uint64_t prefix_queried_ = 0, prefix_hit_ = 0;  // prompt tokens looked up, found cached
  int gc_rank_ = -1;  // this step: the worker that pauses for GC, -1 = none
  int64_t gc_pause_ns_ = 0;
  std::vector<int> running_;  // request indices, in admission order
  std::vector<int> waiting_;  // FCFS queue (front = first)
  size_t next_arrival_ = 0;
};

}  // namespace teller::sim

#endif  // TELLER_SRC_SIM_ENGINE_H_
