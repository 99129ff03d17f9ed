// Reading a labelled dataset for evaluation (include/teller/eval/dataset.h).
//
// steps.jsonl holds one line per dataset step with the step record's columns repeated for
// every request of the batch; the columns are parsed once per (setting, seq) and skipped
// (simdjson's on-demand parser does not materialise what is not asked for) on the other
// lines, so loading costs about one pass over the distinct records.
#include "teller/eval/dataset.h"

#include <dirent.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string_view>
#include <unordered_map>

#include "simdjson.h"
#include "teller/core/file_util.h"
#include "teller/core/json_reader.h"
#include "teller/core/request_id.h"
#include "teller/core/string_pool.h"
#include "teller/core/trace.h"
#include "teller/dataset/dataset_export.h"
#include "teller/dataset/log_text.h"
#include "teller/dataset/trace_file.h"
#include "teller/format/dataset_node_reader.h"
#include "teller/logs/log_evidence.h"
#include "teller/logs/signatures.h"
#include "teller/logs/template_miner.h"

namespace teller::eval {
namespace {

namespace od = simdjson::ondemand;
using simdjson::error_code;

std::string Join(const std::string& dir, const std::string& name) {
  return !dir.empty() && dir.back() == '/' ? dir + name : dir + "/" + name;
}

std::string Where(const std::string& path, size_t line) {
  return path + ":" + std::to_string(line);
}

template <typename T>
error_code ReadIntArray(od::value v, std::vector<T>* out) {
  out->clear();
  od::array a;
  if (error_code e = v.get_array().get(a)) return e;
  for (auto item : a) {
    int64_t x = 0;
    if (error_code e = item.get_int64().get(x)) return e;
    out->push_back(static_cast<T>(x));
  }
  return simdjson::SUCCESS;
}

// A string or null ("" for null).
error_code ReadOptionalString(od::value v, std::string* out) {
  out->clear();
  bool is_null = false;
  if (error_code e = v.is_null().get(is_null)) return e;
  if (is_null) return simdjson::SUCCESS;
  std::string_view s;
  if (error_code e = v.get_string().get(s)) return e;
  out->assign(s);
  return simdjson::SUCCESS;
}

error_code ReadViewLabel(od::value v, ViewLabel* out) {
  od::object o;
  if (error_code e = v.get_object().get(o)) return e;
  if (error_code e = o["is_anomaly"].get_bool().get(out->is_anomaly)) return e;
  od::value nodes;
  if (error_code e = o["affected_nodes"].get(nodes)) return e;
  if (error_code e = ReadIntArray(nodes, &out->nodes)) return e;
  std::sort(out->nodes.begin(), out->nodes.end());
  out->nodes.erase(std::unique(out->nodes.begin(), out->nodes.end()), out->nodes.end());
  // Optional: datasets built from ground truth before version 3 have no roles.
  od::value roots;
  const error_code found = o["root_nodes"].get(roots);
  out->roots.clear();
  out->has_roots = found == simdjson::SUCCESS;
  if (found == simdjson::NO_SUCH_FIELD) return simdjson::SUCCESS;
  if (found != simdjson::SUCCESS) return found;
  if (error_code e = ReadIntArray(roots, &out->roots)) return e;
  std::sort(out->roots.begin(), out->roots.end());
  out->roots.erase(std::unique(out->roots.begin(), out->roots.end()), out->roots.end());
  return simdjson::SUCCESS;
}

struct SettingEntry {
  std::string name, source;
};

Result<std::vector<SettingEntry>> ReadIndex(const std::string& dir) {
  const std::string path = Join(dir, "index.json");
  std::vector<SettingEntry> out;
  if (!IsRegularFile(path)) {
    // A dataset without an index (e.g. copied in parts): its settings are the
    // directories holding steps.jsonl.
    if (DIR* d = opendir(dir.c_str())) {
      while (dirent* e = readdir(d)) {
        if (e->d_name[0] == '.') continue;
        if (IsRegularFile(Join(Join(dir, e->d_name), "steps.jsonl")))
          out.push_back({e->d_name, ""});
      }
      closedir(d);
    }
    std::sort(out.begin(), out.end(),
              [](const SettingEntry& a, const SettingEntry& b) { return a.name < b.name; });
    if (out.empty()) {
      return Status::Error(dir +
                           ": not a dataset (no index.json and no <setting>/steps.jsonl); build "
                           "one with `teller dataset build`");
    }
    return out;
  }
  auto text = LoadJsonFile(path);
  if (!text.ok()) return text.status();
  od::parser parser;
  od::document doc;
  const std::string_view json(text.value().data(), text.value().size());
  const JsonContext ctx(path, json, doc);
  if (error_code e = parser.iterate(text.value()).get(doc)) return ctx.Error(e, "not JSON");
  // Formats 1 and 2 differ only in the trace files, which evaluation does not read.
  int64_t version = 1;
  if (doc["version"].get_int64().get(version) == simdjson::SUCCESS &&
      version > dataset::kDatasetFormatVersion) {
    return Status::Error(path + ": dataset format version " + std::to_string(version) +
                         ", newer than this teller reads (" +
                         std::to_string(dataset::kDatasetFormatVersion) +
                         "): use the teller that built it, or rebuild the dataset with "
                         "`teller dataset build`");
  }
  od::array settings;
  TELLER_RETURN_IF_ERROR(ctx.Field(doc, "settings", &settings));
  size_t k = 0;
  for (auto item : settings) {
    const std::string label = "settings[" + std::to_string(k) + "]";
    od::value v;
    if (error_code e = item.get(v)) return ctx.Error(e, label);
    od::object o;
    TELLER_RETURN_IF_ERROR(ctx.Get(v, label, &o));
    SettingEntry entry;
    TELLER_RETURN_IF_ERROR(ctx.Field(o, "name", &entry.name, label));
    std::string_view source;
    if (o["source"].get_string().get(source) == simdjson::SUCCESS) entry.source = source;
    out.push_back(std::move(entry));
    ++k;
  }
  return out;
}

// The ground truth's profile names the engine configuration a setting simulates; read
// just that field (the file is large).
std::string ProfileOf(const std::string& source) {
  if (source.empty()) return "";
  const std::string path = Join(source, "ground_truth.json");
  if (!IsRegularFile(path)) return "";
  auto text = LoadJsonFile(path);
  if (!text.ok()) return "";
  od::parser parser;
  od::document doc;
  if (parser.iterate(text.value()).get(doc) != simdjson::SUCCESS) return "";
  std::string_view profile;
  if (doc["profile"].get_string().get(profile) != simdjson::SUCCESS) return "";
  return std::string(profile);
}

Status ReadNames(const std::string& path, std::vector<std::string>* names) {
  auto text = LoadJsonFile(path);
  if (!text.ok()) return text.status();
  od::parser parser;
  od::document doc;
  const JsonContext ctx(path, std::string_view(text.value().data(), text.value().size()), doc);
  if (error_code e = parser.iterate(text.value()).get(doc)) return ctx.Error(e, "not JSON");
  od::array a;
  TELLER_RETURN_IF_ERROR(ctx.Field(doc, "names", &a));
  for (auto item : a) {
    const std::string label = "names[" + std::to_string(names->size()) + "]";
    od::value v;
    if (error_code e = item.get(v)) return ctx.Error(e, label);
    std::string_view s;
    TELLER_RETURN_IF_ERROR(ctx.Get(v, label, &s));
    names->emplace_back(s);
  }
  return Status::Ok();
}

Status ReadSteps(const std::string& path, uint32_t setting_index, const LoadOptions& options,
                 Setting* setting, std::vector<Unit>* units) {
  auto loaded = LoadJsonFile(path);
  if (!loaded.ok()) return loaded.status();
  const simdjson::padded_string& text = loaded.value();
  od::parser parser;
  std::unordered_map<uint64_t, uint32_t> record_of_seq;
  const char* const begin = text.data();
  const char* const end = begin + text.size();
  size_t line = 0;
  for (const char* p = begin; p < end;) {
    const char* nl = static_cast<const char*>(memchr(p, '\n', static_cast<size_t>(end - p)));
    const char* line_end = nl != nullptr ? nl : end;
    ++line;
    const std::string_view row(p, static_cast<size_t>(line_end - p));
    p = line_end + 1;
    if (row.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    // The rest of the file and simdjson's padding follow the line: enough for the parser.
    const size_t capacity = static_cast<size_t>(end - row.data()) + simdjson::SIMDJSON_PADDING;
    od::document doc;
    const std::string at = Where(path, line);
    const JsonContext ctx(at, row, doc);
    auto fail = [&](error_code e, const char* what) { return ctx.Error(e, what); };
    if (error_code e = parser.iterate(row.data(), row.size(), capacity).get(doc))
      return fail(e, "not JSON");
    Unit u;
    u.setting = setting_index;
    int64_t step = 0, seq = 0;
    TELLER_RETURN_IF_ERROR(ctx.Field(doc, "request", &u.request));
    TELLER_RETURN_IF_ERROR(ctx.Field(doc, "step", &step));
    TELLER_RETURN_IF_ERROR(ctx.Field(doc, "seq", &seq));
    u.step = static_cast<uint32_t>(step);
    u.seq = static_cast<uint64_t>(seq);
    TELLER_RETURN_IF_ERROR(ctx.Field(doc, "is_anomaly", &u.is_anomaly));
    od::value v;
    TELLER_RETURN_IF_ERROR(ctx.Field(doc, "fault_type", &v));
    if (error_code e = ReadOptionalString(v, &u.fault_type))
      return fail(e, "\"fault_type\" is neither a string nor null");
    // Optional (datasets written before steps.jsonl carried them lack these fields).
    if (doc["mechanism"].get(v) == simdjson::SUCCESS) {
      if (error_code e = ReadOptionalString(v, &u.mechanism))
        return fail(e, "\"mechanism\" is neither a string nor null");
    }
    {
      int64_t start = 0, stop = 0, fault = -1;
      const error_code es = doc["start_ns"].get_int64().get(start);
      const error_code ee = doc["end_ns"].get_int64().get(stop);
      const error_code ef = doc["fault"].get_int64().get(fault);
      if (es == simdjson::SUCCESS && ee == simdjson::SUCCESS && ef == simdjson::SUCCESS) {
        u.start_ns = start;
        u.end_ns = stop;
        u.fault = fault;
        u.has_incident = true;
      } else if (es != simdjson::NO_SUCH_FIELD || ee != simdjson::NO_SUCH_FIELD ||
                 ef != simdjson::NO_SUCH_FIELD) {
        return fail(es != simdjson::SUCCESS   ? es
                    : ee != simdjson::SUCCESS ? ee
                                              : ef,
                    "\"start_ns\", \"end_ns\" and \"fault\" must be whole numbers, all three "
                    "or none");
      }
    }
    TELLER_RETURN_IF_ERROR(ctx.Field(doc, "vertical", &v));
    if (error_code e = ReadViewLabel(v, &u.views[0])) return fail(e, "bad \"vertical\" labels");
    TELLER_RETURN_IF_ERROR(ctx.Field(doc, "horizontal", &v));
    if (error_code e = ReadViewLabel(v, &u.views[1])) return fail(e, "bad \"horizontal\" labels");
    auto [it, fresh] =
        record_of_seq.try_emplace(u.seq, static_cast<uint32_t>(setting->records.size()));
    u.record = it->second;
    if (fresh) {
      setting->records.emplace_back();
      StepColumns& c = setting->records.back();
      c.seq = u.seq;
      if (options.columns) {
        format::DatasetColumnsWanted wanted;
        wanted.depth = false;  // the evaluation's features do not use it
        TELLER_RETURN_IF_ERROR(
            format::ReadDatasetColumns(ctx, doc, setting->names.size(), &c, wanted));
      }
    }
    units->push_back(std::move(u));
  }
  return Status::Ok();
}

// Reference explanations, from <setting>/<request>/annotation.json.
Status ReadExplanations(const std::string& setting_dir, std::vector<Unit>& units, size_t first) {
  std::unordered_map<std::string, std::vector<size_t>> by_request;
  for (size_t i = first; i < units.size(); ++i) {
    if (units[i].is_anomaly) by_request[units[i].request].push_back(i);
  }
  od::parser parser;
  for (const auto& [request, idx] : by_request) {
    const std::string path =
        Join(Join(setting_dir, dataset::RequestDirName(request)), "annotation.json");
    auto text = LoadJsonFile(path);
    if (!text.ok()) return text.status();
    od::document doc;
    const JsonContext ctx(path, std::string_view(text.value().data(), text.value().size()), doc);
    if (error_code e = parser.iterate(text.value()).get(doc)) return ctx.Error(e, "not JSON");
    od::array steps;
    TELLER_RETURN_IF_ERROR(ctx.Field(doc, "steps", &steps));
    std::unordered_map<uint32_t, std::string> text_of_step;
    for (auto item : steps) {
      const std::string label = "steps[" + std::to_string(text_of_step.size()) + "]";
      od::value v;
      if (error_code e = item.get(v)) return ctx.Error(e, label);
      od::object o;
      int64_t step = 0;
      std::string explanation;
      TELLER_RETURN_IF_ERROR(ctx.Get(v, label, &o));
      TELLER_RETURN_IF_ERROR(ctx.Field(o, "step", &step, label));
      TELLER_RETURN_IF_ERROR(ctx.Field(o, "explanation", &explanation, label));
      text_of_step.emplace(static_cast<uint32_t>(step), std::move(explanation));
    }
    for (size_t i : idx) {
      const auto it = text_of_step.find(units[i].step);
      if (it != text_of_step.end()) units[i].explanation = it->second;
    }
  }
  return Status::Ok();
}

// Whether `message` names request `id` as a whole word (not inside a longer id).
bool MentionsId(std::string_view message, std::string_view id) {
  if (id.empty()) return false;
  auto id_char = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
  };
  for (size_t at = message.find(id); at != std::string_view::npos; at = message.find(id, at + 1)) {
    const size_t end = at + id.size();
    if ((at == 0 || !id_char(message[at - 1])) && (end == message.size() || !id_char(message[end])))
      return true;
  }
  return false;
}

// The log lines of every unit, from <setting>/<request>/log.txt (docs/dataset-format.md,
// "log.txt"): counts by level, templates, signature hits and the request's lifecycle times
// (logs::RequestLifecycles, the parser diagnose uses, over the lines naming the request).
Status ReadLogs(const std::string& setting_dir, Setting* setting, std::vector<Unit>& units,
                size_t first) {
  const std::string templates_path = Join(setting_dir, std::string(dataset::kTemplatesFile));
  const bool has_templates = IsRegularFile(templates_path);
  logs::TemplateMiner miner;  // a version 1 dataset's templates, mined here
  if (has_templates) {
    auto loaded = logs::TemplateMiner::Load(templates_path);
    if (!loaded.ok()) return loaded.status();
    setting->templates = static_cast<uint32_t>(loaded->size());
    for (uint32_t t = 0; t < setting->templates; ++t)
      setting->template_text.push_back(loaded->Text(t));
  }
  setting->templates_mined = !has_templates;
  const std::shared_ptr<const logs::SignatureSet> signatures = logs::SignatureSet::BuiltIn();

  // Units of each request by step, requests in order of first appearance.
  std::vector<std::string_view> order;
  std::unordered_map<std::string_view, std::vector<std::pair<uint32_t, size_t>>> of_request;
  for (size_t i = first; i < units.size(); ++i) {
    auto [it, fresh] = of_request.try_emplace(units[i].request);
    if (fresh) order.push_back(units[i].request);
    it->second.emplace_back(units[i].step, i);
  }
  for (const std::string_view request : order) {
    auto& steps = of_request[request];
    std::sort(steps.begin(), steps.end());
    const std::string path = Join(Join(setting_dir, dataset::RequestDirName(request)), "log.txt");
    if (!IsRegularFile(path)) {
      if (has_templates)
        return Status::Error(path + ": missing (the setting has " +
                             std::string(dataset::kTemplatesFile) + ", so every request has one)");
      ++setting->log_files_missing;
      continue;
    }
    auto text = LoadJsonFile(path);  // a plain read into a padded buffer
    if (!text.ok()) return text.status();
    const std::string_view external = ExternalRequestId(request);
    // The request's lines naming it, for its lifecycle.
    StringPool strings;
    LogTable table;
    const StringId request_id = strings.Intern(request);
    std::unordered_map<size_t, std::unordered_map<uint32_t, uint32_t>> counts;  // unit -> id
    const std::string_view all(text.value().data(), text.value().size());
    size_t line_no = 0;
    for (size_t p = 0; p < all.size();) {
      size_t nl = all.find('\n', p);
      if (nl == std::string_view::npos) nl = all.size();
      const std::string_view row = all.substr(p, nl - p);
      p = nl + 1;
      ++line_no;
      if (row.empty()) continue;
      dataset::DatasetLogLine line;
      if (Status st = dataset::ParseDatasetLogLine(row, &line); !st.ok())
        return Status::Error(Where(path, line_no) + ": " + st.message());
      const auto unit_it =
          std::lower_bound(steps.begin(), steps.end(), std::make_pair(line.step, size_t{0}));
      if (unit_it == steps.end() || unit_it->first != line.step)
        return Status::Error(Where(path, line_no) + ": step=" + std::to_string(line.step) +
                             ", a step steps.jsonl does not list for request " +
                             std::string(request));
      uint32_t id = line.template_id;
      if (has_templates) {
        if (id == dataset::DatasetLogLine::kNoTemplate)
          return Status::Error(Where(path, line_no) + ": no template id, though the setting has " +
                               std::string(dataset::kTemplatesFile) + "; rebuild the dataset");
        if (id >= setting->templates)
          return Status::Error(Where(path, line_no) + ": template " + std::to_string(id) +
                               " is not in " + templates_path + " (" +
                               std::to_string(setting->templates) + " templates)");
      } else {
        id = miner.Add(line.message);
      }
      UnitLogs& u = units[unit_it->second].logs;
      ++u.lines;
      ++u.by_level[static_cast<int>(line.level) < kLogLevels ? static_cast<int>(line.level) : 0];
      if (++counts[unit_it->second][id] == 1 ||
          std::find(u.sequence.begin(), u.sequence.end(), std::make_pair(line.level, id)) ==
              u.sequence.end()) {
        u.sequence.emplace_back(line.level, id);
      }
      if (const int sig = signatures->Match(line.message); sig != logs::SignatureSet::kNoSignature)
        ++u.signatures[static_cast<int>(signatures->at(static_cast<size_t>(sig)).category)];
      // A version 1 line does not say whether it names the request: it does when the
      // message holds the id (or vLLM's API form of it).
      const bool names =
          line.has_scope ? line.names_request
                         : MentionsId(line.message, request) || MentionsId(line.message, external);
      if (names) {
        table.ts_ns.push_back(line.ts_ns);
        table.request.push_back(request_id);
        table.level.push_back(line.level);
        table.process.push_back(LogTable::kNoProcess);
        table.file.push_back(0);
        table.line.push_back(static_cast<uint32_t>(line_no));
        table.message.push_back(strings.Intern(line.message));
      }
      ++setting->log_lines;
    }
    for (auto& [unit, by_id] : counts) {
      auto& t = units[unit].logs.templates;
      t.assign(by_id.begin(), by_id.end());
      std::sort(t.begin(), t.end());
    }
    const std::vector<logs::RequestLifecycle> lifecycles = logs::RequestLifecycles(table, strings);
    if (lifecycles.empty()) continue;
    const logs::RequestLifecycle& life = lifecycles.front();
    auto known = [](int64_t v) { return v == LogTable::kNoTime ? UnitLogs::kUnknown : v; };
    const int64_t queue = known(logs::IntervalNs(life, logs::Interval::kQueue));
    const int64_t ttft = known(logs::IntervalNs(life, logs::Interval::kFirstToken));
    const int64_t e2e = known(logs::IntervalNs(life, logs::Interval::kEndToEnd));
    for (const auto& [step, unit] : steps) {
      UnitLogs& u = units[unit].logs;
      u.queue_ns = queue;
      u.first_token_ns = ttft;
      u.end_to_end_ns = e2e;
      if (life.arrival_ns != LogTable::kNoTime && units[unit].has_incident &&
          units[unit].start_ns >= life.arrival_ns)
        u.age_ns = units[unit].start_ns - life.arrival_ns;
    }
  }
  if (!has_templates) {
    setting->templates = static_cast<uint32_t>(miner.size());
    // Texts at the end: a mined template may have gained wildcards since its first line.
    for (uint32_t t = 0; t < setting->templates; ++t)
      setting->template_text.push_back(miner.Text(t));
  }
  return Status::Ok();
}

}  // namespace

const char* ViewName(View view) { return view == View::kVertical ? "vertical" : "horizontal"; }

Result<Dataset> LoadDataset(const std::string& dir, const LoadOptions& options) {
  if (!IsDirectory(dir))
    return Status::Error(dir +
                         ": not a directory (expected a dataset from `teller dataset build`)");
  auto entries = ReadIndex(dir);
  if (!entries.ok()) return entries.status();
  Dataset ds;
  ds.root = dir;
  for (const SettingEntry& entry : entries.value()) {
    Setting s;
    s.name = entry.name;
    s.source = entry.source;
    s.engine = ProfileOf(entry.source);
    if (s.engine.empty()) s.engine = s.name;
    const std::string setting_dir = Join(dir, dataset::RequestDirName(s.name));
    if (options.columns)
      TELLER_RETURN_IF_ERROR(ReadNames(Join(setting_dir, "names.json"), &s.names));
    const size_t first = ds.units.size();
    TELLER_RETURN_IF_ERROR(ReadSteps(Join(setting_dir, "steps.jsonl"),
                                     static_cast<uint32_t>(ds.settings.size()), options, &s,
                                     &ds.units));
    if (options.explanations)
      TELLER_RETURN_IF_ERROR(ReadExplanations(setting_dir, ds.units, first));
    if (options.logs) TELLER_RETURN_IF_ERROR(ReadLogs(setting_dir, &s, ds.units, first));
    ds.settings.push_back(std::move(s));
  }
  if (ds.units.empty()) return Status::Error(dir + ": the dataset has no steps");
  return ds;
}

}  // namespace teller::eval
