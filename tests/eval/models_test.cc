// The baselines' learners on small synthetic data whose answer is known: blobs with an
// outlier for the detectors, separable and non-linear labels for the classifiers.
#include "teller/eval/models.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <vector>

namespace teller::eval {
namespace {

// Two tight 2-D blobs of 40 points each around (0,0) and (10,10), then one far outlier.
Matrix BlobsWithOutlier() {
  std::mt19937_64 rng(3);
  std::normal_distribution<double> noise(0, 0.3);  // test data only: platform variation is fine
  Matrix x(81, 2);
  for (size_t i = 0; i < 80; ++i) {
    const double c = i < 40 ? 0 : 10;
    x.at(i, 0) = c + noise(rng);
    x.at(i, 1) = c + noise(rng);
  }
  x.at(80, 0) = 30;
  x.at(80, 1) = -20;
  return x;
}

size_t ArgMax(const std::vector<double>& v) {
  return static_cast<size_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

TEST(DbscanTest, FindsTwoClustersAndNoise) {
  const Matrix x = BlobsWithOutlier();
  Dbscan d;
  ASSERT_TRUE(d.Fit(x, 1.5, 4).ok());
  EXPECT_EQ(d.clusters(), 2);
  EXPECT_EQ(d.labels()[80], -1);
  for (size_t i = 0; i < 40; ++i) EXPECT_EQ(d.labels()[i], d.labels()[0]);
  for (size_t i = 40; i < 80; ++i) EXPECT_EQ(d.labels()[i], d.labels()[40]);
  EXPECT_NE(d.labels()[0], d.labels()[40]);
  // New points: inside a blob scores <= 1 (member), far away > 1 (noise).
  Matrix q(2, 2);
  q.at(0, 0) = 10.1;
  q.at(0, 1) = 9.9;
  q.at(1, 0) = 5;
  q.at(1, 1) = 5;
  const std::vector<double> s = d.Score(q);
  EXPECT_LE(s[0], 1.0);
  EXPECT_GT(s[1], 1.0);
}

TEST(DbscanTest, AutomaticEpsAndDegenerateInput) {
  const Matrix x = BlobsWithOutlier();
  Dbscan d;
  ASSERT_TRUE(d.Fit(x, 0, 5).ok());
  EXPECT_GT(d.eps(), 0);
  EXPECT_LT(d.eps(), 5);  // the blobs' scale, not the gap between them
  EXPECT_EQ(ArgMax(d.Score(x)), 80u);
  // All rows identical: one cluster, finite scores.
  Matrix same(10, 3);
  Dbscan e;
  ASSERT_TRUE(e.Fit(same, 0, 3).ok());
  EXPECT_EQ(e.clusters(), 1);
  for (double s : e.Score(same)) EXPECT_TRUE(std::isfinite(s));
  EXPECT_FALSE(Dbscan().Fit(Matrix(), 1, 3).ok());
}

TEST(IsolationForestTest, OutlierScoresHighestAndIsDeterministic) {
  const Matrix x = BlobsWithOutlier();
  IsolationForest f, g;
  ASSERT_TRUE(f.Fit(x, 100, 64, 7).ok());
  ASSERT_TRUE(g.Fit(x, 100, 64, 7).ok());
  const std::vector<double> s = f.Score(x);
  EXPECT_EQ(ArgMax(s), 80u);
  EXPECT_GT(s[80], 0.6);  // anomalies score near 1, ordinary points near or below 0.5
  EXPECT_EQ(s, g.Score(x));
  for (double v : s) {
    EXPECT_GT(v, 0);
    EXPECT_LE(v, 1);
  }
  // Constant data cannot be split: every point is equally ordinary.
  Matrix same(20, 2);
  IsolationForest h;
  ASSERT_TRUE(h.Fit(same, 10, 16, 1).ok());
  const std::vector<double> t = h.Score(same);
  EXPECT_EQ(std::set<double>(t.begin(), t.end()).size(), 1u);
}

TEST(KMeansGmmTest, OutlierIsFarthest) {
  const Matrix x = BlobsWithOutlier();
  // Three centres: one per blob and one the seeding puts on the outlier, which is
  // dropped as a tiny cluster (so the outlier is scored against the blobs).
  KMeansDetector k;
  ASSERT_TRUE(k.Fit(x, 3).ok());
  EXPECT_EQ(k.centroids().rows, 2u);
  EXPECT_EQ(ArgMax(k.Score(x)), 80u);
  GmmDetector g;
  ASSERT_TRUE(g.Fit(x, 3).ok());
  EXPECT_EQ(ArgMax(g.Score(x)), 80u);
  // More clusters than rows is clamped, not an error.
  Matrix two(2, 2);
  two.at(1, 0) = 1;
  KMeansDetector small;
  EXPECT_TRUE(small.Fit(two, 8).ok());
  EXPECT_FALSE(KMeansDetector().Fit(Matrix(), 2).ok());
}

// Linearly separable: label = x0 + x1 > 0.
void Separable(Matrix* x, std::vector<int>* y) {
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> u(-1, 1);
  *x = Matrix(200, 2);
  y->clear();
  for (size_t i = 0; i < 200; ++i) {
    double a = u(rng), b = u(rng);
    if (std::fabs(a + b) < 0.1) a += a + b > 0 ? 0.2 : -0.2;  // a margin
    x->at(i, 0) = a;
    x->at(i, 1) = b;
    y->push_back(a + b > 0 ? 1 : 0);
  }
}

TEST(LinearSvmTest, SeparatesSeparableData) {
  Matrix x;
  std::vector<int> y;
  Separable(&x, &y);
  LinearSvm svm;
  ASSERT_TRUE(svm.Fit(x, y, 2, 10.0, 200, 1).ok());
  const Matrix d = svm.Decision(x);
  ASSERT_EQ(d.cols, 1u);
  int correct = 0;
  for (size_t i = 0; i < x.rows; ++i) correct += (d.at(i, 0) > 0) == (y[i] == 1);
  EXPECT_GE(correct, 196);
}

TEST(LinearSvmTest, OneAgainstTheRestAndOneClass) {
  // Three classes along x0: < -1, [-1, 1], > 1 is not linear per class for the middle one,
  // so use three directions instead: class = argmax of (x0, x1, -x0 - x1).
  std::mt19937_64 rng(9);
  std::uniform_real_distribution<double> u(-1, 1);
  Matrix x(300, 2);
  std::vector<int> y;
  for (size_t i = 0; i < 300; ++i) {
    x.at(i, 0) = u(rng);
    x.at(i, 1) = u(rng);
    const double s[3] = {x.at(i, 0), x.at(i, 1), -x.at(i, 0) - x.at(i, 1)};
    y.push_back(static_cast<int>(std::max_element(s, s + 3) - s));
  }
  LinearSvm svm;
  ASSERT_TRUE(svm.Fit(x, y, 3, 10.0, 200, 1).ok());
  const Matrix d = svm.Decision(x);
  ASSERT_EQ(d.cols, 3u);
  int correct = 0;
  for (size_t i = 0; i < x.rows; ++i) {
    const double* r = d.row(i);
    correct += static_cast<int>(std::max_element(r, r + 3) - r) == y[i];
  }
  EXPECT_GE(correct, 270);
  // One class only: a constant answer, no failure.
  LinearSvm one;
  ASSERT_TRUE(one.Fit(x, std::vector<int>(300, 0), 2).ok());
  EXPECT_LT(one.Decision(x).at(0, 0), 0);
  EXPECT_FALSE(one.Fit(x, std::vector<int>(3, 0), 2).ok());  // labels do not match rows
}

TEST(RandomForestTest, LearnsXorAndThreeClasses) {
  // XOR of the signs: no linear model can, trees can.
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> u(-1, 1);
  Matrix x(400, 3);
  std::vector<int> y, y3;
  for (size_t i = 0; i < 400; ++i) {
    for (size_t j = 0; j < 3; ++j) x.at(i, j) = u(rng);
    y.push_back((x.at(i, 0) > 0) != (x.at(i, 1) > 0) ? 1 : 0);
    y3.push_back(x.at(i, 2) < -0.3 ? 0 : x.at(i, 2) < 0.3 ? 1 : 2);
  }
  Matrix train(300, 3), test(100, 3);
  std::copy(x.v.begin(), x.v.begin() + 900, train.v.begin());
  std::copy(x.v.begin() + 900, x.v.end(), test.v.begin());
  const std::vector<int> ytrain(y.begin(), y.begin() + 300), y3train(y3.begin(), y3.begin() + 300);
  RandomForest rf, again;
  ASSERT_TRUE(rf.Fit(train, ytrain, 2, 50, 1).ok());
  ASSERT_TRUE(again.Fit(train, ytrain, 2, 50, 1).ok());
  const Matrix p = rf.Proba(test);
  EXPECT_EQ(p.v, again.Proba(test).v);  // same seed, same forest
  int correct = 0;
  for (size_t i = 0; i < 100; ++i) {
    EXPECT_NEAR(p.at(i, 0) + p.at(i, 1), 1.0, 1e-6);
    correct += (p.at(i, 1) > 0.5) == (y[300 + i] == 1);
  }
  EXPECT_GE(correct, 85);
  RandomForest rf3;
  ASSERT_TRUE(rf3.Fit(train, y3train, 3, 50, 1).ok());
  const Matrix p3 = rf3.Proba(test);
  int correct3 = 0;
  for (size_t i = 0; i < 100; ++i) {
    const double* r = p3.row(i);
    correct3 += static_cast<int>(std::max_element(r, r + 3) - r) == y3[300 + i];
  }
  EXPECT_GE(correct3, 90);
  EXPECT_FALSE(rf3.Fit(train, std::vector<int>(300, 5), 3).ok());  // label out of range
}

TEST(XgboostTest, LearnsXorWhenAvailable) {
  if (!XgboostModel::Available()) {
    XgboostModel m;
    EXPECT_FALSE(m.Fit(Matrix(2, 1), {0, 1}, 2).ok());
    GTEST_SKIP() << "built without XGBoost";
  }
  std::mt19937_64 rng(13);
  std::uniform_real_distribution<double> u(-1, 1);
  Matrix x(300, 2);
  std::vector<int> y;
  for (size_t i = 0; i < 300; ++i) {
    x.at(i, 0) = u(rng);
    x.at(i, 1) = u(rng);
    y.push_back((x.at(i, 0) > 0) != (x.at(i, 1) > 0) ? 1 : 0);
  }
  XgboostModel m;
  ASSERT_TRUE(m.Fit(x, y, 2, 30, 1).ok());
  auto p = m.Proba(x);
  ASSERT_TRUE(p.ok()) << p.status().message();
  int correct = 0;
  for (size_t i = 0; i < 300; ++i) correct += (p->at(i, 1) > 0.5) == (y[i] == 1);
  EXPECT_GE(correct, 285);
  XgboostModel multi;
  std::vector<int> y3;
  for (size_t i = 0; i < 300; ++i) y3.push_back(x.at(i, 0) < -0.3 ? 0 : x.at(i, 0) < 0.3 ? 1 : 2);
  ASSERT_TRUE(multi.Fit(x, y3, 3, 30, 1).ok());
  auto p3 = multi.Proba(x);
  ASSERT_TRUE(p3.ok());
  EXPECT_EQ(p3->cols, 3u);
  EXPECT_NEAR(p3->at(0, 0) + p3->at(0, 1) + p3->at(0, 2), 1.0, 1e-5);
}

}  // namespace
}  // namespace teller::eval
