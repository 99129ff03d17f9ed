// How unlikely a family's evidence is as natural variation (docs/diagnose.md, "Top
// operators"): the ranking key of the top operators.
//
// Instances of one kind (a class: GPU kernels, copies, host calls, synchronizations,
// operators' own host time, collective transfers) deviate from their peers at a rate of
// their own in a trace, and the chance of a deviation falls with its size at a rate of its
// own: host time has heavy tails (a pause hits whichever op is running), kernels rarely
// deviate and then by little. Natural variation spreads over the families of a class at
// that rate; a fault concentrates in one family, it is larger than the class's usual
// deviations, and it lasts: its instances deviate one after another.
#ifndef TELLER_SRC_DIAGNOSE_SUSPICION_H_
#define TELLER_SRC_DIAGNOSE_SUSPICION_H_

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

namespace teller::diagnose {

// Deviations of a set of instances: how many were scored against peers, the ratio to
// its peers of each that was evidence, and the sum over those of ln(ratio / min_ratio),
// the size of each deviation beyond the least that counts.
struct Deviations {
  uint64_t scored = 0;
  std::vector<double> ratios;  // sorted once Finish() was called
  double log_size = 0;
  void Add(double ratio, double min_ratio);  // ratio 0: within its peers
  void Add(const Deviations& o);
  void Finish();
  // How many ratios are >= x (after Finish()).
  uint64_t AtLeast(double x) const;
};

// One family: its deviations, and per process its scored instances in time order, each
// as its ratio to its peers when it was evidence and 0 when it was not.
struct FamilyDeviations {
  Deviations total;
  std::vector<std::vector<double>> sequences;
};

// -log10 of the chance that `family` deviates as it does at the rate of the rest of its
// class (`klass` less the family; both Finish()ed). The chance that an instance deviates by
// at least x is q(x) = (m(x) + 0.5 exp(-max(0, ln(x / top)) / scale)) / (N + 1), where N is
// the rest's scored instances, m(x) how many of them deviated by x or more and top the
// largest ratio among them: up to there the rest's own frequency (and half an instance),
// beyond it an exponential tail of the rest's mean size in log ratio (scale; with a prior
// of two deviations of 0.5, i.e. 1.65 times the
// least ratio). For each size x the family's evidence reaches, the chance of k(x) or more
// of its n instances reaching it (binomial) and of a run as long as its longest one of them
// in a row (per process) are taken; the suspicion is the largest -log10 of them, 0 without
// evidence.
double Suspicion(const FamilyDeviations& family, const Deviations& klass, double min_ratio);

// q(x) of the rest of a class: `klass` less `family` (both Finish()ed), as Suspicion
// describes.
class ClassRate {
 public:
  // Both are kept by reference: they must outlive it.
  ClassRate(const Deviations& klass, const Deviations& family, double min_ratio);
  ClassRate(Deviations&&, const Deviations&, double) = delete;
  ClassRate(const Deviations&, Deviations&&, double) = delete;
  double operator()(double x) const;

 private:
  const Deviations& klass_;
  const Deviations& family_;
  double others_ = 0, top_ = 0, scale_ = 0;
};

class SizeGrid {
 public:
  // The sizes min_ratio e^(0.05 m), m = 0, 1, ..., up to `top`, the largest ratio of the
  // class: where Overdispersion and Clumping are measured.
  SizeGrid(double min_ratio, double top);
  size_t size() const { return size_; }
  double x(size_t m) const;
  // The grid point at or below x; SIZE_MAX below min_ratio or beyond top (nothing of the
  // class deviates that much).
  size_t Index(double x) const;

 private:
  double min_ratio_, top_;
  size_t size_;
};

// How much more the families of a class differ in their rates of deviating by x or more
// than chance allows: the intra-class correlation rho(x) of a beta-binomial, by moments.
// Families do differ (a host op whose time depends on the data deviates at several times
// its class's rate in a healthy trace, and the binomial calls that certain); a fault is a
// family that deviates beyond even that. For families j with n_j instances scored and
// k_j(x) deviating by x or more, at the class rate p = sum k / sum n:
//   rho(x) = sum_j [(k_j - n_j p)^2 / (n_j p (1 - p)) - 1] / sum_j (n_j - 1),
// (for a beta-binomial, E[(k - n p)^2] = n p (1 - p) (1 + (n - 1) rho)), leaving out the
// family being judged and the other family that deviates most (one other fault does not
// make every family unsurprising), clamped to [0, kMaxRho]. Computed on a SizeGrid; x
// takes the grid point at or below it.
class Overdispersion {
 public:
  static constexpr double kMaxRho = 0.5;
  // Every family of the class (each Finish()ed); the judged family is given to At() by
  // the same pointer.
  Overdispersion(const std::vector<const Deviations*>& families, double min_ratio);
  double At(double x, const Deviations* family) const;

 private:
  // Per size x, the sums the moment estimate needs, so that it can leave families out:
  // with S = sum k^2 / n, K = sum k, N = sum n over the families left, F of them, W =
  // sum (n - 1) and p = K / N, the numerator is (S - 2 p K + p^2 N) / (p (1 - p)) - F.
  struct Level {
    double s = 0, k = 0, n = 0, f = 0, w = 0;
    // The two families with the largest k^2 / n: the most deviating other family is one
    // of them whichever family is judged.
    const Deviations* top[2] = {nullptr, nullptr};
  };
  SizeGrid grid_;
  std::vector<Level> levels_;
};

// How often, in a class, a deviation of x or more follows one of its own family on its
// process: the class's clumping c(x). Host time clumps (a busy CPU slows the ops that run
// one after another), kernels hardly do; a run is judged by the chain at c(x) rather than
// as independent trials. Over the class's families, less the judged one and the other
// family with the most such pairs (one other fault does not make every run usual):
//   c(x) = (pairs(x) + kHabitPrior q(x)) / (firsts(x) + kHabitPrior)
// (firsts: deviations of x or more that have a successor; pairs: those whose successor
// deviated too), and never below q(x). Computed on a SizeGrid.
class Clumping {
 public:
  // Every family of the class: its deviations (the key) and sequences (one per process, in
  // time order: the ratio of each scored instance, 0 when it was not evidence).
  struct Family {
    const Deviations* deviations;
    const std::vector<std::vector<double>>* sequences;
  };
  Clumping(const std::vector<Family>& families, double min_ratio);
  double At(double x, const Deviations* family, double q) const;

