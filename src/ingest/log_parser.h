// Line scanners of the log importer (docs/ingest-logs.md): one cleaned log line in, its
// header fields out. Pure functions, no allocation, no regex: every format is recognised
// by a few byte comparisons at fixed positions so that a multi-million-line log imports
// at memory speed. The file-level work (reading, cleaning \r and ANSI escapes, years,
// UTC offsets, capture files, processes) lives in log_importer.cc.
#ifndef TELLER_SRC_INGEST_LOG_PARSER_H_
#define TELLER_SRC_INGEST_LOG_PARSER_H_

#include <cstdint>
#include <string_view>

#include "teller/core/trace.h"

namespace teller::ingest::logs {

// A wall-clock time as printed. Which fields are known depends on the format: vLLM and
// c10d print no year; only RFC3339/ISO stamps carry a zone.
struct PrintedTime {
  bool has_year = false;
  int year = 0;  // valid when has_year
  int month = 0, day = 0, hour = 0, minute = 0, second = 0;
  int64_t nanos = 0;          // fraction of the second, ns
  bool has_zone = false;      // 'Z' or a numeric offset followed the time
  int32_t zone_offset_s = 0;  // east of UTC, valid when has_zone
};

// One process prefix "(Role ... pid=N[, ip=...])" as vLLM/Ray print it.
struct ProcessPrefix {
  std::string_view role;  // text before "pid=", trimmed: "EngineCore_DP0", "VllmWorker rank=1"
  int64_t pid = -1;
};

// Header fields of one line. Views point into the line passed to ParseLogLine and live as
// long as it does.
struct ParsedLine {
  bool has_time = false;
  PrintedTime time;
  LogLevel level = LogLevel::kUnknown;
  // Prefixes in print order; the last (innermost) one is the process that printed the
  // line. vLLM nests at most three (APIServer > EngineCore > Worker); more are ignored.
  static constexpr int kMaxPrefixes = 4;
  ProcessPrefix prefixes[kMaxPrefixes];
  int num_prefixes = 0;
  // Parallel ranks named by the line: "[... TP13]" (SGLang), "[rank3]:" (torch c10d).
  int32_t tp_rank = -1;
  int32_t pp_rank = -1;
  int32_t dp_rank = -1;
  int32_t global_rank = -1;  // "[rankN]:" of torch distributed
  std::string_view message;  // the line without time, level and prefixes
};

// Parses the header of one line (no '\n', '\r' or ANSI escapes left; see the importer).
// Never fails: an unknown format leaves has_time false and the whole line as message.
void ParseLogLine(std::string_view line, ParsedLine* out);

// The request id named by a message (docs/ingest-logs.md, "Request ids"), normalized:
// the vLLM engine-internal "chatcmpl-<16hex>-<8hex>" becomes the external
// "chatcmpl-<16hex>". `count` is the number of ids the line names when it names a list
// (SGLang "[RTRACE] rids=[...]"), else 1 or 0. Returns an empty view when there is none.
std::string_view FindRequestId(std::string_view message, int* count);

// Role of a process prefix -> its rank, or -1: "rank=N", "TPn" (when no PP or DP index
// above 0 is named), "PPn" (when no TP index and no DP index above 0 is named).
int32_t RankFromRole(std::string_view role);

// Level words: DEBUG, TRACE, INFO, WARNING, WARN, ERROR, CRITICAL, FATAL (upper case only;
// lower-case words are too common in messages). kUnknown otherwise.
LogLevel LevelFromWord(std::string_view word);

// Days since 1970-01-01 of a proleptic Gregorian date (Hinnant's days_from_civil).
int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d);
// Whether the printed fields form a real date and time (leap second 60 allowed).
bool IsValidTime(const PrintedTime& t);

}  // namespace teller::ingest::logs

#endif  // TELLER_SRC_INGEST_LOG_PARSER_H_
