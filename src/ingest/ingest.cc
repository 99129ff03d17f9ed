#include "teller/ingest/ingest.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "src/ingest/kineto_importer.h"
#include "src/ingest/log_importer.h"
#include "src/ingest/rank_folder.h"
#include "src/ingest/teller_raw_importer.h"
#include "teller/core/file_util.h"
#include "teller/core/progress.h"
#include "teller/ingest/parts.h"

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

namespace {

// Bytes looked at to tell a file's format (and, for a pipe, read before deciding to read
// the rest): enough for every magic and for a fair verdict on "is this text".
constexpr size_t kSniffBytes = 4096;

// The name's promise of a format whose bytes did not match (the error then says so);
// empty for names that promise nothing (a log may be called anything).
std::string_view PromisedFormat(std::string_view name) {
  for (const std::string_view suffix :
       {".json.gz", ".json", ".gz", ".sqlite", ".sqlite3", ".tlr", ".nsys-rep", ".qdrep"}) {
    if (EndsWith(name, suffix)) return suffix;
  }
  return {};
}

std::string FirstBytesHex(std::string_view head) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < head.size() && i < 8; ++i) {
    if (i > 0) out += ' ';
    const auto b = static_cast<unsigned char>(head[i]);
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

// Length of the UTF-8 sequence starting at head[i] (1-4), 0 when it is not valid UTF-8,
// or -1 when it is cut by the end of the head.
int Utf8Sequence(std::string_view head, size_t i) {
  const auto b = static_cast<unsigned char>(head[i]);
  int len = 0;
  if (b < 0x80) return 1;
  if (b >= 0xc2 && b <= 0xdf) {
    len = 2;
  } else if (b >= 0xe0 && b <= 0xef) {
    len = 3;
  } else if (b >= 0xf0 && b <= 0xf4) {
    len = 4;
  } else {
    return 0;
  }
  for (int k = 1; k < len; ++k) {
    if (i + k >= head.size()) return -1;
    if ((static_cast<unsigned char>(head[i + k]) & 0xc0) != 0x80) return 0;
  }
  return len;
}

// Whether `head` reads as the start of a text file (a log): no NUL byte, and at most one
// byte in ten a control character (other than tab, newlines, form feed, backspace and the
// escape of terminal colours) or outside valid UTF-8, so that a log with a few Latin-1
// bytes passes and random bytes (half of them invalid UTF-8) do not.
bool LooksLikeText(std::string_view head, bool whole) {
  size_t bad = 0;
  for (size_t i = 0; i < head.size();) {
    const auto b = static_cast<unsigned char>(head[i]);
    if (b == 0) return false;
    if (b < 0x20 || b == 0x7f) {
      if (b != '\t' && b != '\n' && b != '\r' && b != '\f' && b != '\v' && b != '\b' && b != 0x1b) {
        ++bad;
      }
      ++i;
      continue;
    }
    const int len = Utf8Sequence(head, i);
    if (len < 0) {
      if (whole) bad += head.size() - i;
      break;
    }
    if (len == 0) {
      ++bad;
      ++i;
      continue;
    }
    i += static_cast<size_t>(len);
  }
  return bad * 10 <= head.size();
}

}  // namespace

InputFormat DetectFormatOfBytes(std::string_view head, std::string_view name, bool whole,
                                std::string* why) {
  auto unknown = [why](std::string reason) {
    if (why != nullptr) *why = std::move(reason);
    return InputFormat::kUnknown;
  };
  const size_t n = head.size();
  const auto* u = reinterpret_cast<const unsigned char*>(head.data());
  if (n == 0) return unknown("the file is empty");
  if (n >= 4 && std::memcmp(u, "TLRC", 4) == 0) return InputFormat::kTellerRaw;
  if (n >= 16 && std::memcmp(u, "SQLite format 3", 16) == 0) return InputFormat::kNsysSqlite;
  // gzip: the magic, deflate (the only method defined) and no reserved flag bit, so that
  // random bytes (an endless device read as a stream) are not taken for it by two bytes.
  if (n >= 2 && u[0] == 0x1f && u[1] == 0x8b && (n < 4 || (u[2] == 8 && (u[3] & 0xe0) == 0))) {
    return EndsWith(name, ".log.gz") ? InputFormat::kLog : InputFormat::kKineto;
  }
  // JSON: '{' (object form) or '[' then '{' or ']' (array form; a log line may start with
  // "[2024-..." but not with "[{"), after an optional UTF-8 byte order mark and whitespace,
  // and text: one random byte in 250 is a '{', and a stream taken for JSON is read to its end.
  size_t i = n >= 3 && std::memcmp(u, "\xEF\xBB\xBF", 3) == 0 ? 3 : 0;
  auto is_space = [](unsigned char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; };
  while (i < n && is_space(u[i])) ++i;
  const bool text = LooksLikeText(head, whole);
  if (i < n && u[i] == '{' && text) return InputFormat::kKineto;
  if (i < n && u[i] == '[' && text) {
    size_t j = i + 1;
    while (j < n && is_space(u[j])) ++j;
    if (j < n ? (u[j] == '{' || u[j] == ']') : whole) return InputFormat::kKineto;
  }
  if (i == n) {
    return unknown(whole ? "the file holds only whitespace"
                         : "it starts with " + std::to_string(n) + " bytes of whitespace");
  }
  const std::string_view promised = PromisedFormat(name);
  if (!promised.empty()) {
    std::string what = "named *" + std::string(promised) + " but its content is not ";
    if (EndsWith(promised, ".gz")) {
      what += "gzip data";
    } else if (promised == ".json") {
      what += "JSON";
    } else if (promised == ".tlr") {
      what += "a Teller raw trace";
    } else if (promised == ".nsys-rep" || promised == ".qdrep") {
      return unknown("an Nsight Systems report: export it first (nsys export --type sqlite)");
    } else {
      what += "an SQLite database";
    }
    const char* bytes = !whole ? "+ bytes" : n == 1 ? " byte" : " bytes";
    return unknown(what + " (" + std::to_string(n) + bytes + ", starting " + FirstBytesHex(head) +
                   ")");
  }
  if (text) return InputFormat::kLog;
  return unknown("binary data that is no format Teller reads (starting " + FirstBytesHex(head) +
                 ")");
}

