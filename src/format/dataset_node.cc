// The dataset node schema's writer (include/teller/format/dataset_node.h).
#include "teller/format/dataset_node.h"

#include <array>

#include "teller/core/json_writer.h"

namespace teller::format {
namespace {

constexpr std::array<std::string_view, kNumTypeTags> kShortNames = {
    "step", "fe", "be", "comm", "rt", "drv", "kernel", "mem", "sync", "mark", "gpu_annot"};

}  // namespace

std::string_view TypeTagShortName(TypeTag tag) {
  const auto i = static_cast<size_t>(tag);
  return i < kShortNames.size() ? kShortNames[i] : "?";
}

TypeTag TypeTagOf(Layer layer, EventType type) {
  switch (type) {
    case EventType::kRuntime:
      return TypeTag::kRuntime;
    case EventType::kDriver:
      return TypeTag::kDriver;
    case EventType::kKernel:
      return TypeTag::kKernel;
    case EventType::kMemcpy:
    case EventType::kMemset:
      return TypeTag::kMemory;
    case EventType::kSync:
      return TypeTag::kSync;
    case EventType::kMark:
      return TypeTag::kMark;
    case EventType::kGpuAnnotation:
      return TypeTag::kGpuAnnotation;
    default:
      break;
  }
  switch (layer) {
    case Layer::kStep:
      return TypeTag::kStep;
    case Layer::kBackend:
      return TypeTag::kBackend;
    case Layer::kComm:
      return TypeTag::kComm;
    default:
      return TypeTag::kFrontend;
  }
}

DatasetNode DatasetNodeOf(const Trace& trace, uint32_t e, Layer layer, int64_t start_ns,
                          int64_t end_ns, std::string_view name_json) {
  const EventTable& ev = trace.events;
  DatasetNode n;
  n.layer = layer;
  n.type = ev.type[e];
  n.name_json = name_json;
  n.start_ns = start_ns;
  n.dur_ns = end_ns - start_ns;
  n.thread = ev.thread[e];
  n.device = ev.device[e];
  n.stream = ev.stream[e];
  n.correlation = ev.correlation[e];
  n.bytes = ev.bytes[e];
  return n;
}

void AppendDatasetNode(std::string& out, const DatasetNode& n) {
  out += "{\"id\":";
  AppendJsonInt(out, n.id);
  out += ",\"parent\":";
  AppendJsonInt(out, n.parent);
  out += ",\"depth\":";
  AppendJsonUint(out, n.depth);
  if (n.has_rank) {
    out += ",\"rank\":";
    AppendJsonInt(out, n.rank);
  }
  out += ",\"layer\":\"";
  out += LayerName(n.layer);
  out += "\",\"type\":\"";
  out += EventTypeName(n.type);
  out += "\",\"name\":";
  out += n.name_json;
  out += ",\"start_ns\":";
  AppendJsonInt(out, n.start_ns);
  out += ",\"dur_ns\":";
  AppendJsonInt(out, n.dur_ns);
  if (OnGpuStream(n.type)) {
    out += ",\"device\":";
    AppendJsonUint(out, n.device);
    out += ",\"stream\":";
    AppendJsonUint(out, n.stream);
  } else {
    out += ",\"thread\":";
    AppendJsonUint(out, n.thread);
  }
  if (n.correlation != 0) {
    out += ",\"correlation\":";
    AppendJsonUint(out, n.correlation);
  }
  if (n.bytes != 0) {
    out += ",\"bytes\":";
    AppendJsonUint(out, n.bytes);
  }
  out += '}';
}

}  // namespace teller::format
