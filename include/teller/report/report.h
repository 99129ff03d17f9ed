// Reports a person opens (docs/report.md): the reconstructed trace as a Chrome trace-event
// JSON with the diagnosis as annotations (for ui.perfetto.dev, chrome://tracing and other
// trace-event viewers), and a self-contained HTML report of a diagnosis. Both are written
// from the structures the text and JSON reports use (diagnose::Diagnosis over a
// reconstruct::Reconstruction); nothing of the diagnosis is computed again here.
#ifndef TELLER_REPORT_REPORT_H_
#define TELLER_REPORT_REPORT_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "teller/core/status.h"
#include "teller/core/trace.h"
#include "teller/diagnose/diagnose.h"
#include "teller/reconstruct/reconstruct.h"

namespace teller::report {

// The category of everything the export adds for the diagnosis (markers, flows, args key):
// a viewer can filter on it, and Teller's Kineto importer skips nothing else it added.
inline constexpr const char* kFindingCategory = "teller_finding";

// What ToChromeTrace wrote, for the command's summary line and the tests.
struct ChromeTraceStats {
  size_t events = 0;         // trace events (one per row of Trace::events)
  size_t flows = 0;          // host call -> GPU work flows (ac2g), each an s/f pair
  size_t markers = 0;        // instant markers on the abnormal steps (one per step and rank)
  size_t finding_flows = 0;  // root -> consequence flows
  size_t annotated = 0;      // trace events that carry the diagnosis in their args
  size_t tracks = 0;         // host threads and GPU streams named by metadata
};

// The trace as a Chrome trace-event JSON object: one process per traced process (named by
// rank, host and pid), host threads and GPU streams (per device) as its threads, every event
// of the trace as a slice (pushes and pops as B/E, ranges and calls and GPU work as X,
// marks as instants; steps are the step ranges themselves), a flow from each host call to
// the GPU work it launched. With a diagnosis: the evidence and consequence events carry a
// "teller" arg (role, step, ratio, time and expectation, excess), each abnormal step gets
// an instant marker on every rank it ran on, and flows go from each root to the
// consequences that waited for its rank. Categories and args are the ones Teller's Kineto
// importer reads, so reading the file back gives the same events (docs/report.md).
std::string ToChromeTrace(const Trace& trace, const reconstruct::Reconstruction& r,
                          const diagnose::Diagnosis* d, ChromeTraceStats* stats = nullptr);

// Reads the parts of a diagnosis JSON (`teller diagnose --json`, docs/diagnose.md) that the
// export annotates with: mode, scope and the steps (number, ordinal, ranks, times, score,
// abnormal, fault type, explanation, evidence and consequences). The evidence's node
// indices refer to the reconstruction of the trace the diagnosis was made of.
Result<diagnose::Diagnosis> ReadDiagnosisJson(const std::string& path);
// Binds a diagnosis read back to the reconstruction `r`: checks that every evidence and
// consequence node is a node of `r` with the event name the diagnosis gives it (an error
// naming the first that is not), and fills each step's rank_steps (the step ranges of
// its ranks with its number, or its ordinal when it has none).
Status BindDiagnosis(const Trace& trace, const reconstruct::Reconstruction& r,
                     diagnose::Diagnosis* d);

struct HtmlOptions {
  std::vector<std::string> sources;  // the input paths, shown in the header
  size_t detailed_steps = 20;        // abnormal steps with a timeline (highest score first)
  size_t timeline_items = 400;       // most slices per step timeline (evidence always kept)
  size_t table_rows = 2000;          // most rows of a table (pages of 25 in the page)
  size_t distribution_roots = 4;     // top roots with a duration distribution
  // Most points per rank of the step-time series; all ranks together share 30,000 (at
  // least 100 each), so that many ranks keep the page small.
  size_t series_points = 1500;
};

// What ToHtml put in, for the command's summary and the tests.
struct HtmlStats {
  size_t ranks = 0;           // step-time series drawn
  size_t series_points = 0;   // points over all series
  size_t detailed_steps = 0;  // abnormal steps with a timeline
  size_t timeline_items = 0;  // slices over all timelines
  size_t operator_rows = 0;   // rows of the per-operator table
  size_t collectives = 0;     // collectives with per-rank arrivals drawn
  size_t distributions = 0;   // duration distributions drawn
  size_t log_lines = 0;       // aligned log lines listed
  size_t log_evidence = 0;    // log evidence entries and log findings listed
};

// The self-contained HTML report of `d` (inline CSS, JS and SVG data; no network). The page's
// data is one JSON document inside it (script#teller-data), drawn by the inline script.
std::string ToHtml(const Trace& trace, const reconstruct::Reconstruction& r,
                   const diagnose::Diagnosis& d, const HtmlOptions& options,
                   HtmlStats* stats = nullptr);

}  // namespace teller::report

#endif  // TELLER_REPORT_REPORT_H_
