// Small filesystem helpers shared by the stages that write directories.
#ifndef TELLER_CORE_FILE_UTIL_H_
#define TELLER_CORE_FILE_UTIL_H_

#include <string>
#include <string_view>

#include "teller/core/status.h"

namespace teller {

// mkdir -p: creates `path` and its missing parents; the error names the first part
// that could not be created and why.
Status MakeDirs(const std::string& path);

// True when `path` exists and is a directory / a regular file (symlinks followed).
bool IsDirectory(const std::string& path);
bool IsRegularFile(const std::string& path);
// True when `path` is a regular file of 0 bytes.
bool IsEmptyRegularFile(const std::string& path);

// True when `path` is a directory holding anything besides "." and "..".
bool DirectoryHasEntries(const std::string& path);

struct WriteFileOptions {
  // false: fail (the file already exists) rather than replace an existing file.
  bool replace = true;
  // fsync the file before it takes the target's name (survives a power loss).
  bool sync = false;
  // Permissions of a new file (before the umask).
  unsigned mode = 0644;
};

// Writes a file whole, or not at all: the bytes go to a temporary file beside the target
// (".<name>.<pid>.<n>.tmp"), every write and the close are checked, and only then does
// the temporary take the target's name. On any failure the temporary is removed and an
// existing target is left as it was, so a full disk never leaves a short or empty file
// behind a good one. Errors name the file and the system's reason. A symlink is written
// through (the file it names is replaced); a device or pipe (/dev/stdout, a FIFO) is
// written in place, as it cannot be replaced, with the same checks.
Status WriteFileAtomic(const std::string& path, std::string_view bytes,
                       const WriteFileOptions& options = {});

// A fresh name for the temporary of a file written whole (".<name>.<pid>.<n>.tmp" beside
// it), for writers that build a file in pieces and rename it at the end.
std::string TempPathFor(const std::string& path);

// The same for files too large to hold in memory: Append() as the data is produced,
// Commit() at the end. Without a successful Commit() (an error, or destruction) the
// temporary is removed and the target untouched. After the first error every call
// returns it.
class AtomicFileWriter {
 public:
  explicit AtomicFileWriter(std::string path, const WriteFileOptions& options = {});
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  // Creates the temporary file; Append() calls it when it was not called.
  Status Open();
  Status Append(std::string_view bytes);
  // Closes the temporary and gives it the target's name.
  Status Commit();
  // Removes the temporary; the target is untouched.
  void Abandon();
  const std::string& path() const { return path_; }

 private:
  Status Fail(int err);
  std::string path_;
  std::string target_;  // path_, or the file a symlink at path_ names
  std::string tmp_;
  WriteFileOptions options_;
  int fd_ = -1;
  Status status_;
  bool done_ = false;
  bool direct_ = false;  // writing into a device or pipe, no temporary
};

}  // namespace teller

#endif  // TELLER_CORE_FILE_UTIL_H_
