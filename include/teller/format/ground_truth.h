// Ground truth of a simulated (or fault-injected) trace: which fault acted where, per
// request and per step and view, and which trace nodes carry the evidence. Written by
// `teller simulate` and `teller inject` as ground_truth.json next to the raw traces;
// read by `teller dataset build`, which turns it into annotation.json labels.
//
// Nodes are named by locators that survive import and reconstruction, because they use
// only what the raw files store (docs/simulator.md, "Ground truth"):
//   range: (host, pid, tid, name, occurrence) - the k-th range (push or start/end) of that
//          name on that thread, in file order, counting from 0;
//   call:  (host, pid, correlation)          - a runtime/driver call;
//   gpu:   (host, pid, correlation, occurrence) - the k-th GPU record (kernel, memcpy,
//          memset) carrying that correlation id in file order (graph launches own many).
//
// JSON layout (format "teller-ground-truth", version 3; versions 1 and 2 are read too):
// {"format":"teller-ground-truth","version":3,"setting":"vllm-v1-online",
//  "profile":"vllm-v1-online","seed":7,
//  "topology":{"nodes":2,"gpus_per_node":3,"tp":3,"pp":2},
//  "processes":[{"host":"node-0","pid":41000,"rank":0,"tp_rank":0,"pp_rank":0}],
//  "faults":[{"id":0,"mechanism":"straggler_rank","category":"communication",
//             "onset_ns":..., "duration_ns":..., "magnitude":3.0, "target":"rank 4",
//             "description":"...","ranks":[4]}],
//  "requests":[{"id":"chatcmpl-...","is_fault":true,"fault_type":"communication",
//               "mechanism":"straggler_rank","fault":0,"steps":[12,13,14]}],
//  "steps":[{"seq":12,"kind":"decode","start_ns":...,"end_ns":...,
//            "requests":["chatcmpl-..", ...],
//            "fault":0,                       // -1 when the step is healthy
//            "affected_requests":["chatcmpl-.."],  // requests for which it is anomalous
//            "vertical":{"is_anomaly":true,"nodes":[LOCATOR...]},
//            "horizontal":{"is_anomaly":true,"nodes":[LOCATOR...]},
//            "explanation":"..."}],
//  "confounders":[{"kind":"gc_pause","time_ns":...,"steps":[40],"requests":[],
//                  "detail":"4.1 ms on rank 2"}]}
// LOCATOR = {"kind":"range","host":"node-0","pid":41000,"tid":41000,"name":"...","occurrence":3,
//            "root":false}
//         | {"kind":"call","host":..,"pid":..,"correlation":812,"root":true}
//         | {"kind":"gpu","host":..,"pid":..,"correlation":812,"occurrence":17,"root":true}
// Version 3 adds "root" to each locator of a view: true for a root node (what the fault
// acted on), false for an impact node (what only waited or grew because of a root);
// absent when the writer does not know (every locator of a version 1 or 2 file).
// Version 2 adds a fault's "ranks" and labels a step anomalous for a fault that acts on
// time only where the time it added is material (docs/simulator.md); version 1 labelled
// every step the fault touched. Times are UTC ns on the reference (first) host's clock. Steps are
// the engine's scheduler steps; `seq` is the `seq=` value of the `teller.step` ranges that every
// rank records for it. Healthy steps have "fault":-1, empty affected_requests and both views false
// with no nodes.
#ifndef TELLER_FORMAT_GROUND_TRUTH_H_
#define TELLER_FORMAT_GROUND_TRUTH_H_

#include <cstdint>
#include <string>
#include <vector>

#include "teller/core/status.h"

