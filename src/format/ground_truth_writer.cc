// Serialisation of ground truth (layout in include/teller/format/ground_truth.h). Written by
// hand in a fixed field order so that the same truth always gives the same bytes (the
// simulator's determinism test compares files).
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "teller/core/file_util.h"
#include "teller/core/json_writer.h"
#include "teller/format/ground_truth.h"

namespace teller::format {
namespace {

void AppendInt(std::string& out, int64_t v) { out += std::to_string(v); }

void AppendDouble(std::string& out, double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  out += buf;
}

void AppendLocator(std::string& out, const NodeLocator& n) {
  out += "{\"kind\":";
  switch (n.kind) {
    case NodeLocator::Kind::kRange:
      out += "\"range\",\"host\":";
      AppendJsonString(out, n.host);
      out += ",\"pid\":";
      AppendInt(out, n.pid);
      out += ",\"tid\":";
      AppendInt(out, n.tid);
      out += ",\"name\":";
      AppendJsonString(out, n.name);
      out += ",\"occurrence\":";
      AppendInt(out, n.occurrence);
      break;
    case NodeLocator::Kind::kCall:
      out += "\"call\",\"host\":";
      AppendJsonString(out, n.host);
      out += ",\"pid\":";
      AppendInt(out, n.pid);
      out += ",\"correlation\":";
      out += std::to_string(n.correlation);
      break;
    case NodeLocator::Kind::kGpu:
      out += "\"gpu\",\"host\":";
      AppendJsonString(out, n.host);
      out += ",\"pid\":";
      AppendInt(out, n.pid);
      out += ",\"correlation\":";
      out += std::to_string(n.correlation);
      out += ",\"occurrence\":";
      AppendInt(out, n.occurrence);
      break;
  }
  // Version 3: the role when the writer knows it; an unknown role leaves the key out.
  if (n.role != NodeLocator::Role::kUnknown)
    out += n.role == NodeLocator::Role::kRoot ? ",\"root\":true" : ",\"root\":false";
  out += '}';
}

void AppendView(std::string& out, const ViewLabel& v) {
  out += "{\"is_anomaly\":";
  out += v.is_anomaly ? "true" : "false";
  out += ",\"nodes\":[";
  for (size_t i = 0; i < v.nodes.size(); ++i) {
    if (i) out += ',';
    AppendLocator(out, v.nodes[i]);
  }
  out += "]}";
}

void AppendStrings(std::string& out, const std::vector<std::string>& list) {
  out += '[';
  for (size_t i = 0; i < list.size(); ++i) {
    if (i) out += ',';
    AppendJsonString(out, list[i]);
  }
  out += ']';
}

// A JSON array of integers (ranks, step numbers).
template <typename Int>
void AppendIntegers(std::string& out, const std::vector<Int>& list) {
  out += '[';
  for (size_t i = 0; i < list.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(list[i]);
  }
  out += ']';
}

}  // namespace

std::string GroundTruthToJson(const GroundTruth& t) {
  std::string out;
  out.reserve(1 << 16);
  out += "{\"format\":\"teller-ground-truth\",\"version\":3,\"setting\":";
  AppendJsonString(out, t.setting);
  out += ",\"profile\":";
  AppendJsonString(out, t.profile);
  out += ",\"seed\":";
  out += std::to_string(t.seed);
  out += ",\"topology\":{\"nodes\":";
  AppendInt(out, t.nodes);
  out += ",\"gpus_per_node\":";
  AppendInt(out, t.gpus_per_node);
  out += ",\"tp\":";
  AppendInt(out, t.tp);
  out += ",\"pp\":";
  AppendInt(out, t.pp);
  out += "},\n\"processes\":[";
  for (size_t i = 0; i < t.processes.size(); ++i) {
    const ProcessTruth& p = t.processes[i];
    if (i) out += ',';
    out += "{\"host\":";
    AppendJsonString(out, p.host);
    out += ",\"pid\":";
    AppendInt(out, p.pid);
    out += ",\"rank\":";
    AppendInt(out, p.rank);
    out += ",\"tp_rank\":";
    AppendInt(out, p.tp_rank);
    out += ",\"pp_rank\":";
    AppendInt(out, p.pp_rank);
    out += '}';
  }
  out += "],\n\"faults\":[";
  for (size_t i = 0; i < t.faults.size(); ++i) {
    const FaultRecord& f = t.faults[i];
    if (i) out += ",\n";
    out += "{\"id\":";
    AppendInt(out, f.id);
    out += ",\"mechanism\":";
    AppendJsonString(out, f.mechanism);
    out += ",\"category\":";
    AppendJsonString(out, f.category);
    out += ",\"onset_ns\":";
    AppendInt(out, f.onset_ns);
    out += ",\"duration_ns\":";
    AppendInt(out, f.duration_ns);
    out += ",\"magnitude\":";
    AppendDouble(out, f.magnitude);
    out += ",\"target\":";
    AppendJsonString(out, f.target);
    out += ",\"description\":";
    AppendJsonString(out, f.description);
    out += ",\"ranks\":";
    AppendIntegers(out, f.ranks);
    out += '}';
  }
  out += "],\n\"requests\":[";
  for (size_t i = 0; i < t.requests.size(); ++i) {
    const RequestTruth& r = t.requests[i];
    if (i) out += ",\n";
    out += "{\"id\":";
    AppendJsonString(out, r.id);
    out += ",\"is_fault\":";
    out += r.is_fault ? "true" : "false";
    out += ",\"fault_type\":";
    AppendJsonString(out, r.fault_type);
    out += ",\"mechanism\":";
    AppendJsonString(out, r.mechanism);
    out += ",\"fault\":";
    AppendInt(out, r.fault);
    out += ",\"steps\":";
    AppendIntegers(out, r.steps);
    out += '}';
  }
  out += "],\n\"steps\":[";
  for (size_t i = 0; i < t.steps.size(); ++i) {
    const StepTruth& s = t.steps[i];
    if (i) out += ",\n";
    out += "{\"seq\":";
    out += std::to_string(s.seq);
    out += ",\"kind\":";
    AppendJsonString(out, s.kind);
    out += ",\"start_ns\":";
    AppendInt(out, s.start_ns);
    out += ",\"end_ns\":";
    AppendInt(out, s.end_ns);
    out += ",\"requests\":";
    AppendStrings(out, s.requests);
    out += ",\"fault\":";
    AppendInt(out, s.fault);
    out += ",\"affected_requests\":";
    AppendStrings(out, s.affected_requests);
    out += ",\"vertical\":";
    AppendView(out, s.vertical);
    out += ",\"horizontal\":";
    AppendView(out, s.horizontal);
    out += ",\"explanation\":";
    AppendJsonString(out, s.explanation);
    out += '}';
  }
  out += ']';
  // Healthy confounders, an added field of version 2: written only when there are some, so
  // a run without them gives the same bytes as before.
  if (!t.confounders.empty()) {
    out += ",\n\"confounders\":[";
    for (size_t i = 0; i < t.confounders.size(); ++i) {
      const ConfounderRecord& c = t.confounders[i];
      if (i) out += ",\n";
      out += "{\"kind\":";
      AppendJsonString(out, c.kind);
      out += ",\"time_ns\":";
      AppendInt(out, c.time_ns);
      out += ",\"steps\":";
      AppendIntegers(out, c.steps);
      out += ",\"requests\":";
      AppendStrings(out, c.requests);
      out += ",\"detail\":";
      AppendJsonString(out, c.detail);
      out += '}';
    }
    out += ']';
  }
  out += "}\n";
  return out;
}

Status WriteGroundTruth(const GroundTruth& truth, const std::string& path) {
  return WriteFileAtomic(path, GroundTruthToJson(truth));
}

}  // namespace teller::format
