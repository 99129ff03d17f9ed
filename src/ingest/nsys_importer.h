// Internal entry point of the Nsight Systems SQLite importer with its knobs. The public
// teller::ingest::ImportNsysSqlite (include/teller/ingest/ingest.h) calls this with
// default options; the fuzz target and tests use the knobs to bound work on hostile
// input. See docs/ingest-nsys.md for the tables read and the mapping.
#ifndef TELLER_SRC_INGEST_NSYS_IMPORTER_H_
#define TELLER_SRC_INGEST_NSYS_IMPORTER_H_

#include <cstdint>
#include <string>

#include "teller/core/status.h"
#include "teller/core/trace.h"

namespace teller::ingest {

struct NsysImportOptions {
  // Upper bound on SQLite virtual-machine instructions for the whole import, 0 = none.
  // A crafted database can make one query loop for a very long time (a huge declared
  // page count, a deep b-tree); when the budget runs out the current table stops, the
  // rest are skipped and "nsys.interrupted" is counted. Real exports need no bound.
  uint64_t max_vm_steps = 0;
};

Status ImportNsysSqliteWithOptions(const std::string& path, const NsysImportOptions& options,
                                   Trace& trace);

}  // namespace teller::ingest

#endif  // TELLER_SRC_INGEST_NSYS_IMPORTER_H_
