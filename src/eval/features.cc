// Step features and node deviations for the baselines (include/teller/eval/features.h).
#include "teller/eval/features.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "teller/logs/log_evidence.h"

namespace teller::eval {
namespace {

constexpr uint8_t kTagRuntime = static_cast<uint8_t>(format::TypeTag::kRuntime);
constexpr uint8_t kTagDriver = static_cast<uint8_t>(format::TypeTag::kDriver);
constexpr uint8_t kTagKernel = static_cast<uint8_t>(format::TypeTag::kKernel);

double Us(int64_t ns) { return static_cast<double>(std::max<int64_t>(ns, 0)) / 1000.0; }

double Median(std::vector<double>& v) {
  if (v.empty()) return 0;
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + mid, v.end());
  double m = v[mid];
  if (v.size() % 2 == 0) m = (m + *std::max_element(v.begin(), v.begin() + mid)) / 2;
  return m;
}

// Robust center and scale; the scale never collapses to zero (a feature constant in most
// steps of a setting is exactly where a fault stands out).
void RobustScale(std::vector<double> v, double* center, double* scale) {
  *center = Median(v);
  double mean = 0;
  for (double x : v) mean += x;
  mean = v.empty() ? 0 : mean / static_cast<double>(v.size());
  double var = 0;
  for (double x : v) var += (x - mean) * (x - mean);
  const double sd = v.size() > 1 ? std::sqrt(var / static_cast<double>(v.size() - 1)) : 0;
  for (double& x : v) x = std::fabs(x - *center);
  const double mad = 1.4826 * Median(v);
  *scale = mad > 1e-9 ? mad : sd > 1e-9 ? sd : 1.0;
}

// Per-setting robust standardization of a matrix's columns, clipped so one extreme value
// cannot dominate distances (KMeans, DBSCAN) or margins (SVM).
void Standardize(Matrix& m) {
  std::vector<double> col(m.rows);
  for (size_t j = 0; j < m.cols; ++j) {
    for (size_t r = 0; r < m.rows; ++r) col[r] = m.at(r, j);
    double center = 0, scale = 1;
    RobustScale(col, &center, &scale);
    for (size_t r = 0; r < m.rows; ++r)
      m.at(r, j) = std::clamp((m.at(r, j) - center) / scale, -10.0, 10.0);
  }
}

double UsOrZero(int64_t ns) { return ns == UnitLogs::kUnknown ? 0.0 : Us(ns); }

// Lines per template among the units of `train` that belong to setting `s`.
std::vector<uint64_t> TrainLines(const Dataset& ds, uint32_t s,
                                 const std::vector<uint32_t>& train) {
  std::vector<uint64_t> lines(ds.settings[s].templates, 0);
  for (uint32_t i : train) {
    const Unit& u = ds.units[i];
    if (u.setting != s) continue;
    for (const auto& [id, n] : u.logs.templates) {
      if (id >= lines.size()) lines.resize(id + 1, 0);
      lines[id] += n;
    }
  }
  return lines;
}

// The log columns of the units `of_setting` (one setting's, in dataset order),
// standardized over them.
Matrix LogMatrix(const Dataset& ds, const std::vector<uint32_t>& of_setting,
                 const std::vector<uint64_t>& train_lines) {
  Matrix m(of_setting.size(), kLogFeatureCount);
  for (size_t r = 0; r < of_setting.size(); ++r) {
    const std::vector<double> f = LogFeatures(ds.units[of_setting[r]], train_lines);
    for (size_t j = 0; j < f.size(); ++j) m.at(r, j) = std::log1p(f[j]);
  }
  Standardize(m);
  return m;
}

// The units of each setting, in dataset order.
std::vector<std::vector<uint32_t>> UnitsBySetting(const Dataset& ds) {
  std::vector<std::vector<uint32_t>> out(ds.settings.size());
  for (uint32_t i = 0; i < ds.units.size(); ++i) out[ds.units[i].setting].push_back(i);
  return out;
}

}  // namespace

