// Internal entry point of the log importer (docs/ingest-logs.md), for tests and the fuzz
// target: the same import as ImportLogFile (include/teller/ingest/ingest.h) on bytes
// already in memory, with the file's modification time passed in instead of read.
#ifndef TELLER_SRC_INGEST_LOG_IMPORTER_H_
#define TELLER_SRC_INGEST_LOG_IMPORTER_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "teller/core/status.h"
#include "teller/core/trace.h"
#include "teller/ingest/ingest.h"

namespace teller::ingest {

// Longest line kept, bytes; longer lines are cut here and counted (logs.truncated_lines).
inline constexpr size_t kMaxLogLineBytes = 64 * 1024;

// Imports `data` (plain text, or gzip when it starts with the gzip magic) as the log file
// `file_name`. `mtime_ns` (UTC ns, 0 = unknown) is the reference for years that the log
// does not print, when options.default_year is 0 and the trace holds no events.
Status ImportLogBytes(std::string_view data, const std::string& file_name, int64_t mtime_ns,
                      const LogOptions& options, Trace& trace, int64_t monotonic_to_utc_ns = 0);

}  // namespace teller::ingest

#endif  // TELLER_SRC_INGEST_LOG_IMPORTER_H_
