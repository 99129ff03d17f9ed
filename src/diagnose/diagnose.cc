// The numeric diagnosis (include/teller/diagnose/diagnose.h).
#include "teller/diagnose/diagnose.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>

#include "teller/core/json_writer.h"

namespace teller::diagnose {

namespace {

std::string Us(int64_t ns) {
  char buf[32];
  if (std::llabs(ns) >= 10'000'000) {
    std::snprintf(buf, sizeof buf, "%.1f ms", static_cast<double>(ns) / 1e6);
  } else {
    std::snprintf(buf, sizeof buf, "%.1f us", static_cast<double>(ns) / 1e3);
  }
  return buf;
}

// Kernel names are long; reports show the function name without template arguments.
std::string Short(std::string_view name) {
  std::string s(name);
  if (s.rfind("void ", 0) == 0) s = s.substr(5);
  size_t cut = std::string::npos;
  int depth = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '<' || s[i] == '(') {
      if (depth == 0 && i > 0) {
        cut = i;
        break;
      }
      ++depth;
    }
  }
  if (cut != std::string::npos) s = s.substr(0, cut);
  if (s.size() > 80) s = s.substr(0, 77) + "...";
  return s;
}

// Runtime/driver call names in a node's subtree, for the rules below.
void CallNames(const Trace& t, const reconstruct::Reconstruction& r, uint32_t node,
               std::set<std::string>* out, uint64_t* bytes) {
  std::vector<uint32_t> todo = {node};
  while (!todo.empty()) {
    const uint32_t i = todo.back();
    todo.pop_back();
    const uint32_t e = r.nodes.event[i];
    if (IsHostCall(t.events.type[e])) out->insert(std::string(t.strings.Get(t.events.name[e])));
    if (t.events.type[e] == EventType::kMemcpy || t.events.type[e] == EventType::kMemset)
      *bytes += t.events.bytes[e];
    for (uint32_t c = r.nodes.child_begin[i]; c < r.nodes.child_begin[i + 1]; ++c)
      todo.push_back(r.nodes.child_index[c]);
  }
}

// A first, rule-based fault category from the evidence (docs/diagnose.md, "Fault type").
FaultCategory FaultType(const Trace& t, const reconstruct::Reconstruction& r,
                        const std::vector<Evidence>& ev, std::string* why) {
  if (ev.empty()) {
    *why = "the step is slow with no single abnormal operator";
    return FaultCategory::kSchedulingSoftware;
  }
  std::set<std::string> calls;
  uint64_t bytes = 0;
  for (const Evidence& e : ev) CallNames(t, r, e.node, &calls, &bytes);
  for (const std::string& c : calls) {
    if (IsAllocatorCall(ClassifyCall(c))) {
      *why = "allocation calls (" + c + ") block inside the operators";
      return FaultCategory::kMemoryResource;
    }
  }
  if (bytes >= (4u << 20)) {
    *why = "large copies (" + std::to_string(bytes >> 20) + " MiB) stall the step";
    return FaultCategory::kMemoryResource;
  }
  // Compute evidence that is slower (not comm): one family -> kernel; many families of
  // compute-bound work on one rank -> the GPU itself.
  std::map<int, std::set<std::string>> compute_families;
  const Evidence* compute = nullptr;
  const Evidence* comm = nullptr;
  const Evidence* host = nullptr;
  for (const Evidence& e : ev) {
    const bool gpu_time = IsGpuTimeFeature(e.feature);
    if (e.layer == Layer::kComm) {
      if (comm == nullptr) comm = &e;
    } else if (IsHostFeature(e.feature)) {
      if (host == nullptr) host = &e;
    } else if (gpu_time && e.z > 0) {
      if (compute == nullptr) compute = &e;
      compute_families[e.rank].insert(e.name);
    }
  }
  auto excess = [](const Evidence* e) { return e == nullptr ? 0 : e->self_ns - e->expected_ns; };
  if (host != nullptr && (compute == nullptr || excess(host) > 2 * excess(compute))) {
    for (const std::string& c : calls) {
      if (ClassifyCall(c) == CallKind::kSynchronize) {
        *why = c + " blocks far longer than the work it waits for";
        return FaultCategory::kRuntimeDriver;
      }
    }
    *why = host->feature == kLaunchDelayNs
               ? "kernels start long after their launch calls"
               : "host runtime calls of " + Short(host->name) + " take longer than usual";
    return FaultCategory::kRuntimeDriver;
  }
  if (compute != nullptr) {
    for (const auto& [rank, fams] : compute_families) {
      if (fams.size() >= 3) {
        *why = std::to_string(fams.size()) + " compute families slow down together on rank " +
               std::to_string(rank) + ": the GPU itself is slower";
        return FaultCategory::kRuntimeDriver;
      }
    }
    if (compute->feature == kGpuOps) {
      *why = Short(compute->name) + " runs a different set of kernels than usual";
      return FaultCategory::kCudaKernel;
    }
    *why = Short(compute->name) + " kernels are slower than their peers";
    return FaultCategory::kCudaKernel;
  }
  if (comm != nullptr) {
    *why = "collective " + Short(comm->name) + " takes " + Us(comm->self_ns) + " instead of " +
           Us(comm->expected_ns);
    return FaultCategory::kCommunication;
  }
  *why = Short(ev.front().name) + " deviates from its family";
  return FaultCategory::kSchedulingSoftware;
}

}  // namespace

