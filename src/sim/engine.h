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

  // --- executor.cc: lays the step out; returns the time the engine is free again.
  int64_t Execute(const StepPlan& plan, int64_t start, StepLabels* labels);

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
  // Ids of the planted faults that acted on no step, e.g. KV pressure that never made
  // the pool run out, or a cross-node fault in a one-node deployment.
  std::vector<int> SilentFaults() const {
    std::vector<int> out;
    for (const ActiveFault& f : faults_) {
      if (!f.used) out.push_back(f.id);
    }
    return out;
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
  std::vector<int> running_;                   // request indices, in admission order
  std::vector<int> waiting_;                   // FCFS queue (front = first)
  size_t next_arrival_ = 0;
};

}  // namespace teller::sim

#endif  // TELLER_SRC_SIM_ENGINE_H_
