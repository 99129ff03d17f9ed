// The simulator's driver: builds the run (topology, clocks, requests, faults), steps the
// engine until every request is served, derives the ground truth from what the executor
// recorded, and writes what `teller run` writes plus ground_truth.json. Also the paper
// preset (five settings simulated in parallel).
#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "src/sim/engine.h"
#include "teller/core/file_util.h"
#include "teller/core/json_writer.h"
#include "teller/format/raw_writer.h"

namespace teller::sim {
namespace {

bool IsFamilyName(std::string_view s) {
  for (const char* f :
       {"norm", "rotary", "kv_write", "activation", "elementwise", "copy", "gemm", "attention",
        "attention_reduce", "allreduce", "allgather", "sendrecv", "sampling", "embedding"}) {
    if (s == f) return true;
  }
  return false;
}

std::string DefaultTarget(Mechanism m) {
  switch (m) {
    case Mechanism::kKernelThrottle:
      return "attention";
    case Mechanism::kKernelSlowOneGpu:
      return "gemm";
    default:
      return "";
  }
}

std::string Ms(int64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f ms", static_cast<double>(ns) / 1e6);
  return buf;
}

// Percent-encoding of the collector's step grammar (docs/python-hooks.md).
std::string EncodeId(const std::string& id) {
  std::string out;
  for (unsigned char c : id) {
    if (c > 0x20 && c < 0x7F && c != '%' && c != ',' && c != '=') {
      out += static_cast<char>(c);
    } else {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", c);
      out += buf;
    }
  }
  return out;
}

// Places fault `f` of `faults` (windows spread over the run, one per equal share of its
// steps) just long enough to touch its share of the requests, using the steps of a run
// that already has faults 0..f-1. Request-scoped mechanisms act on only some of the
// requests they touch, so they get longer windows. Window edges sit halfway between
// steps so that small timing differences do not move a step in or out.
void PlanFaultWindow(const std::vector<Run::StepWindow>& steps,
                     const std::vector<int64_t>& arrivals, int64_t serve_start, int requests,
                     double fraction, size_t f, std::vector<FaultSpec>* faults) {
  const size_t k = faults->size();
  if (steps.empty() || k == 0) return;
  const double per_fault = std::max(1.0, fraction * requests / static_cast<double>(k));
  FaultSpec& spec = (*faults)[f];
  const bool scoped =
      Info(spec.mechanism).request_scoped || spec.mechanism == Mechanism::kKvPressure;
  // Mechanisms that act on some steps of their window only (a stall now and then).
  const bool sporadic =
      spec.mechanism == Mechanism::kAllocatorStall || spec.mechanism == Mechanism::kWorkerStall ||
      spec.mechanism == Mechanism::kStragglerRank || spec.mechanism == Mechanism::kKvSwap;
  const size_t need = static_cast<size_t>(std::lround(per_fault * (scoped     ? 2.5
                                                                   : sporadic ? 1.5
                                                                              : 1.0)));
  const size_t n = steps.size();
  const size_t seg_begin = f * n / k, seg_end = std::max(seg_begin + 1, (f + 1) * n / k);
  const size_t first = std::min(seg_end - 1, seg_begin + (seg_end - seg_begin) / 8);
  std::vector<bool> seen(static_cast<size_t>(requests), false);
  size_t distinct = 0, last = first;
  for (size_t s = first; s < seg_end; ++s) {
    size_t add = 0;
    for (int r : steps[s].requests) add += !seen[static_cast<size_t>(r)];
    if (distinct > 0 && distinct + add > need + need / 2) break;  // would overshoot badly
    for (int r : steps[s].requests) seen[static_cast<size_t>(r)] = true;
    distinct += add;
    last = s;
    if (distinct >= need) break;
  }
  int64_t from =
      first > 0 ? (steps[first - 1].start + steps[first].start) / 2 : steps[first].start - kMs;
  int64_t to = last + 1 < n ? (steps[last].start + steps[last + 1].start) / 2 : steps[last].end;
  if (spec.mechanism == Mechanism::kStarvation) {
    // Starvation acts on requests as they arrive (the scheduler skips them), so its window
    // is the arrivals of the requests these steps serve, not the steps' own times: in an
    // offline batch every request arrives before the first step, and a window over later
    // steps would hold no arrival. (Grown until it does by the resampling, it would start
    // at the first arrival and starve the batch that the first faults' windows were
    // planned on.)
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (size_t r = 0; r < seen.size() && r < arrivals.size(); ++r) {
      if (!seen[r]) continue;
      lo = std::min(lo, arrivals[r]);
      hi = std::max(hi, arrivals[r]);
    }
    if (lo <= hi) from = lo, to = hi + kUs;
  }
  spec.onset_request = -1;
  spec.onset_ns = from - serve_start;
  spec.duration_ns = std::max<int64_t>(kUs, to - from);
}

// " decode 1.2%, prefill 3.4%": the healthy spread by step kind, for progress lines.
std::string SpreadText(const std::map<std::string, double>& spread) {
  std::string out;
  for (const auto& [kind, sigma] : spread) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%s %s %.1f%%", out.empty() ? "" : ",", kind.c_str(),
                  100.0 * sigma);
    out += buf;
  }
  return out.empty() ? " -" : out;
}

}  // namespace

Run::Run(const SimConfig& config, const EngineProfile& profile)
    : config_(config), profile_(profile), rng_(config.seed * 0x9E3779B97F4A7C15ull + 17) {}