Diagnosis Diagnose(const Trace& trace, const reconstruct::Reconstruction& r, const Options& options,
                   const localize::Model* baseline) {
  Diagnosis d;
  d.mode = baseline != nullptr ? "baseline" : "self";
  const localize::Result loc = localize::Localize(trace, r, options.localize, baseline);
  const reconstruct::Nodes& n = r.nodes;
  // Engine steps: localization's groups (rank steps with the same seq).
  for (uint32_t g = 0; g < loc.group_steps.size(); ++g) {
    StepDiagnosis sd;
    for (uint32_t s : loc.group_steps[g]) {
      const reconstruct::Step& st = r.steps[s];
      if (sd.rank_steps.empty()) {
        std::vector<std::string> ids;
        std::string kind, seq;
        reconstruct::ParseStepMessage(trace.strings.Get(trace.events.name[n.event[st.node]]), &ids,
                                      &kind, &seq);
        char* end = nullptr;
        sd.seq = seq.empty() ? 0 : std::strtoull(seq.c_str(), &end, 10);
        sd.has_seq = !seq.empty() && end != nullptr && *end == '\0';
        sd.ordinal = st.ordinal;
        sd.kind = st.kind != 0 ? std::string(trace.strings.Get(st.kind)) : "";
        sd.start_ns = n.start_ns[st.node];
        sd.end_ns = n.end_ns[st.node];
      }
      sd.rank_steps.push_back(s);
      sd.start_ns = std::min(sd.start_ns, n.start_ns[st.node]);
      sd.end_ns = std::max(sd.end_ns, n.end_ns[st.node]);
      for (StringId q : st.requests) {
        const std::string id(trace.strings.Get(q));
        if (std::find(sd.requests.begin(), sd.requests.end(), id) == sd.requests.end())
          sd.requests.push_back(id);
      }
      for (uint32_t row : st.logs) {
        if (std::find(sd.logs.begin(), sd.logs.end(), row) == sd.logs.end()) sd.logs.push_back(row);
      }
    }
    if (loc.group_steps[g].empty() && !loc.group_roots[g].empty()) {
      // No steps in the trace: the process's whole timeline is the unit.
      const uint32_t first = loc.group_roots[g].front();
      sd.ordinal = g;
      sd.kind = "whole trace";
      sd.start_ns = n.start_ns[first];
      sd.end_ns = n.end_ns[first];
      for (uint32_t root : loc.group_roots[g]) {
        sd.start_ns = std::min(sd.start_ns, n.start_ns[root]);
        sd.end_ns = std::max(sd.end_ns, n.end_ns[root]);
      }
    }
    sd.score = loc.group_score[g];
    d.steps.push_back(std::move(sd));
  }
  // Evidence, views, fault type and explanation of abnormal steps.
  for (StepDiagnosis& sd : d.steps) {
    sd.abnormal = sd.score > options.step_threshold;
    std::vector<const localize::Instance*> sus;
    const uint32_t group = static_cast<uint32_t>(&sd - d.steps.data());
    const std::vector<uint32_t>& roots = loc.group_roots[group];
    for (uint32_t i : loc.suspicious[group]) sus.push_back(&loc.instances[i]);
    if (!sd.abnormal) {
      sd.step_nodes = 0;
      continue;
    }
    ++d.abnormal_steps;
    // Causes first: when compute operators are suspicious, the collectives that waited
    // for them come after; then by anomaly and by the time lost.
    bool compute = false;
    for (const localize::Instance* in : sus)
      compute |= loc.families[in->family].layer != Layer::kComm;
    auto waits = [&](const localize::Instance* in) {
      return compute && loc.families[in->family].layer == Layer::kComm;
    };
    std::sort(sus.begin(), sus.end(),
              [&](const localize::Instance* a, const localize::Instance* b) {
                if (waits(a) != waits(b)) return !waits(a);
                if (a->anomaly != b->anomaly) return a->anomaly > b->anomaly;
                const int64_t xa = a->total_ns - a->expected_ns, xb = b->total_ns - b->expected_ns;
                if (xa != xb) return xa > xb;
                return a->node < b->node;
              });
    std::vector<uint32_t> sus_nodes;
    for (const localize::Instance* in : sus) sus_nodes.push_back(in->node);
    const slice::Slice sl = slice::BuildSlice(trace, r, roots, sus_nodes, options.slice);
    sd.slice_nodes = sl.nodes.size();
    sd.step_nodes = sl.step_nodes;
    std::vector<Evidence> all;  // every suspicious instance, for the category rules
    for (const localize::Instance* in : sus) {
      Evidence e;
      e.node = in->node;
      e.name = loc.families[in->family].name;
      e.layer = loc.families[in->family].layer;
      const ProcessInfo& p = trace.processes[n.process[in->node]];
      e.rank = p.rank;
      e.pid = p.pid;
      e.score = in->anomaly;
      e.self_ns = in->total_ns;
      e.expected_ns = in->expected_ns;
      e.feature = in->top_feature;
      e.z = in->top_z;
      if (n.layer[in->node] == Layer::kComm)
        sd.horizontal = true;
      else
        sd.vertical = true;
      if (sd.evidence.size() < options.max_evidence) sd.evidence.push_back(e);
      if (all.size() < 256) all.push_back(std::move(e));
    }
    if (sd.evidence.empty()) sd.vertical = true;
    std::string why;
    sd.fault_type = FaultCategoryName(FaultType(trace, r, all, &why));
    std::ostringstream x;
    x << "Step " << (sd.has_seq ? std::to_string(sd.seq) : "#" + std::to_string(sd.ordinal));
    if (!sd.kind.empty()) x << " (" << sd.kind << ")";
    x << " is abnormal (score " << std::lround(sd.score * 100) / 100.0 << ")";
    if (!sd.evidence.empty()) {
      const Evidence& top = sd.evidence.front();
      x << ": " << Short(top.name) << " on rank " << top.rank << " took " << Us(top.self_ns)
        << " against a typical " << Us(top.expected_ns);
      if (top.expected_ns > 0) {
        char ratio[32];
        std::snprintf(ratio, sizeof ratio, " (%.1fx)",
                      static_cast<double>(top.self_ns) / top.expected_ns);
        x << ratio;
      }
      std::set<std::string> others;
      for (size_t i = 1; i < sd.evidence.size(); ++i) others.insert(Short(sd.evidence[i].name));
      others.erase(Short(top.name));
      if (!others.empty()) {
        x << "; also ";
        size_t k = 0;
        for (const std::string& o : others) {
          if (k++ == 3) break;
          x << (k > 1 ? ", " : "") << o;
        }
      }
    }
    x << ". Likely " << sd.fault_type << ": " << why << ".";
    if (!sd.requests.empty()) {
      x << " Requests: " << sd.requests.front();
      if (sd.requests.size() > 1) x << " and " << sd.requests.size() - 1 << " more";
      x << ".";
    }
    size_t warnings = 0;
    for (uint32_t row : sd.logs) warnings += trace.logs.level[row] >= LogLevel::kWarning;
    if (warnings > 0) x << " " << warnings << " warning/error log line(s) in the step window.";
    sd.explanation = x.str();
  }
  // Top operators over the whole trace, by (name, layer): the mean of A_{s,t} over the
  // steps that run the family. In a step where compute operators are suspicious, the
  // collectives that waited for them are consequences, not causes: they count a tenth.
  std::vector<bool> compute_suspicious(loc.group_steps.size(), false);
  for (size_t g = 0; g < loc.suspicious.size(); ++g) {
    for (uint32_t i : loc.suspicious[g]) {
      if (loc.families[loc.instances[i].family].layer != Layer::kComm) compute_suspicious[g] = true;
    }
  }
  struct Agg {
    double sum = 0, excess = 0;
    uint32_t steps = 0, count = 0, instances = 0;
    double median = 0;
    std::string layer;
  };
  std::map<std::pair<std::string, std::string>, Agg> agg;
  std::vector<std::pair<std::string, std::string>> key_of(loc.families.size());
  for (size_t f = 0; f < loc.families.size(); ++f) {
    key_of[f] = {loc.families[f].name, std::string(LayerName(loc.families[f].layer))};
    Agg& a = agg[key_of[f]];
    a.instances += loc.families[f].count;
    a.median = std::max(a.median, loc.families[f].median_ns);
  }
  std::map<std::pair<uint32_t, std::pair<std::string, std::string>>, float>
      best;  // (group, key) -> A
  for (const localize::StepFamily& sf : loc.step_families) {
    float a = sf.suspiciousness;
    if (loc.families[sf.family].layer == Layer::kComm && compute_suspicious[sf.step]) a *= 0.1f;
    float& b = best[{sf.step, key_of[sf.family]}];
    b = std::max(b, a);
  }
  for (const auto& [k, a] : best) {
    agg[k.second].sum += a;
    ++agg[k.second].steps;
  }
  double total_excess = 0;
  for (size_t g = 0; g < loc.suspicious.size(); ++g) {
    for (uint32_t i : loc.suspicious[g]) {
      const localize::Instance& in = loc.instances[i];
      Agg& a = agg[key_of[in.family]];
      ++a.count;
      double x = static_cast<double>(std::max<int64_t>(0, in.total_ns - in.expected_ns));
      if (loc.families[in.family].layer == Layer::kComm && compute_suspicious[g]) x *= 0.1;
      a.excess += x;
      total_excess += x;
    }
  }
  std::vector<TopOperator> ops;
  for (const auto& [key, a] : agg) {
    TopOperator o;
    o.name = key.first;
    ParseLayer(key.second, &o.layer);  // the key spells a Layer by its name
    const double mean_a = a.steps ? a.sum / a.steps : 0;
    const double share = total_excess > 0 ? a.excess / total_excess : 0;
    o.score = static_cast<float>(0.5 * mean_a + 0.5 * share);
    o.excess_ns = static_cast<int64_t>(a.excess);
    o.count = a.count;
    o.instances = a.instances;
    o.median_ns = static_cast<int64_t>(a.median);
    ops.push_back(std::move(o));
  }
  // Ties (an operator range and the kernel that makes it slow score alike): the more
  // specific first, the kernel before the operators around it.
  auto specificity = [](Layer layer) {
    return layer == Layer::kGpu ? 0 : layer == Layer::kComm ? 1 : layer == Layer::kBackend ? 2 : 3;
  };
  std::sort(ops.begin(), ops.end(), [&](const TopOperator& a, const TopOperator& b) {
    if (std::fabs(a.score - b.score) > 1e-4f) return a.score > b.score;
    if (specificity(a.layer) != specificity(b.layer))
      return specificity(a.layer) < specificity(b.layer);
    if (a.count != b.count) return a.count > b.count;
    return a.name < b.name;
  });
  if (ops.size() > options.top_k) ops.resize(options.top_k);
  d.top_operators = std::move(ops);
  return d;
}

