// One setting of `teller dataset build` (include/teller/dataset/build.h): ground-truth
// locators resolved on the imported event table, reconstruction, step records across
// ranks, labels, and the per-request and compact outputs, in one pass over the steps.
//
// Output volume is the cost to watch: every request of a batch gets its own copy of the
// step's trees (C_q(s) is shared work, docs/method.md §2 step 5), so the paper preset writes
// ~5.6 M nodes for ~1 M distinct ones. Each step record is therefore serialised once
// (its node objects for trace.json, its columns for steps.jsonl) and written from that one
// buffer into the file of every request of the batch (large pieces go to the file
// directly, never through a per-request copy). Requests' small buffers are flushed when
// large and closed after the request's last step, so memory stays near the size of the
// trace. Profile of the paper preset: most of the time is the kernel copying ~2.5 GB
// into the page cache.
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "src/dataset/json_out.h"
#include "teller/core/file_util.h"
#include "teller/core/json_writer.h"
#include "teller/core/request_id.h"
#include "teller/dataset/build.h"
#include "teller/dataset/dataset_export.h"
#include "teller/dataset/log_text.h"
#include "teller/dataset/step_record.h"
#include "teller/format/dataset_node.h"
#include "teller/logs/template_miner.h"
#include "teller/reconstruct/reconstruct.h"

namespace teller::dataset {
namespace {

using reconstruct::Reconstruction;

constexpr uint32_t kNone = UINT32_MAX;

double Since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// One engine step across ranks (step_record.h).
using Group = EngineStep;

// Output state of one request while its steps are written.
struct RequestOut {
  StringId id = 0;
  StringId log_id = 0;  // the id logs use for it (vLLM's API id), when it differs
  const format::RequestTruth* truth = nullptr;
  uint32_t last_group = 0;
  uint32_t steps = 0;
  bool any_anomalous = false;
  std::string dir;
  internal::FileSink trace{""};
  std::string annotation_steps;
  std::string log;
};

class SettingBuilder {
 public:
  SettingBuilder(Trace& trace, const format::GroundTruth& truth, const std::string& setting,
                 const std::string& out_dir, const BuildOptions& options)
      : trace_(trace), truth_(truth), setting_(setting), out_dir_(out_dir), options_(options) {}

  Result<SettingSummary> Run();

 private:
  void Progress(const std::string& line) const {
    if (options_.progress) options_.progress(setting_ + ": " + line);
  }
  Status ResolveTruth();
  void BuildGroups();
  void IndexTruth();
  Status WriteGroup(uint32_t g);
  void BuildRecord(const Group& group);
  void FormatRecord(const Group& group);
  // A view's labelled nodes in the current record, and its root nodes when the ground
  // truth gives every locator of the view a role (version 3).
  struct LocalView {
    std::vector<uint32_t> nodes, roots;
    bool roles = false;
  };
  void LabelView(const format::ViewLabel& view, size_t truth_step, int which, LocalView* local);
  Status FinishRequest(RequestOut& out);
  const std::string& EscapedName(StringId id);
  uint32_t NameId(StringId id);
  void AppendRequestHeader(std::string& out, const RequestOut& r, bool annotation) const;
  // `view` null: a view with no labels for this request (normal, no nodes).
  void AppendView(std::string& out, bool anomalous, const LocalView* view) const;

  Trace& trace_;
  const format::GroundTruth& truth_;
  const std::string& setting_;
  const std::string& out_dir_;
  const BuildOptions& options_;
  std::string root_;
  Reconstruction r_;
  Counters c_;  // the registry's dataset counters
  SettingSummary summary_;

  // Ground truth: locator rows per (truth step, view), the indexes by id and seq.
  std::vector<int64_t> locator_rows_;   // event row or -1, all locators in order
  std::vector<uint32_t> view_begin_;    // locators of (step s, view v) start at [2s+v]
  std::vector<uint32_t> locator_node_;  // node of each resolved locator, after reconstruction
  std::unordered_map<std::string_view, const format::RequestTruth*> truth_request_;
  std::unordered_map<uint64_t, uint32_t> truth_step_;
  std::unordered_map<int, const format::FaultRecord*> fault_;
  std::vector<uint8_t> truth_step_used_;

