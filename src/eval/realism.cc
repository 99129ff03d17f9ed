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
    int32_t step = -1;
    auto first = std::upper_bound(
        out.steps.begin(), out.steps.end(), std::make_pair(ev.process[i], when),
        [](const std::pair<uint32_t, int64_t>& key, const Prepared::StepInfo& s) {
          return key.first != s.process ? key.first < s.process : key.second < s.start;
        });
    if (first != out.steps.begin()) {
      const auto it = std::prev(first);
      if (it->process == ev.process[i] && when <= it->end) {
        step = static_cast<int32_t>(it - out.steps.begin());
      }
    }
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

LayerPattern FindLayer(const Prepared& p, const std::vector<uint8_t>& selected) {
  LayerPattern out;
  // Segments: the GPU work of one step (all streams, by start), or of one process when
  // the trace has no steps (work outside the steps of a trace that has them is left out:
  // it is what runs between forward passes).
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
    out += '}';
  }
  out += "]}\n";
  return out;
}

}  // namespace teller::eval
