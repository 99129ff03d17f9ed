// Candidate localization (include/teller/localize/localize.h, docs/method.md §3).
#include "teller/localize/localize.h"

#include <algorithm>
#include <armadillo>
#include <array>
#include <cctype>
#include <cmath>
#include <map>
#include <memory>
#include <numeric>
#include <set>
#include <tuple>

namespace teller::localize {

using reconstruct::Nodes;
using reconstruct::Reconstruction;

namespace {

bool IsRange(EventType t) { return t == EventType::kPush || t == EventType::kRange; }
bool IsOperatorLayer(Layer l) {
  return l == Layer::kFrontend || l == Layer::kBackend || l == Layer::kComm;
}

using Vec = std::array<double, kFeatureCount>;

// Per-family standardization and model: log(1+x), then (x - median) / (1.4826 MAD) per
// feature; features constant in the family are left out.
struct FamilyModel {
  Vec median{}, scale{};
  std::array<bool, kFeatureCount> active{};
  bool mixture = false;
  arma::gmm_diag gmm;
  std::vector<bool> central;
  double median_total_ns = 0;
  uint32_t fitted_on = 0;
  double baseline_a = 0;  // mean A_{s,t} of the family over the baseline's steps
};

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<long>(mid), v.end());
  return v[mid];
}

void FitStandardization(const std::vector<Vec>& x, FamilyModel* m) {
  std::vector<double> col(x.size());
  for (size_t f = 0; f < kFeatureCount; ++f) {
    for (size_t i = 0; i < x.size(); ++i) col[i] = std::log1p(std::max(0.0, x[i][f]));
    const double med = Median(col);
    for (double& c : col) c = std::fabs(c - med);
    const double mad = Median(col);
    // The 85th percentile of the deviations as a second scale: features that are mostly
    // zero (overlap, launch delay, bytes) or heavy-tailed in normal operation have a tiny
    // MAD but a wide normal spread, which must not read as anomalies.
    double p85 = 0;
    if (!col.empty()) {
      const size_t k =
          std::min(col.size() - 1, static_cast<size_t>(0.85 * static_cast<double>(col.size())));
      std::nth_element(col.begin(), col.begin() + static_cast<long>(k), col.end());
      p85 = col[k];
    }
    // A feature that never varies carries no signal; a floor keeps near-constant ones
    // from turning rounding noise into huge z-scores.
    m->median[f] = med;
    m->active[f] = mad > 1e-9 || p85 > 1e-9 || x.size() < 3;
    // The second scale only where the two disagree by far (for normal data they agree
    // within a few percent), so that ordinary families keep their MAD-based sensitivity.
    // Durations of work (own and GPU time) keep it: they are what a fault slows down.
    const bool work_time = f == kSelfNs || f == kGpuNs;
    const double wide = !work_time && p85 / 1.44 > 3.0 * 1.4826 * mad ? p85 / 1.44 : 0.0;
    m->scale[f] = std::max({1.4826 * mad, wide, 0.08});
  }
}

arma::vec Standardize(const Vec& v, const FamilyModel& m, size_t dims) {
  arma::vec out(dims);
  size_t d = 0;
  for (size_t f = 0; f < kFeatureCount; ++f) {
    if (!m.active[f]) continue;
    out[d++] = (std::log1p(std::max(0.0, v[f])) - m.median[f]) / m.scale[f];
  }
  return out;
}

size_t Dims(const FamilyModel& m) {
  return static_cast<size_t>(std::count(m.active.begin(), m.active.end(), true));
}