Status Run::Prepare() {
  if (!ParseVendor(config_.gpu, &vendor_)) {
    return Status::Error("unknown GPU '" + config_.gpu + "' (h100, b200 or mi300)");
  }
  shape_kernels_ = config_.shape_kernels || vendor_ != Vendor::kHopper;
  const int world = config_.nodes * config_.gpus_per_node;
  if (config_.nodes < 1 || config_.gpus_per_node < 1 || world > 64) {
    return Status::Error("topology must have 1..64 GPUs (nodes x gpus-per-node)");
  }
  if (profile_.fsdp) {
    // FSDP shards parameters over every GPU and runs data parallel: no TP/PP split.
    config_.tp = world;
    config_.pp = 1;
  }
  if (config_.tp * config_.pp != world) {
    return Status::Error("tp x pp (" + std::to_string(config_.tp) + " x " +
                         std::to_string(config_.pp) + ") must equal nodes x gpus-per-node (" +
                         std::to_string(world) + ")");
  }
  if (config_.requests < 1) return Status::Error("--requests must be at least 1");
  layers_ = config_.layers > 0 ? config_.layers : profile_.layers;
  if (layers_ < config_.pp) return Status::Error("fewer layers than pipeline stages");

  // Clocks: every host has its own boot time, drift and NTP offset.
  for (int n = 0; n < config_.nodes; ++n) {
    HostClock c;
    c.name = "node-" + std::to_string(n);
    c.boot_ns = static_cast<int64_t>(rng_.Uniform(2.0, 40.0) * 86400.0 * 1e9);
    c.drift = rng_.Uniform(-1.0, 1.0) * config_.max_drift_ppm * 1e-6;
    c.offset_ns = static_cast<int64_t>(rng_.Uniform(-1.0, 1.0) * config_.max_clock_offset_ms * 1e6);
    clocks_.push_back(c);
  }
  ranks_.resize(static_cast<size_t>(world));
  std::vector<int64_t> pids;
  for (int r = 0; r < world; ++r) {
    RankOut& ro = ranks_[static_cast<size_t>(r)];
    ro.rank = r;
    ro.tp_rank = r % config_.tp;
    ro.pp_rank = r / config_.tp;
    ro.node = r / config_.gpus_per_node;
    ro.local = r % config_.gpus_per_node;
    ro.clock = &clocks_[static_cast<size_t>(ro.node)];
    int64_t pid;
    do {
      pid = 2000 + static_cast<int64_t>(rng_.Below(60000));
    } while (std::find(pids.begin(), pids.end(), pid) != pids.end());
    pids.push_back(pid);
    ro.pid = pid;
    ro.tid = static_cast<uint32_t>(pid);
    ro.speed = rng_.LogNormal(1.0, 0.015);
  }
  api_pid_ = 1000 + static_cast<int64_t>(rng_.Below(900));

  // Requests.
  serve_start_ = kEpochStart + 60 * kSec;
  std::vector<std::array<double, 3>> replay;
  if (config_.arrival == Arrival::kReplay) {
    std::ifstream in(config_.replay_file);
    if (!in) return Status::Error("cannot open replay file " + config_.replay_file);
    std::string line;
    int lineno = 0;
    while (std::getline(in, line)) {
      ++lineno;
      if (line.empty() || line[0] == '#') continue;
      std::istringstream fields(line);
      double a, p, o;
      if (!(fields >> a >> p >> o) || a < 0 || p < 1 || o < 1) {
        return Status::Error(config_.replay_file + ":" + std::to_string(lineno) +
                             ": expected '<arrival seconds> <prompt tokens> <output tokens>'");
      }
      replay.push_back({a, p, o});
    }
    if (replay.empty()) return Status::Error(config_.replay_file + ": no requests");
    std::sort(replay.begin(), replay.end());
    config_.requests = static_cast<int>(replay.size());
  }
  Rng req_rng = rng_.Fork(1);
  // Confounders draw from their own stream, so that turning them off gives the same run.
  confounder_rng_ = Rng(config_.seed * 0xC2B2AE3D27D4EB4Full + 23);
  Rng& conf = confounder_rng_;
  const bool confound = config_.confounders;
  int burst_left = 0;
  size_t burst = 0;  // confounders_ index of the burst under way
  double t = 0;
  for (int i = 0; i < config_.requests; ++i) {
    Request r;
    r.index = i;
    r.id = MakeRequestId(profile_.log_style, static_cast<uint64_t>(i), req_rng);
    r.external_id = r.id;
    if (profile_.log_style == LogStyle::kVllmV1Online)
      r.external_id = r.id.substr(0, r.id.rfind('-'));
    if (config_.arrival == Arrival::kReplay) {
      t = replay[static_cast<size_t>(i)][0];
      r.prompt = static_cast<int>(replay[static_cast<size_t>(i)][1]);
      r.output = static_cast<int>(replay[static_cast<size_t>(i)][2]);
    } else {
      if (profile_.log_style == LogStyle::kVllmV1Offline) {
        t = i * 0.0004;  // LLM.generate adds every prompt up front
      } else if (config_.arrival == Arrival::kBursty && req_rng.Chance(0.7) && i > 0) {
        t += req_rng.Exponential(0.02);  // inside a burst
      } else {
        t += req_rng.Exponential(config_.arrival == Arrival::kBursty ? 3.3 / config_.rate
                                                                     : 1.0 / config_.rate);
      }
      r.prompt = std::clamp(static_cast<int>(req_rng.LogNormal(config_.prompt_median, 0.6)), 8,
                            config_.prompt_max);
      r.output = std::clamp(static_cast<int>(req_rng.LogNormal(config_.output_median, 0.45)), 1,
                            config_.output_max);
      if (confound && profile_.log_style != LogStyle::kVllmV1Offline && i > 0) {
        // Arrival bursts: a client fans out a batch of calls, so the next 4-8 requests
        // arrive within a few ms and the batch grows at once (docs/simulator.md).
        if (burst_left > 0) {
          t = static_cast<double>(requests_.back().arrival - serve_start_) * 1e-9 +
              conf.Exponential(0.005);
          --burst_left;
          confounders_[burst].reqs.push_back(i);
        } else if (conf.Chance(kBurstShare)) {
          burst_left = 4 + static_cast<int>(conf.Below(5));
          burst = confounders_.size();
          Confounder c;
          c.record.kind = "arrival_burst";
          c.t = serve_start_ + static_cast<int64_t>(t * 1e9);
          c.reqs.push_back(i);
          c.first_steps = true;
          confounders_.push_back(std::move(c));
        }
      }
    }
    if (confound && config_.arrival != Arrival::kReplay) {  // a replayed file is kept as is
      // Long prompts (a pasted document, a long system prompt): 4-8x the usual tokens, so
      // that request's prefill step is several times longer. Prefix-cache hits (a shared
      // system prompt, a multi-turn conversation): whole 16-token blocks of the prompt,
      // 50-90% of it, found cached, so its prefill computes only the rest.
      const double u = conf.Uniform();
      const double scale = conf.Uniform(4.0, 8.0), share = conf.Uniform(0.5, 0.9);
      const int longer = std::min(config_.prompt_max, static_cast<int>(r.prompt * scale));
      if (u < kLongPromptShare && longer >= 3 * r.prompt) {
        Confounder c;
        c.record.kind = "long_prompt";
        c.record.detail = "prompt " + std::to_string(longer) + " tokens (usually " +
                          std::to_string(config_.prompt_median) + ")";
        r.prompt = longer;
        c.t = serve_start_ + static_cast<int64_t>(t * 1e9);
        c.reqs.push_back(i);
        c.first_steps = true;
        confounders_.push_back(std::move(c));
      } else if (u >= kLongPromptShare && u < kLongPromptShare + kPrefixHitShare) {
        const int cached = static_cast<int>(r.prompt * share) / kBlockTokens * kBlockTokens;
        if (cached >= kBlockTokens && cached <= r.prompt - kBlockTokens) {
          r.cached = cached;
          Confounder c;
          c.record.kind = "prefix_hit";
          c.record.detail =
              std::to_string(cached) + " of " + std::to_string(r.prompt) + " prompt tokens cached";
          c.t = serve_start_ + static_cast<int64_t>(t * 1e9);
          c.reqs.push_back(i);
          c.first_steps = true;
          confounders_.push_back(std::move(c));
        }
      }
    }
    r.arrival = serve_start_ + static_cast<int64_t>(t * 1e9);
    requests_.push_back(std::move(r));
  }
  // KV blocks: enough for the expected concurrency with headroom, as a server sized for
  // its load would have, so that only a fault pushes it into preemption.
  if (config_.kv_blocks > 0) {
    kv_blocks_ = config_.kv_blocks;
  } else {
    double mean_tokens = 0;
    for (const Request& r : requests_) mean_tokens += r.prompt + r.output;
    mean_tokens /= static_cast<double>(requests_.size());
    const double span = std::max(
        1e-3, static_cast<double>(requests_.back().arrival - requests_.front().arrival) / 1e9);
    const double rate = requests_.size() / span;
    const double concurrency =
        std::clamp(rate * (0.12 + 0.03 * config_.output_median), 2.0,
                   static_cast<double>(std::min<int>(config_.max_running, config_.requests)));
    int largest = 0;
    for (const Request& r : requests_) largest = std::max(largest, r.prompt + r.output);
    // Any one request fits twice over (a server sized for its max_model_len).
    kv_blocks_ = std::max({64, static_cast<int>(2.2 * concurrency * mean_tokens / kBlockTokens),
                           2 * (largest / kBlockTokens + 1)});
  }

  // Faults.
  for (size_t i = 0; i < config_.faults.size(); ++i) {
    const FaultSpec& spec = config_.faults[i];
    ActiveFault f;
    f.id = static_cast<int>(i);
    f.spec = spec;
    f.info = &Info(spec.mechanism);
    if (f.spec.magnitude <= 0) f.spec.magnitude = f.info->default_magnitude;
    if (spec.onset_request >= 0) {
      const size_t a = std::min(requests_.size() - 1, static_cast<size_t>(spec.onset_request));
      const size_t b =
          std::min(requests_.size() - 1, a + static_cast<size_t>(std::max(1, spec.span_requests)));
      f.onset = requests_[a].arrival;
      f.end = std::max(requests_[b].arrival, f.onset + 300 * kMs);
      if (config_.uniform_fault_windows && spec.mechanism != Mechanism::kStarvation) {
        // The same length, anywhere in the arrival period, whatever arrives then (one draw
        // per fault, so a resampled window keeps its place and grows around it).
        const int64_t length = f.end - f.onset;
        const int64_t lo = requests_.front().arrival;
        const int64_t hi = std::max(lo, requests_.back().arrival - length);
        Rng place(config_.seed * 0x9E3779B97F4A7C15ull + 0xA11 + i);
        f.onset = lo + static_cast<int64_t>(place.Uniform() * static_cast<double>(hi - lo));
        f.end = f.onset + length;
      }
    } else {
      f.onset = serve_start_ + spec.onset_ns;
      f.end = spec.duration_ns > 0 ? f.onset + spec.duration_ns : INT64_MAX;
    }
    f.rank = spec.rank;
    if (f.rank >= world) {
      return Status::Error(std::string("fault ") + f.info->name + ": rank " +
                           std::to_string(f.rank) + " does not exist (world size " +
                           std::to_string(world) + ")");
    }
    if (f.rank < 0) f.rank = static_cast<int>(rng_.Below(static_cast<uint64_t>(world)));
    f.target = spec.target.empty() ? DefaultTarget(spec.mechanism) : spec.target;
    if (!f.target.empty() && !IsFamilyName(f.target)) {
      Result<Regex> re = Regex::Compile(f.target);
      if (!re.ok()) {
        return Status::Error("fault target '" + f.target +
                             "' is neither an operator family nor a valid regex");
      }
      f.regex = std::make_shared<const Regex>(std::move(re).value());
    }
    faults_.push_back(std::move(f));
  }
  return Status::Ok();
}

