// An input's files imported elsewhere: the rank files of a folder, the .tlr files of a run,
// a single trace file, each imported alone (by another process, on another machine) and
// handed to the import of the input as a *part*, which it appends where it would have
// imported the file itself. The trace is the same, row for row and string id for string
// id (AppendTrace, src/ingest/rank_folder.h). `teller-mpi diagnose` shares a job's files
// among MPI processes this way (docs/diagnose.md, "Many machines").
#ifndef TELLER_INGEST_PARTS_H_
#define TELLER_INGEST_PARTS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "teller/core/status.h"
#include "teller/core/trace.h"

namespace teller::ingest {

struct ImportedPart {
  Trace trace;
  // A raw file's own clock pair (realtime minus monotonic at its first anchor), which
  // converts a run's capture logs when its manifest has none; 0 for other files.
  int64_t monotonic_to_utc_ns = 0;
};

// The files of `paths` that ImportPath imports one at a time and takes as parts, in the
// order it asks for them: a run directory's non-empty .tlr files, a folder's Kineto rank
// files, a single .tlr, Kineto or Nsight file. Logs, pipes and unknown inputs are none:
// the import reads them itself.
std::vector<std::string> PartFiles(const std::vector<std::string>& paths);

// Imports `file`, one of PartFiles, alone into `part` (empty); errors as ImportPath's.
Status ImportPart(const std::string& file, ImportedPart& part);

// A part as bytes for its trip between processes, and back. The encoding is this build's
// (native byte order and widths, a version number): both ends run the same binary.
// DecodePart fills `part`, which is empty, and refuses bytes that are not a whole,
// consistent part (a string or process index out of range, a count beyond the bytes,
// trailing bytes), naming `what` and the offset; `part` is then to be discarded.
std::string EncodePart(const ImportedPart& part);
Status DecodePart(std::string_view bytes, const std::string& what, ImportedPart& part);

// Where ImportPath gets parts from. Take imports `file` (or receives it) into `part`, which
// is empty, and returns true with `status` set; false leaves the file to the caller.
// ImportPaths calls Begin with the inputs before it imports them, so that a source can
// start on all of their parts at once, and End when it is done, also after an error (a
// source then discards the parts it was not asked for).
class PartSource {
 public:
  virtual ~PartSource() = default;
  virtual void Begin(const std::vector<std::string>& /*paths*/) {}
  virtual bool Take(const std::string& file, ImportedPart& part, Status& status) = 0;
  virtual void End() {}
};

// ImportPath (ingest.h) taking the files of PartFiles from `parts` when it has them.
Status ImportPath(const std::string& path, Trace& trace, PartSource* parts);

// Every path into `trace`, in order, between parts->Begin(paths) and parts->End() (`parts`
// may be null: ImportPath of each). Stops at the first error.
Status ImportPaths(const std::vector<std::string>& paths, Trace& trace, PartSource* parts);

}  // namespace teller::ingest

#endif  // TELLER_INGEST_PARTS_H_
