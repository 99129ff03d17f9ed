// The suspicion that ranks the top operators (src/diagnose/suspicion.h): one value computed
// by hand, and the properties the ranking relies on.
#include "src/diagnose/suspicion.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace teller::diagnose {
namespace {

constexpr double kMin = 1.2;  // the least ratio that is evidence

// A class of `scored` instances of which `deviating` deviated, each by `ratio`.
Deviations Class(uint64_t scored, uint64_t deviating, double ratio) {
  Deviations d;
  for (uint64_t i = 0; i < scored; ++i) d.Add(i < deviating ? ratio : 0.0, kMin);
  d.Finish();
  return d;
}

// One process's sequence of n instances, those at `at` deviating by `ratio`.
FamilyDeviations Family(size_t n, const std::vector<size_t>& at, double ratio) {
  FamilyDeviations f;
  f.sequences.emplace_back(n, 0.0);
  for (size_t i : at) f.sequences[0][i] = ratio;
  for (double r : f.sequences[0]) f.total.Add(r, kMin);
  f.total.Finish();
  return f;
}

Deviations With(Deviations klass, const FamilyDeviations& f) {
  klass.Add(f.total);
  klass.Finish();
  return klass;
}

TEST(Suspicion, OneInstanceAtTheLeastRatioByHand) {
  // The class without the family: 999 instances, 9 deviating (all by more than 1.2x). At
  // x = min_ratio: m(x) = 9 and the tail term is 0.5 exp(0) = 0.5, so q = (9 + 0.5) /
  // (999 + 1) = 0.0095, and the only instance deviating has chance q: suspicion =
  // -log10(0.0095) = 2.02228.
  const FamilyDeviations f = Family(1, {0}, kMin);
  EXPECT_NEAR(Suspicion(f, With(Class(999, 9, 1.5), f), kMin), 2.02228, 1e-4);
}

TEST(Suspicion, NothingDeviatingIsNotSuspicious) {
  const FamilyDeviations f = Family(50, {}, 0);
  EXPECT_EQ(Suspicion(f, With(Class(1000, 30, 1.5), f), kMin), 0.0);
}

TEST(Suspicion, DeviatingAtTheClassRateIsNotSuspicious) {
  // 4 of 200 at a class rate of 2%: the expected count is 4.
  const FamilyDeviations f = Family(200, {10, 60, 120, 180}, 1.5);
  EXPECT_LT(Suspicion(f, With(Class(5000, 100, 1.5), f), kMin), 1.0);
}

TEST(Suspicion, ARunIsMoreSuspiciousThanTheSameCountScattered) {
  const Deviations klass = Class(5000, 15, 1.5);
  const FamilyDeviations run = Family(70, {30, 31, 32}, 2.0);
  const FamilyDeviations scattered = Family(70, {5, 30, 60}, 2.0);
  const double s_run = Suspicion(run, With(klass, run), kMin);
  const double s_scattered = Suspicion(scattered, With(klass, scattered), kMin);
  EXPECT_GT(s_run, s_scattered + 1.0);
  // Three in a row of 70 at q: about 68 q^3; three anywhere: C(70, 3) q^3 = 54740 q^3.
  EXPECT_NEAR(s_run - s_scattered, std::log10(54740.0 / 68.0), 0.3);
}

TEST(Suspicion, SizeCountsOnlyAgainstTheClassUsualSizes) {
  // One instance at 100x: in a class whose deviations are small (1.5x) it is far beyond
  // them; in a class whose deviations are large (50x, host pauses) it is not.
  const FamilyDeviations big = Family(80, {40}, 100.0);
  const double small_class = Suspicion(big, With(Class(8000, 40, 1.5), big), kMin);
  const double heavy_class = Suspicion(big, With(Class(8000, 40, 50.0), big), kMin);
  EXPECT_GT(small_class, heavy_class + 3.0);
  // A family of many instances with many small deviations and a class of few: the count
  // alone makes it suspicious.
  const FamilyDeviations many = Family(100, {1, 9, 17, 33, 41, 55, 62, 70, 84, 99}, 1.3);
  EXPECT_GT(Suspicion(many, With(Class(8000, 8, 1.3), many), kMin), 10.0);
}

TEST(Suspicion, EveryProcessRunsOnItsOwn) {
  // The same three deviations in a row on one process, with or without a second process
  // of 40 quiet instances: the run counts per process, so it is as unlikely either way.
  FamilyDeviations one = Family(40, {10, 11, 12}, 2.0);
  FamilyDeviations two = one;
  two.sequences.emplace_back(40, 0.0);
  for (double r : two.sequences[1]) two.total.Add(r, kMin);
  two.total.Finish();
  const Deviations klass = Class(5000, 15, 1.5);
  EXPECT_NEAR(Suspicion(one, With(klass, one), kMin), Suspicion(two, With(klass, two), kMin), 0.01);
}

// A habit: one process's sequence of n instances, those at `at` deviating by `ratio`.
FamilyDeviations Habit(size_t n, const std::vector<size_t>& at, double ratio) {
  return Family(n, at, ratio);
}

TEST(HabitualSuspicion, OneInstanceByHand) {
  // The class as in OneInstanceAtTheLeastRatioByHand: q(1.2) = 9.5 / 1000. The habit: 90
  // instances, 9 of them deviating, none right after another. q_h = (9 + 10 q) / (90 + 10)
  // = 0.090950; one instance of one deviating has exactly that chance: -log10(0.090950) =
  // 1.041200.
  const FamilyDeviations f = Family(1, {0}, kMin);
  const Deviations klass = With(Class(999, 9, 1.5), f);
  const ClassRate q(klass, f.total, kMin);
  const FamilyDeviations habit = Habit(90, {3, 13, 23, 33, 43, 53, 63, 73, 83}, 1.5);
  EXPECT_NEAR(HabitualSuspicion(f, q, habit), 1.041200, 1e-5);
}

TEST(HabitualSuspicion, WithoutARecordItIsTheClassSuspicion) {
  // No habit: q_h = 10 q / 10 = q, and c_h = q (independent trials).
  const FamilyDeviations f = Family(70, {30, 31, 32}, 2.0);
  const Deviations klass = With(Class(5000, 15, 1.5), f);
  const ClassRate q(klass, f.total, kMin);
  FamilyDeviations none;
  none.total.Finish();
  EXPECT_NEAR(HabitualSuspicion(f, q, none), SuspicionAt(f, q), 1e-9);
  EXPECT_NEAR(SuspicionAt(f, q), Suspicion(f, klass, kMin), 1e-12);
}

TEST(HabitualSuspicion, DeviatingAsUsualIsNotSuspicious) {
  // An operator that deviates in runs (a kernel that shares its GPU with another stream):
  // 20 of 200 instances at 3x, in two runs of 10. The trace shows the same: rare for its
  // class (a 10-run at 3x), its habit.
  std::vector<size_t> runs;
  for (size_t i = 0; i < 10; ++i) {
    runs.push_back(40 + i);
    runs.push_back(140 + i);
  }
  const FamilyDeviations f = Family(200, runs, 3.0);
  const Deviations klass = With(Class(20000, 40, 1.5), f);
  const ClassRate q(klass, f.total, kMin);
  EXPECT_GT(SuspicionAt(f, q), 20.0);
  EXPECT_LT(HabitualSuspicion(f, q, Habit(200, runs, 3.0)), 1.5);
  // A run of its usual size but twice as long as any in its habit is news again, though
  // less than without the record.
  std::vector<size_t> longer;
  for (size_t i = 0; i < 20; ++i) longer.push_back(60 + i);
  const FamilyDeviations g = Family(200, longer, 3.0);
  const Deviations klass_g = With(Class(20000, 40, 1.5), g);
  const ClassRate qg(klass_g, g.total, kMin);
  const double habitual = HabitualSuspicion(g, qg, Habit(200, runs, 3.0));
  EXPECT_GT(habitual, 3.0);
  EXPECT_LT(habitual, SuspicionAt(g, qg));
}

TEST(HabitualSuspicion, ACleanRecordKeepsAFaultSuspicious) {
  // A family that never deviated in its baseline: three in a row at 2x stay as suspicious
  // as against the class alone (its record makes it, if anything, less likely to deviate).
  const FamilyDeviations f = Family(70, {30, 31, 32}, 2.0);
  const Deviations klass = With(Class(5000, 15, 1.5), f);
  const ClassRate q(klass, f.total, kMin);
  EXPECT_GE(HabitualSuspicion(f, q, Habit(70, {}, 0.0)), SuspicionAt(f, q));
}

TEST(HabitualSuspicion, ARunAsLongAsTheHabitsLongestIsNotSuspiciousByHand) {
  // The class as in OneInstanceAtTheLeastRatioByHand: q(1.5) = 9.5 / 1000 = 0.0095, prior
  // 10 q = 0.095. The habit, 1,000 instances at 1.5x: 30 lone deviations and one run of 20
  // (a kernel slowed for as long as a concurrent stream ran beside it). q_h = (50 + 0.095)
  // / 1010 = 0.049599, c_h = (19 + 0.095) / (50 + 10) = 0.318250: one c says a run of 20
  // has the chance of 33.19 starts x c^19, log10 = -7.93. The habit's own runs say a run
  // lasts 20 or more in 1 of 31: (1 + c^19) / 32 = 0.03125, lambda = 33.187 x 0.03125 =
  // 1.0371, log10(1 - e^-lambda) = -0.1901. The binomial part, 50 or more of 1,000 at
  // q_h, is log10 0.4971 = -0.3036 (summed by hand over k = 50..1000): the suspicion.
  std::vector<size_t> at;
  for (size_t i = 0; i < 20; ++i) at.push_back(100 + i);
  for (size_t i = 0; i < 30; ++i) at.push_back(200 + 20 * i);
  const FamilyDeviations f = Family(1000, at, 1.5);
  const Deviations klass = With(Class(999, 9, 1.5), f);
  const ClassRate q(klass, f.total, kMin);
  EXPECT_NEAR(HabitualSuspicion(f, q, Habit(1000, at, 1.5)), 0.30364, 1e-4);
  // A run twice as long as any the habit had: no habit run lasted that long, so the chain
  // decides: starts p + 960 p (1 - c) = 32.52, times c^39: log10 = -17.880.
  std::vector<size_t> longer;
  for (size_t i = 0; i < 40; ++i) longer.push_back(100 + i);
  for (size_t i = 0; i < 30; ++i) longer.push_back(200 + 20 * i);
  const FamilyDeviations g = Family(1000, longer, 1.5);
  const Deviations klass_g = With(Class(999, 9, 1.5), g);
  const ClassRate qg(klass_g, g.total, kMin);
  EXPECT_NEAR(HabitualSuspicion(g, qg, Habit(1000, at, 1.5)), 17.880, 1e-3);
}

// A family on `processes` processes of n instances each; those listed in `at` (per
// process) deviate by `ratio`.
FamilyDeviations Ranks(size_t processes, size_t n, const std::vector<std::vector<size_t>>& at,
                       double ratio) {
  FamilyDeviations f;
  for (size_t p = 0; p < processes; ++p) {
    f.sequences.emplace_back(n, 0.0);
    if (p < at.size()) {
      for (size_t i : at[p]) f.sequences[p][i] = ratio;
    }
    for (double r : f.sequences[p]) f.total.Add(r, kMin);
  }
  f.total.Finish();
  return f;
}

TEST(OtherRanksSuspicion, AFaultOnOneRankByHand) {
  // Four ranks of 10 instances; rank 3 deviates three in a row at 2x, the others never.
  // The class rest as in OneInstanceAtTheLeastRatioByHand (999 instances, 9 at 1.5x): its
  // size scale is (9 ln(1.5 / 1.2) + 2 x 0.5) / (9 + 2) = 0.273487, so q(2) = 0.5
  // exp(-ln(2 / 1.5) / 0.273487) / 1000 = 1.746321e-4. Rank 3 against the other three at
  // other times (their places 4-6 left out: 21 instances, none deviating): q_h = 10 q / 31
  // = 5.633293e-5, c_h = 10 q / 10 = q. Three or more of 10 at q_h (binomial): log10 =
  // -10.668660; a run of 3 (chain): (q_h + 7 q_h (1 - c_h)) c_h^2, log10 = -10.861966, the
  // smaller. Less log10(4) for the four ranks tried: 10.259906.
  const FamilyDeviations f = Ranks(4, 10, {{}, {}, {}, {4, 5, 6}}, 2.0);
  const Deviations klass = With(Class(999, 9, 1.5), f);
  const ClassRate q(klass, f.total, kMin);
  EXPECT_NEAR(OtherRanksSuspicion(f, q, kMin), 10.259906, 1e-5);
}

TEST(OtherRanksSuspicion, DeviatingOnEveryRankAtOtherPlacesIsAHabit) {
  // A run of three at 2x on every rank, each at a place of its own: rare for the class
  // (the family's own suspicion is far above 10), and what every rank does.
  const FamilyDeviations f = Ranks(4, 20, {{1, 2, 3}, {6, 7, 8}, {11, 12, 13}, {16, 17, 18}}, 2.0);
  const Deviations klass = With(Class(999, 9, 1.5), f);
  const ClassRate q(klass, f.total, kMin);
  EXPECT_GT(SuspicionAt(f, q), 10.0);
  EXPECT_LT(OtherRanksSuspicion(f, q, kMin), 0.5);
}

TEST(OtherRanksSuspicion, DeviatingTogetherIsNotAHabit) {
  // The same run of three at 2x on all four ranks at the same places (a fault on every
  // rank at once): each rank's habit leaves those places out, so each is judged against
  // the others' clean instances at other times, exactly as the one faulty rank of
  // AFaultOnOneRankByHand is.
  const FamilyDeviations f = Ranks(4, 10, {{4, 5, 6}, {4, 5, 6}, {4, 5, 6}, {4, 5, 6}}, 2.0);
  const Deviations klass = With(Class(999, 9, 1.5), f);
  const ClassRate q(klass, f.total, kMin);
  EXPECT_NEAR(OtherRanksSuspicion(f, q, kMin), 10.259906, 1e-5);
}

TEST(OtherRanksSuspicion, TwoRanksAreNoMajority) {
  // With two ranks, neither is the habit of the other: no bound.
  const FamilyDeviations f = Ranks(2, 10, {{4, 5, 6}, {4, 5, 6}}, 2.0);
  const Deviations klass = With(Class(999, 9, 1.5), f);
  const ClassRate q(klass, f.total, kMin);
  EXPECT_TRUE(std::isinf(OtherRanksSuspicion(f, q, kMin)));
}

TEST(OtherTimesSuspicion, AStretchOnACleanRecordByHand) {
  // Ten instances, three in a row at 2x (places 4-6), the class as in
  // AFaultOnOneRankByHand: q(2) = 1.746321e-4. The stretches from one deviation to
  // another: 6. Densest: 4-6, 3 of 3 against 0 of 7, LLR = -(3 ln 0.3 + 7 ln 0.7) =
  // 6.108643 (4-5 leaves one outside: 3.094482). The habit is the seven instances before
  // and after, none deviating: q_h = 10 q / 17 = 1.027248e-4, c_h = q. The whole ten are
  // judged: three or more of 10 at q_h, log10 = -9.886028; a run of 3 (chain):
  // (q_h + 7 q_h (1 - c_h)) c_h^2, log10 = -10.601053, the smaller. Less log10(6) for
  // the stretches tried: 9.822902.
  const FamilyDeviations f = Family(10, {4, 5, 6}, 2.0);
  const Deviations klass = With(Class(999, 9, 1.5), f);
  const ClassRate q(klass, f.total, kMin);
  EXPECT_NEAR(OtherTimesSuspicion(f, q, kMin), 9.822902, 1e-5);
}

TEST(OtherTimesSuspicion, DeviatingAllThroughTheTraceIsAHabit) {
  // Runs of three at 2x, every 25 instances, all through 200 instances: far beyond the
  // class's rate (the class suspicion is large), and what the family does at any time:
  // its densest stretch leaves the other runs as its habit.
  std::vector<size_t> at;
  for (size_t i = 0; i < 200; i += 25) at.insert(at.end(), {i + 3, i + 4, i + 5});
  const FamilyDeviations f = Family(200, at, 2.0);
  const Deviations klass = With(Class(999, 9, 1.5), f);
  const ClassRate q(klass, f.total, kMin);
  EXPECT_GT(SuspicionAt(f, q), 20.0);
  EXPECT_LT(OtherTimesSuspicion(f, q, kMin), 1.0);
  // The same runs at one time only (the first two, a fault that started and ended) stay
  // suspicious: their habit is a clean record.
  const FamilyDeviations once = Family(200, {3, 4, 5, 28, 29, 30}, 2.0);
  const Deviations klass_once = With(Class(999, 9, 1.5), once);
  const ClassRate q_once(klass_once, once.total, kMin);
  EXPECT_GT(OtherTimesSuspicion(once, q_once, kMin), 15.0);
}

TEST(OtherTimesSuspicion, DeviatingEverywhereLeavesTheClassRate) {
  // All five instances at 2x: the family has no other times to call its habit, so this
  // bound is +infinity and the class rate judges it: five of five at q = 1.746321e-4
  // (AFaultOnOneRankByHand's class), q^5 (the run of five is the same), log10 =
  // 5 log10 q = -18.789380.
  const FamilyDeviations f = Family(5, {0, 1, 2, 3, 4}, 2.0);
  const Deviations klass = With(Class(999, 9, 1.5), f);
  const ClassRate q(klass, f.total, kMin);
  EXPECT_TRUE(std::isinf(OtherTimesSuspicion(f, q, kMin)));
  EXPECT_NEAR(SuspicionAt(f, q), 18.789380, 1e-5);
  // Without a deviation nothing is suspicious.
  const FamilyDeviations none = Family(5, {}, 2.0);
  EXPECT_EQ(OtherTimesSuspicion(none, ClassRate(klass, none.total, kMin), kMin), 0.0);
}

TEST(OtherTimesSuspicion, MostlyDeviatingHasNoHabitOfItsOwn) {
  // 97 of 100 instances at 5x (every launch of one operator slower than the other
  // operators' launches, three at their usual time): their other times are the same
  // slowdown, not a habit, so no bound; before, the densest stretch (from the second
  // usual instance on) left a habit of 49 deviations in 50 and the suspicion fell under 3.
  std::vector<size_t> most;
  for (size_t i = 0; i < 100; ++i) {
    if (i != 10 && i != 50 && i != 90) most.push_back(i);
  }
  const FamilyDeviations f = Family(100, most, 5.0);
  const Deviations klass = With(Class(999, 9, 1.5), f);
  const ClassRate q(klass, f.total, kMin);
  EXPECT_TRUE(std::isinf(OtherTimesSuspicion(f, q, kMin)));
  EXPECT_GT(SuspicionAt(f, q), 100.0);
  // Half of them (every other instance) is no majority: the family deviates all through
  // the trace, its habit, and is no news.
  std::vector<size_t> half;
  for (size_t i = 0; i < 100; i += 2) half.push_back(i);
  const FamilyDeviations g = Family(100, half, 5.0);
  const Deviations klass_g = With(Class(999, 9, 1.5), g);
  const ClassRate qg(klass_g, g.total, kMin);
  EXPECT_LT(OtherTimesSuspicion(g, qg, kMin), 3.0);
}

// A family of n instances of which k deviate by `ratio`, spread out (no two in a row).
Deviations Spread(uint64_t n, uint64_t k, double ratio) {
  Deviations d;
  for (uint64_t i = 0; i < n; ++i)
    d.Add(k > 0 && i % (n / k) == 0 && i / (n / k) < k ? ratio : 0.0, kMin);
  d.Finish();
  return d;
}

TEST(Overdispersion, ByHand) {
  // Six families of 100 instances at 1.5x: the judged one deviates 20 times, the most
  // deviating other 10 times (left out), the rest 0, 5, 5 and 0. Of those four: k = 10,
  // n = 400, p = 0.025; each term (k_j - 2.5)^2 / (100 x 0.024375) - 1 = 1.564103, four
  // of them 6.256410, over 4 x 99: rho = 0.0157990. (1.5x lies above the grid point
  // 1.2 e^0.2 = 1.4657 and below the next.)
  const Deviations judged = Spread(100, 20, 1.5), a = Spread(100, 10, 1.5), b = Spread(100, 0, 1.5),
                   c = Spread(100, 5, 1.5), d = Spread(100, 5, 1.5), e = Spread(100, 0, 1.5);
  const Overdispersion od({&judged, &a, &b, &c, &d, &e}, kMin);
  EXPECT_NEAR(od.At(1.5, &judged), 0.0157990, 1e-6);
  // Nothing deviates 2x or more: no spread to measure.
  EXPECT_EQ(od.At(2.0, &judged), 0.0);
  // Families that deviate alike (5 of 100 each) are binomial: rho 0.
  const Deviations f1 = Spread(100, 5, 1.5), f2 = Spread(100, 5, 1.5), f3 = Spread(100, 5, 1.5),
                   f4 = Spread(100, 5, 1.5);
  const Overdispersion alike({&judged, &f1, &f2, &f3, &f4}, kMin);
  EXPECT_EQ(alike.At(1.5, &judged), 0.0);
}

TEST(Overdispersion, FamiliesThatDifferMakeACountLessSuspicious) {
  // The judged family, 20 of 100 at 1.5x, against a class whose other families deviate
  // 0 or 10 times in 100 (rate 5%, strongly overdispersed) is far less suspicious than
  // against the binomial of the same rate.
  std::vector<Deviations> others;
  for (int i = 0; i < 20; ++i) others.push_back(Spread(100, i % 2 == 0 ? 10 : 0, 1.5));
  FamilyDeviations f;
  f.total = Spread(100, 20, 1.5);
  f.sequences.emplace_back();
  for (int i = 0; i < 100; ++i) f.sequences[0].push_back(i % 5 == 0 ? 1.5 : 0.0);
  Deviations klass = f.total;
  std::vector<const Deviations*> all = {&f.total};
  for (const Deviations& o : others) {
    klass.Add(o);
    all.push_back(&o);
  }
  klass.Finish();
  const ClassRate q(klass, f.total, kMin);
  const Overdispersion od(all, kMin);
  EXPECT_GT(od.At(1.5, &f.total), 0.02);
  const double binomial = SuspicionAt(f, q);
  const double overdispersed = SuspicionAt(f, q, &od, &f.total);
  EXPECT_GT(binomial, 4.0);
  EXPECT_LT(overdispersed, binomial - 2.0);
  EXPECT_GT(overdispersed, 0.0);
}

// A family given as its sequences (one per process): its deviations and the sequences.
struct Sequences {
  Deviations deviations;
  std::vector<std::vector<double>> sequences;
  explicit Sequences(std::vector<std::vector<double>> seqs) : sequences(std::move(seqs)) {
    for (const auto& seq : sequences) {
      for (double r : seq) deviations.Add(r, kMin);
    }
    deviations.Finish();
  }
  Clumping::Family Of() const { return {&deviations, &sequences}; }
};

TEST(Clumping, ByHand) {
  // At 1.5x (the grid point 1.2 e^0.2 = 1.4657 below it): the judged family J, a run of
  // three at 2x, is left out, and so is C, the other family with the most pairs (5 of 5).
  // A has 4 deviations with a successor, 2 of them followed by one; B 3 and 0. With the
  // prior 10 q at q = 0.01: c = (2 + 0.1) / (7 + 10) = 0.123529. At 2x no other family
  // deviates: c = 10 q / 10 = q.
  const Sequences j({{0, 2, 2, 2, 0}});
  const Sequences a({{1.5, 1.5, 0, 1.5, 1.5, 0}});
  const Sequences b({{1.5, 0, 1.5, 0, 1.5, 0}});
  const Sequences c({{1.5, 1.5, 1.5, 1.5, 1.5, 1.5}});
  const Clumping clumping({j.Of(), a.Of(), b.Of(), c.Of()}, kMin);
  EXPECT_NEAR(clumping.At(1.5, &j.deviations, 0.01), 0.123529, 1e-6);
  EXPECT_NEAR(clumping.At(2.0, &j.deviations, 0.01), 0.01, 1e-12);
  // Never below q.
  EXPECT_NEAR(clumping.At(1.5, &j.deviations, 0.5), 0.5, 1e-12);
}

TEST(Clumping, ARunInAClassThatClumpsIsLessSuspicious) {
  // A run of four at 1.5x in 100 instances: against a class whose other families deviate
  // in pairs (each deviation followed by another), the run is likelier than against
  // independent trials at the same rate.
  std::vector<std::vector<double>> seq(1, std::vector<double>(100, 0.0));
  for (size_t i = 40; i < 44; ++i) seq[0][i] = 1.5;
  const Sequences judged(seq);
  std::vector<Sequences> others;
  for (int k = 0; k < 30; ++k) {
    std::vector<double> o(100, 0.0);
    o[10 + k] = o[11 + k] = 1.5;
    others.emplace_back(std::vector<std::vector<double>>{o});
  }
  std::vector<Clumping::Family> families = {judged.Of()};
  Deviations klass = judged.deviations;
  for (const Sequences& o : others) {
    families.push_back(o.Of());
    klass.Add(o.deviations);
  }
  klass.Finish();
  FamilyDeviations f;
  f.total = judged.deviations;
  f.sequences = judged.sequences;
  const ClassRate q(klass, f.total, kMin);
  const Clumping clumping(families, kMin);
  EXPECT_GT(clumping.At(1.5, &judged.deviations, q(1.5)), 0.3);
  const double independent = SuspicionAt(f, q);
  const double clumped = SuspicionAt(f, q, nullptr, &f.total, &clumping);
  EXPECT_LT(clumped, independent - 1.0);
  EXPECT_GT(clumped, 0.0);
}

}  // namespace
}  // namespace teller::diagnose