std::string ToJson(const Trace& trace, const Diagnosis& d,
                   const std::vector<std::string>& sources) {
  std::string out;
  out.reserve(1 << 20);
  out += "{\"format\":\"teller-diagnosis\",\"version\":" + std::to_string(kSchemaVersion) +
         ",\"mode\":";
  AppendJsonString(out, d.mode);
  out += ",\"sources\":[";
  for (size_t i = 0; i < sources.size(); ++i) {
    if (i) out += ',';
    AppendJsonString(out, sources[i]);
  }
  out += "],\"abnormal_steps\":" + std::to_string(d.abnormal_steps) + ",\n\"steps\":[";
  bool first = true;
  for (const StepDiagnosis& s : d.steps) {
    // One entry per (request, view); steps without request ids get one with request null.
    std::vector<std::string> reqs = s.requests;
    if (reqs.empty()) reqs.push_back("");
    for (const std::string& q : reqs) {
      for (const char* view : {"vertical", "horizontal"}) {
        const bool horizontal = view[0] == 'h';
        const bool abnormal = s.abnormal && (horizontal ? s.horizontal : s.vertical);
        if (!first) out += ",\n";
        first = false;
        out += "{\"request\":";
        if (q.empty())
          out += "null";
        else
          AppendJsonString(out, q);
        out += ",\"step\":" + std::to_string(s.has_seq ? s.seq : s.ordinal);
        out += ",\"seq\":" + (s.has_seq ? std::to_string(s.seq) : std::string("null"));
        out += ",\"kind\":";
        AppendJsonString(out, s.kind);
        out +=
            ",\"view\":\"" + std::string(view) + "\",\"abnormal\":" + (abnormal ? "true" : "false");
        char score[32];
        std::snprintf(score, sizeof score, "%.4f", s.score);
        out += ",\"score\":" + std::string(score) + ",\"start_ns\":" + std::to_string(s.start_ns) +
               ",\"end_ns\":" + std::to_string(s.end_ns) + ",\"fault_type\":";
        if (abnormal)
          AppendJsonString(out, s.fault_type);
        else
          out += "null";
        out += ",\"evidence\":[";
        if (abnormal) {
          bool f2 = true;
          for (const Evidence& e : s.evidence) {
            if ((e.layer == Layer::kComm) != horizontal && horizontal) continue;
            if (!f2) out += ',';
            f2 = false;
            JsonObjectWriter w(out);
            w.Field("node", static_cast<uint64_t>(e.node))
                .Field("name", e.name)
                .Field("layer", LayerName(e.layer));
            w.Field("rank", static_cast<int64_t>(e.rank)).Field("pid", e.pid);
            w.Field("score", static_cast<double>(e.score))
                .Field("self_ns", e.self_ns)
                .Field("expected_ns", e.expected_ns);
            w.Field("feature", FeatureName(e.feature)).Field("z", static_cast<double>(e.z));
            w.Close();
          }
        }
        out += "],\"explanation\":";
        AppendJsonString(out, abnormal ? s.explanation : "");
        out += ",\"logs\":[";
        for (size_t i = 0; i < s.logs.size() && abnormal; ++i) {
          if (i) out += ',';
          const uint32_t row = s.logs[i];
          JsonObjectWriter w(out);
          w.Field("ts_ns", trace.logs.ts_ns[row])
              .Field("level", LogLevelName(trace.logs.level[row]));
          w.Field("message", trace.strings.Get(trace.logs.message[row]));
          w.Close();
        }
        out += "],\"slice_nodes\":" + std::to_string(s.slice_nodes) +
               ",\"step_nodes\":" + std::to_string(s.step_nodes) + "}";
      }
    }
  }
  out += "],\n\"top_operators\":[";
  for (size_t i = 0; i < d.top_operators.size(); ++i) {
    const TopOperator& o = d.top_operators[i];
    if (i) out += ",\n";
    JsonObjectWriter w(out);
    w.Field("name", o.name)
        .Field("layer", LayerName(o.layer))
        .Field("score", static_cast<double>(o.score));
    w.Field("count", static_cast<uint64_t>(o.count))
        .Field("instances", static_cast<uint64_t>(o.instances));
    w.Field("excess_ns", o.excess_ns);
    w.Field("median_ns", o.median_ns);
    w.Close();
  }
  // Damaged or surprising input behind the diagnosis, as `teller inspect --json` has them.
  out += "],\n\"counters\":";
  JsonObjectWriter counters(out);
  for (const auto& [name, value] : trace.counters.items()) {
    if (value != 0) counters.Field(name, value);
  }
  counters.Close();
  out += "}\n";
  return out;
}

