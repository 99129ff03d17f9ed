#include "src/ingest/run_manifest.h"

#include "simdjson.h"
#include "teller/core/json_reader.h"

namespace teller::ingest {

Status ReadRunManifest(const std::string& path, Trace::RunInfo* run) {
  auto text = LoadJsonFile(path);
  if (!text.ok()) return text.status();
  simdjson::ondemand::parser parser;
  simdjson::ondemand::document doc;
  if (const auto e = parser.iterate(text.value()).get(doc)) {
    return Status::Error(path + ": not JSON (" + simdjson::error_message(e) + ")");
  }
  JsonContext ctx(path, std::string_view(text.value().data(), text.value().size()), doc);
  simdjson::ondemand::object root;
  if (const auto e = doc.get_object().get(root)) return ctx.Error(e, "expected an object");
  std::string_view format;
  bool present = false;
  TELLER_RETURN_IF_ERROR(ctx.OptionalField(root, "format", &format, &present));
  if (present && format != "teller-run-manifest") {
    return ctx.Error("\"format\" is \"" + std::string(format) + "\", not \"teller-run-manifest\"");
  }
  Trace::RunInfo r;
  r.known = true;
  TELLER_RETURN_IF_ERROR(ctx.OptionalField(root, "finished", &r.finished, &present));
  int64_t v = 0;
  TELLER_RETURN_IF_ERROR(ctx.OptionalField(root, "exit_code", &v, &present));
  if (present) r.exit_code = static_cast<int>(v);
  TELLER_RETURN_IF_ERROR(ctx.OptionalField(root, "signal", &v, &present));
  if (present) r.signal = static_cast<int>(v);
  TELLER_RETURN_IF_ERROR(ctx.OptionalField(root, "pid", &v, &present));
  if (present) r.pid = v;
  TELLER_RETURN_IF_ERROR(ctx.OptionalField(root, "end_realtime_ns", &v, &present));
  if (present) r.end_ns = v;
  simdjson::ondemand::array command;
  TELLER_RETURN_IF_ERROR(ctx.OptionalField(root, "command", &command, &present));
  if (present) {
    for (auto item : command) {
      simdjson::ondemand::value arg;
      if (const auto e = item.get(arg)) return ctx.Error(e, "\"command\"");
      std::string_view s;
      TELLER_RETURN_IF_ERROR(ctx.Get(arg, "command[]", &s));
      if (!r.command.empty()) r.command += ' ';
      r.command += s;
    }
  }
  *run = std::move(r);
  return Status::Ok();
}

}  // namespace teller::ingest