const ActiveFault* Run::Active(Mechanism m, int64_t t) const {
  for (const ActiveFault& f : faults_) {
    if (f.info->mechanism == m && f.Active(t)) return &f;
  }
  return nullptr;
}

bool Run::TargetMatches(const ActiveFault& f, const KernelSpec& k) const {
  if (f.target.empty()) return true;
  if (!f.regex) return CostFamily(k.cost) == f.target;
  return f.regex->Matches(k.name);
}

double Run::KernelFactor(const KernelSpec& k, int rank, int64_t t, int* fault) const {
  double factor = 1.0;
  *fault = -1;
  for (const ActiveFault& f : faults_) {
    if (!f.Active(t)) continue;
    double x = 1.0;
    switch (f.info->mechanism) {
      case Mechanism::kKernelThrottle:
        if (TargetMatches(f, k)) x = f.spec.magnitude;
        break;
      case Mechanism::kKernelSlowOneGpu:
        if (rank == f.rank && TargetMatches(f, k)) x = f.spec.magnitude;
        break;
      case Mechanism::kGpuThrottle:
        if (rank == f.rank && IsComputeBound(k.cost)) {
          // Clocks come down over the first third of the episode.
          const int64_t ramp_ns =
              f.end == INT64_MAX ? kSec : std::min<int64_t>(30 * kSec, (f.end - f.onset) / 4);
          const double ramp =
              std::min(1.0, static_cast<double>(t - f.onset) /
                                std::max<double>(1.0, static_cast<double>(ramp_ns)));
          x = 1.0 + (f.spec.magnitude - 1.0) * std::max(0.15, ramp);
        }
        break;
      default:
        break;
    }
    if (x > 1.0 && *fault < 0) *fault = f.id;
    factor *= x;
  }
  return factor;
}

std::string Run::StepMessage(const StepPlan& plan, const std::vector<int>& subset) const {
  std::string m = "teller.step seq=" + std::to_string(plan.seq) + " kind=" + plan.kind +
                  " n=" + std::to_string(subset.size());
  int tokens = 0;
  std::string prefill, reqs;
  for (int i : subset) {
    const size_t k = static_cast<size_t>(i);
    tokens += plan.tokens[k];
    const std::string id = EncodeId(requests_[static_cast<size_t>(plan.reqs[k])].id);
    if (!reqs.empty()) reqs += ',';
    reqs += id;
    if (plan.prefill[k]) {
      if (!prefill.empty()) prefill += ',';
      prefill += id;
    }
  }
  m += " tokens=" + std::to_string(tokens);
  if (plan.kind == "mixed" && !prefill.empty() && prefill.size() < 1500) m += " prefill=" + prefill;
  m += " reqs=" + reqs;
  return m;
}

