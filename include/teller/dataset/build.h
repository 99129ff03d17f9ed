// Labelled datasets (docs/method.md §7) from simulated or fault-injected traces:
// `teller dataset build`. For every setting (one `teller simulate` output directory with
// its ground_truth.json) it imports the raw traces, resolves the ground truth's node
// locators to events, reconstructs the call trees (docs/method.md §2), and writes
//   <out>/<setting>/<request>/{trace.json, log.txt, annotation.json}
//   <out>/<setting>/steps.jsonl, names.json   (compact step records for training)
//   <out>/<setting>/templates.txt             (the log templates log.txt's ids name)
//   <out>/index.json                          (per-setting summary and build counters)
// in the layout of docs/dataset-format.md.
//
// A dataset step is one engine step of one request: all ranks record a `teller.step`
// range with the same `seq=` for one engine step, and the step record holds the subtree
// of that STEP range from every rank (the vertical trees; the COMM nodes across them are
// the horizontal view). Steps without a seq (engines' own markers, the demo) are grouped
// by their per-process ordinal instead, and counted.
#ifndef TELLER_DATASET_BUILD_H_
#define TELLER_DATASET_BUILD_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "teller/core/status.h"
#include "teller/core/trace.h"
#include "teller/format/ground_truth.h"

namespace teller::dataset {

// Resolves ground-truth locators (sim/ground_truth.h) to rows of the trace's event table,
// as imported and before reconstruction (which shifts times but never reorders rows):
//   range: the occurrence-th event of type kPush or kRange named `name` on (host, pid, tid);
//   call:  the runtime/driver event with that correlation in (host, pid) (the outer call
//          when a nested driver call shares the id, as in kernel binding);
//   gpu:   the occurrence-th kernel/memcpy/memset with that correlation in (host, pid).
// Rows count in table order, which importers keep in file order per process. Returns one
// entry per locator: the event row, or -1 when nothing in the trace matches.
std::vector<int64_t> ResolveLocators(const Trace& trace,
                                     const std::vector<const format::NodeLocator*>& locators);

// A locator in one line, for messages: "range node-0/41000/41003 \"attention\" #3".
std::string DescribeLocator(const format::NodeLocator& locator);

struct BuildOptions {
  int jobs = 0;                                 // settings built in parallel; 0 = hardware threads
  size_t max_nodes_per_step = size_t{1} << 20;  // larger step records are cut (and counted)
  // The build fails when more than this fraction of locators cannot be resolved.
  double max_unresolved_fraction = 0.001;
  // Progress lines ("<setting>: imported ..."); called from worker threads, serialised.
  std::function<void(std::string_view)> progress;
};

// What one setting produced, and the counters of what did not fit.
struct SettingSummary {
  std::string name;    // the setting directory under <out>
  std::string source;  // the simulation output it came from
  uint64_t requests = 0, faulty = 0, steps = 0, anomalous_steps = 0, nodes = 0, log_lines = 0;
  uint64_t templates = 0;  // log templates mined from the setting's aligned lines
  uint64_t events = 0;
  std::map<std::string, uint64_t> fault_mix;  // faulty requests per category
  // Build counters in a fixed order (docs/dataset-format.md, "Build counters").
  std::vector<std::pair<std::string, uint64_t>> counters;
  // Damaged-input counters of import and reconstruction (raw.*, logs.*, reconstruct.*).
  std::vector<std::pair<std::string, uint64_t>> input_counters;
  double import_seconds = 0, resolve_seconds = 0, reconstruct_seconds = 0, write_seconds = 0;
  uint64_t Counter(std::string_view name) const;
};

struct BuildSummary {
  std::vector<SettingSummary> settings;
  double seconds = 0;
};

// One setting from an imported trace and its ground truth: writes
// <out_dir>/<setting>/... (the directory must not exist yet or be empty). Fails when
// more than options.max_unresolved_fraction of the locators are unresolvable; the
// message names the first few.
Result<SettingSummary> BuildSetting(Trace& trace, const format::GroundTruth& truth,
                                    const std::string& setting, const std::string& out_dir,
                                    const BuildOptions& options);

// The simulation output directories named by `raw`: each is either a simulation output
// (it holds ground_truth.json) or a preset directory whose immediate sub-directories are
// such outputs. A raw trace without ground truth is an error naming the path.
Result<std::vector<std::string>> FindSettingDirs(const std::vector<std::string>& raw);

// The whole build: finds the settings, builds them in parallel (options.jobs threads),
// writes <out_dir>/index.json (keeping the entries of settings built earlier into the
// same directory). Settings that fail are reported in the error; the others are written
// and indexed.
Result<BuildSummary> BuildDataset(const std::vector<std::string>& raw, const std::string& out_dir,
                                  const BuildOptions& options);

}  // namespace teller::dataset

#endif  // TELLER_DATASET_BUILD_H_
