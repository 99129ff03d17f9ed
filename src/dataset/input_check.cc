// Whole-input checks of `teller dataset build` (src/dataset/input_check.h).
#include "src/dataset/input_check.h"

#include <sys/stat.h>

#include <set>
#include <string_view>
#include <utility>

#include "simdjson.h"
#include "teller/core/file_util.h"
#include "teller/core/json_reader.h"

namespace teller::dataset::internal {
namespace {

namespace od = simdjson::ondemand;

std::string Join(const std::string& dir, const std::string& name) {
  return !dir.empty() && dir.back() == '/' ? dir + name : dir + "/" + name;
}

// The raw reader's damage counters (src/ingest): any of them means part of a file was
// not read.
constexpr const char* kDamageCounters[] = {"raw.damaged_regions", "raw.dropped_bytes",
                                           "raw.unclean_end"};

}  // namespace

Status CheckManifestFiles(const std::string& dir) {
  const std::string path = Join(dir, "manifest.json");
  if (!IsRegularFile(path)) return Status::Ok();
  auto text = LoadJsonFile(path);
  if (!text.ok()) return text.status();
  od::parser parser;
  od::document doc;
  const JsonContext ctx(path, std::string_view(text.value().data(), text.value().size()), doc);
  if (simdjson::error_code e = parser.iterate(text.value()).get(doc))
    return ctx.Error(e, "not JSON");
  od::array files;
  bool present = false;
  TELLER_RETURN_IF_ERROR(ctx.OptionalField(doc, "files", &files, &present));
  if (!present) return Status::Ok();
  size_t k = 0;
  for (auto item : files) {
    const std::string label = "files[" + std::to_string(k++) + "]";
    od::value v;
    if (simdjson::error_code e = item.get(v)) return ctx.Error(e, label);
    od::object o;
    TELLER_RETURN_IF_ERROR(ctx.Get(v, label, &o));
    std::string name;
    int64_t bytes = 0;
    TELLER_RETURN_IF_ERROR(ctx.Field(o, "path", &name, label));
    TELLER_RETURN_IF_ERROR(ctx.Field(o, "bytes", &bytes, label));
    const std::string file = Join(dir, name);
    struct stat st;
    if (stat(file.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
      return Status::Error(file + ": missing (manifest.json lists it with " +
                           std::to_string(bytes) +
                           " bytes); the input is incomplete, so its labels would not describe "
                           "the trace");
    }
    if (static_cast<int64_t>(st.st_size) != bytes) {
      return Status::Error(file + ": " + std::to_string(st.st_size) + " bytes, but manifest.json " +
                           "records " + std::to_string(bytes) +
                           " (cut short or changed after recording); the input is damaged");
    }
  }
  return Status::Ok();
}

Status CheckImported(const std::string& dir, const format::GroundTruth& truth, const Trace& trace) {
  std::set<std::pair<std::string_view, int64_t>> imported;
  for (const ProcessInfo& p : trace.processes) imported.emplace(trace.strings.Get(p.host), p.pid);
  for (const format::ProcessTruth& p : truth.processes) {
    if (imported.count({p.host, p.pid}) == 0) {
      return Status::Error(dir + ": no raw trace of rank " + std::to_string(p.rank) + " (" +
                           p.host + ", pid " + std::to_string(p.pid) + ", file " + p.host + "." +
                           std::to_string(p.pid) +
                           ".*.tlr), which the ground truth lists; the input is incomplete");
    }
  }
  std::string damage;
  for (const char* name : kDamageCounters) {
    const uint64_t n = trace.counters.Get(name);
    if (n > 0) damage += (damage.empty() ? "" : ", ") + std::string(name) + "=" + std::to_string(n);
  }
  if (!damage.empty()) {
    return Status::Error(dir + ": the raw traces are damaged (" + damage +
                         "): part of a file could not be read, so the labels would not "
                         "describe the trace");
  }
  return Status::Ok();
}

}  // namespace teller::dataset::internal
