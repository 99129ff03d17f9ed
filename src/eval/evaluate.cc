// Splits, scoring per view, averaging and the tables (include/teller/eval/evaluate.h).
#include "teller/eval/evaluate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <random>
#include <set>

#include "teller/core/json_writer.h"
#include "teller/core/vocabulary.h"
#include "teller/format/ground_truth.h"

namespace teller::eval {
namespace {

std::string Num(double v, int digits = 4) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

// Requests of a set of units, in order of first appearance, with their units.
struct RequestGroups {
  std::vector<std::string> keys;
  std::map<std::string, std::vector<uint32_t>> units;
};
RequestGroups GroupByRequest(const Dataset& ds, const std::vector<uint32_t>& units) {
  RequestGroups g;
  for (uint32_t i : units) {
    const Unit& u = ds.units[i];
    std::string key = ds.settings[u.setting].name + '\0' + u.request;
    auto [it, fresh] = g.units.try_emplace(key);
    if (fresh) g.keys.push_back(key);
    it->second.push_back(i);
  }
  return g;
}

}  // namespace

Result<Incidents> GroupIncidents(const Dataset& ds) {
  Incidents out;
  out.of_unit.assign(ds.units.size(), UINT32_MAX);
  // Per setting and record: the record's time and fault, and its units.
  struct Rec {
    int64_t start = 0, end = 0, fault = -1;
    std::string category, mechanism;
    std::vector<uint32_t> units;
  };
  std::vector<std::vector<Rec>> recs(ds.settings.size());
  for (uint32_t s = 0; s < ds.settings.size(); ++s) recs[s].resize(ds.settings[s].records.size());
  for (uint32_t i = 0; i < ds.units.size(); ++i) {
    const Unit& u = ds.units[i];
    const std::string& setting = ds.settings[u.setting].name;
    if (!u.has_incident) {
      return Status::Error(setting +
                           "/steps.jsonl: the steps carry no engine-step times and fault "
                           "ids (a dataset from an older `teller dataset build`); "
                           "rebuild it for the incident split, or use --split engine");
    }
    Rec& r = recs[u.setting][u.record];
    if (r.units.empty()) {
      r.start = u.start_ns;
      r.end = u.end_ns;
      r.fault = u.fault;
    } else if (r.start != u.start_ns || r.end != u.end_ns || r.fault != u.fault) {
      return Status::Error(setting + "/steps.jsonl: request " + u.request + " at seq " +
                           std::to_string(u.seq) +
                           " gives the engine step another time or fault than its batch");
    }
    if (u.is_anomaly && r.category.empty()) {
      r.category = u.fault_type;
      r.mechanism = u.mechanism;
    }
    r.units.push_back(i);
  }
  // Fault windows per setting: the span of each fault's records, overlapping spans merged.
  struct Window {
    int64_t start = 0, end = 0;
    std::vector<int64_t> faults;
    std::string category, mechanism;
  };
  std::vector<std::vector<Window>> windows(ds.settings.size());
  std::vector<int64_t> all_spans;
  for (uint32_t s = 0; s < ds.settings.size(); ++s) {
    std::map<int64_t, Window> by_fault;
    for (const Rec& r : recs[s]) {
      if (r.units.empty() || r.fault < 0) continue;
      auto [it, fresh] = by_fault.try_emplace(r.fault);
      Window& w = it->second;
      if (fresh) {
        w.start = r.start;
        w.end = r.end;
        w.faults = {r.fault};
      }
      w.start = std::min(w.start, r.start);
      w.end = std::max(w.end, r.end);
      if (w.category.empty() && !r.category.empty()) {
        w.category = r.category;
        w.mechanism = r.mechanism;
      }
    }
    std::vector<Window> sorted;
    for (auto& [id, w] : by_fault) sorted.push_back(std::move(w));
    std::sort(sorted.begin(), sorted.end(), [](const Window& a, const Window& b) {
      return a.start != b.start ? a.start < b.start : a.faults < b.faults;
    });
    for (Window& w : sorted) {
      if (!windows[s].empty() && w.start < windows[s].back().end) {
        Window& last = windows[s].back();
        last.end = std::max(last.end, w.end);
        last.faults.insert(last.faults.end(), w.faults.begin(), w.faults.end());
        if (last.category.empty()) {
          last.category = w.category;
          last.mechanism = w.mechanism;
        }
      } else {
        windows[s].push_back(std::move(w));
      }
    }
  }
  for (const auto& ws : windows) {
    for (const Window& w : ws) all_spans.push_back(w.end - w.start);
  }
  auto median = [](std::vector<int64_t> v) -> int64_t {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  const int64_t dataset_block = std::max<int64_t>(1, median(all_spans));
  for (uint32_t s = 0; s < ds.settings.size(); ++s) {
    std::vector<int64_t> spans;
    for (const Window& w : windows[s]) spans.push_back(w.end - w.start);
    int64_t block = median(spans);
    if (block <= 0) block = all_spans.empty() ? 1000000000 : dataset_block;
    out.block_ns.push_back(block);
    // Records in time order (seq breaks ties).
    std::vector<uint32_t> order;
    for (uint32_t r = 0; r < recs[s].size(); ++r) {
      if (!recs[s][r].units.empty()) order.push_back(r);
    }
    std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
      const Rec& x = recs[s][a];
      const Rec& y = recs[s][b];
      if (x.start != y.start) return x.start < y.start;
      return ds.settings[s].records[a].seq < ds.settings[s].records[b].seq;
    });
    const size_t first_window = out.incidents.size();
    for (const Window& w : windows[s]) {
      Incident inc;
      inc.setting = s;
      inc.fault = true;
      inc.category = w.category;
      inc.mechanism = w.mechanism;
      inc.faults = w.faults;
      inc.start_ns = w.start;
      inc.end_ns = w.end;
      out.incidents.push_back(std::move(inc));
    }
    auto window_of = [&](const Rec& r) -> int64_t {
      for (size_t k = 0; k < windows[s].size(); ++k) {
        const Window& w = windows[s][k];
        if (r.fault >= 0 && std::find(w.faults.begin(), w.faults.end(), r.fault) != w.faults.end())
          return static_cast<int64_t>(k);
        if (r.fault < 0 && r.start >= w.start && r.start < w.end) return static_cast<int64_t>(k);
      }
      return -1;
    };
    int64_t open_block = -1;  // incident index of the healthy block being filled
    for (uint32_t r : order) {
      const Rec& rec = recs[s][r];
      const int64_t k = window_of(rec);
      uint32_t target = 0;
      if (k >= 0) {
        target = static_cast<uint32_t>(first_window + static_cast<size_t>(k));
        open_block = -1;  // a window ends the healthy run
      } else {
        if (open_block < 0 || rec.start - out.incidents[open_block].start_ns >= block) {
          Incident inc;
          inc.setting = s;
          inc.start_ns = rec.start;
          inc.end_ns = rec.end;
          open_block = static_cast<int64_t>(out.incidents.size());
          out.incidents.push_back(std::move(inc));
        }
        target = static_cast<uint32_t>(open_block);
      }
      Incident& inc = out.incidents[target];
      inc.end_ns = std::max(inc.end_ns, rec.end);
      ++inc.records;
      for (uint32_t i : rec.units) out.of_unit[i] = target;
    }
  }
  for (uint32_t i = 0; i < ds.units.size(); ++i) out.incidents[out.of_unit[i]].units.push_back(i);
  // Windows first, then blocks, within a setting: order by setting, then start.
  std::vector<uint32_t> perm(out.incidents.size());
  for (uint32_t k = 0; k < perm.size(); ++k) perm[k] = k;
  std::stable_sort(perm.begin(), perm.end(), [&](uint32_t a, uint32_t b) {
    const Incident& x = out.incidents[a];
    const Incident& y = out.incidents[b];
    return x.setting != y.setting ? x.setting < y.setting : x.start_ns < y.start_ns;
  });
  std::vector<uint32_t> new_index(perm.size());
  std::vector<Incident> sorted;
  for (uint32_t k = 0; k < perm.size(); ++k) {
    new_index[perm[k]] = k;
    sorted.push_back(std::move(out.incidents[perm[k]]));
  }
  out.incidents = std::move(sorted);
  for (uint32_t& g : out.of_unit) g = new_index[g];
  return out;
}

