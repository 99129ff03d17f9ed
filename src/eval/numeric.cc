// The numeric diagnosis as predictions (include/teller/eval/numeric.h).
#include "teller/eval/numeric.h"

#include <algorithm>
#include <chrono>
#include <unordered_map>

#include "teller/core/file_util.h"
#include "teller/dataset/step_record.h"
#include "teller/ingest/ingest.h"
#include "teller/reconstruct/reconstruct.h"

namespace teller::eval {
namespace {

// The diagnosis of one dataset engine step. Diagnose groups rank steps by seq like the
// dataset build, but steps without a seq stand alone there while the build pairs them by
// ordinal; so several diagnosed steps may fall into one dataset step, and are merged.
struct Merged {
  bool abnormal = false, vertical = false, horizontal = false;
  // Abnormal for these requests only (StepDiagnosis::abnormal_requests), while no merged
  // diagnosis was abnormal for all of its requests.
  bool scoped = false;
  std::vector<std::string> requests;
  float score = 0;
  std::string fault_type, explanation;
  std::vector<diagnose::Evidence> evidence;
};

void Merge(const diagnose::StepDiagnosis& sd, Merged* m) {
  const bool first_abnormal = sd.abnormal && (!m->abnormal || sd.score > m->score);
  if (first_abnormal) {
    m->fault_type = sd.fault_type;
    m->explanation = sd.explanation;
  }
  if (sd.abnormal) {
    const bool whole = sd.abnormal_requests.empty() || (m->abnormal && !m->scoped);
    m->scoped = !whole;
    if (whole)
      m->requests.clear();
    else
      m->requests.insert(m->requests.end(), sd.abnormal_requests.begin(),
                         sd.abnormal_requests.end());
  }
  m->abnormal |= sd.abnormal;
  m->vertical |= sd.abnormal && sd.vertical;
  m->horizontal |= sd.abnormal && sd.horizontal;
  m->score = std::max(m->score, sd.score);
  if (sd.abnormal) m->evidence.insert(m->evidence.end(), sd.evidence.begin(), sd.evidence.end());
}

Status PredictSetting(const Dataset& ds, uint32_t setting, const NumericOptions& options,
                      NumericStats* stats, Predictions* out) {
  const Setting& s = ds.settings[setting];
  if (s.source.empty()) {
    return Status::Error("setting \"" + s.name + "\": " + ds.root +
                         "/index.json names no source simulation; teller-numeric re-diagnoses "
                         "the raw traces (rebuild the dataset with `teller dataset build`)");
  }
  if (!IsDirectory(s.source)) {
    return Status::Error("setting \"" + s.name + "\": its source " + s.source +
                         " (from index.json) is not a directory; teller-numeric needs the raw "
                         "traces the dataset was built from");
  }
  const auto t0 = std::chrono::steady_clock::now();
  Trace trace;
  if (Status st = ingest::ImportPath(s.source, trace); !st.ok()) {
    return Status::Error("setting \"" + s.name + "\": " + st.message());
  }
  // Default options, as `teller dataset build` reconstructs.
  const reconstruct::Reconstruction r = reconstruct::Reconstruct(trace);
  const diagnose::Diagnosis d = diagnose::Diagnose(trace, r, options.diagnose);
  const std::vector<dataset::EngineStep> groups = dataset::GroupEngineSteps(trace, r);

  std::vector<uint32_t> group_of_step(r.steps.size(), UINT32_MAX);
  for (uint32_t g = 0; g < groups.size(); ++g) {
    for (uint32_t st : groups[g].steps) group_of_step[st] = g;
  }
  std::vector<Merged> merged(groups.size());
  std::vector<uint8_t> diagnosed(groups.size(), 0);
  for (const diagnose::StepDiagnosis& sd : d.steps) {
    ++stats->engine_steps;
    stats->abnormal_steps += sd.abnormal;
    if (sd.rank_steps.empty()) continue;
    const uint32_t g = group_of_step[sd.rank_steps.front()];
    if (g == UINT32_MAX) continue;
    diagnosed[g] = 1;
    Merge(sd, &merged[g]);
  }

  // Units of this setting by (request, seq).
  std::unordered_map<std::string, uint32_t> unit_of;
  for (uint32_t i = 0; i < ds.units.size(); ++i) {
    const Unit& u = ds.units[i];
    if (u.setting == setting) unit_of.emplace(u.request + '\0' + std::to_string(u.seq), i);
  }
  std::vector<uint8_t> covered(ds.units.size(), 0);
  std::vector<int32_t> local_of_node(r.nodes.size(), -1);
  dataset::StepRecord record;
  for (uint32_t g = 0; g < groups.size(); ++g) {
    if (!diagnosed[g]) continue;
    const Merged& m = merged[g];
    // Evidence as local ids of the step record, built exactly as the dataset build does.
    std::vector<uint32_t> all_nodes, comm_nodes;
    if (m.abnormal && !m.evidence.empty()) {
      dataset::BuildStepRecord(trace, r, groups[g], options.max_nodes_per_step, &record);
      for (size_t i = 0; i < record.size(); ++i)
        local_of_node[record.node[i]] = static_cast<int32_t>(i);
      for (const diagnose::Evidence& e : m.evidence) {
        ++stats->evidence;
        const int32_t local = e.node < local_of_node.size() ? local_of_node[e.node] : -1;
        if (local < 0) {
          ++stats->evidence_outside_record;
          continue;
        }
        all_nodes.push_back(static_cast<uint32_t>(local));
        if (e.layer == Layer::kComm) comm_nodes.push_back(static_cast<uint32_t>(local));
      }
      for (uint32_t node : record.node) local_of_node[node] = -1;
    }
    for (StringId q : groups[g].requests) {
      const std::string id(trace.strings.Get(q));
      const auto it = unit_of.find(id + '\0' + std::to_string(groups[g].seq));
      if (it == unit_of.end()) {
        ++stats->unmatched_requests;
        continue;
      }
      covered[it->second] = 1;
      for (View v : kViews) {
        Prediction& p = out->at(it->second, v);
        p.present = true;
        p.score = m.score;
        p.abnormal = v == View::kVertical ? m.vertical : m.horizontal;
        // A step abnormal for some of its requests only (a starved or never-prefilled one)
        // is normal for the others.
        if (m.scoped && std::find(m.requests.begin(), m.requests.end(), id) == m.requests.end())
          p.abnormal = false;
        if (!p.abnormal) continue;
        p.fault_type = m.fault_type;
        p.explanation = m.explanation;
        p.nodes = v == View::kVertical ? all_nodes : comm_nodes;
      }
    }
  }
  uint64_t without = 0;
  for (uint32_t i = 0; i < ds.units.size(); ++i) {
    if (ds.units[i].setting == setting && !covered[i]) ++without;
  }
  stats->units_without_diagnosis += without;
  if (options.progress) {
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.1f", seconds);
    options.progress("teller-numeric: " + s.name + ": " + std::to_string(d.abnormal_steps) +
                     " of " + std::to_string(d.steps.size()) + " engine steps abnormal (" + buf +
                     " s)");
  }
  return Status::Ok();
}

}  // namespace

Result<Predictions> PredictTellerNumeric(const Dataset& dataset, const NumericOptions& options,
                                         NumericStats* stats) {
  NumericStats local;
  NumericStats& st = stats != nullptr ? *stats : local;
  Predictions out;
  out.units.resize(dataset.units.size());
  // One setting at a time: a trace and its reconstruction take a few hundred MB.
  for (uint32_t s = 0; s < dataset.settings.size(); ++s) {
    TELLER_RETURN_IF_ERROR(PredictSetting(dataset, s, options, &st, &out));
  }
  return out;
}

}  // namespace teller::eval
