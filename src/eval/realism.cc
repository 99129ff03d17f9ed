// Realism report (include/teller/eval/realism.h, docs/realism.md).
#include "teller/eval/realism.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <numeric>
#include <unordered_map>

#include "teller/core/json_writer.h"
#include "teller/core/stats.h"
#include "teller/ingest/ingest.h"
#include "teller/reconstruct/op_class.h"
#include "teller/reconstruct/reconstruct.h"
#include "teller/reconstruct/step_ranges.h"

namespace teller::eval {
using reconstruct::ClassifyGpuEvent;
using reconstruct::ClassifyKernelName;
using reconstruct::kOpClassCount;
using reconstruct::OpClass;
using reconstruct::OpClassName;
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// Period search (FindPeriod): layers have fewer kernels than this.
constexpr uint32_t kMaxPeriod = 256;
constexpr double kPeriodTolerance = 0.03;
constexpr double kMinPeriodicity = 0.7;
// Step segments examined per trace for the layer pattern (evenly spread).
constexpr size_t kMaxSegments = 32;
// Segments shorter than this cannot show three layers of a real model.
constexpr size_t kMinSegment = 12;

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// One trace, prepared for comparison: GPU work items with their class, duration and the
// step (by kind) they belong to, and the per-step sequences.
struct Prepared {
  struct Item {
    uint32_t event;
    uint32_t process;
    OpClass op_class;
    int64_t start;
    int64_t duration;
    int32_t step;  // index into steps, -1 = outside every step
  };
  struct StepInfo {
    uint32_t process;
    int64_t start, end;
    std::string kind;
  };
  std::vector<Item> items;
  std::vector<StepInfo> steps;
  uint64_t processes = 0;
};

// Steps of one trace: its outermost STEP-layer ranges (reconstruct::FindStepRanges; a
// `teller.step` range holds the engine's own marker, which lends its kind when the outer
// has none).
std::vector<Prepared::StepInfo> FindSteps(const Trace& trace) {
  auto classifier = reconstruct::Classifier::BuiltIn();
  reconstruct::LayerCache layers(*classifier, trace);
  const std::vector<int64_t> range_end =
      reconstruct::RangeEnds(trace, trace.events.start_ns, trace.events.end_ns);
  std::vector<Prepared::StepInfo> steps;
  for (reconstruct::StepRange& s : reconstruct::FindStepRanges(trace, layers, range_end))
    steps.push_back({s.process, s.start, s.end, std::move(s.kind)});
  return steps;
}

// Index of the step of `process` whose interval holds `when`, -1 when none (steps are
// sorted by process, then start).
int32_t StepOf(const std::vector<Prepared::StepInfo>& steps, uint32_t process, int64_t when) {
  auto first = std::upper_bound(
      steps.begin(), steps.end(), std::make_pair(process, when),
      [](const std::pair<uint32_t, int64_t>& key, const Prepared::StepInfo& s) {
        return key.first != s.process ? key.first < s.process : key.second < s.start;
      });
  if (first == steps.begin()) return -1;
  const auto it = std::prev(first);
  if (it->process == process && when <= it->end) return static_cast<int32_t>(it - steps.begin());
  return -1;
}

Prepared Prepare(const Trace& trace) {
  Prepared out;
  out.steps = FindSteps(trace);
  const EventTable& ev = trace.events;
  // Launch time of GPU work: the start of the host call with its correlation id.
  std::unordered_map<uint64_t, int64_t> launch;
  for (uint32_t i = 0; i < ev.size(); ++i) {
    if (IsHostCall(ev.type[i]) && ev.correlation[i] != 0) {
      const uint64_t key = (static_cast<uint64_t>(ev.process[i]) << 40) ^ ev.correlation[i];
      launch.emplace(key, ev.start_ns[i]);
    }
  }
  std::vector<uint8_t> used_process(trace.processes.size(), 0);
  std::vector<int8_t> cache(trace.strings.size(), -1);
  for (uint32_t i = 0; i < ev.size(); ++i) {
    const EventType t = ev.type[i];
    if (!IsGpuWork(t)) continue;
    OpClass c;
    if (t == EventType::kKernel) {
      int8_t& slot = cache[ev.name[i]];
      if (slot < 0) slot = static_cast<int8_t>(ClassifyKernelName(trace.strings.Get(ev.name[i])));
      c = static_cast<OpClass>(slot);
    } else {
      c = t == EventType::kMemcpy ? OpClass::kCopy : OpClass::kElementwise;
    }
    int64_t when = ev.start_ns[i];
    if (ev.correlation[i] != 0) {
      const auto it = launch.find((static_cast<uint64_t>(ev.process[i]) << 40) ^ ev.correlation[i]);
      if (it != launch.end()) when = it->second;
    }
    // The step of the same process whose interval holds the launch time.
    const int32_t step = StepOf(out.steps, ev.process[i], when);
    if (ev.process[i] < used_process.size()) used_process[ev.process[i]] = 1;
    out.items.push_back({i, ev.process[i], c, ev.start_ns[i],
                         std::max<int64_t>(ev.end_ns[i] - ev.start_ns[i], 0), step});
  }
  out.processes = static_cast<uint64_t>(std::count(used_process.begin(), used_process.end(), 1));
  return out;
}

// Most GPU work by step kind ("" when the trace has no step kinds).
std::string DominantKind(const Prepared& p) {
  std::map<std::string, uint64_t> by_kind;
  for (const auto& item : p.items) {
    if (item.step >= 0 && !p.steps[item.step].kind.empty()) ++by_kind[p.steps[item.step].kind];
  }
  std::string best;
  uint64_t best_n = 0;
  for (const auto& [kind, n] : by_kind) {
    if (n > best_n) {
      best = kind;
      best_n = n;
    }
  }
  return best;
}

std::vector<OpClass> Canonical(std::vector<OpClass> layer) {
  // A layer "starts" at its input norm: a norm followed by a GEMM (the QKV projection),
  // and of those the one after which attention comes soonest (the post-attention norm is
  // followed by a GEMM too). Without such a pair, at the first norm, else the first GEMM.
  const size_t n = layer.size();
  size_t best = n, best_dist = n + 1;
  for (size_t i = 0; i < n; ++i) {
    if (layer[i] != OpClass::kNorm || layer[(i + 1) % n] != OpClass::kGemm) continue;
    size_t dist = n;
    for (size_t k = 1; k < n; ++k) {
      const OpClass c = layer[(i + k) % n];
      if (c == OpClass::kAttention || c == OpClass::kRotary || c == OpClass::kKvWrite) {
        dist = k;
        break;
      }
    }
    if (dist < best_dist) {
      best = i;
      best_dist = dist;
    }
  }
  if (best == n) {
    for (const OpClass anchor : {OpClass::kNorm, OpClass::kGemm}) {
      const auto it = std::find(layer.begin(), layer.end(), anchor);
      if (it != layer.end()) {
        best = static_cast<size_t>(it - layer.begin());
        break;
      }
    }
  }
  if (best < n) std::rotate(layer.begin(), layer.begin() + static_cast<long>(best), layer.end());
  return layer;
}

// Segments: the selected GPU work of one step (all streams, by start), or of one process
// when the trace has no steps (work outside the steps of a trace that has them is left
// out: it is what runs between forward passes). Keyed (step, 0) or (-1, process).
std::map<std::pair<int64_t, uint32_t>, std::vector<const Prepared::Item*>> Segments(
    const Prepared& p, const std::vector<uint8_t>& selected) {
  std::map<std::pair<int64_t, uint32_t>, std::vector<const Prepared::Item*>> segments;
  for (size_t k = 0; k < p.items.size(); ++k) {
    if (!selected[k]) continue;
    const auto& item = p.items[k];
    if (item.step >= 0) {
      segments[{item.step, 0}].push_back(&item);
    } else if (p.steps.empty()) {
      segments[{-1, item.process}].push_back(&item);
    }
  }
  return segments;
}

LayerPattern FindLayer(const Prepared& p, const std::vector<uint8_t>& selected) {
  LayerPattern out;
  auto segments = Segments(p, selected);
  std::vector<std::vector<OpClass>> seqs;
  for (auto& [key, list] : segments) {
    if (list.size() < kMinSegment) continue;
    std::stable_sort(list.begin(), list.end(),
                     [](const auto* a, const auto* b) { return a->start < b->start; });
    std::vector<OpClass> seq;
    seq.reserve(list.size());
    for (const auto* item : list) seq.push_back(item->op_class);
    seqs.push_back(std::move(seq));
  }
  if (seqs.empty()) return out;
  std::vector<size_t> pick;
  if (seqs.size() <= kMaxSegments) {
    for (size_t i = 0; i < seqs.size(); ++i) pick.push_back(i);
  } else {
    for (size_t i = 0; i < kMaxSegments; ++i) pick.push_back(i * seqs.size() / kMaxSegments);
  }
  struct Vote {
    uint32_t count = 0;
    uint32_t period = 0, layers = 0;
    double periodicity = 0;
  };
  std::map<std::vector<OpClass>, Vote> votes;
  for (const size_t s : pick) {
    const std::vector<OpClass>& seq = seqs[s];
    ++out.segments;
    double share = 0;
    const uint32_t period = FindPeriod(seq, &share);
    if (period == 0) continue;
    // Per-position majority over all repetitions.
    std::vector<OpClass> layer(period);
    for (uint32_t j = 0; j < period; ++j) {
      uint32_t counts[kOpClassCount] = {};
      for (size_t i = j; i < seq.size(); i += period) ++counts[static_cast<size_t>(seq[i])];
      layer[j] = static_cast<OpClass>(std::max_element(counts, counts + kOpClassCount) - counts);
    }
    Vote& v = votes[Canonical(layer)];
    ++v.count;
    if (share > v.periodicity || v.period == 0) {
      v.period = period;
      v.layers = static_cast<uint32_t>(seq.size() / period);
      v.periodicity = share;
    }
  }
  const std::pair<const std::vector<OpClass>, Vote>* best = nullptr;
  for (const auto& entry : votes) {
    if (best == nullptr || entry.second.count > best->second.count) best = &entry;
  }
  if (best == nullptr) return out;
  out.found = true;
  out.classes = best->first;
  out.layers_per_period = static_cast<uint32_t>(std::max<ptrdiff_t>(
      1, std::count(out.classes.begin(), out.classes.end(), OpClass::kAttention)));
  out.period = best->second.period;
  out.layers = best->second.layers;
  out.periodicity = best->second.periodicity;
  out.agreeing_segments = best->second.count;
  return out;
}

double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return kNaN;
  std::sort(v.begin(), v.end());
  const double x = q * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(x);
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (x - static_cast<double>(lo));
}

