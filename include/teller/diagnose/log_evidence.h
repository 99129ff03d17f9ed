// Log evidence in the diagnosis (docs/diagnose.md, "Log evidence"): requests whose log
// lines show them waiting far longer than their peers (logs::LatencyOutliers), and new
// requests whose first step did not prefill them, become evidence of the engine step that
// first served them, and make it abnormal with a scheduling fault when the operators do
// not already explain it; lines of rare or new
// templates are listed with an abnormal step; periods of such requests, and bursts of rare
// templates, that no step holds become findings ("log_period"), so that logs without a
// trace are triaged too.
#ifndef TELLER_DIAGNOSE_LOG_EVIDENCE_H_
#define TELLER_DIAGNOSE_LOG_EVIDENCE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "teller/core/trace.h"
#include "teller/diagnose/failures.h"
#include "teller/logs/log_evidence.h"
#include "teller/logs/template_miner.h"

namespace teller::diagnose {

struct Diagnosis;
struct StepDiagnosis;

struct LogEvidenceOptions {
  bool enabled = true;
  logs::OutlierOptions outliers;
  logs::BurstOptions bursts;
  // A baseline's templates (TemplateMiner::Load): rare and new are judged against it;
  // null = against the rest of the run.
  std::shared_ptr<const logs::TemplateMiner> baseline_templates;
  size_t max_per_step = 8;  // log evidence entries listed per step
};

// One piece of log evidence of a step.
struct LogEvidence {
  std::string kind;  // "request_latency", "request_route" or "rare_template"
  // request_latency: the request, which interval, its time against its peers'.
  // request_route: the request first run without a prefill, the kind of that step, and
  // (peers) how many requests that arrived during the trace were prefilled first.
  std::string request;
  std::string step_kind;
  std::string interval;  // logs::IntervalName
  int64_t time_ns = 0, expected_ns = 0, excess_ns = 0, noise_ns = 0;
  uint32_t peers = 0;
  double z = 0, z_min = 0;
  // rare_template: the line's template, its lines in the run, whether the baseline lacks it.
  uint32_t template_id = 0;
  std::string template_text;
  uint64_t template_lines = 0;
  bool is_new = false;
  // Where the log says it (request_latency, request_route: the request's first lifecycle
  // line); kNoRow for a request_route that no log line names (the trace alone says it).
  static constexpr uint32_t kNoRow = UINT32_MAX;
  uint32_t row = 0;
};

// Adds the log evidence of `trace` to `d` (called by Diagnose after the timing verdicts).
void AddLogEvidence(const Trace& trace, const LogEvidenceOptions& options, double step_threshold,
                    Diagnosis* d);

// The abnormal periods of a log without steps (latency periods and rare-template bursts) as
// findings of kind "log_period", severity warning.
std::vector<Finding> LogPeriodFindings(const Trace& trace, const LogEvidenceOptions& options = {});

// The templates of a trace's log lines (for a baseline given as traces).
std::shared_ptr<const logs::TemplateMiner> LogTemplatesOf(const Trace& trace);

// The report parts: JSON array of a step's log evidence, and its text lines.
void AppendLogEvidenceJson(std::string& out, const Trace& trace, const StepDiagnosis& s);
std::string LogEvidenceText(const Trace& trace, const StepDiagnosis& s);

}  // namespace teller::diagnose

#endif  // TELLER_DIAGNOSE_LOG_EVIDENCE_H_