void Run::Simulate(const std::function<void(std::string_view)>& progress) {
  LogStartup(serve_start_);
  for (RankOut& r : ranks_) r.host = r.gpu = r.comm = serve_start_ - 5 * kSec;
  int64_t t = requests_.front().arrival;
  uint64_t executed = 0;
  const int64_t limit = requests_.back().arrival + 4 * 3600 * kSec;  // a runaway guard
  while (t < limit) {
    StepPlan plan;
    // Preemption bursts (a confounder): the KV pool runs short for a moment (a burst of
    // long contexts; healthy engines preempt and recompute, and log it as vLLM v0's
    // warning and SGLang's retraction lines do). Not while a KV-pressure fault acts, whose
    // preemptions are its own.
    squeeze_pending_ = config_.confounders && profile_.batch_policy != BatchPolicy::kStatic &&
                       running_.size() >= 4 && Active(Mechanism::kKvPressure, t) == nullptr &&
                       confounder_rng_.Chance(kPreemptBurstShare);
    if (!Schedule(t, &plan)) {
      if (next_arrival_ >= requests_.size() && running_.empty() && waiting_.empty()) break;
      // Idle until the next arrival or until a held request becomes schedulable.
      int64_t next = INT64_MAX;
      if (next_arrival_ < requests_.size()) next = requests_[next_arrival_].arrival;
      for (int w : waiting_)
        next = std::min(next, std::max(t + kMs, requests_[static_cast<size_t>(w)].hold_until));
      if (next == INT64_MAX) next = t + 10 * kMs;
      t = std::max(t + 200 * kUs, next);
      continue;
    }
    // Preemptions under KV pressure: remember which fault caused them.
    if (const ActiveFault* kv = Active(Mechanism::kKvPressure, t)) {
      for (int v : plan.preempted) preempted_by_[v] = kv->id;
    }
    if (config_.confounders) {
      for (int idx : plan.recompute) {
        // A request preempted in a burst recomputes its prompt and output: a long prefill.
        const auto it = burst_preempted_.find(idx);
        if (it == burst_preempted_.end()) continue;
        confounders_[it->second].record.steps.push_back(plan.seq);
        burst_preempted_.erase(it);
      }
      // Python GC on one worker: a full collection pauses its process for a few ms inside
      // the step; its peers wait for it in the next collective. Drawn here, so that the
      // step's healthy counterfactual (Execute) pauses alike.
      gc_rank_ = -1;
      gc_pause_ns_ = 0;
      if (confounder_rng_.Chance(kGcPauseShare)) {
        gc_rank_ = static_cast<int>(confounder_rng_.Below(ranks_.size()));
        gc_pause_ns_ = static_cast<int64_t>(confounder_rng_.Uniform(2.0, 8.0) * kMs);
        Confounder c;
        c.record.kind = "gc_pause";
        char detail[64];
        std::snprintf(detail, sizeof detail, "%.1f ms on rank %d", gc_pause_ns_ / 1e6, gc_rank_);
        c.record.detail = detail;
        c.record.steps.push_back(plan.seq);
        c.t = t;
        confounders_.push_back(std::move(c));
      }
    }
    StepLabels labels;
    int64_t healthy_end = -1;
    const int64_t end = Execute(plan, t, &labels, &healthy_end);
    StepTruth st;
    st.seq = plan.seq;
    st.kind = plan.kind;
    st.start_ns = clocks_[0].Real(t);
    st.end_ns = clocks_[0].Real(end);
    for (int idx : plan.reqs) st.requests.push_back(requests_[static_cast<size_t>(idx)].id);
    PendingStep p;
    p.requests = plan.reqs;
    p.tokens = plan.total_tokens;
    for (const ActiveFault& f : faults_) p.clean = p.clean && !f.Active(t);
    if (labels.fault >= 0) {
      p.wide = labels.fault;
      p.vertical = std::move(labels.vertical);
      p.horizontal = std::move(labels.horizontal);
    }
    if (healthy_end >= 0) {
      p.measured = true;
      p.healthy_ns = healthy_end - t;
      p.extra_ns = end - healthy_end;
    } else {
      p.healthy_ns = end - t;
    }
    // Request-scoped faults: they label the step where no step-wide fault does (LabelSteps).
    if (!plan.misrouted.empty()) {
      if (const ActiveFault* f = Active(Mechanism::kMisroute, t)) {
        p.scoped = f->id;
        p.scoped_requests = plan.misrouted;
        p.scoped_vertical = labels.attention;
      }
    }
    for (int idx : plan.recompute) {
      const auto it = preempted_by_.find(idx);
      if (it == preempted_by_.end() || (p.scoped >= 0 && p.scoped != it->second)) continue;
      p.scoped = it->second;
      p.scoped_requests.push_back(idx);
      p.scoped_vertical = labels.attention;
    }
    if (p.scoped < 0) {
      for (size_t i = 0; i < plan.reqs.size(); ++i) {
        const Request& r = requests_[static_cast<size_t>(plan.reqs[i])];
        if (r.hold_until > 0 && r.first_step < 0) {
          const ActiveFault* f = Active(Mechanism::kStarvation, r.arrival);
          if (f == nullptr) continue;
          p.scoped = f->id;
          p.scoped_requests.push_back(plan.reqs[i]);
        }
      }
    }
    pending_.push_back(std::move(p));
    steps_.push_back(std::move(st));
    step_windows_.push_back(StepWindow{t, end, plan.reqs});
    FinishStep(plan, end);
    LogStep(plan, t, end);
    LogPeriodic(end);
    t = end;
    if (progress && ++executed % 200 == 0) {
      progress("simulate " + config_.setting + ": " + std::to_string(executed) + " steps, " +
               std::to_string(next_arrival_) + "/" + std::to_string(requests_.size()) +
               " requests arrived");
    }
  }
  end_time_ = t;
  LabelSteps();
  unfinished_ = 0;
  for (const Request& r : requests_) unfinished_ += r.state != Request::State::kFinished;
}

void Run::LabelSteps() {
  // The healthy step-to-step spread of each step kind: adjacent steps that no fault was
  // active in, of one kind and shape (requests and tokens; steps of other shapes differ by
  // their work, not by noise), the robust sigma of ln(d_i / d_i-1) (for two independent
  // N(0, s^2) values the median absolute difference is 0.954 s). Fewer than kMinPairs
  // pairs of a kind: every kind's pairs together; fewer still: no spread test, the share
  // alone.
  constexpr size_t kMinPairs = 8;
  std::map<std::string, std::vector<double>> by_kind;
  std::vector<double> every;
  for (size_t i = 1; i < pending_.size() && i < steps_.size(); ++i) {
    const PendingStep& a = pending_[i - 1];
    const PendingStep& b = pending_[i];
    if (!a.clean || !b.clean || steps_[i].kind != steps_[i - 1].kind || a.tokens != b.tokens ||
        a.requests.size() != b.requests.size())
      continue;
    const double before = static_cast<double>(steps_[i - 1].end_ns - steps_[i - 1].start_ns);
    const double after = static_cast<double>(steps_[i].end_ns - steps_[i].start_ns);
    if (before <= 0 || after <= 0) continue;
    const double d = std::fabs(std::log(after / before));
    by_kind[steps_[i].kind].push_back(d);
    every.push_back(d);
  }
  auto sigma = [](std::vector<double> v) {
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
    return v[v.size() / 2] / 0.954;
  };
  const double pooled = every.size() >= kMinPairs ? sigma(every) : 0.0;
  immaterial_.assign(faults_.size(), 0);
  std::map<std::string, double>& spread = spread_;
  spread.clear();
  for (const StepTruth& st : steps_) spread[st.kind] = pooled;
  for (const auto& [kind, v] : by_kind) spread[kind] = v.size() >= kMinPairs ? sigma(v) : pooled;
  for (size_t i = 0; i < pending_.size() && i < steps_.size(); ++i) {
    PendingStep& p = pending_[i];
    StepTruth& st = steps_[i];
    int fault = -1;
    std::vector<int> affected;
    if (p.wide >= 0) {
      const ActiveFault& f = faults_[static_cast<size_t>(p.wide)];
      bool material = true;
      if (ActsOnTime(f) && p.measured) {
        const double kind_spread = spread[st.kind];
        const double healthy = static_cast<double>(std::max<int64_t>(1, p.healthy_ns));
        const double extra = static_cast<double>(p.extra_ns);
        material =
            extra >= kMaterialShare * healthy && extra >= kMaterialSpreadZ * kind_spread * healthy;
      }
      if (!material) ++immaterial_[static_cast<size_t>(p.wide)];
      if (material) {
        fault = p.wide;
        affected = p.requests;
        st.vertical.nodes = std::move(p.vertical);
        st.horizontal.nodes = std::move(p.horizontal);
      }
    }
    if (fault < 0 && p.scoped >= 0) {
      fault = p.scoped;
      affected = p.scoped_requests;
      st.vertical.nodes = std::move(p.scoped_vertical);
    }
    if (fault < 0) continue;
    ActiveFault& f = faults_[static_cast<size_t>(fault)];
    f.used = true;
    st.fault = f.id;
    for (int idx : affected) {
      Request& r = requests_[static_cast<size_t>(idx)];
      st.affected_requests.push_back(r.id);
      if (r.fault < 0) r.fault = f.id;
    }
    // Starvation shows in time and logs only: the step is anomalous with no operator.
    st.vertical.is_anomaly = !st.vertical.nodes.empty() ||
                             f.info->mechanism == Mechanism::kStarvation ||
                             f.info->mechanism == Mechanism::kMisroute;
    st.horizontal.is_anomaly = !st.horizontal.nodes.empty();
    st.explanation = "";  // filled in Truth(), where the whole run is known
  }
  pending_.clear();
}