std::vector<std::string> LogFeatureNames() {
  std::vector<std::string> names;
  for (int i = 0; i < kLogFeatureCount; ++i)
    names.emplace_back(LogFeatureName(static_cast<LogFeature>(i)));
  return names;
}

std::vector<double> LogFeatures(const Unit& unit, const std::vector<uint64_t>& train_lines) {
  const UnitLogs& l = unit.logs;
  std::vector<double> f(kLogFeatureCount, 0.0);
  auto set = [&f](LogFeature k, double v) { f[static_cast<size_t>(k)] = v; };
  set(LogFeature::kLines, l.lines);
  set(LogFeature::kDebugLines, l.by_level[static_cast<int>(LogLevel::kDebug)]);
  set(LogFeature::kInfoLines, l.by_level[static_cast<int>(LogLevel::kInfo)]);
  set(LogFeature::kWarningLines, l.by_level[static_cast<int>(LogLevel::kWarning)]);
  set(LogFeature::kErrorLines, l.by_level[static_cast<int>(LogLevel::kError)] +
                                   l.by_level[static_cast<int>(LogLevel::kCritical)]);
  set(LogFeature::kTemplates, static_cast<double>(l.templates.size()));
  const uint64_t rare_max = logs::RarityOptions{}.rare_max_lines;
  double rare = 0;
  for (const auto& [id, n] : l.templates) {
    const uint64_t seen = id < train_lines.size() ? train_lines[id] : 0;
    rare += seen <= rare_max ? 1 : 0;
  }
  set(LogFeature::kRareTemplates, rare);
  for (FaultCategory c : kAllFaultCategories)
    set(SignatureFeature(c), l.signatures[static_cast<int>(c)]);
  set(LogFeature::kQueueUs, UsOrZero(l.queue_ns));
  set(LogFeature::kFirstTokenUs, UsOrZero(l.first_token_ns));
  set(LogFeature::kEndToEndUs, UsOrZero(l.end_to_end_ns));
  set(LogFeature::kAgeUs, UsOrZero(l.age_ns));
  return f;
}

const char* FeatureSetName(FeatureSet set) { return set == FeatureSet::kStat ? "stat" : "struct"; }

std::string NormalizeName(std::string_view name) {
  std::string out(name);
  for (char& c : out) {
    if (c >= '0' && c <= '9') c = '#';
  }
  return out;
}

