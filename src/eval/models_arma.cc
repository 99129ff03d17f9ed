// KMeans and the diagonal GMM from Armadillo (include/teller/eval/models.h). Armadillo
// reports failures by exceptions and warnings on stderr: both stay inside this file.
#define ARMA_WARN_LEVEL 0
#include <algorithm>
#include <armadillo>
#include <cmath>
#include <exception>
#include <vector>

#include "teller/eval/models.h"

namespace teller::eval {
namespace {

// Armadillo wants one sample per column.
arma::mat ToArma(const Matrix& x) {
  arma::mat m(x.cols, x.rows);
  for (size_t i = 0; i < x.rows; ++i) {
    for (size_t j = 0; j < x.cols; ++j) m(j, i) = x.at(i, j);
  }
  return m;
}

}  // namespace

Status KMeansDetector::Fit(const Matrix& x, int k, int iterations) {
  if (x.rows == 0) return Status::Error("KMeans: no rows to fit");
  k = std::max(1, std::min<int>(k, static_cast<int>(x.rows)));
  try {
    arma::mat means;
    // static_spread: deterministic seeding (random_subset can get stuck, docs/localization.md).
    if (!arma::kmeans(means, ToArma(x), static_cast<arma::uword>(k), arma::static_spread,
                      static_cast<arma::uword>(iterations), false)) {
      return Status::Error("KMeans: Armadillo's kmeans failed to converge");
    }
    centroids_ = Matrix(means.n_cols, means.n_rows);
    for (arma::uword c = 0; c < means.n_cols; ++c) {
      for (arma::uword j = 0; j < means.n_rows; ++j) centroids_.at(c, j) = means(j, c);
    }
    // Seeding spreads the centres out, so an outlier often gets a centre of its own and a
    // distance of 0. Centres of tiny clusters (under 2 % of the rows) do not count as
    // normal behaviour: their members are scored against the real clusters.
    std::vector<size_t> size(centroids_.rows, 0);
    for (size_t i = 0; i < x.rows; ++i) {
      size_t best = 0;
      double best_d = INFINITY;
      for (size_t c = 0; c < centroids_.rows; ++c) {
        double d = 0;
        for (size_t j = 0; j < x.cols; ++j)
          d += (x.at(i, j) - centroids_.at(c, j)) * (x.at(i, j) - centroids_.at(c, j));
        if (d < best_d) best_d = d, best = c;
      }
      ++size[best];
    }
    const size_t min_size =
        std::max<size_t>(2, static_cast<size_t>(0.02 * static_cast<double>(x.rows)));
    Matrix kept(0, x.cols);
    for (size_t c = 0; c < centroids_.rows; ++c) {
      if (size[c] < min_size) continue;
      kept.v.insert(kept.v.end(), centroids_.row(c), centroids_.row(c) + x.cols);
      ++kept.rows;
    }
    if (kept.rows > 0) centroids_ = std::move(kept);
  } catch (const std::exception& e) {
    return Status::Error(std::string("KMeans: ") + e.what());
  }
  return Status::Ok();
}

std::vector<double> KMeansDetector::Score(const Matrix& x) const {
  std::vector<double> out(x.rows, 0.0);
  for (size_t i = 0; i < x.rows; ++i) {
    double best = INFINITY;
    for (size_t c = 0; c < centroids_.rows; ++c) {
      double s = 0;
      for (size_t j = 0; j < x.cols; ++j) {
        const double t = x.at(i, j) - centroids_.at(c, j);
        s += t * t;
      }
      best = std::min(best, s);
    }
    out[i] = centroids_.rows == 0 ? 0.0 : std::sqrt(best);
  }
  return out;
}

struct GmmDetector::Impl {
  arma::gmm_diag model;
};

GmmDetector::GmmDetector() : impl_(std::make_unique<Impl>()) {}
GmmDetector::~GmmDetector() = default;

Status GmmDetector::Fit(const Matrix& x, int k, int iterations) {
  if (x.rows == 0) return Status::Error("GMM: no rows to fit");
  k = std::max(1, std::min<int>(k, static_cast<int>(x.rows)));
  try {
    // A variance floor: standardized features, many of them constant within a cluster.
    if (!impl_->model.learn(ToArma(x), static_cast<arma::uword>(k), arma::maha_dist,
                            arma::static_spread, static_cast<arma::uword>(iterations),
                            static_cast<arma::uword>(iterations), 1e-3, false)) {
      return Status::Error("GMM: Armadillo's gmm_diag failed to fit");
    }
  } catch (const std::exception& e) {
    return Status::Error(std::string("GMM: ") + e.what());
  }
  return Status::Ok();
}

std::vector<double> GmmDetector::Score(const Matrix& x) const {
  std::vector<double> out(x.rows, 0.0);
  const arma::gmm_diag& g = impl_->model;
  if (x.rows == 0 || g.n_gaus() == 0) return out;
  // -log p(x) under the components holding at least 2 % of the weight (renormalized): as
  // with KMeans, a component fitted to a few outliers must not make them likely.
  std::vector<arma::uword> kept;
  double weight = 0;
  for (arma::uword k = 0; k < g.n_gaus(); ++k) {
    if (g.hefts(k) >= 0.02) {
      kept.push_back(k);
      weight += g.hefts(k);
    }
  }
  if (kept.empty()) {
    for (arma::uword k = 0; k < g.n_gaus(); ++k) kept.push_back(k), weight += g.hefts(k);
  }
  std::vector<double> log_terms(kept.size());
  for (size_t i = 0; i < x.rows; ++i) {
    for (size_t m = 0; m < kept.size(); ++m) {
      const arma::uword k = kept[m];
      double lp = std::log(g.hefts(k) / weight);
      for (size_t j = 0; j < x.cols; ++j) {
        const double var = g.dcovs(j, k), t = x.at(i, j) - g.means(j, k);
        lp -= 0.5 * (std::log(2 * M_PI * var) + t * t / var);
      }
      log_terms[m] = lp;
    }
    const double top = *std::max_element(log_terms.begin(), log_terms.end());
    double sum = 0;
    for (double t : log_terms) sum += std::exp(t - top);
    const double log_p = top + std::log(sum);
    out[i] = std::isfinite(log_p) ? -log_p : 1e12;
  }
  return out;
}

}  // namespace teller::eval