GroundTruth Run::Truth() const {
  GroundTruth g;
  g.setting = config_.setting.empty() ? profile_.name : config_.setting;
  g.profile = profile_.name;
  g.seed = config_.seed;
  g.nodes = config_.nodes;
  g.gpus_per_node = config_.gpus_per_node;
  g.tp = config_.tp;
  g.pp = config_.pp;
  for (const RankOut& r : ranks_)
    g.processes.push_back({r.host_name(), r.pid, r.rank, r.tp_rank, r.pp_rank});
  for (const ActiveFault& f : faults_) {
    FaultRecord rec;
    rec.id = f.id;
    rec.mechanism = f.info->name;
    rec.category = FaultCategoryName(f.info->category);
    rec.onset_ns = clocks_[0].Real(f.onset);
    rec.duration_ns = (f.end == INT64_MAX ? end_time_ : std::min(f.end, end_time_)) - f.onset;
    rec.magnitude = f.spec.magnitude;
    const bool rank_scoped = f.info->mechanism == Mechanism::kKernelSlowOneGpu ||
                             f.info->mechanism == Mechanism::kGpuThrottle ||
                             f.info->mechanism == Mechanism::kLaunchLatency ||
                             f.info->mechanism == Mechanism::kSyncStall ||
                             f.info->mechanism == Mechanism::kStragglerRank ||
                             f.info->mechanism == Mechanism::kAllocatorStall ||
                             f.info->mechanism == Mechanism::kWorkerStall;
    rec.target = rank_scoped ? "rank " + std::to_string(f.rank) : "";
    if (rank_scoped && f.rank >= 0) rec.ranks.push_back(f.rank);
    if (!f.target.empty())
      rec.target += (rec.target.empty() ? "" : ", ") + std::string("kernels ~ ") + f.target;
    if (rec.target.empty()) rec.target = "all ranks";
    rec.description = f.info->summary;
    g.faults.push_back(rec);
  }
  for (const Request& r : requests_) {
    RequestTruth rt;
    rt.id = r.id;
    rt.steps = r.steps;
    if (r.fault >= 0) {
      const ActiveFault& f = faults_[static_cast<size_t>(r.fault)];
      rt.is_fault = true;
      rt.fault = f.id;
      rt.fault_type = FaultCategoryName(f.info->category);
      rt.mechanism = f.info->name;
    }
    g.requests.push_back(std::move(rt));
  }
  g.steps = steps_;
  // Reference explanations from the mechanism and what it did in this step.
  for (StepTruth& s : g.steps) {
    if (s.fault < 0) continue;
    const ActiveFault& f = faults_[static_cast<size_t>(s.fault)];
    std::ostringstream e;
    const size_t nv = s.vertical.nodes.size(), nh = s.horizontal.nodes.size();
    const std::string rank = "rank " + std::to_string(f.rank);
    const std::string step = "Step " + std::to_string(s.seq) + " (" + s.kind + ", " +
                             std::to_string(s.requests.size()) + " requests, " +
                             Ms(s.end_ns - s.start_ns) + ")";
    char mag[32];
    std::snprintf(mag, sizeof mag, "%.2gx", f.spec.magnitude);
    switch (f.info->mechanism) {
      case Mechanism::kKvPressure:
        e << step
          << " recomputes a request that was preempted when free KV-cache blocks ran out; its "
          << "attention kernels re-read the whole context. Fault: memory_resource (KV-cache "
             "pressure).";
        break;
      case Mechanism::kKvSwap:
        e << step
          << " starts with a large device-to-host copy that swaps KV blocks out; the forward pass "
             "waits "
          << "for it on every rank. Fault: memory_resource (KV swapping).";
        break;
      case Mechanism::kAllocatorStall:
        e << step << ": on " << rank << " cudaMalloc calls block the host inside operators (" << nv
          << " nodes), the GPU idles and the other ranks wait in the next collective. Fault: "
             "memory_resource "
          << "(allocator stall).";
        break;
      case Mechanism::kKernelThrottle:
        e << step << ": " << f.target << " kernels run " << mag
          << " slower than usual on every rank (" << nv
          << " kernels). Fault: cuda_kernel (kernel family throttled).";
        break;
      case Mechanism::kKernelSlowOneGpu:
        e << step << ": " << f.target << " kernels run " << mag << " slower on " << rank
          << " only; its peers wait "
          << "inside the following all-reduce. Fault: cuda_kernel (one GPU's kernel slowed).";
        break;
      case Mechanism::kFallbackKernel:
        e << step << ": sampling runs a generic sort/scan/gather path instead of the fused kernel ("
          << nv << " extra nodes). Fault: cuda_kernel (slow fallback kernel).";
        break;
      case Mechanism::kLaunchLatency:
        e << step << ": kernel launch calls on " << rank << " take about " << mag
          << " longer than usual, so its GPU starves and the other ranks wait in collectives. "
             "Fault: "
          << "runtime_driver (launch latency).";
        break;
      case Mechanism::kSyncStall:
        e << step << ": the stream synchronization at the end of the step on " << rank
          << " blocks for milliseconds after the GPU finished. Fault: runtime_driver "
             "(synchronization stall).";
        break;
      case Mechanism::kGpuThrottle:
        e << step << ": compute-bound kernels (GEMM, attention) on " << rank
          << " slow down by up to " << mag
          << " as the GPU throttles; the other ranks wait in all-reduces. Fault: runtime_driver "
             "(GPU throttling).";
        break;
      case Mechanism::kSlowLink:
        e << step << ": transfers that cross nodes take about " << mag << " longer (" << nh
          << " communication kernels widen on every rank). Fault: communication (slow inter-node "
             "link).";
        break;
      case Mechanism::kStragglerRank:
        e << step << ": " << rank
          << " reaches collectives late; the other ranks' all-reduce kernels stretch while "
          << "they wait, and the late rank's is the shortest. Fault: communication (straggler "
             "rank).";
        break;
      case Mechanism::kNcclFallback:
        e << step << ": all-reduces run NCCL ring kernels instead of the custom all-reduce, " << mag
          << " slower. Fault: communication (custom all-reduce disabled).";
        break;
      case Mechanism::kMisroute:
        e << step
          << ": a new request is scheduled with one token as a decode: it never got a prefill step "
             "and "
          << "ran the decode attention path over state it never filled. Fault: scheduling_software "
             "(prefill "
          << "routed as decode).";
        break;
      case Mechanism::kStarvation:
        e << step
          << " is the first step of a request that waited in the queue while later requests were "
             "served. "
          << "Fault: scheduling_software (request starvation).";
        break;
      case Mechanism::kOpReorder:
        e << step
          << ": in every decoder layer attention runs before the KV-cache write, so it reads slots "
             "the step "
          << "has not written. Fault: scheduling_software (operator reordering).";
        break;
      case Mechanism::kWorkerStall:
        e << step << ": the worker of " << rank
          << " picked the step up late; the other ranks waited inside their "
          << "first collective. Fault: scheduling_software (worker stall).";
        break;
      case Mechanism::kCount:
        break;
    }
    s.explanation = e.str();
  }
  // Healthy confounders: the steps they made unusual, the requests involved.
  for (const Confounder& c : confounders_) {
    ConfounderRecord rec = c.record;
    rec.time_ns = clocks_[0].Real(c.t);
    if (rec.kind == "arrival_burst")
      rec.detail = std::to_string(c.reqs.size()) + " requests within a few ms";
    for (int idx : c.reqs) {
      const Request& r = requests_[static_cast<size_t>(idx)];
      rec.requests.push_back(r.id);
      if (c.first_steps && r.first_step >= 0)
        rec.steps.push_back(static_cast<uint64_t>(r.first_step));
    }
    std::sort(rec.steps.begin(), rec.steps.end());
    rec.steps.erase(std::unique(rec.steps.begin(), rec.steps.end()), rec.steps.end());
    g.confounders.push_back(std::move(rec));
  }
  std::stable_sort(
      g.confounders.begin(), g.confounders.end(),
      [](const ConfounderRecord& a, const ConfounderRecord& b) { return a.time_ns < b.time_ns; });
  return g;
}

