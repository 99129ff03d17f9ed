// The metrics of docs/method.md §8 (include/teller/eval/metrics.h).
#include "teller/eval/metrics.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <string>

namespace teller::eval {
namespace {

double Ratio(double num, double den) { return den > 0 ? num / den : 0.0; }
double F1(double p, double r) { return p + r > 0 ? 2 * p * r / (p + r) : 0.0; }

std::vector<uint32_t> SortedUnique(std::span<const uint32_t> v) {
  std::vector<uint32_t> out(v.begin(), v.end());
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace

StepMetrics ComputeStepMetrics(const BinaryCounts& c) {
  StepMetrics m;
  m.steps = c.total();
  m.positives = c.tp + c.fn;
  m.predicted_positives = c.tp + c.fp;
  m.accuracy = Ratio(static_cast<double>(c.tp + c.tn), static_cast<double>(m.steps));
  m.precision = Ratio(static_cast<double>(c.tp), static_cast<double>(m.predicted_positives));
  m.recall = Ratio(static_cast<double>(c.tp), static_cast<double>(m.positives));
  m.f1 = F1(m.precision, m.recall);
  return m;
}

SetScores ScoreSets(std::span<const uint32_t> predicted, std::span<const uint32_t> labelled) {
  const std::vector<uint32_t> p = SortedUnique(predicted), o = SortedUnique(labelled);
  SetScores s;
  if (p.empty() && o.empty()) {
    // docs/method.md §8: agreement on "no evidence" is a perfect set match but no precision.
    s.f1 = s.jaccard = 1;
    return s;
  }
  size_t common = 0;
  for (size_t i = 0, j = 0; i < p.size() && j < o.size();) {
    if (p[i] == o[j]) {
      ++common, ++i, ++j;
    } else if (p[i] < o[j]) {
      ++i;
    } else {
      ++j;
    }
  }
  s.precision = Ratio(static_cast<double>(common), static_cast<double>(p.size()));
  s.recall = Ratio(static_cast<double>(common), static_cast<double>(o.size()));
  s.f1 = F1(s.precision, s.recall);
  s.jaccard = Ratio(static_cast<double>(common), static_cast<double>(p.size() + o.size() - common));
  return s;
}

void OperatorAccumulator::Add(std::span<const uint32_t> predicted,
                              std::span<const uint32_t> labelled, bool detected) {
  const SetScores s = ScoreSets(predicted, labelled);
  auto add = [&s](SetScores& sum) {
    sum.precision += s.precision;
    sum.recall += s.recall;
    sum.f1 += s.f1;
    sum.jaccard += s.jaccard;
  };
  add(all_);
  ++n_all_;
  if (!labelled.empty()) {
    add(plus_);
    ++n_plus_;
    if (detected) {
      add(detected_);
      ++n_detected_;
    }
  }
}

OperatorMetrics OperatorAccumulator::Finish() const {
  auto mean = [](const SetScores& sum, uint64_t n) {
    SetAverages a;
    a.steps = n;
    if (n == 0) return a;
    a.precision = sum.precision / static_cast<double>(n);
    a.recall = sum.recall / static_cast<double>(n);
    a.f1 = sum.f1 / static_cast<double>(n);
    a.jaccard = sum.jaccard / static_cast<double>(n);
    return a;
  };
  OperatorMetrics m;
  m.macro = mean(all_, n_all_);
  m.macro_plus = mean(plus_, n_plus_);
  m.detected = mean(detected_, n_detected_);
  m.detection_recall =
      n_plus_ == 0 ? 0.0 : static_cast<double>(n_detected_) / static_cast<double>(n_plus_);
  return m;
}

FaultTypeMetrics ComputeFaultTypeMetrics(std::span<const std::string> labels,
                                         std::span<const std::string> predicted,
                                         std::span<const std::string> classes) {
  FaultTypeMetrics m;
  m.steps = std::min(labels.size(), predicted.size());
  for (const std::string& c : classes) m.classes.push_back({.name = c});
  auto index = [&](const std::string& name) -> int {
    for (size_t k = 0; k < classes.size(); ++k) {
      if (classes[k] == name) return static_cast<int>(k);
    }
    return -1;
  };
  uint64_t correct = 0;
  for (size_t i = 0; i < m.steps; ++i) {
    const int l = index(labels[i]), p = index(predicted[i]);
    const bool hit = labels[i] == predicted[i];
    correct += hit;
    if (l >= 0) {
      ++m.classes[l].support;
      m.classes[l].correct += hit;
    }
    if (p >= 0) ++m.classes[p].predicted;
  }
  m.accuracy = Ratio(static_cast<double>(correct), static_cast<double>(m.steps));
  double recall_sum = 0, f1_sum = 0;
  int counted = 0;
  for (ClassScores& c : m.classes) {
    c.precision = Ratio(static_cast<double>(c.correct), static_cast<double>(c.predicted));
    c.recall = Ratio(static_cast<double>(c.correct), static_cast<double>(c.support));
    c.f1 = F1(c.precision, c.recall);
    if (c.support == 0 && c.predicted == 0) continue;
    recall_sum += c.recall;
    f1_sum += c.f1;
    ++counted;
  }
  m.macro_recall = Ratio(recall_sum, counted);
  m.macro_f1 = Ratio(f1_sum, counted);
  return m;
}

std::vector<std::string_view> Tokenize(std::string_view text) {
  std::vector<std::string_view> out;
  size_t i = 0;
  auto space = [](char ch) {
    return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\f' || ch == '\v';
  };
  while (i < text.size()) {
    while (i < text.size() && space(text[i])) ++i;
    const size_t b = i;
    while (i < text.size() && !space(text[i])) ++i;
    if (i > b) out.push_back(text.substr(b, i - b));
  }
  return out;
}

BleuScores CorpusBleu(std::span<const std::string> candidates,
                      std::span<const std::string> references) {
  BleuScores b;
  uint64_t matches[4] = {0, 0, 0, 0}, totals[4] = {0, 0, 0, 0};
  const size_t n = std::min(candidates.size(), references.size());
  b.sentences = n;
  // An n-gram is keyed by its tokens joined with a byte no whitespace token contains.
  auto counts = [](const std::vector<std::string_view>& tokens, size_t order) {
    std::map<std::string, uint64_t> out;
    for (size_t i = 0; i + order <= tokens.size(); ++i) {
      std::string key;
      for (size_t k = 0; k < order; ++k) {
        if (k) key += '\x1f';
        key += tokens[i + k];
      }
      ++out[key];
    }
    return out;
  };
  for (size_t s = 0; s < n; ++s) {
    const std::vector<std::string_view> c = Tokenize(candidates[s]), r = Tokenize(references[s]);
    b.candidate_tokens += c.size();
    b.reference_tokens += r.size();
    for (size_t order = 1; order <= 4; ++order) {
      if (c.size() < order) continue;
      totals[order - 1] += c.size() - order + 1;
      const auto cc = counts(c, order), rc = counts(r, order);
      for (const auto& [gram, count] : cc) {
        const auto it = rc.find(gram);
        if (it != rc.end()) matches[order - 1] += std::min(count, it->second);  // clipped
      }
    }
  }
  if (b.candidate_tokens == 0) return b;
  const double c = static_cast<double>(b.candidate_tokens),
               r = static_cast<double>(b.reference_tokens);
  b.brevity_penalty = c > r ? 1.0 : std::exp(1.0 - r / c);
  double log_sum = 0;
  bool zero = false;
  for (int k = 0; k < 4; ++k) {
    b.precision[k] = Ratio(static_cast<double>(matches[k]), static_cast<double>(totals[k]));
    zero |= b.precision[k] == 0;
    if (!zero) log_sum += std::log(b.precision[k]);
    b.bleu[k] = zero ? 0.0 : b.brevity_penalty * std::exp(log_sum / (k + 1));
  }
  return b;
}

double Auroc(std::span<const double> scores, std::span<const uint8_t> labels) {
  const size_t n = std::min(scores.size(), labels.size());
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return scores[a] < scores[b]; });
  double positive_rank_sum = 0;
  uint64_t positives = 0;
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j < n && scores[order[j]] == scores[order[i]]) ++j;
    const double mid_rank = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2;  // 1-based
    for (size_t k = i; k < j; ++k) {
      if (labels[order[k]]) {
        positive_rank_sum += mid_rank;
        ++positives;
      }
    }
    i = j;
  }
  const uint64_t negatives = n - positives;
  if (positives == 0 || negatives == 0) return 0.5;
  const double p = static_cast<double>(positives);
  const double u = positive_rank_sum - p * (p + 1) / 2;
  return u / (p * static_cast<double>(negatives));
}

