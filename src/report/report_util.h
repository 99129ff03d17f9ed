// Labels the exported trace and the HTML report share (private to src/report).
#ifndef TELLER_SRC_REPORT_REPORT_UTIL_H_
#define TELLER_SRC_REPORT_REPORT_UTIL_H_

#include <cstdint>
#include <string>

#include "teller/core/trace.h"
#include "teller/diagnose/diagnose.h"

namespace teller::report {

// "rank 1 (node-a, pid 4242)", or "pid 4242 (trace.json)" without a rank.
inline std::string ProcessLabel(const Trace& trace, uint32_t process) {
  const ProcessInfo& p = trace.processes[process];
  const std::string host(trace.strings.Get(p.host));
  std::string out;
  if (p.rank >= 0) {
    out = "rank " + std::to_string(p.rank) + " (";
    if (!host.empty()) out += host + ", ";
    out += "pid " + std::to_string(p.pid) + ")";
  } else {
    out = "pid " + std::to_string(p.pid);
    const std::string label(trace.strings.Get(p.label));
    if (!label.empty()) out += " (" + label + ")";
  }
  return out;
}

// "GPU 0 stream 7"; the stream of context-wide synchronizations (-1) is "all streams".
inline std::string StreamLabel(uint32_t device, uint32_t stream) {
  return "GPU " + std::to_string(device) +
         (stream == 0xffffffffu ? std::string(" all streams")
                                : " stream " + std::to_string(stream));
}

// "step 812", or "step #40" (its ordinal) when the trace gives it no number: as the text
// report names steps.
inline std::string StepLabel(const diagnose::StepDiagnosis& s) {
  return s.number >= 0 ? "step " + std::to_string(s.number) : "step #" + std::to_string(s.ordinal);
}

}  // namespace teller::report

#endif  // TELLER_SRC_REPORT_REPORT_UTIL_H_
