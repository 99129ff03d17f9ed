// Lays one scheduled step out on every rank: the scheduling process's ranges, each
// rank's host thread (hook and operator ranges, launch calls with their latency) and GPU
// stream (kernels from size-dependent cost models with noise), collectives that start
// apart and end together across a tensor-parallel group, pipeline send/recv between
// stages, CUDA-graph decode (one launch, many kernels, one correlation id), and the
// effects of active faults, recording which nodes carry the evidence (ground truth).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>

#include "src/sim/engine.h"
#include "src/sim/host_stack.h"

namespace teller::sim {
namespace {

constexpr NodeLocator::Role kRoot = NodeLocator::Role::kRoot;
constexpr NodeLocator::Role kImpact = NodeLocator::Role::kImpact;
constexpr uint32_t kComputeStream = 7;
constexpr uint32_t kSideStream = 13;

// Per-rank shape of the batch a rank runs in this step.
struct Shape {
  double tokens = 1;  // T: tokens through the layers
  double seqs = 1;    // B: sequences (rows of lm_head / sampling)
  double ctx = 1;     // sum of context lengths (KV read by decode attention)
  double qk = 0;      // sum of q*k over prefill chunks (attention FLOPs)
  bool prefill = false;
};

double Micro(double us) { return us * 1000.0; }

// Inter-kernel gaps (bench/sim/fit_real_traces.py). Eager, NVIDIA: tracelens
// h100__Qwen_Qwen1.5-0.5B-Chat, per-stream gaps p50 1.38 us and p90 2.05 us (the lognormal
// through both: sigma 0.31); 1.8% of the gaps are over 5 us, those with median 21.3 us and
// log-sd 1.19 (host stalls). HIP: the MI300 traces (sglang Qwen3-8B decode, vLLM
// gpt-oss-20b graph, mi300 Qwen1.5-0.5B) show gaps under 0.01 us at p50 and p90 in
// eager and graph mode alike; graph tail: 1.4% over 5 us, median 35.8 us, log-sd 1.22
// (SGLang decode). CUDA graphs on NVIDIA: no real trace in the set; about 1 us between
// graph kernels (the model's earlier assumption), with the graph tail.
constexpr double kEagerGapUs = 1.38, kEagerGapSigma = 0.31;
constexpr double kEagerTailShare = 0.018, kEagerTailUs = 21.3, kEagerTailSigma = 1.19;
constexpr double kHipGapUs = 0.005;
constexpr double kGraphGapUs = 1.0, kGraphGapSigma = 0.3;
constexpr double kGraphTailShare = 0.014, kGraphTailUs = 35.8, kGraphTailSigma = 1.22;

// Duration CV by kernel class, across the repeated layers of one step, measured on the
// real traces (bench/sim/fit_real_traces.py; `teller simulate --compare` prints them):
// decode from the SGLang Qwen3-8B decode and vLLM gpt-oss-20b FULL-graph decode traces
// (MI300), prefill from the SGLang Qwen3-8B extend and vLLM piecewise mixed traces.
double ClassCv(Cost c, bool prefill) {
  if (IsGemm(c)) return prefill ? 0.014 : 0.060;  // decode 0.069 / 0.052; prefill 0.015 / 0.013
  switch (c) {
    case Cost::kNorm:
      return prefill ? 0.035 : 0.070;  // 0.063 / 0.079; 0.046 / 0.024
    case Cost::kRotary:
      return prefill ? 0.018 : 0.060;  // 0.091 / 0.032; 0.017 / 0.019
    case Cost::kKvWrite:
      return prefill ? 0.034 : 0.055;  // 0.066 / 0.045; 0.044 / 0.024
    case Cost::kAttention:
      return prefill ? 0.028 : 0.025;  // 0.031 / 0.020; 0.028
    case Cost::kAttentionReduce:
      return 0.068;  // 0.055 / 0.081
    case Cost::kActivation:
      return prefill ? 0.013 : 0.10;  // 0.102; 0.013
    case Cost::kElementwise:
      return 0.14;  // vLLM decode elementwise 0.139
    case Cost::kCopy:
    case Cost::kEmbedding:
      return 0.068;  // 0.068 / 0.067
    case Cost::kSample:
      return 0.05;
    case Cost::kAllReduce:
    case Cost::kAllGather:
    case Cost::kSendRecv:
    case Cost::kAllToAll:
      return 0.03;
    case Cost::kMoeGemmUp:
    case Cost::kMoeGemmDown:
      return prefill ? 0.014 : 0.060;  // as the dense GEMMs
    case Cost::kMoeRoute:
    case Cost::kMoePermute:
    case Cost::kQuant:
      return 0.05;  // b200 MoE routing 0.032, elementwise 0.019 (prefill); decode as norm
    default:
      break;
  }
  return 0.045;
}
// The share of a kernel's noise (in log-sigma) that differs between tensor-parallel ranks
// running it: same shapes and data make most of the variation common, which keeps the
// healthy arrival skew at collectives small (real B200 TP8: all-reduce duration CV
// 0.006 across the layers of rank 0).
constexpr double kIdioShare = 0.15;
// The same for host ranges and launch calls under the host stack: in a CPU-bound step the
// GPUs follow their hosts, so rank-own host noise adds up over the step into arrival skew
// at every all-reduce (a random walk over ~7,000 ranges per step). The real B200 TP8 trace
// is CPU-bound and rank 0's all-reduce lasts 27 us with CV 0.006 across the layers: its
// wait is the same at every layer, the skew does not grow. 2% keeps the walk under ~2 us.
constexpr double kHostIdioShare = 0.02;

}  // namespace

// Duration of one kernel in ns before noise and faults (H100-class numbers; see
// docs/serving-notes.md §2.3 for the measurements these are fitted to).
static double KernelCostNs(const EngineProfile& p, const DeviceModel& dev, const KernelSpec& k,
                           const Shape& s, int tp, bool cross_node, bool ep_ = false) {
  const double kBw = dev.hbm_bytes_per_us;  // HBM bytes per us
  const double kFlops = dev.flops_per_us;   // dense bf16 flop per us at full efficiency
  const double T = std::max(1.0, s.tokens);
  const double h = p.hidden, d = p.head_dim;
  const double q_heads = p.heads / static_cast<double>(tp);
  const double kv_heads = std::max(1.0, p.kv_heads / static_cast<double>(tp));
  auto gemm = [&](double rows, double in, double out) {
    const double eff = 0.35 + 0.45 * rows / (rows + 384.0);
    const double compute = 2.0 * rows * in * out / (kFlops * eff);
    const double memory = (in * out * 2.0 + rows * (in + out) * 2.0) / kBw;
    return 3.0 + std::max(compute, memory);
  };
  auto bandwidth_us = [&](double bytes) {
    // Across nodes: 4 x 100 Gb/s NICs per node shared by its GPUs, plus fabric latency.
    if (cross_node) return 22.0 + bytes / 3.0e4;
    return 5.5 + bytes / 9.0e4;  // NVLink custom all-reduce
  };
  double us = 0;
  switch (k.cost) {
    case Cost::kNorm:
      us = 2.4 + T * h * 4.0 / kBw;
      break;
    case Cost::kRotary:
      us = 2.2 + T * (q_heads + kv_heads) * d * 4.0 / kBw;
      break;
    case Cost::kKvWrite:
      us = 2.0 + T * 2.0 * kv_heads * d * 4.0 / kBw;
      break;
    case Cost::kActivation:
      us = 2.5 + T * p.intermediate / tp * 6.0 / kBw;
      break;
    case Cost::kElementwise:
      us = 2.0 + T * h * 6.0 / kBw;
      break;
    case Cost::kCopy:
      us = 4.0 + T * h * 4.0 / kBw;
      break;
    case Cost::kEmbedding:
      us = 3.0 + T * h * 2.0 / kBw;
      break;
    case Cost::kGemmQkv:
      us = gemm(T, h, (q_heads + 2 * kv_heads) * d);
      break;
    case Cost::kGemmO:
      us = gemm(T, q_heads * d, h);
      break;
    case Cost::kGemmUp:
      us = gemm(T, h, 2.0 * p.intermediate / tp);
      break;
    case Cost::kGemmDown:
      us = gemm(T, p.intermediate / static_cast<double>(tp), h);
      break;
    case Cost::kLmHead:
      us = gemm(s.seqs, h, p.vocab / static_cast<double>(tp));
      break;
    case Cost::kAttention: {
      const double prefill = 4.0 * s.qk * q_heads * d / (kFlops * 0.55);
      const double decode = s.ctx * 2.0 * kv_heads * d * 2.0 / kBw;
      us = 5.0 + prefill + (s.prefill ? 0.0 : decode);
      break;
    }
    case Cost::kAttentionReduce:
      us = 2.6 + s.seqs * q_heads * d * 8.0 / kBw;
      break;
    case Cost::kAllReduce:
      us = bandwidth_us(T * h * 2.0);
      break;
    case Cost::kAllGather: {
      // FSDP gathers a layer's parameters; vLLM/SGLang gather logits.
      const double bytes =
          p.fsdp ? (h * (q_heads + 2 * kv_heads) * d * tp + h * h + 3.0 * h * p.intermediate) * 2.0
                 : s.seqs * p.vocab * 2.0;
      us = bandwidth_us(bytes * (tp - 1) / std::max(1, tp));
      break;
    }
    case Cost::kSendRecv:
      us = bandwidth_us(T * h * 2.0);
      break;
    case Cost::kSample:
      us = 4.0 + s.seqs * p.vocab * 4.0 / kBw;
      break;
    case Cost::kGemmRouter:
      us = gemm(T, h, std::max(1, p.experts));
      break;
    case Cost::kMoeRoute:
      us = 2.5 + T * std::max(1, p.experts) * 4.0 / kBw;
      break;
    case Cost::kMoePermute:
      us = 3.0 + T * std::max(1, p.top_k) * h * 2.0 / kBw;
      break;
    case Cost::kQuant:
      us = 2.0 + T * h * 3.0 / kBw;
      break;
    case Cost::kMoeGemmUp:
    case Cost::kMoeGemmDown: {
      // Grouped GEMM over this rank's experts (EP = TP): the token slots routed here, the
      // weights of the experts that received any (1-byte fp8 / mxfp4-class weights).
      // Without EP every rank holds 1/TP of each expert's FFN width.
      const double ep = ep_ ? tp : 1.0;
      const double local = std::max(1.0, std::max(1, p.experts) / ep);
      const double rows = T * std::max(1, p.top_k) / ep;
      const double active = std::min(local, std::max(1.0, rows));
      const double inter = p.expert_intermediate * ep / tp;
      const double width = k.cost == Cost::kMoeGemmUp ? 2.0 * inter : static_cast<double>(h);
      const double depth = k.cost == Cost::kMoeGemmUp ? h : inter;
      const double eff = 0.35 + 0.45 * (rows / active) / (rows / active + 384.0);
      const double compute = 2.0 * rows * width * depth / (kFlops * eff);
      const double memory = (active * width * depth + rows * (width + depth) * 2.0) / kBw;
      us = 4.0 + std::max(compute, memory);
      break;
    }
    case Cost::kAllToAll:
      us = bandwidth_us(T * std::max(1, p.top_k) * h * 2.0 * (tp - 1) / std::max(1, tp));
      break;
  }
  if (!IsComm(k.cost)) us += dev.floor_us;
  return Micro(us);
}

// The shape a library sees for one launch (kernels.h).
static LaunchShape ShapeFor(const EngineProfile& p, const KernelSpec& k, const Shape& s, int tp) {
  LaunchShape l;
  const double q_heads = p.heads / static_cast<double>(tp);
  const double kv_heads = std::max(1.0, p.kv_heads / static_cast<double>(tp));
  const double d = p.head_dim, h = p.hidden, inter = p.intermediate / static_cast<double>(tp);
  l.m = std::max(1.0, s.tokens);
  l.seqs = std::max(1.0, s.seqs);
  l.q_per_seq = l.m / l.seqs;
  l.ctx_per_seq = s.ctx / l.seqs;
  l.q_heads = q_heads;
  l.prefill = s.prefill;
  switch (k.cost) {
    case Cost::kGemmQkv:
      l.n = (q_heads + 2 * kv_heads) * d, l.k = h;
      break;
    case Cost::kGemmO:
      l.n = h, l.k = q_heads * d;
      break;
    case Cost::kGemmUp:
      l.n = 2 * inter, l.k = h;
      break;
    case Cost::kGemmDown:
      l.n = h, l.k = inter;
      break;
    case Cost::kLmHead:
      l.m = l.seqs, l.n = p.vocab / static_cast<double>(tp), l.k = h;
      break;
    case Cost::kGemmRouter:
      l.n = std::max(1, p.experts), l.k = h;
      break;
    default:
      break;
  }
  return l;
}

class Executor {
 public:
  Executor(Run& run, const StepPlan& plan, StepLabels* labels)
      : run_(run), p_(run.profile_), plan_(plan), labels_(labels), rng_(run.rng_.Fork(plan.seq)) {}