InputFormat DetectFormat(const std::string& path, std::string* why) {
  if (IsDirectory(path)) {
    for (const auto& name : ListDir(path)) {
      if (name == "manifest.json" || EndsWith(name, ".tlr")) return InputFormat::kTellerRaw;
    }
    for (const auto& name : ListDir(path)) {
      if (EndsWith(name, ".json") || EndsWith(name, ".json.gz")) return InputFormat::kKineto;
    }
    if (why != nullptr) *why = "a directory without *.tlr, manifest.json or *.json(.gz) files";
    return InputFormat::kUnknown;
  }
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    if (why != nullptr) *why = std::string("cannot open: ") + std::strerror(errno);
    return InputFormat::kUnknown;
  }
  if (!S_ISREG(st.st_mode)) {
    // Reading a pipe's first bytes would take them from the importer: ImportPath reads it
    // once, as a stream.
    if (why != nullptr) *why = "not a regular file (a pipe or device: read as a stream)";
    return InputFormat::kUnknown;
  }
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (why != nullptr) *why = std::string("cannot open: ") + std::strerror(errno);
    return InputFormat::kUnknown;
  }
  char head[kSniffBytes];
  size_t n = 0;
  while (n < sizeof(head)) {
    const ssize_t got = read(fd, head + n, sizeof(head) - n);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    n += static_cast<size_t>(got);
  }
  close(fd);
  return DetectFormatOfBytes(std::string_view(head, n), path, static_cast<size_t>(st.st_size) <= n,
                             why);
}

namespace {

std::string NotATrace(const std::string& path, const std::string& why) {
  return path + ": not a trace Teller can read: " + why +
         " (expected a Teller trace directory or .tlr file, a Kineto .json/.json.gz, an "
         "Nsight Systems .sqlite export, or a log file)";
}

// A pipe, FIFO or character device (/dev/stdin): read once, to its end, then imported from
// memory; its first bytes decide the format before the rest is read, so that endless
// binary input (/dev/urandom) is refused at once.
Status ImportStream(const std::string& path, Trace& trace) {
  // Like cat, this waits for a FIFO's writer.
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::Error("cannot open " + path + ": " + std::strerror(errno));
  PaddedBuffer raw;
  Status read = AppendFromFd(fd, path, raw, kSniffBytes);
  std::string why;
  const InputFormat format =
      read.ok() ? DetectFormatOfBytes(raw.view(), path, raw.size() < kSniffBytes, &why)
                : InputFormat::kUnknown;
  if (read.ok() && format != InputFormat::kUnknown && format != InputFormat::kNsysSqlite) {
    read = AppendFromFd(fd, path, raw);
  }
  close(fd);
  TELLER_RETURN_IF_ERROR(read);
  switch (format) {
    case InputFormat::kKineto:
      return ImportKinetoBuffer(std::move(raw), path, trace);
    case InputFormat::kLog: {
      timespec now{};
      clock_gettime(CLOCK_REALTIME, &now);
      const int64_t now_ns = static_cast<int64_t>(now.tv_sec) * 1000000000 + now.tv_nsec;
      return ImportLogBytes(raw.view(), path, now_ns, LogOptions{}, trace);
    }
    case InputFormat::kTellerRaw:
      return ImportTellerRawBytes(raw.view(), path, trace);
    case InputFormat::kNsysSqlite:
      return Status::Error(path +
                           ": an Nsight Systems SQLite export cannot be read from a pipe "
                           "(SQLite needs a file): save it to a file first");
    case InputFormat::kUnknown:
      break;
  }
  return Status::Error(NotATrace(path, why));
}

// The rank files of a Kineto folder, in name order.
std::vector<std::string> KinetoRankFiles(const std::string& dir) {
  std::vector<std::string> files;
  for (const auto& name : ListDir(dir)) {
    if (EndsWith(name, ".json") || EndsWith(name, ".json.gz")) files.push_back(dir + "/" + name);
  }
  return files;
}

// A file that ImportPath imports whole (one Kineto or Nsight file), taken as a part when
// `parts` has it.
Status ImportWholeFile(const std::string& path, Trace& trace, PartSource* parts,
                       Status (*import)(const std::string&, Trace&)) {
  ImportedPart part;
  Status taken;
  if (parts != nullptr && parts->Take(path, part, taken)) {
    TELLER_RETURN_IF_ERROR(taken);
    AppendTrace(part.trace, trace);
    return Status::Ok();
  }
  return import(path, trace);
}

bool IsFileOrDirectory(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && (S_ISDIR(st.st_mode) || S_ISREG(st.st_mode));
}

}  // namespace