// Per-step statistics of the selected GPU work (and of every event in the same steps),
// the gaps themselves (ns) and the per-class CVs across the repeated layers.
struct StepFacts {
  StepStatistics stats;
  std::vector<double> gaps_ns;
  double cv[kOpClassCount];
};

StepFacts ComputeStepFacts(const Trace& trace, const Prepared& p,
                           const std::vector<uint8_t>& selected) {
  StepFacts out;
  for (double& c : out.cv) c = kNaN;
  const EventTable& ev = trace.events;
  auto segments = Segments(p, selected);
  // Distinct event names per compared step (every event whose start lies in the step).
  std::map<int32_t, std::vector<StringId>> step_names;
  for (const auto& [key, list] : segments) {
    if (key.first >= 0) step_names[static_cast<int32_t>(key.first)];
  }
  if (!step_names.empty()) {
    for (uint32_t i = 0; i < ev.size(); ++i) {
      const int32_t s = StepOf(p.steps, ev.process[i], ev.start_ns[i]);
      if (s < 0) continue;
      const auto it = step_names.find(s);
      if (it != step_names.end()) it->second.push_back(ev.name[i]);
    }
  }
  std::vector<double> kernel_names, symbols;
  for (auto& [s, names] : step_names) {
    std::sort(names.begin(), names.end());
    symbols.push_back(static_cast<double>(std::unique(names.begin(), names.end()) - names.begin()));
  }
  std::vector<double> class_cvs[kOpClassCount];
  for (auto& [key, list] : segments) {
    std::stable_sort(list.begin(), list.end(),
                     [](const auto* a, const auto* b) { return a->start < b->start; });
    std::map<StringId, std::vector<const Prepared::Item*>> by_name;
    for (const auto* item : list) {
      if (ev.type[item->event] == EventType::kKernel) by_name[ev.name[item->event]].push_back(item);
    }
    kernel_names.push_back(static_cast<double>(by_name.size()));
    if (key.first < 0 && !step_names.empty()) continue;
    // Gaps per stream.
    std::map<uint32_t, int64_t> last_end;
    for (const auto* item : list) {
      const uint32_t stream = ev.stream[item->event];
      const auto it = last_end.find(stream);
      if (it != last_end.end()) {
        const int64_t gap = std::max<int64_t>(item->start - it->second, 0);
        if (gap <= kMaxGapNs) out.gaps_ns.push_back(static_cast<double>(gap));
        it->second = std::max(it->second, item->start + item->duration);
      } else {
        last_end.emplace(stream, item->start + item->duration);
      }
    }
    // Layers of the step: instances of its most frequent attention kernel.
    size_t layers = 0;
    for (const auto& [name, items] : by_name) {
      if (items[0]->op_class == OpClass::kAttention) layers = std::max(layers, items.size());
    }
    if (layers < kMinLayersForCv) continue;
    for (const auto& [name, items] : by_name) {
      // Kernels of the embedding, head or sampler that share a name with a layer's kernel
      // (the embedding's all-reduce, the LM head's GEMM) come before or after the layers:
      // the `extra` instances left over are dropped at the front, the back or both, in the
      // way that groups the rest most consistently (lowest median CV).
      const size_t slots = items.size() / layers;
      const size_t extra = items.size() - slots * layers;
      if (slots == 0 || extra > layers / 2) continue;
      std::vector<double> best;
      double best_median = std::numeric_limits<double>::infinity();
      for (size_t front = 0; front <= extra; ++front) {
        std::vector<double> cvs;
        for (size_t slot = 0; slot < slots; ++slot) {
          double sum = 0, sq = 0;
          for (size_t l = 0; l < layers; ++l) {
            const double d = static_cast<double>(items[front + l * slots + slot]->duration);
            sum += d;
            sq += d * d;
          }
          const double n = static_cast<double>(layers);
          const double mean = sum / n;
          if (mean <= 0) continue;
          cvs.push_back(std::sqrt(std::max(0.0, sq / n - mean * mean)) / mean);
        }
        if (cvs.empty()) continue;
        const double m = Median(cvs);
        if (m < best_median) {
          best_median = m;
          best = std::move(cvs);
        }
      }
      auto& out_cvs = class_cvs[static_cast<size_t>(items[0]->op_class)];
      out_cvs.insert(out_cvs.end(), best.begin(), best.end());
    }
  }
  for (size_t c = 0; c < kOpClassCount; ++c) {
    if (!class_cvs[c].empty()) out.cv[c] = Median(class_cvs[c]);
  }
  out.stats.kernel_names = kernel_names.empty() ? kNaN : Median(kernel_names);
  out.stats.symbols = symbols.empty() ? kNaN : Median(symbols);
  out.stats.gaps = out.gaps_ns.size();
  out.stats.gap_p50_us = Quantile(out.gaps_ns, 0.50) / 1000.0;
  out.stats.gap_p90_us = Quantile(out.gaps_ns, 0.90) / 1000.0;
  out.stats.gap_p99_us = Quantile(out.gaps_ns, 0.99) / 1000.0;
  if (!out.gaps_ns.empty()) {
    out.stats.zero_gap_share =
        static_cast<double>(std::count_if(out.gaps_ns.begin(), out.gaps_ns.end(),
                                          [](double g) { return g < 100.0; })) /
        static_cast<double>(out.gaps_ns.size());
  }
  return out;
}