  int64_t Go(int64_t start);

 private:
  // `structural` >= 0: a fault whose evidence is the structure itself (reordered or
  // substituted operators): every node emitted is labelled with it.
  void EmitOps(const std::vector<OpSpec>& ops, const std::vector<int>& ranks, bool graph, int layer,
               int structural = -1);
  void EmitKernelAcross(const KernelSpec& k, const std::vector<int>& ranks, bool graph,
                        int structural);
  // The host stack (host_stack.h), in lockstep over `ranks`: a range with its fitted self
  // time (70% before its children, the rest after), module calls (three ranges each), the
  // module path diff between consecutive operators, and one operator's recipe tree.
  void PushHost(const std::string& name, const std::vector<int>& ranks);
  void PopHost(const std::vector<int>& ranks);
  void OpenModule(const std::string& element, const std::vector<int>& ranks);
  void CloseModule(const std::vector<int>& ranks);
  void SyncModules(const std::vector<std::string>& path, const std::vector<int>& ranks);
  void WalkHost(const std::vector<HostNode>& nodes, const std::vector<int>& ranks,
                const std::function<void()>& open_op, const std::function<void()>& launch,
                const std::function<void()>& close_op);
  void SendRecv(const std::vector<int>& senders, const std::vector<int>& receivers);
  int64_t LaunchCall(RankOut& r, const std::string& api, int64_t at, uint64_t* corr);
  // Labels `loc` as the step's vertical evidence of `fault` with its part in the fault
  // (NodeLocator::Role: kRoot where the fault acts, kImpact where a node only waits or
  // grows because of a root); `rank` >= 0 also keeps it as that rank's culprit node,
  // which the horizontal view takes when the rank's peers wait for it.
  void AddVertical(NodeLocator loc, int fault, int rank, NodeLocator::Role role);
  // Horizontal evidence, with the role the locator carries.
  void AddHorizontal(const NodeLocator& loc);
  bool CrossNode(const std::vector<int>& ranks) const;
  // Duration noise shared by the tensor-parallel ranks running the same kernel (the
  // same shapes and data); each rank adds a smaller idiosyncratic part (IdioNoise).
  double Noise(Cost c, bool prefill) {
    double f = rng_.LogNormal(1.0, realistic_ ? ClassCv(c, prefill) : 0.045);
    if (rng_.Chance(0.002)) f *= rng_.Uniform(1.3, 2.4);  // benign outliers
    return f;
  }
  double IdioNoise(Cost c, bool prefill) {
    return rng_.LogNormal(1.0, kIdioShare * ClassCv(c, prefill));
  }
  // Gap between two kernels on one stream when the GPU, not the host, is the bottleneck.
  int64_t DispatchGap(bool graph) {
    if (!realistic_) return graph ? static_cast<int64_t>(rng_.Uniform(500, 1500)) : 0;
    const bool amd = run_.vendor_ == Vendor::kMi300;
    double us;
    if (amd) {
      us = rng_.LogNormal(kHipGapUs, 0.5);
    } else if (graph) {
      us = rng_.LogNormal(kGraphGapUs, kGraphGapSigma);
    } else {
      us = rng_.LogNormal(kEagerGapUs, kEagerGapSigma);
    }
    return static_cast<int64_t>(Micro(std::min(us, 1000.0)));
  }
  // The rare long gaps sit at positions of the step, not of the rank: in a graph a
  // dependency or a memset node, in eager mode framework work between kernels (views,
  // allocations, Python) that every tensor-parallel rank runs alike. One draw per kernel
  // for the whole group keeps the healthy arrival skew at collectives small (real B200
  // TP8: all-reduce CV 0.006 across rank 0's layers).
  int64_t SharedTail(bool graph) {
    if (!realistic_ || !rng_.Chance(graph ? kGraphTailShare : kEagerTailShare)) return 0;
    const double us = graph ? rng_.LogNormal(kGraphTailUs, kGraphTailSigma)
                            : rng_.LogNormal(kEagerTailUs, kEagerTailSigma);
    return static_cast<int64_t>(Micro(std::min(us, 1000.0)));
  }