void FitModel(const std::vector<Vec>& x, const std::vector<int64_t>& totals, const Options& o,
              FamilyModel* m) {
  FitStandardization(x, m);
  m->fitted_on = static_cast<uint32_t>(x.size());
  std::vector<double> t(totals.begin(), totals.end());
  m->median_total_ns = Median(t);
  const size_t dims = Dims(*m);
  m->mixture = false;
  if (x.size() < o.min_mixture || dims == 0) return;
  arma::mat data(dims, x.size());
  for (size_t i = 0; i < x.size(); ++i) data.col(i) = Standardize(x[i], *m, dims);
  const int k = x.size() >= 200 ? o.max_components : std::min(2, o.max_components);
  arma::arma_rng::set_seed(o.seed);
  // static_spread: deterministic and robust seeding (random subsets can get stuck).
  if (!m->gmm.learn(data, static_cast<arma::uword>(k), arma::maha_dist, arma::static_spread, 10, 25,
                    1e-4, false))
    return;
  // Central components: the heaviest and every component of substantial weight, so that
  // a family with several normal modes (prefill and decode sizes) keeps them all; rare
  // components are where outliers gather.
  m->central.assign(m->gmm.n_gaus(), false);
  size_t heaviest = 0;
  for (size_t g = 0; g < m->gmm.n_gaus(); ++g) {
    m->central[g] = m->gmm.hefts[g] >= o.central_weight;
    if (m->gmm.hefts[g] > m->gmm.hefts[heaviest]) heaviest = g;
  }
  m->central[heaviest] = true;
  m->mixture = true;
}

// rho(x): how typical x is. A point within 4 standard deviations (in every feature) of a
// central component is typical whatever the posterior says (a family's normal tail must
// not look anomalous); beyond that, rho is the posterior mass of the central components
// times how well any component explains it, so a point that a rare component explains,
// or none does, is anomalous.
double Rho(const Vec& v, const FamilyModel& m) {
  const size_t dims = Dims(m);
  if (dims == 0) return 1.0;
  const arma::vec x = Standardize(v, m, dims);
  if (!m.mixture) {
    // Robust z-score: the largest standardized deviation.
    const double z = arma::abs(x).max();
    return std::exp(-std::pow(std::max(0.0, z - 4.0), 2) / 2.0);
  }
  const size_t k = m.gmm.n_gaus();
  std::vector<double> logw(k);
  double top = -1e300;
  for (size_t g = 0; g < k; ++g) {
    logw[g] = std::log(std::max(1e-300, static_cast<double>(m.gmm.hefts[g]))) + m.gmm.log_p(x, g);
    top = std::max(top, logw[g]);
  }
  double total = 0, central = 0, nearest_central = 1e300, nearest_any = 1e300;
  for (size_t g = 0; g < k; ++g) {
    const double w = std::exp(logw[g] - top);
    total += w;
    // Deviations below the robust scale are noise, whatever the component's spread.
    const arma::vec sd =
        arma::max(arma::sqrt(m.gmm.dcovs.col(g)), arma::vec(dims, arma::fill::ones) * 0.5);
    const double z = arma::abs((x - m.gmm.means.col(g)) / sd).max();
    nearest_any = std::min(nearest_any, z);
    if (!m.central[g]) continue;
    central += w;
    nearest_central = std::min(nearest_central, z);
  }
  auto closeness = [](double z) { return std::exp(-std::pow(std::max(0.0, z - 4.0), 2) / 2.0); };
  const double posterior = total > 0 ? central / total : 0;
  // Typical when close to a central component; otherwise only as typical as the central
  // components' share of the explanation, and only if some component explains it at all.
  return std::max(closeness(nearest_central), posterior * closeness(nearest_any));
}

struct Extracted {
  std::vector<uint32_t> node, step;
  std::vector<Vec> features;
  std::vector<int64_t> total;
  std::vector<std::string> family_key;  // name + '\x1f' + layer
};

// The units instances are collected from: the steps, or, in a trace with no steps at all
// (an Nsight export of a plain CUDA program), each process's whole forest as one unit.
struct Unit {
  std::vector<uint32_t> roots;
  StringId kind = 0;
};
std::vector<Unit> Units(const Reconstruction& r) {
  std::vector<Unit> units;
  if (!r.steps.empty()) {
    for (const reconstruct::Step& st : r.steps) units.push_back(Unit{{st.node}, st.kind});
    return units;
  }
  std::map<uint32_t, size_t> by_process;
  for (uint32_t i = 0; i < r.nodes.size(); ++i) {
    if (r.nodes.parent[i] >= 0) continue;
    auto [it, added] = by_process.emplace(r.nodes.process[i], units.size());
    if (added) units.emplace_back();
    units[it->second].roots.push_back(i);
  }
  return units;
}

