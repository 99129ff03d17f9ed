#include "teller/core/json_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace teller {

Result<simdjson::padded_string> LoadJsonFile(const std::string& path) {
  // Read here rather than by simdjson's loader, whose errors do not say why.
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::Error(path + ": cannot read (" + std::strerror(errno) + ")");
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return Status::Error(path + ": cannot read (not a regular file)");
  }
  simdjson::padded_string text(static_cast<size_t>(st.st_size));
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = read(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = n < 0 ? std::strerror(errno) : "file shrank while reading";
      close(fd);
      return Status::Error(path + ": cannot read (" + why + ")");
    }
    done += static_cast<size_t>(n);
  }
  close(fd);
  return text;
}

size_t LocateStage1Error(std::string_view doc, simdjson::error_code code) {
  if (code == simdjson::UNCLOSED_STRING) {
    bool in_string = false;
    size_t start = 0;
    for (size_t i = 0; i < doc.size(); ++i) {
      if (in_string) {
        if (doc[i] == '\\') {
          ++i;
        } else if (doc[i] == '"') {
          in_string = false;
        }
      } else if (doc[i] == '"') {
        in_string = true;
        start = i;
      }
    }
    return start;
  }
  if (code == simdjson::UNESCAPED_CHARS) {
    // The first control character (below 0x20) inside a string.
    bool in_string = false;
    for (size_t i = 0; i < doc.size(); ++i) {
      if (!in_string) {
        in_string = doc[i] == '"';
      } else if (doc[i] == '\\') {
        ++i;
      } else if (doc[i] == '"') {
        in_string = false;
      } else if (static_cast<unsigned char>(doc[i]) < 0x20) {
        return i;
      }
    }
    return doc.size();
  }
  if (code == simdjson::UTF8_ERROR) {
    const auto* p = reinterpret_cast<const unsigned char*>(doc.data());
    size_t i = 0;
    while (i < doc.size()) {
      const unsigned char c = p[i];
      const size_t n = c < 0x80         ? 1
                       : (c >> 5) == 6  ? 2
                       : (c >> 4) == 14 ? 3
                       : (c >> 3) == 30 ? 4
                                        : 0;
      if (n == 0 || i + n > doc.size()) return i;
      for (size_t k = 1; k < n; ++k) {
        if ((p[i + k] & 0xc0) != 0x80) return i;
      }
      i += n;
    }
  }
  return doc.size();
}

size_t JsonContext::Offset(simdjson::error_code e) const {
  if (e == simdjson::UNCLOSED_STRING || e == simdjson::UTF8_ERROR ||
      e == simdjson::UNESCAPED_CHARS) {
    return LocateStage1Error(text_, e);
  }
  return Offset();
}

size_t JsonContext::Offset() const {
  const char* p = nullptr;
  if (doc_.current_location().get(p) == simdjson::SUCCESS && p >= text_.data() &&
      p <= text_.data() + text_.size()) {
    return static_cast<size_t>(p - text_.data());
  }
  return text_.size();
}

Status JsonContext::Error(simdjson::error_code e, std::string_view what) const {
  return Status::Error(where_ + ": byte " + std::to_string(Offset(e)) + ": " + std::string(what) +
                       " (" + simdjson::error_message(e) + ")");
}

Status JsonContext::Error(std::string_view what) const {
  return Status::Error(where_ + ": byte " + std::to_string(Offset()) + ": " + std::string(what));
}

}  // namespace teller
