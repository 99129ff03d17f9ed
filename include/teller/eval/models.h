// The learners behind the classical baselines (docs/eval.md, "Methods"). Debian provides
// KMeans and a diagonal GMM (Armadillo) and gradient-boosted trees (XGBoost's C API);
// DBSCAN, Isolation Forest, a linear SVM and a Random Forest are written here.
//
// Unsupervised detectors are fitted on rows without labels and give each row an anomaly
// score (higher = more anomalous). Supervised classifiers take labels 0..K-1 and give
// class scores. All are deterministic for a given seed; none throws (Armadillo's and
// XGBoost's failures become Status).
#ifndef TELLER_EVAL_MODELS_H_
#define TELLER_EVAL_MODELS_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "teller/core/status.h"
#include "teller/eval/features.h"

namespace teller::eval {

// ---- Unsupervised ------------------------------------------------------------------------

// KMeans (Armadillo, static_spread seeding): score = distance to the nearest centroid.
class KMeansDetector {
 public:
  Status Fit(const Matrix& x, int k, int iterations = 20);
  std::vector<double> Score(const Matrix& x) const;
  const Matrix& centroids() const { return centroids_; }

 private:
  Matrix centroids_;  // k x d
};

// Gaussian mixture with diagonal covariances (Armadillo gmm_diag, static_spread seeding):
// score = -log p(x).
class GmmDetector {
 public:
  GmmDetector();
  ~GmmDetector();
  Status Fit(const Matrix& x, int k, int iterations = 20);
  std::vector<double> Score(const Matrix& x) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// DBSCAN (Ester et al. 1996): a point with at least min_points neighbours within eps
// (itself included) is a core point; clusters are the core points reachable from each
// other plus the border points within eps of them; the rest is noise. eps <= 0 picks it
// from the data: the 90th percentile of every point's distance to its min_points-th
// nearest neighbour. A new point belongs to a cluster when it lies within eps of a core
// point; score = distance to the nearest core point / eps (> 1: noise).
class Dbscan {
 public:
  Status Fit(const Matrix& x, double eps, int min_points);
  std::vector<double> Score(const Matrix& x) const;
  double eps() const { return eps_; }
  // Fitted rows' clusters: -1 noise, else 0..clusters()-1.
  const std::vector<int>& labels() const { return labels_; }
  int clusters() const { return clusters_; }

 private:
  Matrix core_;
  double eps_ = 1;
  std::vector<int> labels_;
  int clusters_ = 0;
};

// Isolation Forest (Liu, Ting, Zhou 2008): trees split on a random feature at a random
// value between its minimum and maximum among the node's rows, on subsamples of
// `sample_size` rows, to depth ceil(log2(sample_size)). Score s = 2^(-E[h(x)] / c(psi)),
// with h the path length (plus c(size) for the rows left in a leaf): near 1 = anomalous.
class IsolationForest {
 public:
  Status Fit(const Matrix& x, int trees = 100, int sample_size = 256, uint64_t seed = 1);
  std::vector<double> Score(const Matrix& x) const;

 private:
  struct Node {
    int32_t feature = -1;  // -1: leaf
    double split = 0;
    int32_t left = -1, right = -1;
    uint32_t size = 0;  // rows that reached a leaf
  };
  std::vector<std::vector<Node>> trees_;
  double c_psi_ = 1;
};

// ---- Supervised --------------------------------------------------------------------------

// Linear SVM: L2-regularized hinge loss, solved in the dual by coordinate descent (Hsieh et
// al. 2008) with a bias feature, class weights inversely proportional to class frequency.
// K > 2 classes: one against the rest. Scores: the margins w_k . x + b_k.
class LinearSvm {
 public:
  Status Fit(const Matrix& x, const std::vector<int>& y, int classes, double c = 1.0,
             int epochs = 50, uint64_t seed = 1);
  // n x K margins (K = 1 for two classes: the margin of class 1).
  Matrix Decision(const Matrix& x) const;
  int classes() const { return classes_; }

 private:
  std::vector<std::vector<double>> w_;  // per model: d weights + bias
  int classes_ = 2;
};

// Random Forest (Breiman 2001): CART trees on bootstrap samples, Gini impurity, sqrt(d)
// candidate features per split, grown until pure or min_leaf rows. Scores: the mean over
// trees of the leaves' class frequencies.
class RandomForest {
 public:
  Status Fit(const Matrix& x, const std::vector<int>& y, int classes, int trees = 100,
             uint64_t seed = 1, int max_depth = 24, int min_leaf = 1);
  Matrix Proba(const Matrix& x) const;  // n x K
  int classes() const { return classes_; }

 private:
  struct Node {
    int32_t feature = -1;  // -1: leaf
    double split = 0;      // go left when x[feature] <= split
    int32_t left = -1, right = -1;
    uint32_t dist = 0;  // leaf: offset of its K class frequencies in dists_
  };
  std::vector<std::vector<Node>> trees_;
  std::vector<float> dists_;
  int classes_ = 2;
};

// XGBoost (C API), binary:logistic or multi:softprob; unavailable (Fit fails) when Teller
// was built without libxgboost.
class XgboostModel {
 public:
  XgboostModel();
  ~XgboostModel();
  static bool Available();
  Status Fit(const Matrix& x, const std::vector<int>& y, int classes, int rounds = 100,
             uint64_t seed = 1);
  Result<Matrix> Proba(const Matrix& x) const;  // n x K

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int classes_ = 2;
};

}  // namespace teller::eval

#endif  // TELLER_EVAL_MODELS_H_