Extracted Extract(const Trace& t, const Reconstruction& r) {
  const std::vector<Unit> units = Units(r);
  const Nodes& n = r.nodes;
  const EventTable& ev = t.events;
  const size_t N = n.size();
  // Bottom-up subtree aggregates: deepest nodes first.
  std::vector<uint32_t> order(N);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](uint32_t a, uint32_t b) { return n.depth[a] > n.depth[b]; });
  std::vector<int64_t> ready(N, INT64_MIN);    // when the stream became free for the op
  std::vector<int64_t> prev_on_stream(N, -1);  // the GPU operation before it on its stream
  std::vector<double> sync_ns(N, 0);           // time in synchronizations: waiting, not working
  // GPU work end times per process, sorted, to tell a synchronization's wait from its stall.
  std::unordered_map<uint32_t, std::vector<int64_t>> gpu_ends;
  for (uint32_t i = 0; i < N; ++i) {
    if (IsGpuWork(ev.type[n.event[i]])) gpu_ends[n.process[i]].push_back(n.end_ns[i]);
  }
  for (auto& [p, ends] : gpu_ends) std::sort(ends.begin(), ends.end());
  std::vector<double> call_ns(N, 0), calls(N, 0), ops(N, 0), op_ns(N, 0), delay(N, 0), bytes(N, 0),
      child_range_ns(N, 0), overlap(N, 0);
  // GPU overlap with other streams of the same device: against the latest operation seen
  // on each other stream (operations sorted by start).
  {
    std::map<std::pair<uint32_t, uint32_t>, std::vector<uint32_t>> by_device;
    for (uint32_t i = 0; i < N; ++i) {
      const uint32_t e = n.event[i];
      if (IsGpuWork(ev.type[e])) by_device[{n.process[i], ev.device[e]}].push_back(i);
    }
    for (auto& [key, list] : by_device) {
      std::sort(list.begin(), list.end(),
                [&](uint32_t a, uint32_t b) { return n.start_ns[a] < n.start_ns[b]; });
      std::map<uint32_t, int64_t> latest_end;  // stream -> end
      std::map<uint32_t, uint32_t> last_op;    // stream -> last operation
      for (uint32_t i : list) {
        const uint32_t stream = ev.stream[n.event[i]];
        const auto prev = latest_end.find(stream);
        ready[i] = prev == latest_end.end() ? INT64_MIN : prev->second;
        const auto last = last_op.find(stream);
        prev_on_stream[i] = last == last_op.end() ? -1 : static_cast<int64_t>(last->second);
        last_op[stream] = i;
        double o = 0;
        for (const auto& [s, end] : latest_end) {
          if (s != stream && end > n.start_ns[i])
            o += static_cast<double>(std::min(end, n.end_ns[i]) - n.start_ns[i]);
        }
        overlap[i] = o;
        int64_t& mine = latest_end[stream];
        mine = std::max(mine, n.end_ns[i]);
      }
    }
  }
  for (uint32_t i : order) {
    const uint32_t e = n.event[i];
    const EventType type = ev.type[e];
    const double dur = static_cast<double>(n.end_ns[i] - n.start_ns[i]);
    if (IsHostCall(type)) {
      call_ns[i] += dur;
      if (ClassifyCall(t.strings.Get(ev.name[e])) == CallKind::kSynchronize) sync_ns[i] += dur;
      calls[i] += 1;
    } else if (IsGpuWork(type)) {
      ops[i] += 1;
      op_ns[i] += dur;
      bytes[i] += static_cast<double>(ev.bytes[e]);
      const int32_t p = n.parent[i];
      // Launch delay of eagerly launched work only: a graph's kernels queue behind each
      // other, so their distance from the one launch call says nothing.
      if (p >= 0 && IsHostCall(ev.type[n.event[static_cast<size_t>(p)]]) &&
          n.child_begin[static_cast<size_t>(p) + 1] - n.child_begin[static_cast<size_t>(p)] == 1) {
        // Measured from when the work could have started: queueing behind earlier work on
        // the stream is not launch delay.
        const int64_t from = std::max(n.start_ns[static_cast<size_t>(p)], ready[i]);
        delay[i] += static_cast<double>(std::max<int64_t>(0, n.start_ns[i] - from));
      }
    }
    const int32_t p = n.parent[i];
    if (p < 0) continue;
    const size_t q = static_cast<size_t>(p);
    call_ns[q] += call_ns[i];
    sync_ns[q] += sync_ns[i];
    calls[q] += calls[i];
    ops[q] += ops[i];
    op_ns[q] += op_ns[i];
    delay[q] += delay[i];
    bytes[q] += bytes[i];
    overlap[q] += overlap[i];
    if (IsRange(type)) child_range_ns[q] += dur;
  }
  Extracted x;
  for (uint32_t s = 0; s < units.size(); ++s) {
    // depth-first; `covered` depth marks whether an operator range encloses the node.
    // (node, enclosed by an operator range, previous sibling or -1)
    std::vector<std::tuple<uint32_t, bool, int64_t>> todo;
    for (size_t k = units[s].roots.size(); k-- > 0;) todo.push_back({units[s].roots[k], false, -1});
    while (!todo.empty()) {
      const auto [i, covered, prev] = todo.back();
      todo.pop_back();
      const uint32_t e = n.event[i];
      const EventType type = ev.type[e];
      const bool op_range = IsRange(type) && IsOperatorLayer(n.layer[i]);
      // Every GPU operation is an instance too: inside an operator range it tells which
      // kernel of the operator is abnormal; in a graph replay it is the only operator.
      const bool gpu_op = IsGpuWork(type);
      // Runtime/driver calls no operator range encloses (a step's synchronizations and
      // copies) are instances of their own: nothing else would hold their time.
      const bool bare_call = IsHostCall(type) && !covered && ops[i] == 0;
      if (op_range || gpu_op || bare_call) {
        Vec v{};
        const double dur = static_cast<double>(n.end_ns[i] - n.start_ns[i]);
        v[kSelfNs] =
            gpu_op || bare_call ? dur : std::max(0.0, dur - child_range_ns[i] - call_ns[i]);
        if (bare_call && sync_ns[i] > 0) {
          // A synchronization's own cost is how long it blocks after the GPU work it
          // waits for has finished; the waiting itself belongs to that work.
          const auto& ends = gpu_ends[n.process[i]];
          const auto it = std::upper_bound(ends.begin(), ends.end(), n.end_ns[i]);
          const int64_t gpu_done =
              it == ends.begin() ? n.start_ns[i] : std::max(n.start_ns[i], *(it - 1));
          v[kSelfNs] = static_cast<double>(std::max<int64_t>(0, n.end_ns[i] - gpu_done));
          v[kHostCallNs] = v[kSelfNs];
        }
        v[kHostCallNs] = call_ns[i];
        v[kHostCalls] = calls[i];
        v[kGpuOps] = ops[i];
        v[kGpuNs] = op_ns[i];
        v[kLaunchDelayNs] = ops[i] > 0 ? delay[i] / ops[i] : 0;
        v[kBytes] = bytes[i];
        v[kOverlapNs] = overlap[i];
        x.node.push_back(i);
        x.step.push_back(s);
        x.features.push_back(v);
        // The time an instance stands for: its GPU time, else its own time less what it
        // spent waiting in synchronizations (a wrapper that waits for slow kernels is not
        // where the time goes); a synchronization call itself keeps its time.
        x.total.push_back(static_cast<int64_t>(ops[i] > 0  ? op_ns[i]
                                               : bare_call ? v[kSelfNs]
                                                           : std::max(0.0, dur - sync_ns[i])));
        // Operators of prefill, decode and mixed steps work on batches of very different
        // sizes: each step kind is its own family (our refinement of docs/method.md §3).
        const StringId kind = units[s].kind;
        // The same kernel or op name often serves several shapes (the four GEMMs of a
        // layer): the operator that precedes it among its siblings tells them apart.
        // GPU operations: the operation before them on their stream.
        const int64_t ctx = gpu_op ? prev_on_stream[i] : prev;
        const std::string before = ctx >= 0 ? FamilyName(t, r, static_cast<uint32_t>(ctx)) : "";
        x.family_key.push_back(FamilyName(t, r, i) + '\x1f' + std::string(LayerName(n.layer[i])) +
                               '\x1f' + std::string(kind != 0 ? t.strings.Get(kind) : "") + '\x1f' +
                               before);
      }
      // Children pushed last-first so that they are visited in order.
      for (uint32_t c = n.child_begin[i + 1]; c-- > n.child_begin[i];) {
        const int64_t before =
            c > n.child_begin[i] ? static_cast<int64_t>(n.child_index[c - 1]) : -1;
        todo.push_back({n.child_index[c], covered || op_range, before});
      }
    }
  }
  return x;
}

}  // namespace