  Run& run_;
  const bool realistic_ = run_.config().realistic_timing;
  const bool host_stack_ = run_.config().host_stack;
  double launch_common_ = 1.0;  // the group's common launch-time factor (LaunchCall)
  std::vector<std::vector<int64_t>> host_post_;  // per rank: self time left of open host ranges
  std::vector<std::unordered_map<std::string, int>> module_count_;  // per rank: instances
  std::vector<std::string> open_modules_;  // module path open in the current EmitOps
  const EngineProfile& p_;
  const StepPlan& plan_;
  StepLabels* labels_;
  Rng rng_;
  int64_t step_start_ = 0;
  std::vector<Shape> shape_;          // per rank
  std::vector<uint64_t> graph_corr_;  // per rank: the current graph launch, 0 = eager
  std::vector<int64_t> graph_ready_;  // per rank: earliest start of the next graph kernel
  std::vector<std::vector<NodeLocator>>
      culprit_;                     // per rank: fault nodes since the last collective
  std::vector<bool> culprit_flag_;  // per rank: late for a reason with no node (stall)
  std::vector<int> kernel_fault_;   // scratch, per position in a group
  int culprit_info_ = -1;
  bool wrapping_ = false;  // inside the B200 all-reduce's copies
};

void Executor::AddVertical(NodeLocator loc, int fault, int rank, NodeLocator::Role role) {
  if (labels_->fault < 0) labels_->fault = fault;
  if (labels_->fault != fault) return;  // one fault per step: the first one to act
  loc.role = role;
  labels_->vertical.push_back(loc);
  if (rank >= 0) culprit_[static_cast<size_t>(rank)].push_back(loc);
}

void Executor::AddHorizontal(const NodeLocator& loc) { labels_->horizontal.push_back(loc); }

bool Executor::CrossNode(const std::vector<int>& ranks) const {
  for (int r : ranks) {
    if (run_.ranks_[static_cast<size_t>(r)].node !=
        run_.ranks_[static_cast<size_t>(ranks[0])].node) {
      return true;
    }
  }
  return false;
}

int64_t Executor::LaunchCall(RankOut& r, const std::string& api, int64_t at, uint64_t* corr) {
  double median_us = api == "cuLaunchKernelEx"      ? 7.8
                     : api == "cudaMemcpyAsync"     ? 13.8
                     : api == "cudaLaunchKernelExC" ? 5.7
                                                    : 6.6;
  double dur;
  if (host_stack_) {
    // The launch calls of the engine's real trace; the variation mostly common to the
    // tensor-parallel group (PushHost says why).
    const HostCost c = HostCostOf(p_, api);
    dur = c.median_us * launch_common_ * rng_.LogNormal(1.0, kHostIdioShare * c.sigma);
  } else {
    dur = rng_.LogNormal(median_us, 0.22);
  }
  const ActiveFault* lat = run_.Active(Mechanism::kLaunchLatency, step_start_);
  const bool slowed = lat != nullptr && lat->rank == r.rank;
  if (slowed) {
    const double x = lat->spec.magnitude * rng_.LogNormal(1.0, 0.3);
    if (!run_.neutral_) dur *= x;
  }
  const int64_t end = at + static_cast<int64_t>(Micro(dur));
  *corr = r.Call(api, at, end, api.rfind("cu", 0) == 0 && api.rfind("cuda", 0) != 0);
  if (slowed) AddVertical(r.CallLocator(*corr), lat->id, r.rank, kRoot);
  return end;
}

void Executor::EmitKernelAcross(const KernelSpec& k0, const std::vector<int>& ranks, bool graph,
                                int structural) {
  if (k0.cost == Cost::kAllReduce && run_.shape_kernels_ && run_.vendor_ == Vendor::kBlackwell &&
      !wrapping_ && run_.Active(Mechanism::kNcclFallback, step_start_) == nullptr) {
    // vLLM on B200: torch symmetric memory's multimem all-reduce, its input copied into
    // the symmetric buffer and its output back (docs/serving-notes.md §2.5).
    wrapping_ = true;
    const KernelSpec copy{"Memcpy DtoD (Device -> Device)", Cost::kCopy, "cudaMemcpyAsync"};
    KernelSpec ar = k0;
    ar.name =
        "void (anonymous namespace)::multimem_all_reduce_kernel<c10::BFloat16, 16>("
        "c10::BFloat16*, unsigned long, unsigned long, unsigned long, unsigned long, unsigned "
        "long)";
    EmitKernelAcross(copy, ranks, graph, structural);
    EmitKernelAcross(ar, ranks, graph, structural);
    EmitKernelAcross(copy, ranks, graph, structural);
    wrapping_ = false;
    return;
  }
  const int tp = static_cast<int>(ranks.size());
  KernelSpec k = k0;
  const Shape& lead_shape = shape_[static_cast<size_t>(ranks[0])];
  const KernelChoice choice =
      run_.shape_kernels_
          ? ChooseKernel(run_.vendor_, p_, k0, ShapeFor(p_, k0, lead_shape, run_.config().tp))
          : KernelChoice{};
  if (choice.skip) return;
  k.name = choice.name.empty() ? VendorSpelling(run_.vendor_, k0.name) : choice.name;
  if (run_.shape_kernels_ && run_.vendor_ == Vendor::kBlackwell && !k0.b200.empty()) {
    k.name = k0.b200;  // the engine runs another kernel on this device
  } else if (run_.shape_kernels_ && run_.vendor_ == Vendor::kMi300 && !k0.mi300.empty()) {
    k.name = k0.mi300;
  }
  if (k.name == "-") return;  // not launched on this device
  int rename_fault = -1;
  double comm_factor = 1.0;
  const bool comm = IsComm(k.cost);
  if (comm && k.cost == Cost::kAllReduce) {
    if (const ActiveFault* f = run_.Active(Mechanism::kNcclFallback, step_start_)) {
      k.name = p_.nccl_allreduce;  // custom all-reduce disabled: NCCL's ring kernel
      if (!run_.neutral_) comm_factor *= f->spec.magnitude;
      rename_fault = f->id;
    }
  }
  const bool cross = comm && CrossNode(ranks);
  int slow_link = -1;
  if (cross) {
    if (const ActiveFault* f = run_.Active(Mechanism::kSlowLink, step_start_)) {
      if (!run_.neutral_) comm_factor *= f->spec.magnitude;
      slow_link = f->id;
    }
  }
  std::vector<int64_t> ready(ranks.size()), start(ranks.size());
  std::vector<uint64_t> corr(ranks.size());
  if (host_stack_ && !graph) launch_common_ = rng_.LogNormal(1.0, HostCostOf(p_, k.api).sigma);
  const int64_t eager_tail = graph ? 0 : SharedTail(false);
  for (size_t i = 0; i < ranks.size(); ++i) {
    RankOut& r = run_.ranks_[static_cast<size_t>(ranks[i])];
    const bool side = p_.fsdp && comm;  // FSDP gathers run on their own stream
    if (graph) {
      corr[i] = graph_corr_[static_cast<size_t>(r.rank)];
      ready[i] = graph_ready_[static_cast<size_t>(r.rank)];
    } else {
      const int64_t call_end = LaunchCall(r, k.api, r.host, &corr[i]);
      ready[i] = r.host + static_cast<int64_t>(Micro(3.5 + rng_.LogNormal(3.5, 0.5)));
      r.host = call_end;
    }
    const int64_t free_at = side ? r.comm : r.gpu;
    start[i] = std::max(ready[i], graph ? free_at : free_at + DispatchGap(false) + eager_tail);
  }
  std::vector<int64_t> end(ranks.size());
  if (comm) {
    // Collectives start apart and end together: every rank waits for the last arriver
    // (docs/serving-notes.md §5.3).
    const int64_t last = *std::max_element(start.begin(), start.end());
    const double xfer =
        KernelCostNs(p_, Device(run_.vendor_), k, shape_[static_cast<size_t>(ranks[0])], tp, cross,
                     run_.config().expert_parallel) *
        comm_factor * Noise(k.cost, lead_shape.prefill);
    for (size_t i = 0; i < ranks.size(); ++i) {
      end[i] = last + static_cast<int64_t>(xfer) + static_cast<int64_t>(rng_.Uniform(0, 2500));
    }
    // A rank-scoped fault made one rank arrive last by a margin: its peers' kernels are
    // the horizontal evidence, with the culprit's own fault nodes.
    if (tp > 1) {
      std::vector<int64_t> sorted = start;
      std::sort(sorted.begin(), sorted.end());
      const int64_t median = sorted[sorted.size() / 2];
      const size_t late =
          static_cast<size_t>(std::max_element(start.begin(), start.end()) - start.begin());
      const int late_rank = ranks[late];
      const bool culprit = (!culprit_[static_cast<size_t>(late_rank)].empty() ||
                            culprit_flag_[static_cast<size_t>(late_rank)]) &&
                           last - median > 15 * kUs;
      culprit_info_ = culprit ? late_rank : -1;
    } else {
      culprit_info_ = -1;
    }
  } else {
    const double common = realistic_ ? Noise(k.cost, lead_shape.prefill) : 1.0;
    for (size_t i = 0; i < ranks.size(); ++i) {
      const RankOut& r = run_.ranks_[static_cast<size_t>(ranks[i])];
      int fault = -1;
      const double factor = run_.neutral_ ? 1.0 : run_.KernelFactor(k, r.rank, step_start_, &fault);
      const double own = realistic_ ? IdioNoise(k.cost, lead_shape.prefill) *
                                          run_.drift_[static_cast<size_t>(r.rank)]
                                    : Noise(k.cost, lead_shape.prefill);
      const double ns =
          KernelCostNs(p_, Device(run_.vendor_), k, shape_[static_cast<size_t>(r.rank)], tp, false,
                       run_.config().expert_parallel) *
          r.speed * common * own * factor;
      end[i] = start[i] + std::max<int64_t>(1200, static_cast<int64_t>(ns));
      kernel_fault_[i] = factor > 1.02 ? fault : -1;
    }
  }
  const int64_t graph_tail = graph ? SharedTail(true) : 0;
  for (size_t i = 0; i < ranks.size(); ++i) {
    RankOut& r = run_.ranks_[static_cast<size_t>(ranks[i])];
    const bool side = p_.fsdp && comm;
    const bool copy = k.api == "cudaMemcpyAsync";
    const NodeLocator loc =
        r.Gpu(copy ? raw::EventKind::kMemcpy : raw::EventKind::kKernel, k.name, start[i], end[i],
              corr[i], side ? kSideStream : kComputeStream, graph,
              copy ? static_cast<uint64_t>(lead_shape.tokens * p_.hidden * 2) : 0);
    if (side) {
      r.comm = end[i];
      r.gpu = std::max(r.gpu, end[i]);  // compute waits for the gathered parameters
    } else {
      r.gpu = end[i];
    }
    if (k.cost == Cost::kAttention) {
      // Request-scoped evidence (KV-pressure recompute, misroute): the attention the
      // fault made the request run, a root.
      labels_->attention.push_back(loc);
      labels_->attention.back().role = kRoot;
    }
    if (graph) {
      graph_ready_[static_cast<size_t>(r.rank)] = end[i] + DispatchGap(true) + graph_tail;
    }
    if (comm) {
      NodeLocator labelled = loc;
      if (rename_fault >= 0 || slow_link >= 0) {
        // The NCCL or link fault acts on the collective itself: a root on every rank.
        labelled.role = kRoot;
        AddVertical(labelled, rename_fault >= 0 ? rename_fault : slow_link, -1, kRoot);
        AddHorizontal(labelled);
      } else if (culprit_info_ >= 0 && labels_->fault >= 0) {
        // The collectives waited for the late rank: impact. A rank late with no fault
        // node of its own (a stalled worker: the delay is before its step range) shows
        // its lateness first in its own collective, the one node of the culprit rank
        // that carries it: that one is the root.
        const bool own =
            ranks[i] == culprit_info_ && culprit_[static_cast<size_t>(culprit_info_)].empty();
        labelled.role = own ? kRoot : kImpact;
        AddVertical(labelled, labels_->fault, -1, labelled.role);
        AddHorizontal(labelled);
      }
    } else if (kernel_fault_[i] >= 0) {
      AddVertical(loc, kernel_fault_[i], r.rank, kRoot);
    } else if (structural >= 0) {
      // Substituted or reordered operators: the structure is the fault.
      AddVertical(loc, structural, -1, kRoot);
    }
  }
  if (comm) {
    if (culprit_info_ >= 0 && labels_->fault >= 0) {
      for (const NodeLocator& c : culprit_[static_cast<size_t>(culprit_info_)]) AddHorizontal(c);
    }
    for (int r : ranks) {
      culprit_[static_cast<size_t>(r)].clear();
      culprit_flag_[static_cast<size_t>(r)] = false;
    }
    culprit_info_ = -1;
  }
  if (!choice.reduce.empty()) {
    // Split-K: the partial sums are reduced by a second kernel.
    const KernelSpec reduce{choice.reduce, Cost::kElementwise, k0.api};
    EmitKernelAcross(reduce, ranks, graph, structural);
  }
}

void Executor::EmitOps(const std::vector<OpSpec>& ops_in, const std::vector<int>& ranks, bool graph,
                       int layer, int structural) {
  std::vector<OpSpec> ops = ops_in;
  int reorder_fault = -1;
  size_t cache_op = ops.size(), attention_op = ops.size();
  for (size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].kernels.empty()) continue;
    if (ops[i].kernels[0].cost == Cost::kKvWrite && cache_op == ops.size()) cache_op = i;
    if (ops[i].kernels[0].cost == Cost::kAttention && attention_op == ops.size()) attention_op = i;
  }
  if (layer >= 0 && cache_op < ops.size() && attention_op < ops.size()) {
    if (const ActiveFault* f = run_.Active(Mechanism::kOpReorder, step_start_)) {
      // The cache write and attention swap places: attention reads KV slots that the
      // step has not written yet.
      std::swap(ops[cache_op], ops[attention_op]);
      reorder_fault = f->id;
    }
  }
  const ActiveFault* straggler = run_.Active(Mechanism::kStragglerRank, step_start_);
  const ActiveFault* alloc = run_.Active(Mechanism::kAllocatorStall, step_start_);
  const bool stack = host_stack_ && !graph;
  for (size_t oi = 0; oi < ops.size(); ++oi) {
    const OpSpec& op = ops[oi];
    if (op.comm && ranks.size() == 1) continue;  // a group of one GPU has no collectives
    if (op.ep != OpSpec::Ep::kAlways &&
        (op.ep == OpSpec::Ep::kOnly) != run_.config().expert_parallel)
      continue;
    const bool swapped = reorder_fault >= 0 && (oi == cache_op || oi == attention_op);
    const int evidence = swapped ? reorder_fault : structural;
    std::vector<NodeLocator> range_locs(ranks.size());
    // The operator's own range with its host time before the launches, and what faults do
    // to the host there.
    auto open_op = [&] {
      if (graph) return;
      const HostCost op_cost = stack ? HostCostOf(p_, op.range) : HostCost{0, 0};
      const double op_self = stack ? rng_.LogNormal(op_cost.median_us, op_cost.sigma) : 0;
      for (size_t i = 0; i < ranks.size(); ++i) {
        RankOut& r = run_.ranks_[static_cast<size_t>(ranks[i])];
        if (!op.range.empty()) {
          range_locs[i] = r.Push(op.range, r.host);
          if (evidence >= 0) AddVertical(range_locs[i], evidence, -1, kRoot);
        }
        if (stack) {
          const double self = op_self * rng_.LogNormal(1.0, kHostIdioShare * op_cost.sigma);
          r.host += static_cast<int64_t>(Micro(0.7 * self));
          host_post_[static_cast<size_t>(r.rank)].push_back(
              static_cast<int64_t>(Micro(0.3 * self)));
        } else {
          const bool custom =
              op.range.find("::") != std::string::npos && op.range.rfind("aten::", 0) != 0;
          r.host += static_cast<int64_t>(Micro(rng_.LogNormal(custom ? 7.0 : 10.5, 0.28)));
        }
        // GC: a rare pause of the host. Under the host stack a step is CPU-bound and a
        // pause on one rank widens every later all-reduce of the step; the real B200 TP8
        // step (~2,600 operators on rank 0, all-reduce CV 0.006) has none, where 0.08% per
        // operator would give two: there it is 0.01%.
        if (rng_.Chance(stack ? 0.0001 : 0.0008))
          r.host += static_cast<int64_t>(rng_.Uniform(0.4, 2.5) * kMs);
        if (straggler != nullptr && straggler->rank == r.rank && op.comm && rng_.Chance(0.45)) {
          // Host jitter on one rank right before it joins a collective.
          const int64_t late = static_cast<int64_t>(
              Micro(rng_.LogNormal(straggler->spec.magnitude * MagnitudeUnits::kStragglerUs, 0.5)));
          if (!run_.neutral_) r.host += late;
          // The late rank's delayed compute: the jitter is this range's own host time.
          if (!op.range.empty()) AddVertical(range_locs[i], straggler->id, r.rank, kRoot);
        }
        if (alloc != nullptr && alloc->rank == r.rank && !op.comm && rng_.Chance(0.25)) {
          // A caching-allocator miss: cudaMalloc synchronizes and blocks the host.
          const int64_t dur = static_cast<int64_t>(Micro(
              rng_.LogNormal(alloc->spec.magnitude * MagnitudeUnits::kAllocatorStallUs, 0.45)));
          if (run_.neutral_) continue;  // the draws above keep the stream aligned
          const int64_t at = std::max(r.host, r.gpu);
          const uint64_t c = r.Call("cudaMalloc", r.host, at + dur);
          r.host = at + dur;
          AddVertical(r.CallLocator(c), alloc->id, r.rank, kRoot);
          // The operator around the stalled cudaMalloc only grew by it.
          if (!op.range.empty()) AddVertical(range_locs[i], alloc->id, r.rank, kImpact);
        }
      }
    };
    auto launch = [&] {
      for (const KernelSpec& k : op.kernels) EmitKernelAcross(k, ranks, graph, evidence);
    };
    auto close_op = [&] {
      if (graph) return;
      for (size_t i = 0; i < ranks.size(); ++i) {
        RankOut& r = run_.ranks_[static_cast<size_t>(ranks[i])];
        if (stack) {
          auto& post = host_post_[static_cast<size_t>(r.rank)];
          r.host += post.back();
          post.pop_back();
        } else {
          r.host += static_cast<int64_t>(rng_.Uniform(600, 1800));
        }
        if (!op.range.empty()) r.Pop(r.host);
      }
    };
    if (!stack) {
      open_op();
      launch();
      close_op();
      continue;
    }
    SyncModules(op.modules, ranks);
    const HostOp& host = run_.HostOpOf(op);
    WalkHost(host.tree, ranks, open_op, launch, close_op);
  }
  if (stack) SyncModules({}, ranks);
}

