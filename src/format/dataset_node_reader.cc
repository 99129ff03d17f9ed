// Reading dataset nodes back (include/teller/format/dataset_node_reader.h).
#include "teller/format/dataset_node_reader.h"

#include <limits>

namespace teller::format {
namespace {

namespace od = simdjson::ondemand;

bool ParseEventType(std::string_view text, EventType* out) {
  for (int t = static_cast<int>(EventType::kPush); t <= static_cast<int>(EventType::kGpuAnnotation);
       ++t) {
    if (EventTypeName(static_cast<EventType>(t)) == text) {
      *out = static_cast<EventType>(t);
      return true;
    }
  }
  return false;
}

// Every element of an array of integers, each within [lo, hi].
template <typename T>
Status ReadIntegers(const JsonContext& ctx, od::value& v, const std::string& what,
                    std::vector<T>* out) {
  out->clear();
  od::array array;
  TELLER_RETURN_IF_ERROR(ctx.Get(v, what, &array));
  for (auto element : array) {
    od::value item;
    if (const simdjson::error_code e = element.get(item)) return ctx.Error(e, what);
    int64_t x = 0;
    if (const simdjson::error_code e = item.get_int64().get(x)) {
      // The label is built only on this path: columns hold millions of values.
      return ctx.Error(
          e, "\"" + what + "[" + std::to_string(out->size()) + "]\": expected an integer");
    }
    if (x < static_cast<int64_t>(std::numeric_limits<T>::min()) ||
        (x > 0 &&
         static_cast<uint64_t>(x) > static_cast<uint64_t>(std::numeric_limits<T>::max()))) {
      return ctx.Error("\"" + what + "[" + std::to_string(out->size()) +
                       "]\": " + std::to_string(x) + " is out of range");
    }
    out->push_back(static_cast<T>(x));
  }
  return Status::Ok();
}

}  // namespace

Status ReadDatasetNode(const JsonContext& ctx, od::value& value, std::string_view what,
                       DatasetNode* node, std::string* name) {
  const std::string label(what);
  od::object o;
  TELLER_RETURN_IF_ERROR(ctx.Get(value, label, &o));
  DatasetNode n;
  std::string layer, type;
  bool present = false;
  TELLER_RETURN_IF_ERROR(ctx.Field(o, "id", &n.id, label));
  TELLER_RETURN_IF_ERROR(ctx.Field(o, "parent", &n.parent, label));
  TELLER_RETURN_IF_ERROR(ctx.Field(o, "depth", &n.depth, label));
  TELLER_RETURN_IF_ERROR(ctx.OptionalField(o, "rank", &n.rank, &n.has_rank, label));
  TELLER_RETURN_IF_ERROR(ctx.Field(o, "layer", &layer, label));
  if (!ParseLayer(layer, &n.layer)) {
    return ctx.Error("\"" + label + ".layer\": unknown layer \"" + layer + "\"");
  }
  TELLER_RETURN_IF_ERROR(ctx.Field(o, "type", &type, label));
  if (!ParseEventType(type, &n.type)) {
    return ctx.Error("\"" + label + ".type\": unknown event type \"" + type + "\"");
  }
  TELLER_RETURN_IF_ERROR(ctx.Field(o, "name", name, label));
  TELLER_RETURN_IF_ERROR(ctx.Field(o, "start_ns", &n.start_ns, label));
  TELLER_RETURN_IF_ERROR(ctx.Field(o, "dur_ns", &n.dur_ns, label));
  if (OnGpuStream(n.type)) {
    TELLER_RETURN_IF_ERROR(ctx.Field(o, "device", &n.device, label));
    TELLER_RETURN_IF_ERROR(ctx.Field(o, "stream", &n.stream, label));
  } else {
    TELLER_RETURN_IF_ERROR(ctx.Field(o, "thread", &n.thread, label));
  }
  TELLER_RETURN_IF_ERROR(ctx.OptionalField(o, "correlation", &n.correlation, &present, label));
  TELLER_RETURN_IF_ERROR(ctx.OptionalField(o, "bytes", &n.bytes, &present, label));
  *node = n;
  return Status::Ok();
}

Status ReadDatasetColumns(const JsonContext& ctx, od::document& line, size_t names,
                          DatasetColumns* out, const DatasetColumnsWanted& wanted) {
  int64_t n = 0;
  TELLER_RETURN_IF_ERROR(ctx.Field(line, "n", &n));
  od::value v;
  auto column = [&](const char* key, auto* values) -> Status {
    TELLER_RETURN_IF_ERROR(ctx.Field(line, key, &v));
    TELLER_RETURN_IF_ERROR(ReadIntegers(ctx, v, key, values));
    if (values->size() != static_cast<size_t>(n)) {
      return ctx.Error(std::string("column \"") + key + "\" has " + std::to_string(values->size()) +
                       " entries, not n = " + std::to_string(n));
    }
    return Status::Ok();
  };
  TELLER_RETURN_IF_ERROR(column("type", &out->type));
  TELLER_RETURN_IF_ERROR(column("layer", &out->layer));
  TELLER_RETURN_IF_ERROR(column("name", &out->name));
  TELLER_RETURN_IF_ERROR(column("parent", &out->parent));
  if (wanted.depth) {
    TELLER_RETURN_IF_ERROR(column("depth", &out->depth));
  } else {
    out->depth.clear();
  }
  TELLER_RETURN_IF_ERROR(column("rank", &out->rank));
  TELLER_RETURN_IF_ERROR(column("offset_ns", &out->offset_ns));
  TELLER_RETURN_IF_ERROR(column("dur_ns", &out->dur_ns));
  for (size_t i = 0; i < static_cast<size_t>(n); ++i) {
    if (out->type[i] >= kNumTypeTags) {
      return ctx.Error("node " + std::to_string(i) + ": type tag " + std::to_string(out->type[i]) +
                       " is not one of the " + std::to_string(kNumTypeTags));
    }
    if (out->layer[i] >= kLayerCount) {
      return ctx.Error("node " + std::to_string(i) + ": layer " + std::to_string(out->layer[i]) +
                       " is not one of the " + std::to_string(kLayerCount));
    }
    if (out->name[i] >= names) {
      return ctx.Error("name index " + std::to_string(out->name[i]) + " of node " +
                       std::to_string(i) + " is outside names.json (" + std::to_string(names) +
                       " names)");
    }
    if (out->parent[i] >= static_cast<int32_t>(i) || out->parent[i] < -1) {
      return ctx.Error("node " + std::to_string(i) + " has parent " +
                       std::to_string(out->parent[i]) + " (parents precede their children)");
    }
  }
  return Status::Ok();
}

}  // namespace teller::format
