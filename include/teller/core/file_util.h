// Small filesystem helpers shared by the stages that write directories.
#ifndef TELLER_CORE_FILE_UTIL_H_
#define TELLER_CORE_FILE_UTIL_H_

#include <string>

#include "teller/core/status.h"

namespace teller {

// mkdir -p: creates `path` and its missing parents; the error names the first part
// that could not be created and why.
Status MakeDirs(const std::string& path);

// True when `path` exists and is a directory / a regular file (symlinks followed).
bool IsDirectory(const std::string& path);
bool IsRegularFile(const std::string& path);

// True when `path` is a directory holding anything besides "." and "..".
bool DirectoryHasEntries(const std::string& path);

}  // namespace teller

#endif  // TELLER_CORE_FILE_UTIL_H_
