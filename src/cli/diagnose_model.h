// `teller diagnose --model MODEL` (docs/diagnose.md, "With a learned model"): the model of
// `teller train` reads every engine step of the trace as `teller dataset build` writes it
// (the same step records and columns), and names the fault type of each abnormal step.
#ifndef TELLER_SRC_CLI_DIAGNOSE_MODEL_H_
#define TELLER_SRC_CLI_DIAGNOSE_MODEL_H_

#include <string>

#include "teller/core/status.h"
#include "teller/core/trace.h"
#include "teller/diagnose/diagnose.h"
#include "teller/rca/rca.h"
#include "teller/reconstruct/reconstruct.h"

namespace teller::cli {

// Runs `model` (loaded from `path`) on the steps of `d` that have step markers and fills
// their ModelVerdict; an abnormal step's fault_type becomes the model's (the rules' kept in
// rule_fault_type). Steps without markers (iterations, whole timelines) are not read: the
// model learned from step records. Errors are the model's (libtorch failures).
Status ApplyModel(const rca::Model& model, const std::string& path, const Trace& trace,
                  const reconstruct::Reconstruction& r, diagnose::Diagnosis* d);

}  // namespace teller::cli

#endif  // TELLER_SRC_CLI_DIAGNOSE_MODEL_H_
