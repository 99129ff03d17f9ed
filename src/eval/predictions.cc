// The predictions file (include/teller/eval/predictions.h, docs/eval.md).
#include "teller/eval/predictions.h"

#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "simdjson.h"
#include "teller/core/json_reader.h"
#include "teller/core/json_writer.h"

namespace teller::eval {
namespace {

namespace od = simdjson::ondemand;
using simdjson::error_code;

std::string UnitKey(std::string_view setting, std::string_view request, uint64_t seq) {
  std::string key;
  key.reserve(setting.size() + request.size() + 24);
  key += setting;
  key += '\0';
  key += request;
  key += '\0';
  key += std::to_string(seq);
  return key;
}

}  // namespace

Result<Predictions> ReadPredictions(const std::string& path, const Dataset& dataset,
                                    PredictionFileStats* stats) {
  PredictionFileStats local;
  PredictionFileStats& st = stats != nullptr ? *stats : local;
  Result<simdjson::padded_string> loaded = LoadJsonFile(path);
  if (!loaded.ok()) return loaded.status();
  const simdjson::padded_string& text = loaded.value();
  std::unordered_map<std::string, uint32_t> unit_of;
  unit_of.reserve(dataset.units.size());
  for (uint32_t i = 0; i < dataset.units.size(); ++i) {
    const Unit& u = dataset.units[i];
    unit_of.emplace(UnitKey(dataset.settings[u.setting].name, u.request, u.seq), i);
  }
  Predictions out;
  out.units.resize(dataset.units.size());
  od::parser parser;
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
    ++st.lines;
    const std::string at = path + ":" + std::to_string(line);
    auto fail = [&](error_code e, const std::string& what) {
      return Status::Error(at + ": " + what + " (" + simdjson::error_message(e) + ")");
    };
    const size_t capacity = static_cast<size_t>(end - row.data()) + simdjson::SIMDJSON_PADDING;
    od::document doc;
    if (error_code e = parser.iterate(row.data(), row.size(), capacity).get(doc))
      return fail(e, "not JSON");
    const JsonContext ctx(at, text, doc);
    std::string setting_copy, request_copy;
    std::string_view view;
    int64_t seq = 0;
    TELLER_RETURN_IF_ERROR(ctx.Field(doc, "setting", &setting_copy));
    TELLER_RETURN_IF_ERROR(ctx.Field(doc, "request", &request_copy));
    TELLER_RETURN_IF_ERROR(ctx.Field(doc, "seq", &seq));
    TELLER_RETURN_IF_ERROR(ctx.Field(doc, "view", &view));
    View v;
    if (view == "vertical") {
      v = View::kVertical;
    } else if (view == "horizontal") {
      v = View::kHorizontal;
    } else {
      return Status::Error(at + ": \"view\" is \"" + std::string(view) +
                           "\"; expected \"vertical\" or \"horizontal\"");
    }
    Prediction pred;
    pred.present = true;
    TELLER_RETURN_IF_ERROR(ctx.Field(doc, "abnormal", &pred.abnormal));
    TELLER_RETURN_IF_ERROR(ctx.Field(doc, "score", &pred.score));
    bool present = false;
    TELLER_RETURN_IF_ERROR(ctx.OptionalField(doc, "fault_type", &pred.fault_type, &present));
    {
      od::array a;
      TELLER_RETURN_IF_ERROR(ctx.OptionalField(doc, "nodes", &a, &present));
      if (present) {
        for (auto item : a) {
          int64_t id = 0;
          if (error_code e = item.get_int64().get(id))
            return fail(e, "\"nodes\" holds a non-integer");
          if (id < 0 || id > UINT32_MAX) {
            return Status::Error(at + ": node id " + std::to_string(id) +
                                 " is not a local node id");
          }
          pred.nodes.push_back(static_cast<uint32_t>(id));
        }
      }
    }
    od::value value;
    if (doc["explanation"].get(value) == simdjson::SUCCESS) {
      bool is_null = false;
      if (value.is_null().get(is_null) == simdjson::SUCCESS && !is_null) {
        std::string_view s;
        if (error_code e = value.get_string().get(s))
          return fail(e, "\"explanation\" is not a string");
        pred.explanation = s;
      }
    }
    const auto it = unit_of.find(UnitKey(setting_copy, request_copy, static_cast<uint64_t>(seq)));
    if (it == unit_of.end()) {
      ++st.unknown_units;
      continue;
    }
    Prediction& slot = out.at(it->second, v);
    if (slot.present) {
      return Status::Error(at + ": a second prediction for setting \"" + setting_copy +
                           "\", request \"" + request_copy + "\", seq " + std::to_string(seq) +
                           ", view " + std::string(view));
    }
    slot = std::move(pred);
  }
  return out;
}

std::string PredictionsToJsonl(const Dataset& dataset, const Predictions& predictions,
                               const std::vector<uint32_t>& units) {
  std::string out;
  for (uint32_t i : units) {
    const Unit& u = dataset.units[i];
    for (View v : kViews) {
      const Prediction& p = predictions.at(i, v);
      if (!p.present) continue;
      JsonObjectWriter w(out);
      w.Field("setting", dataset.settings[u.setting].name).Field("request", u.request);
      w.Field("seq", u.seq).Field("view", ViewName(v)).FieldBool("abnormal", p.abnormal);
      w.Field("score", p.score);
      if (p.fault_type.empty()) {
        w.FieldRaw("fault_type", "null");
      } else {
        w.Field("fault_type", p.fault_type);
      }
      std::string nodes = "[";
      for (size_t k = 0; k < p.nodes.size(); ++k) {
        if (k) nodes += ',';
        nodes += std::to_string(p.nodes[k]);
      }
      nodes += ']';
      w.FieldRaw("nodes", nodes);
      if (!p.explanation.empty()) w.Field("explanation", p.explanation);
      w.Close();
      out += '\n';
    }
  }
  return out;
}

}  // namespace teller::eval