SharedRecordCount CountSharedRecords(const Dataset& ds, const Fold& fold) {
  std::set<std::pair<uint32_t, uint32_t>> train, counted;
  for (uint32_t i : fold.train) train.emplace(ds.units[i].setting, ds.units[i].record);
  SharedRecordCount out;
  for (uint32_t i : fold.test) {
    const std::pair<uint32_t, uint32_t> key(ds.units[i].setting, ds.units[i].record);
    if (train.count(key) == 0) continue;
    ++out.test_units;
    if (counted.insert(key).second) ++out.records;
  }
  return out;
}

const char* SplitName(SplitKind kind) {
  switch (kind) {
    case SplitKind::kIncident:
      return "incident";
    case SplitKind::kRequest:
      return "request";
    case SplitKind::kEngine:
      return "engine";
    case SplitKind::kRun:
      return "run";
  }
  return "?";
}

Result<SplitKind> ParseSplit(const std::string& name) {
  if (name == "incident") return SplitKind::kIncident;
  if (name == "request") return SplitKind::kRequest;
  if (name == "engine") return SplitKind::kEngine;
  if (name == "run") return SplitKind::kRun;
  return Status::Error("unknown split \"" + name + "\"; expected incident, request, engine or run");
}

namespace {
// Deals n shuffled groups into a fold's parts, whole: the first 10% (rounded; at least
// one group when there are three or more) to test, the next 10% to validation, the rest
// to train. units_of(k) gives the units of group k.
template <typename UnitsOf>
void Deal(size_t n, UnitsOf units_of, Fold* f) {
  size_t n_test = (n + 5) / 10, n_val = (n + 5) / 10;
  if (n >= 3) n_test = std::max<size_t>(n_test, 1);
  if (n_test + n_val >= n) n_val = 0;
  for (size_t k = 0; k < n; ++k) {
    std::vector<uint32_t>& part = k < n_test           ? f->test
                                  : k < n_test + n_val ? f->validation
                                                       : f->train;
    const std::vector<uint32_t>& us = units_of(k);
    part.insert(part.end(), us.begin(), us.end());
  }
}

// K-fold cross-validation over shuffled groups: group g of the whole deal (counted on
// across strata) goes to part g mod K; fold i tests part i, validates on part i+1 and
// trains on the rest.
class KFoldDeal {
 public:
  KFoldDeal(int k, std::string what) : parts_(static_cast<size_t>(k)), what_(std::move(what)) {
    for (int i = 0; i < k; ++i) {
      folds_.emplace_back();
      folds_.back().name = "fold " + std::to_string(i + 1) + "/" + std::to_string(k);
    }
  }
  template <typename UnitsOf>
  void Add(size_t n, UnitsOf units_of) {
    for (size_t k = 0; k < n; ++k, ++next_) {
      std::vector<uint32_t>& part = parts_[next_ % parts_.size()];
      const std::vector<uint32_t>& us = units_of(k);
      part.insert(part.end(), us.begin(), us.end());
    }
  }
  Result<std::vector<Fold>> Finish() {
    const size_t k = parts_.size();
    if (next_ < k) {
      return Status::Error(std::to_string(k) + "-fold cross-validation needs at least " +
                           std::to_string(k) + " " + what_ + "s; the dataset has " +
                           std::to_string(next_));
    }
    for (size_t i = 0; i < k; ++i) {
      Fold& f = folds_[i];
      for (size_t j = 0; j < k; ++j) {
        std::vector<uint32_t>& to = j == i ? f.test : j == (i + 1) % k ? f.validation : f.train;
        to.insert(to.end(), parts_[j].begin(), parts_[j].end());
      }
      for (auto* v : {&f.train, &f.validation, &f.test}) std::sort(v->begin(), v->end());
    }
    return std::move(folds_);
  }