// The tensor-parallel ranks run the same Python on the same shapes: most of a range's
// self-time variation is common to them (one draw per range for the group, each rank
// adding kIdioShare of the sigma), as for kernel durations. Independent draws let the
// hosts drift apart over a step (a random walk of ~100 ranges per layer) and every
// all-reduce then waits for the slowest host: 340 us all-reduces in a simulated B200 TP8
// prefill against the real trace's 27 us median.
void Executor::PushHost(const std::string& name, const std::vector<int>& ranks) {
  const HostCost c = HostCostOf(p_, name);
  const double common = rng_.LogNormal(c.median_us, c.sigma);
  for (int rank : ranks) {
    RankOut& r = run_.ranks_[static_cast<size_t>(rank)];
    r.Push(name, r.host);
    const double self = common * rng_.LogNormal(1.0, kHostIdioShare * c.sigma);
    r.host += static_cast<int64_t>(Micro(0.7 * self));
    host_post_[static_cast<size_t>(rank)].push_back(static_cast<int64_t>(Micro(0.3 * self)));
  }
}

void Executor::PopHost(const std::vector<int>& ranks) {
  for (int rank : ranks) {
    RankOut& r = run_.ranks_[static_cast<size_t>(rank)];
    auto& post = host_post_[static_cast<size_t>(rank)];
    r.host += post.back();
    post.pop_back();
    r.Pop(r.host);
  }
}