  std::vector<Group> groups_;
  std::vector<RequestOut> requests_;
  std::unordered_map<StringId, uint32_t> request_index_;

  // The current step record (one group), local ids dense from 0.
  StepRecord rec_;
  format::DatasetColumns cols_;         // rec_'s steps.jsonl columns
  std::vector<int32_t> local_of_node_;  // -1 outside the current record
  std::string rec_nodes_json_, rec_columns_json_, rec_shared_json_;
  std::string rec_nodes_gz_;  // rec_nodes_json_ as a gzip member, once per record (FileSink)

  std::vector<std::string> escaped_names_;
  std::vector<uint8_t> escaped_done_;
  std::vector<uint32_t> name_id_;
  std::vector<StringId> names_;
  internal::FileSink steps_sink_{""};

  // Log templates of the setting (docs/dataset-format.md, "log.txt"): one miner for the
  // setting's log, fed each aligned row once, when it is first written; ids never change
  // once handed out (template_miner.h), so a line written early keeps a valid id.
  logs::TemplateMiner miner_;
  std::vector<logs::TemplateId> template_of_row_;
};

Status SettingBuilder::ResolveTruth() {
  std::vector<const format::NodeLocator*> locators;
  view_begin_.clear();
  for (const format::StepTruth& step : truth_.steps) {
    for (const format::ViewLabel* view : {&step.vertical, &step.horizontal}) {
      view_begin_.push_back(static_cast<uint32_t>(locators.size()));
      for (const format::NodeLocator& n : view->nodes) locators.push_back(&n);
    }
  }
  view_begin_.push_back(static_cast<uint32_t>(locators.size()));
  locator_rows_ = ResolveLocators(trace_, locators);
  const uint64_t total = locators.size();
  uint64_t unresolved = 0;
  std::string examples;
  int shown = 0;
  for (size_t i = 0; i < locators.size(); ++i) {
    if (locator_rows_[i] >= 0) continue;
    ++unresolved;
    if (shown++ < 3) examples += (examples.empty() ? "" : "; ") + DescribeLocator(*locators[i]);
  }
  c_.Add(CounterId::kLocators, total);
  c_.Add(CounterId::kLocatorsUnresolved, unresolved);
  Progress(std::to_string(total - unresolved) + " of " + std::to_string(total) +
           " ground-truth locators resolved");
  if (unresolved > 0 && static_cast<double>(unresolved) >
                            options_.max_unresolved_fraction * static_cast<double>(total)) {
    char pct[32];
    std::snprintf(pct, sizeof(pct), "%.3g%%", 100.0 * unresolved / total);
    char limit[32];
    std::snprintf(limit, sizeof(limit), "%.3g%%", 100.0 * options_.max_unresolved_fraction);
    return Status::Error(setting_ + ": " + std::to_string(unresolved) + " of " +
                         std::to_string(total) + " ground-truth node locators (" + pct +
                         ") match no event of the trace (limit " + limit +
                         "); the ground truth does not describe these traces. First: " + examples);
  }
  return Status::Ok();
}

void SettingBuilder::BuildGroups() {
  GroupCounts counts;
  groups_ = GroupEngineSteps(trace_, r_, &counts);
  c_.Add(CounterId::kStepsWithoutSeq, counts.steps_without_seq);
  c_.Add(CounterId::kDuplicateSeq, counts.duplicate_seq);
}

void SettingBuilder::IndexTruth() {
  for (const format::RequestTruth& q : truth_.requests) truth_request_.emplace(q.id, &q);
  for (const format::FaultRecord& f : truth_.faults) fault_.emplace(f.id, &f);
  for (uint32_t i = 0; i < truth_.steps.size(); ++i) truth_step_.emplace(truth_.steps[i].seq, i);
  truth_step_used_.assign(truth_.steps.size(), 0);
}

const std::string& SettingBuilder::EscapedName(StringId id) {
  if (id >= escaped_names_.size()) {
    escaped_names_.resize(trace_.strings.size());
    escaped_done_.resize(trace_.strings.size(), 0);
  }
  if (!escaped_done_[id]) {
    AppendJsonString(escaped_names_[id], trace_.strings.Get(id));
    escaped_done_[id] = 1;
  }
  return escaped_names_[id];
}

uint32_t SettingBuilder::NameId(StringId id) {
  if (id >= name_id_.size()) name_id_.resize(trace_.strings.size(), kNone);
  if (name_id_[id] == kNone) {
    name_id_[id] = static_cast<uint32_t>(names_.size());
    names_.push_back(id);
  }
  return name_id_[id];
}

// The record of one group (step_record.h), and the local id of each of its nodes.
void SettingBuilder::BuildRecord(const Group& group) {
  BuildStepRecord(trace_, r_, group, options_.max_nodes_per_step, &rec_);
  for (size_t i = 0; i < rec_.size(); ++i) local_of_node_[rec_.node[i]] = static_cast<int32_t>(i);
  if (rec_.truncated) c_.Add(CounterId::kTruncatedSteps);
}

// Serialises the record once: node objects for trace.json and columns for steps.jsonl.
void SettingBuilder::FormatRecord(const Group& group) {
  const reconstruct::Nodes& n = r_.nodes;
  const EventTable& ev = trace_.events;
  std::string& out = rec_nodes_json_;
  out.clear();
  rec_nodes_gz_.clear();
  JsonArrayWriter nodes(out);
  for (size_t i = 0; i < rec_.size(); ++i) {
    const uint32_t node = rec_.node[i];
    const uint32_t e = n.event[node];
    nodes.Next();
    format::DatasetNode dn = format::DatasetNodeOf(trace_, e, n.layer[node], n.start_ns[node],
                                                   n.end_ns[node], EscapedName(ev.name[e]));
    dn.id = static_cast<int64_t>(i);
    dn.parent = rec_.parent[i];
    dn.depth = rec_.depth[i];
    dn.has_rank = true;
    dn.rank = rec_.rank[i];
    format::AppendDatasetNode(out, dn);
  }
  nodes.Close();

  // Columns, one array per field, same order as the node objects.
  FillStepColumns(
      trace_, r_, group, rec_, [this](StringId id) { return NameId(id); }, &cols_);
  std::string& col = rec_columns_json_;
  col.clear();
  JsonObjectWriter columns(col, JsonObjectWriter::FieldsOnly{});
  columns.Field("n", static_cast<uint64_t>(rec_.size()));
  auto column = [&](const char* key, const auto& values) {
    columns.Key(key);
    JsonArrayWriter list(col);
    for (const auto v : values) {
      using V = std::decay_t<decltype(v)>;
      if constexpr (std::is_signed_v<V>) {
        list.Element(static_cast<int64_t>(v));
      } else {
        list.Element(static_cast<uint64_t>(v));
      }
    }
    list.Close();
  };
  column("type", cols_.type);
  column("layer", cols_.layer);
  column("name", cols_.name);
  column("parent", cols_.parent);
  column("depth", cols_.depth);
  column("rank", cols_.rank);
  column("offset_ns", cols_.offset_ns);
  column("dur_ns", cols_.dur_ns);

  // The parts of trace.json's step object that every request of the batch shares.
  std::string& sh = rec_shared_json_;
  sh.clear();
  JsonObjectWriter shared(sh, JsonObjectWriter::FieldsOnly{});
  shared.Field("seq", static_cast<uint64_t>(group.seq));
  StringId kind = 0;
  for (uint32_t s : group.steps) {
    if (r_.steps[s].kind != 0) {
      kind = r_.steps[s].kind;
      break;
    }
  }
  if (kind == 0) {
    const auto it = truth_step_.find(group.seq);
    shared.Field("kind",
                 it == truth_step_.end() ? std::string_view() : truth_.steps[it->second].kind);
  } else {
    shared.FieldRaw("kind", EscapedName(kind));
  }
  shared.Field("start_ns", static_cast<int64_t>(group.start_ns))
      .Field("end_ns", static_cast<int64_t>(group.end_ns));
  shared.Key("batch");
  JsonArrayWriter batch(sh);
  for (const StringId q : group.requests) batch.ElementRaw(EscapedName(q));
  batch.Close();
  shared.Key("ranks");
  JsonArrayWriter ranks(sh);
  for (size_t k = 0; k < group.steps.size(); ++k) {
    const reconstruct::Step& step = r_.steps[group.steps[k]];
    const ProcessInfo& proc = trace_.processes[step.process];
    ranks.Next();
    JsonObjectWriter(sh)
        .Field("rank", static_cast<int64_t>(proc.rank))
        .FieldRaw("host", EscapedName(proc.host))
        .Field("pid", static_cast<int64_t>(proc.pid))
        .Field("ordinal", static_cast<uint64_t>(step.ordinal))
        // -1 when the record was cut before this rank's step.
        .Field("node", k < rec_.rank_root.size() ? static_cast<int64_t>(rec_.rank_root[k]) : -1)
        .Close();
  }
  ranks.Close();
  shared.FieldBool("truncated", rec_.truncated);
}

// Local ids of one view's labelled nodes in the current record, sorted; a resolved
// locator whose node is not in the record is counted (once per locator). The roots are
// the nodes that a locator with the root role names (a node named twice is a root when
// either locator says so); they are known only when every locator of the view has a role.
void SettingBuilder::LabelView(const format::ViewLabel& view, size_t truth_step, int which,
                               LocalView* local) {
  local->nodes.clear();
  local->roots.clear();
  local->roles = true;
  const uint32_t begin = view_begin_[2 * truth_step + which],
                 end = view_begin_[2 * truth_step + which + 1];
  for (uint32_t i = begin; i < end; ++i) {
    const format::NodeLocator::Role role = view.nodes[i - begin].role;
    local->roles = local->roles && role != format::NodeLocator::Role::kUnknown;
    if (locator_node_[i] == kNone) continue;  // unresolved: counted already
    const int32_t id = local_of_node_[locator_node_[i]];
    if (id < 0) {
      c_.Add(CounterId::kLocatorsOutsideStep);
      continue;
    }
    local->nodes.push_back(static_cast<uint32_t>(id));
    if (role == format::NodeLocator::Role::kRoot) local->roots.push_back(static_cast<uint32_t>(id));
  }
  for (std::vector<uint32_t>* list : {&local->nodes, &local->roots}) {
    std::sort(list->begin(), list->end());
    list->erase(std::unique(list->begin(), list->end()), list->end());
  }
}

void SettingBuilder::AppendView(std::string& out, bool anomalous, const LocalView* labels) const {
  static const std::vector<uint32_t> kEmpty;
  const std::vector<uint32_t>& nodes = labels != nullptr ? labels->nodes : kEmpty;
  JsonObjectWriter view(out);
  view.FieldBool("is_anomaly", anomalous).Key("affected_nodes");
  JsonArrayWriter(out).Integers(nodes).Close();
  // The roots, only where there are labelled nodes to take them from and the ground
  // truth tells their roles (docs/dataset-format.md): an absent list means "unknown".
  if (!nodes.empty() && labels->roles) {
    view.Key("root_nodes");
    JsonArrayWriter(out).Integers(labels->roots).Close();
  }
  view.Close();
}

void SettingBuilder::AppendRequestHeader(std::string& out, const RequestOut& r,
                                         bool annotation) const {
  // The object and its steps array stay open: the steps follow, each written when its
  // engine step is, and FinishRequest closes both.
  JsonObjectWriter header(out);
  header.Field("format", annotation ? "teller-dataset-annotation" : "teller-dataset-trace")
      .Field("version", 2)
      .Field("request", trace_.strings.Get(r.id));
  if (!annotation) header.Field("setting", setting_);
  auto optional = [&](const char* key, bool present, std::string_view value) {
    if (present) {
      header.Field(key, value);
    } else {
      header.FieldNull(key);
    }
  };
  if (r.truth == nullptr) {
    header.FieldNull("is_fault").FieldNull("fault_type").FieldNull("mechanism");
  } else {
    header.FieldBool("is_fault", r.truth->is_fault);
    optional("fault_type", r.truth->is_fault && !r.truth->fault_type.empty(), r.truth->fault_type);
    optional("mechanism", r.truth->is_fault && !r.truth->mechanism.empty(), r.truth->mechanism);
  }
  header.Key("steps");
  JsonArrayWriter steps(out);
}

Status SettingBuilder::WriteGroup(uint32_t g) {
  const Group& group = groups_[g];
  BuildRecord(group);
  FormatRecord(group);
  summary_.nodes += rec_.size() * group.requests.size();

  // Labels of the engine step, shared by the requests it names as affected.
  const auto truth_it = truth_step_.find(group.seq);
  const format::StepTruth* truth = nullptr;
  LocalView vertical, horizontal;
  std::string fault_type = "null", mechanism = "null";
  int64_t fault_id = -1;
  if (truth_it != truth_step_.end()) {
    truth = &truth_.steps[truth_it->second];
    truth_step_used_[truth_it->second] = 1;
    LabelView(truth->vertical, truth_it->second, 0, &vertical);
    LabelView(truth->horizontal, truth_it->second, 1, &horizontal);
    if (const auto f = fault_.find(truth->fault); f != fault_.end()) {
      fault_type.clear();
      AppendJsonString(fault_type, f->second->category);
      mechanism.clear();
      AppendJsonString(mechanism, f->second->mechanism);
      fault_id = f->second->id;
    }
    for (const std::string& q : truth->affected_requests) {
      const StringId id = trace_.strings.Find(q);
      if (id == StringPool::kNotFound ||
          std::find(group.requests.begin(), group.requests.end(), id) == group.requests.end()) {
        c_.Add(CounterId::kAffectedRequestsNotInStep);
      }
    }
    bool same = truth->requests.size() == group.requests.size();
    for (size_t i = 0; same && i < truth->requests.size(); ++i) {
      const StringId id = trace_.strings.Find(truth->requests[i]);
      same = id != StringPool::kNotFound &&
             std::find(group.requests.begin(), group.requests.end(), id) != group.requests.end();
    }
    if (!same) c_.Add(CounterId::kStepRequestsMismatch);
  }

  // Log rows of the record: lines aligned to any rank's step, once each, by time (lines
  // without a time first), then file order.
  std::vector<uint32_t> rows;
  for (uint32_t s : group.steps)
    rows.insert(rows.end(), r_.steps[s].logs.begin(), r_.steps[s].logs.end());
  const std::vector<int64_t>& ts = trace_.logs.ts_ns;
  std::sort(rows.begin(), rows.end(),
            [&ts](uint32_t a, uint32_t b) { return ts[a] != ts[b] ? ts[a] < ts[b] : a < b; });
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());

