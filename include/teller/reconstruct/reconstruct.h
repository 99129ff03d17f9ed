// Cross-layer call-chain reconstruction (docs/method.md §2, Algorithm 1): per-thread ranges,
// classification into STEP / FRONTEND / BACKEND / COMM, host calls attached to the
// innermost range, GPU work bound to its host call by correlation id (one call may own
// many kernels: graph launches), orphans kept and counted, per-request projection from
// the request ids that step ranges carry, and log alignment.
//
// Output is a forest of nodes over the trace's events, stored as columns (parent index,
// depth): a node is a range, a host call, a GPU operation or a mark. Pops are not nodes;
// a push and its pop form one range node.
#ifndef TELLER_RECONSTRUCT_RECONSTRUCT_H_
#define TELLER_RECONSTRUCT_RECONSTRUCT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "teller/core/status.h"
#include "teller/core/trace.h"
#include "teller/core/vocabulary.h"

namespace teller::reconstruct {

// What a node is, for the views and for localization: teller::Layer (core/vocabulary.h).

// Name rules per layer, kept in a data file (share/teller/classify.rules): lines
// "LAYER CATEGORY-GLOB NAME-REGEX" (POSIX extended), the first matching rule wins; ranges
// matching none are FRONTEND, GPU work matching none is GPU. Immutable once built, so one
// classifier may serve many traces and threads; per-trace caching is LayerCache's job.
class Classifier {
 public:
  // The rules built into Teller (the same text as share/teller/classify.rules).
  static std::shared_ptr<Classifier> BuiltIn();
  // Rules from a file; errors name the file and line.
  static Result<std::shared_ptr<Classifier>> FromFile(const std::string& path);
  static Result<std::shared_ptr<Classifier>> FromText(std::string_view text,
                                                      const std::string& source);
  Layer Classify(EventType type, std::string_view category, std::string_view name) const;
  ~Classifier();

 private:
  struct Rule;
  std::vector<Rule> rules_;
};

// The layers of one trace's events, memoized per (category, name) string id: ids belong to
// one trace's string pool, so a cache never outlives or crosses its trace. Not thread-safe;
// make one per thread.
class LayerCache {
 public:
  LayerCache(const Classifier& classifier, const Trace& trace)
      : classifier_(classifier), trace_(trace) {}
  Layer Of(size_t event);

 private:
  const Classifier& classifier_;
  const Trace& trace_;
  std::unordered_map<uint64_t, Layer> cache_;
};

struct Options {
  int64_t log_tolerance_ns = 50'000'000;  // docs/method.md §2 step 6: default 50 ms
  // Put every host on the first host's clock using collective end times
  // (AlignHostClocks) before building the forest.
  bool align_clocks = true;
  std::shared_ptr<Classifier> classifier;  // null = built-in rules
};

struct Nodes {
  std::vector<uint32_t> event;  // index into Trace::events
  std::vector<int64_t> start_ns;
  std::vector<int64_t> end_ns;
  std::vector<int32_t> parent;  // node index, -1 for roots
  std::vector<uint16_t> depth;
  std::vector<Layer> layer;
  std::vector<uint32_t> process;
  // Children of node i are child_index[child_begin[i] .. child_begin[i+1]), by start.
  std::vector<uint32_t> child_begin;
  std::vector<uint32_t> child_index;
  size_t size() const { return event.size(); }
};

struct Step {
  uint32_t node = 0;  // the STEP range
  uint32_t process = 0;
  uint32_t ordinal = 0;  // position among the steps of its process, by start time
  // The step's own number as the trace gives it: `seq=` of a teller.step message, N of
  // PyTorch's "ProfilerStep#N"; -1 when it has none. Steps of several ranks with the same
  // number are one engine step.
  int64_t number = -1;
  int64_t size = -1;               // batch size when the marker says it (StepSize), -1 otherwise
  StringId kind = 0;               // prefill / decode / mixed ... when the step says so
  std::vector<StringId> requests;  // Q(s)
  std::vector<uint32_t> logs;      // rows of Trace::logs aligned to this step
};

struct Stats {
  uint64_t events = 0, processes = 0, threads = 0, ranges = 0, steps = 0, requests = 0;
  uint64_t host_calls = 0, kernels = 0, kernels_linked = 0, kernels_orphan = 0;
  uint64_t memcpy = 0, memset = 0, gpu_linked = 0, gpu_orphan = 0;
  uint64_t comm_kernels = 0, graph_launches = 0;
  uint64_t unmatched_push = 0, unmatched_pop = 0;
  uint64_t nested_steps = 0;  // step markers inside another step marker (counted once)
  uint64_t log_lines = 0, log_lines_aligned = 0;
};

// Collective operations across processes: which communication kernels on different
// processes are one operation (FindCollectiveGroups, collectives.h), found once per
// reconstruction with its classifier, after clock alignment, in node indices.
struct Collectives {
  std::vector<std::vector<uint32_t>> groups;  // kernel nodes of each collective, by process
  std::vector<int32_t> group_of;              // per node: its collective, -1 = none
  std::vector<int32_t> cluster_of;            // per process: coupled set, -1 = no collectives
  // Per process: the clock offset to the first process of its cluster, measured after
  // clock alignment (what alignment left, e.g. on hosts it could not align), in ns.
  std::vector<int64_t> proc_offset;
};

// Horizontal view of one engine step (docs/method.md §2.7).
struct HorizontalView {
  // For the step of each process with the ordinal, in step order: the COMM nodes of that
  // process issued during the step (on any thread), ordered by start.
  std::vector<std::vector<uint32_t>> comm;
  // The collectives those COMM kernels belong to: indices into
  // Reconstruction::collectives.groups (each group lists its members on every rank), in
  // order of their first appearance in `comm`.
  std::vector<uint32_t> collectives;
};

struct Reconstruction {
  Nodes nodes;
  std::vector<Step> steps;                                            // ordered by (process, start)
  std::unordered_map<StringId, std::vector<uint32_t>> request_steps;  // q -> step indices
  std::vector<StringId> request_order;  // requests in order of first step
  Stats stats;
  Collectives collectives;

