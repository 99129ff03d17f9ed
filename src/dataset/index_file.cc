#include "src/dataset/index_file.h"

#include <algorithm>

#include "simdjson.h"
#include "teller/core/json_reader.h"
#include "teller/core/json_writer.h"
#include "teller/dataset/stats.h"

namespace teller::dataset::internal {
namespace {

namespace od = simdjson::ondemand;
using simdjson::error_code;

void AppendCounts(std::string& out, const std::vector<std::pair<std::string, uint64_t>>& items) {
  JsonObjectWriter w(out);
  for (const auto& [name, count] : items) w.Field(name, count);
  w.Close();
}

}  // namespace

IndexEntry EntryFor(const SettingSummary& s) {
  IndexEntry e;
  e.name = s.name;
  e.requests = s.requests;
  e.faulty = s.faulty;
  e.steps = s.steps;
  e.nodes = s.nodes;
  e.fault_mix = s.fault_mix;
  std::string& out = e.json;
  JsonObjectWriter w(out, JsonDoubles::kShortest);
  w.Field("name", s.name)
      .Field("source", s.source)
      .Field("requests", s.requests)
      .Field("faulty", s.faulty)
      .Field("steps", s.steps)
      .Field("anomalous_steps", s.anomalous_steps)
      .Field("nodes", s.nodes)
      .Field("log_lines", s.log_lines)
      .Field("log_templates", s.templates)
      .Field("events", s.events);
  w.Key("fault_mix");
  AppendCounts(out, {s.fault_mix.begin(), s.fault_mix.end()});
  w.NewLine("  ").Key("counters");
  AppendCounts(out, s.counters);
  w.NewLine("  ").Key("input_counters");
  AppendCounts(out, s.input_counters);
  w.Key("seconds");
  JsonObjectWriter(out, JsonDoubles::kShortest)
      .Field("import", s.import_seconds)
      .Field("resolve", s.resolve_seconds)
      .Field("reconstruct", s.reconstruct_seconds)
      .Field("write", s.write_seconds)
      .Close();
  w.Close();
  return e;
}

std::string IndexJson(const std::vector<IndexEntry>& entries) {
  const DatasetStats stats = StatsFromEntries(entries);
  std::string out;
  JsonObjectWriter w(out, JsonDoubles::kShortest);
  w.Field("format", "teller-dataset-index")
      .Field("version", kDatasetFormatVersion)
      .NewLine()
      .Key("settings");
  JsonArrayWriter settings(out);
  for (const IndexEntry& entry : entries) settings.NewLine().ElementRaw(entry.json);
  settings.Close();
  w.NewLine().Key("total");
  JsonObjectWriter(out)
      .Field("requests", stats.total.requests)
      .Field("faulty", stats.total.faulty)
      .Field("steps", stats.total.steps)
      .Field("nodes", stats.total.nodes)
      .Close();
  w.NewLine().Key("fault_mix");
  JsonObjectWriter mix(out, JsonDoubles::kShortest);
  for (const auto& [category, fraction] : stats.fault_mix) mix.Field(category, fraction);
  mix.Close();
  w.Close();
  out += '\n';
  return out;
}

Result<std::vector<IndexEntry>> ReadIndexFile(const std::string& path, int* version) {
  Result<simdjson::padded_string> loaded = LoadJsonFile(path);
  if (!loaded.ok()) return loaded.status();
  const simdjson::padded_string& json = loaded.value();
  od::parser parser;
  od::document doc;
  if (const error_code e = parser.iterate(json).get(doc); e != simdjson::SUCCESS) {
    return Status::Error(path + ": not JSON (" + simdjson::error_message(e) + ")");
  }
  const JsonContext p(path, json, doc);
  od::object root;
  if (const error_code e = doc.get_object().get(root); e != simdjson::SUCCESS) {
    return p.Error(e, "expected a dataset index object");
  }
  std::vector<IndexEntry> entries;
  if (version != nullptr) *version = 1;
  bool have_format = false, have_settings = false;
  for (auto field_result : root) {
    od::field field;
    if (const error_code e = std::move(field_result).get(field); e != simdjson::SUCCESS) {
      return p.Error(e, "expected \"key\": value");
    }
    std::string_view key;
    if (const error_code e = field.unescaped_key().get(key); e != simdjson::SUCCESS)
      return p.Error(e, "bad key");
    if (key == "format") {
      std::string_view format;
      TELLER_RETURN_IF_ERROR(p.Get(field.value(), "format", &format));
      if (format != "teller-dataset-index") {
        return Status::Error(path + ": format is \"" + std::string(format) +
                             "\", expected \"teller-dataset-index\"");
      }
      have_format = true;
    } else if (key == "version") {
      int64_t v = 0;
      TELLER_RETURN_IF_ERROR(p.Get(field.value(), "version", &v));
      if (v > kDatasetFormatVersion) {
        return Status::Error(path + ": dataset format version " + std::to_string(v) +
                             ", newer than this teller reads (" +
                             std::to_string(kDatasetFormatVersion) +
                             "): use the teller that built it, or rebuild the dataset with "
                             "`teller dataset build`");
      }
      if (version != nullptr) *version = static_cast<int>(v);
    } else if (key == "settings") {
      have_settings = true;
      od::array settings;
      TELLER_RETURN_IF_ERROR(p.Get(field.value(), "settings", &settings));
      for (auto element : settings) {
        od::value item;
        if (const error_code e = element.get(item)) return p.Error(e, "malformed settings array");
        od::object obj;
        TELLER_RETURN_IF_ERROR(
            p.Get(item, "settings[" + std::to_string(entries.size()) + "]", &obj));
        IndexEntry entry;
        std::string_view raw;
        if (const error_code e = obj.raw_json().get(raw); e != simdjson::SUCCESS) {
          return p.Error(e, "settings[" + std::to_string(entries.size()) + "]: malformed object");
        }
        while (!raw.empty() && (raw.back() == ' ' || raw.back() == '\n' || raw.back() == '\r' ||
                                raw.back() == '\t')) {
          raw.remove_suffix(1);
        }
        entry.json.assign(raw);
        bool ignored = false;
        if (const error_code e = obj.reset().get(ignored); e != simdjson::SUCCESS) {
          return p.Error(e, "settings[" + std::to_string(entries.size()) + "]: malformed object");
        }
        const std::string where = "settings[" + std::to_string(entries.size()) + "]";
        int seen = 0;
        for (auto fr : obj) {
          od::field f;
          if (const error_code e = std::move(fr).get(f); e != simdjson::SUCCESS) {
            return p.Error(e, where + ": expected \"key\": value");
          }
          std::string_view k;
          if (const error_code e = f.unescaped_key().get(k); e != simdjson::SUCCESS)
            return p.Error(e, "bad key");
          uint64_t* number = k == "requests" ? &entry.requests
                             : k == "faulty" ? &entry.faulty
                             : k == "steps"  ? &entry.steps
                             : k == "nodes"  ? &entry.nodes
                                             : nullptr;
          if (number != nullptr) {
            TELLER_RETURN_IF_ERROR(p.Get(f.value(), where + "." + std::string(k), number));
            ++seen;
          } else if (k == "name") {
            TELLER_RETURN_IF_ERROR(p.Get(f.value(), where + ".name", &entry.name));
            ++seen;
          } else if (k == "fault_mix") {
            od::object mix;
            TELLER_RETURN_IF_ERROR(p.Get(f.value(), where + ".fault_mix", &mix));
            for (auto mr : mix) {
              od::field m;
              if (const error_code e = std::move(mr).get(m); e != simdjson::SUCCESS) {
                return p.Error(e, where + ".fault_mix: expected \"category\": count");
              }
              std::string_view category;
              if (const error_code e = m.unescaped_key().get(category); e != simdjson::SUCCESS) {
                return p.Error(e, "bad key");
              }
              uint64_t count = 0;
              TELLER_RETURN_IF_ERROR(
                  p.Get(m.value(), where + ".fault_mix." + std::string(category), &count));
              entry.fault_mix[std::string(category)] = count;
            }
          }
        }
        if (seen != 5) {
          return Status::Error(path + ": " + where +
                               ": missing one of the fields \"name\", \"requests\", \"faulty\", "
                               "\"steps\", \"nodes\"");
        }
        entries.push_back(std::move(entry));
      }
    }
  }
  if (!have_format)
    return Status::Error(path + ": missing field \"format\" (expected \"teller-dataset-index\")");
  if (!have_settings) return Status::Error(path + ": missing field \"settings\"");
  return entries;
}

}  // namespace teller::dataset::internal
