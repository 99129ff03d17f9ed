// Dataset steps and their step records (docs/dataset-format.md, "How a setting is built"):
// how `teller dataset build` groups the STEP ranges of all ranks into engine steps and in
// which order it lists a step's nodes, which fixes the local node ids of trace.json,
// steps.jsonl and annotation.json's affected_nodes.
//
// Public because whoever maps reconstruction nodes to local ids must use exactly this
// order: `teller eval` scores the evidence of `teller diagnose` (reconstruction node
// indices) against the dataset's labels (local ids) by rebuilding the same records.
#ifndef TELLER_DATASET_STEP_RECORD_H_
#define TELLER_DATASET_STEP_RECORD_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "teller/core/trace.h"
#include "teller/format/dataset_node.h"
#include "teller/reconstruct/reconstruct.h"

namespace teller::dataset {

// One engine step: the STEP ranges of every process that carry the same `seq=`, or, for
// steps without a seq, the same per-process ordinal (the pairing the horizontal view
// uses).
struct EngineStep {
  uint64_t seq = 0;  // the seq, or the ordinal when has_seq is false
  bool has_seq = false;
  std::vector<uint32_t> steps;       // Reconstruction::steps indices, by (rank, process index)
  int64_t start_ns = 0, end_ns = 0;  // span of all ranks' STEP ranges
  std::vector<StringId> requests;    // union over ranks, in order of appearance
};

struct GroupCounts {
  uint64_t steps_without_seq = 0;  // STEP ranges grouped by ordinal
  uint64_t duplicate_seq = 0;      // STEP ranges whose process already had that seq
};

// The engine steps of a reconstruction, by start time (then seq): the dataset's steps in
// the order `teller dataset build` writes them.
std::vector<EngineStep> GroupEngineSteps(const Trace& trace, const reconstruct::Reconstruction& r,
                                         GroupCounts* counts = nullptr);

// The nodes of one step record, index = local id: every rank's STEP subtree one after the
// other (in EngineStep::steps order), each in depth-first order with children by start
// time, so parents come before children. At most max_nodes nodes: a larger record is cut
// (truncated = true) and the rest has no local id.
struct StepRecord {
  std::vector<uint32_t> node;       // reconstruction node of each local id
  std::vector<int32_t> parent;      // local id of the parent, -1 for a rank's STEP node
  std::vector<uint16_t> depth;      // relative to the rank's STEP node
  std::vector<int32_t> rank;        // ProcessInfo::rank of the node's process
  std::vector<uint32_t> rank_root;  // local id of each rank's STEP node, for the ranks reached
  bool truncated = false;
  size_t size() const { return node.size(); }
};

// Fills `record` (its buffers are reused) for `step`.
void BuildStepRecord(const Trace& trace, const reconstruct::Reconstruction& r,
                     const EngineStep& step, size_t max_nodes, StepRecord* record);

// The columns of steps.jsonl for `record` (docs/dataset-format.md): type tag, layer, name id
// (`name_id` maps a trace string to the setting's names.json index), parent, depth, rank,
// offset from the step's start and duration. What `teller dataset build` writes and what
// `teller diagnose --model` feeds the learned stage, so that a model reads a trace's steps
// exactly as it read its training steps.
void FillStepColumns(const Trace& trace, const reconstruct::Reconstruction& r,
                     const EngineStep& step, const StepRecord& record,
                     const std::function<uint32_t(StringId)>& name_id, format::DatasetColumns* out);

}  // namespace teller::dataset

#endif  // TELLER_DATASET_STEP_RECORD_H_