Status Run::WriteFiles(const std::string& out_dir, SimSummary* summary) {
  TELLER_RETURN_IF_ERROR(MakeDirs(out_dir + "/logs"));
  const int64_t first = serve_start_ - 60 * kSec;
  const int64_t last = std::max(end_time_, serve_start_) + kSec;
  std::string cmdline;
  switch (profile_.log_style) {
    case LogStyle::kSglang:
      cmdline = "python3 -m sglang.launch_server --model-path " + profile_.model;
      break;
    case LogStyle::kTorch:
      cmdline = "torchrun --nnodes 2 --nproc-per-node 3 serve.py --model " + profile_.model;
      break;
    case LogStyle::kVllmV1Offline:
      cmdline = "python3 offline_batch.py --model " + profile_.model;
      break;
    default:
      cmdline = "vllm serve " + profile_.model;
      break;
  }
  cmdline += " --tensor-parallel-size " + std::to_string(config_.tp) +
             " --pipeline-parallel-size " + std::to_string(config_.pp);
  std::string files_json;
  for (RankOut& r : ranks_) {
    const std::string name =
        r.host_name() + "." + std::to_string(r.pid) + ".0" + raw::kFileExtension;
    auto writer = raw::RawFileWriter::Create(out_dir + "/" + name);
    if (!writer.ok()) return writer.status();
    raw::RawFileWriter& w = *writer.value();
    raw::PayloadBuilder info;
    info.AddKeyValue("host", r.host_name());
    info.AddKeyValue("pid", std::to_string(r.pid));
    info.AddKeyValue("ppid", std::to_string(api_pid_));
    info.AddKeyValue("cmdline", cmdline);
    info.AddKeyValue("rank", std::to_string(r.rank));
    info.AddKeyValue("local_rank", std::to_string(r.local));
    info.AddKeyValue("world_size", std::to_string(ranks_.size()));
    info.AddKeyValue("simulated_by", "teller simulate --profile " + profile_.name + " --seed " +
                                         std::to_string(config_.seed));
    TELLER_RETURN_IF_ERROR(w.WritePayload(raw::ChunkType::kProcessInfo, info));
    const HostClock& c = *r.clock;
    for (int64_t at = first; at <= last + kSec; at += 2 * kSec) {
      TELLER_RETURN_IF_ERROR(w.WriteClockAnchor(ClockPair{c.Real(at), c.Mono(at), 900}));
    }
    raw::PayloadBuilder strings;
    for (size_t i = 1; i < r.strings.size(); ++i)
      strings.AddString(static_cast<uint32_t>(i), r.strings[i]);
    TELLER_RETURN_IF_ERROR(w.WritePayload(raw::ChunkType::kStrings, strings));
    TELLER_RETURN_IF_ERROR(w.WriteEvents(r.events.data(), r.events.size()));
    raw::PayloadBuilder end;
    end.AddKeyValue("events_dropped", "0");
    end.AddKeyValue("strings_dropped", "0");
    TELLER_RETURN_IF_ERROR(w.WritePayload(raw::ChunkType::kEnd, end));
    summary->events += r.events.size();
    summary->bytes += w.bytes_written();
    if (!files_json.empty()) files_json += ',';
    JsonObjectWriter(files_json)
        .Field("path", name)
        .Field("kind", "raw_trace")
        .Field("bytes", w.bytes_written())
        .Close();
  }
  // The service log as `teller run` captures it: each line prefixed with the monotonic
  // time (of the launcher's host, node 0) at which it was read.
  std::stable_sort(logs_.begin(), logs_.end(),
                   [](const LogLine& a, const LogLine& b) { return a.t < b.t; });
  std::string text;
  Rng lag = rng_.Fork(99);
  int64_t last_capture = 0;
  for (const LogLine& l : logs_) {
    const int64_t delay =
        static_cast<int64_t>(lag.LogNormal(l.node == 0 ? 80.0 : 1400.0, 0.4) * kUs);
    const int64_t capture = std::max(last_capture + 1, clocks_[0].Mono(l.t + delay));
    last_capture = capture;
    text += std::to_string(capture) + " " + l.text + "\n";
  }
  TELLER_RETURN_IF_ERROR(WriteFileAtomic(out_dir + "/logs/stdout.log", text));
  TELLER_RETURN_IF_ERROR(WriteFileAtomic(out_dir + "/logs/stderr.log", ""));
  summary->log_lines = logs_.size();
  // manifest.json: the same fields `teller run` writes, so the importer treats both alike.
  std::string m;
  {
    JsonObjectWriter w(m);
    w.Field("format", "teller-run-manifest")
        .Field("format_version", 1)
        .Field("teller_version", TELLER_VERSION_STRING);
    std::string command = "[";
    for (const std::string& arg : {std::string("teller"), std::string("simulate"),
                                   std::string("--profile"), profile_.name}) {
      if (command.size() > 1) command += ',';
      AppendJsonString(command, arg);
    }
    command += ']';
    w.FieldRaw("command", command);
    w.FieldBool("simulated", true);
    w.Field("host", clocks_[0].name).Field("clock", "CLOCK_MONOTONIC");
    w.Field("start_realtime_ns", clocks_[0].Real(first))
        .Field("start_monotonic_ns", clocks_[0].Mono(first));
    w.FieldBool("finished", true);
    w.Field("end_realtime_ns", clocks_[0].Real(last))
        .Field("end_monotonic_ns", clocks_[0].Mono(last));
    w.Field("exit_code", 0).Field("signal", 0);
    w.Field("stdout_lines", static_cast<uint64_t>(logs_.size()))
        .Field("stderr_lines", static_cast<uint64_t>(0));
    std::string files = "[" + files_json + ",";
    JsonObjectWriter(files)
        .Field("path", "logs/stdout.log")
        .Field("kind", "log")
        .Field("bytes", static_cast<uint64_t>(text.size()))
        .Close();
    files += ',';
    JsonObjectWriter(files)
        .Field("path", "logs/stderr.log")
        .Field("kind", "log")
        .Field("bytes", 0)
        .Close();
    files += ']';
    w.FieldRaw("files", files);
    w.Close();
  }
  m += '\n';
  TELLER_RETURN_IF_ERROR(WriteFileAtomic(out_dir + "/manifest.json", m));
  const GroundTruth truth = Truth();
  TELLER_RETURN_IF_ERROR(WriteGroundTruth(truth, out_dir + "/" + kGroundTruthFile));
  summary->requests = requests_.size();
  for (const RequestTruth& r : truth.requests) summary->faulty_requests += r.is_fault;
  summary->steps = steps_.size();
  summary->processes = ranks_.size();
  summary->healthy_spread = spread_;
  summary->simulated_ns = end_time_ - requests_.front().arrival;
  return Status::Ok();
}

