// The LogHub 2k samples with their ground truth (bench/README.md, "Log template mining"):
// the structured CSV of a dataset (LineId, header fields, Content, EventId, EventTemplate;
// gzipped) read into the message of every line and its true template label. Shared by the
// benchmark (bench/logs/loghub_benchmark.cc) and its ctest (tests/logs/loghub_ga_test.cc).
#ifndef TELLER_BENCH_LOGS_LOGHUB_DATA_H_
#define TELLER_BENCH_LOGS_LOGHUB_DATA_H_

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "teller/core/gzip.h"
#include "teller/core/status.h"

namespace teller::loghub {

// The 16 datasets, in the order of the published tables.
inline const std::vector<std::string>& Datasets() {
  static const std::vector<std::string> kNames = {
      "HDFS",        "Hadoop",  "Spark",     "Zookeeper", "BGL",       "HPC",
      "Thunderbird", "Windows", "Linux",     "Android",   "HealthApp", "Apache",
      "Proxifier",   "OpenSSH", "OpenStack", "Mac"};
  return kNames;
}

// The structured CSV of `name` under the data folder: the original labels in
// loghub_2k/, the corrected ones (ICSE'22) in loghub_2k_corrected/.
inline std::string StructuredPath(const std::string& data_dir, const std::string& name,
                                  bool corrected) {
  return corrected
             ? data_dir + "/loghub_2k_corrected/" + name + "_2k.log_structured_corrected.csv.gz"
             : data_dir + "/loghub_2k/" + name + "_2k.log_structured.csv.gz";
}

struct Dataset {
  std::vector<std::string> content;  // the message of each line (the CSV's Content)
  std::vector<uint32_t> label;       // its EventId, as a dense number
};

// Splits CSV text (RFC 4180: quoted fields, "" for a quote, commas and newlines inside
// quotes) into records.
inline std::vector<std::vector<std::string>> ParseCsv(std::string_view text) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
  std::string field;
  bool quoted = false, any = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field.push_back('"');
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field.push_back(c);
      }
    } else if (c == '"') {
      quoted = true;
      any = true;
    } else if (c == ',') {
      row.push_back(std::move(field));
      field.clear();
      any = true;
    } else if (c == '\n' || c == '\r') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      if (any || !field.empty()) {
        row.push_back(std::move(field));
        rows.push_back(std::move(row));
      }
      field.clear();
      row.clear();
      any = false;
    } else {
      field.push_back(c);
      any = true;
    }
  }
  if (any || !field.empty()) {
    row.push_back(std::move(field));
    rows.push_back(std::move(row));
  }
  return rows;
}

inline Result<Dataset> LoadStructured(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::Error("cannot open " + path);
  std::stringstream raw;
  raw << in.rdbuf();
  std::string text;
  if (Status st = GunzipToString(raw.str(), path, {}, &text); !st.ok()) return st;
  const auto rows = ParseCsv(text);
  if (rows.empty()) return Status::Error(path + ": empty");
  size_t content = SIZE_MAX, event = SIZE_MAX;
  for (size_t c = 0; c < rows[0].size(); ++c) {
    if (rows[0][c] == "Content") content = c;
    if (rows[0][c] == "EventId") event = c;
  }
  if (content == SIZE_MAX || event == SIZE_MAX) {
    return Status::Error(path + ":1: no Content or EventId column");
  }
  Dataset d;
  std::unordered_map<std::string, uint32_t> ids;
  for (size_t r = 1; r < rows.size(); ++r) {
    if (rows[r].size() != rows[0].size()) {
      return Status::Error(path + ": record " + std::to_string(r + 1) + " has " +
                           std::to_string(rows[r].size()) + " fields, the header " +
                           std::to_string(rows[0].size()));
    }
    d.content.push_back(rows[r][content]);
    d.label.push_back(ids.emplace(rows[r][event], static_cast<uint32_t>(ids.size())).first->second);
  }
  return d;
}

}  // namespace teller::loghub

#endif  // TELLER_BENCH_LOGS_LOGHUB_DATA_H_
