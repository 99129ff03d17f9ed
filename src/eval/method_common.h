// What the methods of `teller eval` share in deciding (methods.cc, learned_baselines.cc):
// the alarm threshold from validation labels, fault classes, the distinct step records of
// a set of units. Private to src/eval.
#ifndef TELLER_SRC_EVAL_METHOD_COMMON_H_
#define TELLER_SRC_EVAL_METHOD_COMMON_H_

#include <cstdint>
#include <string>
#include <vector>

#include "teller/eval/dataset.h"

namespace teller::eval {

// The threshold on `scores` that maximizes step F1 against `labels` (ties: the higher
// threshold, i.e. fewer alarms); with no positive label, the 90th percentile of
// `fallback` scores (0 when it is empty too).
double BestThreshold(const std::vector<double>& scores, const std::vector<uint8_t>& labels,
                     std::vector<double> fallback);

// A fault type's FaultCategory as int, -1 for "" or an unknown name.
int FaultClass(const std::string& name);

// Units of `units` with one entry per distinct step record: detectors that learn from
// engine steps are fitted on those, not on the copies a batch makes of them.
std::vector<uint32_t> DistinctRecords(const Dataset& dataset, const std::vector<uint32_t>& units);

}  // namespace teller::eval

#endif  // TELLER_SRC_EVAL_METHOD_COMMON_H_