Result<SimSummary> Simulate(const SimConfig& config, const std::string& out_dir,
                            const std::function<void(std::string_view)>& progress) {
  const EngineProfile* profile = FindProfile(config.profile);
  if (profile == nullptr) {
    std::string known;
    for (const char* p : kProfiles) known += std::string(" ") + p;
    return Status::Error("unknown engine profile '" + config.profile + "'; known:" + known);
  }
  if (IsRegularFile(out_dir + "/manifest.json") ||
      IsRegularFile(out_dir + "/" + kGroundTruthFile)) {
    return Status::Error(out_dir + " already holds a trace; choose a new --out directory");
  }
  SimConfig c = config;
  if (c.setting.empty()) c.setting = c.profile;
  if (c.plan_fault_windows && !c.faults.empty()) {
    // One dry run per fault, each with the faults placed so far, so that the delays and
    // scheduling changes of earlier faults are accounted for.
    for (size_t f = 0; f < c.faults.size(); ++f) {
      SimConfig dry = c;
      dry.faults.resize(f);
      Run d(dry, *profile);
      TELLER_RETURN_IF_ERROR(d.Prepare());
      d.set_measure_effects(false);  // only its steps' times and requests are used
      d.Simulate({});
      PlanFaultWindow(d.step_windows(), d.arrivals(), d.serve_start(), c.requests,
                      c.faulty_fraction, f, &c.faults);
      FaultSpec& spec = c.faults[f];
      if (c.uniform_fault_windows && spec.mechanism != Mechanism::kStarvation &&
          !d.step_windows().empty()) {
        // Independent of arrivals and of the other faults: the planned length, placed
        // uniformly over the serving period (first step to last) of the dry run. Windows
        // may overlap; a step is labelled for the first fault that acts on it. Starvation
        // acts on arrivals and keeps its planned window.
        const int64_t lo = d.step_windows().front().start;
        const int64_t hi = std::max(lo, d.step_windows().back().end - spec.duration_ns);
        Rng place(c.seed * 0x9E3779B97F4A7C15ull + 0xA11 + f);
        const int64_t onset =
            lo + static_cast<int64_t>(place.Uniform() * static_cast<double>(hi - lo));
        spec.onset_ns = onset - d.serve_start();
      }
    }
  }
  // Every planted fault must manifest: label at least one step. A fault the simulator
  // placed (preset, random) whose window left it nothing to act on (KV pressure while the
  // pool never ran out, starvation with no arrival), or nothing it slowed materially
  // (LabelSteps), is resampled: its window doubles around its centre, KV pressure takes a
  // fifth more of the pool; a fault that slowed steps, all immaterially, keeps its window
  // and gets half as much magnitude again. After kMaxResamples it is an error. A silent
  // fault the user placed (--fault with onset/duration) is reported in the summary.
  constexpr int kMaxResamples = 4;
  constexpr int kFewSteps = 3;
  std::unique_ptr<Run> run;
  std::string silent_note;
  for (int attempt = 0;; ++attempt) {
    run = std::make_unique<Run>(c, *profile);
    TELLER_RETURN_IF_ERROR(run->Prepare());
    run->Simulate(attempt == 0 ? progress : std::function<void(std::string_view)>{});
    if (run->unfinished() > 0) {
      return Status::Error("the simulated engine stopped making progress with " +
                           std::to_string(run->unfinished()) +
                           " requests unfinished (a configuration whose requests can never be "
                           "scheduled?)");
    }
    const std::vector<int> silent = run->SilentFaults();
    if (silent.empty()) break;
    // Faults the simulator placed (presets, --random-faults: anchored to request
    // arrivals) are resampled; a window the user gave is theirs.
    bool placed = c.plan_fault_windows;
    for (const int id : silent)
      placed = placed || c.faults[static_cast<size_t>(id)].onset_request >= 0;
    auto names = [&c, &silent, &run] {
      std::string list;
      for (const int id : silent) {
        list += (list.empty() ? "" : ", ") + std::to_string(id) + " " +
                std::string(Info(c.faults[static_cast<size_t>(id)].mechanism).name);
        if (const int n = run->ImmaterialSteps(id); n > 0) {
          list += " (slowed " + std::to_string(n) + " step" + (n == 1 ? "" : "s") +
                  " by less than the materiality threshold)";
        }
      }
      return list;
    };
    if (!placed) {
      // The user's window: the run is written, and the summary says loudly that its
      // ground truth lists a fault with no affected step.
      silent_note = "planted fault(s) " + names() +
                    " acted on no step materially (window, magnitude or topology leaves nothing "
                    "to act on, or too little time added); the ground truth lists them with no "
                    "affected step";
      break;
    }
    if (attempt == kMaxResamples) {
      return Status::Error("setting " + c.setting + ": planted fault(s) " + names() +
                           " acted on no step materially after " + std::to_string(kMaxResamples) +
                           " resamplings of their windows (a fault that acts on time must add at "
                           "least 5% of a step's healthy duration and twice the healthy "
                           "step-to-step spread of its kind; docs/simulator.md)");
    }
    for (const int id : silent) {
      FaultSpec& spec = c.faults[static_cast<size_t>(id)];
      const double m = spec.magnitude > 0 ? spec.magnitude : Info(spec.mechanism).default_magnitude;
      if (run->ImmaterialSteps(id) > 0 && spec.mechanism != Mechanism::kKvPressure) {
        // It acted, too weakly to matter anywhere: a longer window would find more of the
        // same steps (and more faulty requests), so only its magnitude grows, by half; a
        // subtle one (the preset's 1.2-1.5x) at least to the mechanism's default.
        spec.magnitude = std::max(1.5 * m, Info(spec.mechanism).default_magnitude);
        // A window of one or two steps may hold only steps the fault cannot matter in (a
        // stall hidden behind another pipeline stage, a family that is a sliver of the
        // step): it doubles as well (paper preset seed 4, vllm-v1-offline).
        if (run->ImmaterialSteps(id) >= kFewSteps) continue;
      }
      if (spec.onset_request >= 0) {
        const int span = std::max(1, spec.span_requests);
        spec.onset_request = std::max(0, spec.onset_request - span / 2);
        spec.span_requests = 2 * span;
      } else if (spec.duration_ns > 0) {
        spec.onset_ns = std::max<int64_t>(0, spec.onset_ns - spec.duration_ns / 2);
        spec.duration_ns *= 2;
      }
      if (spec.mechanism == Mechanism::kKvPressure) spec.magnitude = std::min(0.9, m + 0.2);
    }
    if (progress) {
      progress("simulate " + c.setting +
               ": a planted fault acted on no step materially; resampling its "
               "window or magnitude (attempt " +
               std::to_string(attempt + 2) + ")");
    }
  }
  SimSummary summary;
  TELLER_RETURN_IF_ERROR(run->WriteFiles(out_dir, &summary));
  summary.silent_faults = silent_note;
  return summary;
}

