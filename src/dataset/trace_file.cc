#include "teller/dataset/trace_file.h"

#include <string_view>

#include "simdjson.h"
#include "teller/core/file_util.h"
#include "teller/core/gzip.h"
#include "teller/core/json_reader.h"

namespace teller::dataset {

std::string TraceFileIn(const std::string& request_dir) {
  for (const std::string_view name : {kTraceFileGz, kTraceFile}) {
    std::string path = request_dir + "/" + std::string(name);
    if (IsRegularFile(path)) return path;
  }
  return "";
}

Result<std::string> ReadTraceText(const std::string& path) {
  Result<simdjson::padded_string> bytes = LoadJsonFile(path);
  if (!bytes.ok()) return bytes.status();
  const std::string_view in(bytes->data(), bytes->size());
  const bool gz_name = path.size() >= 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
  if (!IsGzip(in) && !gz_name) return std::string(in);
  GunzipOptions options;
  TELLER_RETURN_IF_ERROR(GuardedGunzipOptions(in.size(), &options));
  std::string text;
  TELLER_RETURN_IF_ERROR(GunzipToString(in, path, options, &text));
  return text;
}

}  // namespace teller::dataset
