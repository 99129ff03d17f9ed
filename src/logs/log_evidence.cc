// Log evidence: request lifecycles, latency outliers, template rarity and bursts
// (include/teller/logs/log_evidence.h, docs/logs.md "Log evidence").
#include "teller/logs/log_evidence.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

namespace teller::logs {
namespace {

bool Has(std::string_view s, std::string_view what) { return s.find(what) != s.npos; }
bool Starts(std::string_view s, std::string_view what) { return s.substr(0, what.size()) == what; }

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + mid, v.end());
  const double hi = v[mid];
  if (v.size() % 2 == 1) return hi;
  return (hi + *std::max_element(v.begin(), v.begin() + mid)) / 2;
}

}  // namespace

const char* LifecycleEventName(LifecycleEvent e) {
  switch (e) {
    case LifecycleEvent::kNone:
      return "none";
    case LifecycleEvent::kArrival:
      return "arrival";
    case LifecycleEvent::kScheduled:
      return "scheduled";
    case LifecycleEvent::kFirstToken:
      return "first_token";
    case LifecycleEvent::kFinished:
      return "finished";
    case LifecycleEvent::kAborted:
      return "aborted";
  }
  return "none";
}

// The phrases are those the engines print (docs/serving-notes.md §1.5 and §3.2): vLLM "Received
// request", "Added request", "Finished request", "Aborted request"; SGLang's request log "Receive:
// obj=" and "Finish: obj="; a router's "Routing request"; plain serving loops' "queued request",
// "admitted request", "finished request" and "first token". A preemption or a stats line that names
// a request is no lifecycle event.
LifecycleEvent ClassifyRequestLine(std::string_view m) {
  if (Starts(m, "Receive: obj=") || Starts(m, "Receive: ")) return LifecycleEvent::kArrival;
  if (Starts(m, "Finish: obj=")) return LifecycleEvent::kFinished;
  if (Has(m, "Aborted request") || Has(m, "aborted request")) return LifecycleEvent::kAborted;
  if (Has(m, "Finished request") || Has(m, "finished request")) return LifecycleEvent::kFinished;
  if (Has(m, "first token")) return LifecycleEvent::kFirstToken;
  if (Has(m, "admitted request") || Has(m, "Scheduled request") || Has(m, "scheduled request"))
    return LifecycleEvent::kScheduled;
  if (Has(m, "Received request") || Has(m, "Added request") || Has(m, "Routing request") ||
      Has(m, "queued request") || Has(m, "received request"))
    return LifecycleEvent::kArrival;
  return LifecycleEvent::kNone;
}

const char* IntervalName(Interval i) {
  switch (i) {
    case Interval::kQueue:
      return "queue";
    case Interval::kFirstToken:
      return "time_to_first_token";
    case Interval::kEndToEnd:
      return "end_to_end";
  }
  return "queue";
}

int64_t IntervalNs(const RequestLifecycle& r, Interval i) {
  if (r.arrival_ns == LogTable::kNoTime) return LogTable::kNoTime;
  const int64_t end = i == Interval::kQueue        ? r.scheduled_ns
                      : i == Interval::kFirstToken ? r.first_token_ns
                                                   : r.finished_ns;
  if (end == LogTable::kNoTime || end < r.arrival_ns) return LogTable::kNoTime;
  // An aborted request's end-to-end time is not a latency of the service.
  if (i == Interval::kEndToEnd && r.aborted) return LogTable::kNoTime;
  return end - r.arrival_ns;
}