 private:
  std::vector<std::vector<uint32_t>> parts_;
  std::string what_;
  std::vector<Fold> folds_;
  size_t next_ = 0;
};

}  // namespace

Result<std::vector<Fold>> MakeFolds(const Dataset& ds, SplitKind kind, uint64_t seed, int k_folds) {
  if (k_folds != 1 && (k_folds < 3 || k_folds > kMaxFolds)) {
    return Status::Error("--folds takes 1 (one 80/10/10 cut) or 3 to " + std::to_string(kMaxFolds) +
                         ", got " + std::to_string(k_folds));
  }
  if (k_folds != 1 && kind != SplitKind::kIncident && kind != SplitKind::kRequest) {
    return Status::Error(std::string("the ") + SplitName(kind) +
                         " split holds each group out in turn already; --folds applies to the "
                         "incident and request splits");
  }
  std::vector<Fold> folds;
  if (kind == SplitKind::kIncident) {
    auto grouped = GroupIncidents(ds);
    if (!grouped.ok()) return grouped.status();
    const Incidents& g = grouped.value();
    // Strata: fault windows by category across settings (so that every category reaches
    // the test part), healthy blocks per setting.
    std::map<std::pair<uint32_t, std::string>, std::vector<uint32_t>> strata;
    for (uint32_t k = 0; k < g.incidents.size(); ++k) {
      const Incident& inc = g.incidents[k];
      strata[inc.fault ? std::pair<uint32_t, std::string>(UINT32_MAX, "fault " + inc.category)
                       : std::pair<uint32_t, std::string>(inc.setting, "healthy")]
          .push_back(k);
    }
    Fold f;
    f.name = "test";
    std::mt19937_64 rng(seed);
    KFoldDeal kfold(k_folds, "incident");
    for (auto& stratum : strata) {
      std::vector<uint32_t>& members = stratum.second;
      Shuffle(members, rng);  // members are in incident order: input order does not matter
      if (k_folds > 1) {
        kfold.Add(members.size(), [&](size_t k) -> const std::vector<uint32_t>& {
          return g.incidents[members[k]].units;
        });
        continue;
      }
      Deal(
          members.size(),
          [&](size_t k) -> const std::vector<uint32_t>& { return g.incidents[members[k]].units; },
          &f);
    }
    if (k_folds > 1) return kfold.Finish();
    for (auto* v : {&f.train, &f.validation, &f.test}) std::sort(v->begin(), v->end());
    if (f.test.empty())
      return Status::Error("the incident split leaves no test incidents (too few steps)");
    folds.push_back(std::move(f));
    return folds;
  }
  if (kind == SplitKind::kRequest) {
    // Per setting, so that every engine appears in train, validation and test alike.
    Fold f;
    f.name = "test";
    std::mt19937_64 rng(seed);
    KFoldDeal kfold(k_folds, "request");
    for (uint32_t s = 0; s < ds.settings.size(); ++s) {
      std::vector<uint32_t> units;
      for (uint32_t i = 0; i < ds.units.size(); ++i) {
        if (ds.units[i].setting == s) units.push_back(i);
      }
      RequestGroups g = GroupByRequest(ds, units);
      std::sort(g.keys.begin(), g.keys.end());  // input order must not matter
      Shuffle(g.keys, rng);
      if (k_folds > 1) {
        kfold.Add(g.keys.size(),
                  [&](size_t k) -> const std::vector<uint32_t>& { return g.units[g.keys[k]]; });
        continue;
      }
      Deal(
          g.keys.size(),
          [&](size_t k) -> const std::vector<uint32_t>& { return g.units[g.keys[k]]; }, &f);
    }
    if (k_folds > 1) return kfold.Finish();
    for (auto* v : {&f.train, &f.validation, &f.test}) std::sort(v->begin(), v->end());
    if (f.test.empty())
      return Status::Error("the request split leaves no test requests (too few requests)");
    folds.push_back(std::move(f));
    return folds;
  }
  // Leave one group out.
  std::vector<std::string> group_of_setting;
  for (const Setting& s : ds.settings)
    group_of_setting.push_back(kind == SplitKind::kEngine ? s.engine : s.name);
  std::vector<std::string> groups(group_of_setting.begin(), group_of_setting.end());
  std::sort(groups.begin(), groups.end());
  groups.erase(std::unique(groups.begin(), groups.end()), groups.end());
  if (groups.size() < 2) {
    return Status::Error(std::string("the ") + SplitName(kind) + " split needs at least two " +
                         (kind == SplitKind::kEngine ? "engines" : "runs") + "; the dataset has " +
                         std::to_string(groups.size()));
  }
  for (const std::string& held_out : groups) {
    Fold f;
    f.name = held_out;
    std::vector<uint32_t> rest;
    for (uint32_t i = 0; i < ds.units.size(); ++i) {
      (group_of_setting[ds.units[i].setting] == held_out ? f.test : rest).push_back(i);
    }
    // A validation tenth of the training requests (for thresholds of unsupervised methods).
    std::mt19937_64 rng(seed);
    RequestGroups g = GroupByRequest(ds, rest);
    std::sort(g.keys.begin(), g.keys.end());
    Shuffle(g.keys, rng);
    const size_t n_val = (g.keys.size() + 5) / 10;
    for (size_t k = 0; k < g.keys.size(); ++k) {
      std::vector<uint32_t>& part = k < n_val ? f.validation : f.train;
      const std::vector<uint32_t>& us = g.units[g.keys[k]];
      part.insert(part.end(), us.begin(), us.end());
    }
    std::sort(f.train.begin(), f.train.end());
    std::sort(f.validation.begin(), f.validation.end());
    folds.push_back(std::move(f));
  }
  return folds;
}