struct Model::Impl {
  std::unordered_map<std::string, FamilyModel> families;
};
Model::Model() : impl_(std::make_unique<Impl>()) {}
Model::~Model() = default;
Model::Model(Model&&) noexcept = default;
Model& Model::operator=(Model&&) noexcept = default;
size_t Model::families() const { return impl_->families.size(); }

std::string FamilyName(const Trace& trace, const Reconstruction& r, uint32_t node) {
  const uint32_t e = r.nodes.event[node];
  const std::string_view name = trace.strings.Get(trace.events.name[e]);
  if (IsGpuWork(trace.events.type[e])) return std::string(name);
  std::string out;
  out.reserve(name.size());
  for (size_t i = 0; i < name.size(); ++i) {
    // Addresses ("at 0x7fdc1d2e4b80") vary per process and run.
    if (name[i] == '0' && i + 1 < name.size() && name[i + 1] == 'x') {
      out += "0x#";
      i += 2;
      while (i < name.size() && std::isxdigit(static_cast<unsigned char>(name[i]))) ++i;
      --i;
      continue;
    }
    if (std::isdigit(static_cast<unsigned char>(name[i]))) {
      if (out.empty() || out.back() != '#') out += '#';
    } else {
      out += name[i];
    }
  }
  return out;
}

