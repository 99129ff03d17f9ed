// The numeric diagnosis (`teller diagnose`): localization (docs/method.md §3,
// docs/localization.md) finds the instances that took longer than their true peers and
// counts each excess once, at its root; a step is abnormal when that root excess is large
// against the step's healthy spread; slices (§4) give the context of the evidence; rules
// over the evidence name a likely fault category and a sentence says why, with the log
// lines aligned to the step. No training data is needed.
// docs/diagnose.md documents the JSON report ("teller-diagnosis", version 2) and
// docs/diagnosis.schema.json is its JSON Schema.
#ifndef TELLER_DIAGNOSE_DIAGNOSE_H_
#define TELLER_DIAGNOSE_DIAGNOSE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "teller/core/trace.h"
#include "teller/core/vocabulary.h"
#include "teller/diagnose/failures.h"
#include "teller/diagnose/log_evidence.h"
#include "teller/localize/localize.h"
#include "teller/reconstruct/reconstruct.h"
#include "teller/slice/slice.h"

namespace teller::diagnose {

inline constexpr int kSchemaVersion = 2;

struct Options {
  localize::Options localize;
  slice::Weights slice;
  double step_threshold = 0.6;  // a step is abnormal when its score exceeds this
  size_t max_evidence = 8;      // evidence entries per step
  size_t top_k = 10;            // top_operators listed
  // What log lines report (share/teller/log_signatures.rules); null = the built-in set.
  std::shared_ptr<const logs::SignatureSet> log_signatures;
  // Request waits and rare templates from the log lines (log_evidence.h).
  LogEvidenceOptions log;
};

// One instance that took longer than its peers (a root), or that waited for one (a
// consequence: a collective that waited for a late rank).
struct Evidence {
  uint32_t node = 0;
  std::string name;    // exactly as the trace has it
  std::string family;  // the name with layer indices replaced by '#'
  std::string within;  // host calls: the operator range that made them
  Layer layer = Layer::kFrontend;
  int rank = -1;
  int64_t pid = 0;
  bool consequence = false;
  // A root of an abnormal step that does not explain its abnormality: its family's excess
  // in the step is within the step's healthy spread (docs/diagnose.md, "Root before
  // impact"); listed, but the category and explanation do not come from it.
  bool minor = false;
  // Most operators around it deviated too (teller/localize/shared.h): the time was slow,
  // not this operator; the top operators judge it as within its peers.
  bool shared = false;
  // Shared because it ran beside work its usual instances ran without: 1 + that work's
  // class (localize::ConcurrentClassName(contended_by - 1)) and its stream; 0 otherwise.
  uint8_t contended_by = 0;
  uint32_t contended_stream = 0;
  localize::Measure measure = localize::Measure::kOwnTime;
  Feature feature = kSelfNs;  // the feature the measure is (core/vocabulary.h)
  int64_t time_ns = 0;        // what the measure gives for this instance
  int64_t expected_ns = 0;    // its peers' median
  int64_t excess_ns = 0;      // time - expected (roots); the wait (consequences)
  int64_t noise_ns = 0;       // the peers' spread, with its floors
  uint32_t peers = 0;
  localize::PeerSource source = localize::PeerSource::kNone;
  double ratio = 0;          // time / expected
  float z = 0;               // excess / noise
  float score = 0;           // strength in [0, 1): z / (z + min_z), 0.5 at the evidence bar
  int waited_for_rank = -1;  // consequences: the late rank
};

// "consequence", "minor" or "root": what the reports call a piece of evidence.
const char* EvidenceRole(const Evidence& e);

struct RankRef {
  int rank = -1;
  int64_t pid = 0;
};

// What a learned model says of one step (`teller diagnose --model`, docs/diagnose.md,
// "With a learned model").
// An operator the learned model's evidence head points at (a trace encoder or MoT with one).
struct ModelEvidence {
  std::string view;  // "vertical" or "horizontal"
  std::string name;  // the operator's name, as in the trace
  int32_t rank = -1;
  float probability = 0;  // P(evidence) of the token that covers it
};

struct ModelVerdict {
  bool present = false;  // the model read this step (steps with step markers only)
  float p_vertical = 0, p_horizontal = 0;  // its probability that the step is abnormal, per view
  std::string fault_type;                  // its most likely fault type among those it learned
  float fault_probability = 0;             // its probability of that fault type
  std::string explanation;                 // the MoT's generated sentence; "" otherwise
  // Per view, the operators its evidence head gives P >= 0.5, highest first, at most
  // kModelEvidencePerView each; empty without the head.
  std::vector<ModelEvidence> evidence;
};
inline constexpr size_t kModelEvidencePerView = 5;

// The model a diagnosis used, when it used one.
struct ModelInfo {
  std::string path;                      // the model directory
  std::string network;                   // rca::VariantName: "gcn", "mot" or "single"
  std::vector<std::string> fault_types;  // the fault types it learned (all it can name)
  size_t steps_read = 0;                 // steps it read (those with step markers)
};

// One engine step: the step ranges of every rank with the same step number (or, without
// a number, one process's step; without step markers, one process's whole timeline).
struct StepDiagnosis {
  int64_t number = -1;   // the trace's own step number (seq=, ProfilerStep#N), -1 none
  bool has_seq = false;  // number came from the trace (kept for the evaluation's mapping)
  uint64_t seq = 0;
  uint32_t ordinal = 0;  // position among its process's steps
  std::string kind;
  std::vector<uint32_t> rank_steps;  // indices into Reconstruction::steps
  std::vector<RankRef> ranks;
  std::vector<std::string> requests;
  // The requests the step prefills, as its markers say (reconstruct::ParseStepPrefill);
  // prefill_known is false when a marker of the step does not say.
  std::vector<std::string> prefilled;
  bool prefill_known = false;
  // When the step is abnormal for some of its requests only (request-scoped log evidence:
  // a request that waited far longer than its peers, or one never prefilled), those
  // requests; empty when it is abnormal for all of them.
  std::vector<std::string> abnormal_requests;
  int64_t start_ns = 0, end_ns = 0;
  int64_t duration_ns = 0;  // the longest rank's
  int64_t excess_ns = 0;    // root excess (the largest rank's, host or GPU side)
  int64_t spread_ns = 0;    // the healthy spread it is compared with
  float score = 0;
  bool abnormal = false, vertical = false, horizontal = false;
  // FaultCategoryName, "" when normal. With a model, the model's fault type; the rules'
  // is then rule_fault_type.
  std::string fault_type;
  std::string rule_fault_type;  // the rules' fault type when a model named the step's
  std::string explanation;
  ModelVerdict model;
  std::vector<Evidence> evidence;         // roots, most excess first
  std::vector<Evidence> consequences;     // what waited for them
  std::vector<uint32_t> logs;             // rows of Trace::logs
  std::vector<LogEvidence> log_evidence;  // what the log lines show (log_evidence.h)
  size_t slice_nodes = 0, step_nodes = 0;
};

struct TopOperator {
  std::string name;    // exact name of the family's instance with the most excess
  std::string family;  // the family's name pattern
  std::string within;  // host calls: the operator that makes them
  Layer layer = Layer::kFrontend;
  localize::Measure measure = localize::Measure::kOwnTime;
  // Copies and memsets: their size class (localize::Family::bytes_class; copies of other
  // sizes are other operators) and the size of the instance with the most excess; else 0.
  uint32_t bytes_class = 0;
  uint64_t bytes = 0;
  // -log10 of the chance that its evidence is natural variation (src/diagnose/suspicion.h):
  // that this many of its instances, or this long a run of them in a row, deviate this much
  // at the rate the other instances of their kind in the trace do. The ranking's key.
  double suspicion = 0;
  // Its share of the trace's root excess, each instance's excess weighed by the share
  // of its time it is (1 - 1/ratio); the ranking's second key.
  float score = 0;
  int64_t excess_ns = 0;  // the summed excess of its evidence instances
  // Of that, the excess on a straggler's rank before the collective the other ranks waited
  // for it in: what made the rank late (the straggler's suspicion adds to the family's).
  int64_t straggling_ns = 0;
  uint32_t count = 0;  // evidence instances
  uint32_t instances = 0;
  int64_t median_ns = 0;   // the family's median time
  double max_ratio = 0;    // the largest time / expected among its evidence
  std::vector<int> ranks;  // ranks its evidence is on, the most excess first
};

struct StragglerReport {
  int rank = -1;
  int64_t pid = 0;
  int64_t step = -1;  // the step's number (or ordinal when it has none)
  int64_t late_ns = 0;
  std::string collective;
  uint32_t waiting = 0;
};

struct Diagnosis {
  std::string mode;  // "self" (peers from the trace) or "baseline"
  // "steps"; without step markers "iterations" (found in the work) or "whole_trace"
  std::string scope;
  std::vector<StepDiagnosis> steps;
  std::vector<TopOperator> top_operators;
  std::vector<StragglerReport> stragglers;
  size_t abnormal_steps = 0;
  size_t evidence = 0;  // root evidence instances in the trace
  // Failures found without timing evidence: crashes, exit statuses, open ranges, log
  // errors (failures.h).
  std::vector<Finding> findings;
  // The learned model applied to the steps (`--model`); path "" when none.
  ModelInfo model;
  // Input damage: counters of severity warning or data loss that are not zero.
  std::vector<std::pair<std::string, uint64_t>> damage;
};

Diagnosis Diagnose(const Trace& trace, const reconstruct::Reconstruction& r, const Options& options,
                   const localize::Model* baseline = nullptr);

// The JSON report (docs/diagnose.md); `sources` are the input paths.
std::string ToJson(const Trace& trace, const Diagnosis& d, const std::vector<std::string>& sources);
// The terminal report: damage first, abnormal steps with evidence and explanation, top
// operators.
std::string ToText(const Trace& trace, const Diagnosis& d, size_t max_steps);

}  // namespace teller::diagnose

#endif  // TELLER_DIAGNOSE_DIAGNOSE_H_
