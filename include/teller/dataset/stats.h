// The paper's Table 1 for a built dataset (`teller dataset stats`): requests, faulty
// requests, steps and nodes per setting, a total, and the fault-category mix. Read from
// <dir>/index.json when present (written by `teller dataset build`), else recounted from
// the per-request annotation.json and trace.json files (so datasets made by
// `teller dataset export`, or copied without their index, work too).
#ifndef TELLER_DATASET_STATS_H_
#define TELLER_DATASET_STATS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "teller/core/status.h"

namespace teller::dataset {

struct SettingStats {
  std::string name;
  uint64_t requests = 0, faulty = 0, steps = 0, nodes = 0;
  std::map<std::string, uint64_t> fault_counts;  // faulty requests per category
};

struct DatasetStats {
  std::vector<SettingStats> settings;  // by name
  SettingStats total;                  // name "total"
  // Fraction of faulty requests per category: the five of kAllFaultCategories (core/vocabulary.h)
  // always, plus any other category the data names. All zero when nothing is faulty.
  std::map<std::string, double> fault_mix;
  bool from_index = false;  // read from index.json (else recounted)
};

Result<DatasetStats> ReadDatasetStats(const std::string& dir);

// {"settings":[{"name","requests","faulty","steps","nodes"}],
//  "total":{"requests","faulty","steps","nodes"},"fault_mix":{"<category>":fraction}}
std::string DatasetStatsJson(const DatasetStats& stats);
// A fixed-width table with a total row and the mix in percent.
std::string DatasetStatsTable(const DatasetStats& stats);

}  // namespace teller::dataset

#endif  // TELLER_DATASET_STATS_H_
