// Internal entry point of the Teller raw-trace importer: one raw file's bytes already in
// memory (a .tlr read from a pipe). The public entry is teller::ingest::ImportTellerRaw in
// include/teller/ingest/ingest.h.
#ifndef TELLER_SRC_INGEST_TELLER_RAW_IMPORTER_H_
#define TELLER_SRC_INGEST_TELLER_RAW_IMPORTER_H_

#include <string>
#include <string_view>
#include <vector>

#include "teller/core/status.h"
#include "teller/core/trace.h"
#include "teller/ingest/parts.h"

namespace teller::ingest {

// Imports one raw file held in `bytes` as ImportTellerRaw imports a *.tlr file (no logs,
// no manifest: those live beside the files of a directory). `name` stands for the path.
Status ImportTellerRawBytes(std::string_view bytes, const std::string& name, Trace& trace);

// ImportTellerRaw taking the .tlr files from `parts` when it has them (null: none).
Status ImportTellerRawWithParts(const std::string& path, Trace& trace, PartSource* parts);

// The files of `path` (a run directory or one .tlr file) that ImportTellerRawWithParts
// takes as parts, in order: an empty file of a directory of several is skipped there.
std::vector<std::string> RawPartFiles(const std::string& path);

// One .tlr file alone, as a part: its clock pair (realtime minus monotonic at its first
// anchor; 0 without one) in `monotonic_to_utc`.
Status ImportTellerRawFile(const std::string& file, Trace& trace, int64_t* monotonic_to_utc);

}  // namespace teller::ingest

#endif  // TELLER_SRC_INGEST_TELLER_RAW_IMPORTER_H_
