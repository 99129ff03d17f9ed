// Statistics shared by the stages: two-sample distances (the realism comparison and the
// evaluation) and the tail probabilities that rank the diagnosis' suspects.
#ifndef TELLER_CORE_STATS_H_
#define TELLER_CORE_STATS_H_

#include <cstdint>
#include <vector>

namespace teller {

// Two-sample Kolmogorov-Smirnov statistic: the largest gap between the two empirical
// CDFs. Sorts both samples in place; NaN when either is empty.
double KsStatistic(std::vector<double>& a, std::vector<double>& b);
// 1-Wasserstein distance of two samples: the area between their empirical CDFs. Sorts
// both in place; NaN when either is empty.
double Wasserstein1(std::vector<double>& a, std::vector<double>& b);

// log10 P(X >= k) for X ~ Binomial(n, p): how likely k or more of n independent trials
// succeed. 0 when k == 0; -infinity when k > n, or p == 0 and k > 0.
double BinomialTailLog10(uint64_t n, uint64_t k, double p);

// log10 P(X >= k) for X ~ BetaBinomial(n, a, b) with mean p and intra-class correlation
// rho: a = p (1 / rho - 1), b = (1 - p) (1 / rho - 1). The trials of one group share a
// success probability drawn from Beta(a, b), so groups differ more than binomially: the
// variance is n p (1 - p) (1 + (n - 1) rho). rho <= 0 is the binomial; rho is clamped
// below 1. Summed in log space from k up (or 1 - the sum below k when k is at most the
// mean), at most 100,000 terms.
double BetaBinomialTailLog10(uint64_t n, uint64_t k, double p, double rho);

// log10 of the probability that n independent trials with success probability p hold a
// run of at least `run` consecutive successes somewhere. Poisson clumping approximation
// 1 - exp(-(1 + (n - run)(1 - p)) p^run): close for small p, where it is used (within a
// few percent of the exact value for p <= 0.05), exact for run 1 and
// run n.
double RunTailLog10(uint64_t n, uint64_t run, double p);

// The same for trials that clump: a stationary two-state Markov chain in which a trial
// succeeds with probability p, and follows a success with one with probability c (c = p:
// independent trials, as above). Expected runs of at least `run`: (p + (n - run) p (1 - c))
// c^(run - 1), then 1 - exp(-lambda); exact for run 1 and run n.
double RunTailLog10(uint64_t n, uint64_t run, double p, double c);

}  // namespace teller

#endif  // TELLER_CORE_STATS_H_