uint64_t RootCauseKey(const StepColumns& record, uint32_t node) {
  const uint64_t family = (static_cast<uint64_t>(record.name[node]) << 3) | record.layer[node];
  return (family << 20) | static_cast<uint32_t>(record.rank[node] + 1) % (1u << 20);
}

std::vector<uint32_t> RootNodes(const StepColumns& record, const ViewLabel& label) {
  if (!label.has_roots) return RootNodesByLayer(record, label.nodes);
  std::vector<uint32_t> out;
  for (uint32_t n : label.roots) {
    if (n < record.size()) out.push_back(n);
  }
  return out;
}

std::vector<uint32_t> RootNodesByLayer(const StepColumns& record,
                                       const std::vector<uint32_t>& labelled) {
  std::vector<uint32_t> out;
  for (uint32_t n : labelled) {
    if (n < record.size() && record.layer[n] != kLayerComm) out.push_back(n);
  }
  if (!out.empty()) return out;
  for (uint32_t n : labelled) {
    if (n < record.size()) out.push_back(n);
  }
  return out;
}

Scores ScoreUnits(const Dataset& ds, const Predictions& predictions,
                  const std::vector<uint32_t>& units, const ScoreOptions& options) {
  Scores out;
  std::vector<std::string> classes;
  for (const FaultCategory c : kAllFaultCategories) classes.emplace_back(FaultCategoryName(c));
  static const Prediction kNone;
  for (View v : kViews) {
    ViewScores& vs = out.views[static_cast<int>(v)];
    BinaryCounts counts;
    OperatorAccumulator ops;
    RootCauseAccumulator roots;
    std::vector<uint64_t> ranked, truth;
    std::vector<std::string> fault_labels, fault_predicted, candidates, references;
    std::vector<uint8_t> labels, flags;
    std::vector<double> scores;
    static const std::vector<uint32_t> kEmpty;
    for (uint32_t i : units) {
      const Unit& u = ds.units[i];
      const ViewLabel& label = u.view(v);
      const Prediction& p = i < predictions.units.size() ? predictions.at(i, v) : kNone;
      ++vs.units;
      vs.missing += !p.present;
      counts.Add(label.is_anomaly, p.abnormal);
      ops.Add(p.abnormal ? p.nodes : kEmpty, label.nodes, p.abnormal);
      if (label.is_anomaly && !label.nodes.empty()) {
        const StepColumns& rec = ds.settings[u.setting].records[u.record];
        if (rec.size() > 0) {
          truth.clear();
          ranked.clear();
          for (uint32_t n : RootNodes(rec, label)) truth.push_back(RootCauseKey(rec, n));
          for (uint32_t n : p.nodes) {
            if (n < rec.size()) ranked.push_back(RootCauseKey(rec, n));
          }
          roots.Add(ranked, truth, p.abnormal);
        }
      }
      labels.push_back(label.is_anomaly);
      flags.push_back(p.abnormal);
      scores.push_back(p.present ? p.score : 0.0);
      if (label.is_anomaly) {
        fault_labels.push_back(u.fault_type);
        fault_predicted.push_back(p.abnormal ? p.fault_type : std::string());
        if (!u.explanation.empty()) {
          references.push_back(u.explanation);
          candidates.push_back(p.abnormal ? p.explanation : std::string());
        }
      }
    }
    vs.step = ComputeStepMetrics(counts);
    vs.op = ops.Finish();
    vs.root = roots.Finish();
    vs.fault = ComputeFaultTypeMetrics(fault_labels, fault_predicted, classes);
    vs.bleu = CorpusBleu(candidates, references);
    if (options.low_prior)
      vs.low_prior = LowPrior(labels, flags, scores, options.low_prior_options);
  }
  return out;
}

