#include "teller/dataset/dataset_export.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "teller/core/file_util.h"
#include "teller/core/json_writer.h"
#include "teller/core/request_id.h"
#include "teller/dataset/log_text.h"
#include "teller/format/dataset_node.h"
#include "teller/logs/template_miner.h"

namespace teller::dataset {
using reconstruct::Nodes;
using reconstruct::Reconstruction;
using reconstruct::Step;
namespace {

std::string Str(const Trace& t, StringId id) { return std::string(t.strings.Get(id)); }

// The step's subtree in depth-first order with parent indices local to the step.
void AppendStepNodes(const Trace& t, const Reconstruction& r, uint32_t root, size_t limit,
                     std::string& out, size_t* count, bool* truncated) {
  const Nodes& n = r.nodes;
  const EventTable& ev = t.events;
  std::vector<std::pair<uint32_t, int64_t>> todo = {{root, -1}};  // (node, local parent)
  std::string name_json;
  JsonArrayWriter list(out);
  int64_t local = 0;
  while (!todo.empty()) {
    if (static_cast<size_t>(local) >= limit) {
      *truncated = true;
      break;
    }
    const auto [node, parent] = todo.back();
    todo.pop_back();
    const uint32_t e = n.event[node];
    list.Next();
    name_json.clear();
    AppendJsonString(name_json, t.strings.Get(ev.name[e]));
    format::DatasetNode dn =
        format::DatasetNodeOf(t, e, n.layer[node], n.start_ns[node], n.end_ns[node], name_json);
    dn.id = local;
    dn.parent = parent;
    dn.depth = static_cast<uint64_t>(n.depth[node] - n.depth[root]);
    format::AppendDatasetNode(out, dn);
    const int64_t me = local++;
    for (uint32_t c = n.child_begin[node + 1]; c > n.child_begin[node]; --c) {
      todo.emplace_back(n.child_index[c - 1], me);
    }
  }
  list.Close();
  *count = static_cast<size_t>(local);
}

}  // namespace

std::string RequestDirName(std::string_view request) {
  std::string out;
  for (unsigned char c : request) {
    if (std::isalnum(c) || c == '.' || c == '_' || c == '-') {
      out += static_cast<char>(c);
    } else {
      char buf[4];
      std::snprintf(buf, sizeof(buf), "%%%02X", c);
      out += buf;
    }
  }
  if (out.empty() || out == "." || out == "..") out = "%" + out;  // never a path element
  return out;
}

Result<ExportSummary> ExportDataset(const Trace& trace, const Reconstruction& r,
                                    const std::string& out_dir, const ExportOptions& options) {
  ExportSummary summary;
  const std::string root = out_dir + "/" + RequestDirName(options.setting);
  TELLER_RETURN_IF_ERROR(MakeDirs(root));
  // Log templates as `dataset build` mines them (build_setting.cc): one miner for the
  // export, each row added once, when first written.
  logs::TemplateMiner miner;
  std::vector<logs::TemplateId> template_of_row(trace.logs.size(), logs::kNoTemplate);
  for (const StringId rid : r.request_order) {
    const std::string_view external = ExternalRequestId(trace.strings.Get(rid));
    const auto& step_ids = r.request_steps.at(rid);
    const std::string dir = root + "/" + RequestDirName(trace.strings.Get(rid));
    TELLER_RETURN_IF_ERROR(MakeDirs(dir));
    // trace.json and annotation.json: a header, then one object per step in each.
    std::string trace_json, log_text, annotation;
    JsonObjectWriter tw(trace_json);
    tw.Field("format", "teller-dataset-trace")
        .Field("version", 1)
        .Field("request", trace.strings.Get(rid))
        .Field("setting", options.setting)
        .FieldNull("is_fault")
        .FieldNull("fault_type")
        .Key("steps");
    JsonArrayWriter steps(trace_json);
    JsonObjectWriter aw(annotation);
    aw.Field("format", "teller-dataset-annotation")
        .Field("version", 1)
        .Field("request", trace.strings.Get(rid))
        .FieldNull("is_fault")
        .FieldNull("fault_type")
        .Key("steps");
    JsonArrayWriter ann_steps(annotation);
    for (size_t k = 0; k < step_ids.size(); ++k) {
      const Step& step = r.steps[step_ids[k]];
      const ProcessInfo& proc = trace.processes[step.process];
      std::string batch;
      JsonArrayWriter batch_list(batch);
      for (const StringId q : step.requests) batch_list.Element(trace.strings.Get(q));
      batch_list.Close();
      std::string nodes;
      size_t count = 0;
      bool truncated = false;
      AppendStepNodes(trace, r, step.node, options.max_nodes_per_step, nodes, &count, &truncated);
      summary.nodes += count;
      if (truncated) ++summary.truncated_steps;
      steps.Next();
      JsonObjectWriter sw(trace_json);
      sw.Field("step", static_cast<uint64_t>(k))
          .Field("pid", proc.pid)
          .Field("host", trace.strings.Get(proc.host))
          .Field("rank", static_cast<int64_t>(proc.rank))
          .Field("ordinal", static_cast<uint64_t>(step.ordinal))
          .Field("kind", trace.strings.Get(step.kind))
          .Field("start_ns", r.nodes.start_ns[step.node])
          .Field("end_ns", r.nodes.end_ns[step.node])
          .FieldRaw("batch", batch)
          .FieldBool("truncated", truncated)
          .FieldRaw("nodes", nodes);
      sw.Close();
      ann_steps.Next();
      JsonObjectWriter(annotation)
          .Field("step", static_cast<uint64_t>(k))
          .FieldNull("is_anomaly")
          .FieldNull("fault_type")
          .FieldRaw("affected_nodes", "[]")
          .Field("explanation", "")
          .Close();
      // L_q(s): the step's lines naming the request, or naming none (docs/method.md §2
      // step 6).
      for (uint32_t row : step.logs) {
        const StringId named = trace.logs.request[row];
        if (named != 0 && named != rid && ExternalRequestId(trace.strings.Get(named)) != external)
          continue;
        logs::TemplateId& id = template_of_row[row];
        if (id == logs::kNoTemplate) id = miner.Add(trace.strings.Get(trace.logs.message[row]));
        DatasetLogLine line;
        line.ts_ns = trace.logs.ts_ns[row];
        line.step = static_cast<uint32_t>(k);
        line.template_id = id;
        line.names_request = named != 0;
        line.level = trace.logs.level[row];
        line.message = trace.strings.Get(trace.logs.message[row]);
        AppendDatasetLogLine(log_text, line);
        ++summary.log_lines;
      }
      ++summary.steps;
    }
    steps.Close();
    tw.Close();
    ann_steps.Close();
    aw.Close();
    TELLER_RETURN_IF_ERROR(WriteFileAtomic(dir + "/trace.json", trace_json + "\n"));
    TELLER_RETURN_IF_ERROR(WriteFileAtomic(dir + "/log.txt", log_text));
    TELLER_RETURN_IF_ERROR(WriteFileAtomic(dir + "/annotation.json", annotation + "\n"));
    ++summary.requests;
  }
  TELLER_RETURN_IF_ERROR(miner.Save(root + "/" + std::string(kTemplatesFile)));
  return summary;
}

}  // namespace teller::dataset
