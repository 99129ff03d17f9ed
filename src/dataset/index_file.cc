#include "src/dataset/index_file.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "simdjson.h"
#include "src/dataset/json_out.h"
#include "teller/core/json_writer.h"
#include "teller/dataset/stats.h"

namespace teller::dataset::internal {
namespace {

namespace od = simdjson::ondemand;
using simdjson::error_code;

void AppendCounts(std::string& out, const std::vector<std::pair<std::string, uint64_t>>& items) {
  out += '{';
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += ',';
    AppendJsonString(out, items[i].first);
    out += ':';
    AppendUint(out, items[i].second);
  }
  out += '}';
}

// Parse state for messages: the file and where the iterator stopped.
struct IndexParse {
  const std::string& path;
  const simdjson::padded_string& json;
  od::document& doc;

  Status Error(error_code e, const std::string& what) { return JsonErrorAt(path, doc, json, e, what); }
};

}  // namespace

Status JsonErrorAt(const std::string& path, od::document& doc, const simdjson::padded_string& json,
                   error_code e, const std::string& what) {
  const char* p = nullptr;
  size_t offset = json.size();
  if (doc.current_location().get(p) == simdjson::SUCCESS && p >= json.data() &&
      p <= json.data() + json.size()) {
    offset = static_cast<size_t>(p - json.data());
  }
  return Status::Error(path + ": byte " + std::to_string(offset) + ": " + what + " (" +
                       simdjson::error_message(e) + ")");
}

IndexEntry EntryFor(const SettingSummary& s) {
  IndexEntry e;
  e.name = s.name;
  e.requests = s.requests;
  e.faulty = s.faulty;
  e.steps = s.steps;
  e.nodes = s.nodes;
  e.fault_mix = s.fault_mix;
  std::string& out = e.json;
  out += "{\"name\":";
  AppendJsonString(out, s.name);
  out += ",\"source\":";
  AppendJsonString(out, s.source);
  out += ",\"requests\":";
  AppendUint(out, s.requests);
  out += ",\"faulty\":";
  AppendUint(out, s.faulty);
  out += ",\"steps\":";
  AppendUint(out, s.steps);
  out += ",\"anomalous_steps\":";
  AppendUint(out, s.anomalous_steps);
  out += ",\"nodes\":";
  AppendUint(out, s.nodes);
  out += ",\"log_lines\":";
  AppendUint(out, s.log_lines);
  out += ",\"events\":";
  AppendUint(out, s.events);
  out += ",\"fault_mix\":";
  AppendCounts(out, {s.fault_mix.begin(), s.fault_mix.end()});
  out += ",\n  \"counters\":";
  AppendCounts(out, s.counters);
  out += ",\n  \"input_counters\":";
  AppendCounts(out, s.input_counters);
  out += ",\"seconds\":{\"import\":";
  AppendDouble(out, s.import_seconds);
  out += ",\"resolve\":";
  AppendDouble(out, s.resolve_seconds);
  out += ",\"reconstruct\":";
  AppendDouble(out, s.reconstruct_seconds);
  out += ",\"write\":";
  AppendDouble(out, s.write_seconds);
  out += "}}";
  return e;
}

std::string IndexJson(const std::vector<IndexEntry>& entries) {
  const DatasetStats stats = StatsFromEntries(entries);
  std::string out = "{\"format\":\"teller-dataset-index\",\"version\":1,\n\"settings\":[\n";
  for (size_t i = 0; i < entries.size(); ++i) {
    if (i) out += ",\n";
    out += entries[i].json;
  }
  out += "],\n\"total\":{\"requests\":";
  AppendUint(out, stats.total.requests);
  out += ",\"faulty\":";
  AppendUint(out, stats.total.faulty);
  out += ",\"steps\":";
  AppendUint(out, stats.total.steps);
  out += ",\"nodes\":";
  AppendUint(out, stats.total.nodes);
  out += "},\n\"fault_mix\":{";
  bool first = true;
  for (const auto& [category, fraction] : stats.fault_mix) {
    if (!first) out += ',';
    first = false;
    AppendJsonString(out, category);
    out += ':';
    AppendDouble(out, fraction);
  }
  out += "}}\n";
  return out;
}

Result<std::vector<IndexEntry>> ReadIndexFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::Error("cannot open " + path + ": " + std::strerror(errno));
  std::stringstream text;
  text << in.rdbuf();
  const simdjson::padded_string json(text.str());
  od::parser parser;
  od::document doc;
  if (const error_code e = parser.iterate(json).get(doc); e != simdjson::SUCCESS) {
    return Status::Error(path + ": not JSON (" + simdjson::error_message(e) + ")");
  }
  IndexParse p{path, json, doc};
  od::object root;
  if (const error_code e = doc.get_object().get(root); e != simdjson::SUCCESS) {
    return p.Error(e, "expected a dataset index object");
  }
  std::vector<IndexEntry> entries;
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
      if (const error_code e = field.value().get_string().get(format); e != simdjson::SUCCESS) {
        return p.Error(e, "format: expected a string");
      }
      if (format != "teller-dataset-index") {
        return Status::Error(path + ": format is \"" + std::string(format) +
                             "\", expected \"teller-dataset-index\"");
      }
      have_format = true;
    } else if (key == "settings") {
      have_settings = true;
      od::array settings;
      if (const error_code e = field.value().get_array().get(settings); e != simdjson::SUCCESS) {
        return p.Error(e, "settings: expected an array");
      }
      for (auto element : settings) {
        od::object obj;
        if (const error_code e = element.get_object().get(obj); e != simdjson::SUCCESS) {
          return p.Error(e, "settings[" + std::to_string(entries.size()) + "]: expected an object");
        }
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
            if (const error_code e = f.value().get_uint64().get(*number); e != simdjson::SUCCESS) {
              return p.Error(e, where + "." + std::string(k) + ": expected an unsigned integer");
            }
            ++seen;
          } else if (k == "name") {
            std::string_view name;
            if (const error_code e = f.value().get_string().get(name); e != simdjson::SUCCESS) {
              return p.Error(e, where + ".name: expected a string");
            }
            entry.name.assign(name);
            ++seen;
          } else if (k == "fault_mix") {
            od::object mix;
            if (const error_code e = f.value().get_object().get(mix); e != simdjson::SUCCESS) {
              return p.Error(e, where + ".fault_mix: expected an object");
            }
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
              if (const error_code e = m.value().get_uint64().get(count); e != simdjson::SUCCESS) {
                return p.Error(e, where + ".fault_mix: expected a count");
              }
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