EngineStepUnits CollapseToEngineSteps(const Dataset& ds) {
  EngineStepUnits out;
  out.dataset.root = ds.root;
  for (const Setting& st : ds.settings) {
    Setting copy;
    copy.name = st.name;
    copy.source = st.source;
    copy.engine = st.engine;
    copy.records.resize(st.records.size());
    for (size_t r = 0; r < st.records.size(); ++r) copy.records[r].seq = st.records[r].seq;
    out.dataset.settings.push_back(std::move(copy));
  }
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> index;
  out.unit_of.resize(ds.units.size());
  for (uint32_t i = 0; i < ds.units.size(); ++i) {
    const Unit& u = ds.units[i];
    auto [it, fresh] =
        index.try_emplace({u.setting, u.record}, static_cast<uint32_t>(out.dataset.units.size()));
    out.unit_of[i] = it->second;
    if (fresh) {
      Unit step = u;
      step.request = "";  // the engine step, not one of its requests
      step.is_anomaly = false;
      step.fault_type.clear();
      step.mechanism.clear();
      step.explanation.clear();
      step.views[0] = step.views[1] = ViewLabel{};
      out.dataset.units.push_back(std::move(step));
    }
    Unit& step = out.dataset.units[it->second];
    if (u.is_anomaly && !step.is_anomaly) {
      step.fault_type = u.fault_type;
      step.mechanism = u.mechanism;
      step.explanation = u.explanation;
    }
    step.is_anomaly |= u.is_anomaly;
    for (int v = 0; v < 2; ++v) {
      ViewLabel& l = step.views[v];
      l.is_anomaly |= u.views[v].is_anomaly;
      // Each list sorted and unique: the union of the requests' nodes, and of their roots
      // (requests that the step left normal have none to add).
      for (auto list : {&ViewLabel::nodes, &ViewLabel::roots}) {
        std::vector<uint32_t>& into = l.*list;
        const std::vector<uint32_t>& add = u.views[v].*list;
        into.insert(into.end(), add.begin(), add.end());
        std::sort(into.begin(), into.end());
        into.erase(std::unique(into.begin(), into.end()), into.end());
      }
      l.has_roots |= u.views[v].has_roots;
    }
  }
  return out;
}

