#include "teller/core/file_util.h"

#include <dirent.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

namespace teller {

Status MakeDirs(const std::string& path) {
  for (size_t pos = path.find('/', 1);; pos = path.find('/', pos + 1)) {
    const std::string partial = path.substr(0, pos);
    if (!partial.empty() && !IsDirectory(partial) &&
        mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST) {
      return Status::Error("cannot create directory " + partial + ": " + std::strerror(errno));
    }
    if (pos == std::string::npos) break;
  }
  return Status::Ok();
}

bool IsDirectory(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool IsRegularFile(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool DirectoryHasEntries(const std::string& path) {
  DIR* d = opendir(path.c_str());
  if (d == nullptr) return false;
  bool any = false;
  while (dirent* e = readdir(d)) {
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) {
      any = true;
      break;
    }
  }
  closedir(d);
  return any;
}

}  // namespace teller