std::vector<RequestLifecycle> RequestLifecycles(const LogTable& logs, const StringPool& strings) {
  std::vector<RequestLifecycle> out;
  std::unordered_map<StringId, uint32_t> of;
  auto earliest = [](int64_t* slot, int64_t t) {
    if (*slot == LogTable::kNoTime || t < *slot) *slot = t;
  };
  for (uint32_t row = 0; row < logs.size(); ++row) {
    const StringId q = logs.request[row];
    const int64_t t = logs.ts_ns[row];
    if (q == 0 || t == LogTable::kNoTime) continue;
    const LifecycleEvent e = ClassifyRequestLine(strings.Get(logs.message[row]));
    if (e == LifecycleEvent::kNone) continue;
    auto [it, fresh] = of.emplace(q, static_cast<uint32_t>(out.size()));
    if (fresh) {
      out.emplace_back();
      out.back().request = q;
      out.back().row = row;
    }
    RequestLifecycle& r = out[it->second];
    switch (e) {
      case LifecycleEvent::kArrival:
        earliest(&r.arrival_ns, t);
        break;
      case LifecycleEvent::kScheduled:
        earliest(&r.scheduled_ns, t);
        break;
      case LifecycleEvent::kFirstToken:
        earliest(&r.first_token_ns, t);
        break;
      case LifecycleEvent::kAborted:
        r.aborted = true;
        [[fallthrough]];
      case LifecycleEvent::kFinished:
        if (r.finished_ns == LogTable::kNoTime || t > r.finished_ns) r.finished_ns = t;
        break;
      case LifecycleEvent::kNone:
        break;
    }
  }
  return out;
}

double NormalTailInverse(double p) {
  p = std::clamp(p, 1e-300, 0.5);
  // Newton on P(Z > z) = erfc(z / sqrt 2) / 2 from an asymptotic start; a few steps reach
  // double precision over the whole range used (tails from 0.5 down to 1e-300).
  double z = p > 0.3 ? 0.5 : std::sqrt(-2.0 * std::log(p));
  for (int i = 0; i < 60; ++i) {
    const double tail = 0.5 * std::erfc(z / std::sqrt(2.0));
    const double density = std::exp(-0.5 * z * z) / std::sqrt(2.0 * M_PI);
    if (density <= 0) break;
    // Newton in log space converges in the far tail as well.
    const double step = (std::log(tail) - std::log(p)) * tail / density;
    z += step;
    if (std::fabs(step) < 1e-12 * std::max(1.0, z)) break;
  }
  return z;
}

double PoissonTail(uint64_t k, double mean) {
  if (k == 0) return 1;
  if (mean <= 0) return 0;
  // 1 - P(X < k), summed in the direction that keeps precision: the terms below k when k
  // is under the mean, else the terms from k up until they vanish.
  const double log_mean = std::log(mean);
  auto term = [&](uint64_t i) {
    return std::exp(static_cast<double>(i) * log_mean - mean -
                    std::lgamma(static_cast<double>(i) + 1));
  };
  if (static_cast<double>(k) <= mean) {
    double below = 0;
    for (uint64_t i = 0; i < k; ++i) below += term(i);
    return std::clamp(1.0 - below, 0.0, 1.0);
  }
  double sum = 0;
  for (uint64_t i = k; i < k + 100000; ++i) {
    const double t = term(i);
    sum += t;
    if (t < sum * 1e-17) break;
  }
  return std::min(sum, 1.0);
}

int64_t ClockResolution(const std::vector<int64_t>& times) {
  int64_t r = 1'000'000'000;
  while (r > 1) {
    bool all = true;
    for (int64_t t : times) {
      if (t % r != 0) {
        all = false;
        break;
      }
    }
    if (all) return r;
    r /= 10;
  }
  return 1;
}

