// A folder of Kineto rank files imported as one trace (docs/ingest-kineto.md, "A folder of
// rank files"): a few files at a time, each into a trace of its own on a worker thread,
// appended to the folder's trace in file order as soon as it is done and then freed.
#ifndef TELLER_SRC_INGEST_RANK_FOLDER_H_
#define TELLER_SRC_INGEST_RANK_FOLDER_H_

#include <cstddef>
#include <string>
#include <vector>

#include "teller/core/status.h"
#include "teller/core/trace.h"

namespace teller::ingest {

// Files imported at once: TELLER_IMPORT_FILES=N when set (1 to 64; 1 imports one file
// after another on the calling thread, straight into the trace), else the workers
// WorkerCount gives (core/parallel.h), at most kDefaultFilesInFlight; never more than
// `files`.
inline constexpr size_t kDefaultFilesInFlight = 4;
size_t FilesInFlight(size_t files);

// Imports `paths` (Kineto .json/.json.gz files, in that order; the rank files of
// `folder`, which names the progress) into `trace` with at most `in_flight` files held at
// once (0: FilesInFlight). The trace is the one importing the files one after another
// into it gives, row for row and string id for string id; on an error it is that of the
// first file (in order) that fails, the files before it imported.
Status ImportKinetoFiles(const std::string& folder, const std::vector<std::string>& paths,
                         Trace& trace, size_t in_flight = 0);

// Appends `part` (a trace of its own, e.g. one file's) to `into`: its strings interned in
// the order of their ids, its processes found or added in order, rows and log lines with
// their ids and process indices moved, counters merged, sources appended. The result is
// what importing part's input straight into `into` would have given, for an importer that
// does not read what the trace already holds (Kineto's; a log without years does: it
// takes the year from the trace's events).
void AppendTrace(const Trace& part, Trace& into);

// The most per-file traces held at once by ImportKinetoFiles since the last call (tests).
size_t TakeFolderPeakFilesForTesting();
// Makes ImportKinetoFiles wait `ms` milliseconds before appending each file, so that the
// workers are always ahead of it (tests of the bound); 0 restores the default.
void SetFolderAppendDelayForTesting(int ms);

}  // namespace teller::ingest

#endif  // TELLER_SRC_INGEST_RANK_FOLDER_H_
