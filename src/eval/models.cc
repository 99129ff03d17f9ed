// The learners written here (include/teller/eval/models.h): DBSCAN, Isolation Forest,
// linear SVM, Random Forest. Armadillo's and XGBoost's wrappers live in models_arma.cc
// and models_xgboost.cc.
#include "teller/eval/models.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "teller/eval/metrics.h"

namespace teller::eval {
namespace {

double SquaredDistance(const double* a, const double* b, size_t d) {
  double s = 0;
  for (size_t i = 0; i < d; ++i) {
    const double t = a[i] - b[i];
    s += t * t;
  }
  return s;
}

// Average path length of an unsuccessful search in a binary search tree of n rows: the
// normalisation of Isolation Forest.
double AveragePathLength(double n) {
  if (n <= 1) return 0;
  if (n == 2) return 1;
  const double harmonic = std::log(n - 1) + 0.5772156649015329;
  return 2 * harmonic - 2 * (n - 1) / n;
}

}  // namespace

// ---- DBSCAN -------------------------------------------------------------------------------

Status Dbscan::Fit(const Matrix& x, double eps, int min_points) {
  if (x.rows == 0) return Status::Error("DBSCAN: no rows to fit");
  if (min_points < 1) return Status::Error("DBSCAN: min_points must be at least 1");
  const size_t n = x.rows, d = x.cols;
  // All pairwise distances once: fitting sets are a few thousand steps.
  std::vector<double> dist(n * n);
  for (size_t i = 0; i < n; ++i) {
    dist[i * n + i] = 0;
    for (size_t j = i + 1; j < n; ++j) {
      dist[i * n + j] = dist[j * n + i] = std::sqrt(SquaredDistance(x.row(i), x.row(j), d));
    }
  }
  if (eps <= 0) {
    // The k-distance heuristic: most points (90 %) have min_points neighbours within eps.
    std::vector<double> kdist(n), row(n);
    const size_t k = std::min<size_t>(static_cast<size_t>(min_points), n) - 1;  // itself at rank 0
    for (size_t i = 0; i < n; ++i) {
      std::copy(dist.begin() + i * n, dist.begin() + (i + 1) * n, row.begin());
      std::nth_element(row.begin(), row.begin() + k, row.end());
      kdist[i] = row[k];
    }
    const size_t at = std::min(n - 1, static_cast<size_t>(0.9 * static_cast<double>(n)));
    std::nth_element(kdist.begin(), kdist.begin() + at, kdist.end());
    eps = kdist[at];
    if (eps <= 0) eps = 1e-6;  // duplicates only: any distance is an outlier
  }
  eps_ = eps;
  std::vector<uint8_t> core(n, 0);
  for (size_t i = 0; i < n; ++i) {
    int neighbours = 0;
    for (size_t j = 0; j < n; ++j) neighbours += dist[i * n + j] <= eps;
    core[i] = neighbours >= min_points;
  }
  // Clusters: connected components of core points; borders join the first cluster that
  // reaches them.
  labels_.assign(n, -1);
  clusters_ = 0;
  std::vector<size_t> queue;
  for (size_t i = 0; i < n; ++i) {
    if (!core[i] || labels_[i] >= 0) continue;
    const int c = clusters_++;
    labels_[i] = c;
    queue.assign(1, i);
    while (!queue.empty()) {
      const size_t p = queue.back();
      queue.pop_back();
      for (size_t j = 0; j < n; ++j) {
        if (dist[p * n + j] > eps || labels_[j] >= 0) continue;
        labels_[j] = c;
        if (core[j]) queue.push_back(j);
      }
    }
  }
  const size_t cores = static_cast<size_t>(std::count(core.begin(), core.end(), 1));
  core_ = Matrix(cores, d);
  for (size_t i = 0, k = 0; i < n; ++i) {
    if (core[i]) std::copy(x.row(i), x.row(i) + d, core_.row(k++));
  }
  return Status::Ok();
}

std::vector<double> Dbscan::Score(const Matrix& x) const {
  std::vector<double> out(x.rows, 0.0);
  for (size_t i = 0; i < x.rows; ++i) {
    double best = INFINITY;
    for (size_t k = 0; k < core_.rows; ++k)
      best = std::min(best, SquaredDistance(x.row(i), core_.row(k), x.cols));
    // With no core point at all every point is noise; keep scores finite for ranking.
    out[i] = core_.rows == 0 ? 1e9 : std::sqrt(best) / eps_;
  }
  return out;
}

// ---- Isolation Forest -----------------------------------------------------------------------

Status IsolationForest::Fit(const Matrix& x, int trees, int sample_size, uint64_t seed) {
  if (x.rows == 0) return Status::Error("Isolation Forest: no rows to fit");
  if (trees < 1 || sample_size < 2)
    return Status::Error("Isolation Forest: needs trees >= 1 and sample_size >= 2");
  std::mt19937_64 rng(seed);
  const size_t psi = std::min<size_t>(static_cast<size_t>(sample_size), x.rows);
  const int max_depth =
      static_cast<int>(std::ceil(std::log2(std::max<double>(2, static_cast<double>(psi)))));
  c_psi_ = std::max(AveragePathLength(static_cast<double>(psi)), 1e-9);
  trees_.assign(static_cast<size_t>(trees), {});
  std::vector<uint32_t> all(x.rows);
  std::iota(all.begin(), all.end(), 0);
  for (auto& tree : trees_) {
    // A subsample without replacement.
    for (size_t i = 0; i < psi; ++i) std::swap(all[i], all[i + UniformIndex(rng, all.size() - i)]);
    std::vector<uint32_t> rows(all.begin(), all.begin() + static_cast<long>(psi));
    struct Task {
      int32_t node;
      size_t begin, end;
      int depth;
    };
    tree.emplace_back();
    std::vector<Task> todo = {{0, 0, rows.size(), 0}};
    while (!todo.empty()) {
      const Task t = todo.back();
      todo.pop_back();
      const size_t size = t.end - t.begin;
      // Features that still vary among the node's rows; a split needs one.
      int32_t feature = -1;
      double lo = 0, hi = 0;
      if (t.depth < max_depth && size > 1) {
        std::vector<int32_t> varying;
        std::vector<std::pair<double, double>> range(x.cols, {INFINITY, -INFINITY});
        for (size_t i = t.begin; i < t.end; ++i) {
          const double* r = x.row(rows[i]);
          for (size_t j = 0; j < x.cols; ++j) {
            range[j].first = std::min(range[j].first, r[j]);
            range[j].second = std::max(range[j].second, r[j]);
          }
        }
        for (size_t j = 0; j < x.cols; ++j) {
          if (range[j].second > range[j].first) varying.push_back(static_cast<int32_t>(j));
        }
        if (!varying.empty()) {
          feature = varying[UniformIndex(rng, varying.size())];
          lo = range[feature].first;
          hi = range[feature].second;
        }
      }
      if (feature < 0) {
        tree[t.node].size = static_cast<uint32_t>(size);
        continue;
      }
      const double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;  // [0, 1)
      double split = lo + u * (hi - lo);
      if (split >= hi) split = lo;  // keep both sides non-empty
      const auto mid = std::partition(rows.begin() + static_cast<long>(t.begin),
                                      rows.begin() + static_cast<long>(t.end),
                                      [&](uint32_t r) { return x.at(r, feature) <= split; });
      const size_t m = static_cast<size_t>(mid - rows.begin());
      const int32_t left = static_cast<int32_t>(tree.size());
      tree.emplace_back();
      tree.emplace_back();
      tree[t.node].feature = feature;
      tree[t.node].split = split;
      tree[t.node].left = left;
      tree[t.node].right = left + 1;
      todo.push_back({left, t.begin, m, t.depth + 1});
      todo.push_back({left + 1, m, t.end, t.depth + 1});
    }
  }
  return Status::Ok();
}

std::vector<double> IsolationForest::Score(const Matrix& x) const {
  std::vector<double> out(x.rows, 0.0);
  if (trees_.empty()) return out;
  for (size_t i = 0; i < x.rows; ++i) {
    double total = 0;
    for (const auto& tree : trees_) {
      int32_t k = 0;
      int depth = 0;
      while (tree[k].feature >= 0) {
        k = x.at(i, tree[k].feature) <= tree[k].split ? tree[k].left : tree[k].right;
        ++depth;
      }
      total += depth + AveragePathLength(tree[k].size);
    }
    out[i] = std::pow(2.0, -(total / static_cast<double>(trees_.size())) / c_psi_);
  }
  return out;
}

// ---- Linear SVM -------------------------------------------------------------------------------

Status LinearSvm::Fit(const Matrix& x, const std::vector<int>& y, int classes, double c, int epochs,
                      uint64_t seed) {
  if (x.rows == 0 || y.size() != x.rows)
    return Status::Error("linear SVM: rows and labels differ or are empty");
  if (classes < 2) return Status::Error("linear SVM: needs two classes at least");
  classes_ = classes;
  const size_t n = x.rows, d = x.cols;
  const int models = classes == 2 ? 1 : classes;
  w_.assign(static_cast<size_t>(models), std::vector<double>(d + 1, 0.0));
  std::vector<double> q(n);
  for (size_t i = 0; i < n; ++i) {
    double norm = 1;  // the bias feature
    for (size_t j = 0; j < d; ++j) norm += x.at(i, j) * x.at(i, j);
    q[i] = norm;
  }
  std::mt19937_64 rng(seed);
  for (int m = 0; m < models; ++m) {
    const int positive = classes == 2 ? 1 : m;
    std::vector<double> sign(n);
    size_t pos = 0;
    for (size_t i = 0; i < n; ++i) {
      sign[i] = y[i] == positive ? 1.0 : -1.0;
      pos += y[i] == positive;
    }
    if (pos == 0 || pos == n) {
      // One class only: a constant margin saying so.
      w_[m][d] = pos == 0 ? -1.0 : 1.0;
      continue;
    }
    // Balanced class weights: each class carries half the loss.
    const double c_pos = c * static_cast<double>(n) / (2.0 * static_cast<double>(pos));
    const double c_neg = c * static_cast<double>(n) / (2.0 * static_cast<double>(n - pos));
    std::vector<double> alpha(n, 0.0);
    std::vector<double>& w = w_[m];
    std::vector<size_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    for (int epoch = 0; epoch < epochs; ++epoch) {
      Shuffle(order, rng);
      double max_pg = 0;
      for (size_t i : order) {
        const double* r = x.row(i);
        double wx = w[d];
        for (size_t j = 0; j < d; ++j) wx += w[j] * r[j];
        const double g = sign[i] * wx - 1;
        const double ci = sign[i] > 0 ? c_pos : c_neg;
        double pg = g;
        if (alpha[i] <= 0) pg = std::min(g, 0.0);
        if (alpha[i] >= ci) pg = std::max(g, 0.0);
        max_pg = std::max(max_pg, std::fabs(pg));
        if (std::fabs(pg) < 1e-12) continue;
        const double old = alpha[i];
        alpha[i] = std::clamp(alpha[i] - g / q[i], 0.0, ci);
        const double step = (alpha[i] - old) * sign[i];
        for (size_t j = 0; j < d; ++j) w[j] += step * r[j];
        w[d] += step;
      }
      if (max_pg < 1e-3) break;
    }
  }
  return Status::Ok();
}

Matrix LinearSvm::Decision(const Matrix& x) const {
  Matrix out(x.rows, w_.size());
  for (size_t i = 0; i < x.rows; ++i) {
    for (size_t m = 0; m < w_.size(); ++m) {
      const std::vector<double>& w = w_[m];
      double s = w.back();
      for (size_t j = 0; j < x.cols && j + 1 < w.size(); ++j) s += w[j] * x.at(i, j);
      out.at(i, m) = s;
    }
  }
  return out;
}

// ---- Random Forest ----------------------------------------------------------------------------

Status RandomForest::Fit(const Matrix& x, const std::vector<int>& y, int classes, int trees,
                         uint64_t seed, int max_depth, int min_leaf) {
  if (x.rows == 0 || y.size() != x.rows)
    return Status::Error("Random Forest: rows and labels differ or are empty");
  if (classes < 2) return Status::Error("Random Forest: needs two classes at least");
  for (int label : y) {
    if (label < 0 || label >= classes) {
      return Status::Error("Random Forest: label " + std::to_string(label) + " outside 0.." +
                           std::to_string(classes - 1));
    }
  }
  classes_ = classes;
  trees_.assign(static_cast<size_t>(std::max(trees, 1)), {});
  dists_.clear();
  std::mt19937_64 rng(seed);
  const size_t n = x.rows, d = x.cols;
  const size_t mtry = std::max<size_t>(1, static_cast<size_t>(std::sqrt(static_cast<double>(d))));
  std::vector<int32_t> all_features(d);
  std::iota(all_features.begin(), all_features.end(), 0);
  std::vector<uint32_t> rows(n);
  std::vector<std::pair<double, int>> vals;
  std::vector<double> left(static_cast<size_t>(classes)), total(static_cast<size_t>(classes));
  for (auto& tree : trees_) {
    for (size_t i = 0; i < n; ++i)
      rows[i] = static_cast<uint32_t>(UniformIndex(rng, n));  // bootstrap
    struct Task {
      int32_t node;
      size_t begin, end;
      int depth;
    };
    tree.assign(1, {});
    std::vector<Task> todo = {{0, 0, n, 0}};
    while (!todo.empty()) {
      const Task t = todo.back();
      todo.pop_back();
      const size_t size = t.end - t.begin;
      std::fill(total.begin(), total.end(), 0.0);
      for (size_t i = t.begin; i < t.end; ++i) total[static_cast<size_t>(y[rows[i]])] += 1;
      const bool pure = *std::max_element(total.begin(), total.end()) == static_cast<double>(size);
      int32_t best_feature = -1;
      double best_split = 0, best_impurity = INFINITY;
      if (!pure && t.depth < max_depth && size >= 2 * static_cast<size_t>(min_leaf)) {
        // sqrt(d) candidate features, drawn without replacement.
        for (size_t k = 0; k < mtry; ++k)
          std::swap(all_features[k], all_features[k + UniformIndex(rng, d - k)]);
        for (size_t k = 0; k < mtry; ++k) {
          const int32_t f = all_features[k];
          vals.clear();
          for (size_t i = t.begin; i < t.end; ++i) vals.emplace_back(x.at(rows[i], f), y[rows[i]]);
          std::sort(vals.begin(), vals.end());
          if (vals.front().first == vals.back().first) continue;
          std::fill(left.begin(), left.end(), 0.0);
          for (size_t i = 0; i + 1 < vals.size(); ++i) {
            left[static_cast<size_t>(vals[i].second)] += 1;
            if (vals[i].first == vals[i + 1].first) continue;
            const double nl = static_cast<double>(i + 1), nr = static_cast<double>(size) - nl;
            if (nl < min_leaf || nr < min_leaf) continue;
            // Weighted Gini impurity of the two children (lower is better).
            double gl = 0, gr = 0;
            for (int c = 0; c < classes; ++c) {
              const double l = left[static_cast<size_t>(c)], r = total[static_cast<size_t>(c)] - l;
              gl += l * l;
              gr += r * r;
            }
            const double impurity = (nl - gl / nl) + (nr - gr / nr);
            if (impurity < best_impurity - 1e-12) {
              best_impurity = impurity;
              best_feature = f;
              best_split = (vals[i].first + vals[i + 1].first) / 2;
            }
          }
        }
      }
      if (best_feature < 0) {
        tree[t.node].dist = static_cast<uint32_t>(dists_.size());
        for (int c = 0; c < classes; ++c)
          dists_.push_back(
              static_cast<float>(total[static_cast<size_t>(c)] / static_cast<double>(size)));
        continue;
      }
      const auto mid = std::partition(
          rows.begin() + static_cast<long>(t.begin), rows.begin() + static_cast<long>(t.end),
          [&](uint32_t r) { return x.at(r, best_feature) <= best_split; });
      const size_t m = static_cast<size_t>(mid - rows.begin());
      const int32_t l = static_cast<int32_t>(tree.size());
      tree.emplace_back();
      tree.emplace_back();
      tree[t.node].feature = best_feature;
      tree[t.node].split = best_split;
      tree[t.node].left = l;
      tree[t.node].right = l + 1;
      todo.push_back({l, t.begin, m, t.depth + 1});
      todo.push_back({l + 1, m, t.end, t.depth + 1});
    }
  }
  return Status::Ok();
}

Matrix RandomForest::Proba(const Matrix& x) const {
  Matrix out(x.rows, static_cast<size_t>(classes_));
  if (trees_.empty()) return out;
  const double share = 1.0 / static_cast<double>(trees_.size());
  for (size_t i = 0; i < x.rows; ++i) {
    for (const auto& tree : trees_) {
      int32_t k = 0;
      while (tree[k].feature >= 0)
        k = x.at(i, tree[k].feature) <= tree[k].split ? tree[k].left : tree[k].right;
      for (int c = 0; c < classes_; ++c)
        out.at(i, static_cast<size_t>(c)) +=
            share * dists_[tree[k].dist + static_cast<uint32_t>(c)];
    }
  }
  return out;
}

}  // namespace teller::eval
