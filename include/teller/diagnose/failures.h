// Failures, not only slowdowns (docs/diagnose.md, "Failures"): a `teller run` whose command
// died of a signal, exited non-zero or was cut short; ranges still open when a process's
// trace ends (what was in flight, with the last host calls and GPU work before the end);
// and error lines of the logs (CUDA out of memory, illegal memory access, NCCL timeouts and
// errors, Xid, Python tracebacks, engine errors, other ERROR/CRITICAL lines grouped by
// template). Each becomes a Finding with a fault category and an explanation, with or
// without timing evidence, so that a crash or a log full of errors is never "0 of 1 steps
// abnormal".
#ifndef TELLER_DIAGNOSE_FAILURES_H_
#define TELLER_DIAGNOSE_FAILURES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "teller/core/trace.h"
#include "teller/core/vocabulary.h"
#include "teller/logs/signatures.h"
#include "teller/reconstruct/reconstruct.h"

namespace teller::diagnose {

struct Finding {
  FaultCategory category = FaultCategory::kSchedulingSoftware;
  std::string kind;         // "signal", "exit_status", "in_flight", "log_error", "unfinished"
  std::string severity;     // "error" | "warning"
  std::string title;        // one line: "process 4242 (rank 0) died of signal 11 (SIGSEGV)"
  std::string explanation;  // why it matters / what it means, naming what was in flight
  int rank = -1;
  int64_t pid = 0;
  int64_t ts_ns = LogTable::kNoTime;  // when (log line time, end of trace, ...)
  std::string source;                 // log file, when from a log
  uint32_t line = 0;                  // its 1-based line
  std::vector<std::string> details;   // open ranges (outermost first), last host calls and
                                      // kernels before the end, log excerpt
};

// Trace-level failures, errors first (docs/diagnose.md, "Failures", for the order). `r`
// may be null (a trace with logs only): then no ranges are known to be open. Open ranges
// are the pushes that reconstruction closed at the end of their thread (kEventSynthetic).
// Log lines are recognised by the built-in log signatures (share/teller/log_signatures.rules).
std::vector<Finding> FindFailures(const Trace& trace, const reconstruct::Reconstruction* r);
// The same with the user's signatures (logs::SignatureSet::FromFile) instead.
std::vector<Finding> FindFailures(const Trace& trace, const reconstruct::Reconstruction* r,
                                  const logs::SignatureSet& signatures);

// Appends the findings as one JSON array of objects with the fields of Finding; unknown
// rank, pid, ts_ns, source and line are null.
void AppendFindingsJson(std::string& out, const std::vector<Finding>& f);

// Terminal lines: a header, then per finding its severity, category and title, the
// explanation and the details. "" when there are none.
std::string FindingsText(const std::vector<Finding>& f);

// True when a finding has severity "error" (for --fail-on-anomaly).
bool HasErrorFinding(const std::vector<Finding>& f);

}  // namespace teller::diagnose

#endif  // TELLER_DIAGNOSE_FAILURES_H_
