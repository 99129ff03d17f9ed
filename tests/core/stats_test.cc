// Tail probabilities of core/stats.h, checked against exhaustive enumeration of every
// outcome sequence (an independent computation: no formula in common with the code).
#include "teller/core/stats.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

namespace teller {
namespace {

struct Enumerated {
  double at_least_k = 0;    // P(successes >= k)
  double run_at_least = 0;  // P(a run of >= run consecutive successes)
};

// Every one of the 2^n sequences of n trials, weighed by its probability.
Enumerated Enumerate(int n, int k, int run, double p) {
  Enumerated e;
  for (uint32_t bits = 0; bits < (1u << n); ++bits) {
    int ones = 0, current = 0, longest = 0;
    for (int i = 0; i < n; ++i) {
      const bool one = (bits >> i) & 1u;
      ones += one;
      current = one ? current + 1 : 0;
      longest = std::max(longest, current);
    }
    const double w = std::pow(p, ones) * std::pow(1 - p, n - ones);
    if (ones >= k) e.at_least_k += w;
    if (longest >= run) e.run_at_least += w;
  }
  return e;
}

TEST(BinomialTail, MatchesEnumeration) {
  for (int n : {1, 5, 12, 16}) {
    for (double p : {0.001, 0.03, 0.2, 0.5, 0.9}) {
      for (int k = 1; k <= n; ++k) {
        const double want = std::log10(Enumerate(n, k, 1, p).at_least_k);
        EXPECT_NEAR(BinomialTailLog10(n, k, p), want, 1e-9 * std::max(1.0, std::fabs(want)))
            << "n=" << n << " k=" << k << " p=" << p;
      }
    }
  }
}

TEST(BinomialTail, EdgesAndLargeCounts) {
  EXPECT_EQ(BinomialTailLog10(10, 0, 0.1), 0.0);
  EXPECT_TRUE(std::isinf(BinomialTailLog10(10, 11, 0.1)));
  EXPECT_TRUE(std::isinf(BinomialTailLog10(10, 1, 0.0)));
  EXPECT_EQ(BinomialTailLog10(10, 3, 1.0), 0.0);
  // All of 1000 at p = 0.5: exactly 1000 log10(0.5).
  EXPECT_NEAR(BinomialTailLog10(1000, 1000, 0.5), 1000 * std::log10(0.5), 1e-6);
  // At or below the mean the tail holds most of the mass: P(X >= 1) for n = 1000,
  // p = 0.01 is 1 - 0.99^1000.
  EXPECT_NEAR(BinomialTailLog10(1000, 1, 0.01), std::log10(1 - std::pow(0.99, 1000)), 1e-9);
}

// P(X >= k) of the beta-binomial from its pmf as rising factorials:
// C(n, i) a^(i) b^(n-i) / (a + b)^(n), x^(m) = x (x + 1) ... (x + m - 1).
double BetaBinomialTailByProducts(int n, int k, double p, double rho) {
  const double a = p * (1 / rho - 1), b = (1 - p) * (1 / rho - 1);
  double tail = 0;
  for (int i = k; i <= n; ++i) {
    double x = std::tgamma(n + 1.0) / (std::tgamma(i + 1.0) * std::tgamma(n - i + 1.0));
    for (int j = 0; j < i; ++j) x *= a + j;
    for (int j = 0; j < n - i; ++j) x *= b + j;
    for (int j = 0; j < n; ++j) x /= a + b + j;
    tail += x;
  }
  return tail;
}

TEST(BetaBinomialTail, MatchesTheProductFormula) {
  for (int n : {1, 6, 20, 40}) {
    for (double p : {0.002, 0.05, 0.3}) {
      for (double rho : {0.01, 0.1, 0.5}) {
        for (int k = 1; k <= n; k += (n > 10 ? 3 : 1)) {
          const double want = std::log10(BetaBinomialTailByProducts(n, k, p, rho));
          EXPECT_NEAR(BetaBinomialTailLog10(n, k, p, rho), want,
                      1e-8 * std::max(1.0, std::fabs(want)))
              << "n=" << n << " k=" << k << " p=" << p << " rho=" << rho;
        }
      }
    }
  }
}

TEST(BetaBinomialTail, OverdispersionMakesALargeCountLikelier) {
  // rho 0 is the binomial; one trial succeeds with the mean p whatever rho is.
  EXPECT_EQ(BetaBinomialTailLog10(500, 20, 0.01, 0.0), BinomialTailLog10(500, 20, 0.01));
  EXPECT_NEAR(BetaBinomialTailLog10(1, 1, 0.01, 0.3), std::log10(0.01), 1e-9);
  // 50 of 582 at a class rate of 1%: about 1e-19 for the binomial, far likelier when the
  // families of the class differ in their rates.
  const double binomial = BinomialTailLog10(582, 50, 0.01);
  const double beta = BetaBinomialTailLog10(582, 50, 0.01, 0.05);
  EXPECT_LT(binomial, -19.0);
  EXPECT_GT(beta, -4.0);
  EXPECT_LT(beta, 0.0);
  EXPECT_EQ(BetaBinomialTailLog10(10, 0, 0.1, 0.2), 0.0);
  EXPECT_TRUE(std::isinf(BetaBinomialTailLog10(10, 11, 0.1, 0.2)));
}

TEST(RunTail, CloseToEnumerationForSmallP) {
  for (int n : {4, 10, 16}) {
    for (double p : {0.001, 0.01, 0.05}) {
      for (int run = 1; run <= std::min(n, 6); ++run) {
        const double want = Enumerate(n, 1, run, p).run_at_least;
        const double got = std::pow(10.0, RunTailLog10(n, run, p));
        EXPECT_NEAR(got / want, 1.0, 0.05) << "n=" << n << " run=" << run << " p=" << p;
      }
    }
  }
}

TEST(RunTail, ExactForTheWholeSequenceAndEdges) {
  EXPECT_NEAR(RunTailLog10(8, 8, 0.3), 8 * std::log10(0.3), 1e-12);
  EXPECT_EQ(RunTailLog10(8, 0, 0.3), 0.0);
  EXPECT_TRUE(std::isinf(RunTailLog10(8, 9, 0.3)));
  // A run of 3 in 70 at p = 0.003 is far rarer than 3 successes anywhere in 70.
  EXPECT_LT(RunTailLog10(70, 3, 0.003), BinomialTailLog10(70, 3, 0.003) - 2);
}

// P(a run of >= run successes) for the stationary Markov chain of RunTailLog10's clumping
// overload, by enumerating every sequence.
double EnumerateMarkov(int n, int run, double p, double c) {
  const double start = p * (1 - c) / (1 - p);  // P(success | failure)
  double total = 0;
  for (uint32_t bits = 0; bits < (1u << n); ++bits) {
    double w = 1;
    int current = 0, longest = 0;
    for (int i = 0; i < n; ++i) {
      const bool one = (bits >> i) & 1u;
      const double p1 = i == 0 ? p : (((bits >> (i - 1)) & 1u) ? c : start);
      w *= one ? p1 : 1 - p1;
      current = one ? current + 1 : 0;
      longest = std::max(longest, current);
    }
    if (longest >= run) total += w;
  }
  return total;
}

TEST(RunTailClumped, CloseToEnumeration) {
  for (int n : {4, 10, 16}) {
    for (double p : {0.002, 0.01, 0.05}) {
      for (double c : {0.05, 0.3, 0.7}) {
        for (int run = 1; run <= std::min(n, 6); ++run) {
          const double want = EnumerateMarkov(n, run, p, c);
          const double got = std::pow(10.0, RunTailLog10(n, run, p, c));
          // Long clumps overlap more: a looser bound where runs continue often.
          EXPECT_NEAR(got / want, 1.0, c <= 0.3 ? 0.06 : 0.25)
              << "n=" << n << " run=" << run << " p=" << p << " c=" << c;
        }
      }
    }
  }
}

TEST(RunTailClumped, IndependentTrialsAndEdges) {
  // c = p: the independent case.
  for (int run : {2, 3, 5})
    EXPECT_NEAR(RunTailLog10(40, run, 0.02, 0.02), RunTailLog10(40, run, 0.02), 1e-9);
  EXPECT_NEAR(RunTailLog10(6, 6, 0.1, 0.5), std::log10(0.1 * std::pow(0.5, 5)), 1e-12);
  EXPECT_EQ(RunTailLog10(6, 0, 0.1, 0.5), 0.0);
  // Clumping makes a long run far less surprising.
  EXPECT_GT(RunTailLog10(200, 10, 0.05, 0.9), RunTailLog10(200, 10, 0.05) + 5);
}

}  // namespace
}  // namespace teller