std::vector<uint32_t> EngineStepsOf(const EngineStepUnits& steps,
                                    const std::vector<uint32_t>& units) {
  std::vector<uint32_t> out;
  for (uint32_t i : units) out.push_back(steps.unit_of[i]);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

Predictions CollapsePredictions(const EngineStepUnits& steps, const Predictions& predictions,
                                const std::vector<uint32_t>& units) {
  Predictions out;
  out.units.resize(steps.dataset.units.size());
  for (uint32_t i : units) {
    if (i >= predictions.units.size()) continue;
    for (View v : kViews) {
      const Prediction& p = predictions.at(i, v);
      if (!p.present) continue;
      Prediction& q = out.at(steps.unit_of[i], v);
      if (!q.present) {
        q = p;
        continue;
      }
      q.score = std::max(q.score, p.score);
      if (p.abnormal && !q.abnormal) {
        q.abnormal = true;
        q.fault_type = p.fault_type;
        q.nodes = p.nodes;
        q.explanation = p.explanation;
      }
    }
  }
  return out;
}

Scores AverageScores(const std::vector<Scores>& folds) {
  Scores out;
  if (folds.empty()) return out;
  const double n = static_cast<double>(folds.size());
  for (int v = 0; v < 2; ++v) {
    ViewScores& o = out.views[v];
    for (const Scores& f : folds) {
      const ViewScores& s = f.views[v];
      o.units += s.units;
      o.missing += s.missing;
      o.step.accuracy += s.step.accuracy / n;
      o.step.precision += s.step.precision / n;
      o.step.recall += s.step.recall / n;
      o.step.f1 += s.step.f1 / n;
      o.step.steps += s.step.steps;
      o.step.positives += s.step.positives;
      o.step.predicted_positives += s.step.predicted_positives;
      o.op.detection_recall += s.op.detection_recall / n;
      o.root.top1 += s.root.top1 / n;
      o.root.top3 += s.root.top3 / n;
      o.root.units += s.root.units;
      for (auto [dst, src] :
           {std::pair{&o.op.macro, &s.op.macro}, std::pair{&o.op.macro_plus, &s.op.macro_plus},
            std::pair{&o.op.detected, &s.op.detected}}) {
        dst->precision += src->precision / n;
        dst->recall += src->recall / n;
        dst->f1 += src->f1 / n;
        dst->jaccard += src->jaccard / n;
        dst->steps += src->steps;
      }
      o.fault.accuracy += s.fault.accuracy / n;
      o.fault.macro_recall += s.fault.macro_recall / n;
      o.fault.macro_f1 += s.fault.macro_f1 / n;
      o.fault.steps += s.fault.steps;
      for (int k = 0; k < 4; ++k) {
        o.bleu.bleu[k] += s.bleu.bleu[k] / n;
        o.bleu.precision[k] += s.bleu.precision[k] / n;
      }
      o.bleu.brevity_penalty += s.bleu.brevity_penalty / n;
      o.bleu.sentences += s.bleu.sentences;
      o.bleu.candidate_tokens += s.bleu.candidate_tokens;
      o.bleu.reference_tokens += s.bleu.reference_tokens;
    }
    // Low prior: averaged over the folds where the resample could be drawn.
    const size_t priors = folds.front().views[v].low_prior.size();
    o.low_prior.resize(priors);
    for (size_t k = 0; k < priors; ++k) {
      LowPriorRow& row = o.low_prior[k];
      int drawn = 0;
      for (const Scores& f : folds) {
        if (k >= f.views[v].low_prior.size()) continue;
        const LowPriorRow& r = f.views[v].low_prior[k];
        row.prior = r.prior;
        if (r.repetitions == 0) continue;
        ++drawn;
        row.positives += r.positives;
        row.negatives += r.negatives;
        row.repetitions += r.repetitions;
        row.recall += r.recall;
        row.f1 += r.f1;
        row.auprc += r.auprc;
        row.auroc += r.auroc;
        row.recall_sd += r.recall_sd;
        row.f1_sd += r.f1_sd;
        row.auprc_sd += r.auprc_sd;
        row.auroc_sd += r.auroc_sd;
      }
      if (drawn == 0) continue;
      for (double* x : {&row.recall, &row.f1, &row.auprc, &row.auroc, &row.recall_sd, &row.f1_sd,
                        &row.auprc_sd, &row.auroc_sd}) {
        *x /= drawn;
      }
    }
  }
  return out;
}

std::string ScoresJson(const Scores& s, const std::string& split, uint64_t seed) {
  constexpr JsonDoubles kScore = JsonDoubles::kFixed4;  // the tables' four decimals
  std::string out;
  JsonObjectWriter doc(out, kScore);
  for (View v : {View::kHorizontal, View::kVertical}) {
    const ViewScores& vs = s.view(v);
    doc.Key(ViewName(v));
    JsonObjectWriter view(out, kScore);
    view.Key("step");
    JsonObjectWriter(out, kScore)
        .Field("accuracy", vs.step.accuracy)
        .Field("precision", vs.step.precision)
        .Field("recall", vs.step.recall)
        .Field("f1", vs.step.f1)
        .Close();
    view.Key("operator");
    JsonObjectWriter op(out, kScore);
    for (const auto& [key, a] : {std::pair<const char*, const SetAverages&>{"macro", vs.op.macro},
                                 {"macro_plus", vs.op.macro_plus}}) {
      op.Key(key);
      JsonObjectWriter(out, kScore)
          .Field("precision", a.precision)
          .Field("f1", a.f1)
          .Field("jaccard", a.jaccard)
          .Close();
    }
    op.Key("root_cause");
    JsonObjectWriter(out, kScore).Field("top1", vs.root.top1).Field("top3", vs.root.top3).Close();
    op.Key("macro_plus_detected");
    JsonObjectWriter(out, kScore)
        .Field("detection_recall", vs.op.detection_recall)
        .Field("f1", vs.op.detected.f1)
        .Close();
    op.Close();
    view.Key("fault_type");
    JsonObjectWriter(out, kScore)
        .Field("accuracy", vs.fault.accuracy)
        .Field("macro_recall", vs.fault.macro_recall)
        .Field("macro_f1", vs.fault.macro_f1)
        .Close();
    view.Close();
  }
  doc.Field("split", split).Field("seed", seed).Close();
  out += '\n';
  return out;
}

namespace {

// `headline`: the text and Markdown tables, which show "-" for a root-cause rate with no
// unit to rate (the CSV keeps 0, as the JSON does).
std::vector<std::string> RowCells(const TableRow& r, int digits, bool headline = false) {
  const ViewScores& s = r.scores.view(r.view == "horizontal" ? View::kHorizontal : View::kVertical);
  return {r.method,
          r.view == "horizontal" ? "H" : "V",
          Num(s.step.accuracy, digits),
          Num(s.step.precision, digits),
          Num(s.step.recall, digits),
          Num(s.step.f1, digits),
          Num(s.op.macro.precision, digits),
          Num(s.op.macro.f1, digits),
          Num(s.op.macro.jaccard, digits),
          Num(s.op.macro_plus.precision, digits),
          Num(s.op.macro_plus.f1, digits),
          Num(s.op.macro_plus.jaccard, digits),
          Num(s.fault.accuracy, digits),
          Num(s.fault.macro_recall, digits),
          Num(s.fault.macro_f1, digits),
          Num(s.bleu.bleu[0], digits),
          Num(s.bleu.bleu[1], digits),
          Num(s.bleu.bleu[2], digits),
          Num(s.bleu.bleu[3], digits),
          Num(s.op.detection_recall, digits),
          Num(s.op.detected.f1, digits),
          headline && s.root.units == 0 ? "-" : Num(s.root.top1, digits),
          headline && s.root.units == 0 ? "-" : Num(s.root.top3, digits)};
}

const std::vector<std::string>& Header() {
  static const std::vector<std::string> h = {
      "method",     "view",        "step acc",   "step P",      "step R",       "step F1",
      "op macro P", "op macro F1", "op macro J", "op macro+ P", "op macro+ F1", "op macro+ J",
      "type acc",   "type mR",     "type mF1",   "BLEU-1",      "BLEU-2",       "BLEU-3",
      "BLEU-4",     "op det R",    "op F1|det",  "root top-1",  "root top-3"};
  return h;
}

// The headline tables (text and Markdown) leave plain Macro out: a method that says
// "normal" everywhere scores high on it (both-empty sets count 1). It stays in the CSV
// and the JSON.
constexpr size_t kHeadline[] = {0,  1,  2,  3,  4,  5,  9,  10, 11, 19,
                                20, 21, 22, 12, 13, 14, 15, 16, 17, 18};

std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

}  // namespace

std::string Table2Text(const std::vector<TableRow>& rows) {
  // Grouped like the paper's Table 2: step | operator Macro | Macro+ | fault type | BLEU.
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "%-34s %-2s | %-23s | %-29s | %-11s | %-17s | %s\n", "", "",
                "step", "op macro+ (= det R x F1|det)", "root cause", "fault type", "BLEU");
  out += line;
  std::snprintf(line, sizeof line,
                "%-34s %-2s | %5s %5s %5s %5s | %5s %5s %5s %5s %5s | %5s %5s | %5s %5s %5s | %5s "
                "%5s %5s %5s\n",
                "method", "v", "acc", "P", "R", "F1", "P", "F1", "J", "detR", "F1|d", "top1",
                "top3", "acc", "mR", "mF1", "1", "2", "3", "4");
  out += line;
  for (const TableRow& r : rows) {
    const std::vector<std::string> all = RowCells(r, 3, true);
    std::vector<std::string> c;
    for (size_t k : kHeadline) c.push_back(all[k]);
    std::snprintf(line, sizeof line,
                  "%-34s %-2s | %5s %5s %5s %5s | %5s %5s %5s %5s %5s | %5s %5s | %5s %5s %5s | "
                  "%5s %5s %5s %5s\n",
                  c[0].substr(0, 34).c_str(), c[1].c_str(), c[2].c_str(), c[3].c_str(),
                  c[4].c_str(), c[5].c_str(), c[6].c_str(), c[7].c_str(), c[8].c_str(),
                  c[9].c_str(), c[10].c_str(), c[11].c_str(), c[12].c_str(), c[13].c_str(),
                  c[14].c_str(), c[15].c_str(), c[16].c_str(), c[17].c_str(), c[18].c_str(),
                  c[19].c_str());
    out += line;
  }
  return out;
}

