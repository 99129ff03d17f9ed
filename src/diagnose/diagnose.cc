// The numeric diagnosis (include/teller/diagnose/diagnose.h); the reports are in report.cc.
#include "teller/diagnose/diagnose.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "src/diagnose/format.h"
#include "src/diagnose/suspicion.h"
#include "teller/core/parallel.h"
#include "teller/core/progress.h"
#include "teller/localize/shared.h"

namespace teller::diagnose {

namespace {

using localize::Measure;

Evidence MakeEvidence(const Trace& t, const reconstruct::Reconstruction& r,
                      const localize::Result& loc, const localize::Instance& in,
                      const localize::Options& o) {
  const localize::Family& f = loc.families[in.family];
  Evidence e;
  e.node = in.node;
  e.name = std::string(t.strings.Get(t.events.name[r.nodes.event[in.node]]));
  e.family = f.pattern;
  e.within = f.within;
  e.layer = f.layer;
  const ProcessInfo& p = t.processes[r.nodes.process[in.node]];
  e.rank = p.rank;
  e.pid = p.pid;
  e.measure = f.measure;
  e.feature = localize::MeasureFeature(f.measure);
  e.time_ns = in.time_ns;
  e.expected_ns = in.expected_ns;
  e.excess_ns = in.excess_ns;
  e.noise_ns = in.noise_ns;
  e.peers = in.peers;
  e.source = in.source;
  e.shared = in.shared;
  e.contended_by = in.contended_by;
  e.contended_stream = in.contended_stream;
  e.ratio = in.expected_ns > 0 ? static_cast<double>(in.time_ns) / in.expected_ns : 0;
  e.z = in.z;
  e.score = in.z > 0 ? static_cast<float>(in.z / (in.z + o.min_z)) : 0.0f;
  return e;
}

// What kind of root a piece of evidence is, for the category rules.
enum class RootKind {
  kAllocator,
  kCopy,
  kKernel,
  kCollective,
  kSync,
  kHostCall,
  kFramework,
  kHostIdle,  // a step range's own time: its thread outside every recorded operation
};

RootKind KindOf(const Trace& t, const reconstruct::Reconstruction& r, const Evidence& e) {
  const EventType type = t.events.type[r.nodes.event[e.node]];
  if (type == EventType::kMemcpy || type == EventType::kMemset) return RootKind::kCopy;
  if (e.measure == Measure::kTransferTime || (IsGpuWork(type) && e.layer == Layer::kComm))
    return RootKind::kCollective;
  if (IsGpuWork(type)) return RootKind::kKernel;
  if (e.measure == Measure::kSyncCost) return RootKind::kSync;
  if (IsHostCall(type)) {
    return IsAllocatorCall(ClassifyCall(e.name)) ? RootKind::kAllocator : RootKind::kHostCall;
  }
  if (e.layer == Layer::kStep) return RootKind::kHostIdle;
  return RootKind::kFramework;
}

// The fault category of a root of this kind, by the rules of "Fault type" (a kernel's:
// the operator's own, cuda_kernel).
FaultCategory CategoryOf(RootKind k) {
  switch (k) {
    case RootKind::kAllocator:
    case RootKind::kCopy:
      return FaultCategory::kMemoryResource;
    case RootKind::kKernel:
      return FaultCategory::kCudaKernel;
    case RootKind::kCollective:
      return FaultCategory::kCommunication;
    case RootKind::kSync:
    case RootKind::kHostCall:
      return FaultCategory::kRuntimeDriver;
    case RootKind::kFramework:
    case RootKind::kHostIdle:
      return FaultCategory::kSchedulingSoftware;
  }
  return FaultCategory::kSchedulingSoftware;
}

// The stretches of a step range's thread outside its children (before the first, between
// two, after the last; instant marks do not occupy it), in order: (length, the child
// before or -1, the child after or -1).
struct Stretch {
  int64_t ns = 0;
  int64_t before = -1, after = -1;
};
std::vector<Stretch> StretchesOutsideChildren(const reconstruct::Nodes& n, uint32_t node) {
  std::vector<uint32_t> children;
  for (uint32_t c = n.child_begin[node]; c < n.child_begin[node + 1]; ++c) {
    if (n.layer[n.child_index[c]] != Layer::kMark) children.push_back(n.child_index[c]);
  }
  std::sort(children.begin(), children.end(),
            [&](uint32_t a, uint32_t b) { return n.start_ns[a] < n.start_ns[b]; });
  std::vector<Stretch> out;
  int64_t covered = n.start_ns[node], last = -1;
  for (uint32_t c : children) {
    out.push_back({std::max<int64_t>(0, n.start_ns[c] - covered), last, c});
    if (n.end_ns[c] > covered) {
      covered = n.end_ns[c];
      last = c;
    }
  }
  out.push_back({std::max<int64_t>(0, n.end_ns[node] - covered), last, -1});
  return out;
}

// Where a step range's thread paused, in words: the stretch outside its operations that
// grew most against the same stretch of the process's other steps of its kind (when they
// are laid out alike, as many operations), else its longest stretch: "200.0 us more than
// in its peer steps, after aten::mm, before aten::add".
std::string WherePaused(const Trace& t, const reconstruct::Reconstruction& r, uint32_t node) {
  const reconstruct::Nodes& n = r.nodes;
  const std::vector<Stretch> own = StretchesOutsideChildren(n, node);
  const reconstruct::Step* step = nullptr;
  for (const reconstruct::Step& s : r.steps) {
    if (s.node == node) step = &s;
  }
  std::vector<std::vector<int64_t>> peers(own.size());
  if (step != nullptr) {
    for (const reconstruct::Step& s : r.steps) {
      if (s.node == node || s.process != step->process || s.kind != step->kind) continue;
      const std::vector<Stretch> other = StretchesOutsideChildren(n, s.node);
      if (other.size() != own.size()) continue;
      for (size_t k = 0; k < own.size(); ++k) peers[k].push_back(other[k].ns);
    }
  }
  const bool compared = !peers.front().empty();
  size_t best = 0;
  int64_t best_ns = INT64_MIN;
  for (size_t k = 0; k < own.size(); ++k) {
    int64_t x = own[k].ns;
    if (compared) {
      std::vector<int64_t>& v = peers[k];
      std::nth_element(v.begin(), v.begin() + static_cast<long>(v.size() / 2), v.end());
      x -= v[v.size() / 2];
    }
    if (x > best_ns) {
      best_ns = x;
      best = k;
    }
  }
  auto name = [&](int64_t c) {
    return ShortName(t.strings.Get(t.events.name[n.event[static_cast<uint32_t>(c)]]));
  };
  std::string text = compared
                         ? "where it paused: " + Duration(best_ns) + " more than in its peer steps"
                         : "its longest pause: " + Duration(own[best].ns);
  if (own[best].before >= 0) text += ", after " + name(own[best].before);
  if (own[best].after >= 0) text += ", before " + name(own[best].after);
  return text;
}

// A fault category from a step's root evidence (docs/diagnose.md, "Fault type"): the kind
// of root that holds most of the excess decides.
FaultCategory FaultType(const Trace& t, const reconstruct::Reconstruction& r,
                        const std::vector<Evidence>& roots, std::string* why) {
  if (roots.empty()) {
    *why = "the step took longer with no single operator slower than its peers";
    return FaultCategory::kSchedulingSoftware;
  }
  std::map<RootKind, int64_t> excess;
  std::map<RootKind, const Evidence*> top;
  // Kernel families per (rank, device): the GPU itself is slower only when several
  // kernel families on one device slow down together.
  std::map<std::pair<int, uint32_t>, std::set<std::string>> kernel_families;
  // Kernels slower beside work their usual instances ran without (contended): their excess
  // and the largest of them.
  int64_t contended_excess = 0;
  const Evidence* top_contended = nullptr;
  for (const Evidence& e : roots) {
    const RootKind k = KindOf(t, r, e);
    excess[k] += e.excess_ns;
    if (top.find(k) == top.end() || top[k]->excess_ns < e.excess_ns) top[k] = &e;
    if (k != RootKind::kKernel) continue;
    if (e.contended_by != 0) {
      contended_excess += e.excess_ns;
      if (top_contended == nullptr || top_contended->excess_ns < e.excess_ns) top_contended = &e;
    } else {
      kernel_families[{e.rank, t.events.device[r.nodes.event[e.node]]}].insert(e.family);
    }
  }
  RootKind best = excess.begin()->first;
  for (const auto& [k, x] : excess) {
    if (x > excess[best]) best = k;
  }
  const Evidence& e = *top[best];
  const std::string name = ShortName(e.name);
  switch (best) {
    case RootKind::kAllocator:
      *why = "allocator calls (" + name + ") take " + Duration(excess[best]) +
             " longer than their peers: memory is scarce or fragmented";
      break;
    case RootKind::kCopy:
      *why = "copies (" + name + ") are slower than their peers of the same size";
      break;
    case RootKind::kKernel: {
      // Most of the kernels' excess ran beside other work on their GPU: the sharing is the
      // cause, and what they shared it with names the fault's kind (docs/diagnose.md,
      // "Fault type").
      if (top_contended != nullptr && 2 * contended_excess >= excess[best]) {
        const auto cls = static_cast<localize::ConcurrentClass>(top_contended->contended_by - 1u);
        *why = ShortName(top_contended->name) + " ran slower beside " +
               std::string(localize::ConcurrentClassName(cls)) + " on stream " +
               std::to_string(top_contended->contended_stream) +
               ", which its usual instances ran without: kernels that shared the GPU (" +
               Duration(contended_excess) + " of their excess), not slower ones";
        switch (cls) {
          case localize::ConcurrentClass::kCommunication:
            return FaultCategory::kCommunication;
          case localize::ConcurrentClass::kCopy:
          case localize::ConcurrentClass::kMemset:
            return FaultCategory::kMemoryResource;
          case localize::ConcurrentClass::kCompute:
            break;
        }
        return FaultCategory::kSchedulingSoftware;
      }
      for (const auto& [where, families] : kernel_families) {
        if (families.size() >= 3) {
          *why = std::to_string(families.size()) + " kernel families on rank " +
                 std::to_string(where.first) + ", device " + std::to_string(where.second) +
                 " are slower together: the GPU itself is slower";
          return FaultCategory::kRuntimeDriver;
        }
      }
      *why = name + " runs slower than its peers";
      break;
    }
    case RootKind::kCollective:
      *why = "collective " + name + " transfers slower than its peers after every rank arrived";
      break;
    case RootKind::kSync:
      *why = name + " blocks long after the GPU work it waits for has finished";
      break;
    case RootKind::kHostCall:
      *why = "host runtime calls (" + name + (e.within.empty() ? "" : " in " + e.within) +
             ") take longer than their peers";
      break;
    case RootKind::kFramework:
      *why = "host-side time of " + name + " (framework or Python) is longer than its peers'";
      break;
    case RootKind::kHostIdle:
      *why = "the host thread of " + name + " spent " + Duration(excess[best]) +
             " more than its peer steps outside every recorded operation (" +
             WherePaused(t, r, e.node) +
             "): the process paused (garbage collection, CPU contention, untraced Python or "
             "data loading)";
      break;
  }
  // Its expectation is the work it likely replaced, not peers of its own.
  if (e.source == localize::PeerSource::kReplaced) {
    *why = name + ", which the baseline never ran, took " + Duration(excess[best]) +
           " more than the baseline's work it likely replaced: another kernel, algorithm or "
           "code path ran in that step";
  }
  return CategoryOf(best);
}

// The kinds of instances that deviate at a rate of their own: each measure, with copies
// apart from kernels (a copy shares its link with other traffic).
uint32_t DeviationClass(const Trace& t, const reconstruct::Reconstruction& r,
                        const localize::Instance& in, const localize::Family& f) {
  const EventType type = t.events.type[r.nodes.event[in.node]];
  const bool copy = type == EventType::kMemcpy || type == EventType::kMemset;
  return static_cast<uint32_t>(f.measure) * 2 + (copy ? 1 : 0);
}

// Per instance: 1 when it is root evidence of some step (in Result::suspicious).
std::vector<uint8_t> RootFlags(const localize::Result& loc) {
  std::vector<uint8_t> root(loc.instances.size(), 0);
  for (const auto& list : loc.suspicious) {
    for (uint32_t k : list) root[k] = 1;
  }
  return root;
}

// How the top operators group families: name pattern, layer, measure, the operator that
// makes host calls, and a copy's size class (every copy of a direction has one name; its
// size tells the operations apart).
using OperatorGroup = std::tuple<std::string, Layer, localize::Measure, std::string, uint32_t>;
OperatorGroup GroupOf(const localize::Family& f) {
  return {f.pattern, f.layer, f.measure, f.within, f.bytes_class};
}
OperatorGroup GroupOf(const TopOperator& t) {
  return {t.family, t.layer, t.measure, t.within, t.bytes_class};
}

// Top operators: the root evidence of the whole trace, grouped by family pattern, layer,
// measure, the operator that makes host calls and a copy's size, most suspicious first
// (docs/diagnose.md, "Top operators").
// The summed excess of engine step g's evidence per (unit, family): what each family
// explains on each rank (localize's root excess is the largest).
std::map<std::pair<uint32_t, uint32_t>, int64_t> ExcessByUnitAndFamily(const localize::Result& loc,
                                                                       uint32_t g) {
  std::map<std::pair<uint32_t, uint32_t>, int64_t> excess;
  for (uint32_t k : loc.suspicious[g]) {
    const localize::Instance& in = loc.instances[k];
    excess[{in.unit, in.family}] += in.excess_ns;
  }
  return excess;
}

// The evidence of engine step g that explains its abnormality (see its use in Diagnose).
std::vector<uint32_t> ExplainingRoots(const Trace& t, const reconstruct::Reconstruction& r,
                                      const localize::Result& loc, uint32_t g,
                                      const std::vector<const localize::Straggler*>& late) {
  const reconstruct::Nodes& n = r.nodes;
  const std::vector<uint32_t>& all = loc.suspicious[g];
  // The slow times of the step that explain as much: their kernels are listed together.
  std::set<std::pair<uint32_t, uint32_t>> slow;  // (unit, device)
  for (const localize::SlowTime& s : loc.slow_times) {
    if (loc.group_of_unit[s.unit] == g && s.excess_ns >= loc.group_spread_ns[g])
      slow.insert({s.unit, s.device});
  }
  std::map<std::pair<uint32_t, uint32_t>, int64_t> excess = ExcessByUnitAndFamily(loc, g);
  std::vector<uint32_t> out;
  for (uint32_t k : all) {
    const localize::Instance& in = loc.instances[k];
    bool keep = excess[{in.unit, in.family}] >= loc.group_spread_ns[g];
    keep |= localize::InSlowTime(loc, k) &&
            slow.count({in.unit, localize::SlowTimeDevice(t, r, loc, k)}) > 0;
    for (const localize::Straggler* s : late) {
      keep |= n.process[in.node] == s->process && n.start_ns[in.node] < n.start_ns[s->node];
    }
    if (keep) out.push_back(k);
  }
  return out.empty() ? all : out;
}

// The chance that a healthy step is x of its healthy spreads longer than usual (the spread
// read as a normal's sigma), as -log10.
double StepSuspicion(int64_t excess_ns, int64_t spread_ns) {
  if (excess_ns <= 0 || spread_ns <= 0) return 0;
  const double x = static_cast<double>(excess_ns) / static_cast<double>(spread_ns);
  const double tail = 0.5 * std::erfc(x / std::sqrt(2.0));
  return tail > 0 ? -std::log10(tail) : 300.0;
}

// Per family, the strongest sign that it made a step abnormal: -log10 of the chance of
// that step's root excess among healthy steps (StepSuspicion), for the family whose
// evidence on one rank is that root excess (not a straggler's gap that nothing of its own
// explains).
std::vector<double> AbnormalStepSigns(const localize::Result& loc, double step_threshold) {
  std::vector<double> sign(loc.families.size(), 0.0);
  for (uint32_t g = 0; g < loc.suspicious.size(); ++g) {
    if (!(loc.group_score[g] > step_threshold)) continue;
    for (const auto& [where, x] : ExcessByUnitAndFamily(loc, g)) {
      if (x != loc.group_excess_ns[g]) continue;
      sign[where.second] = std::max(sign[where.second],
                                    StepSuspicion(loc.group_excess_ns[g], loc.group_spread_ns[g]));
    }
  }
  return sign;
}

std::vector<TopOperator> TopOperators(const Trace& trace, const reconstruct::Reconstruction& r,
                                      const localize::Result& loc, const localize::Options& options,
                                      const localize::Model* baseline, double step_threshold) {
  const reconstruct::Nodes& n = r.nodes;
  using Key = OperatorGroup;
  struct Agg {
    TopOperator op;
    int64_t best = -1;
    double weighted = 0;
    std::map<int, int64_t> ranks;  // rank -> its excess in this family
    uint32_t cls = 0;
    int64_t straggling = 0;          // excess on a late rank before the collective it was late to
    double straggler_suspicion = 0;  // that straggler's
    double step_suspicion = 0;       // an abnormal step's, when it explains one (AbnormalStepSigns)
    Deviations deviations;           // of its instances scored against peers (not warm-up)
    // Per process, the scored instances: (start, ratio when evidence else 0).
    std::map<uint32_t, std::vector<std::pair<int64_t, double>>> sequence;
    const localize::Family* family = nullptr;
  };
  std::map<Key, Agg> agg;
  std::map<Key, uint32_t> instances;
  for (const localize::Family& f : loc.families) instances[GroupOf(f)] += f.count;
  // A late rank's work before the collective the others waited for is where the lateness
  // comes from: (engine step, process) -> the late collective's start.
  // (start of the late collective, the straggler's suspicion)
  std::map<std::pair<uint32_t, uint32_t>, std::pair<int64_t, double>> late_before;
  for (const localize::Straggler& s : loc.stragglers) {
    auto& at = late_before[{s.group, s.process}];
    at.first = std::max(at.first, n.start_ns[s.node]);
    at.second = std::max(at.second, s.suspicion);
  }
  const std::vector<uint8_t> root = RootFlags(loc);
  const std::vector<double> step_sign = AbnormalStepSigns(loc, step_threshold);
  // The deviations of each class of instances: the background a family is judged against.
  std::map<uint32_t, Deviations> classes;
  const double min_ratio = options.min_ratio;
  // Each family's group, looked up once per family (a group's key holds strings).
  std::vector<Agg*> agg_of(loc.families.size(), nullptr);
  std::vector<uint32_t> group_instances(loc.families.size(), 0);
  for (uint32_t k = 0; k < loc.instances.size(); ++k) {
    const localize::Instance& in = loc.instances[k];
    if (in.source == localize::PeerSource::kNone || in.warmup || in.consequence) continue;
    const localize::Family& f = loc.families[in.family];
    if (agg_of[in.family] == nullptr) {
      const Key key = GroupOf(f);
      agg_of[in.family] = &agg[key];
      group_instances[in.family] = instances[key];
    }
    const uint32_t cls = DeviationClass(trace, r, in, f);
    const double ratio =
        root[k] && in.expected_ns > 0 ? static_cast<double>(in.time_ns) / in.expected_ns : 0.0;
    // A deviation most operators around it share is judged as within its peers: the time
    // was slow, not this operator (teller/localize/shared.h).
    const double judged = in.shared ? 0.0 : ratio;
    classes[cls].Add(judged, min_ratio);
    Agg* a = agg_of[in.family];
    a->cls = cls;
    a->deviations.Add(judged, min_ratio);
    a->family = &f;
    a->sequence[n.process[in.node]].push_back({n.start_ns[in.node], judged});
    if (!root[k]) continue;
    a->op.family = f.pattern;
    a->op.within = f.within;
    a->op.layer = f.layer;
    a->op.measure = f.measure;
    a->op.bytes_class = f.bytes_class;
    a->op.excess_ns += in.excess_ns;
    // Each excess weighed by the share of the instance's time it is (1 - 1/ratio): a long
    // range that grew by a fifth (it waited inside) weighs less than a kernel that took
    // 3x, even when their absolute excess is alike.
    a->weighted += static_cast<double>(in.excess_ns) *
                   (in.time_ns > 0 ? static_cast<double>(in.excess_ns) / in.time_ns : 0.0);
    ++a->op.count;
    const auto late = late_before.find({loc.group_of_unit[in.unit], n.process[in.node]});
    if (late != late_before.end() && n.start_ns[in.node] < late->second.first) {
      a->straggling += in.excess_ns;
      a->straggler_suspicion = std::max(a->straggler_suspicion, late->second.second);
    }
    a->step_suspicion = std::max(a->step_suspicion, step_sign[in.family]);
    a->op.instances = group_instances[in.family];
    a->op.median_ns = static_cast<int64_t>(f.median_ns);
    a->op.max_ratio = std::max(a->op.max_ratio, ratio);
    a->ranks[trace.processes[n.process[in.node]].rank] += in.excess_ns;
    if (in.excess_ns > a->best) {
      a->best = in.excess_ns;
      a->op.name = std::string(trace.strings.Get(trace.events.name[n.event[in.node]]));
      if (f.bytes_class != 0) a->op.bytes = trace.events.bytes[n.event[in.node]];
    }
  }
  for (auto& [cls, c] : classes) c.Finish();
  // Each family's scored instances per process in time order, and how the families of
  // each class differ in their rates and clump (suspicion.h): the background a family's
  // count and runs of deviations are judged against.
  std::map<Key, FamilyDeviations> deviations_of;
  std::map<uint32_t, std::vector<Clumping::Family>> class_families;
  for (auto& [key, a] : agg) {
    a.deviations.Finish();
    FamilyDeviations& family = deviations_of[key];
    family.total = a.deviations;
    for (auto& [process, seq] : a.sequence) {
      std::sort(seq.begin(), seq.end());
      family.sequences.emplace_back();
      for (const auto& [start, ratio] : seq) family.sequences.back().push_back(ratio);
    }
    class_families[a.cls].push_back({&a.deviations, &family.sequences});
  }
  std::map<uint32_t, Overdispersion> overdispersion;
  std::map<uint32_t, Clumping> clumping;
  for (const auto& [cls, families] : class_families) {
    std::vector<const Deviations*> rates;
    for (const Clumping::Family& f : families) rates.push_back(f.deviations);
    overdispersion.emplace(cls, Overdispersion(rates, min_ratio));
    clumping.emplace(cls, Clumping(families, min_ratio));
  }
  double weighted_total = 0;
  for (const auto& [key, a] : agg) weighted_total += a.weighted;
  // The families with evidence, each judged on its own (on the cores available; each
  // suspicion into its own slot, so the ranking does not depend on the workers).
  std::vector<std::pair<const Key, Agg>*> judged;
  for (auto& entry : agg) {
    if (entry.second.op.count > 0) judged.push_back(&entry);
  }
  std::vector<double> suspicions(judged.size(), 0.0);
  ParallelFor(judged.size(), [&](size_t slot) {
    const Key& key = judged[slot]->first;
    const Agg& a = judged[slot]->second;
    const FamilyDeviations& family = deviations_of.at(key);
    const ClassRate rate(classes.at(a.cls), family.total, min_ratio);
    double suspicion =
        SuspicionAt(family, rate, &overdispersion.at(a.cls), &a.deviations, &clumping.at(a.cls));
    // With a baseline, judged against its own habit there too (suspicion.h): an operator
    // deviating as it usually does is not suspicious, however rare that is for its class.
    if (baseline != nullptr) {
      FamilyDeviations habit;
      if (const localize::Habit* h = baseline->HabitOf(*a.family)) {
        habit.sequences = h->sequences;
        for (const auto& seq : h->sequences) {
          for (double ratio : seq) habit.total.Add(ratio, min_ratio);
        }
      }
      habit.total.Finish();
      suspicion = std::min(suspicion, HabitualSuspicion(family, rate, habit));
    } else {
      // Without one, the other ranks show the habit (suspicion.h): a family that deviates
      // on every rank alike is not news on any of them.
      suspicion = std::min(suspicion, OtherRanksSuspicion(family, rate, min_ratio));
      // And its other times (suspicion.h): a family that deviates all through the trace
      // as much as in its densest stretch is not news there either.
      suspicion = std::min(suspicion, OtherTimesSuspicion(family, rate, min_ratio));
    }
    suspicions[slot] = suspicion;
  });
  std::vector<TopOperator> out;
  for (size_t slot = 0; slot < judged.size(); ++slot) {
    Agg& a = judged[slot]->second;
    a.op.score = weighted_total > 0 ? static_cast<float>(a.weighted / weighted_total) : 0.0f;
    // The rank with the most excess first (a straggler's own rank before ranks where the
    // family only varies), then by rank.
    std::vector<std::pair<int, int64_t>> by_excess(a.ranks.begin(), a.ranks.end());
    std::stable_sort(by_excess.begin(), by_excess.end(),
                     [](const auto& x, const auto& y) { return x.second > y.second; });
    a.op.ranks.clear();
    for (const auto& [rank, excess] : by_excess) a.op.ranks.push_back(rank);
    const double suspicion = suspicions[slot];
    // Deviating right before a rank made every other rank wait, or making a step abnormal
    // on its own, is a second, independent sign: the suspicions add (their chances
    // multiply). A late rank's work is what makes its step abnormal: those two are one
    // sign, the larger counts.
    a.op.suspicion = suspicion + std::max(a.straggler_suspicion, a.step_suspicion);
    a.op.straggling_ns = a.straggling;
    out.push_back(std::move(a.op));
  }
  std::sort(out.begin(), out.end(), [](const TopOperator& a, const TopOperator& b) {
    if (a.suspicion != b.suspicion) return a.suspicion > b.suspicion;
    if (a.score != b.score) return a.score > b.score;
    if (a.excess_ns != b.excess_ns) return a.excess_ns > b.excess_ns;
    return a.name < b.name;
  });
  return out;
}

std::string StepLabel(const StepDiagnosis& s) {
  return s.number >= 0 ? std::to_string(s.number) : "#" + std::to_string(s.ordinal);
}

// A GPU or host slower than its peers in a step that is not abnormal (docs/diagnose.md,
// "Slow GPUs and hosts"): a device-wide slow time (localize::SlowTime) whose excess is
// within the step's healthy spread. One rank's GPU running every kernel 1.6x slower changes
// little when kernels are a small part of the step (communication-bound ranks that wait for
// another one anyway), so no step is abnormal, yet the device is degraded and will hold the
// job up when the work shifts; a host under CPU contention likewise where the GPU bounds
// the step. A warning, with the operations that lost most.
std::vector<Finding> SlowDevicesInNormalSteps(const Trace& trace,
                                              const reconstruct::Reconstruction& r,
                                              const localize::Result& loc,
                                              const localize::Options& lo,
                                              const std::vector<StepDiagnosis>& steps) {
  std::vector<Finding> out;
  for (const localize::SlowTime& s : loc.slow_times) {
    const uint32_t g = loc.group_of_unit[s.unit];
    // An abnormal step's explanation names its slow time; a few kernels slower around one
    // time are not a slower device.
    if (steps[g].abnormal || !s.device_wide) continue;
    const bool host = s.device == localize::kHostDevice;
    std::vector<Evidence> slower;
    for (uint32_t k = 0; k < loc.instances.size(); ++k) {
      const localize::Instance& in = loc.instances[k];
      if (in.unit != s.unit || !localize::InSlowTime(loc, k) ||
          localize::SlowTimeDevice(trace, r, loc, k) != s.device)
        continue;
      slower.push_back(MakeEvidence(trace, r, loc, in, lo));
    }
    if (slower.empty()) continue;
    const double median_ratio = s.ratio;  // of all its operations, not only those kept
    std::sort(slower.begin(), slower.end(),
              [](const Evidence& a, const Evidence& b) { return a.excess_ns > b.excess_ns; });
    const Evidence& first = slower.front();
    Finding f;
    f.category = host ? FaultCategory::kSchedulingSoftware : FaultCategory::kRuntimeDriver;
    f.kind = host ? "slow_host" : "slow_gpu";
    f.severity = "warning";
    f.rank = first.rank;
    f.pid = first.pid;
    f.ts_ns = loc.units[s.unit].start_ns;
    const std::string where = host ? "rank " + std::to_string(first.rank) + " (pid " +
                                         std::to_string(first.pid) + ") ran its host operations "
                                   : "rank " + std::to_string(first.rank) + ", device " +
                                         std::to_string(s.device) + " ran its kernels ";
    f.title = where + Fixed(median_ratio, 2) + "x their peers' time in step " +
              StepLabel(steps[g]) + " (" + std::to_string(s.families) +
              (host ? " operation families)" : " kernel families)");
    f.explanation =
        std::string(host ? "The host itself was slower (CPU contention: other processes or "
                           "threads on its cores, a throttled or oversubscribed CPU): its "
                           "operators' own time and runtime calls took a median "
                         : "The GPU itself was slower (clocks lowered by power or heat, a "
                           "degraded device, another process on it): its kernels took a "
                           "median ") +
        Fixed(median_ratio, 2) + "x their " + localize::PeerSourceName(first.source) +
        " peers' time; the " + std::to_string(slower.size()) +
        " that share the slowdown (at least the square root of that ratio) lost " +
        Duration(s.excess_ns) + " in all. That is within the step's healthy spread (" +
        Duration(loc.group_spread_ns[g]) + " of " + Duration(loc.group_duration_ns[g]) +
        "), so the step is not abnormal.";
    for (size_t i = 0; i < slower.size() && i < 3; ++i) {
      f.details.push_back(ShortName(slower[i].name) + " took " + Duration(slower[i].time_ns) +
                          " against " + Duration(slower[i].expected_ns));
    }
    out.push_back(std::move(f));
  }
  return out;  // by unit, then device (the host last)
}

// A slowdown that lasts the whole trace (docs/diagnose.md, "Persistent slowdowns"): a
// family whose instances on one process are mostly evidence from its first quarter to its
// last. Each step then carries a small share of the excess, within its own healthy spread,
// so few steps are abnormal while the trace as a whole is slower than its peers (the other
// ranks, or the baseline) say it should be, by more than one of its steps' healthy spread.
// A finding of its own, for the top operators whose suspicion passes
// kPersistentMinSuspicion.
constexpr double kPersistentMinSuspicion = 3;  // a chance of 1 in 1,000 of being natural
constexpr uint32_t kPersistentMinEvidence = 12;
constexpr double kPersistentShare = 0.5;             // of the process's scored instances
constexpr double kPersistentQuarterShare = 1.0 / 3;  // in each quarter of them

std::vector<Finding> PersistentSlowdowns(const Trace& trace, const reconstruct::Reconstruction& r,
                                         const localize::Result& loc, const localize::Options& lo,
                                         const std::vector<TopOperator>& top, size_t steps,
                                         size_t abnormal_steps) {
  const reconstruct::Nodes& n = r.nodes;
  using Key = OperatorGroup;
  std::set<Key> suspicious;
  for (const TopOperator& t : top) {
    if (t.suspicion >= kPersistentMinSuspicion) suspicious.insert(GroupOf(t));
  }
  const std::vector<uint8_t> root = RootFlags(loc);
  // Each family's place among the suspicious groups (in the set's order), or -1, found once
  // per family (a group's key holds strings).
  const std::vector<Key> groups(suspicious.begin(), suspicious.end());
  std::vector<int32_t> group_of(loc.families.size(), -1);
  for (size_t f = 0; f < loc.families.size(); ++f) {
    const Key key = GroupOf(loc.families[f]);
    const auto it = std::lower_bound(groups.begin(), groups.end(), key);
    if (it != groups.end() && *it == key) group_of[f] = static_cast<int32_t>(it - groups.begin());
  }
  // Per (group, process), in the groups' order: the scored instances in time order,
  // evidence or not.
  std::map<std::pair<int32_t, uint32_t>, std::vector<std::pair<int64_t, uint32_t>>> scored;
  for (uint32_t k = 0; k < loc.instances.size(); ++k) {
    const localize::Instance& in = loc.instances[k];
    if (in.source == localize::PeerSource::kNone || in.warmup || in.consequence) continue;
    const int32_t g = group_of[in.family];
    if (g < 0) continue;
    scored[{g, n.process[in.node]}].push_back({n.start_ns[in.node], k});
  }
  std::vector<Finding> out;
  for (auto& [where, seq] : scored) {
    std::sort(seq.begin(), seq.end());
    auto is_evidence = [&](uint32_t k) { return root[k] && !loc.instances[k].shared; };
    std::vector<Evidence> evidence;
    size_t quarter_evidence[4] = {}, quarter_size[4] = {};
    for (size_t i = 0; i < seq.size(); ++i) {
      const size_t q = 4 * i / seq.size();
      ++quarter_size[q];
      if (!is_evidence(seq[i].second)) continue;
      ++quarter_evidence[q];
      evidence.push_back(MakeEvidence(trace, r, loc, loc.instances[seq[i].second], lo));
    }
    if (evidence.size() < kPersistentMinEvidence ||
        static_cast<double>(evidence.size()) < kPersistentShare * static_cast<double>(seq.size()))
      continue;
    bool throughout = true;
    for (int q = 0; q < 4; ++q) {
      throughout &= static_cast<double>(quarter_evidence[q]) >=
                    kPersistentQuarterShare * static_cast<double>(quarter_size[q]);
    }
    if (!throughout) continue;
    // Through the trace, not one step of it: its evidence falls in at least half the steps
    // of the process (an operator that ran in one step only, such as one run in place of
    // another, is that step's).
    std::set<uint32_t> process_steps, evidence_steps;
    for (const auto& [start, k] : seq) {
      const uint32_t g = loc.group_of_unit[loc.instances[k].unit];
      process_steps.insert(g);
      if (is_evidence(k)) evidence_steps.insert(g);
    }
    for (uint32_t u = 0; u < loc.units.size(); ++u) {
      if (loc.units[u].process == where.second) process_steps.insert(loc.group_of_unit[u]);
    }
    if (process_steps.size() > 1 && 2 * evidence_steps.size() < process_steps.size()) continue;
    std::vector<double> ratios;
    int64_t excess = 0;
    for (const Evidence& e : evidence) {
      ratios.push_back(e.ratio);
      excess += e.excess_ns;
    }
    // What it adds up to must be more than one of its steps may vary by itself: less than
    // that, and the whole trace is as slow as one healthy step's spread would allow (a
    // launch call 1 us slower 20 times in a 20 ms step is no finding).
    std::vector<int64_t> spreads;
    for (const auto& [start, k] : seq) {
      if (is_evidence(k))
        spreads.push_back(loc.group_spread_ns[loc.group_of_unit[loc.instances[k].unit]]);
    }
    std::nth_element(spreads.begin(), spreads.begin() + static_cast<long>(spreads.size() / 2),
                     spreads.end());
    if (excess < spreads[spreads.size() / 2]) continue;
    std::nth_element(ratios.begin(), ratios.begin() + static_cast<long>(ratios.size() / 2),
                     ratios.end());
    const double median_ratio = ratios[ratios.size() / 2];
    std::string why;
    Finding f;
    f.category = FaultType(trace, r, evidence, &why);
    f.kind = "persistent_slowdown";
    f.severity = "error";
    const Evidence& first = evidence.front();
    f.rank = first.rank;
    f.pid = first.pid;
    f.ts_ns = n.start_ns[first.node];
    f.title = first.name + " on rank " + std::to_string(first.rank) + " is " +
              Fixed(median_ratio, 2) + "x its expected time in " + std::to_string(evidence.size()) +
              " of its " + std::to_string(seq.size()) + " instances, all through the trace";
    f.explanation =
        "A slowdown that lasts the whole trace rather than an abnormal window: " + why +
        " (median " + Fixed(median_ratio, 2) + "x against " +
        localize::PeerSourceName(first.source) + " peers, " + Duration(excess) +
        " in all). Each step carries a small share of it, within its own healthy spread, so " +
        std::to_string(abnormal_steps) + " of " + std::to_string(steps) +
        " steps are abnormal; the trace as a whole is slower than its peers say it should be.";
    f.details.push_back("first evidence: " + ShortName(first.name) + " took " +
                        Duration(first.time_ns) + " against " + Duration(first.expected_ns));
    for (int q = 0; q < 4; ++q) {
      f.details.push_back("quarter " + std::to_string(q + 1) +
                          " of its instances: " + std::to_string(quarter_evidence[q]) + " of " +
                          std::to_string(quarter_size[q]) + " slower than their peers");
    }
    out.push_back(std::move(f));
  }
  return out;  // in key order (family, process): the same on every run
}

// Operators the baseline never ran (docs/diagnose.md, "Operators the baseline never
// ran"): a kernel the incident ran in place of the usual one (a fallback path, another
// algorithm chosen for other shapes, the wrong kernel for a request) has no peers in the
// baseline and, when its instances are alike, none in the trace either, so none of it is
// evidence however long it runs. One finding lists them (name pattern, layer and measure;
// at least min_excess_ns of time in all), the most time first, at most kNewOperatorsListed.
constexpr size_t kNewOperatorsListed = 5;
// A baseline that never ran operators taking this share of the trace's operator time or
// more is likely another program or setup: a substitution is a small part of a step, and
// two runs of one program on different GPUs share most operators (framework ops, copies,
// collectives) even when their GEMM kernels all differ.
constexpr double kUnlikeBaselineShare = 1.0 / 3;

std::vector<Finding> NewOperators(const Trace& trace, const reconstruct::Reconstruction& r,
                                  const localize::Result& loc, const localize::Options& lo,
                                  const localize::Model& baseline,
                                  const std::vector<StepDiagnosis>& steps) {
  using Key = std::tuple<std::string, Layer, localize::Measure>;
  struct Operator {
    uint32_t instances = 0;
    int64_t total_ns = 0;
    std::map<uint32_t, int64_t> per_unit;  // unit -> its time there
    // unit -> what the work missing there took in the baseline, its share (charged new work
    // that was evidence, PeerSource::kReplaced)
    std::map<uint32_t, int64_t> charged;
    uint32_t longest = UINT32_MAX;  // its instance with the most time
  };
  std::vector<uint8_t> is_new(loc.families.size(), 0);
  for (size_t f = 0; f < loc.families.size(); ++f) {
    is_new[f] = loc.families[f].layer != Layer::kStep && !baseline.Ran(loc.families[f]);
  }
  std::map<Key, Operator> ops;
  for (uint32_t k = 0; k < loc.instances.size(); ++k) {
    const localize::Instance& in = loc.instances[k];
    if (!is_new[in.family]) continue;
    const localize::Family& f = loc.families[in.family];
    Operator& op = ops[{f.pattern, f.layer, f.measure}];
    ++op.instances;
    op.total_ns += in.time_ns;
    op.per_unit[in.unit] += in.time_ns;
    if (in.source == localize::PeerSource::kReplaced) op.charged[in.unit] += in.expected_ns;
    if (op.longest == UINT32_MAX || in.time_ns > loc.instances[op.longest].time_ns) op.longest = k;
  }
  // The share of the trace's operator time (every measure, step ranges left out) that
  // operators the baseline never ran take.
  int64_t all_ns = 0, new_ns = 0;
  for (const localize::Instance& in : loc.instances) {
    if (loc.families[in.family].layer == Layer::kStep) continue;
    all_ns += in.time_ns;
    if (is_new[in.family]) new_ns += in.time_ns;
  }
  const double new_share =
      all_ns > 0 ? static_cast<double>(new_ns) / static_cast<double>(all_ns) : 0.0;
  std::vector<const Operator*> listed;
  int64_t total = 0;
  for (const auto& [key, op] : ops) {
    if (op.total_ns < lo.min_excess_ns) continue;
    listed.push_back(&op);
    total += op.total_ns;
  }
  if (listed.empty()) return {};
  std::sort(listed.begin(), listed.end(),
            [](const Operator* a, const Operator* b) { return a->total_ns > b->total_ns; });
  // Where an operator took the most time: its unit, and that time.
  auto most = [](const Operator& op) {
    std::pair<uint32_t, int64_t> best{0, -1};
    for (const auto& [unit, ns] : op.per_unit) {
      if (ns > best.second) best = {unit, ns};
    }
    return best;
  };
  auto rank_of = [&](uint32_t unit) {
    return std::to_string(trace.processes[loc.units[unit].process].rank);
  };
  const Operator& top = *listed.front();
  const Evidence e = MakeEvidence(trace, r, loc, loc.instances[top.longest], lo);
  const auto [unit, unit_ns] = most(top);
  const uint32_t g = loc.group_of_unit[unit];
  // What it likely ran in place of: operators of its layer that every baseline step of
  // this step's kind ran and this step did not.
  std::set<std::pair<std::string, Layer>> ran_here;
  for (const localize::Instance& in : loc.instances) {
    if (loc.group_of_unit[in.unit] != g) continue;
    ran_here.insert({loc.families[in.family].pattern, loc.families[in.family].layer});
  }
  std::vector<std::string> instead;
  for (const localize::Model::Operator& o : baseline.EveryStepRan(loc.group_kind[g])) {
    if (o.layer == e.layer && ran_here.count({o.pattern, o.layer}) == 0)
      instead.push_back(ShortName(o.name, 64));
  }
  std::string in_place;
  if (!instead.empty()) {
    in_place = " It ran none of ";
    for (size_t i = 0; i < instead.size() && i < 3; ++i)
      in_place += (i > 0 ? (i + 1 == std::min<size_t>(instead.size(), 3) ? " or " : ", ") : "") +
                  instead[i];
    if (instead.size() > 3) in_place += " (and " + std::to_string(instead.size() - 3) + " more)";
    in_place += " there, which every step of its kind in the baseline ran: it likely ran in " +
                std::string(instead.size() == 1 ? "its" : "their") + " place.";
  }
  Finding f;
  f.category = CategoryOf(KindOf(trace, r, e));
  f.kind = "new_operators";
  f.severity = "warning";
  f.rank = e.rank;
  f.pid = e.pid;
  f.ts_ns = r.nodes.start_ns[e.node];
  f.title = std::to_string(listed.size()) + " operator" + (listed.size() == 1 ? "" : "s") +
            " the baseline never ran (" + Duration(total) + " in all), the most time: " + e.name +
            " ran " + std::to_string(top.instances) + " time" + (top.instances == 1 ? "" : "s") +
            " (" + Duration(top.total_ns) + ")";
  // Charged in its unit: more than the work missing there took, by the evidence margins.
  const auto charged = top.charged.find(unit);
  std::string against;
  if (!baseline.HasUnitsOf(loc.group_kind[g])) {
    against = "; the baseline has no step of its kind (" +
              (loc.group_kind[g].empty() ? std::string("iterations or whole timelines")
                                         : loc.group_kind[g]) +
              ") to compare it with.";
  } else if (charged == top.charged.end()) {
    against =
        ", not more than the work missing from that step took in the baseline by the "
        "evidence margins.";
  } else {
    const int64_t more = unit_ns - charged->second;
    against = " against " + Duration(charged->second) +
              " for the work missing from that step in the baseline: " + Duration(more) +
              " more, " + (more >= loc.group_spread_ns[g] ? "at least" : "less than") +
              " that step's healthy spread (" + Duration(loc.group_spread_ns[g]) + " of " +
              Duration(loc.group_duration_ns[g]) + ").";
  }
  f.explanation =
      "Operators the baseline never ran have no peers there: a fallback path, another "
      "algorithm or kernel chosen for other shapes, or a different code path in the model or "
      "the engine. Their time in a step is compared with what the baseline's steps of its "
      "kind took for the work missing from it (the instances of their layer it did not run). " +
      ShortName(e.name) + " took " + Duration(unit_ns) + " in step " + StepLabel(steps[g]) +
      " on rank " + rank_of(unit) + against +
      (in_place.empty() ? " Compare its steps with the baseline's to see what they ran instead."
                        : in_place) +
      " Operators the baseline never ran take " + Fixed(100.0 * new_share, 1) +
      "% of this trace's operator time" +
      (new_share >= kUnlikeBaselineShare
           ? ": the baseline is likely not a run of the same program and setup (another "
             "model, GPU or library version), and what is compared with it says little."
           : ".");
  for (size_t i = 0; i < listed.size() && i < kNewOperatorsListed; ++i) {
    const Operator& op = *listed[i];
    const localize::Instance& in = loc.instances[op.longest];
    const auto [u, ns] = most(op);
    f.details.push_back(ShortName(trace.strings.Get(trace.events.name[r.nodes.event[in.node]])) +
                        " (" + std::string(LayerName(loc.families[in.family].layer)) + ", " +
                        localize::MeasureName(loc.families[in.family].measure) +
                        "): " + std::to_string(op.instances) + " instance" +
                        (op.instances == 1 ? "" : "s") + ", " + Duration(op.total_ns) +
                        "; the most in step " + StepLabel(steps[loc.group_of_unit[u]]) +
                        " on rank " + rank_of(u) + " (" + Duration(ns) + ")");
  }
  if (listed.size() > kNewOperatorsListed) {
    f.details.push_back("and " + std::to_string(listed.size() - kNewOperatorsListed) + " more");
  }
  return {f};
}

}  // namespace

const char* EvidenceRole(const Evidence& e) {
  return e.consequence ? "consequence" : e.minor ? "minor" : "root";
}

Diagnosis Diagnose(const Trace& trace, const reconstruct::Reconstruction& r, const Options& options,
                   const localize::Model* baseline) {
  Diagnosis d;
  d.mode = baseline != nullptr ? "baseline" : "self";
  const localize::Result loc = localize::Localize(trace, r, options.localize, baseline);
  ProgressTask progress("deciding steps and causes", 0);
  d.scope = loc.whole_trace ? "whole_trace" : loc.iterations ? "iterations" : "steps";
  d.findings = FindFailures(
      trace, &r, options.log_signatures ? *options.log_signatures : *logs::SignatureSet::BuiltIn());
  const reconstruct::Nodes& n = r.nodes;
  const localize::Options& lo = options.localize;
  for (const CounterEntry& c : trace.counters.entries()) {
    if (c.value != 0 && c.severity != CounterSeverity::kInfo)
      d.damage.emplace_back(std::string(c.name), c.value);
  }
  // Stragglers per engine step.
  std::map<uint32_t, std::vector<const localize::Straggler*>> stragglers_of;
  for (const localize::Straggler& s : loc.stragglers) stragglers_of[s.group].push_back(&s);
  for (uint32_t g = 0; g < loc.group_units.size(); ++g) {
    StepDiagnosis sd;
    sd.number = loc.group_number[g];
    sd.has_seq = sd.number >= 0;
    sd.seq = sd.has_seq ? static_cast<uint64_t>(sd.number) : 0;
    sd.start_ns = INT64_MAX;
    sd.end_ns = INT64_MIN;
    for (uint32_t u : loc.group_units[g]) {
      const localize::Unit& unit = loc.units[u];
      const ProcessInfo& p = trace.processes[unit.process];
      sd.ranks.push_back(RankRef{p.rank, p.pid});
      sd.start_ns = std::min(sd.start_ns, unit.start_ns);
      sd.end_ns = std::max(sd.end_ns, unit.end_ns);
      if (unit.step < 0) {
        sd.ordinal = g;
        sd.kind = unit.iteration >= 0                           ? "iteration"
                  : unit.iteration == localize::Unit::kPrologue ? "prologue"
                  : unit.iteration == localize::Unit::kEpilogue ? "epilogue"
                                                                : "whole trace";
        continue;
      }
      const reconstruct::Step& st = r.steps[unit.step];
      if (sd.rank_steps.empty()) {
        sd.ordinal = st.ordinal;
        sd.kind = st.kind != 0 ? std::string(trace.strings.Get(st.kind)) : "";
      }
      // Known only when every rank's marker of the step says which requests it prefills.
      const bool said = reconstruct::ParseStepPrefill(
          trace.strings.Get(trace.events.name[r.nodes.event[st.node]]), &sd.prefilled);
      sd.prefill_known = (sd.rank_steps.empty() || sd.prefill_known) && said;
      sd.rank_steps.push_back(static_cast<uint32_t>(unit.step));
      for (StringId q : st.requests) {
        const std::string id(trace.strings.Get(q));
        if (std::find(sd.requests.begin(), sd.requests.end(), id) == sd.requests.end())
          sd.requests.push_back(id);
      }
      for (uint32_t row : st.logs) {
        if (std::find(sd.logs.begin(), sd.logs.end(), row) == sd.logs.end()) sd.logs.push_back(row);
      }
    }
    sd.duration_ns = loc.group_duration_ns[g];
    sd.excess_ns = loc.group_excess_ns[g];
    sd.spread_ns = loc.group_spread_ns[g];
    sd.score = loc.group_score[g];
    sd.abnormal = sd.score > options.step_threshold;
    d.evidence += loc.suspicious[g].size();
    if (!sd.abnormal) {
      d.steps.push_back(std::move(sd));
      continue;
    }
    ++d.abnormal_steps;
    // Roots, most excess first.
    const auto most_excess_first = [&](uint32_t a, uint32_t b) {
      const localize::Instance &x = loc.instances[a], &y = loc.instances[b];
      if (x.excess_ns != y.excess_ns) return x.excess_ns > y.excess_ns;
      return x.node < y.node;
    };
    std::vector<uint32_t> roots = loc.suspicious[g];
    std::sort(roots.begin(), roots.end(), most_excess_first);
    for (uint32_t k : roots) {
      Evidence e = MakeEvidence(trace, r, loc, loc.instances[k], lo);
      if (e.layer == Layer::kComm)
        sd.horizontal = true;
      else
        sd.vertical = true;
      if (sd.evidence.size() < options.max_evidence) sd.evidence.push_back(std::move(e));
    }
    // The category and the explanation come from the evidence that explains the step's
    // abnormality: the families whose excess in the step on their rank is at least the
    // step's healthy spread (less is within what steps naturally vary by), a slow time's
    // kernels, and a late rank's work before the collective the others waited for; every
    // root when none does (a late rank that nothing of its own explains).
    std::vector<uint32_t> explaining = ExplainingRoots(trace, r, loc, g, stragglers_of[g]);
    std::sort(explaining.begin(), explaining.end(), most_excess_first);
    std::vector<Evidence> all;
    std::set<uint32_t> explaining_nodes;
    for (uint32_t k : explaining) {
      all.push_back(MakeEvidence(trace, r, loc, loc.instances[k], lo));
      explaining_nodes.insert(loc.instances[k].node);
    }
    for (Evidence& e : sd.evidence) e.minor = explaining_nodes.count(e.node) == 0;
    // Consequences: the collectives that waited for a late rank of this step.
    std::set<uint32_t> late_processes;
    for (const localize::Straggler* s : stragglers_of[g]) late_processes.insert(s->process);
    std::vector<uint32_t> waits;
    for (uint32_t k : loc.waits[g]) {
      const localize::Instance& in = loc.instances[k];
      if (late_processes.count(static_cast<uint32_t>(in.waited_for_process)) &&
          in.wait_ns >= lo.min_excess_ns)
        waits.push_back(k);
    }
    std::sort(waits.begin(), waits.end(), [&](uint32_t a, uint32_t b) {
      return loc.instances[a].wait_ns > loc.instances[b].wait_ns;
    });
    for (uint32_t k : loc.unseen_waits[g]) {
      if (sd.consequences.size() >= options.max_evidence) break;
      const localize::Instance& in = loc.instances[k];
      Evidence e = MakeEvidence(trace, r, loc, in, lo);
      e.consequence = true;  // waited for ranks not in the trace (waited_for_rank -1)
      sd.consequences.push_back(std::move(e));
    }
    for (uint32_t k : waits) {
      if (sd.consequences.size() >= options.max_evidence) break;
      const localize::Instance& in = loc.instances[k];
      Evidence e = MakeEvidence(trace, r, loc, in, lo);
      e.consequence = true;
      e.time_ns = n.end_ns[in.node] - n.start_ns[in.node];
      e.excess_ns = in.wait_ns;
      e.waited_for_rank = trace.processes[static_cast<uint32_t>(in.waited_for_process)].rank;
      sd.consequences.push_back(std::move(e));
    }
    if (!stragglers_of[g].empty()) sd.horizontal = true;
    if (!sd.horizontal) sd.vertical = true;
    std::vector<uint32_t> slice_nodes;
    for (const Evidence& e : all) slice_nodes.push_back(e.node);
    const slice::Slice sl =
        slice::BuildSlice(trace, r, loc.group_roots[g], slice_nodes, options.slice);
    sd.slice_nodes = sl.nodes.size();
    sd.step_nodes = sl.step_nodes;
    std::string why;
    sd.fault_type = FaultCategoryName(FaultType(trace, r, all, &why));
    // A late rank that no slower work of its own explains, holding the others up longer
    // than any root evidence of the step: the host did not run it (a stalled worker, a
    // paused process), whatever else was a little slow.
    const localize::Straggler* idle = nullptr;
    for (const localize::Straggler* s : stragglers_of[g]) {
      if (s->unexplained && (idle == nullptr || s->gap_ns > idle->gap_ns)) idle = s;
    }
    int64_t top_root = 0;
    for (const Evidence& e : all) top_root = std::max(top_root, e.excess_ns);
    const bool idle_first = idle != nullptr && idle->gap_ns > top_root;
    // A slowed host (localize::SlowDevice on kHostDevice) whose shared slowdown is the
    // step's root excess: no operator of it was slow, the host running them all was.
    for (const localize::SlowTime& s : loc.slow_times) {
      if (idle_first || loc.group_of_unit[s.unit] != g || s.device != localize::kHostDevice ||
          !s.device_wide || s.excess_ns < loc.group_excess_ns[g])
        continue;
      sd.fault_type = FaultCategoryName(FaultCategory::kSchedulingSoftware);
      why = std::to_string(s.families) + " host operation families on rank " +
            std::to_string(trace.processes[loc.units[s.unit].process].rank) +
            " are slower together (a median " + Fixed(s.ratio, 2) +
            "x their peers' time): the host itself was slower (CPU contention: other "
            "processes or threads on its cores, a throttled or oversubscribed CPU)";
    }
    if (idle_first) {
      sd.fault_type = FaultCategoryName(FaultCategory::kSchedulingSoftware);
      why = "rank " + std::to_string(trace.processes[idle->process].rank) +
            " reached the collective late with no slower work of its own: its host did not run "
            "it (a stalled worker, a paused or descheduled process)";
    }
    std::ostringstream x;
    x << "Step " << StepLabel(sd);
    if (!sd.kind.empty() && sd.kind != "whole trace") x << " (" << sd.kind << ")";
    x << " is abnormal (score " << Fixed(sd.score, 2) << "): its root excess "
      << Duration(sd.excess_ns) << " is "
      << Fixed(sd.spread_ns > 0 ? double(sd.excess_ns) / sd.spread_ns : 0, 1)
      << " times its healthy spread (" << Duration(sd.spread_ns) << " of "
      << Duration(sd.duration_ns) << ")";
    // The late rank first when its idling is the step's root; else the slowest work first.
    std::ostringstream late_text, work_text;
    for (const localize::Straggler* s : stragglers_of[g]) {
      if (idle != nullptr) s = idle;
      late_text << ". Rank " << trace.processes[s->process].rank << " was late by "
                << Duration(s->late_ns) << " to "
                << ShortName(trace.strings.Get(trace.events.name[n.event[s->node]])) << ": "
                << s->waiting << " ranks waited for it";
      if (s->unexplained) {
        late_text << "; no slower work of its own explains it";
        if (2 * s->late_start_ns >= s->gap_ns) {
          late_text << ": it began the step " << Duration(s->late_start_ns)
                    << " after the other ranks";
        }
      }
      break;
    }
    if (!all.empty()) {
      const Evidence& top = all.front();
      // A step range's own time is its thread's time outside every recorded operation.
      work_text << ". " << ShortName(top.name) << " on rank " << top.rank
                << (top.layer == Layer::kStep ? " spent " : " took ") << Duration(top.time_ns)
                << (top.layer == Layer::kStep ? " outside its operations" : "") << " against "
                << Duration(top.expected_ns);
      if (top.source == localize::PeerSource::kReplaced) {
        // An operator the baseline never ran: its share of the work missing from the step.
        work_text << " for the baseline's work it likely replaced (the baseline never ran it; "
                  << Fixed(top.ratio, 2) << "x)";
      } else {
        work_text << " for its " << top.peers << " peers (" << localize::PeerSourceName(top.source)
                  << ", " << Fixed(top.ratio, 2) << "x)";
      }
      std::set<std::string> others;
      for (size_t i = 1; i < all.size(); ++i) others.insert(ShortName(all[i].name));
      others.erase(ShortName(top.name));
      if (!others.empty()) {
        work_text << "; also ";
        size_t k = 0;
        for (const std::string& o : others) {
          if (k++ == 3) break;
          work_text << (k > 1 ? ", " : "") << o;
        }
      }
    }
    x << (idle_first ? late_text.str() + work_text.str() : work_text.str() + late_text.str());
    x << ". Likely " << sd.fault_type << ": " << why << ".";
    if (!sd.requests.empty()) {
      x << " Requests: " << sd.requests.front();
      if (sd.requests.size() > 1) x << " and " << sd.requests.size() - 1 << " more";
      x << ".";
    }
    size_t warnings = 0;
    for (uint32_t row : sd.logs) warnings += trace.logs.level[row] >= LogLevel::kWarning;
    if (warnings > 0) x << " " << warnings << " warning/error log line(s) in the step window.";
    sd.explanation = x.str();
    d.steps.push_back(std::move(sd));
  }
  // Stragglers, as the report names them.
  for (const localize::Straggler& s : loc.stragglers) {
    StragglerReport sr;
    const ProcessInfo& p = trace.processes[s.process];
    sr.rank = p.rank;
    sr.pid = p.pid;
    sr.step = loc.group_number[s.group] >= 0 ? loc.group_number[s.group] : d.steps[s.group].ordinal;
    sr.late_ns = s.late_ns;
    sr.collective = std::string(trace.strings.Get(trace.events.name[n.event[s.node]]));
    sr.waiting = s.waiting;
    d.stragglers.push_back(std::move(sr));
  }
  AddLogEvidence(trace, options.log, options.step_threshold, &d);
  d.top_operators = TopOperators(trace, r, loc, lo, baseline, options.step_threshold);
  // Errors come first in the findings (docs/diagnose.md, "Failures"): after the others'.
  std::vector<Finding> persistent =
      PersistentSlowdowns(trace, r, loc, lo, d.top_operators, d.steps.size(), d.abnormal_steps);
  const auto first_warning = std::find_if(d.findings.begin(), d.findings.end(),
                                          [](const Finding& f) { return f.severity != "error"; });
  d.findings.insert(first_warning, std::make_move_iterator(persistent.begin()),
                    std::make_move_iterator(persistent.end()));
  std::vector<Finding> slow = SlowDevicesInNormalSteps(trace, r, loc, lo, d.steps);
  d.findings.insert(d.findings.end(), std::make_move_iterator(slow.begin()),
                    std::make_move_iterator(slow.end()));
  if (baseline != nullptr) {
    std::vector<Finding> fresh = NewOperators(trace, r, loc, lo, *baseline, d.steps);
    d.findings.insert(d.findings.end(), std::make_move_iterator(fresh.begin()),
                      std::make_move_iterator(fresh.end()));
  }
  if (d.top_operators.size() > options.top_k) d.top_operators.resize(options.top_k);
  return d;
}

}  // namespace teller::diagnose
