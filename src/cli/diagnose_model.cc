// `teller diagnose --model` (src/cli/diagnose_model.h).
#include "src/cli/diagnose_model.h"

#include <algorithm>
#include <cstdio>
#include <unordered_map>
#include <vector>

#include "teller/dataset/build.h"
#include "teller/dataset/log_text.h"
#include "teller/dataset/step_record.h"
#include "teller/format/dataset_node.h"
#include "teller/logs/template_miner.h"

namespace teller::cli {
namespace {

// The MoT's log stream of each engine step: its aligned lines in time order, each as
// "LEVEL template" (as `teller eval` and `teller train` give them from a dataset), the
// templates mined over every aligned line of the trace first so that each line gets its
// template's final text.
std::vector<std::vector<std::string>> StepLogLines(const Trace& trace,
                                                   const reconstruct::Reconstruction& r,
                                                   const std::vector<dataset::EngineStep>& steps) {
  const LogTable& logs = trace.logs;
  std::vector<std::vector<uint32_t>> rows(steps.size());
  std::vector<uint32_t> all;
  for (size_t e = 0; e < steps.size(); ++e) {
    for (uint32_t s : steps[e].steps)
      rows[e].insert(rows[e].end(), r.steps[s].logs.begin(), r.steps[s].logs.end());
    std::sort(rows[e].begin(), rows[e].end(), [&](uint32_t a, uint32_t b) {
      return logs.ts_ns[a] < logs.ts_ns[b] || (logs.ts_ns[a] == logs.ts_ns[b] && a < b);
    });
    rows[e].erase(std::unique(rows[e].begin(), rows[e].end()), rows[e].end());
    all.insert(all.end(), rows[e].begin(), rows[e].end());
  }
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  logs::TemplateMiner miner;
  std::unordered_map<uint32_t, logs::TemplateId> template_of;
  for (uint32_t row : all) template_of[row] = miner.Add(trace.strings.Get(logs.message[row]));
  std::vector<std::vector<std::string>> out(steps.size());
  for (size_t e = 0; e < steps.size(); ++e) {
    for (uint32_t row : rows[e])
      out[e].push_back(dataset::ModelLogLine(logs.level[row], miner.Text(template_of[row])));
  }
  return out;
}

}  // namespace

Status ApplyModel(const rca::Model& model, const std::string& path, const Trace& trace,
                  const reconstruct::Reconstruction& r, diagnose::Diagnosis* d) {
  d->model = diagnose::ModelInfo{};
  d->model.path = path;
  d->model.network = rca::VariantName(model.config().variant);
  for (int c : model.fault_classes())
    d->model.fault_types.emplace_back(FaultCategoryName(static_cast<FaultCategory>(c)));
  const std::vector<dataset::EngineStep> steps = dataset::GroupEngineSteps(trace, r);
  if (steps.empty()) return Status::Ok();
  std::vector<int32_t> engine_of(r.steps.size(), -1);
  for (size_t e = 0; e < steps.size(); ++e) {
    for (uint32_t s : steps[e].steps) engine_of[s] = static_cast<int32_t>(e);
  }
  // Every engine step is in the corpus: the model reads a duration against the same token's
  // median over all the steps of the setting, as it did over its training data.
  std::vector<std::string> names;
  std::unordered_map<StringId, uint32_t> name_ids;
  auto name_id = [&](StringId id) {
    auto [it, added] = name_ids.emplace(id, static_cast<uint32_t>(names.size()));
    if (added) names.emplace_back(trace.strings.Get(id));
    return it->second;
  };
  std::vector<format::DatasetColumns> columns(steps.size());
  dataset::StepRecord record;
  const size_t max_nodes = dataset::BuildOptions{}.max_nodes_per_step;
  for (size_t e = 0; e < steps.size(); ++e) {
    dataset::BuildStepRecord(trace, r, steps[e], max_nodes, &record);
    dataset::FillStepColumns(trace, r, steps[e], record, name_id, &columns[e]);
  }
  rca::Corpus corpus;
  corpus.names.push_back(&names);
  for (const format::DatasetColumns& c : columns) corpus.steps.push_back({0, &c});
  std::vector<std::vector<std::string>> lines;
  if (rca::ReadsText(model.config().variant)) lines = StepLogLines(trace, r, steps);
  std::vector<rca::Query> queries;
  std::vector<size_t> asked;  // the diagnosis step of each query
  for (size_t i = 0; i < d->steps.size(); ++i) {
    const diagnose::StepDiagnosis& s = d->steps[i];
    if (s.rank_steps.empty() || engine_of[s.rank_steps.front()] < 0) continue;
    const auto e = static_cast<uint32_t>(engine_of[s.rank_steps.front()]);
    queries.push_back({e, lines.empty() ? nullptr : &lines[e]});
    asked.push_back(i);
  }
  Result<std::vector<rca::StepOutput>> outputs = model.Predict(corpus, queries);
  if (!outputs.ok()) return outputs.status();
  for (size_t j = 0; j < asked.size(); ++j) {
    const rca::StepOutput& o = (*outputs)[j];
    diagnose::StepDiagnosis& s = d->steps[asked[j]];
    diagnose::ModelVerdict& v = s.model;
    v.present = true;
    v.p_vertical = o.abnormal[0];
    v.p_horizontal = o.abnormal[1];
    const FaultCategory fault = o.Fault(model.fault_classes());
    v.fault_type = FaultCategoryName(fault);
    v.fault_probability = o.fault[static_cast<size_t>(fault)];
    v.explanation = o.explanation;
    const format::DatasetColumns& c = columns[queries[j].step];
    for (int view = 0; view < rca::kViewsCount; ++view) {
      size_t listed = 0;
      for (const auto& [node, p] : o.evidence[static_cast<size_t>(view)]) {  // highest first
        if (p < 0.5f || listed == diagnose::kModelEvidencePerView) break;
        if (node >= c.name.size()) continue;
        v.evidence.push_back(
            {view == 0 ? "vertical" : "horizontal", names[c.name[node]], c.rank[node], p});
        ++listed;
      }
    }
    if (s.abnormal) {
      s.rule_fault_type = s.fault_type;
      s.fault_type = v.fault_type;
      // The sentence names the rules' category ("Likely ..."): say whose the fault type is.
      char p[16];
      std::snprintf(p, sizeof p, "%.2f", static_cast<double>(v.fault_probability));
      s.explanation += " The learned model (" + d->model.network + ") names " + v.fault_type +
                       " (probability " + p + ").";
    }
  }
  d->model.steps_read = asked.size();
  return Status::Ok();
}

}  // namespace teller::cli
