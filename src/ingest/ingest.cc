#include "teller/ingest/ingest.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "teller/core/file_util.h"

namespace teller::ingest {
namespace {

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

std::vector<std::string> ListDir(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] != '.') names.emplace_back(e->d_name);
    }
    closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

std::string_view InputFormatName(InputFormat f) {
  switch (f) {
    case InputFormat::kTellerRaw:
      return "teller-raw";
    case InputFormat::kKineto:
      return "kineto-json";
    case InputFormat::kNsysSqlite:
      return "nsys-sqlite";
    case InputFormat::kLog:
      return "log";
    case InputFormat::kUnknown:
      break;
  }
  return "unknown";
}

InputFormat DetectFormat(const std::string& path) {
  if (IsDirectory(path)) {
    for (const auto& name : ListDir(path)) {
      if (name == "manifest.json" || EndsWith(name, ".tlr")) return InputFormat::kTellerRaw;
    }
    for (const auto& name : ListDir(path)) {
      if (EndsWith(name, ".json") || EndsWith(name, ".json.gz")) return InputFormat::kKineto;
    }
    return InputFormat::kUnknown;
  }
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return InputFormat::kUnknown;
  unsigned char head[16] = {};
  const ssize_t n = read(fd, head, sizeof(head));
  close(fd);
  if (n >= 4 && std::memcmp(head, "TLRC", 4) == 0) return InputFormat::kTellerRaw;
  if (n >= 16 && std::memcmp(head, "SQLite format 3", 16) == 0) return InputFormat::kNsysSqlite;
  if (n >= 2 && head[0] == 0x1f && head[1] == 0x8b) {
    return EndsWith(path, ".log.gz") ? InputFormat::kLog : InputFormat::kKineto;
  }
  for (ssize_t i = 0; i < n; ++i) {  // JSON starts with '{' after optional whitespace
    if (head[i] == ' ' || head[i] == '\n' || head[i] == '\r' || head[i] == '\t') continue;
    if (head[i] == '{') return InputFormat::kKineto;
    break;
  }
  return n > 0 ? InputFormat::kLog : InputFormat::kUnknown;
}

Status ImportPath(const std::string& path, Trace& trace) {
  const InputFormat format = DetectFormat(path);
  switch (format) {
    case InputFormat::kTellerRaw:
      return ImportTellerRaw(path, trace);
    case InputFormat::kNsysSqlite:
      return ImportNsysSqlite(path, trace);
    case InputFormat::kLog:
      return ImportLogFile(path, LogOptions{}, trace);
    case InputFormat::kKineto:
      if (IsDirectory(path)) {
        for (const auto& name : ListDir(path)) {
          if (EndsWith(name, ".json") || EndsWith(name, ".json.gz")) {
            TELLER_RETURN_IF_ERROR(ImportKineto(path + "/" + name, trace));
          }
        }
        return Status::Ok();
      }
      return ImportKineto(path, trace);
    case InputFormat::kUnknown:
      break;
  }
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    return Status::Error("cannot open " + path + ": " + std::strerror(errno));
  }
  return Status::Error(path +
                       ": not a trace Teller can read (expected a Teller trace "
                       "directory or .tlr file, a Kineto .json/.json.gz, an Nsight Systems "
                       ".sqlite export, or a log file)");
}

}  // namespace teller::ingest
