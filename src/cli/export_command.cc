// `teller export TRACE... --perfetto FILE [--diagnosis JSON]`: the reconstructed trace as a
// Chrome trace-event JSON for Perfetto and other trace-event viewers, with the findings of
// a diagnosis as annotations (docs/report.md).
#include <cstdio>
#include <string>
#include <vector>

#include "src/cli/commands.h"
#include "teller/core/file_util.h"
#include "teller/report/report.h"

namespace teller::cli {
namespace {

constexpr const char* kHelp =
    "usage: teller export TRACE... --perfetto FILE [--diagnosis JSON] [--rules FILE]\n"
    "\n"
    "Writes the trace as a Chrome trace-event JSON that ui.perfetto.dev, chrome://tracing\n"
    "and other trace-event viewers open: one process per traced process (named by rank),\n"
    "host threads and GPU streams as its tracks, every event as a slice (steps are the step\n"
    "ranges), a flow from each host call to the GPU work it launched. Teller reads the\n"
    "file back as a Kineto trace with the same events.\n"
    "TRACE: as for `teller diagnose` (several TRACEs are one trace).\n"
    "\n"
    "  --perfetto FILE   the output file (.json)\n"
    "  --diagnosis JSON  a report of `teller diagnose --json` made of the same TRACEs: its\n"
    "                    evidence and consequences carry the finding in args.teller,\n"
    "                    abnormal steps get an instant marker per rank, and flows go from\n"
    "                    each root to the consequences that waited for its rank (all in\n"
    "                    category teller_finding)\n"
    "  --rules FILE      classification rules, as given to `teller diagnose` (default:\n"
    "                    built in)\n"
    "\n"
    "Exit status: 0 written, 1 error (unreadable input, a diagnosis of another trace),\n"
    "2 usage.\n";

}  // namespace

int TraceExportCommand(const std::vector<std::string>& args) {
  std::vector<std::string> traces;
  std::string out, diagnosis, rules;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](std::string* v) {
      if (i + 1 >= args.size()) {
        std::fprintf(stderr, "teller export: %s needs a value\n", a.c_str());
        return false;
      }
      *v = args[++i];
      return true;
    };
    if (a == "--help" || a == "-h") {
      std::fputs(kHelp, stdout);
      return 0;
    } else if (a == "--perfetto") {
      if (!value(&out)) return 2;
    } else if (a == "--diagnosis") {
      if (!value(&diagnosis)) return 2;
    } else if (a == "--rules") {
      if (!value(&rules)) return 2;
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "teller export: unknown option '%s'\n\n%s", a.c_str(), kHelp);
      return 2;
    } else {
      traces.push_back(a);
    }
  }
  if (traces.empty() || out.empty()) {
    std::fprintf(stderr, "teller export: give a TRACE and --perfetto FILE\n\n%s", kHelp);
    return 2;
  }
  Trace trace;
  reconstruct::Reconstruction r;
  if (Status st = LoadTrace(traces, rules, &trace, &r); !st.ok()) {
    std::fprintf(stderr, "teller export: %s\n", st.message().c_str());
    return 1;
  }
  diagnose::Diagnosis d;
  if (!diagnosis.empty()) {
    auto read = report::ReadDiagnosisJson(diagnosis);
    if (!read.ok()) {
      std::fprintf(stderr, "teller export: %s\n", read.status().message().c_str());
      return 1;
    }
    d = std::move(read.value());
    if (Status st = report::BindDiagnosis(trace, r, &d); !st.ok()) {
      std::fprintf(stderr, "teller export: %s: %s\n", diagnosis.c_str(), st.message().c_str());
      return 1;
    }
  }
  return WriteChromeTrace(trace, r, diagnosis.empty() ? nullptr : &d, out, "teller export");
}

int WriteChromeTrace(const Trace& trace, const reconstruct::Reconstruction& r,
                     const diagnose::Diagnosis* d, const std::string& path, const char* who) {
  report::ChromeTraceStats stats;
  const std::string json = report::ToChromeTrace(trace, r, d, &stats);
  if (Status st = WriteFileAtomic(path, json); !st.ok()) {
    std::fprintf(stderr, "%s: %s\n", who, st.message().c_str());
    return 1;
  }
  std::printf("wrote %s: %zu events on %zu tracks, %zu launch flows", path.c_str(), stats.events,
              stats.tracks, stats.flows);
  if (d != nullptr) {
    std::printf("; findings: %zu step markers, %zu annotated events, %zu root->consequence flows",
                stats.markers, stats.annotated, stats.finding_flows);
  }
  std::printf(" (%.1f MB; open it in ui.perfetto.dev)\n", static_cast<double>(json.size()) / 1e6);
  return 0;
}

}  // namespace teller::cli
