// Internal to src/dataset: <dataset>/index.json, written by `teller dataset build` and
// read by `teller dataset stats` and by later builds into the same directory (which keep
// the entries of the settings they do not rebuild). Layout in docs/dataset-format.md.
#ifndef TELLER_SRC_DATASET_INDEX_FILE_H_
#define TELLER_SRC_DATASET_INDEX_FILE_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "teller/core/status.h"
#include "teller/dataset/build.h"
#include "teller/dataset/stats.h"
#include "teller/dataset/trace_file.h"

namespace teller::dataset::internal {

inline constexpr const char* kIndexFile = "index.json";

// One setting's entry: the numbers Table 1 needs, and the entry's JSON as stored.
struct IndexEntry {
  std::string name;
  uint64_t requests = 0, faulty = 0, steps = 0, nodes = 0;
  std::map<std::string, uint64_t> fault_mix;  // faulty requests per category
  std::string json;
};

// Errors name the file and the byte offset or the missing field; a version newer than
// kDatasetFormatVersion is an error. `version` (when given) receives the file's version
// (1 when it has none).
Result<std::vector<IndexEntry>> ReadIndexFile(const std::string& path, int* version = nullptr);

// The entry of a freshly built setting.
IndexEntry EntryFor(const SettingSummary& s);

// Table 1 from entries: per setting, total, and the overall mix (stats.cc).
DatasetStats StatsFromEntries(const std::vector<IndexEntry>& entries);

// The whole file: entries (by name), the total and the overall fault mix.
std::string IndexJson(const std::vector<IndexEntry>& entries);

}  // namespace teller::dataset::internal

#endif  // TELLER_SRC_DATASET_INDEX_FILE_H_