std::vector<LatencyOutlier> LatencyOutliers(const std::vector<RequestLifecycle>& lifecycles,
                                            const OutlierOptions& options) {
  std::vector<LatencyOutlier> out;
  // The resolution of each end of the intervals: many logs print whole seconds, and the
  // difference of two such stamps is off by up to one unit of each; a request that spans
  // a printed second looks a second long. The floor grows to two units of the coarser end.
  std::vector<int64_t> arrival, scheduled, first_token, finished;
  for (const RequestLifecycle& r : lifecycles) {
    for (auto [t, v] :
         {std::pair{r.arrival_ns, &arrival}, std::pair{r.scheduled_ns, &scheduled},
          std::pair{r.first_token_ns, &first_token}, std::pair{r.finished_ns, &finished}}) {
      if (t != LogTable::kNoTime) v->push_back(t);
    }
  }
  const int64_t at_arrival = ClockResolution(arrival);
  const int64_t end_resolution[kIntervals] = {
      ClockResolution(scheduled), ClockResolution(first_token), ClockResolution(finished)};
  // Intervals that have enough requests to be judged at all: the bar counts only them.
  std::vector<std::vector<uint32_t>> members(kIntervals);
  for (uint32_t k = 0; k < lifecycles.size(); ++k) {
    for (int i = 0; i < kIntervals; ++i) {
      if (IntervalNs(lifecycles[k], static_cast<Interval>(i)) != LogTable::kNoTime)
        members[i].push_back(k);
    }
  }
  uint64_t tested = 0;
  for (int i = 0; i < kIntervals; ++i) {
    if (members[i].size() >= static_cast<size_t>(options.min_peers) + 1)
      tested += members[i].size();
  }
  if (tested == 0) return out;
  const double z_min = NormalTailInverse(options.alpha / static_cast<double>(tested));
  for (int i = 0; i < kIntervals; ++i) {
    const Interval interval = static_cast<Interval>(i);
    if (members[i].size() < static_cast<size_t>(options.min_peers) + 1) continue;
    const int64_t floor =
        std::max({options.min_excess_ns, 2 * std::max(at_arrival, end_resolution[i]), int64_t{1}});
    const double offset = static_cast<double>(floor);
    std::vector<double> raw, logs;
    for (uint32_t k : members[i]) {
      const double x = static_cast<double>(IntervalNs(lifecycles[k], interval));
      raw.push_back(x);
      logs.push_back(std::log(x + offset));
    }
    const double centre = Median(logs);
    std::vector<double> dev;
    for (double y : logs) dev.push_back(std::fabs(y - centre));
    // A log-scale MAD of zero (half the requests alike to the nanosecond) would make any
    // difference infinite; the floor is the smallest step the log scale can resolve at the
    // absolute floor: a relative change of 1e-3.
    const double noise = std::max(1.4826 * Median(dev), 1e-3);
    const double median_raw = Median(raw);
    for (size_t j = 0; j < members[i].size(); ++j) {
      const double z = (logs[j] - centre) / noise;
      if (z < z_min) continue;  // one direction: less waiting is never evidence
      if (raw[j] - median_raw < offset) continue;
      LatencyOutlier o;
      o.lifecycle = members[i][j];
      o.interval = interval;
      o.time_ns = static_cast<int64_t>(raw[j]);
      o.expected_ns = static_cast<int64_t>(median_raw);
      // The noise back on the time scale at the centre: how far one noise unit reaches.
      o.noise_ns = static_cast<int64_t>(std::exp(centre) * (std::exp(noise) - 1));
      o.peers = static_cast<uint32_t>(members[i].size() - 1);
      o.z = z;
      o.z_min = z_min;
      out.push_back(o);
    }
  }
  std::sort(out.begin(), out.end(), [](const LatencyOutlier& a, const LatencyOutlier& b) {
    const int64_t xa = a.time_ns - a.expected_ns, xb = b.time_ns - b.expected_ns;
    if (xa != xb) return xa > xb;
    if (a.lifecycle != b.lifecycle) return a.lifecycle < b.lifecycle;
    return a.interval < b.interval;
  });
  return out;
}

