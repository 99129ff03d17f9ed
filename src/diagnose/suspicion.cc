// Suspicion of a family's evidence (src/diagnose/suspicion.h).
#include "src/diagnose/suspicion.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "teller/core/stats.h"

namespace teller::diagnose {

namespace {
// The prior that keeps a class with few deviations from looking certain: half an
// instance of rate, and two deviations of 0.5 (e^0.5: 1.65 times the least ratio that
// counts) of size scale.
constexpr double kPriorDeviating = 0.5;
constexpr double kPriorScaleCount = 2.0;
constexpr double kPriorScale = 0.5;
// Sizes tried per family: its distinct evidence ratios, at most this many of them
// (evenly chosen from the sorted list, the largest always included).
constexpr size_t kMaxSizes = 64;
// SizeGrid's step: 5% in ratio.
constexpr double kGridStep = 0.05;
}  // namespace

void Deviations::Add(double ratio, double min_ratio) {
  ++scored;
  if (ratio <= 0) return;
  ratios.push_back(ratio);
  log_size += std::max(0.0, std::log(ratio / min_ratio));
}

void Deviations::Add(const Deviations& o) {
  scored += o.scored;
  ratios.insert(ratios.end(), o.ratios.begin(), o.ratios.end());
  log_size += o.log_size;
}

void Deviations::Finish() { std::sort(ratios.begin(), ratios.end()); }

uint64_t Deviations::AtLeast(double x) const {
  return static_cast<uint64_t>(ratios.end() - std::lower_bound(ratios.begin(), ratios.end(), x));
}

ClassRate::ClassRate(const Deviations& klass, const Deviations& family, double min_ratio)
    : klass_(klass), family_(family) {
  others_ = static_cast<double>(klass.scored - std::min(klass.scored, family.scored));
  const double others_deviating = static_cast<double>(
      klass.ratios.size() - std::min(klass.ratios.size(), family.ratios.size()));
  const double others_size = std::max(0.0, klass.log_size - family.log_size);
  scale_ = (others_size + kPriorScale * kPriorScaleCount) / (others_deviating + kPriorScaleCount);
  // The tail starts where the rest's own deviations end: below their largest one their
  // frequency speaks for itself (with half an instance of prior), beyond it the chance
  // falls by e for every `scale` of log ratio.
  top_ = min_ratio;
  for (auto it = klass.ratios.rbegin(); it != klass.ratios.rend(); ++it) {
    // The largest ratio of the rest: skip the family's own largest ones.
    if (klass.AtLeast(*it) > family.AtLeast(*it)) {
      top_ = std::max(top_, *it);
      break;
    }
  }
}

double ClassRate::operator()(double x) const {
  const double rest =
      static_cast<double>(klass_.AtLeast(x) - std::min(klass_.AtLeast(x), family_.AtLeast(x)));
  const double tail = kPriorDeviating * std::exp(-std::max(0.0, std::log(x / top_)) / scale_);
  return std::min(1.0, (rest + tail) / (others_ + 1.0));
}

namespace {
// The sizes a family's evidence reaches: its distinct ratios, at most kMaxSizes of them.
std::vector<double> Sizes(const Deviations& f) {
  std::vector<double> sizes = f.ratios;
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  if (sizes.size() > kMaxSizes) {
    std::vector<double> chosen;
    for (size_t i = 0; i < kMaxSizes; ++i)
      chosen.push_back(sizes[(sizes.size() - 1) * i / (kMaxSizes - 1)]);
    sizes = std::move(chosen);
  }
  return sizes;
}

// A habit's deviating stretches: each maximal stretch of deviations (ratio > 0) of a
// process's sequence, and whether the sequence ends with it. Every count HabitualSuspicion
// needs at a size x (deviations of x or more, those followed by another, their runs) lies
// inside them, so each size costs the habit's deviations rather than all its instances.
struct Stretch {
  std::vector<double> ratios;
  bool at_end = false;
};
std::vector<Stretch> DeviatingStretches(const FamilyDeviations& habit) {
  std::vector<Stretch> out;
  for (const auto& seq : habit.sequences) {
    for (size_t i = 0; i < seq.size();) {
      if (seq[i] <= 0) {
        ++i;
        continue;
      }
      Stretch s;
      while (i < seq.size() && seq[i] > 0) s.ratios.push_back(seq[i++]);
      s.at_end = i == seq.size();
      out.push_back(std::move(s));
    }
  }
  return out;
}

// Lengths of the habit's runs of deviations of x (> 0) or more (maximal runs, per process),
// sorted.
std::vector<uint64_t> RunLengths(const std::vector<Stretch>& habit, double x) {
  std::vector<uint64_t> runs;
  for (const Stretch& s : habit) {
    uint64_t run = 0;
    for (double r : s.ratios) {
      if (r >= x) {
        ++run;
      } else if (run > 0) {
        runs.push_back(run);
        run = 0;
      }
    }
    if (run > 0) runs.push_back(run);
  }
  std::sort(runs.begin(), runs.end());
  return runs;
}

// log10 of the chance of a run of `run` or more in `n` trials of a chain that starts runs
// as one at (p, c) does, when a run, once begun, lasts `run` or more with the habit's own
// frequency of that: (habit runs that long + c^(run - 1)) / (habit runs + 1), the chain's
// c^(run - 1) being a prior worth one run. Never below the chain's own chance: runs of a
// habit that clumps harder than one c says (a kernel slowed for as long as a concurrent
// stream runs beside it) are its habit, while a habit of short runs alone says too little
// about long ones to make them more suspicious than the chain does.
double HabitRunTailLog10(uint64_t n, uint64_t run, double p, double c,
                         const std::vector<uint64_t>& habit_runs) {
  const double chain = RunTailLog10(n, run, p, c);
  if (run < 2 || run >= n || habit_runs.empty() || p <= 0 || p >= 1) return chain;
  const double longer = static_cast<double>(
      habit_runs.end() - std::lower_bound(habit_runs.begin(), habit_runs.end(), run));
  const double markov = std::pow(std::clamp(c, 0.0, 1.0), static_cast<double>(run - 1));
  const double lasts = (longer + markov) / (static_cast<double>(habit_runs.size()) + 1);
  if (lasts <= markov) return chain;
  const double starts = p + static_cast<double>(n - run) * p * (1 - std::clamp(c, 0.0, 1.0));
  const double lambda = starts * lasts;
  const double prob = lambda < 1e-8 ? lambda : -std::expm1(-lambda);
  return std::max(chain, std::log10(std::min(1.0, prob)));
}

// log10 of the smallest chance at size x: k(x) of the tested instances (binomial at p),
// and the longest run of them per process (a chain that continues at c; with
// `habit_runs`, runs last as long as the habit's do, HabitRunTailLog10).
double LeastChanceLog10(const FamilyDeviations& tested, double x, double p, double c,
                        const std::vector<uint64_t>* habit_runs = nullptr, double rho = 0) {
  double best = BetaBinomialTailLog10(tested.total.scored, tested.total.AtLeast(x), p, rho);
  for (const auto& seq : tested.sequences) {
    uint64_t run = 0, longest = 0;
    for (double r : seq) {
      run = r >= x ? run + 1 : 0;
      longest = std::max(longest, run);
    }
    if (longest == 0) continue;
    double chance = 0;
    if (habit_runs != nullptr) {
      chance = HabitRunTailLog10(seq.size(), longest, p, c, *habit_runs);
    } else {
      chance =
          c == p ? RunTailLog10(seq.size(), longest, p) : RunTailLog10(seq.size(), longest, p, c);
    }
    best = std::min(best, chance);
  }
  return best;
}
}  // namespace

namespace {
// k^2 / n of a family at size x: its part of the sum of squares.
double Square(const Deviations& f, double x) {
  if (f.scored == 0) return 0;
  const double k = static_cast<double>(f.AtLeast(x));
  return k * k / static_cast<double>(f.scored);
}
}  // namespace

SizeGrid::SizeGrid(double min_ratio, double top)
    : min_ratio_(min_ratio),
      top_(std::max(top, min_ratio)),
      size_(static_cast<size_t>(std::log(top_ / min_ratio) / kGridStep) + 1) {}

double SizeGrid::x(size_t m) const {
  return min_ratio_ * std::exp(kGridStep * static_cast<double>(m));
}

size_t SizeGrid::Index(double x) const {
  if (x < min_ratio_ || x > top_) return SIZE_MAX;
  return std::min(size_ - 1, static_cast<size_t>(std::log(x / min_ratio_) / kGridStep + 1e-9));
}

namespace {
// The largest ratio of a class's families (min_ratio when none deviated).
template <typename Range, typename Get>
double LargestRatio(const Range& families, Get deviations, double min_ratio) {
  double top = min_ratio;
  for (const auto& f : families) {
    const Deviations& d = deviations(f);
    if (!d.ratios.empty()) top = std::max(top, d.ratios.back());
  }
  return top;
}
}  // namespace

Overdispersion::Overdispersion(const std::vector<const Deviations*>& families, double min_ratio)
    : grid_(min_ratio,
            LargestRatio(
                families, [](const Deviations* f) -> const Deviations& { return *f; }, min_ratio)),
      levels_(grid_.size()) {
  for (size_t m = 0; m < levels_.size(); ++m) {
    Level& l = levels_[m];
    const double x = grid_.x(m);
    double top_square[2] = {-1, -1};
    for (const Deviations* f : families) {
      if (f->scored == 0) continue;
      const double sq = Square(*f, x);
      l.s += sq;
      l.k += static_cast<double>(f->AtLeast(x));
      l.n += static_cast<double>(f->scored);
      l.f += 1;
      l.w += static_cast<double>(f->scored - 1);
      if (sq > top_square[0]) {
        top_square[1] = top_square[0], l.top[1] = l.top[0];
        top_square[0] = sq, l.top[0] = f;
      } else if (sq > top_square[1]) {
        top_square[1] = sq, l.top[1] = f;
      }
    }
  }
}

double Overdispersion::At(double x, const Deviations* family) const {
  // Beyond the largest deviation of the class nothing deviates: no spread to measure.
  const size_t m = grid_.Index(x);
  if (m == SIZE_MAX) return 0;
  const Level& l = levels_[m];
  const double at = grid_.x(m);
  double s = l.s, k = l.k, n = l.n, f = l.f, w = l.w;
  // Leave out the judged family and the most deviating other one.
  auto drop = [&](const Deviations* d) {
    if (d == nullptr || d->scored == 0) return;
    s -= Square(*d, at);
    k -= static_cast<double>(d->AtLeast(at));
    n -= static_cast<double>(d->scored);
    f -= 1;
    w -= static_cast<double>(d->scored - 1);
  };
  drop(family);
  drop(l.top[0] == family ? l.top[1] : l.top[0]);
  if (n <= 0 || w <= 0 || k <= 0) return 0;  // nothing else deviates this much: no spread
  const double p = k / n;
  if (p >= 1) return 0;
  const double terms = (s - 2 * p * k + p * p * n) / (p * (1 - p)) - f;
  return std::clamp(terms / w, 0.0, kMaxRho);
}

Clumping::Clumping(const std::vector<Family>& families, double min_ratio)
    : grid_(min_ratio,
            LargestRatio(
                families, [](const Family& f) -> const Deviations& { return *f.deviations; },
                min_ratio)),
      levels_(grid_.size()),
      own_(families.size(), std::vector<std::pair<float, float>>(grid_.size(), {0.0f, 0.0f})) {
  for (size_t j = 0; j < families.size(); ++j) {
    index_.emplace(families[j].deviations, j);
    for (const auto& seq : *families[j].sequences) {
      for (size_t i = 0; i + 1 < seq.size(); ++i) {
        if (seq[i] < min_ratio) continue;
        // The levels this deviation reaches, and those its successor reaches too.
        const double both = std::min(seq[i], seq[i + 1]);
        for (size_t m = 0; m < levels_.size() && grid_.x(m) <= seq[i]; ++m) {
          own_[j][m].first += 1;
          if (both >= grid_.x(m)) own_[j][m].second += 1;
        }
      }
    }
  }
  for (size_t m = 0; m < levels_.size(); ++m) {
    Level& l = levels_[m];
    double most[2] = {-1, -1};
    for (size_t j = 0; j < families.size(); ++j) {
      l.firsts += own_[j][m].first;
      l.pairs += own_[j][m].second;
      const double pairs = own_[j][m].second;
      if (pairs > most[0]) {
        most[1] = most[0], l.top[1] = l.top[0];
        most[0] = pairs, l.top[0] = j;
      } else if (pairs > most[1]) {
        most[1] = pairs, l.top[1] = j;
      }
    }
  }
}

double Clumping::At(double x, const Deviations* family, double q) const {
  const size_t m = grid_.Index(x);
  if (m == SIZE_MAX) return q;
  const Level& l = levels_[m];
  double firsts = l.firsts, pairs = l.pairs;
  const auto it = index_.find(family);
  const size_t judged = it == index_.end() ? SIZE_MAX : it->second;
  if (judged != SIZE_MAX) firsts -= own_[judged][m].first, pairs -= own_[judged][m].second;
  const size_t other = l.top[0] == judged ? l.top[1] : l.top[0];
  if (other != SIZE_MAX) firsts -= own_[other][m].first, pairs -= own_[other][m].second;
  const double c = (std::max(0.0, pairs) + kHabitPrior * q) / (std::max(0.0, firsts) + kHabitPrior);
  return std::clamp(std::max(c, q), 0.0, 1.0);
}

double SuspicionAt(const FamilyDeviations& tested, const ClassRate& q,
                   const Overdispersion* overdispersion, const Deviations* family,
                   const Clumping* clumping) {
  if (tested.total.ratios.empty() || tested.total.scored == 0) return 0;
  double best = 0;
  for (double x : Sizes(tested.total)) {
    const double p = q(x);
    const double rho = overdispersion != nullptr ? overdispersion->At(x, family) : 0.0;
    const double c = clumping != nullptr ? clumping->At(x, family, p) : p;
    best = std::min(best, LeastChanceLog10(tested, x, p, c, nullptr, rho));
  }
  return -best;
}

double HabitualSuspicion(const FamilyDeviations& tested, const ClassRate& q,
                         const FamilyDeviations& habit) {
  if (tested.total.ratios.empty() || tested.total.scored == 0) return 0;
  const std::vector<Stretch> stretches = DeviatingStretches(habit);
  double best = 0;
  for (double x : Sizes(tested.total)) {
    const double prior = kHabitPrior * q(x);
    // Deviations of x or more that have a successor (firsts), and those whose successor
    // deviated by x or more too (pairs); the instance after a stretch did not deviate.
    double firsts = 0, pairs = 0;
    for (const Stretch& st : stretches) {
      const std::vector<double>& r = st.ratios;
      for (size_t j = 0; j < r.size(); ++j) {
        if (r[j] < x) continue;
        if (j + 1 < r.size()) {
          ++firsts;
          pairs += r[j + 1] >= x;
        } else if (!st.at_end) {
          ++firsts;
        }
      }
    }
    const double p = std::min(1.0, (static_cast<double>(habit.total.AtLeast(x)) + prior) /
                                       (static_cast<double>(habit.total.scored) + kHabitPrior));
    const double c = std::min(1.0, (pairs + prior) / (firsts + kHabitPrior));
    const std::vector<uint64_t> runs = RunLengths(stretches, x);
    best = std::min(best, LeastChanceLog10(tested, x, p, c, &runs));
  }
  return -best;
}

double OtherRanksSuspicion(const FamilyDeviations& family, const ClassRate& q, double min_ratio) {
  size_t holding = 0;
  for (const auto& seq : family.sequences) holding += !seq.empty();
  if (holding < kMinRanksForHabit) return std::numeric_limits<double>::infinity();
  double most = 0;
  for (size_t i = 0; i < family.sequences.size(); ++i) {
    const std::vector<double>& own = family.sequences[i];
    // A process without evidence is not suspicious against any habit.
    if (std::none_of(own.begin(), own.end(), [](double r) { return r > 0; })) continue;
    FamilyDeviations tested, habit;
    tested.sequences.push_back(own);
    for (double r : own) tested.total.Add(r, min_ratio);
    for (size_t j = 0; j < family.sequences.size(); ++j) {
      if (j == i) continue;
      // Laid out alike (as many instances), the other ranks' instances at the places
      // where this rank deviates are left out of the habit: deviating there at the same
      // time is a shared cause (a fault on every rank), not what the family does at
      // other times.
      const std::vector<double>& theirs = family.sequences[j];
      std::vector<double> kept;
      for (size_t at = 0; at < theirs.size(); ++at) {
        if (theirs.size() == own.size() && own[at] > 0) continue;
        kept.push_back(theirs[at]);
      }
      for (double r : kept) habit.total.Add(r, min_ratio);
      habit.sequences.push_back(std::move(kept));
    }
    tested.total.Finish();
    habit.total.Finish();
    most = std::max(most, HabitualSuspicion(tested, q, habit));
  }
  return std::max(0.0, most - std::log10(static_cast<double>(holding)));
}

namespace {
// n ln(n / m) with 0 ln 0 = 0: one term of a Bernoulli log-likelihood.
double XLogRate(double k, double n) { return k > 0 ? k * std::log(k / n) : 0.0; }
// The Bernoulli log-likelihood of k deviations in n instances at their own rate.
double OwnRateLogLikelihood(double k, double n) {
  return n > 0 ? XLogRate(k, n) + XLogRate(n - k, n) : 0.0;
}
}  // namespace

double OtherTimesSuspicion(const FamilyDeviations& family, const ClassRate& q, double min_ratio) {
  double most = 0, tried = 0;
  for (const std::vector<double>& seq : family.sequences) {
    std::vector<size_t> at;  // positions of the deviations
    for (size_t i = 0; i < seq.size(); ++i) {
      if (seq[i] > 0) at.push_back(i);
    }
    if (at.empty()) continue;
    // Mostly deviating: no habit of its own (suspicion.h).
    if (2 * at.size() > seq.size()) return std::numeric_limits<double>::infinity();
    // Ends evenly chosen among the deviations when there are many (a denser stretch never
    // starts or ends with an instance within its peers).
    std::vector<size_t> ends;
    const size_t step = (at.size() + kMaxStretchEnds - 1) / kMaxStretchEnds;
    for (size_t j = 0; j < at.size(); j += step) ends.push_back(j);
    if (ends.back() != at.size() - 1) ends.push_back(at.size() - 1);
    const double n = static_cast<double>(seq.size()), k = static_cast<double>(at.size());
    const double whole = OwnRateLogLikelihood(k, n);
    // The stretch from the first deviation to the last (leaving nothing or only
    // non-deviating instances outside) is a candidate too: deviations everywhere leave no
    // habit, and the family is judged at the class rate.
    double best = -1;
    size_t first = at.front(), last = at.back();
    for (size_t a = 0; a < ends.size(); ++a) {
      for (size_t b = a; b < ends.size(); ++b) {
        const double inside = static_cast<double>(ends[b] - ends[a] + 1);
        const double length = static_cast<double>(at[ends[b]] - at[ends[a]] + 1);
        const double outside = k - inside, rest = n - length;
        // Denser inside than outside only: a stretch sparser than the rest is no fault.
        if (rest > 0 && inside / length <= outside / rest) continue;
        const double llr =
            OwnRateLogLikelihood(inside, length) + OwnRateLogLikelihood(outside, rest) - whole;
        if (llr > best) best = llr, first = at[ends[a]], last = at[ends[b]];
      }
    }
    tried += static_cast<double>(ends.size()) * static_cast<double>(ends.size() + 1) / 2;
    // The process's whole sequence is judged (a count or a run inside a stretch chosen
    // for its density would be judged as if it had not been chosen); the stretch is only
    // left out of the habit, where a fault would be.
    FamilyDeviations tested, habit;
    tested.sequences.push_back(seq);
    for (double r : seq) tested.total.Add(r, min_ratio);
    // Before and after apart: the end of one and the start of the other never ran in a row.
    habit.sequences.emplace_back(seq.begin(), seq.begin() + static_cast<long>(first));
    habit.sequences.emplace_back(seq.begin() + static_cast<long>(last) + 1, seq.end());
    for (const auto& part : habit.sequences) {
      for (double r : part) habit.total.Add(r, min_ratio);
    }
    tested.total.Finish();
    habit.total.Finish();
    most = std::max(most, HabitualSuspicion(tested, q, habit));
  }
  if (tried == 0) return 0;
  // The most suspicious process counts, less log10 of the stretches tried (Bonferroni: the
  // stretch is chosen as the one that makes the habit cleanest).
  return std::max(0.0, most - std::log10(tried));
}

double Suspicion(const FamilyDeviations& family, const Deviations& klass, double min_ratio) {
  return SuspicionAt(family, ClassRate(klass, family.total, min_ratio));
}

}  // namespace teller::diagnose