std::string Table2Markdown(const std::vector<TableRow>& rows) {
  std::string out = "|";
  for (size_t k : kHeadline) out += " " + Header()[k] + " |";
  out += "\n|";
  for (size_t i = 0; i < std::size(kHeadline); ++i) out += i < 2 ? "---|" : "---:|";
  out += '\n';
  for (const TableRow& r : rows) {
    out += "|";
    const std::vector<std::string> c = RowCells(r, 3, true);
    for (size_t k : kHeadline) out += " " + c[k] + " |";
    out += '\n';
  }
  return out;
}

std::string Table2Csv(const std::vector<TableRow>& rows) {
  std::string out = "split,fold";
  for (const std::string& h : Header()) out += "," + h;
  out += '\n';
  for (const TableRow& r : rows) {
    out += CsvField(r.split) + "," + CsvField(r.fold);
    for (const std::string& c : RowCells(r, 4)) out += "," + CsvField(c);
    out += '\n';
  }
  return out;
}

void AddMechanismRecall(const Dataset& ds, const Predictions& predictions,
                        const std::vector<uint32_t>& units,
                        const std::set<std::string>& timing_invisible,
                        std::map<std::string, MechanismRecall>* rows) {
  static const Prediction kNone;
  for (uint32_t i : units) {
    const Unit& u = ds.units[i];
    for (View v : kViews) {
      const ViewLabel& label = u.view(v);
      const Prediction& p = i < predictions.units.size() ? predictions.at(i, v) : kNone;
      std::string key;
      if (label.is_anomaly) {
        key = u.mechanism.empty() ? std::string("(unknown)") : u.mechanism;
      } else if (!u.has_incident || u.fault >= 0) {
        continue;  // a fault acted on the step (or unknown): not a healthy unit
      }
      MechanismRecall& row = (*rows)[key];
      row.mechanism = key;
      row.timing_invisible = timing_invisible.count(key) > 0;
      MechanismRecall::PerView& pv = row.views[static_cast<int>(v)];
      ++pv.positives;
      pv.detected += p.abnormal;
      if (label.is_anomaly && label.nodes.empty()) {
        ++pv.without_evidence;
        pv.without_evidence_detected += p.abnormal;
      }
    }
  }
}

namespace {
std::string RecallCell(uint64_t hits, uint64_t n) {
  if (n == 0) return "-";
  return std::to_string(hits) + "/" + std::to_string(n) + " (" +
         Num(static_cast<double>(hits) / static_cast<double>(n), 3) + ")";
}
}  // namespace

std::string MechanismRecallMarkdown(const std::string& method,
                                    const std::map<std::string, MechanismRecall>& rows) {
  std::string out = "| " + method +
                    " | V recall | V without evidence | H recall | H without evidence |\n"
                    "|---|---:|---:|---:|---:|\n";
  auto row = [&](const MechanismRecall& r, const std::string& name) {
    out += "| " + name + " |";
    for (View v : kViews) {
      const MechanismRecall::PerView& pv = r.views[static_cast<int>(v)];
      out += " " + RecallCell(pv.detected, pv.positives) + " | " +
             RecallCell(pv.without_evidence_detected, pv.without_evidence) + " |";
    }
    out += "\n";
  };
  for (const bool invisible : {false, true}) {
    bool any = false;
    for (const auto& [key, r] : rows) {
      if (key.empty() || r.timing_invisible != invisible) continue;
      if (invisible && !any) out += "| *invisible in timing:* | | | | |\n";
      any = true;
      row(r, key);
    }
  }
  if (const auto it = rows.find(""); it != rows.end()) row(it->second, "healthy: false alarms");
  return out;
}

std::string MechanismRecallCsv(const std::string& split, const std::string& method,
                               const std::map<std::string, MechanismRecall>& rows, bool header) {
  std::string out = header ? "split,method,mechanism,timing_invisible,view,positives,detected,"
                             "recall,without_evidence,without_evidence_detected\n"
                           : "";
  for (const auto& [key, r] : rows) {
    for (View v : kViews) {
      const MechanismRecall::PerView& pv = r.views[static_cast<int>(v)];
      const double recall =
          pv.positives ? static_cast<double>(pv.detected) / static_cast<double>(pv.positives) : 0;
      out += CsvField(split) + "," + CsvField(method) + "," + (key.empty() ? "healthy" : key) +
             "," + (r.timing_invisible ? "1" : "0") + "," + ViewName(v) + "," +
             std::to_string(pv.positives) + "," + std::to_string(pv.detected) + "," + Num(recall) +
             "," + std::to_string(pv.without_evidence) + "," +
             std::to_string(pv.without_evidence_detected) + "\n";
    }
  }
  return out;
}

double StudentT975(size_t dof) {
  static constexpr double kT[31] = {0,     12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365,
                                    2.306, 2.262,  2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
                                    2.120, 2.110,  2.101, 2.093, 2.086, 2.080, 2.074, 2.069,
                                    2.064, 2.060,  2.056, 2.052, 2.048, 2.045, 2.042};
  return dof <= 30 ? kT[dof] : 1.96;
}

