// Importers: every input format Teller reads, into the normalized Trace (core/trace.h).
//
// Contract shared by all importers:
//   - Append to `trace` (several inputs can be imported into one Trace: a folder of rank
//     files, a raw trace directory with its logs).
//   - Unreadable input (missing file, not this format at all, truncated gzip, invalid
//     JSON) is an error Status whose message names the file and the position (byte
//     offset or line) and what was expected. Events read before the error stay in the
//     trace only when the importer says so in its documentation.
//   - Survivable damage (a negative duration, a missing field on one event, a duplicate
//     correlation id) becomes a named counter "<importer>.<what>" in trace.counters and
//     the event is kept when it still makes sense, else dropped and counted.
//   - Timestamps are converted to UTC nanoseconds (see core/trace.h).
#ifndef TELLER_INGEST_INGEST_H_
#define TELLER_INGEST_INGEST_H_

#include <string>
#include <string_view>
#include <vector>

#include "teller/core/status.h"
#include "teller/core/trace.h"

namespace teller::ingest {

enum class InputFormat {
  kUnknown,
  kTellerRaw,   // a directory from `teller run` / `teller simulate`, or one *.tlr file
  kKineto,      // PyTorch profiler / Kineto Chrome trace, .json or .json.gz
  kNsysSqlite,  // Nsight Systems SQLite export
  kLog,         // a plain-text log file
};
std::string_view InputFormatName(InputFormat f);

// Looks at the file's first 4 KiB (raw chunk magic, SQLite header, gzip magic, '{' or
// "[{" after an optional UTF-8 byte order mark and whitespace, else text for a log) or,
// for a directory, at its files. kUnknown for an empty or whitespace-only file, binary
// data, a file whose name promises a format (.json, .gz, .sqlite, .tlr) its bytes do not
// have, and a pipe or device (not read here: ImportPath reads those once, as a stream);
// `why` (optional) then says which, for an error message.
InputFormat DetectFormat(const std::string& path, std::string* why = nullptr);

// The same verdict on bytes: `head` is the start of the input named `name`, `whole` true
// when it is all of it.
InputFormat DetectFormatOfBytes(std::string_view head, std::string_view name, bool whole,
                                std::string* why = nullptr);

// Kineto / PyTorch-profiler Chrome trace (.json, .json.gz). One file is one process
// (one rank). Host events of the file's pids become processes keyed by the file; GPU
// events (whose pid is a device and tid a stream) belong to the file's main process.
Status ImportKineto(const std::string& path, Trace& trace);

// Nsight Systems SQLite export (nsys export --type sqlite).
Status ImportNsysSqlite(const std::string& path, Trace& trace);

// A Teller raw trace: a directory (every *.tlr, plus logs/stdout.log and logs/stderr.log
// in the capture format of `teller run`) or a single *.tlr file.
Status ImportTellerRaw(const std::string& path, Trace& trace);

struct LogOptions {
  // Year for formats that print none (vLLM's "MM-DD HH:MM:SS"); 0 = from the trace or
  // the file's modification time.
  int default_year = 0;
  // Offset of the log's local time from UTC, seconds (vLLM and SGLang print local time).
  int64_t utc_offset_s = 0;
  bool utc_offset_known = false;
};

// A log file: vLLM v0/v1 (with "(APIServer pid=..)" style prefixes), SGLang, generic
// timestamped lines, and the "<ns> <line>" capture files of `teller run` (whose times
// are CLOCK_MONOTONIC ns; `monotonic_to_utc_ns` converts them when non-zero). Unknown
// formats are kept with kNoTime and counted.
Status ImportLogFile(const std::string& path, const LogOptions& options, Trace& trace,
                     int64_t monotonic_to_utc_ns = 0);

// Any input: dispatches on DetectFormat. A directory of Kineto rank files is imported
// file by file as one multi-rank trace. A pipe, FIFO or /dev/stdin is read once, to its
// end, and imported from memory (Kineto JSON plain or gzip, a log, one raw .tlr file; not
// an Nsight export, which SQLite reads from a file). Input of no known format is an error
// "<path>: not a trace Teller can read: <why> (expected ...)".
Status ImportPath(const std::string& path, Trace& trace);

}  // namespace teller::ingest

#endif  // TELLER_INGEST_INGEST_H_