 private:
  struct Level {
    double firsts = 0, pairs = 0;
    size_t top[2] = {SIZE_MAX, SIZE_MAX};  // the two families with the most pairs
  };
  SizeGrid grid_;
  std::vector<Level> levels_;
  // Per family (in the order given) and level: its firsts and pairs.
  std::vector<std::vector<std::pair<float, float>>> own_;
  std::unordered_map<const Deviations*, size_t> index_;  // family -> its place in own_
};

// The suspicion of `tested` (some or all of a family's instances) at chance q(x) per
// instance, as Suspicion computes it; with `overdispersion`, k(x) or more of n is judged
// by the beta-binomial of rho(x) instead of the binomial, and with `clumping` a run by the
// chain at the class's c(x) instead of independent trials.
double SuspicionAt(const FamilyDeviations& tested, const ClassRate& q,
                   const Overdispersion* overdispersion = nullptr,
                   const Deviations* family = nullptr, const Clumping* clumping = nullptr);

// A family's own habit: how its instances deviated where no fault is suspected (a
// baseline's instances, or the family in the other engine steps), one sequence per process
// in time order. Some operators deviate far more often than their class (a kernel sharing
// the GPU with a concurrent stream, an op whose work depends on data), and in runs: their
// deviations in a trace are then their habit, not a fault. The chance per instance is the
// habit's own frequency, with the class rate as a prior worth kHabitPrior instances,
//   q_h(x) = (habit.AtLeast(x) + kHabitPrior q(x)) / (habit.scored + kHabitPrior),
// and a deviation follows one with the habit's own frequency of that, with the same prior,
//   c_h(x) = (pairs(x) + kHabitPrior q(x)) / (firsts(x) + kHabitPrior)
// (firsts: its deviations of x or more that have a successor; pairs: those whose successor
// deviated too); runs are judged as a chain that clumps at c_h (core/stats.h), except that
// a run, once begun, lasts L or more with the habit's own frequency of runs that long,
//   (habit runs of L or more + c_h^(L-1)) / (habit runs + 1),
// when that is more than c_h^(L-1): one c cannot say that a habit's runs are mostly short
// with a few very long ones (a kernel slowed while a concurrent stream runs beside it), and
// a run as long as those the habit had is no sign of a fault. A family without a record gets
// about the class rate.
inline constexpr double kHabitPrior = 10.0;
double HabitualSuspicion(const FamilyDeviations& tested, const ClassRate& q,
                         const FamilyDeviations& habit);

// The other ranks as a family's habit, without a baseline. The ranks of a job run the same
// program: an operator that deviates on every rank alike (a host op whose time depends on
// the data, a kernel beside a concurrent stream) does so by habit, while a fault on one
// rank makes that rank unlike the others. Each process's instances (`family.sequences`,
// one per process) are judged by HabitualSuspicion with the other processes' instances as
// the habit, at other times: when a process has as many instances as this one, its
// instances at the places where this one deviates are left out (deviating together is a
// shared cause, such as a fault on every rank, not a habit); the result is the largest of these
// less log10 of the processes tried (the chance that the most deviating of m ranks deviates so is
// at most m times one's). With fewer than kMinRanksForHabit processes holding instances there is no
// majority to call a habit: the result is then +infinity (no bound).
inline constexpr size_t kMinRanksForHabit = 3;
double OtherRanksSuspicion(const FamilyDeviations& family, const ClassRate& q, double min_ratio);

// The family's other times as its habit, without a baseline. Natural variation of an
// operator goes on all through a trace (a copy that contends with another stream now and
// then, a kernel whose time depends on the data), while a fault starts and ends: its
// deviations crowd into a stretch of the family's instances. Per process, the stretch of
// instances densest in deviations against the rest (the largest Bernoulli log-likelihood
// ratio of deviating at one rate inside and another outside, against one rate for all;
// over the stretches from one deviation to another, at most kMaxStretchEnds deviations,
// evenly chosen, as ends) is where a fault would be, and the instances before and after it
// are the habit: the process's whole sequence is judged by HabitualSuspicion against them
// (the whole, since a count or a run inside a stretch chosen for its density would be
// judged as if it had not been chosen). The result is the largest of these less log10 of
// the stretches tried over all processes (Bonferroni: the stretch is the one that leaves
// the cleanest habit). A
// family that deviates outside its densest stretch as it does inside is no news; one whose
// deviations are all in the stretch keeps about the class suspicion (a clean record).
// A process on which most of the family's instances deviate has no habit of its own to
// judge them by: its instances are slower than peers found elsewhere (the other
// operators' launches of the same call, the other ranks), so its other times are the
// same slowdown, not its natural variation. The result is then +infinity (no bound: the
// class rate judges it, and the other ranks where there are enough).
inline constexpr size_t kMaxStretchEnds = 512;
double OtherTimesSuspicion(const FamilyDeviations& family, const ClassRate& q, double min_ratio);

}  // namespace teller::diagnose

#endif  // TELLER_SRC_DIAGNOSE_SUSPICION_H_