// Distinct GPU-work name sequences among the steps of each kind, on the first process
// that has steps.
std::vector<StepVariety> VarietyByKind(const Trace& trace, const Prepared& p) {
  std::map<int32_t, std::vector<StringId>> seqs;
  uint32_t process = 0;
  bool have = false;
  for (const auto& item : p.items) {
    if (item.step < 0) continue;
    if (!have) {
      process = item.process;
      have = true;
    }
    if (item.process == process) seqs[item.step].push_back(trace.events.name[item.event]);
  }
  std::map<std::string, std::pair<uint64_t, std::vector<std::vector<StringId>>>> by_kind;
  for (auto& [step, seq] : seqs) {
    auto& entry = by_kind[p.steps[static_cast<size_t>(step)].kind];
    ++entry.first;
    entry.second.push_back(std::move(seq));
  }
  std::vector<StepVariety> out;
  for (auto& [kind, entry] : by_kind) {
    auto& list = entry.second;
    std::sort(list.begin(), list.end());
    StepVariety v;
    v.kind = kind.empty() ? "unlabelled" : kind;
    v.steps = entry.first;
    v.distinct = static_cast<uint64_t>(std::unique(list.begin(), list.end()) - list.begin());
    v.per_100 = 100.0 * static_cast<double>(v.distinct) /
                static_cast<double>(std::max<uint64_t>(v.steps, 1));
    out.push_back(std::move(v));
  }
  return out;
}