std::string ToText(const Trace& trace, const Diagnosis& d, size_t max_steps) {
  std::ostringstream o;
  o << "diagnosis (" << d.mode << " fit): " << d.abnormal_steps << " of " << d.steps.size()
    << " steps abnormal\n";
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
    o << (s.has_seq ? "step " + std::to_string(s.seq) : "step #" + std::to_string(s.ordinal))
      << "  score " << std::lround(s.score * 100) / 100.0 << "  " << s.fault_type
      << "  views:" << (s.vertical ? " vertical" : "") << (s.horizontal ? " horizontal" : "")
      << "  slice " << s.slice_nodes << "/" << s.step_nodes << " nodes\n";
    o << "  " << s.explanation << "\n";
    for (const Evidence& e : s.evidence) {
      char line[256];
      std::snprintf(line, sizeof line, "    %-5s rank %-2d a=%.2f  %10s (typ %10s)  %-15s %s\n",
                    std::string(LayerName(e.layer)).c_str(), e.rank, e.score, Us(e.self_ns).c_str(),
                    Us(e.expected_ns).c_str(), FeatureName(e.feature), Short(e.name).c_str());
      o << line;
    }
    size_t shown = 0;
    for (uint32_t row : s.logs) {
      if (trace.logs.level[row] < LogLevel::kWarning && shown >= 2) continue;
      if (shown++ >= 4) break;
      std::string msg(trace.strings.Get(trace.logs.message[row]));
      if (msg.size() > 140) msg = msg.substr(0, 137) + "...";
      o << "    log " << LogLevelName(trace.logs.level[row]) << ": " << msg << "\n";
    }
  }
  if (ab.size() > max_steps)
    o << "... " << ab.size() - max_steps << " more abnormal steps (see --json)\n";
  o << "\ntop operators (most suspicious first):\n";
  for (const TopOperator& t : d.top_operators) {
    char line[256];
    std::snprintf(line, sizeof line, "  %.3f  %-8s %6u suspicious / %-7u +%-10s typ %10s  %s\n",
                  t.score, std::string(LayerName(t.layer)).c_str(), t.count, t.instances,
                  Us(t.excess_ns).c_str(), Us(t.median_ns).c_str(), Short(t.name).c_str());
    o << line;
  }
  bool damage = false;
  for (const CounterEntry& c : trace.counters.entries()) {
    if (c.value == 0) continue;
    if (!damage) o << "\ncounters (damaged or surprising input):\n";
    damage = true;
    char line[256];
    std::snprintf(line, sizeof line, "  %-40s %12llu  %s\n", std::string(c.name).c_str(),
                  static_cast<unsigned long long>(c.value),
                  std::string(CounterSeverityName(c.severity)).c_str());
    o << line;
  }
  return o.str();
}

}  // namespace teller::diagnose
