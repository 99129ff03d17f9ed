// `teller dataset stats`: Table 1 of the paper (requests, faulty requests, steps, nodes
// per setting; fault-category mix) from index.json, or recounted from the files.
#include "teller/dataset/stats.h"

#include <dirent.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "simdjson.h"
#include "src/dataset/index_file.h"
#include "teller/core/file_util.h"
#include "teller/core/json_reader.h"
#include "teller/core/json_writer.h"
#include "teller/core/vocabulary.h"
#include "teller/dataset/trace_file.h"
#include "teller/format/ground_truth.h"

namespace teller::dataset {
namespace {

namespace od = simdjson::ondemand;
using simdjson::error_code;

std::vector<std::string> SubDirectories(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] == '.') continue;
      if (IsDirectory(dir + "/" + e->d_name)) names.emplace_back(e->d_name);
    }
    closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

Status JsonError(const std::string& path, od::document& doc, std::string_view json, error_code e,
                 const std::string& expected) {
  return JsonContext(path, json, doc).Error(e, "expected " + expected);
}

// annotation.json: is_fault, fault_type and the number of steps.
Status CountAnnotation(const std::string& path, od::parser& parser, SettingStats* s) {
  simdjson::padded_string json;
  if (const error_code e = simdjson::padded_string::load(path).get(json); e != simdjson::SUCCESS) {
    return Status::Error("cannot read " + path + ": " + simdjson::error_message(e));
  }
  od::document doc;
  if (const error_code e = parser.iterate(json).get(doc); e != simdjson::SUCCESS) {
    return Status::Error(path + ": not JSON (" + simdjson::error_message(e) + ")");
  }
  od::object root;
  if (const error_code e = doc.get_object().get(root); e != simdjson::SUCCESS) {
    return JsonError(path, doc, json, e, "an annotation object");
  }
  bool is_fault = false, have_steps = false;
  std::string fault_type;
  uint64_t steps = 0;
  for (auto field_result : root) {
    od::field field;
    if (const error_code e = std::move(field_result).get(field); e != simdjson::SUCCESS) {
      return JsonError(path, doc, json, e, "\"key\": value");
    }
    std::string_view key;
    if (const error_code e = field.unescaped_key().get(key); e != simdjson::SUCCESS) {
      return JsonError(path, doc, json, e, "a key");
    }
    od::value& v = field.value();
    if (key == "is_fault") {
      bool b = false;
      if (v.get_bool().get(b) == simdjson::SUCCESS) is_fault = b;  // null: unlabelled
    } else if (key == "fault_type") {
      std::string_view t;
      if (v.get_string().get(t) == simdjson::SUCCESS) fault_type.assign(t);
    } else if (key == "steps") {
      od::array array;
      if (const error_code e = v.get_array().get(array); e != simdjson::SUCCESS) {
        return JsonError(path, doc, json, e, "steps to be an array");
      }
      size_t n = 0;
      if (const error_code e = array.count_elements().get(n); e != simdjson::SUCCESS) {
        return JsonError(path, doc, json, e, "a well-formed steps array");
      }
      steps = n;
      have_steps = true;
    }
  }
  if (!have_steps) return Status::Error(path + ": missing field \"steps\"");
  ++s->requests;
  s->steps += steps;
  if (is_fault) {
    ++s->faulty;
    ++s->fault_counts[fault_type.empty() ? std::string("unknown") : fault_type];
  }
  return Status::Ok();
}

// trace.json.gz (or a plain trace.json): the number of nodes over all steps.
Status CountNodes(const std::string& path, od::parser& parser, SettingStats* s) {
  Result<std::string> text = ReadTraceText(path);
  if (!text.ok()) return text.status();
  // Parsed in place: ReadTraceText leaves simdjson's padding in the spare capacity.
  const std::string& json = text.value();
  od::document doc;
  if (const error_code e = parser.iterate(json.data(), json.size(), json.capacity()).get(doc);
      e != simdjson::SUCCESS) {
    return Status::Error(path + ": not JSON (" + simdjson::error_message(e) + ")");
  }
  od::value steps;
  if (const error_code e = doc.find_field_unordered("steps").get(steps); e != simdjson::SUCCESS) {
    return JsonError(path, doc, json, e, "a trace object with \"steps\"");
  }
  od::array array;
  if (const error_code e = steps.get_array().get(array); e != simdjson::SUCCESS) {
    return JsonError(path, doc, json, e, "steps to be an array");
  }
  for (auto element : array) {
    od::object step;
    if (const error_code e = element.get_object().get(step); e != simdjson::SUCCESS) {
      return JsonError(path, doc, json, e, "a step object");
    }
    od::value nodes;
    if (const error_code e = step.find_field_unordered("nodes").get(nodes);
        e != simdjson::SUCCESS) {
      return JsonError(path, doc, json, e, "a step with \"nodes\"");
    }
    od::array list;
    size_t n = 0;
    if (const error_code e = nodes.get_array().get(list); e != simdjson::SUCCESS) {
      return JsonError(path, doc, json, e, "nodes to be an array");
    }
    if (const error_code e = list.count_elements().get(n); e != simdjson::SUCCESS) {
      return JsonError(path, doc, json, e, "a well-formed nodes array");
    }
    s->nodes += n;
  }
  return Status::Ok();
}