double Auprc(std::span<const double> scores, std::span<const uint8_t> labels) {
  const size_t n = std::min(scores.size(), labels.size());
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return scores[a] > scores[b]; });
  uint64_t positives = 0;
  for (size_t i = 0; i < n; ++i) positives += labels[i] != 0;
  if (positives == 0) return 0;
  double ap = 0, previous_recall = 0;
  uint64_t tp = 0, seen = 0;
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j < n && scores[order[j]] == scores[order[i]]) ++j;
    for (size_t k = i; k < j; ++k) tp += labels[order[k]] != 0;
    seen += j - i;
    const double recall = static_cast<double>(tp) / static_cast<double>(positives);
    const double precision = static_cast<double>(tp) / static_cast<double>(seen);
    ap += (recall - previous_recall) * precision;
    previous_recall = recall;
    i = j;
  }
  return ap;
}

uint64_t UniformIndex(std::mt19937_64& rng, uint64_t n) {
  // Rejection of the top partial block keeps every index equally likely.
  const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  uint64_t x;
  do {
    x = rng();
  } while (x >= limit);
  return x % n;
}

std::vector<LowPriorRow> LowPrior(std::span<const uint8_t> labels,
                                  std::span<const uint8_t> predicted,
                                  std::span<const double> scores, const LowPriorOptions& options) {
  const size_t n = std::min({labels.size(), predicted.size(), scores.size()});
  std::vector<size_t> pos, neg;
  for (size_t i = 0; i < n; ++i) (labels[i] ? pos : neg).push_back(i);
  std::mt19937_64 rng(options.seed);
  std::vector<LowPriorRow> rows;
  for (const double prior : options.priors) {
    LowPriorRow row;
    row.prior = prior;
    if (pos.empty() || neg.empty() || prior <= 0 || prior >= 1 || options.repetitions <= 0) {
      rows.push_back(row);
      continue;
    }
    // Keep every negative when there are positives enough; else keep every positive.
    uint64_t k = static_cast<uint64_t>(std::llround(prior * neg.size() / (1 - prior)));
    uint64_t m = neg.size();
    if (k > pos.size()) {
      k = pos.size();
      m = std::min<uint64_t>(
          neg.size(),
          std::max<uint64_t>(1, static_cast<uint64_t>(std::llround(k * (1 - prior) / prior))));
    }
    k = std::max<uint64_t>(k, 1);
    row.positives = k;
    row.negatives = m;
    row.repetitions = options.repetitions;
    std::vector<double> recall, f1, auprc, auroc;
    std::vector<size_t> p = pos, q = neg;
    std::vector<double> s;
    std::vector<uint8_t> l;
    for (int rep = 0; rep < options.repetitions; ++rep) {
      // Partial Fisher-Yates: the first k (m) entries are a uniform sample.
      for (uint64_t i = 0; i < k; ++i) std::swap(p[i], p[i + UniformIndex(rng, p.size() - i)]);
      for (uint64_t i = 0; i < m; ++i) std::swap(q[i], q[i + UniformIndex(rng, q.size() - i)]);
      BinaryCounts c;
      s.clear();
      l.clear();
      for (uint64_t i = 0; i < k; ++i) {
        c.Add(true, predicted[p[i]] != 0);
        s.push_back(scores[p[i]]);
        l.push_back(1);
      }
      for (uint64_t i = 0; i < m; ++i) {
        c.Add(false, predicted[q[i]] != 0);
        s.push_back(scores[q[i]]);
        l.push_back(0);
      }
      const StepMetrics sm = ComputeStepMetrics(c);
      recall.push_back(sm.recall);
      f1.push_back(sm.f1);
      auprc.push_back(Auprc(s, l));
      auroc.push_back(Auroc(s, l));
    }
    auto stats = [](const std::vector<double>& v, double* mean, double* sd) {
      double sum = 0;
      for (double x : v) sum += x;
      *mean = sum / static_cast<double>(v.size());
      double sq = 0;
      for (double x : v) sq += (x - *mean) * (x - *mean);
      *sd = v.size() > 1 ? std::sqrt(sq / static_cast<double>(v.size() - 1)) : 0.0;
    };
    stats(recall, &row.recall, &row.recall_sd);
    stats(f1, &row.f1, &row.f1_sd);
    stats(auprc, &row.auprc, &row.auprc_sd);
    stats(auroc, &row.auroc, &row.auroc_sd);
    rows.push_back(row);
  }
  return rows;
}

bool TopKHit(std::span<const uint64_t> ranked, std::span<const uint64_t> truth, size_t k) {
  std::vector<uint64_t> seen;
  for (const uint64_t key : ranked) {
    if (seen.size() >= k) break;
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) continue;
    seen.push_back(key);
    if (std::find(truth.begin(), truth.end(), key) != truth.end()) return true;
  }
  return false;
}

void RootCauseAccumulator::Add(std::span<const uint64_t> ranked, std::span<const uint64_t> truth,
                               bool detected) {
  if (truth.empty()) return;
  ++n_;
  if (!detected) return;
  top1_ += TopKHit(ranked, truth, 1);
  top3_ += TopKHit(ranked, truth, 3);
}

RootCauseMetrics RootCauseAccumulator::Finish() const {
  RootCauseMetrics m;
  m.units = n_;
  if (n_ == 0) return m;
  m.top1 = static_cast<double>(top1_) / static_cast<double>(n_);
  m.top3 = static_cast<double>(top3_) / static_cast<double>(n_);
  return m;
}

}  // namespace teller::eval