void Executor::OpenModule(const std::string& element, const std::vector<int>& ranks) {
  const std::string cls(ModuleClass(element));
  const std::vector<std::string> frames = ModuleFrames(p_, cls);
  // Kineto names a module by its class and the instance's number among that class's
  // modules, in call order: the same module gets the same name in every step.
  const HostCost c = HostCostOf(p_, "nn.Module: ");
  const double common = rng_.LogNormal(c.median_us, c.sigma);
  for (int rank : ranks) {
    RankOut& r = run_.ranks_[static_cast<size_t>(rank)];
    const int k = module_count_[static_cast<size_t>(rank)][cls]++;
    r.Push("nn.Module: " + cls + "_" + std::to_string(k), r.host);
    const double self = common * rng_.LogNormal(1.0, kHostIdioShare * c.sigma);
    r.host += static_cast<int64_t>(Micro(0.7 * self));
    host_post_[static_cast<size_t>(rank)].push_back(static_cast<int64_t>(Micro(0.3 * self)));
  }
  for (const std::string& f : frames) PushHost(f, ranks);
}

void Executor::CloseModule(const std::vector<int>& ranks) {
  for (int i = 0; i < 3; ++i) PopHost(ranks);  // forward, _call_impl, nn.Module
}

void Executor::SyncModules(const std::vector<std::string>& path, const std::vector<int>& ranks) {
  size_t keep = 0;
  while (keep < open_modules_.size() && keep < path.size() && open_modules_[keep] == path[keep])
    ++keep;
  while (open_modules_.size() > keep) {
    CloseModule(ranks);
    open_modules_.pop_back();
  }
  for (size_t d = keep; d < path.size(); ++d) {
    OpenModule(path[d], ranks);
    open_modules_.push_back(path[d]);
  }
}

