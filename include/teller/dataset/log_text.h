// The lines of a dataset's log.txt (docs/dataset-format.md, "log.txt"): one aligned log line
// of a request's step per row, written by `teller dataset build` and `dataset export` and
// read by `teller eval`'s log features. One writer and one reader, so the two never differ.
//
// Version 2 (current):  <utc ns or -> step=<k> template=<id> scope=<request|batch> <LEVEL> <msg>
// Version 1 (older):    <utc ns or -> step=<k> <LEVEL> <msg>
// `template` is the line's id in the setting's templates file (<setting>/templates.txt, the
// format of logs::TemplateMiner::Save); `scope` says whether the line names the request
// (request) or no request at all (batch: shared by every request of the step).
#ifndef TELLER_DATASET_LOG_TEXT_H_
#define TELLER_DATASET_LOG_TEXT_H_

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "teller/core/status.h"
#include "teller/core/trace.h"

namespace teller::dataset {

// The name of the templates file in a setting's directory.
inline constexpr std::string_view kTemplatesFile = "templates.txt";

struct DatasetLogLine {
  static constexpr uint32_t kNoTemplate = std::numeric_limits<uint32_t>::max();
  int64_t ts_ns = LogTable::kNoTime;
  uint32_t step = 0;
  // kNoTemplate in a version 1 line.
  uint32_t template_id = kNoTemplate;
  // True when the line names the request; false for a line naming none (and for every
  // version 1 line, which does not say).
  bool names_request = false;
  bool has_scope = false;  // false in a version 1 line
  LogLevel level = LogLevel::kUnknown;
  std::string_view message;  // a view into the parsed line
};

// Appends one version 2 line, '\n' included. The message must hold no '\n'.
void AppendDatasetLogLine(std::string& out, const DatasetLogLine& line);

// A log line as the learned models read it (docs/rca.md): "LEVEL template", "-" for an
// unknown level. `teller diagnose --model` and `teller eval` both make their lines here,
// so a model reads at diagnosis what it was trained and evaluated on.
std::string ModelLogLine(LogLevel level, std::string_view template_text);

// Parses one line (without its '\n') of either version. Errors say what is wrong; the
// caller adds the file and line number.
Status ParseDatasetLogLine(std::string_view text, DatasetLogLine* out);

}  // namespace teller::dataset

#endif  // TELLER_DATASET_LOG_TEXT_H_
