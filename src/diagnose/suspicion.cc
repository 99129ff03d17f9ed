// Suspicion of a family's evidence (src/diagnose/suspicion.h).
#include "src/diagnose/suspicion.h"

#include <algorithm>
#include <cmath>

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

double Suspicion(const FamilyDeviations& family, const Deviations& klass, double min_ratio) {
  const Deviations& f = family.total;
  if (f.ratios.empty() || f.scored == 0) return 0;
  const double others = static_cast<double>(klass.scored - std::min(klass.scored, f.scored));
  const double others_deviating =
      static_cast<double>(klass.ratios.size() - std::min(klass.ratios.size(), f.ratios.size()));
  const double others_size = std::max(0.0, klass.log_size - f.log_size);
  const double scale =
      (others_size + kPriorScale * kPriorScaleCount) / (others_deviating + kPriorScaleCount);
  // The tail starts where the rest's own deviations end: below their largest one their
  // frequency speaks for itself (with half an instance of prior), beyond it the chance
  // falls by e for every `scale` of log ratio.
  double top = min_ratio;
  for (auto it = klass.ratios.rbegin(); it != klass.ratios.rend(); ++it) {
    // The largest ratio of the rest: skip the family's own largest ones.
    const uint64_t own = f.AtLeast(*it), all = klass.AtLeast(*it);
    if (all > own) {
      top = std::max(top, *it);
      break;
    }
  }
  std::vector<double> sizes = f.ratios;
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  if (sizes.size() > kMaxSizes) {
    std::vector<double> chosen;
    for (size_t i = 0; i < kMaxSizes; ++i)
      chosen.push_back(sizes[(sizes.size() - 1) * i / (kMaxSizes - 1)]);
    sizes = std::move(chosen);
  }
  double best = 0;  // log10 of the smallest chance
  for (double x : sizes) {
    const double rest =
        static_cast<double>(klass.AtLeast(x) - std::min(klass.AtLeast(x), f.AtLeast(x)));
    const double tail = kPriorDeviating * std::exp(-std::max(0.0, std::log(x / top)) / scale);
    const double q = std::min(1.0, (rest + tail) / (others + 1.0));
    for (const auto& seq : family.sequences) {
      uint64_t run = 0, longest = 0;
      for (double r : seq) {
        run = r >= x ? run + 1 : 0;
        longest = std::max(longest, run);
      }
      if (longest > 0) best = std::min(best, RunTailLog10(seq.size(), longest, q));
    }
    best = std::min(best, BinomialTailLog10(f.scored, f.AtLeast(x), q));
  }
  return -best;
}

}  // namespace teller::diagnose