void Executor::WalkHost(const std::vector<HostNode>& nodes, const std::vector<int>& ranks,
                        const std::function<void()>& open_op, const std::function<void()>& launch,
                        const std::function<void()>& close_op) {
  for (const HostNode& n : nodes) {
    if (n.launch) {
      launch();
    } else if (n.op) {
      open_op();
      WalkHost(n.children, ranks, open_op, launch, close_op);
      close_op();
    } else if (n.name.rfind("cuda", 0) == 0) {
      // A runtime call of the library before its launch (cuBLAS attribute queries).
      const HostCost c = HostCostOf(p_, n.name);
      const double common = rng_.LogNormal(c.median_us, c.sigma);
      for (int rank : ranks) {
        RankOut& r = run_.ranks_[static_cast<size_t>(rank)];
        const int64_t end =
            r.host +
            static_cast<int64_t>(Micro(common * rng_.LogNormal(1.0, kHostIdioShare * c.sigma)));
        r.Call(n.name, r.host, end);
        r.host = end;
      }
    } else {
      PushHost(n.name, ranks);
      WalkHost(n.children, ranks, open_op, launch, close_op);
      PopHost(ranks);
    }
  }
}

void Executor::SendRecv(const std::vector<int>& senders, const std::vector<int>& receivers) {
  // Stage k's rank i sends its activations to stage k+1's rank i.
  for (size_t i = 0; i < senders.size() && i < receivers.size(); ++i) {
    const std::vector<int> pair = {senders[i], receivers[i]};
    RankOut& s = run_.ranks_[static_cast<size_t>(senders[i])];
    RankOut& r = run_.ranks_[static_cast<size_t>(receivers[i])];
    s.Push("teller.comm op=send", s.host);
    r.Push("teller.comm op=recv", r.host);
    s.host += static_cast<int64_t>(Micro(rng_.LogNormal(9.0, 0.3)));
    r.host += static_cast<int64_t>(Micro(rng_.LogNormal(9.0, 0.3)));
    KernelSpec k{p_.nccl_sendrecv, Cost::kSendRecv, "cudaLaunchKernel"};
    EmitKernelAcross(k, pair, false, -1);
    s.host += 1500;
    r.host += 1500;
    s.Pop(s.host);
    r.Pop(r.host);
  }
}

