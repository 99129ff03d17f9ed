// Reading a diagnosis JSON back (`teller export --diagnosis`): the steps and their evidence,
// enough to annotate the exported trace; and binding it to the trace it was made of.
#include <string>
#include <string_view>

#include "simdjson.h"
#include "src/report/report_util.h"
#include "teller/core/json_reader.h"
#include "teller/report/report.h"

namespace teller::report {
namespace {

namespace od = simdjson::ondemand;

Status ReadEvidence(const JsonContext& c, od::object& o, bool consequence, diagnose::Evidence* e) {
  uint64_t node = 0;
  TELLER_RETURN_IF_ERROR(c.Field(o, "node", &node, "evidence"));
  e->node = static_cast<uint32_t>(node);
  TELLER_RETURN_IF_ERROR(c.Field(o, "name", &e->name, "evidence"));
  bool present = false;
  TELLER_RETURN_IF_ERROR(c.OptionalField(o, "family", &e->family, &present, "evidence"));
  TELLER_RETURN_IF_ERROR(c.OptionalField(o, "within", &e->within, &present, "evidence"));
  std::string layer, measure;
  TELLER_RETURN_IF_ERROR(c.Field(o, "layer", &layer, "evidence"));
  if (!ParseLayer(layer, &e->layer))
    return c.Error("evidence.layer: unknown layer '" + layer + "'");
  TELLER_RETURN_IF_ERROR(c.Field(o, "measure", &measure, "evidence"));
  bool known = false;
  for (int m = 0; m <= static_cast<int>(localize::Measure::kTransferTime); ++m) {
    if (measure == localize::MeasureName(static_cast<localize::Measure>(m))) {
      e->measure = static_cast<localize::Measure>(m);
      known = true;
    }
  }
  if (!known) return c.Error("evidence.measure: unknown measure '" + measure + "'");
  int64_t rank = -1;
  TELLER_RETURN_IF_ERROR(c.Field(o, "rank", &rank, "evidence"));
  e->rank = static_cast<int>(rank);
  TELLER_RETURN_IF_ERROR(c.Field(o, "pid", &e->pid, "evidence"));
  TELLER_RETURN_IF_ERROR(c.Field(o, "time_ns", &e->time_ns, "evidence"));
  TELLER_RETURN_IF_ERROR(c.Field(o, "expected_ns", &e->expected_ns, "evidence"));
  TELLER_RETURN_IF_ERROR(c.Field(o, "excess_ns", &e->excess_ns, "evidence"));
  TELLER_RETURN_IF_ERROR(c.Field(o, "ratio", &e->ratio, "evidence"));
  od::object peers;
  TELLER_RETURN_IF_ERROR(c.Field(o, "peers", &peers, "evidence"));
  TELLER_RETURN_IF_ERROR(c.Field(peers, "count", &e->peers, "evidence.peers"));
  e->consequence = consequence;
  // A root that does not explain its step's abnormality (docs/diagnose.md, "Root before
  // impact"): the reports mark it, so reading it back must keep it.
  std::string role;
  TELLER_RETURN_IF_ERROR(c.OptionalField(o, "role", &role, &present, "evidence"));
  e->minor = present && role == "minor";
  int64_t waited = -1;
  TELLER_RETURN_IF_ERROR(c.OptionalField(o, "waited_for_rank", &waited, &present, "evidence"));
  e->waited_for_rank = present ? static_cast<int>(waited) : -1;
  return Status::Ok();
}

Status ReadStep(const JsonContext& c, od::object& o, diagnose::StepDiagnosis* s) {
  bool present = false;
  TELLER_RETURN_IF_ERROR(c.OptionalField(o, "step", &s->number, &present, "steps"));
  if (!present) s->number = -1;
  TELLER_RETURN_IF_ERROR(c.Field(o, "ordinal", &s->ordinal, "steps"));
  TELLER_RETURN_IF_ERROR(c.Field(o, "kind", &s->kind, "steps"));
  od::array ranks;
  TELLER_RETURN_IF_ERROR(c.Field(o, "ranks", &ranks, "steps"));
  for (auto item : ranks) {
    od::object ro;
    if (const auto e = item.get_object().get(ro))
      return c.Error(e, "steps.ranks: expected objects");
    diagnose::RankRef ref;
    int64_t rank = -1;
    TELLER_RETURN_IF_ERROR(c.Field(ro, "rank", &rank, "steps.ranks"));
    ref.rank = static_cast<int>(rank);
    TELLER_RETURN_IF_ERROR(c.Field(ro, "pid", &ref.pid, "steps.ranks"));
    s->ranks.push_back(ref);
  }
  TELLER_RETURN_IF_ERROR(c.Field(o, "start_ns", &s->start_ns, "steps"));
  TELLER_RETURN_IF_ERROR(c.Field(o, "end_ns", &s->end_ns, "steps"));
  TELLER_RETURN_IF_ERROR(c.Field(o, "duration_ns", &s->duration_ns, "steps"));
  TELLER_RETURN_IF_ERROR(c.Field(o, "excess_ns", &s->excess_ns, "steps"));
  TELLER_RETURN_IF_ERROR(c.Field(o, "spread_ns", &s->spread_ns, "steps"));
  double score = 0;
  TELLER_RETURN_IF_ERROR(c.Field(o, "score", &score, "steps"));
  s->score = static_cast<float>(score);
  TELLER_RETURN_IF_ERROR(c.Field(o, "abnormal", &s->abnormal, "steps"));
  TELLER_RETURN_IF_ERROR(c.Field(o, "vertical", &s->vertical, "steps"));
  TELLER_RETURN_IF_ERROR(c.Field(o, "horizontal", &s->horizontal, "steps"));
  TELLER_RETURN_IF_ERROR(c.OptionalField(o, "fault_type", &s->fault_type, &present, "steps"));
  TELLER_RETURN_IF_ERROR(c.OptionalField(o, "explanation", &s->explanation, &present, "steps"));
  for (const bool consequence : {false, true}) {
    od::array list;
    TELLER_RETURN_IF_ERROR(c.Field(o, consequence ? "consequences" : "evidence", &list, "steps"));
    for (auto item : list) {
      od::object eo;
      if (const auto e = item.get_object().get(eo)) {
        return c.Error(e, "steps.evidence: expected objects");
      }
      diagnose::Evidence ev;
      TELLER_RETURN_IF_ERROR(ReadEvidence(c, eo, consequence, &ev));
      (consequence ? s->consequences : s->evidence).push_back(std::move(ev));
    }
  }
  return Status::Ok();
}

}  // namespace

Result<diagnose::Diagnosis> ReadDiagnosisJson(const std::string& path) {
  auto text = LoadJsonFile(path);
  if (!text.ok()) return text.status();
  od::parser parser;
  od::document doc;
  if (const auto e = parser.iterate(text.value()).get(doc)) {
    return Status::Error(path + ": not JSON (" + simdjson::error_message(e) + ")");
  }
  const JsonContext c(path, std::string_view(text.value().data(), text.value().size()), doc);
  std::string format;
  TELLER_RETURN_IF_ERROR(c.Field(doc, "format", &format));
  if (format != "teller-diagnosis") {
    return c.Error("\"format\" is '" + format + "', not a teller-diagnosis report");
  }
  int64_t version = 0;
  TELLER_RETURN_IF_ERROR(c.Field(doc, "version", &version));
  if (version != diagnose::kSchemaVersion) {
    return c.Error("diagnosis version " + std::to_string(version) + "; this Teller reads version " +
                   std::to_string(diagnose::kSchemaVersion));
  }
  diagnose::Diagnosis d;
  TELLER_RETURN_IF_ERROR(c.Field(doc, "mode", &d.mode));
  if (d.mode == "logs") return d;  // a triage of logs: no steps to annotate
  TELLER_RETURN_IF_ERROR(c.Field(doc, "scope", &d.scope));
  od::array steps;
  TELLER_RETURN_IF_ERROR(c.Field(doc, "steps", &steps));
  for (auto item : steps) {
    od::object so;
    if (const auto e = item.get_object().get(so)) return c.Error(e, "steps: expected objects");
    diagnose::StepDiagnosis s;
    TELLER_RETURN_IF_ERROR(ReadStep(c, so, &s));
    d.abnormal_steps += s.abnormal;
    d.evidence += s.evidence.size();
    d.steps.push_back(std::move(s));
  }
  return d;
}

Status BindDiagnosis(const Trace& trace, const reconstruct::Reconstruction& r,
                     diagnose::Diagnosis* d) {
  const reconstruct::Nodes& n = r.nodes;
  for (diagnose::StepDiagnosis& s : d->steps) {
    for (const std::vector<diagnose::Evidence>* list : {&s.evidence, &s.consequences}) {
      for (const diagnose::Evidence& e : *list) {
        const std::string_view name = e.node < n.size()
                                          ? trace.strings.Get(trace.events.name[n.event[e.node]])
                                          : std::string_view();
        if (e.node >= n.size() || name != e.name) {
          return Status::Error("the diagnosis does not match this trace: node " +
                               std::to_string(e.node) + " of " + StepLabel(s) + " is '" +
                               std::string(name) + "' here, '" + e.name +
                               "' in the diagnosis (diagnose the same TRACE paths, in the "
                               "same order, with the same --rules)");
        }
      }
    }
    // The step ranges it is made of: same number (or ordinal without one) on its ranks.
    s.rank_steps.clear();
    for (size_t i = 0; i < r.steps.size(); ++i) {
      const reconstruct::Step& rs = r.steps[i];
      const bool same = s.number >= 0 ? rs.number == s.number : rs.ordinal == s.ordinal;
      if (!same) continue;
      for (const diagnose::RankRef& ref : s.ranks) {
        if (trace.processes[rs.process].pid == ref.pid) {
          s.rank_steps.push_back(static_cast<uint32_t>(i));
          break;
        }
      }
    }
  }
  return Status::Ok();
}

}  // namespace teller::report
