// The learned baselines as `teller eval` methods (src/eval/learned_baselines.h).
#include "src/eval/learned_baselines.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "src/eval/method_common.h"

namespace teller::eval {
namespace {

// The unit's step and the kMadGanWindow - 1 records before it in its setting (the first
// record repeated before the setting's start), the record columns of `stat`.
rca::FeatureWindow WindowOf(const Dataset& ds, const Features& stat, uint32_t unit) {
  const Unit& u = ds.units[unit];
  const Matrix& m = stat.per_setting[u.setting];
  rca::FeatureWindow w;
  w.rows = kMadGanWindow;
  w.cols = static_cast<int>(stat.record_cols);
  for (int k = kMadGanWindow - 1; k >= 0; --k) {
    const auto r = static_cast<size_t>(std::max<int64_t>(0, static_cast<int64_t>(u.record) - k));
    const double* row = m.row(r);
    for (size_t c = 0; c < stat.record_cols; ++c) w.values.push_back(static_cast<float>(row[c]));
  }
  return w;
}

// "2^k" for `us` microseconds (k = round(log2), 0 below 1 us).
std::string PowerOfTwo(double us) {
  const int k = us < 1 ? 0 : static_cast<int>(std::lround(std::log2(us)));
  return "2^" + std::to_string(k);
}

}  // namespace

std::vector<std::string> StepSummaryLines(const Dataset& ds, uint32_t unit) {
  const Unit& u = ds.units[unit];
  const Setting& setting = ds.settings[u.setting];
  const StepColumns& r = setting.records[u.record];
  const size_t n = r.dur_ns.size();
  std::set<int32_t> ranks;
  int64_t begin = 0, end = 0;
  double layer_total[kLayers] = {};
  uint64_t layer_count[kLayers] = {};
  std::vector<size_t> ops;
  for (size_t i = 0; i < n; ++i) {
    ranks.insert(r.rank[i]);
    if (i == 0 || r.offset_ns[i] < begin) begin = r.offset_ns[i];
    end = std::max(end, r.offset_ns[i] + r.dur_ns[i]);
    if (r.parent[i] < 0) continue;  // a rank's STEP node
    const int layer = std::min<int>(r.layer[i], kLayers - 1);
    layer_total[layer] += static_cast<double>(r.dur_ns[i]) / 1e3;
    ++layer_count[layer];
    ops.push_back(i);
  }
  std::vector<std::string> out;
  out.push_back("step ranks " + std::to_string(ranks.size()) + " nodes " +
                PowerOfTwo(static_cast<double>(n)) + " span " +
                PowerOfTwo(static_cast<double>(end - begin) / 1e3) + "us");
  for (int l = 0; l < kLayers; ++l) {
    if (layer_count[l] == 0) continue;
    out.push_back("layer " + std::string(LayerName(static_cast<Layer>(l))) + " count " +
                  PowerOfTwo(static_cast<double>(layer_count[l])) + " total " +
                  PowerOfTwo(layer_total[l]) + "us");
  }
  const size_t k = std::min(kStepSummaryOps, ops.size());
  std::partial_sort(ops.begin(), ops.begin() + static_cast<long>(k), ops.end(),
                    [&](size_t a, size_t b) {
                      return r.dur_ns[a] != r.dur_ns[b] ? r.dur_ns[a] > r.dur_ns[b] : a < b;
                    });
  for (size_t j = 0; j < k; ++j) {
    const size_t i = ops[j];
    const std::string& name = r.name[i] < setting.names.size() ? setting.names[r.name[i]] : "?";
    out.push_back(
        "op " + std::string(LayerName(static_cast<Layer>(std::min<int>(r.layer[i], kLayers - 1)))) +
        " " + name + " " + PowerOfTwo(static_cast<double>(r.dur_ns[i]) / 1e3) + "us");
  }
  return out;
}

rca::BaselineKind BaselineOf(MethodKind kind) {
  switch (kind) {
    case MethodKind::kLanoBert:
      return rca::BaselineKind::kLanoBert;
    case MethodKind::kLogs2Graphs:
      return rca::BaselineKind::kLogs2Graphs;
    case MethodKind::kMadGan:
      return rca::BaselineKind::kMadGan;
    default:
      return rca::BaselineKind::kLogRobust;
  }
}

Result<Predictions> PredictLearnedBaseline(const Dataset& ds, const Fold& fold,
                                           const MethodSpec& spec, uint64_t seed, int epochs,
                                           const Features& stat, const NodeDeviations& deviations,
                                           const std::function<void(std::string_view)>& progress) {
  const std::string& name = spec.name;
  if (fold.train.empty())
    return Status::Error(name + ": fold \"" + fold.name + "\" has no training steps");
  const rca::BaselineKind kind = BaselineOf(spec.kind);
  const bool reads_logs = rca::BaselineReadsLogs(kind);
  const std::vector<uint32_t> train = reads_logs ? fold.train : DistinctRecords(ds, fold.train);
  // Everything asked about: training units (the fallback threshold), validation, test.
  std::vector<uint32_t> asked = train;
  asked.insert(asked.end(), fold.validation.begin(), fold.validation.end());
  asked.insert(asked.end(), fold.test.begin(), fold.test.end());
  std::vector<std::vector<std::string>> lines(asked.size());
  std::vector<rca::FeatureWindow> windows(asked.size());
  std::vector<rca::BaselineUnit> units(asked.size());
  for (size_t j = 0; j < asked.size(); ++j) {
    const Unit& u = ds.units[asked[j]];
    rca::BaselineUnit& b = units[j];
    if (reads_logs) {
      lines[j] = UnitLogLines(ds, asked[j]);
      b.logs = &lines[j];
    } else {
      windows[j] = WindowOf(ds, stat, asked[j]);
      b.window = &windows[j];
    }
    for (View v : kViews) b.abnormal[static_cast<int>(v)] = u.view(v).is_anomaly;
    b.fault = u.is_anomaly ? FaultClass(u.fault_type) : -1;
  }
  if (!reads_logs) {
    // A record stands for all its training units: abnormal in a view when any of them is
    // (batch siblings share the record and may differ in labels).
    std::set<std::pair<uint32_t, uint32_t>> abnormal[rca::kViewsCount];
    for (uint32_t i : fold.train) {
      for (View v : kViews) {
        if (ds.units[i].view(v).is_anomaly)
          abnormal[static_cast<int>(v)].emplace(ds.units[i].setting, ds.units[i].record);
      }
    }
    for (size_t j = 0; j < train.size(); ++j) {
      const Unit& u = ds.units[train[j]];
      for (int k = 0; k < rca::kViewsCount; ++k)
        units[j].abnormal[k] = abnormal[k].count({u.setting, u.record}) > 0;
    }
  }
  rca::TrainOptions options;
  options.seed = seed;
  options.epochs = epochs;
  if (progress) {
    options.progress = [&](std::string_view line) {
      progress(name + ", fold " + fold.name + ": " + std::string(line));
    };
  }
  const std::vector<rca::BaselineUnit> train_units(units.begin(),
                                                   units.begin() + static_cast<long>(train.size()));
  Result<rca::LearnedBaseline> model = rca::LearnedBaseline::Train(kind, train_units, options);
  if (!model.ok()) return Status::Error("fold " + fold.name + ": " + model.status().message());
  Result<std::vector<rca::BaselineScore>> scores = model->Score(units);
  if (!scores.ok()) return Status::Error("fold " + fold.name + ": " + scores.status().message());

  std::set<int> seen;  // fault types a supervised head may name
  for (uint32_t i : fold.train) {
    const int c = FaultClass(ds.units[i].fault_type);
    if (ds.units[i].is_anomaly && c >= 0) seen.insert(c);
  }
  const size_t nt = train.size(), nv = fold.validation.size();
  Predictions out;
  out.units.resize(ds.units.size());
  for (View v : kViews) {
    const int k = static_cast<int>(v);
    std::vector<double> fit, val;
    std::vector<uint8_t> val_labels;
    for (size_t j = 0; j < nt; ++j) fit.push_back((*scores)[j].score[k]);
    for (size_t j = 0; j < nv; ++j) {
      val.push_back((*scores)[nt + j].score[k]);
      val_labels.push_back(ds.units[fold.validation[j]].view(v).is_anomaly);
    }
    const bool any = std::find(val_labels.begin(), val_labels.end(), 1) != val_labels.end();
    const double threshold = any || !rca::BaselineSupervised(kind)
                                 ? BestThreshold(val, val_labels, std::move(fit))
                                 : 0.5;
    for (size_t j = 0; j < fold.test.size(); ++j) {
      const uint32_t u = fold.test[j];
      const rca::BaselineScore& s = (*scores)[nt + nv + j];
      Prediction& p = out.at(u, v);
      p.present = true;
      p.score = s.score[k];
      p.abnormal = p.score >= threshold;
      if (!p.abnormal) continue;
      if (rca::BaselineSupervised(kind) && !seen.empty()) {
        int best = *seen.begin();
        for (int c : seen) {
          if (s.fault[static_cast<size_t>(c)] > s.fault[static_cast<size_t>(best)]) best = c;
        }
        p.fault_type = FaultCategoryName(static_cast<FaultCategory>(best));
      }
      p.nodes = deviations.Top(ds, u, v);
    }
  }
  return out;
}

}  // namespace teller::eval