  // The members of the collective that node `node` is a kernel of (one per process, by
  // process, `node` among them); empty when it is none.
  const std::vector<uint32_t>& CollectiveOf(uint32_t node) const;

  // Horizontal view (docs/method.md §2): the steps of every process with the given
  // ordinal, their communication and the collectives that pair it across ranks.
  HorizontalView CommAcrossRanks(uint32_t ordinal) const;
};

// Estimates each host's clock offset from the end times of matching communication
// kernels (which end nearly together on every rank), relative to the host of the first
// process, stores it in ProcessInfo::clock_offset_ns and shifts that host's events and log
// lines. Hosts without at least 3 matching collectives keep their clock and are counted
// ("reconstruct.clock_unaligned_hosts"). Idempotent.
void AlignHostClocks(Trace& trace, const Classifier& classifier);
void AlignHostClocks(Trace& trace, LayerCache& layers);

// Builds the forest. Never fails on damaged input: what cannot be reconstructed is
// counted in trace.counters ("reconstruct.*") and in Stats.
Reconstruction Reconstruct(Trace& trace, const Options& options = {});

// Parses the request ids of a step message in the collector's grammar
// (docs/python-hooks.md): "teller.step kind=decode n=2 reqs=cmpl-1,cmpl-2"; values are
// percent-encoded. Returns false when the message carries no reqs key.
bool ParseStepMessage(std::string_view message, std::vector<std::string>* requests,
                      std::string* kind, std::string* seq);

// The requests a step prefills, as its teller.step message says (docs/python-hooks.md):
// every request of a `kind=prefill` step, none of a `kind=decode` one, the `prefill=` list
// of a `kind=mixed` one. Appends them to `prefilled` and returns true; returns false, adding
// nothing, when the message does not say (no reqs, another kind, or a mixed step whose
// list was left out because it would not fit).
bool ParseStepPrefill(std::string_view message, std::vector<std::string>* prefilled);

// The step kind (prefill / decode / mixed / idle) that real engines' own step markers
// imply through their counts (docs/serving-notes.md §2.7): SGLang "step[DECODE bs=32]",
// vLLM "execute_new_2_cached_30" and "execute_32_context_0(..)_generation_32(..)".
// These markers carry no request ids. "" when the name is not such a marker.
std::string StepKindFromEngineMarker(std::string_view name);

// The step kind a step marker gives: the `kind=` of a teller.step message, else what an
// engine's own marker implies (StepKindFromEngineMarker); "" when it gives none.
std::string StepKind(std::string_view name);

// A step's own number: `seq` when it is a decimal number, else the N of a name that ends
// in "#N" (PyTorch's "ProfilerStep#N"); -1 when neither.
int64_t StepNumber(std::string_view name, std::string_view seq);

// A step's batch size as its marker says: `n=` of a teller.step message, SGLang's `bs=`,
// vLLM's new + cached or context + generation counts; -1 when it does not say.
int64_t StepSize(std::string_view name);

}  // namespace teller::reconstruct

#endif  // TELLER_RECONSTRUCT_RECONSTRUCT_H_
