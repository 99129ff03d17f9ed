// Engine steps and step records (include/teller/dataset/step_record.h): the grouping and
// node order every dataset file's local ids follow.
#include "teller/dataset/step_record.h"

#include <algorithm>
#include <charconv>
#include <string>
#include <unordered_map>
#include <utility>

namespace teller::dataset {
namespace {

bool ParseU64(std::string_view text, uint64_t* out) {
  if (text.empty()) return false;
  const auto r = std::from_chars(text.data(), text.data() + text.size(), *out);
  return r.ec == std::errc() && r.ptr == text.data() + text.size();
}

}  // namespace

std::vector<EngineStep> GroupEngineSteps(const Trace& trace, const reconstruct::Reconstruction& r,
                                         GroupCounts* counts) {
  GroupCounts local;
  GroupCounts& c = counts != nullptr ? *counts : local;
  const EventTable& ev = trace.events;
  std::vector<EngineStep> groups;
  std::unordered_map<uint64_t, uint32_t> group_of_seq;
  std::string seq_text;
  for (uint32_t s = 0; s < r.steps.size(); ++s) {
    const reconstruct::Step& step = r.steps[s];
    seq_text.clear();
    reconstruct::ParseStepMessage(trace.strings.Get(ev.name[r.nodes.event[step.node]]), nullptr,
                                  nullptr, &seq_text);
    uint64_t seq = 0;
    bool has_seq = ParseU64(seq_text, &seq);
    if (!has_seq) {
      // Engines' own step markers and the demo carry no seq: the per-process ordinal is
      // how the horizontal view pairs steps across ranks (Reconstruction::CommAcrossRanks).
      seq = step.ordinal;
      ++c.steps_without_seq;
    }
    auto [it, fresh] = group_of_seq.try_emplace(seq, static_cast<uint32_t>(groups.size()));
    if (fresh) {
      groups.emplace_back();
      groups.back().seq = seq;
      groups.back().has_seq = has_seq;
    }
    EngineStep& group = groups[it->second];
    for (uint32_t other : group.steps) {
      if (r.steps[other].process == step.process) {
        ++c.duplicate_seq;  // kept: both subtrees go into the record
        break;
      }
    }
    group.steps.push_back(s);
  }
  for (EngineStep& group : groups) {
    std::stable_sort(group.steps.begin(), group.steps.end(), [&](uint32_t a, uint32_t b) {
      const uint32_t pa = r.steps[a].process, pb = r.steps[b].process;
      const int32_t ra = trace.processes[pa].rank, rb = trace.processes[pb].rank;
      return ra != rb ? ra < rb : pa < pb;
    });
    group.start_ns = INT64_MAX;
    group.end_ns = INT64_MIN;
    for (uint32_t s : group.steps) {
      const reconstruct::Step& step = r.steps[s];
      group.start_ns = std::min(group.start_ns, r.nodes.start_ns[step.node]);
      group.end_ns = std::max(group.end_ns, r.nodes.end_ns[step.node]);
      for (StringId q : step.requests) {
        if (std::find(group.requests.begin(), group.requests.end(), q) == group.requests.end()) {
          group.requests.push_back(q);
        }
      }
    }
  }
  std::sort(groups.begin(), groups.end(), [](const EngineStep& a, const EngineStep& b) {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.seq < b.seq;
  });
  return groups;
}

void BuildStepRecord(const Trace& trace, const reconstruct::Reconstruction& r,
                     const EngineStep& step, size_t max_nodes, StepRecord* record) {
  const reconstruct::Nodes& n = r.nodes;
  StepRecord& rec = *record;
  rec.node.clear();
  rec.parent.clear();
  rec.depth.clear();
  rec.rank.clear();
  rec.rank_root.clear();
  rec.truncated = false;
  std::vector<std::pair<uint32_t, int32_t>> todo;  // (node, local parent)
  for (uint32_t s : step.steps) {
    const uint32_t root = r.steps[s].node;
    const int32_t rank = trace.processes[r.steps[s].process].rank;
    if (rec.node.size() >= max_nodes) {
      rec.truncated = true;  // cut before this rank's STEP node: it has no local id
      break;
    }
    rec.rank_root.push_back(static_cast<uint32_t>(rec.node.size()));
    todo.assign(1, {root, -1});
    while (!todo.empty()) {
      if (rec.node.size() >= max_nodes) {
        rec.truncated = true;
        break;
      }
      const auto [node, parent] = todo.back();
      todo.pop_back();
      const int32_t local = static_cast<int32_t>(rec.node.size());
      rec.node.push_back(node);
      rec.parent.push_back(parent);
      rec.depth.push_back(static_cast<uint16_t>(n.depth[node] - n.depth[root]));
      rec.rank.push_back(rank);
      // Pushed last-child-first so that the first child is visited first.
      for (uint32_t c = n.child_begin[node + 1]; c > n.child_begin[node]; --c) {
        todo.emplace_back(n.child_index[c - 1], local);
      }
    }
    if (rec.truncated) break;
  }
}

void FillStepColumns(const Trace& trace, const reconstruct::Reconstruction& r,
                     const EngineStep& step, const StepRecord& record,
                     const std::function<uint32_t(StringId)>& name_id,
                     format::DatasetColumns* out) {
  const reconstruct::Nodes& n = r.nodes;
  const EventTable& ev = trace.events;
  const size_t size = record.size();
  *out = format::DatasetColumns{};
  out->type.reserve(size);
  out->layer.reserve(size);
  out->name.reserve(size);
  out->offset_ns.reserve(size);
  out->dur_ns.reserve(size);
  for (size_t i = 0; i < size; ++i) {
    const uint32_t node = record.node[i];
    const uint32_t e = n.event[node];
    out->type.push_back(static_cast<uint8_t>(format::TypeTagOf(n.layer[node], ev.type[e])));
    out->layer.push_back(static_cast<uint8_t>(n.layer[node]));
    out->name.push_back(name_id(ev.name[e]));
    out->offset_ns.push_back(n.start_ns[node] - step.start_ns);
    out->dur_ns.push_back(n.end_ns[node] - n.start_ns[node]);
  }
  out->parent = record.parent;
  out->depth = record.depth;
  out->rank = record.rank;
}

}  // namespace teller::dataset