Model FitBaseline(const std::vector<std::pair<const Trace*, const Reconstruction*>>& traces,
                  const Options& options) {
  std::unordered_map<std::string, std::vector<Vec>> x;
  std::unordered_map<std::string, std::vector<int64_t>> totals;
  for (const auto& [t, r] : traces) {
    Extracted e = Extract(*t, *r);
    for (size_t i = 0; i < e.node.size(); ++i) {
      x[e.family_key[i]].push_back(e.features[i]);
      totals[e.family_key[i]].push_back(e.total[i]);
    }
  }
  Model model;
  for (auto& [key, rows] : x) FitModel(rows, totals[key], options, &model.impl().families[key]);
  // The baseline scored by its own models: each family's usual level of suspiciousness.
  std::unordered_map<std::string, std::pair<double, uint32_t>> level;
  for (const auto& [t, r] : traces) {
    const Result self = Localize(*t, *r, options, &model);
    for (const StepFamily& sf : self.step_families) {
      auto& l = level[self.families[sf.family].key];
      l.first += sf.suspiciousness;
      ++l.second;
    }
  }
  for (auto& [key, m] : model.impl().families) {
    const auto it = level.find(key);
    if (it != level.end() && it->second.second > 0)
      m.baseline_a = it->second.first / it->second.second;
  }
  return model;
}

