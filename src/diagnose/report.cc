// The reports of the numeric diagnosis: JSON (docs/diagnose.md, docs/diagnosis.schema.json)
// and terminal text.
#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>

#include "src/diagnose/format.h"
#include "teller/core/json_writer.h"
#include "teller/diagnose/diagnose.h"
#include "teller/localize/shared.h"

namespace teller::diagnose {

namespace {

void AppendEvidence(std::string& out, const Evidence& e) {
  JsonObjectWriter w(out, JsonDoubles::kDigits6);
  w.Field("node", static_cast<uint64_t>(e.node)).Field("name", e.name).Field("family", e.family);
  if (e.within.empty())
    w.FieldNull("within");
  else
    w.Field("within", e.within);
  w.Field("layer", LayerName(e.layer)).Field("rank", e.rank).Field("pid", e.pid);
  w.Field("role", EvidenceRole(e)).FieldBool("shared", e.shared);
  if (e.contended_by != 0) {
    w.Key("contended_by");
    JsonObjectWriter(out)
        .Field("work", localize::ConcurrentClassName(e.contended_by - 1u))
        .Field("stream", static_cast<uint64_t>(e.contended_stream))
        .Close();
  } else {
    w.FieldNull("contended_by");
  }
  w.Field("measure", localize::MeasureName(e.measure)).Field("feature", FeatureName(e.feature));
  w.Field("unit", "ns");
  w.Field("time_ns", e.time_ns).Field("expected_ns", e.expected_ns).Field("excess_ns", e.excess_ns);
  w.Field("noise_ns", e.noise_ns);
  w.Key("peers");
  JsonObjectWriter(out)
      .Field("source", localize::PeerSourceName(e.source))
      .Field("count", static_cast<uint64_t>(e.peers))
      .Close();
  w.Field("ratio", e.ratio).Field("z", static_cast<double>(e.z));
  w.Field("score", static_cast<double>(e.score));
  if (e.consequence)
    w.Field("waited_for_rank", e.waited_for_rank);
  else
    w.FieldNull("waited_for_rank");
  w.Close();
}

void AppendEvidenceList(std::string& out, const std::vector<Evidence>& list) {
  out += '[';
  for (size_t i = 0; i < list.size(); ++i) {
    if (i) out += ',';
    AppendEvidence(out, list[i]);
  }
  out += ']';
}

std::string Label(const StepDiagnosis& s) {
  return s.number >= 0 ? "step " + std::to_string(s.number) : "step #" + std::to_string(s.ordinal);
}

std::string Ranks(const StepDiagnosis& s) {
  std::string out;
  for (size_t i = 0; i < s.ranks.size() && i < 8; ++i) {
    out += (i ? "," : "") + std::to_string(s.ranks[i].rank);
  }
  if (s.ranks.size() > 8) out += ",...";
  return out;
}

}  // namespace

std::string ToJson(const Trace& trace, const Diagnosis& d,
                   const std::vector<std::string>& sources) {
  std::string out;
  out.reserve(1 << 16);
  JsonObjectWriter top(out, JsonDoubles::kDigits6);
  top.Field("format", "teller-diagnosis").Field("version", kSchemaVersion).Field("mode", d.mode);
  top.Field("scope", d.scope);
  top.Key("sources");
  {
    JsonArrayWriter a(out);
    for (const std::string& s : sources) a.Element(s);
    a.Close();
  }
  top.NewLine().Key("damage");
  {
    JsonObjectWriter dm(out);
    dm.FieldBool("damaged", !d.damage.empty());
    dm.Key("counters");
    JsonObjectWriter c(out);
    for (const auto& [name, value] : d.damage) c.Field(name, value);
    c.Close();
    dm.Close();
  }
  if (!d.model.path.empty()) {
    top.NewLine().Key("model");
    JsonObjectWriter m(out);
    m.Field("path", d.model.path).Field("network", d.model.network);
    m.Key("fault_types");
    JsonArrayWriter a(out);
    for (const std::string& t : d.model.fault_types) a.Element(t);
    a.Close();
    m.Field("steps_read", static_cast<uint64_t>(d.model.steps_read));
    m.Close();
  }
  top.Field("steps_total", static_cast<uint64_t>(d.steps.size()));
  top.Field("abnormal_steps", static_cast<uint64_t>(d.abnormal_steps));
  top.Field("evidence_instances", static_cast<uint64_t>(d.evidence));
  top.NewLine().Key("steps");
  out += '[';
  for (size_t i = 0; i < d.steps.size(); ++i) {
    const StepDiagnosis& s = d.steps[i];
    if (i) out += ',';
    out += '\n';
    JsonObjectWriter w(out, JsonDoubles::kDigits6);
    if (s.number >= 0)
      w.Field("step", s.number);
    else
      w.FieldNull("step");
    w.Field("ordinal", static_cast<uint64_t>(s.ordinal)).Field("kind", s.kind);
    w.Key("ranks");
    out += '[';
    for (size_t k = 0; k < s.ranks.size(); ++k) {
      if (k) out += ',';
      JsonObjectWriter(out).Field("rank", s.ranks[k].rank).Field("pid", s.ranks[k].pid).Close();
    }
    out += ']';
    w.Key("requests");
    {
      JsonArrayWriter a(out);
      for (const std::string& q : s.requests) a.Element(q);
      a.Close();
    }
    if (!s.abnormal_requests.empty()) {  // only when the step is abnormal for some of them
      w.Key("abnormal_requests");
      JsonArrayWriter a(out);
      for (const std::string& q : s.abnormal_requests) a.Element(q);
      a.Close();
    }
    w.Field("start_ns", s.start_ns).Field("end_ns", s.end_ns).Field("duration_ns", s.duration_ns);
    w.Field("excess_ns", s.excess_ns).Field("spread_ns", s.spread_ns);
    w.Field("score", static_cast<double>(s.score)).FieldBool("abnormal", s.abnormal);
    w.FieldBool("vertical", s.abnormal && s.vertical);
    w.FieldBool("horizontal", s.abnormal && s.horizontal);
    if (s.abnormal) {
      w.Field("fault_type", s.fault_type).Field("explanation", s.explanation);
    } else {
      w.FieldNull("fault_type").FieldNull("explanation");
    }
    if (!d.model.path.empty()) {
      if (s.abnormal && !s.rule_fault_type.empty()) {
        w.Field("rule_fault_type", s.rule_fault_type);
      } else {
        w.FieldNull("rule_fault_type");
      }
      w.Key("model");
      if (s.model.present) {
        JsonObjectWriter m(out, JsonDoubles::kDigits6);
        m.Key("p_abnormal");
        JsonObjectWriter(out, JsonDoubles::kDigits6)
            .Field("vertical", static_cast<double>(s.model.p_vertical))
            .Field("horizontal", static_cast<double>(s.model.p_horizontal))
            .Close();
        m.Field("fault_type", s.model.fault_type)
            .Field("fault_probability", static_cast<double>(s.model.fault_probability))
            .Field("explanation", s.model.explanation);
        m.Key("evidence");
        JsonArrayWriter a(out);
        for (const ModelEvidence& e : s.model.evidence) {
          a.Next();
          JsonObjectWriter(out, JsonDoubles::kDigits6)
              .Field("view", e.view)
              .Field("name", e.name)
              .Field("rank", static_cast<int64_t>(e.rank))
              .Field("probability", static_cast<double>(e.probability))
              .Close();
        }
        a.Close();
        m.Close();
      } else {
        out += "null";
      }
    }
    w.Key("evidence");
    AppendEvidenceList(out, s.evidence);
    w.Key("consequences");
    AppendEvidenceList(out, s.consequences);
    w.Key("log_evidence");
    AppendLogEvidenceJson(out, trace, s);
    w.Key("logs");
    out += '[';
    for (size_t k = 0; k < s.logs.size() && s.abnormal; ++k) {
      if (k) out += ',';
      const uint32_t row = s.logs[k];
      JsonObjectWriter l(out);
      if (trace.logs.ts_ns[row] == LogTable::kNoTime)
        l.FieldNull("ts_ns");
      else
        l.Field("ts_ns", trace.logs.ts_ns[row]);
      l.Field("level", LogLevelName(trace.logs.level[row]));
      l.Field("file", trace.strings.Get(trace.logs.file[row]));
      l.Field("line", static_cast<uint64_t>(trace.logs.line[row]));
      l.Field("message", trace.strings.Get(trace.logs.message[row]));
      l.Close();
    }
    out += ']';
    w.Field("slice_nodes", static_cast<uint64_t>(s.slice_nodes));
    w.Field("step_nodes", static_cast<uint64_t>(s.step_nodes));
    w.Close();
  }
  out += "]";
  top.NewLine().Key("top_operators");
  out += '[';
  for (size_t i = 0; i < d.top_operators.size(); ++i) {
    const TopOperator& o = d.top_operators[i];
    if (i) out += ',';
    out += '\n';
    JsonObjectWriter w(out, JsonDoubles::kDigits6);
    w.Field("name", o.name).Field("family", o.family);
    if (o.within.empty())
      w.FieldNull("within");
    else
      w.Field("within", o.within);
    w.Field("layer", LayerName(o.layer)).Field("measure", localize::MeasureName(o.measure));
    if (o.bytes_class != 0) w.Field("bytes", o.bytes);
    w.Field("suspicion", o.suspicion).Field("straggling_ns", o.straggling_ns);
    w.Field("score", static_cast<double>(o.score)).Field("excess_ns", o.excess_ns);
    w.Field("count", static_cast<uint64_t>(o.count));
    w.Field("instances", static_cast<uint64_t>(o.instances));
    w.Field("median_ns", o.median_ns).Field("max_ratio", o.max_ratio);
    w.Key("ranks");
    JsonArrayWriter a(out);
    for (int r : o.ranks) a.Element(r);
    a.Close();
    w.Close();
  }
  out += "]";
  top.NewLine().Key("stragglers");
  out += '[';
  for (size_t i = 0; i < d.stragglers.size(); ++i) {
    const StragglerReport& s = d.stragglers[i];
    if (i) out += ',';
    JsonObjectWriter w(out);
    w.Field("rank", s.rank).Field("pid", s.pid).Field("step", s.step);
    w.Field("late_ns", s.late_ns).Field("collective", s.collective);
    w.Field("waiting_ranks", static_cast<uint64_t>(s.waiting));
    w.Close();
  }
  out += "]";
  top.NewLine().Key("findings");
  AppendFindingsJson(out, d.findings);
  // Everything the importers and the reconstruction counted, as `teller inspect --json`.
  top.NewLine().Key("counters");
  {
    JsonObjectWriter c(out);
    for (const auto& [name, value] : trace.counters.items()) {
      if (value != 0) c.Field(name, value);
    }
    c.Close();
  }
  top.Close();
  out += '\n';
  return out;
}

std::string ToText(const Trace& trace, const Diagnosis& d, size_t max_steps) {
  std::ostringstream o;
  if (!d.damage.empty()) {
    // Before any verdict: a diagnosis of damaged input is only as good as what survived.
    o << "warning: the input is damaged; what follows is based on what could be read:\n";
    for (const auto& [name, value] : d.damage) o << "  " << name << " = " << value << "\n";
    o << "\n";
  }
  o << FindingsText(d.findings);
  o << "diagnosis (" << d.mode << " fit";
  if (d.scope == "whole_trace") o << "; no step markers: each process's whole timeline is one unit";
  if (d.scope == "iterations")
    o << "; no step markers: the steps are the iterations the work repeats in";
  o << "): " << d.abnormal_steps << " of " << d.steps.size() << " steps abnormal, " << d.evidence
    << " instances slower than their peers\n";
  if (!d.model.path.empty()) {
    o << "learned model " << d.model.path << " (" << d.model.network << "): read "
      << d.model.steps_read << " of " << d.steps.size()
      << " steps; it names the fault type of the abnormal steps it read\n";
  }
  std::vector<const StepDiagnosis*> ab;
  for (const StepDiagnosis& s : d.steps) {
    if (s.abnormal) ab.push_back(&s);
  }
  std::sort(ab.begin(), ab.end(),
            [](const StepDiagnosis* a, const StepDiagnosis* b) { return a->score > b->score; });
  std::map<std::string, size_t> types;
  for (const StepDiagnosis* s : ab) ++types[s->fault_type];
  if (!types.empty()) {
    o << "likely fault categories:";
    for (const auto& [t, k] : types) o << " " << t << " (" << k << " steps)";
    o << "\n";
  }
  o << "\n";
  for (size_t i = 0; i < ab.size() && i < max_steps; ++i) {
    const StepDiagnosis& s = *ab[i];
    o << Label(s) << " on rank " << Ranks(s) << "  score " << Fixed(s.score, 2) << "  "
      << s.fault_type << "  views:" << (s.vertical ? " vertical" : "")
      << (s.horizontal ? " horizontal" : "") << "  slice " << s.slice_nodes << "/" << s.step_nodes
      << " nodes\n";
    o << "  " << s.explanation << "\n";
    if (s.model.present) {
      o << "  model (" << d.model.network << "): " << s.model.fault_type << " (p "
        << Fixed(s.model.fault_probability, 2) << "; the rules: " << s.rule_fault_type
        << "), P(abnormal) " << Fixed(s.model.p_vertical, 2) << " vertical, "
        << Fixed(s.model.p_horizontal, 2) << " horizontal";
      if (!s.model.explanation.empty()) o << ": \"" << s.model.explanation << "\"";
      o << "\n";
      for (const ModelEvidence& e : s.model.evidence) {
        o << "    model evidence (" << e.view << "): " << e.name << " on rank " << e.rank << " (p "
          << Fixed(e.probability, 2) << ")\n";
      }
    }
    for (const Evidence& e : s.evidence) {
      char line[512];
      std::snprintf(line, sizeof line,
                    "    %-5s rank %-2d %-8s %10s (peers %10s, %5.2fx, +%s)  %s\n", EvidenceRole(e),
                    e.rank, std::string(LayerName(e.layer)).c_str(), Duration(e.time_ns).c_str(),
                    Duration(e.expected_ns).c_str(), e.ratio, Duration(e.excess_ns).c_str(),
                    ShortName(e.name).c_str());
      o << line;
      if (e.contended_by != 0) {  // what it shared the GPU with, on the line below it
        o << "          beside " << localize::ConcurrentClassName(e.contended_by - 1u)
          << " on stream " << e.contended_stream << ", which its usual instances ran without\n";
      }
    }
    for (const Evidence& e : s.consequences) {
      const std::string whom = e.waited_for_rank >= 0
                                   ? "for rank " + std::to_string(e.waited_for_rank)
                                   : "(partner ranks not in the trace)";
      char line[512];
      std::snprintf(line, sizeof line, "    waits rank %-2d %-8s %10s, +%s waiting %s  %s\n",
                    e.rank, std::string(LayerName(e.layer)).c_str(), Duration(e.time_ns).c_str(),
                    Duration(e.excess_ns).c_str(), whom.c_str(), ShortName(e.name).c_str());
      o << line;
    }
    o << LogEvidenceText(trace, s);
    size_t shown = 0;
    for (uint32_t row : s.logs) {
      if (trace.logs.level[row] < LogLevel::kWarning && shown >= 2) continue;
      if (shown++ >= 4) break;
      std::string msg(trace.strings.Get(trace.logs.message[row]));
      o << "    log " << LogLevelName(trace.logs.level[row]) << ": " << ShortName(msg, 140) << "\n";
    }
  }
  if (ab.size() > max_steps)
    o << "... " << ab.size() - max_steps << " more abnormal steps (see --json)\n";
  if (!d.stragglers.empty()) {
    o << "\nstragglers (ranks the others waited for):\n";
    for (size_t i = 0; i < d.stragglers.size() && i < 5; ++i) {
      const StragglerReport& s = d.stragglers[i];
      o << "  rank " << s.rank << " (pid " << s.pid << ") step " << s.step << ": " << s.waiting
        << " ranks waited " << Duration(s.late_ns) << " in " << ShortName(s.collective) << "\n";
    }
  }
  o << "\ntop operators (most suspicious first: -log10 of the chance that their evidence is "
       "natural variation):\n";
  if (d.top_operators.empty())
    o << "  none: no instance took significantly longer than its peers\n";
  for (const TopOperator& t : d.top_operators) {
    char line[512];
    std::string ranks;
    for (size_t i = 0; i < t.ranks.size() && i < 4; ++i)
      ranks += (i ? "," : "") + std::to_string(t.ranks[i]);
    if (t.ranks.size() > 4) ranks += ",...";
    std::snprintf(line, sizeof line,
                  "  %6.1f  %-8s +%-10s %5u of %-7u up to %5.2fx  rank %-6s %s%s%s\n", t.suspicion,
                  std::string(LayerName(t.layer)).c_str(), Duration(t.excess_ns).c_str(), t.count,
                  t.instances, t.max_ratio, ranks.c_str(), ShortName(t.name).c_str(),
                  t.bytes_class == 0 ? "" : (", " + Bytes(t.bytes)).c_str(),
                  t.within.empty() ? "" : (" in " + ShortName(t.within, 48)).c_str());
    o << line;
  }
  bool shown = false;
  for (const CounterEntry& c : trace.counters.entries()) {
    if (c.value == 0) continue;
    if (!shown) o << "\ncounters:\n";
    shown = true;
    char line[256];
    std::snprintf(line, sizeof line, "  %-40s %12llu  %s\n", std::string(c.name).c_str(),
                  static_cast<unsigned long long>(c.value),
                  std::string(CounterSeverityName(c.severity)).c_str());
    o << line;
  }
  return o.str();
}

}  // namespace teller::diagnose