// `floor`: values below it count as the floor (a gap of 1 ns and one of 50 ns are both
// "back to back").
RealismTarget Ratio(std::string statistic, double sim, double real, double floor = 0) {
  RealismTarget t;
  t.statistic = std::move(statistic);
  t.simulated = sim;
  t.real = real;
  if (floor > 0 && !std::isnan(sim) && !std::isnan(real)) {
    sim = std::max(sim, floor);
    real = std::max(real, floor);
  }
  if (!std::isnan(sim) && !std::isnan(real) && sim > 0 && real > 0) {
    t.met = std::max(sim / real, real / sim) <= 1.5;
  } else {
    t.met = !std::isnan(sim) && !std::isnan(real) && sim == real;
  }
  return t;
}

std::string FormatUs(double us) {
  char buf[32];
  if (us >= 1000) {
    std::snprintf(buf, sizeof buf, "%.2f ms", us / 1000);
  } else if (us >= 10) {
    std::snprintf(buf, sizeof buf, "%.1f us", us);
  } else {
    std::snprintf(buf, sizeof buf, "%.2f us", us);
  }
  return buf;
}

std::string FormatNumber(double v, const char* fmt = "%.3f") {
  if (std::isnan(v)) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

void AppendJsonNumber(std::string& out, double v) {
  if (std::isnan(v) || std::isinf(v)) {
    out += "null";
    return;
  }
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  out += buf;
}

std::string LayerText(const LayerPattern& l) {
  if (!l.found) return "(no repeating layer found)";
  std::string s;
  for (const OpClass c : l.classes) {
    if (!s.empty()) s += ' ';
    s += OpClassName(c);
  }
  return s;
}

}  // namespace

uint32_t FindPeriod(const std::vector<OpClass>& seq, double* periodicity) {
  *periodicity = 0;
  const size_t n = seq.size();
  if (n < 6) return 0;
  const size_t max_p = std::min<size_t>(kMaxPeriod, n / 3);
  std::vector<double> share(max_p + 1, 0);
  double best = 0;
  for (size_t p = 2; p <= max_p; ++p) {
    size_t same = 0;
    for (size_t i = 0; i + p < n; ++i) same += seq[i] == seq[i + p];
    share[p] = static_cast<double>(same) / static_cast<double>(n - p);
    best = std::max(best, share[p]);
  }
  if (best < kMinPeriodicity) return 0;
  // Multiples of the true period match as well as the period itself: the smallest shift
  // that is (nearly) as good is the layer.
  for (size_t p = 2; p <= max_p; ++p) {
    if (share[p] >= best - kPeriodTolerance && share[p] >= kMinPeriodicity) {
      *periodicity = share[p];
      return static_cast<uint32_t>(p);
    }
  }
  return 0;
}