Result Localize(const Trace& trace, const Reconstruction& r, const Options& options,
                const Model* baseline) {
  Extracted x = Extract(trace, r);
  Result out;
  // Families of this trace, in order of first appearance.
  std::unordered_map<std::string, uint32_t> family_of;
  std::vector<std::vector<size_t>> members;
  std::vector<uint32_t> fam(x.node.size());
  for (size_t i = 0; i < x.node.size(); ++i) {
    auto [it, added] =
        family_of.emplace(x.family_key[i], static_cast<uint32_t>(out.families.size()));
    if (added) {
      Family f;
      f.key = x.family_key[i];
      f.name = x.family_key[i].substr(0, x.family_key[i].find('\x1f'));
      f.layer = r.nodes.layer[x.node[i]];
      out.families.push_back(f);
      members.emplace_back();
    }
    fam[i] = it->second;
    members[it->second].push_back(i);
  }
  // Score every family: with the baseline's model when it has one, else its own.
  std::vector<float> rho(x.node.size(), 1.0f);
  std::vector<double> family_level(out.families.size(), 0.0);
  std::vector<int64_t> expected(x.node.size(), 0);
  std::vector<Feature> top_feature(x.node.size(), kSelfNs);
  std::vector<float> top_z(x.node.size(), 0.0f);
  for (const auto& [key, id] : family_of) {
    const FamilyModel* model = nullptr;
    FamilyModel own;
    if (baseline != nullptr) {
      const auto it = baseline->impl().families.find(key);
      if (it != baseline->impl().families.end()) model = &it->second;
    }
    std::vector<Vec> rows;
    if (model == nullptr) {
      std::vector<int64_t> totals;
      for (size_t i : members[id]) {
        rows.push_back(x.features[i]);
        totals.push_back(x.total[i]);
      }
      FitModel(rows, totals, options, &own);
      model = &own;
    } else {
      out.families[id].from_baseline = true;
      family_level[id] = model->baseline_a;
    }
    out.families[id].count = static_cast<uint32_t>(members[id].size());
    out.families[id].mixture = model->mixture;
    out.families[id].median_ns = model->median_total_ns;
    for (size_t i : members[id]) {
      rho[i] = static_cast<float>(Rho(x.features[i], *model));
      expected[i] = static_cast<int64_t>(model->median_total_ns);
      // The feature that deviates most, to say what is abnormal about the instance.
      float best = 0;
      for (size_t f = 0; f < kFeatureCount; ++f) {
        if (!model->active[f]) continue;
        const double z =
            (std::log1p(std::max(0.0, x.features[i][f])) - model->median[f]) / model->scale[f];
        if (std::fabs(z) > std::fabs(best)) {
          best = static_cast<float>(z);
          top_feature[i] = static_cast<Feature>(f);
        }
      }
      top_z[i] = best;
      // Only time deviations below min_excess_ns: typical after all.
      if (rho[i] < 1.0f) {
        bool material = false;
        for (size_t f = 0; f < kFeatureCount && !material; ++f) {
          if (!model->active[f]) continue;
          const double z =
              (std::log1p(std::max(0.0, x.features[i][f])) - model->median[f]) / model->scale[f];
          if (std::fabs(z) < 4.0) continue;
          const bool time = f == kSelfNs || f == kHostCallNs || f == kGpuNs ||
                            f == kLaunchDelayNs || f == kOverlapNs;
          const double typical = std::expm1(model->median[f]);
          material = !time || std::fabs(x.features[i][f] - typical) >=
                                  static_cast<double>(options.min_excess_ns);
        }
        if (!material) rho[i] = 1.0f;
      }
    }
  }
  // Engine steps: rank steps with the same seq form a group. A trace without steps has
  // one group per process (its whole forest).
  const std::vector<Unit> units = Units(r);
  out.group_of_step.assign(units.size(), 0);
  if (r.steps.empty()) {
    for (uint32_t u = 0; u < units.size(); ++u) {
      out.group_of_step[u] = u;
      out.group_steps.emplace_back();
      out.group_roots.push_back(units[u].roots);
    }
  } else {
    std::unordered_map<std::string, uint32_t> by_seq;
    for (uint32_t st = 0; st < r.steps.size(); ++st) {
      std::vector<std::string> ids;
      std::string kind, seq;
      reconstruct::ParseStepMessage(
          trace.strings.Get(trace.events.name[r.nodes.event[r.steps[st].node]]), &ids, &kind, &seq);
      uint32_t g;
      if (!seq.empty() && by_seq.count(seq)) {
        g = by_seq[seq];
      } else {
        g = static_cast<uint32_t>(out.group_steps.size());
        out.group_steps.emplace_back();
        if (!seq.empty()) by_seq[seq] = g;
      }
      out.group_of_step[st] = g;
      out.group_steps[g].push_back(st);
    }
    for (const auto& steps : out.group_steps) {
      out.group_roots.emplace_back();
      for (uint32_t st : steps) out.group_roots.back().push_back(r.steps[st].node);
    }
  }
  const size_t groups = out.group_steps.size();
  out.group_score.assign(groups, 0.0f);
  out.suspicious.assign(groups, {});
  out.instances.reserve(x.node.size());
  std::vector<std::vector<uint32_t>> group_members(groups);
  for (size_t i = 0; i < x.node.size(); ++i) {
    Instance in;
    in.node = x.node[i];
    in.family = fam[i];
    in.step = x.step[i];
    in.rho = rho[i];
    in.anomaly = 1.0f - rho[i];
    in.total_ns = x.total[i];
    in.expected_ns = expected[i];
    in.top_feature = top_feature[i];
    in.top_z = top_z[i];
    group_members[out.group_of_step[x.step[i]]].push_back(
        static_cast<uint32_t>(out.instances.size()));
    out.instances.push_back(in);
  }
  // Structure: a family that appears in only a few steps of its kind (a fallback kernel,
  // NCCL's ring kernel in place of the custom all-reduce), or, in baseline mode, one the
  // baseline never ran, is anomalous wherever it appears, however typical its durations
  // are among themselves.
  std::vector<bool> rare(out.families.size(), false);
  {
    std::vector<uint32_t> presence(out.families.size(), 0);
    std::unordered_map<std::string, uint32_t> kind_groups;
    std::vector<std::string> group_kind(groups);
    for (uint32_t g = 0; g < groups; ++g) {
      std::set<uint32_t> seen;
      for (uint32_t i : group_members[g]) {
        seen.insert(out.instances[i].family);
        if (group_kind[g].empty()) {
          const std::string& key = out.families[out.instances[i].family].key;
          const size_t a = key.find('\x1f', key.find('\x1f') + 1);
          group_kind[g] = key.substr(a + 1, key.find('\x1f', a + 1) - a - 1) + "\x1f";
        }
      }
      for (uint32_t f : seen) ++presence[f];
      ++kind_groups[group_kind[g]];
    }
    for (size_t f = 0; f < out.families.size(); ++f) {
      const std::string& key = out.families[f].key;
      const size_t a = key.find('\x1f', key.find('\x1f') + 1);
      const std::string kind = key.substr(a + 1, key.find('\x1f', a + 1) - a - 1) + "\x1f";
      const uint32_t total = kind_groups[kind];
      const bool seldom = total >= 20 && presence[f] * 20 < total;
      const bool unseen = baseline != nullptr && !out.families[f].from_baseline;
      rare[f] = seldom || unseen;
    }
  }
  for (uint32_t g = 0; g < groups; ++g) {
    // A_{s,t} per family present in the engine step.
    std::map<uint32_t, std::vector<uint32_t>> by_family;
    for (uint32_t i : group_members[g]) by_family[out.instances[i].family].push_back(i);
    for (auto& [f, list] : by_family) {
      if (rare[f]) {
        for (uint32_t i : list) {
          Instance& in = out.instances[i];
          in.anomaly = std::max(in.anomaly, 0.9f);
          in.rho = 1.0f - in.anomaly;
        }
      }
      std::vector<float> values;
      for (uint32_t i : list) values.push_back(out.instances[i].rho);
      std::sort(values.begin(), values.end());
      const size_t k = std::max<size_t>(
          1,
          static_cast<size_t>(std::floor(options.quantile * static_cast<double>(values.size()))));
      double mean = 0;
      for (size_t j = 0; j < k; ++j) mean += values[j];
      mean /= static_cast<double>(k);
      StepFamily sf;
      sf.step = g;
      sf.family = f;
      sf.m = static_cast<uint32_t>(list.size());
      sf.suspiciousness = static_cast<float>(std::max(0.0, 1.0 - mean - family_level[f]));
      size_t anomalous = 0;
      for (uint32_t i : list) anomalous += out.instances[i].anomaly > options.instance_threshold;
      sf.candidate = sf.suspiciousness > options.family_threshold &&
                     anomalous >= std::min(options.min_suspicious, list.size());
      // The step's score: its most suspicious candidate family; families with a lone
      // outlier count at half weight.
      out.group_score[g] =
          std::max(out.group_score[g], sf.candidate ? sf.suspiciousness : 0.5f * sf.suspiciousness);
      if (sf.candidate) {
        for (uint32_t i : list) {
          if (out.instances[i].anomaly > options.instance_threshold) out.suspicious[g].push_back(i);
        }
      }
      out.step_families.push_back(sf);
    }
  }
  return out;
}

}  // namespace teller::localize
