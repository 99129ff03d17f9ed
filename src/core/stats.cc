// Statistics (include/teller/core/stats.h).
#include "teller/core/stats.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace teller {
namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
}  // namespace

double KsStatistic(std::vector<double>& a, std::vector<double>& b) {
  if (a.empty() || b.empty()) return kNaN;
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  size_t i = 0, j = 0;
  double d = 0;
  while (i < a.size() || j < b.size()) {
    // Consume every value equal to the smallest remaining one on both sides.
    const double x = j >= b.size() || (i < a.size() && a[i] <= b[j]) ? a[i] : b[j];
    while (i < a.size() && a[i] <= x) ++i;
    while (j < b.size() && b[j] <= x) ++j;
    const double fa = static_cast<double>(i) / static_cast<double>(a.size());
    const double fb = static_cast<double>(j) / static_cast<double>(b.size());
    d = std::max(d, std::fabs(fa - fb));
  }
  return d;
}

double Wasserstein1(std::vector<double>& a, std::vector<double>& b) {
  if (a.empty() || b.empty()) return kNaN;
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  // Integral of |F_a - F_b|: between consecutive sample points both CDFs are constant.
  size_t i = 0, j = 0;
  double area = 0;
  double x = std::min(a[0], b[0]);
  while (i < a.size() || j < b.size()) {
    while (i < a.size() && a[i] <= x) ++i;
    while (j < b.size() && b[j] <= x) ++j;
    if (i >= a.size() && j >= b.size()) break;
    const double next = j >= b.size() || (i < a.size() && a[i] <= b[j]) ? a[i] : b[j];
    const double fa = static_cast<double>(i) / static_cast<double>(a.size());
    const double fb = static_cast<double>(j) / static_cast<double>(b.size());
    area += std::fabs(fa - fb) * (next - x);
    x = next;
  }
  return area;
}

double BinomialTailLog10(uint64_t n, uint64_t k, double p) {
  if (k == 0) return 0;
  if (k > n || p <= 0) return -std::numeric_limits<double>::infinity();
  if (p >= 1) return 0;
  // Sum of the terms i = k..n in log space, largest first: the terms fall geometrically
  // beyond the mode, so the sum stops once they no longer count.
  const double lp = std::log(p), lq = std::log1p(-p);
  const double ln = std::lgamma(static_cast<double>(n) + 1);
  auto term = [&](uint64_t i) {
    const double di = static_cast<double>(i);
    return ln - std::lgamma(di + 1) - std::lgamma(static_cast<double>(n - i) + 1) + di * lp +
           static_cast<double>(n - i) * lq;
  };
  const uint64_t mode = static_cast<uint64_t>(std::floor((static_cast<double>(n) + 1) * p));
  const uint64_t top = std::max(k, std::min(n, mode));
  const double peak = term(top);
  double sum = 0;
  for (uint64_t i = top; i <= n; ++i) {
    const double x = std::exp(term(i) - peak);
    sum += x;
    if (x < 1e-17 * sum) break;
  }
  for (uint64_t i = top; i-- > k;) {
    const double x = std::exp(term(i) - peak);
    sum += x;
    if (x < 1e-17 * sum) break;
  }
  return std::min(0.0, (peak + std::log(sum)) / std::log(10.0));
}

double BetaBinomialTailLog10(uint64_t n, uint64_t k, double p, double rho) {
  if (rho <= 0) return BinomialTailLog10(n, k, p);
  if (k == 0) return 0;
  if (k > n || p <= 0) return -std::numeric_limits<double>::infinity();
  if (p >= 1) return 0;
  rho = std::min(rho, 1 - 1e-9);
  const double a = p * (1 / rho - 1), b = (1 - p) * (1 / rho - 1);
  const double dn = static_cast<double>(n);
  const double base = std::lgamma(dn + 1) + std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) -
                      std::lgamma(dn + a + b);
  auto term = [&](uint64_t i) {
    const double di = static_cast<double>(i);
    return base - std::lgamma(di + 1) - std::lgamma(dn - di + 1) + std::lgamma(di + a) +
           std::lgamma(dn - di + b);
  };
  constexpr uint64_t kMaxTerms = 100000;
  if (static_cast<double>(k) <= dn * p) {
    // At or below the mean the tail is not small: 1 - P(X < k) loses nothing.
    double below = 0;
    for (uint64_t i = 0; i < k && i < kMaxTerms; ++i) below += std::exp(term(i));
    return std::log10(std::clamp(1 - below, 1e-300, 1.0));
  }
  // Beyond the mean the terms fall (the pmf is unimodal or J-shaped with its mode below
  // the mean); summed relative to the first one.
  const double first = term(k);
  double sum = 0;
  for (uint64_t i = k; i <= n && i - k < kMaxTerms; ++i) {
    const double x = std::exp(term(i) - first);
    sum += x;
    if (x < 1e-15 * sum) break;
  }
  return std::min(0.0, (first + std::log(sum)) / std::log(10.0));
}

double RunTailLog10(uint64_t n, uint64_t run, double p) {
  if (run == 0) return 0;
  if (run > n || p <= 0) return -std::numeric_limits<double>::infinity();
  if (p >= 1) return 0;
  if (run == n) return static_cast<double>(n) * std::log10(p);
  // A run of one is a success anywhere: 1 - (1 - p)^n.
  if (run == 1) return std::log10(-std::expm1(static_cast<double>(n) * std::log1p(-p)));
  // Expected number of runs of length >= `run` that begin somewhere: one may begin at the
  // start, every later one needs a failure before it.
  const double starts = 1 + static_cast<double>(n - run) * (1 - p);
  const double lambda_log = std::log(starts) + static_cast<double>(run) * std::log(p);
  // 1 - exp(-lambda), computed without cancellation for small lambda.
  const double lambda = std::exp(lambda_log);
  const double prob = lambda < 1e-8 ? lambda : -std::expm1(-lambda);
  return lambda < 1e-300 ? lambda_log / std::log(10.0) : std::log10(prob);
}

double RunTailLog10(uint64_t n, uint64_t run, double p, double c) {
  if (run == 0) return 0;
  if (run > n || p <= 0) return -std::numeric_limits<double>::infinity();
  if (p >= 1) return 0;
  c = std::clamp(c, 0.0, 1.0);
  if (run == n) return std::log10(p) + static_cast<double>(n - 1) * std::log10(c);
  if (run == 1) {
    // 1 - P(no success): the first fails (1 - p), every later one fails after a failure.
    const double start = std::min(1.0, p * (1 - c) / (1 - p));  // P(success | failure)
    return std::log10(
        -std::expm1(std::log1p(-p) + static_cast<double>(n - 1) * std::log1p(-start)));
  }
  // Runs begin at the start (p) or after a failure (P(failure, success) = p (1 - c) by
  // stationarity), and continue run - 1 times.
  const double starts = p + static_cast<double>(n - run) * p * (1 - c);
  if (starts <= 0 || c <= 0) return -std::numeric_limits<double>::infinity();
  const double lambda_log = std::log(starts) + static_cast<double>(run - 1) * std::log(c);
  const double lambda = std::exp(lambda_log);
  const double prob = lambda < 1e-8 ? lambda : -std::expm1(-lambda);
  return lambda < 1e-300 ? lambda_log / std::log(10.0) : std::log10(std::min(1.0, prob));
}

}  // namespace teller