uint32_t CyclicEditDistance(const std::vector<OpClass>& a, const std::vector<OpClass>& b) {
  if (b.empty()) return static_cast<uint32_t>(a.size());
  if (a.empty()) return static_cast<uint32_t>(b.size());
  uint32_t best = std::numeric_limits<uint32_t>::max();
  std::vector<uint32_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t r = 0; r < b.size(); ++r) {
    for (size_t j = 0; j <= b.size(); ++j) prev[j] = static_cast<uint32_t>(j);
    for (size_t i = 1; i <= a.size(); ++i) {
      cur[0] = static_cast<uint32_t>(i);
      for (size_t j = 1; j <= b.size(); ++j) {
        const OpClass bj = b[(j - 1 + r) % b.size()];
        cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == bj ? 0u : 1u)});
      }
      std::swap(prev, cur);
    }
    best = std::min(best, prev[b.size()]);
  }
  return best;
}

Result<RealismReport> CompareRealism(const Trace& simulated, const Trace& real) {
  const Prepared sim = Prepare(simulated);
  const Prepared rea = Prepare(real);
  if (sim.items.empty()) return Status::Error("the simulated trace has no GPU work to compare");
  if (rea.items.empty()) {
    return Status::Error("the real trace has no GPU work (kernels, copies) to compare");
  }
  RealismReport report;
  report.simulated.processes = sim.processes;
  report.real.processes = rea.processes;
  report.simulated.steps = sim.steps.size();
  report.real.steps = rea.steps.size();
  report.simulated.dominant_kind = DominantKind(sim);
  report.real.dominant_kind = DominantKind(rea);

  // Restrict both sides to the real trace's kind of step when the simulation has it.
  std::string filter = report.real.dominant_kind;
  if (!filter.empty()) {
    const bool sim_has = std::any_of(sim.items.begin(), sim.items.end(), [&](const auto& item) {
      return item.step >= 0 && sim.steps[item.step].kind == filter;
    });
    if (!sim_has) filter.clear();
  }
  report.step_kind_filter = filter;
  auto select = [&](const Prepared& p, TraceSummary& summary) {
    std::vector<uint8_t> sel(p.items.size(), 0);
    std::vector<uint8_t> step_used(p.steps.size(), 0);
    for (size_t k = 0; k < p.items.size(); ++k) {
      const auto& item = p.items[k];
      sel[k] = filter.empty() || (item.step >= 0 && p.steps[item.step].kind == filter);
      if (sel[k]) {
        ++summary.gpu_work;
        if (item.step >= 0) step_used[item.step] = 1;
      }
    }
    summary.steps_compared =
        static_cast<uint64_t>(std::count(step_used.begin(), step_used.end(), 1));
    return sel;
  };
  const std::vector<uint8_t> sim_sel = select(sim, report.simulated);
  const std::vector<uint8_t> real_sel = select(rea, report.real);

  // Structure.
  report.simulated_layer = FindLayer(sim, sim_sel);
  report.real_layer = FindLayer(rea, real_sel);
  if (report.simulated_layer.found && report.real_layer.found) {
    // Compare the same number of decoder layers: a unit of two layers (alternating layer
    // types) against two copies of a one-layer unit.
    const uint32_t ls = report.simulated_layer.layers_per_period,
                   lr = report.real_layer.layers_per_period;
    const uint32_t g = std::gcd(ls, lr);
    auto repeat = [](const std::vector<OpClass>& unit, uint32_t times) {
      std::vector<OpClass> out;
      for (uint32_t k = 0; k < times && out.size() + unit.size() <= 4 * kMaxPeriod; ++k) {
        out.insert(out.end(), unit.begin(), unit.end());
      }
      return out;
    };
    const std::vector<OpClass> a = repeat(report.simulated_layer.classes, lr / g);
    const std::vector<OpClass> b = repeat(report.real_layer.classes, ls / g);
    report.layer_edit_distance = CyclicEditDistance(a, b);
    const size_t longest = std::max(a.size(), b.size());
    report.layer_agreement =
        1.0 - static_cast<double>(report.layer_edit_distance) / static_cast<double>(longest);
  } else {
    report.layer_agreement = kNaN;
  }

  // Class mix and durations.
  std::vector<double> sim_dur[kOpClassCount], real_dur[kOpClassCount];
  for (size_t k = 0; k < sim.items.size(); ++k) {
    if (sim_sel[k])
      sim_dur[static_cast<size_t>(sim.items[k].op_class)].push_back(
          static_cast<double>(std::max<int64_t>(sim.items[k].duration, 1)));
  }
  for (size_t k = 0; k < rea.items.size(); ++k) {
    if (real_sel[k])
      real_dur[static_cast<size_t>(rea.items[k].op_class)].push_back(
          static_cast<double>(std::max<int64_t>(rea.items[k].duration, 1)));
  }
  const double sim_total = static_cast<double>(std::max<uint64_t>(report.simulated.gpu_work, 1));
  const double real_total = static_cast<double>(std::max<uint64_t>(report.real.gpu_work, 1));
  report.step_mix_overlap = 0;
  for (size_t c = 0; c < kOpClassCount; ++c) {
    if (sim_dur[c].empty() && real_dur[c].empty()) continue;
    ClassDistance d;
    d.op_class = static_cast<OpClass>(c);
    d.simulated_count = sim_dur[c].size();
    d.real_count = real_dur[c].size();
    d.simulated_share = static_cast<double>(d.simulated_count) / sim_total;
    d.real_share = static_cast<double>(d.real_count) / real_total;
    report.step_mix_overlap += std::min(d.simulated_share, d.real_share);
    d.simulated_median_us = Median(sim_dur[c]) / 1000.0;
    d.real_median_us = Median(real_dur[c]) / 1000.0;
    std::vector<double> a, b;
    for (const double v : sim_dur[c]) a.push_back(std::log10(v));
    for (const double v : real_dur[c]) b.push_back(std::log10(v));
    d.ks = KsStatistic(a, b);
    d.w1_log10 = Wasserstein1(a, b);
    report.classes.push_back(d);
  }
  // What one step shows.
  const StepFacts sim_facts = ComputeStepFacts(simulated, sim, sim_sel);
  const StepFacts real_facts = ComputeStepFacts(real, rea, real_sel);
  report.simulated_steps = sim_facts.stats;
  report.real_steps = real_facts.stats;
  for (ClassDistance& d : report.classes) {
    d.simulated_cv = sim_facts.cv[static_cast<size_t>(d.op_class)];
    d.real_cv = real_facts.cv[static_cast<size_t>(d.op_class)];
  }
  {
    std::vector<double> a, b;
    for (const double g : sim_facts.gaps_ns) a.push_back(std::log10(std::max(g, 100.0)));
    for (const double g : real_facts.gaps_ns) b.push_back(std::log10(std::max(g, 100.0)));
    report.gap_ks = KsStatistic(a, b);
  }
  report.variety = VarietyByKind(simulated, sim);
  auto& tg = report.targets;
  tg.push_back(
      Ratio("kernel names per step", sim_facts.stats.kernel_names, real_facts.stats.kernel_names));
  tg.push_back(Ratio("event symbols per step", sim_facts.stats.symbols, real_facts.stats.symbols));
  tg.push_back(Ratio("gap p50", sim_facts.stats.gap_p50_us, real_facts.stats.gap_p50_us, 0.1));
  tg.push_back(Ratio("gap p99", sim_facts.stats.gap_p99_us, real_facts.stats.gap_p99_us, 0.1));
  {
    RealismTarget t;
    t.statistic = "gap distribution (KS)";
    t.distribution = true;
    t.simulated = report.gap_ks;
    t.met = !std::isnan(report.gap_ks) && report.gap_ks <= 0.2;
    tg.push_back(t);
  }
  for (const ClassDistance& d : report.classes) {
    if (std::isnan(d.real_cv) || std::isnan(d.simulated_cv)) continue;
    tg.push_back(Ratio("CV across layers: " + std::string(OpClassName(d.op_class)), d.simulated_cv,
                       d.real_cv));
  }
  std::stable_sort(report.classes.begin(), report.classes.end(),
                   [](const ClassDistance& x, const ClassDistance& y) {
                     return x.real_share != y.real_share ? x.real_share > y.real_share
                                                         : x.simulated_share > y.simulated_share;
                   });
  return report;
}

