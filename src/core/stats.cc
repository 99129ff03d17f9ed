// Two-sample statistics (include/teller/core/stats.h).
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

}  // namespace teller
