// The dataset's node schema (docs/dataset-format.md): one node of a step's call tree as
// trace.json writes it, and the node type tags of steps.jsonl's `type` column, which are
// also the symbol classes of TPE (docs/method.md §5). One numbering and one serializer for
// `teller dataset export`, `teller dataset build` and their readers (the reader is in
// dataset_node_reader.h).
#ifndef TELLER_FORMAT_DATASET_NODE_H_
#define TELLER_FORMAT_DATASET_NODE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "teller/core/trace.h"
#include "teller/core/vocabulary.h"

namespace teller::format {

enum class TypeTag : uint8_t {
  kStep = 0,
  kFrontend = 1,
  kBackend = 2,
  kComm = 3,
  kRuntime = 4,
  kDriver = 5,
  kKernel = 6,
  kMemory = 7,  // memcpy, memset
  kSync = 8,
  kMark = 9,
  kGpuAnnotation = 10,
};
inline constexpr int kNumTypeTags = 11;

// Short lower-case names ("step", "fe", "be", "comm", "rt", "drv", "kernel", "mem",
// "sync", "mark", "gpu_annot"), as the evaluation's feature names spell them.
std::string_view TypeTagShortName(TypeTag tag);

// Ranges take their type tag from the layer; everything else from the event type.
TypeTag TypeTagOf(Layer layer, EventType type);

// True for nodes that live on a GPU stream (they carry device and stream, not thread).
inline bool OnGpuStream(EventType type) {
  return IsGpuWork(type) || type == EventType::kSync || type == EventType::kGpuAnnotation;
}

// One node of trace.json. `name_json` is the name already written as a JSON string
// (quotes included), because writers escape a repeating name once.
struct DatasetNode {
  int64_t id = 0;
  int64_t parent = -1;
  uint64_t depth = 0;
  bool has_rank = false;  // version 2 (dataset build) nodes carry their rank
  int64_t rank = -1;
  Layer layer = Layer::kFrontend;
  EventType type = EventType::kRange;
  std::string_view name_json;
  int64_t start_ns = 0, dur_ns = 0;
  uint64_t thread = 0;              // host nodes
  uint64_t device = 0, stream = 0;  // GPU-stream nodes
  uint64_t correlation = 0;         // written when non-zero
  uint64_t bytes = 0;               // written when non-zero
};

// Appends the node as one JSON object: id, parent, depth, [rank,] layer, type, name,
// start_ns, dur_ns, then device and stream (GPU-stream nodes) or thread, then correlation
// and bytes when non-zero.
void AppendDatasetNode(std::string& out, const DatasetNode& node);

// The node of event `e` with the given tree position, for both writers.
DatasetNode DatasetNodeOf(const Trace& trace, uint32_t e, Layer layer, int64_t start_ns,
                          int64_t end_ns, std::string_view name_json);

// The node columns of one steps.jsonl line (docs/dataset-format.md): entry i of every
// column is node i of the step record, in trace.json's order.
struct DatasetColumns {
  std::vector<uint8_t> type;   // TypeTag
  std::vector<uint8_t> layer;  // Layer
  std::vector<uint32_t> name;  // index into the setting's names.json
  std::vector<int32_t> parent;
  std::vector<uint16_t> depth;
  std::vector<int32_t> rank;
  std::vector<int64_t> offset_ns, dur_ns;
  size_t size() const { return type.size(); }
};

}  // namespace teller::format

#endif  // TELLER_FORMAT_DATASET_NODE_H_