  for (const StringId q : group.requests) {
    std::string& jsonl = steps_sink_.buffer();
    RequestOut& out = requests_[request_index_.at(q)];
    const uint32_t k = out.steps++;
    bool anomalous = false;
    if (truth != nullptr) {
      const std::string_view id = trace_.strings.Get(q);
      for (const std::string& a : truth->affected_requests) anomalous |= a == id;
    }
    const bool v_anomalous = anomalous && truth->vertical.is_anomaly;
    const bool h_anomalous = anomalous && truth->horizontal.is_anomaly;
    const bool is_anomaly = v_anomalous || h_anomalous;
    const LocalView* v_nodes = anomalous ? &vertical : nullptr;
    const LocalView* h_nodes = anomalous ? &horizontal : nullptr;
    if (is_anomaly) {
      out.any_anomalous = true;
      ++summary_.anomalous_steps;
    }

    // trace.json step.
    // trace.json step: the shared fields, then the nodes (straight to the file when large).
    std::string& t = out.trace.buffer();
    if (k) t += ',';
    JsonObjectWriter trace_step(t);
    trace_step.Field("step", static_cast<uint64_t>(k)).RawFields(rec_shared_json_).Key("nodes");
    TELLER_RETURN_IF_ERROR(out.trace.AppendShared(rec_nodes_json_, &rec_nodes_gz_));
    trace_step.Close();

    // annotation.json step.
    std::string& a = out.annotation_steps;
    if (k) a += ',';
    JsonObjectWriter annotation(a);
    annotation.Field("step", static_cast<uint64_t>(k))
        .Field("seq", static_cast<uint64_t>(group.seq))
        .FieldBool("is_anomaly", is_anomaly)
        .FieldRaw("fault_type", is_anomaly ? std::string_view(fault_type) : "null")
        .Key("vertical");
    AppendView(a, v_anomalous, v_nodes);
    annotation.Key("horizontal");
    AppendView(a, h_anomalous, h_nodes);
    annotation
        .Field("explanation",
               is_anomaly ? std::string_view(truth->explanation) : std::string_view())
        .Close();

    // steps.jsonl line: labels, then the shared columns (straight to the file when large).
    JsonObjectWriter line(jsonl);
    line.FieldRaw("request", EscapedName(q))
        .Field("step", static_cast<uint64_t>(k))
        .Field("seq", static_cast<uint64_t>(group.seq))
        .FieldBool("is_anomaly", is_anomaly)
        .FieldRaw("fault_type", is_anomaly ? std::string_view(fault_type) : "null")
        .FieldRaw("mechanism", is_anomaly ? std::string_view(mechanism) : "null")
        // The engine step's time and fault window: what incident-disjoint splits group by
        // (every request of the batch carries them, affected or not).
        .Field("start_ns", static_cast<int64_t>(group.start_ns))
        .Field("end_ns", static_cast<int64_t>(group.end_ns))
        .Field("fault", fault_id)
        .Key("vertical");
    AppendView(jsonl, v_anomalous, v_nodes);
    line.Key("horizontal");
    AppendView(jsonl, h_anomalous, h_nodes);
    line.FieldsFollow();
    TELLER_RETURN_IF_ERROR(steps_sink_.Append(rec_columns_json_));
    line.Close();
    steps_sink_.buffer() += '\n';

    // log.txt: L_q(s) = lines naming q, or naming no request (docs/method.md §2 step 6).
    const LogTable& log_table = trace_.logs;
    for (uint32_t row : rows) {
      const bool names_request = log_table.request[row] != 0;
      if (names_request && log_table.request[row] != q && log_table.request[row] != out.log_id)
        continue;
      logs::TemplateId& id = template_of_row_[row];
      if (id == logs::kNoTemplate) id = miner_.Add(trace_.strings.Get(log_table.message[row]));
      DatasetLogLine line;
      line.ts_ns = log_table.ts_ns[row];
      line.step = k;
      line.template_id = id;
      line.names_request = names_request;
      line.level = log_table.level[row];
      line.message = trace_.strings.Get(log_table.message[row]);
      AppendDatasetLogLine(out.log, line);
      ++summary_.log_lines;
    }
    ++summary_.steps;

    if (g == out.last_group) {
      TELLER_RETURN_IF_ERROR(FinishRequest(out));
    } else {
      TELLER_RETURN_IF_ERROR(out.trace.MaybeFlush());
    }
  }
  for (uint32_t node : rec_.node) local_of_node_[node] = -1;
  return steps_sink_.MaybeFlush(size_t{32} << 20);
}

Status SettingBuilder::FinishRequest(RequestOut& out) {
  out.trace.buffer() += "]}\n";
  TELLER_RETURN_IF_ERROR(out.trace.Close());
  std::string annotation;
  annotation.reserve(out.annotation_steps.size() + 256);
  AppendRequestHeader(annotation, out, true);
  annotation += out.annotation_steps;
  annotation += "]}\n";
  TELLER_RETURN_IF_ERROR(WriteFileAtomic(out.dir + "/annotation.json", annotation));
  TELLER_RETURN_IF_ERROR(WriteFileAtomic(out.dir + "/log.txt", out.log));
  if (out.truth != nullptr) {
    if (out.truth->is_fault && !out.any_anomalous)
      c_.Add(CounterId::kFaultyRequestsWithoutAnomalousStep);
    if (!out.truth->is_fault && out.any_anomalous)
      c_.Add(CounterId::kHealthyRequestsWithAnomalousStep);
  }
  std::string().swap(out.annotation_steps);
  std::string().swap(out.log);
  return Status::Ok();
}

Result<SettingSummary> SettingBuilder::Run() {
  summary_.name = setting_;
  summary_.events = trace_.events.size();
  root_ = out_dir_ + "/" + dataset::RequestDirName(setting_);
  if (IsDirectory(root_) && DirectoryHasEntries(root_)) {
    return Status::Error(root_ +
                         " already exists and is not empty; remove it or build into another --out");
  }

  // 1. Locators on the event table as imported.
  auto t0 = std::chrono::steady_clock::now();
  TELLER_RETURN_IF_ERROR(ResolveTruth());
  // Rows' identity before reconstruction, to check that it keeps the table's order.
  std::vector<std::pair<EventType, StringId>> before;
  before.reserve(locator_rows_.size());
  for (int64_t row : locator_rows_) {
    before.emplace_back(row >= 0 ? trace_.events.type[row] : EventType::kMark,
                        row >= 0 ? trace_.events.name[row] : 0);
  }
  const size_t events_before = trace_.events.size();
  summary_.resolve_seconds = Since(t0);

  // 2. Reconstruction.
  t0 = std::chrono::steady_clock::now();
  r_ = reconstruct::Reconstruct(trace_);
  summary_.reconstruct_seconds = Since(t0);
  // Reconstruction may shift times (clock alignment) but must not reorder or add rows,
  // or every locator would point at the wrong event.
  bool same_rows = trace_.events.size() == events_before;
  for (size_t i = 0; same_rows && i < locator_rows_.size(); ++i) {
    const int64_t row = locator_rows_[i];
    same_rows = row < 0 || (trace_.events.type[row] == before[i].first &&
                            trace_.events.name[row] == before[i].second);
  }
  if (!same_rows) {
    return Status::Error(setting_ +
                         ": internal error: reconstruction changed the event table's rows, so "
                         "ground-truth locators no longer apply");
  }
  Progress(std::to_string(r_.nodes.size()) + " nodes, " + std::to_string(r_.steps.size()) +
           " STEP ranges, " + std::to_string(r_.request_order.size()) + " requests reconstructed");

  t0 = std::chrono::steady_clock::now();
  {
    std::vector<uint32_t> node_of_event(trace_.events.size(), kNone);
    for (uint32_t i = 0; i < r_.nodes.size(); ++i) node_of_event[r_.nodes.event[i]] = i;
    locator_node_.assign(locator_rows_.size(), kNone);
    for (size_t i = 0; i < locator_rows_.size(); ++i) {
      if (locator_rows_[i] >= 0) locator_node_[i] = node_of_event[locator_rows_[i]];
    }
  }
  local_of_node_.assign(r_.nodes.size(), -1);
  IndexTruth();
  BuildGroups();

  // Requests, with the truth that labels them and the group that ends them.
  requests_.resize(r_.request_order.size());
  for (uint32_t i = 0; i < r_.request_order.size(); ++i) {
    RequestOut& out = requests_[i];
    out.id = r_.request_order[i];
    request_index_.emplace(out.id, i);
    // Reconstruction aligns lines naming the API id of a vLLM chat request to it.
    const std::string_view id = trace_.strings.Get(out.id);
    const std::string_view external = ExternalRequestId(id);
    if (external.size() != id.size()) {
      const StringId log_id = trace_.strings.Find(external);
      if (log_id != StringPool::kNotFound) out.log_id = log_id;
    }
    const auto it = truth_request_.find(trace_.strings.Get(out.id));
    out.truth = it == truth_request_.end() ? nullptr : it->second;
    if (out.truth == nullptr) c_.Add(CounterId::kRequestsWithoutTruth);
  }
  for (const format::RequestTruth& q : truth_.requests) {
    const StringId id = trace_.strings.Find(q.id);
    if (id == StringPool::kNotFound || request_index_.find(id) == request_index_.end())
      c_.Add(CounterId::kTruthRequestsMissing);
  }
  for (uint32_t g = 0; g < groups_.size(); ++g) {
    for (StringId q : groups_[g].requests) requests_[request_index_.at(q)].last_group = g;
  }

  TELLER_RETURN_IF_ERROR(MakeDirs(root_));
  for (RequestOut& out : requests_) {
    out.dir = root_ + "/" + dataset::RequestDirName(trace_.strings.Get(out.id));
    TELLER_RETURN_IF_ERROR(MakeDirs(out.dir));
    out.trace =
        internal::FileSink(out.dir + "/trace.json.gz", internal::FileSink::Compression::kGzip);
    AppendRequestHeader(out.trace.buffer(), out, false);
    ++summary_.requests;
    if (out.truth != nullptr && out.truth->is_fault) {
      ++summary_.faulty;
      ++summary_.fault_mix[out.truth->fault_type.empty() ? std::string("unknown")
                                                         : out.truth->fault_type];
    }
  }
  steps_sink_ = internal::FileSink(root_ + "/steps.jsonl");
  template_of_row_.assign(trace_.logs.size(), logs::kNoTemplate);
  for (uint32_t g = 0; g < groups_.size(); ++g) TELLER_RETURN_IF_ERROR(WriteGroup(g));
  TELLER_RETURN_IF_ERROR(steps_sink_.Close());
  TELLER_RETURN_IF_ERROR(miner_.Save(root_ + "/" + std::string(kTemplatesFile)));
  summary_.templates = miner_.size();

  // Ground-truth steps that no trace step carries: their labels are lost.
  for (size_t i = 0; i < truth_.steps.size(); ++i) {
    if (truth_step_used_[i]) continue;
    c_.Add(CounterId::kTruthStepsMissing);
    if (!truth_.steps[i].affected_requests.empty()) c_.Add(CounterId::kTruthAnomalousStepsMissing);
  }

  std::string names;
  JsonObjectWriter names_file(names);
  names_file.Field("format", "teller-dataset-names").Field("version", 1).Key("names");
  JsonArrayWriter list(names);
  for (size_t i = 0; i < names_.size(); ++i) {
    if (i) list.NewLine();  // one name a line
    list.ElementRaw(EscapedName(names_[i]));
  }
  list.Close();
  names_file.Close();
  names += '\n';
  TELLER_RETURN_IF_ERROR(WriteFileAtomic(root_ + "/names.json", names));
  summary_.write_seconds = Since(t0);

  for (const CounterInfo& info : kCounterTable) {
    if (info.stage == CounterStage::kDataset)
      summary_.counters.emplace_back(info.name, c_.Get(info.id));
  }
  for (const auto& [name, value] : trace_.counters.items()) {
    if (value != 0) summary_.input_counters.emplace_back(name, value);
  }
  Progress("wrote " + std::to_string(summary_.requests) + " requests (" +
           std::to_string(summary_.faulty) + " faulty), " + std::to_string(summary_.steps) +
           " steps (" + std::to_string(summary_.anomalous_steps) + " anomalous), " +
           std::to_string(summary_.nodes) + " nodes");
  return std::move(summary_);
}

}  // namespace

uint64_t SettingSummary::Counter(std::string_view name) const {
  for (const auto& [key, value] : counters) {
    if (key == name) return value;
  }
  return 0;
}

Result<SettingSummary> BuildSetting(Trace& trace, const format::GroundTruth& truth,
                                    const std::string& setting, const std::string& out_dir,
                                    const BuildOptions& options) {
  return SettingBuilder(trace, truth, setting, out_dir, options).Run();
}

}  // namespace teller::dataset