Status ImportPath(const std::string& path, Trace& trace) {
  return ImportPath(path, trace, nullptr);
}

Status ImportPath(const std::string& path, Trace& trace, PartSource* parts) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    return Status::Error("cannot open " + path + ": " + std::strerror(errno));
  }
  if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)) return ImportStream(path, trace);
  std::string why;
  const InputFormat format = DetectFormat(path, &why);
  switch (format) {
    case InputFormat::kTellerRaw:
      return ImportTellerRawWithParts(path, trace, parts);
    case InputFormat::kNsysSqlite:
      return ImportWholeFile(path, trace, parts, &ImportNsysSqlite);
    case InputFormat::kLog:
      return ImportLogFile(path, LogOptions{}, trace);
    case InputFormat::kKineto:
      if (IsDirectory(path)) {
        const std::vector<std::string> files = KinetoRankFiles(path);
        if (parts == nullptr) return ImportKinetoFiles(path, files, trace);  // rank_folder.h
        // One after another, each taken as a part or imported here (the parts are being
        // imported elsewhere at the same time).
        ProgressTask progress("importing " + path, files.size(), ProgressUnit::kItems, "files");
        for (const std::string& file : files) {
          TELLER_RETURN_IF_ERROR(ImportWholeFile(file, trace, parts, &ImportKineto));
          progress.Advance();
        }
        return Status::Ok();
      }
      return ImportWholeFile(path, trace, parts, &ImportKineto);
    case InputFormat::kUnknown:
      break;
  }
  return Status::Error(NotATrace(path, why));
}

Status ImportPaths(const std::vector<std::string>& paths, Trace& trace, PartSource* parts) {
  if (parts != nullptr) parts->Begin(paths);
  Status status;
  for (const std::string& p : paths) {
    status = ImportPath(p, trace, parts);
    if (!status.ok()) break;
  }
  if (parts != nullptr) parts->End();
  return status;
}

std::vector<std::string> PartFiles(const std::vector<std::string>& paths) {
  std::vector<std::string> out;
  for (const std::string& path : paths) {
    if (!IsFileOrDirectory(path)) continue;  // a pipe is read here, as a stream
    switch (DetectFormat(path)) {
      case InputFormat::kTellerRaw:
        for (std::string& f : RawPartFiles(path)) out.push_back(std::move(f));
        break;
      case InputFormat::kNsysSqlite:
        out.push_back(path);
        break;
      case InputFormat::kKineto:
        if (IsDirectory(path)) {
          for (std::string& f : KinetoRankFiles(path)) out.push_back(std::move(f));
        } else {
          out.push_back(path);
        }
        break;
      case InputFormat::kLog:
      case InputFormat::kUnknown:
        break;
    }
  }
  return out;
}

Status ImportPart(const std::string& file, ImportedPart& part) {
  std::string why;
  switch (DetectFormat(file, &why)) {
    case InputFormat::kTellerRaw:
      return ImportTellerRawFile(file, part.trace, &part.monotonic_to_utc_ns);
    case InputFormat::kNsysSqlite:
      return ImportNsysSqlite(file, part.trace);
    case InputFormat::kKineto:
      return ImportKineto(file, part.trace);
    case InputFormat::kLog:
    case InputFormat::kUnknown:
      break;
  }
  return Status::Error(NotATrace(file, why));
}

}  // namespace teller::ingest