uint64_t HashName(std::string_view text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::vector<std::string> StatFeatureNames() {
  std::vector<std::string> names;
  for (int t = 0; t < kTypeTags; ++t) {
    for (const char* stat : {"count", "sum_us", "max_us", "mean_us"}) {
      names.push_back("type." +
                      std::string(format::TypeTagShortName(static_cast<format::TypeTag>(t))) + "." +
                      stat);
    }
  }
  for (int l = 0; l < kLayers; ++l) {
    for (const char* stat : {"count", "sum_us", "max_us", "mean_us"}) {
      names.push_back("layer." + std::string(LayerName(static_cast<Layer>(l))) + "." + stat);
    }
  }
  for (const char* n : {"nodes", "ranks", "span_us", "step_max_us", "step_min_us", "step_spread_us",
                        "launch_delay_mean_us", "launch_delay_max_us", "depth_max"}) {
    names.push_back(std::string("step.") + n);
  }
  return names;
}

std::vector<double> StatFeatures(const StepColumns& c) {
  struct Agg {
    double count = 0, sum = 0, max = 0;
  };
  Agg type[kTypeTags], layer[kLayers];
  double span = 0, step_max = 0, step_min = 0, delay_sum = 0, delay_max = 0, delays = 0;
  bool any_step = false;
  int ranks = 0;
  int depth_max = 0;
  std::vector<int> depth(c.size(), 0);
  for (size_t i = 0; i < c.size(); ++i) {
    const double d = Us(c.dur_ns[i]);
    auto add = [d](Agg& a) {
      a.count += 1;
      a.sum += d;
      a.max = std::max(a.max, d);
    };
    if (c.type[i] < kTypeTags) add(type[c.type[i]]);
    if (c.layer[i] < kLayers) add(layer[c.layer[i]]);
    span = std::max(span, Us(c.offset_ns[i] + c.dur_ns[i]));
    if (c.parent[i] < 0) {
      ++ranks;
      step_max = any_step ? std::max(step_max, d) : d;
      step_min = any_step ? std::min(step_min, d) : d;
      any_step = true;
    } else {
      depth[i] = depth[c.parent[i]] + 1;
      depth_max = std::max(depth_max, depth[i]);
      const uint8_t pt = c.type[c.parent[i]];
      if (c.type[i] == kTagKernel && (pt == kTagRuntime || pt == kTagDriver)) {
        // Launch-to-start delay: a queue or a slow launch path shows here first.
        const double delay = Us(c.offset_ns[i] - c.offset_ns[c.parent[i]]);
        delay_sum += delay;
        delay_max = std::max(delay_max, delay);
        delays += 1;
      }
    }
  }
  std::vector<double> f;
  f.reserve(4 * (kTypeTags + kLayers) + 9);
  auto push = [&f](const Agg& a) {
    f.push_back(std::log1p(a.count));
    f.push_back(std::log1p(a.sum));
    f.push_back(std::log1p(a.max));
    f.push_back(std::log1p(a.count > 0 ? a.sum / a.count : 0));
  };
  for (const Agg& a : type) push(a);
  for (const Agg& a : layer) push(a);
  f.push_back(std::log1p(static_cast<double>(c.size())));
  f.push_back(std::log1p(ranks));
  f.push_back(std::log1p(span));
  f.push_back(std::log1p(step_max));
  f.push_back(std::log1p(step_min));
  f.push_back(std::log1p(step_max - step_min));
  f.push_back(std::log1p(delays > 0 ? delay_sum / delays : 0));
  f.push_back(std::log1p(delay_max));
  f.push_back(std::log1p(depth_max));
  return f;
}

std::vector<double> StructFeatures(const StepColumns& c, const std::vector<uint64_t>& name_hash) {
  const size_t b = kStructBuckets;
  std::vector<double> f(3 * b, 0.0);
  for (size_t i = 0; i < c.size(); ++i) {
    const uint64_t h = c.name[i] < name_hash.size() ? name_hash[c.name[i]] : 0;
    f[h % b] += 1;
    f[b + h % b] += Us(c.dur_ns[i]);
    if (c.parent[i] >= 0) {
      const uint64_t ph =
          c.name[c.parent[i]] < name_hash.size() ? name_hash[c.name[c.parent[i]]] : 0;
      // An ordered pair: (a, b) and (b, a) are different call structures.
      const uint64_t pair = (ph * 0x9E3779B97F4A7C15ull) ^ (h + 0x632BE59BD9B4E019ull);
      f[2 * b + (pair >> 7) % b] += 1;
    }
  }
  for (double& x : f) x = std::log1p(x);
  return f;
}

Features ComputeFeatures(const Dataset& ds, FeatureSet set, bool with_logs) {
  Features out;
  out.set = set;
  if (set == FeatureSet::kStat) {
    out.names = StatFeatureNames();
  } else {
    for (const char* block : {"name_count", "name_us", "pair_count"}) {
      for (size_t k = 0; k < kStructBuckets; ++k)
        out.names.push_back(std::string(block) + "." + std::to_string(k));
    }
  }
  const size_t cols = out.names.size();
  out.record_cols = cols;
  for (const Setting& s : ds.settings) {
    std::vector<uint64_t> name_hash;
    if (set == FeatureSet::kStruct) {
      name_hash.reserve(s.names.size());
      for (const std::string& n : s.names) name_hash.push_back(HashName(NormalizeName(n)));
    }
    Matrix m(s.records.size(), cols);
    for (size_t r = 0; r < s.records.size(); ++r) {
      const std::vector<double> f = set == FeatureSet::kStat
                                        ? StatFeatures(s.records[r])
                                        : StructFeatures(s.records[r], name_hash);
      std::copy(f.begin(), f.end(), m.row(r));
    }
    Standardize(m);
    out.per_setting.push_back(std::move(m));
  }
  if (set == FeatureSet::kStat && with_logs) {
    for (const std::string& n : LogFeatureNames()) out.names.push_back(n);
    const std::vector<std::vector<uint32_t>> by_setting = UnitsBySetting(ds);
    out.log_row.assign(ds.units.size(), 0);
    for (uint32_t k = 0; k < ds.settings.size(); ++k) {
      for (uint32_t r = 0; r < by_setting[k].size(); ++r) out.log_row[by_setting[k][r]] = r;
      out.log_per_setting.push_back(LogMatrix(ds, by_setting[k], TrainLines(ds, k, by_setting[k])));
    }
  }
  return out;
}

Features Features::ForTraining(const Dataset& ds, const std::vector<uint32_t>& train) const {
  Features out = *this;
  if (log_per_setting.empty()) return out;
  const std::vector<std::vector<uint32_t>> by_setting = UnitsBySetting(ds);
  for (uint32_t k = 0; k < ds.settings.size(); ++k)
    out.log_per_setting[k] = LogMatrix(ds, by_setting[k], TrainLines(ds, k, train));
  return out;
}

Matrix Features::Rows(const Dataset& ds, const std::vector<uint32_t>& units) const {
  Matrix m(units.size(), names.size());
  for (size_t i = 0; i < units.size(); ++i) {
    const Unit& u = ds.units[units[i]];
    const double* src = per_setting[u.setting].row(u.record);
    std::copy(src, src + record_cols, m.row(i));
    if (!log_per_setting.empty()) {
      const double* log = log_per_setting[u.setting].row(log_row[units[i]]);
      std::copy(log, log + kLogFeatureCount, m.row(i) + record_cols);
    }
  }
  return m;
}

NodeDeviations::NodeDeviations(const Dataset& ds) {
  for (const Setting& s : ds.settings) {
    std::unordered_map<uint64_t, std::vector<double>> values;
    for (const StepColumns& c : s.records) {
      for (size_t i = 0; i < c.size(); ++i) {
        if (c.layer[i] == 0) continue;  // STEP
        values[(uint64_t{c.name[i]} << 3) | c.layer[i]].push_back(std::log1p(Us(c.dur_ns[i])));
      }
    }
    std::unordered_map<uint64_t, Stat> stats;
    for (auto& [key, v] : values) {
      double center = 0, scale = 1;
      RobustScale(std::move(v), &center, &scale);
      // Durations in log space: below ~5 % no deviation is worth naming.
      stats[key] = {static_cast<float>(center), static_cast<float>(std::max(scale, 0.05))};
    }
    family_.push_back(std::move(stats));
  }
}

std::vector<uint32_t> NodeDeviations::Top(const Dataset& ds, uint32_t unit, View view, size_t k,
                                          double min_z) const {
  const Unit& u = ds.units[unit];
  const auto key = std::make_tuple(u.setting, u.record, static_cast<int>(view), k, min_z);
  {
    std::lock_guard<std::mutex> lock(mu_);
    const auto it = cache_.find(key);
    if (it != cache_.end()) return it->second;
  }
  const StepColumns& c = ds.settings[u.setting].records[u.record];
  const auto& fam = family_[u.setting];
  std::vector<std::pair<double, uint32_t>> z;
  for (size_t i = 0; i < c.size(); ++i) {
    if (c.layer[i] == 0) continue;
    if (view == View::kHorizontal && c.layer[i] != kLayerComm) continue;
    const auto it = fam.find((uint64_t{c.name[i]} << 3) | c.layer[i]);
    if (it == fam.end()) continue;
    const double zi = (std::log1p(Us(c.dur_ns[i])) - it->second.median) / it->second.scale;
    if (zi >= min_z) z.emplace_back(zi, static_cast<uint32_t>(i));
  }
  std::sort(z.begin(), z.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  std::vector<uint32_t> out;
  for (size_t i = 0; i < z.size() && out.size() < k; ++i) out.push_back(z[i].second);
  std::lock_guard<std::mutex> lock(mu_);
  cache_.emplace(key, out);
  return out;
}

}  // namespace teller::eval