std::string RealismReportText(const RealismReport& r, std::string_view simulated_label,
                              std::string_view real_label) {
  std::string out;
  char line[512];
  out += "Realism report\n";
  auto side = [&](const char* what, std::string_view label, const TraceSummary& s) {
    std::snprintf(line, sizeof line,
                  "  %-9s %s\n            %llu process(es), %llu step(s), %llu compared, "
                  "%llu GPU work items; most work in %s steps\n",
                  what, std::string(label).c_str(), static_cast<unsigned long long>(s.processes),
                  static_cast<unsigned long long>(s.steps),
                  static_cast<unsigned long long>(s.steps_compared),
                  static_cast<unsigned long long>(s.gpu_work),
                  s.dominant_kind.empty() ? "unlabelled" : s.dominant_kind.c_str());
    out += line;
  };
  side("simulated", simulated_label, r.simulated);
  side("real", real_label, r.real);
  out += "  compared: " +
         (r.step_kind_filter.empty() ? std::string("all GPU work")
                                     : "GPU work of " + r.step_kind_filter + " steps") +
         "\n\nPer-layer operator-class sequence\n";
  auto layer = [&](const char* what, const LayerPattern& l) {
    if (l.found) {
      std::snprintf(line, sizeof line,
                    "  %-9s %u kernels per %u layer(s), %u repetitions, %.0f%% periodic, "
                    "%u/%u segments agree:\n",
                    what, l.period, l.layers_per_period, l.layers, 100 * l.periodicity,
                    l.agreeing_segments, l.segments);
    } else {
      std::snprintf(line, sizeof line, "  %-9s %u segments examined:\n", what, l.segments);
    }
    out += line;
    out += "            " + LayerText(l) + "\n";
  };
  layer("simulated", r.simulated_layer);
  layer("real", r.real_layer);
  if (std::isnan(r.layer_agreement)) {
    out += "  layer agreement: - (a layer was not found on both sides)\n";
  } else {
    std::snprintf(line, sizeof line, "  layer agreement: %.3f (edit distance %u, best rotation)\n",
                  r.layer_agreement, r.layer_edit_distance);
    out += line;
  }
  std::snprintf(line, sizeof line, "  step class-mix overlap: %.3f (sum of min shares)\n\n",
                r.step_mix_overlap);
  out += line;
  out += "Durations per operator class (KS and W1 of log10 ns)\n";
  std::snprintf(line, sizeof line, "  %-17s %8s %8s %7s %7s %11s %11s %6s %6s\n", "class", "sim n",
                "real n", "sim %", "real %", "sim median", "real median", "KS", "W1");
  out += line;
  for (const ClassDistance& d : r.classes) {
    std::snprintf(line, sizeof line, "  %-17s %8llu %8llu %6.1f%% %6.1f%% %11s %11s %6s %6s\n",
                  std::string(OpClassName(d.op_class)).c_str(),
                  static_cast<unsigned long long>(d.simulated_count),
                  static_cast<unsigned long long>(d.real_count), 100 * d.simulated_share,
                  100 * d.real_share,
                  d.simulated_count ? FormatUs(d.simulated_median_us).c_str() : "-",
                  d.real_count ? FormatUs(d.real_median_us).c_str() : "-",
                  FormatNumber(d.ks, "%.2f").c_str(), FormatNumber(d.w1_log10, "%.2f").c_str());
    out += line;
  }
  out += "\nWhat one step shows (medians over the compared steps)\n";
  auto stat_line = [&](const char* what, const StepStatistics& st) {
    std::snprintf(
        line, sizeof line,
        "  %-9s %s kernel names, %s event symbols; %llu gaps: p50 %s, p90 %s, p99 %s "
        "us, %s%% under 0.1 us\n",
        what, FormatNumber(st.kernel_names, "%.0f").c_str(),
        FormatNumber(st.symbols, "%.0f").c_str(), static_cast<unsigned long long>(st.gaps),
        FormatNumber(st.gap_p50_us, "%.2f").c_str(), FormatNumber(st.gap_p90_us, "%.2f").c_str(),
        FormatNumber(st.gap_p99_us, "%.2f").c_str(),
        FormatNumber(100 * st.zero_gap_share, "%.0f").c_str());
    out += line;
  };
  stat_line("simulated", r.simulated_steps);
  stat_line("real", r.real_steps);
  std::snprintf(line, sizeof line, "  gap KS (log10 of max(gap, 0.1 us)): %s\n",
                FormatNumber(r.gap_ks, "%.2f").c_str());
  out += line;
  out += "  CV across layers by class (sim / real):";
  for (const ClassDistance& d : r.classes) {
    if (std::isnan(d.simulated_cv) && std::isnan(d.real_cv)) continue;
    out += " " + std::string(OpClassName(d.op_class)) + " " + FormatNumber(d.simulated_cv, "%.3f") +
           "/" + FormatNumber(d.real_cv, "%.3f");
  }
  out += "\n  simulated step variety:";
  for (const StepVariety& v : r.variety) {
    std::snprintf(line, sizeof line, " %s %llu distinct of %llu steps (%.1f per 100);",
                  v.kind.c_str(), static_cast<unsigned long long>(v.distinct),
                  static_cast<unsigned long long>(v.steps), v.per_100);
    out += line;
  }
  out += "\n\nTargets (within x1.5, or KS <= 0.2)\n";
  for (const RealismTarget& t : r.targets) {
    if (t.distribution) {
      std::snprintf(line, sizeof line, "  %-32s KS %s  %s\n", t.statistic.c_str(),
                    FormatNumber(t.simulated, "%.2f").c_str(), t.met ? "met" : "not met");
    } else {
      std::snprintf(line, sizeof line, "  %-32s sim %s real %s  %s\n", t.statistic.c_str(),
                    FormatNumber(t.simulated, "%.3g").c_str(), FormatNumber(t.real, "%.3g").c_str(),
                    t.met ? "met" : "not met");
    }
    out += line;
  }
  return out;
}