MeanInterval MeanWithInterval(const std::vector<double>& values) {
  MeanInterval out;
  out.n = values.size();
  if (values.empty()) return out;
  double sum = 0;
  for (double v : values) sum += v;
  out.mean = sum / static_cast<double>(values.size());
  if (values.size() < 2) return out;
  double ss = 0;
  for (double v : values) ss += (v - out.mean) * (v - out.mean);
  const double sd = std::sqrt(ss / static_cast<double>(values.size() - 1));
  out.half = StudentT975(values.size() - 1) * sd / std::sqrt(static_cast<double>(values.size()));
  return out;
}

namespace {
struct SeedMetric {
  const char* name;
  double (*get)(const ViewScores&);
};
constexpr SeedMetric kSeedMetrics[] = {
    {"step P", [](const ViewScores& s) { return s.step.precision; }},
    {"step R", [](const ViewScores& s) { return s.step.recall; }},
    {"step F1", [](const ViewScores& s) { return s.step.f1; }},
    {"op macro+ F1", [](const ViewScores& s) { return s.op.macro_plus.f1; }},
    {"op det R", [](const ViewScores& s) { return s.op.detection_recall; }},
    {"op F1|det", [](const ViewScores& s) { return s.op.detected.f1; }},
    {"root top-1", [](const ViewScores& s) { return s.root.top1; }},
    {"root top-3", [](const ViewScores& s) { return s.root.top3; }},
    {"type acc", [](const ViewScores& s) { return s.fault.accuracy; }},
    {"type mF1", [](const ViewScores& s) { return s.fault.macro_f1; }},
};
MeanInterval SeedMetricOf(const SeedRow& r, const SeedMetric& m) {
  const View v = r.view == "horizontal" ? View::kHorizontal : View::kVertical;
  std::vector<double> values;
  for (const Scores& s : r.seeds) values.push_back(m.get(s.view(v)));
  return MeanWithInterval(values);
}
}  // namespace

std::string SeedTableMarkdown(const std::vector<SeedRow>& rows, const std::string& seeds) {
  std::string out = "Mean ± 95 % interval over seeds " + seeds + ".\n\n| split | method | view |";
  for (const SeedMetric& m : kSeedMetrics) out += std::string(" ") + m.name + " |";
  out += "\n|---|---|---|";
  for (size_t i = 0; i < std::size(kSeedMetrics); ++i) out += "---:|";
  out += "\n";
  for (const SeedRow& r : rows) {
    out += "| " + r.split + " | " + r.method + " | " + (r.view == "horizontal" ? "H" : "V") + " |";
    for (const SeedMetric& m : kSeedMetrics) {
      const MeanInterval mi = SeedMetricOf(r, m);
      out += " " + Num(mi.mean, 3) + " ± " + Num(mi.half, 3) + " |";
    }
    out += "\n";
  }
  return out;
}

std::string SeedTableCsv(const std::vector<SeedRow>& rows) {
  std::string out = "split,method,view,metric,seeds,mean,ci95_low,ci95_high\n";
  for (const SeedRow& r : rows) {
    for (const SeedMetric& m : kSeedMetrics) {
      const MeanInterval mi = SeedMetricOf(r, m);
      out += CsvField(r.split) + "," + CsvField(r.method) + "," + r.view + "," + m.name + "," +
             std::to_string(mi.n) + "," + Num(mi.mean) + "," + Num(mi.mean - mi.half) + "," +
             Num(mi.mean + mi.half) + "\n";
    }
  }
  return out;
}

std::string LowPriorMarkdown(const std::vector<TableRow>& rows) {
  std::string out =
      "| method | view | prior | positives | negatives | recall | F1 | AUPRC | AUROC |\n"
      "|---|---|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const TableRow& r : rows) {
    const ViewScores& s =
        r.scores.view(r.view == "horizontal" ? View::kHorizontal : View::kVertical);
    for (const LowPriorRow& p : s.low_prior) {
      out += "| " + r.method + " | " + (r.view == "horizontal" ? "H" : "V") + " | " +
             Num(100 * p.prior, 0) + "% | ";
      if (p.repetitions == 0) {
        out += "- | - | - | - | - | - |\n";
        continue;
      }
      out += std::to_string(p.positives) + " | " + std::to_string(p.negatives) + " | " +
             Num(p.recall, 3) + " ± " + Num(p.recall_sd, 3) + " | " + Num(p.f1, 3) + " ± " +
             Num(p.f1_sd, 3) + " | " + Num(p.auprc, 3) + " ± " + Num(p.auprc_sd, 3) + " | " +
             Num(p.auroc, 3) + " ± " + Num(p.auroc_sd, 3) + " |\n";
    }
  }
  return out;
}

std::string LowPriorCsv(const std::vector<TableRow>& rows) {
  std::string out =
      "split,fold,method,view,prior,positives,negatives,repetitions,recall,recall_sd,f1,f1_sd,"
      "auprc,auprc_sd,"
      "auroc,auroc_sd\n";
  for (const TableRow& r : rows) {
    const ViewScores& s =
        r.scores.view(r.view == "horizontal" ? View::kHorizontal : View::kVertical);
    for (const LowPriorRow& p : s.low_prior) {
      out += CsvField(r.split) + "," + CsvField(r.fold) + "," + CsvField(r.method) + "," + r.view +
             "," + Num(p.prior, 2) + "," + std::to_string(p.positives) + "," +
             std::to_string(p.negatives) + "," + std::to_string(p.repetitions) + "," +
             Num(p.recall) + "," + Num(p.recall_sd) + "," + Num(p.f1) + "," + Num(p.f1_sd) + "," +
             Num(p.auprc) + "," + Num(p.auprc_sd) + "," + Num(p.auroc) + "," + Num(p.auroc_sd) +
             "\n";
    }
  }
  return out;
}

}  // namespace teller::eval
