// Checks that a setting's inputs are whole before `teller dataset build` labels them
// (docs/dataset-format.md, "Damaged inputs"): the files its manifest.json lists are there
// with the sizes it records, every process of the ground truth was imported, and the
// raw reader met no damage.
#ifndef TELLER_SRC_DATASET_INPUT_CHECK_H_
#define TELLER_SRC_DATASET_INPUT_CHECK_H_

#include <string>

#include "teller/core/status.h"
#include "teller/core/trace.h"
#include "teller/format/ground_truth.h"

namespace teller::dataset::internal {

// Before import: each file of DIR/manifest.json's "files" (raw traces and logs) exists
// under DIR and has the recorded "bytes". A directory without a manifest passes (nothing
// to compare with); an unreadable manifest is an error naming it.
Status CheckManifestFiles(const std::string& dir);

// After import: every (host, pid) of the ground truth's processes is a process of the
// trace, and the raw reader counted no damaged region, dropped byte or unclean end.
Status CheckImported(const std::string& dir, const format::GroundTruth& truth, const Trace& trace);

}  // namespace teller::dataset::internal

#endif  // TELLER_SRC_DATASET_INPUT_CHECK_H_