std::string RealismReportJson(const RealismReport& r, std::string_view simulated_label,
                              std::string_view real_label) {
  std::string out = "{\"format\":\"teller-realism\",\"version\":1";
  auto side = [&](const char* key, std::string_view label, const TraceSummary& s) {
    out += ",\"";
    out += key;
    out += "\":";
    JsonObjectWriter(out)
        .Field("label", label)
        .Field("processes", s.processes)
        .Field("steps", s.steps)
        .Field("steps_compared", s.steps_compared)
        .Field("gpu_work", s.gpu_work)
        .Field("dominant_kind", s.dominant_kind)
        .Close();
  };
  side("simulated", simulated_label, r.simulated);
  side("real", real_label, r.real);
  out += ",\"step_kind_filter\":";
  AppendJsonString(out, r.step_kind_filter);
  auto layer = [&](const LayerPattern& l) {
    out += "{\"found\":";
    out += l.found ? "true" : "false";
    out += ",\"period\":" + std::to_string(l.period) +
           ",\"layers_per_period\":" + std::to_string(l.layers_per_period) +
           ",\"layers\":" + std::to_string(l.layers);
    out += ",\"periodicity\":";
    AppendJsonNumber(out, l.periodicity);
    out += ",\"segments\":" + std::to_string(l.segments) +
           ",\"agreeing_segments\":" + std::to_string(l.agreeing_segments) + ",\"classes\":[";
    for (size_t i = 0; i < l.classes.size(); ++i) {
      if (i) out += ',';
      AppendJsonString(out, OpClassName(l.classes[i]));
    }
    out += "]}";
  };
  out += ",\"layer\":{\"agreement\":";
  AppendJsonNumber(out, r.layer_agreement);
  out += ",\"edit_distance\":";
  if (std::isnan(r.layer_agreement)) {
    out += "null";
  } else {
    out += std::to_string(r.layer_edit_distance);
  }
  out += ",\"simulated\":";
  layer(r.simulated_layer);
  out += ",\"real\":";
  layer(r.real_layer);
  out += "},\"step_mix_overlap\":";
  AppendJsonNumber(out, r.step_mix_overlap);
  out += ",\"classes\":[";
  for (size_t i = 0; i < r.classes.size(); ++i) {
    const ClassDistance& d = r.classes[i];
    if (i) out += ',';
    out += "{\"class\":";
    AppendJsonString(out, OpClassName(d.op_class));
    auto part = [&](const char* key, uint64_t n, double median, double share) {
      out += ",\"";
      out += key;
      out += "\":{\"count\":" + std::to_string(n) + ",\"median_us\":";
      AppendJsonNumber(out, n ? median : kNaN);
      out += ",\"share\":";
      AppendJsonNumber(out, share);
      out += '}';
    };
    part("simulated", d.simulated_count, d.simulated_median_us, d.simulated_share);
    part("real", d.real_count, d.real_median_us, d.real_share);
    out += ",\"ks\":";
    AppendJsonNumber(out, d.ks);
    out += ",\"w1_log10\":";
    AppendJsonNumber(out, d.w1_log10);
    out += ",\"cv_simulated\":";
    AppendJsonNumber(out, d.simulated_cv);
    out += ",\"cv_real\":";
    AppendJsonNumber(out, d.real_cv);
    out += '}';
  }
  out += ']';
  auto step_stats = [&](const char* key, const StepStatistics& st) {
    out += ",\"";
    out += key;
    out += "\":{\"kernel_names\":";
    AppendJsonNumber(out, st.kernel_names);
    out += ",\"symbols\":";
    AppendJsonNumber(out, st.symbols);
    out += ",\"gaps\":" + std::to_string(st.gaps) + ",\"gap_p50_us\":";
    AppendJsonNumber(out, st.gap_p50_us);
    out += ",\"gap_p90_us\":";
    AppendJsonNumber(out, st.gap_p90_us);
    out += ",\"gap_p99_us\":";
    AppendJsonNumber(out, st.gap_p99_us);
    out += ",\"zero_gap_share\":";
    AppendJsonNumber(out, st.zero_gap_share);
    out += '}';
  };
  step_stats("simulated_step", r.simulated_steps);
  step_stats("real_step", r.real_steps);
  out += ",\"gap_ks\":";
  AppendJsonNumber(out, r.gap_ks);
  out += ",\"variety\":[";
  for (size_t i = 0; i < r.variety.size(); ++i) {
    const StepVariety& v = r.variety[i];
    if (i) out += ',';
    out += "{\"kind\":";
    AppendJsonString(out, v.kind);
    out += ",\"steps\":" + std::to_string(v.steps) + ",\"distinct\":" + std::to_string(v.distinct) +
           ",\"per_100\":";
    AppendJsonNumber(out, v.per_100);
    out += '}';
  }
  out += "],\"targets\":[";
  for (size_t i = 0; i < r.targets.size(); ++i) {
    const RealismTarget& t = r.targets[i];
    if (i) out += ',';
    out += "{\"statistic\":";
    AppendJsonString(out, t.statistic);
    out += ",\"simulated\":";
    AppendJsonNumber(out, t.simulated);
    out += ",\"real\":";
    AppendJsonNumber(out, t.distribution ? kNaN : t.real);
    out += ",\"distribution\":";
    out += t.distribution ? "true" : "false";
    out += ",\"met\":";
    out += t.met ? "true" : "false";
    out += '}';
  }
  out += "]}\n";
  return out;
}

}  // namespace teller::eval