Result<DatasetStats> Recount(const std::string& dir) {
  std::vector<internal::IndexEntry> entries;
  od::parser parser;
  for (const std::string& setting : SubDirectories(dir)) {
    const std::string setting_dir = dir + "/" + setting;
    SettingStats s;
    s.name = setting;
    bool any = false;
    for (const std::string& request : SubDirectories(setting_dir)) {
      const std::string rdir = setting_dir + "/" + request;
      if (!IsRegularFile(rdir + "/annotation.json")) continue;
      any = true;
      TELLER_RETURN_IF_ERROR(CountAnnotation(rdir + "/annotation.json", parser, &s));
      const std::string trace = TraceFileIn(rdir);
      if (trace.empty()) {
        return Status::Error(rdir + ": annotation.json without trace.json.gz (or trace.json)");
      }
      TELLER_RETURN_IF_ERROR(CountNodes(trace, parser, &s));
    }
    if (!any) continue;
    internal::IndexEntry e;
    e.name = s.name;
    e.requests = s.requests;
    e.faulty = s.faulty;
    e.steps = s.steps;
    e.nodes = s.nodes;
    e.fault_mix = s.fault_counts;
    entries.push_back(std::move(e));
  }
  if (entries.empty()) {
    return Status::Error(
        dir +
        ": not a Teller dataset: no index.json and no <setting>/<request>/annotation.json "
        "(build one with `teller dataset build` or `teller dataset export`)");
  }
  return internal::StatsFromEntries(entries);
}

}  // namespace

namespace internal {

DatasetStats StatsFromEntries(const std::vector<IndexEntry>& entries) {
  DatasetStats stats;
  stats.total.name = "total";
  for (const IndexEntry& e : entries) {
    SettingStats s;
    s.name = e.name;
    s.requests = e.requests;
    s.faulty = e.faulty;
    s.steps = e.steps;
    s.nodes = e.nodes;
    s.fault_counts = e.fault_mix;
    stats.total.requests += s.requests;
    stats.total.faulty += s.faulty;
    stats.total.steps += s.steps;
    stats.total.nodes += s.nodes;
    for (const auto& [category, count] : s.fault_counts)
      stats.total.fault_counts[category] += count;
    stats.settings.push_back(std::move(s));
  }
  std::sort(stats.settings.begin(), stats.settings.end(),
            [](const SettingStats& a, const SettingStats& b) { return a.name < b.name; });
  for (const FaultCategory c : kAllFaultCategories)
    stats.fault_mix[std::string(FaultCategoryName(c))] = 0.0;
  for (const auto& [category, count] : stats.total.fault_counts) {
    stats.fault_mix[category] =
        stats.total.faulty == 0
            ? 0.0
            : static_cast<double>(count) / static_cast<double>(stats.total.faulty);
  }
  return stats;
}

}  // namespace internal

Result<DatasetStats> ReadDatasetStats(const std::string& dir) {
  if (!IsDirectory(dir)) {
    return Status::Error(
        dir + ": " + (IsRegularFile(dir) ? std::string("not a directory") : std::strerror(ENOENT)) +
        " (expected a dataset directory from `teller dataset build`)");
  }
  const std::string index = dir + "/" + internal::kIndexFile;
  if (IsRegularFile(index)) {
    auto entries = internal::ReadIndexFile(index);
    if (!entries.ok()) return entries.status();
    DatasetStats stats = internal::StatsFromEntries(entries.value());
    stats.from_index = true;
    return stats;
  }
  return Recount(dir);
}

std::string DatasetStatsJson(const DatasetStats& stats) {
  std::string out;
  auto row = [&out](const SettingStats& s, bool named) {
    JsonObjectWriter w(out);
    if (named) w.Field("name", s.name);
    w.Field("requests", s.requests).Field("faulty", s.faulty).Field("steps", s.steps);
    w.Field("nodes", s.nodes).Close();
  };
  JsonObjectWriter doc(out);
  doc.Key("settings");
  JsonArrayWriter settings(out);
  for (const SettingStats& s : stats.settings) {
    settings.Next();
    row(s, true);
  }
  settings.Close();
  doc.Key("total");
  row(stats.total, false);
  doc.Key("fault_mix");
  JsonObjectWriter mix(out, JsonDoubles::kShortest);
  for (const auto& [category, fraction] : stats.fault_mix) mix.Field(category, fraction);
  mix.Close();
  doc.Close();
  out += '\n';
  return out;
}

std::string DatasetStatsTable(const DatasetStats& stats) {
  size_t width = 7;  // "setting"
  for (const auto& s : stats.settings) width = std::max(width, s.name.size());
  std::string out;
  char line[512];
  auto row = [&](const SettingStats& s) {
    const double pct =
        s.requests == 0 ? 0.0
                        : 100.0 * static_cast<double>(s.faulty) / static_cast<double>(s.requests);
    std::snprintf(
        line, sizeof(line), "%-*s %9llu %8llu %6.1f%% %9llu %12llu\n", static_cast<int>(width),
        s.name.c_str(), static_cast<unsigned long long>(s.requests),
        static_cast<unsigned long long>(s.faulty), pct, static_cast<unsigned long long>(s.steps),
        static_cast<unsigned long long>(s.nodes));
    out += line;
  };
  std::snprintf(line, sizeof(line), "%-*s %9s %8s %7s %9s %12s\n", static_cast<int>(width),
                "setting", "requests", "faulty", "", "steps", "nodes");
  out += line;
  for (const auto& s : stats.settings) row(s);
  out += std::string(width + 51, '-') + "\n";
  row(stats.total);
  out += "\nfault mix (share of faulty requests):\n";
  for (const auto& [category, fraction] : stats.fault_mix) {
    std::snprintf(line, sizeof(line), "  %-20s %5.1f%%\n", category.c_str(), 100.0 * fraction);
    out += line;
  }
  if (!stats.from_index) out += "(recounted from the request files: no index.json)\n";
  return out;
}

}  // namespace teller::dataset