std::vector<SimConfig> PaperPreset(uint64_t seed) {
  // docs/method.md §7: SGLang 100, Torch FSDP 50, vLLM v0 50, vLLM v1 offline 50, vLLM v1
  // online 50 requests; about 42% faulty; the five categories about equally often. Every
  // setting gets one fault of each category, each over about a twelfth of its requests,
  // with mechanisms rotating across settings so that all of them appear.
  const char* profiles[5] = {"sglang", "torch-fsdp", "vllm-v0", "vllm-v1-offline",
                             "vllm-v1-online"};
  const int counts[5] = {100, 50, 50, 50, 50};
  const std::vector<std::vector<Mechanism>> by_category = {
      {Mechanism::kKvPressure, Mechanism::kKvSwap, Mechanism::kAllocatorStall},
      {Mechanism::kKernelThrottle, Mechanism::kKernelSlowOneGpu, Mechanism::kFallbackKernel},
      {Mechanism::kLaunchLatency, Mechanism::kSyncStall, Mechanism::kGpuThrottle},
      {Mechanism::kSlowLink, Mechanism::kStragglerRank, Mechanism::kNcclFallback},
      {Mechanism::kMisroute, Mechanism::kStarvation, Mechanism::kOpReorder,
       Mechanism::kWorkerStall}};
  const char* targets[] = {"attention", "gemm", "norm", "activation", "rotary"};
  std::vector<SimConfig> out;
  Rng rng(seed ^ 0x5EEDull);
  Rng subtle(seed * 0xBF58476D1CE4E5B9ull + 0x5B7);
  for (int s = 0; s < 5; ++s) {
    SimConfig c;
    c.profile = profiles[s];
    c.setting = profiles[s];
    c.seed = seed * 131 + static_cast<uint64_t>(s);
    c.requests = counts[s];
    c.rate = s == 1 ? 3.0 : 6.0;
    c.prompt_median = 320;
    c.prompt_max = 2048;
    c.output_median = 8;
    c.output_max = 18;
    c.max_running = s == 3 ? 4 : 32;  // offline: --max-num-seqs 4 keeps batches small
    // Shallower models keep a step's trees (every rank's) near the paper's ~2,270 nodes:
    // FSDP steps are eager on all six ranks, so it gets the fewest layers.
    c.layers = s == 1 ? 6 : 36;
    // One fault per category, in a shuffled order; mechanisms rotate across settings
    // (and seeds) so that every mechanism appears.
    std::vector<int> order = {0, 1, 2, 3, 4};
    for (int i = 4; i > 0; --i)
      std::swap(order[static_cast<size_t>(i)], order[rng.Below(static_cast<uint64_t>(i + 1))]);
    for (int k = 0; k < 5; ++k) {
      const int cat = order[static_cast<size_t>(k)];
      const auto& mechs = by_category[static_cast<size_t>(cat)];
      FaultSpec f;
      f.mechanism =
          mechs[static_cast<size_t>(s + static_cast<int>(seed % mechs.size())) % mechs.size()];
      if (c.profile == "torch-fsdp" && f.mechanism == Mechanism::kNcclFallback)
        f.mechanism = Mechanism::kSlowLink;
      if (f.mechanism == Mechanism::kKernelThrottle ||
          f.mechanism == Mechanism::kKernelSlowOneGpu) {
        f.target = targets[rng.Below(5)];
      }
      if (c.profile == "torch-fsdp") {
        // Every FSDP step waits for its layers' parameters, gathered across the two nodes
        // (~5.6 ms a layer against a few hundred us of compute): a fault on compute,
        // launches, the KV swap copy or one rank's lateness hides under the gathers and
        // adds under 1% to any step (seeds 1-3), so it could never label one. The preset
        // plants its category's mechanism that can matter there instead (after the draws
        // above, so the other settings are unchanged). docs/simulator.md, "The paper preset".
        const Mechanism planted = f.mechanism;
        switch (planted) {
          case Mechanism::kKernelThrottle:
          case Mechanism::kKernelSlowOneGpu:
            f.mechanism = Mechanism::kFallbackKernel;
            break;
          case Mechanism::kGpuThrottle:
          case Mechanism::kLaunchLatency:
            f.mechanism = Mechanism::kSyncStall;
            break;
          case Mechanism::kKvSwap:
            f.mechanism = Mechanism::kAllocatorStall;
            break;
          case Mechanism::kStragglerRank:
            f.mechanism = Mechanism::kSlowLink;
            break;
          default:
            break;
        }
        if (f.mechanism != planted) f.target.clear();
      }
      // Subtle faults: a share of the multiplicative slowdowns gets 1.2-1.5x (from their
      // own stream, so the draws above are unchanged). Materiality decides the labels; one
      // that never matters is resampled with a larger magnitude (Simulate), or fails.
      switch (f.mechanism) {
        case Mechanism::kKernelThrottle:
        case Mechanism::kKernelSlowOneGpu:
        case Mechanism::kGpuThrottle:
        case Mechanism::kLaunchLatency:
        case Mechanism::kSlowLink:
        case Mechanism::kNcclFallback:
          if (subtle.Chance(kSubtleShare)) f.magnitude = subtle.Uniform(1.2, 1.5);
          break;
        default:
          break;
      }
      c.faults.push_back(f);
    }
    c.confounders = true;
    c.plan_fault_windows = true;
    c.faulty_fraction = 0.44;
    out.push_back(c);
  }
  return out;
}

Result<std::vector<SimSummary>> SimulatePreset(
    const std::vector<SimConfig>& configs, const std::string& out_dir, int jobs,
    const std::function<void(std::string_view)>& progress) {
  if (IsRegularFile(out_dir + "/manifest.json")) {
    return Status::Error(out_dir + " already holds a trace; choose a new --out directory");
  }
  TELLER_RETURN_IF_ERROR(MakeDirs(out_dir));
  std::vector<Result<SimSummary>> results(configs.size(), Status::Error("not run"));
  std::atomic<size_t> next{0};
  std::mutex progress_mutex;
  auto report = [&](std::string_view line) {
    if (!progress) return;
    std::lock_guard<std::mutex> lock(progress_mutex);
    progress(line);
  };
  auto worker = [&] {
    for (size_t i = next++; i < configs.size(); i = next++) {
      results[i] = Simulate(configs[i], out_dir + "/" + configs[i].setting, report);
      if (results[i].ok()) {
        report("simulated " + configs[i].setting + ": " + std::to_string(results[i]->requests) +
               " requests (" + std::to_string(results[i]->faulty_requests) + " faulty), " +
               std::to_string(results[i]->steps) + " steps, " + std::to_string(results[i]->events) +
               " events; healthy step-to-step spread" + SpreadText(results[i]->healthy_spread));
      }
    }
  };
  std::vector<std::thread> threads;
  for (int j = 0; j < std::max(1, jobs); ++j) threads.emplace_back(worker);
  for (std::thread& t : threads) t.join();
  std::vector<SimSummary> out;
  for (size_t i = 0; i < results.size(); ++i) {
    if (!results[i].ok())
      return Status::Error(configs[i].setting + ": " + results[i].status().message());
    out.push_back(results[i].value());
  }
  return out;
}

}  // namespace teller::sim