int64_t Executor::Go(int64_t start) {
  step_start_ = start;
  const size_t n = run_.ranks_.size();
  shape_.assign(n, Shape{});
  graph_corr_.assign(n, 0);
  graph_ready_.assign(n, 0);
  culprit_.assign(n, {});
  culprit_flag_.assign(n, false);
  kernel_fault_.assign(n, -1);
  host_post_.assign(n, {});
  module_count_.assign(n, {});
  const bool eager = plan_.any_prefill || !p_.decode_graph;

  // Which requests each rank runs: all of them under tensor/pipeline parallelism; a
  // round-robin share under FSDP's data parallelism.
  std::vector<std::vector<int>> rank_reqs(n);
  for (size_t i = 0; i < plan_.reqs.size(); ++i) {
    for (size_t r = 0; r < n; ++r) {
      if (!p_.fsdp || static_cast<int>(i % n) == static_cast<int>(r))
        rank_reqs[r].push_back(static_cast<int>(i));
    }
  }
  for (size_t r = 0; r < n; ++r) {
    Shape& s = shape_[r];
    s.tokens = s.seqs = s.ctx = s.qk = 0;
    for (int i : rank_reqs[r]) {
      const Request& q = run_.requests_[static_cast<size_t>(plan_.reqs[static_cast<size_t>(i)])];
      const double t = plan_.tokens[static_cast<size_t>(i)];
      const double k = q.computed + t;
      s.tokens += t;
      s.seqs += 1;
      s.ctx += k;
      if (plan_.prefill[static_cast<size_t>(i)]) {
        s.qk += t * k;
        s.prefill = true;
      }
    }
    s.tokens = std::max(1.0, s.tokens);
    s.seqs = std::max(1.0, s.seqs);
    if (!eager && run_.shape_kernels_) {
      // A decode step replays the graph captured for the next batch size up: it runs the
      // padded batch.
      s.seqs = s.tokens = GraphBucket(static_cast<int>(s.seqs));
    }
  }

  RankOut& lead = run_.ranks_[0];
  int64_t t = std::max(start, lead.host);
  if (!p_.engine_step_range.empty()) lead.Push(p_.engine_step_range, t);
  if (!p_.schedule_range.empty()) {
    lead.Push(p_.schedule_range, t);
    t += static_cast<int64_t>(Micro(rng_.LogNormal(140.0 + 7.0 * plan_.reqs.size(), 0.2)));
    std::vector<int> all;
    for (size_t i = 0; i < plan_.reqs.size(); ++i) all.push_back(static_cast<int>(i));
    lead.Mark("teller.batch " + run_.StepMessage(plan_, all).substr(12), t - 2 * kUs);
    lead.Pop(t);
  }
  lead.host = t;

  // Workers pick the step up from the shared-memory ring (or their own scheduler).
  const ActiveFault* stall = run_.Active(Mechanism::kWorkerStall, start);
  int stalled = -1;
  if (stall != nullptr && rng_.Chance(0.6)) stalled = stall->rank;
  for (size_t r = 0; r < n; ++r) {
    RankOut& ro = run_.ranks_[r];
    int64_t ts = t;
    if (r != 0)
      ts += static_cast<int64_t>(Micro(rng_.LogNormal(ro.node == lead.node ? 22.0 : 85.0, 0.3)));
    if (static_cast<int>(r) == stalled) {
      const int64_t late = static_cast<int64_t>(
          rng_.LogNormal(stall->spec.magnitude * MagnitudeUnits::kWorkerStallMs, 0.35) * kMs);
      if (!run_.neutral_) ts += late;
      culprit_flag_[r] = true;  // its peers will wait for it in the first collective
      if (labels_->fault < 0) labels_->fault = stall->id;
    }
    ro.host = std::max(ro.host, ts);
    std::vector<int> subset;
    subset.reserve(rank_reqs[r].size());
    for (int i : rank_reqs[r]) subset.push_back(i);
    ro.Push(run_.StepMessage(plan_, subset), ro.host);
    // A GC pause (a healthy confounder drawn by Run::Simulate) inside this worker's step.
    if (static_cast<int>(r) == run_.gc_rank_) ro.host += run_.gc_pause_ns_;
    ro.host += static_cast<int64_t>(Micro(rng_.LogNormal(4.0, 0.2)));
    for (const std::string& f : p_.forward_ranges) {
      ro.Push(f, ro.host);
      ro.host += static_cast<int64_t>(Micro(rng_.LogNormal(12.0, 0.3)));
    }
    if (host_stack_) {
      // The model runner's input preparation before the forward, in every step (a
      // graph replay needs its inputs too).
      const std::function<void()> none = [] {};
      WalkHost(run_.RunnerPrologueNodes(), {static_cast<int>(r)}, none, none, none);
    }
    if (const ActiveFault* swap = run_.Active(Mechanism::kKvSwap, start)) {
      // Swapping blocks out to host memory: a large device-to-host copy the step waits for.
      const NodeLocator range = ro.Push("_C_cache_ops::swap_blocks", ro.host);
      const double bytes = swap->spec.magnitude * rng_.LogNormal(MagnitudeUnits::kKvSwapMiB, 0.4) *
                           1024 * 1024 / run_.config().tp;
      const int64_t at = ro.host;
      const uint64_t c = ro.Call("cudaMemcpyAsync", at,
                                 at + static_cast<int64_t>(Micro(rng_.LogNormal(13.8, 0.2))));
      const int64_t gs = std::max(ro.gpu, at + 6 * kUs);
      const int64_t ge = gs + static_cast<int64_t>(bytes / 24.0);  // ~24 GB/s over PCIe
      const NodeLocator mem = ro.Gpu(raw::EventKind::kMemcpy, "Memcpy DtoH (Device -> Pinned)", gs,
                                     ge, c, kComputeStream, false, static_cast<uint64_t>(bytes));
      if (!run_.neutral_) {
        ro.gpu = ge;
        ro.host = at + static_cast<int64_t>(Micro(20));
      }
      ro.Pop(ro.host);
      // The swap is an operation the fault adds: its range, call and copy are all roots
      // (none of them waits for another node).
      AddVertical(range, swap->id, -1, kRoot);
      AddVertical(ro.CallLocator(c), swap->id, -1, kRoot);
      AddVertical(mem, swap->id, -1, kRoot);
    }
    if (eager) {
      ro.Push(p_.model_module, ro.host);
      ro.host += static_cast<int64_t>(Micro(rng_.LogNormal(5.0, 0.2)));
      if (host_stack_) {
        for (const std::string& m : p_.model_classes) OpenModule(m, {static_cast<int>(r)});
      }
    }
  }

  const int pp = std::max(1, run_.config().pp);
  const int stage_layers = std::max(1, run_.layers_ / pp);
  std::vector<int> prev_stage;
  for (int stage = 0; stage < pp; ++stage) {
    std::vector<int> ranks;
    for (size_t r = 0; r < n; ++r) {
      if (run_.ranks_[r].pp_rank == stage || p_.fsdp) ranks.push_back(static_cast<int>(r));
    }
    if (p_.fsdp && stage > 0) break;
    if (stage > 0) SendRecv(prev_stage, ranks);
    if (stage == 0) EmitOps(p_.head, ranks, false, -1);
    if (eager) {
      for (int l = 0; l < stage_layers; ++l) {
        for (int r : ranks) {
          RankOut& ro = run_.ranks_[static_cast<size_t>(r)];
          ro.Push(p_.layer_module, ro.host);
          ro.host += static_cast<int64_t>(Micro(rng_.LogNormal(3.0, 0.2)));
        }
        if (host_stack_) OpenModule(p_.layer_class, ranks);
        EmitOps(plan_.any_prefill ? p_.layer_prefill : p_.layer_decode, ranks, false, l);
        if (host_stack_) CloseModule(ranks);
        for (int r : ranks) {
          RankOut& ro = run_.ranks_[static_cast<size_t>(r)];
          ro.host += static_cast<int64_t>(Micro(rng_.LogNormal(2.0, 0.2)));
          ro.Pop(ro.host);
        }
      }
    } else {
      // Decode replays the captured graph: one launch call, every layer's kernels.
      const ActiveFault* straggler = run_.Active(Mechanism::kStragglerRank, start);
      for (int r : ranks) {
        RankOut& ro = run_.ranks_[static_cast<size_t>(r)];
        if (straggler != nullptr && straggler->rank == r) {
          const int64_t late = static_cast<int64_t>(Micro(
              rng_.LogNormal(straggler->spec.magnitude * MagnitudeUnits::kStragglerGraphUs, 0.4)));
          if (!run_.neutral_) ro.host += late;
        }
        const int kernels = stage_layers * 14;
        const int64_t call_start = ro.host;
        double dur = rng_.LogNormal(18.0 + 0.9 * kernels, 0.15);
        const ActiveFault* lat = run_.Active(Mechanism::kLaunchLatency, start);
        const bool slowed = lat != nullptr && lat->rank == r && !run_.neutral_;
        if (slowed) dur *= lat->spec.magnitude;
        const uint64_t c =
            ro.Call("cudaGraphLaunch", call_start, call_start + static_cast<int64_t>(Micro(dur)));
        if (slowed) AddVertical(ro.CallLocator(c), lat->id, r, kRoot);
        if (straggler != nullptr && straggler->rank == r)
          AddVertical(ro.CallLocator(c), straggler->id, r, kRoot);  // the late graph launch
        graph_corr_[static_cast<size_t>(r)] = c;
        graph_ready_[static_cast<size_t>(r)] =
            call_start + static_cast<int64_t>(Micro(rng_.LogNormal(9.0, 0.3))) +
            (slowed ? static_cast<int64_t>(Micro(dur)) : 0);
        ro.host = call_start + static_cast<int64_t>(Micro(dur));
      }
      for (int l = 0; l < stage_layers; ++l) EmitOps(p_.layer_decode, ranks, true, l);
      for (int r : ranks) graph_corr_[static_cast<size_t>(r)] = 0;
    }
    if (stage == pp - 1 || p_.fsdp) {
      EmitOps(p_.tail, ranks, false, -1);
      const ActiveFault* fallback = run_.Active(Mechanism::kFallbackKernel, start);
      for (int r : ranks)
        run_.ranks_[static_cast<size_t>(r)].Push(p_.sampler_range,
                                                 run_.ranks_[static_cast<size_t>(r)].host);
      if (fallback != nullptr) {
        // No fused top-p/top-k kernel: a sort over the vocabulary, a scan and a gather.
        std::vector<OpSpec> slow = {
            {"aten::sort",
             {{"void "
               "at_cuda_detail::cub::DeviceSegmentedRadixSortKernel<at_cuda_detail::cub::"
               "DeviceRadixSortPolicy<float, long, int>::Policy800, false, true, float, long, int, "
               "int, at_cuda_detail::cub::detail::identity_decomposer_t>(float const*, float*, "
               "long const*, long*, int, int, int, int, int, "
               "at_cuda_detail::cub::detail::identity_decomposer_t)",
               Cost::kSample}},
             false,
             {"Sampler"}},
            {"aten::cumsum",
             {{"void at::native::tensor_kernel_scan_innermost_dim<float, std::plus<float> "
               ">(float*, float const*, unsigned int, unsigned int, unsigned int, float, "
               "std::plus<float>)",
               Cost::kSample}},
             false,
             {"Sampler"}},
            {"aten::gather",
             {{"void at::native::_scatter_gather_elementwise_kernel<128, 8, "
               "at::native::_cuda_scatter_gather_internal_kernel<false, "
               "float>::operator()<at::native::TensorAssign>(at::TensorIterator&, long, long, "
               "long, at::native::TensorAssign const&)::{lambda(int)#1}>(int, "
               "at::native::_cuda_scatter_gather_internal_kernel<false, "
               "float>::operator()<at::native::TensorAssign>(at::TensorIterator&, long, long, "
               "long, at::native::TensorAssign const&)::{lambda(int)#1})",
               Cost::kSample}},
             false,
             {"Sampler"}},
        };
        EmitOps(slow, ranks, false, -1, fallback->id);
      } else {
        EmitOps(p_.sampler, ranks, false, -1);
      }
      for (int r : ranks) {
        RankOut& ro = run_.ranks_[static_cast<size_t>(r)];
        ro.host += static_cast<int64_t>(Micro(rng_.LogNormal(6.0, 0.3)));
        ro.Pop(ro.host);
      }
    }
    prev_stage = ranks;
  }

  // Every rank waits for its GPU: the last stage copies the sampled tokens to the host.
  const ActiveFault* sync = run_.Active(Mechanism::kSyncStall, start);
  int64_t done = t;
  for (size_t r = 0; r < n; ++r) {
    RankOut& ro = run_.ranks_[r];
    if (eager) {
      if (host_stack_) {
        for (size_t m = 0; m < p_.model_classes.size(); ++m) CloseModule({static_cast<int>(r)});
      }
      ro.host += static_cast<int64_t>(Micro(rng_.LogNormal(3.0, 0.2)));
      ro.Pop(ro.host);
    }
    const bool last_stage = ro.pp_rank == pp - 1 || p_.fsdp;
    if (last_stage) {
      const int64_t at = ro.host;
      const int64_t call_end = at + static_cast<int64_t>(Micro(rng_.LogNormal(13.8, 0.2)));
      const uint64_t c = ro.Call("cudaMemcpyAsync", at, call_end);
      const int64_t gs = std::max(ro.gpu, at + 5 * kUs);
      const int64_t ge = gs + static_cast<int64_t>(Micro(2.0 + shape_[r].seqs * 0.01));
      ro.Gpu(raw::EventKind::kMemcpy, "Memcpy DtoH (Device -> Pinned)", gs, ge, c, kComputeStream,
             false, static_cast<uint64_t>(shape_[r].seqs * 8));
      ro.gpu = ge;
      ro.host = call_end;
    }
    int64_t sync_end =
        std::max(ro.host, ro.gpu) + static_cast<int64_t>(Micro(rng_.LogNormal(3.0, 0.3)));
    const bool stalled_sync = sync != nullptr && sync->rank == ro.rank;
    if (stalled_sync) {
      const int64_t stall_ns = static_cast<int64_t>(
          rng_.LogNormal(sync->spec.magnitude * MagnitudeUnits::kSyncStallMs, 0.4) * kMs);
      if (!run_.neutral_) sync_end += stall_ns;
    }
    const uint64_t c = ro.Call("cudaStreamSynchronize", ro.host, sync_end);
    if (stalled_sync) AddVertical(ro.CallLocator(c), sync->id, ro.rank, kRoot);
    ro.host = sync_end;
    for (size_t f = 0; f < p_.forward_ranges.size(); ++f) {
      ro.host += static_cast<int64_t>(Micro(rng_.LogNormal(4.0, 0.3)));
      ro.Pop(ro.host);
    }
    ro.host += static_cast<int64_t>(Micro(rng_.LogNormal(5.0, 0.3)));
    ro.Pop(ro.host);  // teller.step
    const int64_t back = ro.host + (r == 0 ? 0
                                           : static_cast<int64_t>(Micro(rng_.LogNormal(
                                                 ro.node == lead.node ? 18.0 : 70.0, 0.3))));
    done = std::max(done, back);
  }
  lead.host = std::max(lead.host, done);
  if (!p_.post_step_range.empty()) {
    lead.Push(p_.post_step_range, lead.host);
    lead.host += static_cast<int64_t>(Micro(rng_.LogNormal(60.0 + 3.0 * plan_.reqs.size(), 0.25)));
    lead.Pop(lead.host);
  }
  if (!p_.engine_step_range.empty()) {
    lead.host += static_cast<int64_t>(Micro(rng_.LogNormal(8.0, 0.3)));
    lead.Pop(lead.host);
  }
  return lead.host;
}

