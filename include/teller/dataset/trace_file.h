// A request's trace file in a dataset (docs/dataset-format.md, "trace.json.gz"): where it
// is and its JSON text. `teller dataset build` writes trace.json.gz (format 2 datasets);
// `dataset export` and format 1 datasets have a plain trace.json. Every reader of the
// file goes through here, so that each takes both.
#ifndef TELLER_DATASET_TRACE_FILE_H_
#define TELLER_DATASET_TRACE_FILE_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "teller/core/status.h"

namespace teller::dataset {

// The dataset format that index.json's "version" gives (docs/dataset-format.md, "Dataset
// format versions"): 1 had plain trace.json files; 2 has trace.json.gz. Readers take
// both and refuse a newer one; a build adds settings only to a dataset of this format.
inline constexpr int kDatasetFormatVersion = 2;

// What `teller dataset build` writes: trace.json's text as a run of gzip members.
inline constexpr std::string_view kTraceFileGz = "trace.json.gz";
// What `dataset export` writes, and builds of dataset format 1 wrote.
inline constexpr std::string_view kTraceFile = "trace.json";

// The trace file of a request directory: <dir>/trace.json.gz when it exists, else
// <dir>/trace.json when it exists, else "".
std::string TraceFileIn(const std::string& request_dir);

// The JSON text of a trace file, gunzipped when its name ends in .gz or it starts with
// the gzip magic. Errors name the file: "<path>: cannot read (...)" or the gunzip errors
// of core/gzip.h ("<path>: not a gzip stream", "<path>: truncated gzip stream (input ends at byte N
// inside a member starting at byte M)", "<path>: corrupt gzip data at byte N").
// The string's capacity leaves at least kTraceTextPadding bytes after the text, so that
// simdjson can parse it in place (parser.iterate(text.data(), text.size(), capacity)).
inline constexpr size_t kTraceTextPadding = 64;
Result<std::string> ReadTraceText(const std::string& path);

}  // namespace teller::dataset

#endif  // TELLER_DATASET_TRACE_FILE_H_