LogTemplates MineTemplates(const LogTable& logs, const StringPool& strings,
                           const TemplateMiner* baseline) {
  LogTemplates t;
  if (baseline != nullptr) {
    // A copy through the template file's text: the baseline's miner stays as it was.
    auto copy = TemplateMiner::Parse(baseline->Serialize(), "baseline");
    if (copy.ok()) {
      t.miner = std::move(copy.value());
      t.known = t.miner.size();
      t.has_baseline = true;
    }
  }
  t.of_row.reserve(logs.size());
  for (uint32_t row = 0; row < logs.size(); ++row) {
    const TemplateId id = t.miner.Add(strings.Get(logs.message[row]));
    t.of_row.push_back(id);
    if (t.count.size() <= id) t.count.resize(id + 1, 0);
    ++t.count[id];
  }
  t.count.resize(t.miner.size(), 0);
  return t;
}

bool IsNew(const LogTemplates& t, TemplateId id) { return t.has_baseline && id >= t.known; }

bool IsRare(const LogTemplates& t, TemplateId id, const RarityOptions& options) {
  if (id >= t.miner.size()) return false;
  if (t.has_baseline) {
    if (id >= t.known) return true;
    // The baseline's lines of it: the template's count less this log's.
    const uint64_t here = id < t.count.size() ? t.count[id] : 0;
    return t.miner.Count(id) - here <= options.rare_max_lines;
  }
  return id < t.count.size() && t.count[id] <= options.rare_max_lines;
}

std::vector<RareBurst> RareBursts(const LogTable& logs, const StringPool& strings,
                                  const LogTemplates& templates, const BurstOptions& options) {
  std::vector<RareBurst> out;
  // The serving period: from the first to the last timed lifecycle line.
  int64_t first = INT64_MAX, last = INT64_MIN;
  for (uint32_t row = 0; row < logs.size(); ++row) {
    if (logs.request[row] == 0 || logs.ts_ns[row] == LogTable::kNoTime) continue;
    if (ClassifyRequestLine(strings.Get(logs.message[row])) == LifecycleEvent::kNone) continue;
    first = std::min(first, logs.ts_ns[row]);
    last = std::max(last, logs.ts_ns[row]);
  }
  if (first >= last) return out;
  std::vector<std::pair<int64_t, uint32_t>> rare;  // (time, row)
  for (uint32_t row = 0; row < logs.size() && row < templates.of_row.size(); ++row) {
    const int64_t t = logs.ts_ns[row];
    if (t == LogTable::kNoTime || t < first || t > last) continue;
    if (IsRare(templates, templates.of_row[row], options.rarity)) rare.push_back({t, row});
  }
  if (rare.size() < options.min_lines) return out;
  std::sort(rare.begin(), rare.end());
  const double span = static_cast<double>(std::max(last - first, options.resolution_ns));
  const double rate = static_cast<double>(rare.size()) / span;  // rare lines per ns
  // Candidates: runs of rare lines closer than the mean spacing (at least the clock's
  // resolution, so lines of one printed second are never split).
  const int64_t gap = std::max(options.resolution_ns, static_cast<int64_t>(1.0 / rate));
  size_t begin = 0;
  for (size_t i = 1; i <= rare.size(); ++i) {
    if (i < rare.size() && rare[i].first - rare[i - 1].first <= gap) continue;
    const size_t n = i - begin;
    if (n >= options.min_lines) {
      RareBurst b;
      b.start_ns = rare[begin].first;
      b.end_ns = rare[i - 1].first;
      const double length =
          static_cast<double>(std::max(b.end_ns - b.start_ns, options.resolution_ns));
      b.expected = rate * length;
      // Each rare line could have started such a period: the tail times their number.
      b.p = std::min(1.0, PoissonTail(n, b.expected) * static_cast<double>(rare.size()));
      std::vector<TemplateId> seen;
      for (size_t k = begin; k < i; ++k) {
        b.rows.push_back(rare[k].second);
        seen.push_back(templates.of_row[rare[k].second]);
      }
      std::sort(seen.begin(), seen.end());
      b.templates = static_cast<uint32_t>(std::unique(seen.begin(), seen.end()) - seen.begin());
      if (b.p < options.alpha) out.push_back(std::move(b));
    }
    begin = i;
  }
  return out;
}

}  // namespace teller::logs
