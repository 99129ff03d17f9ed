// Log evidence in the diagnosis (include/teller/diagnose/log_evidence.h).
#include "teller/diagnose/log_evidence.h"

#include <algorithm>
#include <ctime>
#include <map>
#include <sstream>
#include <tuple>
#include <unordered_map>

#include "src/diagnose/format.h"
#include "teller/core/json_writer.h"
#include "teller/core/request_id.h"
#include "teller/diagnose/diagnose.h"

namespace teller::diagnose {
namespace {

constexpr const char* kPeriodKind = "log_period";
// Requests named one by one in a period finding; the rest are counted.
constexpr size_t kPeriodRequests = 5;
// Rare lines quoted in a burst finding.
constexpr size_t kBurstLines = 5;

// "HH:MM:SS" UTC, the resolution most serving logs print.
std::string Clock(int64_t ns) {
  const time_t secs = static_cast<time_t>(ns / 1'000'000'000);
  tm utc{};
  gmtime_r(&secs, &utc);
  char buf[32];
  std::strftime(buf, sizeof buf, "%H:%M:%S", &utc);
  return buf;
}

std::string Sentence(const std::string& request, const logs::LatencyOutlier& o) {
  std::ostringstream x;
  x << "request " << request << ": " << logs::IntervalName(o.interval) << " " << Duration(o.time_ns)
    << " against " << Duration(o.expected_ns) << " for its " << o.peers << " peers (z "
    << Fixed(o.z, 1) << ", bar " << Fixed(o.z_min, 1) << ")";
  return x.str();
}

// Waiting before service (queue, first token) is the scheduler's doing; a long end-to-end
// time alone may be slow steps, which the timing evidence judges.
bool IsWaiting(logs::Interval i) { return i != logs::Interval::kEndToEnd; }

LogEvidence FromOutlier(const Trace& trace, const std::vector<logs::RequestLifecycle>& life,
                        const logs::LatencyOutlier& o) {
  LogEvidence e;
  e.kind = "request_latency";
  e.request = std::string(trace.strings.Get(life[o.lifecycle].request));
  e.interval = logs::IntervalName(o.interval);
  e.time_ns = o.time_ns;
  e.expected_ns = o.expected_ns;
  e.excess_ns = o.time_ns - o.expected_ns;
  e.noise_ns = o.noise_ns;
  e.peers = o.peers;
  e.z = o.z;
  e.z_min = o.z_min;
  e.row = life[o.lifecycle].row;
  return e;
}

void Locate(const Trace& trace, uint32_t row, Finding* f) {
  f->source = std::string(trace.strings.Get(trace.logs.file[row]));
  f->line = trace.logs.line[row];
  f->ts_ns = trace.logs.ts_ns[row];
}

// Outliers grouped into periods by arrival: a period lasts until its last member's wait
// ends, and an outlier arriving later starts the next one.
std::vector<Finding> LatencyPeriods(const Trace& trace,
                                    const std::vector<logs::RequestLifecycle>& life,
                                    const std::vector<const logs::LatencyOutlier*>& outliers) {
  std::vector<Finding> out;
  std::vector<const logs::LatencyOutlier*> sorted = outliers;
  std::sort(sorted.begin(), sorted.end(), [&](const auto* a, const auto* b) {
    const int64_t ta = life[a->lifecycle].arrival_ns, tb = life[b->lifecycle].arrival_ns;
    if (ta != tb) return ta < tb;
    return a->lifecycle < b->lifecycle;
  });
  size_t begin = 0;
  while (begin < sorted.size()) {
    int64_t end = life[sorted[begin]->lifecycle].arrival_ns + sorted[begin]->time_ns;
    size_t i = begin + 1;
    while (i < sorted.size() && life[sorted[i]->lifecycle].arrival_ns <= end) {
      end = std::max(end, life[sorted[i]->lifecycle].arrival_ns + sorted[i]->time_ns);
      ++i;
    }
    std::vector<const logs::LatencyOutlier*> members(sorted.begin() + begin, sorted.begin() + i);
    std::sort(members.begin(), members.end(), [](const auto* a, const auto* b) {
      return a->time_ns - a->expected_ns > b->time_ns - b->expected_ns;
    });
    std::vector<uint32_t> requests;
    for (const auto* m : members) requests.push_back(m->lifecycle);
    std::sort(requests.begin(), requests.end());
    requests.erase(std::unique(requests.begin(), requests.end()), requests.end());
    const bool waiting = std::any_of(members.begin(), members.end(),
                                     [](const auto* m) { return IsWaiting(m->interval); });
    Finding f;
    f.category = FaultCategory::kSchedulingSoftware;
    f.kind = kPeriodKind;
    f.severity = "warning";
    const int64_t start = life[sorted[begin]->lifecycle].arrival_ns;
    f.title = std::to_string(requests.size()) + " request(s) arriving " + Clock(start) +
              (requests.size() > 1 ? "-" + Clock(life[sorted[i - 1]->lifecycle].arrival_ns) : "") +
              (waiting ? " waited far longer than their peers before service"
                       : " took far longer than their peers end to end");
    f.explanation =
        waiting ? "Their log lines show them waiting before the engine served them while their "
                  "peers were served at once: the scheduler passed them over (starvation) or a "
                  "queue built up (queueing)."
                : "Their end-to-end times, from their own log lines, are far beyond the other "
                  "requests': the engine slowed down for them, or they waited.";
    Locate(trace, life[members.front()->lifecycle].row, &f);
    f.ts_ns = start;
    for (size_t k = 0; k < members.size() && k < kPeriodRequests; ++k)
      f.details.push_back(Sentence(
          std::string(trace.strings.Get(life[members[k]->lifecycle].request)), *members[k]));
    if (members.size() > kPeriodRequests)
      f.details.push_back("and " + std::to_string(members.size() - kPeriodRequests) + " more");
    out.push_back(std::move(f));
    begin = i;
  }
  return out;
}

std::vector<Finding> BurstFindings(const Trace& trace, const logs::LogTemplates& templates,
                                   const LogEvidenceOptions& options) {
  std::vector<Finding> out;
  for (const logs::RareBurst& b :
       logs::RareBursts(trace.logs, trace.strings, templates, options.bursts)) {
    Finding f;
    f.category = FaultCategory::kSchedulingSoftware;
    f.kind = kPeriodKind;
    f.severity = "warning";
    f.title = std::to_string(b.rows.size()) + " lines of " + std::to_string(b.templates) +
              " rare template(s) at " + Clock(b.start_ns) +
              (b.end_ns / 1'000'000'000 > b.start_ns / 1'000'000'000 ? "-" + Clock(b.end_ns) : "");
    f.explanation = "While the log served requests, lines of templates it rarely prints (" +
                    Fixed(b.expected, 2) +
                    " expected in this period at the log's rate) came together: something "
                    "unusual happened then (chance " +
                    Fixed(b.p, 6) + ").";
    Locate(trace, b.rows.front(), &f);
    for (size_t k = 0; k < b.rows.size() && k < kBurstLines; ++k) {
      const uint32_t row = b.rows[k];
      f.details.push_back(std::string(LogLevelName(trace.logs.level[row])) + ": " +
                          ShortName(trace.strings.Get(trace.logs.message[row]), 160));
    }
    if (b.rows.size() > kBurstLines)
      f.details.push_back("and " + std::to_string(b.rows.size() - kBurstLines) + " more lines");
    out.push_back(std::move(f));
  }
  return out;
}

// The step's own id of the request whose log lines name it `external` (steps carry the
// engine-internal form, logs either; ExternalRequestId joins them); "" when not in it.
std::string StepRequestId(const StepDiagnosis& s, std::string_view external) {
  for (const std::string& q : s.requests) {
    if (ExternalRequestId(q) == external) return q;
  }
  return "";
}

std::string StepName(const StepDiagnosis& s) {
  return s.number >= 0 ? std::to_string(s.number) : "#" + std::to_string(s.ordinal);
}

// Makes `s` abnormal on request-scoped log evidence about `request` (the step's id of it):
// `what` the step did, `sentence` the evidence, `cause` the likely scheduling fault. A step
// the timing evidence made abnormal keeps its verdict and gets the sentence appended.
void MarkForRequest(StepDiagnosis& s, const std::string& request, float score,
                    const std::string& what, const std::string& sentence, const char* cause,
                    Diagnosis* d) {
  if (!s.abnormal) {
    s.abnormal = true;
    s.vertical = true;  // the request's own service is what went wrong
    ++d->abnormal_steps;
    s.score = std::max(s.score, score);
    s.fault_type = FaultCategoryName(FaultCategory::kSchedulingSoftware);
    s.explanation = "Step " + StepName(s) + " " + what + ": " + sentence + ". Likely " +
                    s.fault_type + ": " + cause + ".";
    s.abnormal_requests.push_back(request);
    return;
  }
  s.score = std::max(s.score, score);
  if (!s.abnormal_requests.empty() &&
      std::find(s.abnormal_requests.begin(), s.abnormal_requests.end(), request) ==
          s.abnormal_requests.end())
    s.abnormal_requests.push_back(request);
  if (s.explanation.find(sentence) == std::string::npos) s.explanation += " Log: " + sentence + ".";
}

// A score in [threshold, 1) that rises with `strength` in [0, 1] (docs/diagnosis.schema.json:
// a score is below 1).
float ScoreAbove(double step_threshold, double strength) {
  return static_cast<float>(
      std::min(0.999, step_threshold + (1.0 - step_threshold) * std::max(strength, 1e-3)));
}

// The step that first served each request, by the request's external id (logs print
// either form, ExternalRequestId joins them).
std::unordered_map<std::string, uint32_t> FirstSteps(const Diagnosis& d) {
  std::unordered_map<std::string, uint32_t> first;
  for (uint32_t g = 0; g < d.steps.size(); ++g) {
    for (const std::string& q : d.steps[g].requests) {
      auto [it, fresh] = first.emplace(std::string(ExternalRequestId(q)), g);
      if (!fresh && d.steps[g].start_ns < d.steps[it->second].start_ns) it->second = g;
    }
  }
  return first;
}

// Requests whose first step did not prefill them (docs/diagnose.md, "Log evidence"). A
// request new to the trace has its whole life in it, so the first step that served it
// must compute its prompt; one first run without a prefill was routed down the decode path
// over state it never filled (method.md §9's case). New to the trace: `teller run` traced
// the program from its start, or the request's arrival line falls at or after the first
// traced step. Judged only where the engine prefills its new requests itself: at least
// kMinPrefilledPeers other new requests were prefilled in their first step (a decode
// instance of a disaggregated deployment gets its prompts' KV from another instance and
// prefills none). However many were skipped: a routing fault that lasts may take most of
// the requests admitted meanwhile. `first`: FirstSteps(*d). `life`: the log's request
// lifecycles, or null when the log is not read.
constexpr uint32_t kMinPrefilledPeers = 3;

void AddUnprefilled(const Trace& trace, const std::vector<logs::RequestLifecycle>* life,
                    const std::unordered_map<std::string, uint32_t>& first,
                    const LogEvidenceOptions& options, double step_threshold, Diagnosis* d) {
  int64_t traced_from = INT64_MAX;
  for (const StepDiagnosis& s : d->steps) {
    if (!s.rank_steps.empty()) traced_from = std::min(traced_from, s.start_ns);
  }
  std::unordered_map<std::string, const logs::RequestLifecycle*> life_of;
  if (life != nullptr) {
    for (const logs::RequestLifecycle& l : *life)
      life_of.emplace(std::string(trace.strings.Get(l.request)), &l);
  }
  struct Skipped {
    std::string request;  // external id
    uint32_t step;
    const logs::RequestLifecycle* life;
  };
  std::vector<Skipped> skipped;
  uint32_t prefilled = 0;
  for (const auto& entry : first) {
    const std::string& id = entry.first;  // a named copy: lambdas cannot capture bindings
    const uint32_t g = entry.second;
    const StepDiagnosis& s = d->steps[g];
    if (!s.prefill_known) continue;
    const auto it = life_of.find(id);
    const logs::RequestLifecycle* l = it == life_of.end() ? nullptr : it->second;
    const bool arrived_in_trace =
        l != nullptr && l->arrival_ns != LogTable::kNoTime && l->arrival_ns >= traced_from;
    if (!trace.run.known && !arrived_in_trace) continue;
    const bool in_prefill = std::any_of(s.prefilled.begin(), s.prefilled.end(),
                                        [&](const auto& q) { return ExternalRequestId(q) == id; });
    if (in_prefill)
      ++prefilled;
    else
      skipped.push_back({id, g, l});
  }
  if (prefilled < kMinPrefilledPeers || skipped.empty()) return;
  // In step order, then by id: the report does not depend on the map's order.
  std::sort(skipped.begin(), skipped.end(), [](const Skipped& a, const Skipped& b) {
    return std::tie(a.step, a.request) < std::tie(b.step, b.request);
  });
  const double strength =
      static_cast<double>(prefilled) / static_cast<double>(prefilled + skipped.size());
  for (const Skipped& k : skipped) {
    StepDiagnosis& s = d->steps[k.step];
    const std::string request = StepRequestId(s, k.request);
    LogEvidence e;
    e.kind = "request_route";
    e.request = k.request;
    e.step_kind = s.kind;
    e.peers = prefilled;
    const bool timed = k.life != nullptr && k.life->arrival_ns != LogTable::kNoTime;
    e.row = k.life != nullptr ? k.life->row : LogEvidence::kNoRow;
    const std::string sentence =
        "request " + k.request +
        (timed ? " arrived at " + Clock(k.life->arrival_ns) + " and" : "") +
        " was first run in a " + (s.kind.empty() ? std::string("step") : s.kind + " step") +
        " without a prefill, while the " + std::to_string(prefilled) + " other requests " +
        (trace.run.known ? "of the run" : "that arrived during the trace") +
        " were prefilled first";
    MarkForRequest(s, request.empty() ? k.request : request, ScoreAbove(step_threshold, strength),
                   "ran a new request that was never prefilled", sentence,
                   "the scheduler routed the request's prefill as a decode, over KV state it "
                   "never computed",
                   d);
    if (s.log_evidence.size() < options.max_per_step) s.log_evidence.push_back(std::move(e));
  }
}

logs::LogTemplates Templates(const Trace& trace, const LogEvidenceOptions& options) {
  return logs::MineTemplates(trace.logs, trace.strings, options.baseline_templates.get());
}

}  // namespace

void AddLogEvidence(const Trace& trace, const LogEvidenceOptions& options, double step_threshold,
                    Diagnosis* d) {
  if (!options.enabled || trace.logs.size() == 0) {
    AddUnprefilled(trace, nullptr, FirstSteps(*d), options, step_threshold,
                   d);  // what the trace alone says
    return;
  }
  std::vector<logs::RequestLifecycle> life = logs::RequestLifecycles(trace.logs, trace.strings);
  // The step that first served each request: its start is when the request was scheduled
  // if the log does not say (vLLM and SGLang print no scheduling line).
  const std::unordered_map<std::string, uint32_t> first_step = FirstSteps(*d);
  std::vector<int64_t> step_of(life.size(), -1);
  for (size_t k = 0; k < life.size(); ++k) {
    const auto it = first_step.find(std::string(trace.strings.Get(life[k].request)));
    if (it == first_step.end()) continue;
    step_of[k] = it->second;
    // A step that began before the arrival line's time served the request at once: the
    // line was written (and stamped) a little after the engine took the request.
    if (life[k].scheduled_ns == LogTable::kNoTime)
      life[k].scheduled_ns = std::max(d->steps[it->second].start_ns, life[k].arrival_ns);
  }
  const std::vector<logs::LatencyOutlier> outliers = logs::LatencyOutliers(life, options.outliers);
  std::vector<const logs::LatencyOutlier*> unplaced;
  for (const logs::LatencyOutlier& o : outliers) {
    const int64_t g = step_of[o.lifecycle];
    // A request no step served is a period of the log; the end-to-end time of one that
    // steps served is the sum of those steps, which their timing evidence judges.
    if (g < 0) {
      unplaced.push_back(&o);
      continue;
    }
    if (!IsWaiting(o.interval)) continue;
    StepDiagnosis& s = d->steps[static_cast<size_t>(g)];
    if (s.log_evidence.size() < options.max_per_step)
      s.log_evidence.push_back(FromOutlier(trace, life, o));
    // The step's score from the strongest waiting request: at the bar, the step threshold.
    const std::string external(trace.strings.Get(life[o.lifecycle].request));
    const std::string request = StepRequestId(s, external);
    MarkForRequest(s, request.empty() ? external : request,
                   ScoreAbove(step_threshold, 1.0 - o.z_min / std::max(o.z, o.z_min)),
                   "first served a request that waited far longer than its peers",
                   Sentence(external, o),
                   "the scheduler passed the request over (starvation) or it queued behind "
                   "others",
                   d);
  }
  AddUnprefilled(trace, &life, first_step, options, step_threshold, d);
  const logs::LogTemplates templates = Templates(trace, options);
  for (StepDiagnosis& s : d->steps) {
    if (!s.abnormal) continue;
    for (uint32_t row : s.logs) {
      if (s.log_evidence.size() >= options.max_per_step) break;
      if (row >= templates.of_row.size()) continue;
      const logs::TemplateId id = templates.of_row[row];
      if (!logs::IsRare(templates, id, options.bursts.rarity)) continue;
      LogEvidence e;
      e.kind = "rare_template";
      e.template_id = id;
      e.template_text = templates.miner.Text(id);
      e.template_lines = id < templates.count.size() ? templates.count[id] : 0;
      e.is_new = logs::IsNew(templates, id);
      e.row = row;
      s.log_evidence.push_back(std::move(e));
    }
  }
  for (Finding& f : LatencyPeriods(trace, life, unplaced)) d->findings.push_back(std::move(f));
  for (Finding& f : BurstFindings(trace, templates, options)) d->findings.push_back(std::move(f));
}

std::vector<Finding> LogPeriodFindings(const Trace& trace, const LogEvidenceOptions& options) {
  std::vector<Finding> out;
  if (!options.enabled || trace.logs.size() == 0) return out;
  const std::vector<logs::RequestLifecycle> life =
      logs::RequestLifecycles(trace.logs, trace.strings);
  const std::vector<logs::LatencyOutlier> outliers = logs::LatencyOutliers(life, options.outliers);
  std::vector<const logs::LatencyOutlier*> all;
  for (const logs::LatencyOutlier& o : outliers) all.push_back(&o);
  out = LatencyPeriods(trace, life, all);
  for (Finding& f : BurstFindings(trace, Templates(trace, options), options))
    out.push_back(std::move(f));
  return out;
}

std::shared_ptr<const logs::TemplateMiner> LogTemplatesOf(const Trace& trace) {
  auto miner = std::make_shared<logs::TemplateMiner>();
  for (uint32_t row = 0; row < trace.logs.size(); ++row)
    miner->Add(trace.strings.Get(trace.logs.message[row]));
  return miner;
}

void AppendLogEvidenceJson(std::string& out, const Trace& trace, const StepDiagnosis& s) {
  out += '[';
  for (size_t i = 0; i < s.log_evidence.size(); ++i) {
    const LogEvidence& e = s.log_evidence[i];
    if (i) out += ',';
    JsonObjectWriter w(out, JsonDoubles::kDigits6);
    w.Field("kind", e.kind);
    if (e.kind == "request_latency") {
      w.Field("request", e.request).Field("interval", e.interval).Field("unit", "ns");
      w.Field("time_ns", e.time_ns).Field("expected_ns", e.expected_ns);
      w.Field("excess_ns", e.excess_ns).Field("noise_ns", e.noise_ns);
      w.Field("peers", static_cast<uint64_t>(e.peers)).Field("z", e.z).Field("z_min", e.z_min);
    } else if (e.kind == "request_route") {
      w.Field("request", e.request).Field("step_kind", e.step_kind);
      w.Field("peers", static_cast<uint64_t>(e.peers));
    } else {
      w.Field("template_id", static_cast<uint64_t>(e.template_id));
      w.Field("template", e.template_text);
      w.Field("template_lines", e.template_lines).FieldBool("new", e.is_new);
    }
    const uint32_t row = e.row;
    if (row >= trace.logs.size()) {  // request_route from the trace alone: no line names it
      w.Close();
      continue;
    }
    w.Field("file", trace.strings.Get(trace.logs.file[row]));
    w.Field("line", static_cast<uint64_t>(trace.logs.line[row]));
    w.Field("level", LogLevelName(trace.logs.level[row]));
    w.Field("message", trace.strings.Get(trace.logs.message[row]));
    w.Close();
  }
  out += ']';
}

std::string LogEvidenceText(const Trace& trace, const StepDiagnosis& s) {
  std::ostringstream o;
  for (const LogEvidence& e : s.log_evidence) {
    if (e.kind == "request_latency") {
      o << "    wait  " << e.interval << " " << Duration(e.time_ns) << " (peers "
        << Duration(e.expected_ns) << ", +" << Duration(e.excess_ns) << ", " << e.peers
        << " peers)  request " << e.request << "\n";
    } else if (e.kind == "request_route") {
      o << "    route never prefilled: first run in a "
        << (e.step_kind.empty() ? std::string("step") : e.step_kind + " step") << " (" << e.peers
        << " peers prefilled first)  request " << e.request << "\n";
    } else {
      o << "    rare  " << (e.is_new ? "new template" : "template") << " #" << e.template_id << " ("
        << e.template_lines << " lines)  "
        << ShortName(trace.strings.Get(trace.logs.message[e.row]), 120) << "\n";
    }
  }
  return o.str();
}

}  // namespace teller::diagnose
