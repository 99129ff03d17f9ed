// The run manifest of `teller run` (manifest.json, written by src/collect/launcher.cc; the
// same layout comes from `teller simulate` and `teller inject`): how the recorded command
// ended, for the failure findings of the diagnosis (docs/diagnose.md, "Failures").
#ifndef TELLER_SRC_INGEST_RUN_MANIFEST_H_
#define TELLER_SRC_INGEST_RUN_MANIFEST_H_

#include <string>

#include "teller/core/status.h"
#include "teller/core/trace.h"

namespace teller::ingest {

// Reads `path` into `run`: known, finished, exit_code, signal, the command joined by
// spaces, the command's pid and the end time (end_realtime_ns). Absent fields keep their defaults
// (an unfinished manifest has no exit status). Errors name the file and what is wrong; `run` is
// then unchanged.
Status ReadRunManifest(const std::string& path, Trace::RunInfo* run);

}  // namespace teller::ingest

#endif  // TELLER_SRC_INGEST_RUN_MANIFEST_H_