namespace teller::format {

struct NodeLocator {
  enum class Kind : uint8_t { kRange = 0, kCall = 1, kGpu = 2 };
  Kind kind = Kind::kRange;
  std::string host;
  int64_t pid = 0;
  uint32_t tid = 0;          // ranges
  std::string name;          // ranges
  uint64_t correlation = 0;  // calls and GPU records
  uint32_t occurrence = 0;   // ranges and GPU records
  // The node's part in the fault of the step that labels it, not part of its name. A root
  // is what the fault acted on (the slowed kernel or copy, the inflated launch or host
  // call, the stalled allocation or synchronization, the late rank's delayed compute, the
  // collective a link or NCCL fault slowed); an impact node only waited or grew because
  // of a root (peers' collectives that waited for a late rank, the operator range around
  // a stalled call). kUnknown: a version 1 or 2 file, or a writer that does not tell.
  enum class Role : uint8_t { kUnknown = 0, kRoot = 1, kImpact = 2 };
  Role role = Role::kUnknown;
};

struct ViewLabel {
  bool is_anomaly = false;
  std::vector<NodeLocator> nodes;
};

struct FaultRecord {
  int id = 0;
  std::string mechanism;
  std::string category;  // FaultCategoryName of a category (core/vocabulary.h)
  int64_t onset_ns = 0;  // UTC
  int64_t duration_ns = 0;
  double magnitude = 1.0;
  std::string target;  // human-readable: "rank 4", "kernels ~ attention", "request X"
  std::string description;
  // The culprit rank(s) of a rank-specific fault (the slowed GPU, the stalled worker);
  // empty when the fault acts on every rank alike or on requests. Version 2; a version 1
  // file reads as empty.
  std::vector<int> ranks;
};

struct RequestTruth {
  std::string id;
  bool is_fault = false;
  std::string fault_type;  // category, "" when healthy
  std::string mechanism;   // "" when healthy
  int fault = -1;
  std::vector<uint64_t> steps;  // seq of the steps the request took part in
};

struct StepTruth {
  uint64_t seq = 0;
  std::string kind;  // prefill / decode / mixed
  int64_t start_ns = 0, end_ns = 0;
  std::vector<std::string> requests;
  int fault = -1;
  std::vector<std::string> affected_requests;
  ViewLabel vertical, horizontal;
  std::string explanation;
};

struct ProcessTruth {
  std::string host;
  int64_t pid = 0;
  int rank = 0, tp_rank = 0, pp_rank = 0;
};

// A healthy confounder the simulator planted (docs/simulator.md "Healthy confounders"):
// an event that makes some steps unusual without being a fault. Never labelled abnormal.
// An added field of version 2: a file without "confounders" reads with none.
struct ConfounderRecord {
  std::string kind;     // long_prompt, prefix_hit, arrival_burst, gc_pause, preemption_burst
  int64_t time_ns = 0;  // UTC, when it happened (arrival, step start)
  std::vector<uint64_t> steps;        // seq of the steps it made unusual
  std::vector<std::string> requests;  // the requests involved (none for a GC pause)
  std::string detail;                 // "prompt 2120 tokens", "4.1 ms on rank 2", ...
};

struct GroundTruth {
  std::string setting, profile;
  uint64_t seed = 0;
  int nodes = 1, gpus_per_node = 1, tp = 1, pp = 1;
  std::vector<ProcessTruth> processes;
  std::vector<FaultRecord> faults;
  std::vector<RequestTruth> requests;
  std::vector<StepTruth> steps;               // by seq
  std::vector<ConfounderRecord> confounders;  // in time order
};

inline constexpr const char* kGroundTruthFile = "ground_truth.json";

// Serialises (src/format/ground_truth_writer.cc). Deterministic: the same truth gives the same
// bytes.
std::string GroundTruthToJson(const GroundTruth& truth);
Status WriteGroundTruth(const GroundTruth& truth, const std::string& path);

// Parses ground_truth.json (src/format/ground_truth_reader.cc); errors name the file and the
// byte offset or the missing field.
Result<GroundTruth> ReadGroundTruth(const std::string& path);

}  // namespace teller::format

#endif  // TELLER_FORMAT_GROUND_TRUTH_H_
