// Two-sample statistics shared by the realism comparison and the evaluation.
#ifndef TELLER_CORE_STATS_H_
#define TELLER_CORE_STATS_H_

#include <vector>

namespace teller {

// Two-sample Kolmogorov-Smirnov statistic: the largest gap between the two empirical
// CDFs. Sorts both samples in place; NaN when either is empty.
double KsStatistic(std::vector<double>& a, std::vector<double>& b);
// 1-Wasserstein distance of two samples: the area between their empirical CDFs. Sorts
// both in place; NaN when either is empty.
double Wasserstein1(std::vector<double>& a, std::vector<double>& b);

}  // namespace teller

#endif  // TELLER_CORE_STATS_H_
