// Per-request examples in the dataset layout of docs/method.md §7 (docs/dataset-format.md):
// <out>/<setting>/<request_id>/{trace.json, log.txt, annotation.json}, and the log
// templates log.txt's ids name in <out>/<setting>/templates.txt. The annotation
// holds empty labels (to be filled by a person or by the simulator's ground truth).
#ifndef TELLER_DATASET_DATASET_EXPORT_H_
#define TELLER_DATASET_DATASET_EXPORT_H_

#include <string>

#include "teller/core/status.h"
#include "teller/core/trace.h"
#include "teller/reconstruct/reconstruct.h"

namespace teller::dataset {

struct ExportOptions {
  std::string setting = "default";       // the setting (engine/workload) directory name
  size_t max_nodes_per_step = 1u << 20;  // larger steps are cut (and say so)
};

struct ExportSummary {
  size_t requests = 0, steps = 0, nodes = 0, log_lines = 0, truncated_steps = 0;
};

// Writes one directory per request. Request ids become directory names with every
// character outside [A-Za-z0-9._-] percent-encoded.
Result<ExportSummary> ExportDataset(const Trace& trace, const reconstruct::Reconstruction& r,
                                    const std::string& out_dir, const ExportOptions& options);

// The directory name used for a request id.
std::string RequestDirName(std::string_view request);

}  // namespace teller::dataset

#endif  // TELLER_DATASET_DATASET_EXPORT_H_
