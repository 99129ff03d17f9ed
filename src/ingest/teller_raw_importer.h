// Internal entry point of the Teller raw-trace importer: one raw file's bytes already in
// memory (a .tlr read from a pipe). The public entry is teller::ingest::ImportTellerRaw in
// include/teller/ingest/ingest.h.
#ifndef TELLER_SRC_INGEST_TELLER_RAW_IMPORTER_H_
#define TELLER_SRC_INGEST_TELLER_RAW_IMPORTER_H_

#include <string>
#include <string_view>

#include "teller/core/status.h"
#include "teller/core/trace.h"

namespace teller::ingest {

// Imports one raw file held in `bytes` as ImportTellerRaw imports a *.tlr file (no logs,
// no manifest: those live beside the files of a directory). `name` stands for the path.
Status ImportTellerRawBytes(std::string_view bytes, const std::string& name, Trace& trace);

}  // namespace teller::ingest

#endif  // TELLER_SRC_INGEST_TELLER_RAW_IMPORTER_H_