const std::vector<HostNode>& Run::RunnerPrologueNodes() {
  if (!prologue_parsed_) {
    prologue_ = ParseFrames(RunnerPrologue(profile_));
    prologue_parsed_ = true;
  }
  return prologue_;
}

const HostOp& Run::HostOpOf(const OpSpec& op) {
  std::string key = op.range;
  key += '\x1f';
  key += std::to_string(op.kernels.empty() ? -1 : static_cast<int>(op.kernels[0].cost));
  for (const std::string& m : op.modules) {
    key += '\x1f';
    key += m;
  }
  auto it = host_ops_.find(key);
  if (it == host_ops_.end()) it = host_ops_.emplace(key, HostOpFor(profile_, op)).first;
  return it->second;
}

int64_t Run::Execute(const StepPlan& plan, int64_t start, StepLabels* labels,
                     int64_t* healthy_end) {
  // Slow drift of every GPU's speed (clocks, temperature, memory placement): an AR(1)
  // in log space per step, a common part for the node's GPUs and a per-GPU part;
  // stationary spread about 1.5% (common) and 0.7% (own).
  drift_.resize(ranks_.size(), 1.0);
  own_drift_.resize(ranks_.size(), 0.0);
  if (config_.realistic_timing) {
    common_drift_ = 0.98 * common_drift_ + 0.003 * rng_.Normal();
    for (size_t r = 0; r < ranks_.size(); ++r) {
      own_drift_[r] = 0.98 * own_drift_[r] + 0.0014 * rng_.Normal();
      drift_[r] = std::exp(common_drift_ + own_drift_[r]);
    }
  }
  // The step's healthy counterfactual: the same step from the same state with every fault's
  // timing effect off (neutral_: the same random draws, the same structure, no added
  // time), then the state rolled back. Its end is what the step would have taken without
  // the faults (the materiality test in simulate.cc).
  if (healthy_end != nullptr) *healthy_end = -1;
  if (healthy_end != nullptr && measure_effects_) {
    bool timing = false;
    for (const ActiveFault& f : faults_) timing = timing || (f.Active(start) && ActsOnTime(f));
    if (timing) {
      struct Saved {
        size_t events, strings;
        std::unordered_map<uint64_t, uint32_t> occurrence;
        uint64_t last_gpu_correlation, next_correlation;
        uint32_t last_gpu_count;
        std::vector<int64_t> open_ranges;
        int64_t host, gpu, comm;
      };
      std::vector<Saved> saved;
      saved.reserve(ranks_.size());
      for (const RankOut& r : ranks_) {
        saved.push_back({r.events.size(), r.strings.size(), r.range_occurrence,
                         r.last_gpu_correlation, r.next_correlation, r.last_gpu_count,
                         r.open_ranges, r.host, r.gpu, r.comm});
      }
      const Rng rng = rng_;
      StepLabels scratch;
      neutral_ = true;
      *healthy_end = Executor(*this, plan, &scratch).Go(start);
      neutral_ = false;
      rng_ = rng;
      for (size_t i = 0; i < ranks_.size(); ++i) {
        RankOut& r = ranks_[i];
        Saved& s = saved[i];
        r.events.resize(s.events);
        for (size_t k = s.strings; k < r.strings.size(); ++k) r.string_ids.erase(r.strings[k]);
        r.strings.resize(s.strings);
        r.range_occurrence = std::move(s.occurrence);
        r.last_gpu_correlation = s.last_gpu_correlation;
        r.next_correlation = s.next_correlation;
        r.last_gpu_count = s.last_gpu_count;
        r.open_ranges = std::move(s.open_ranges);
        r.host = s.host, r.gpu = s.gpu, r.comm = s.comm;
      }
    }
  }
  Executor e(*this, plan, labels);
  return e.Go(start);
}

}  // namespace teller::sim
