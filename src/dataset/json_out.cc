#include "src/dataset/json_out.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <utility>

namespace teller::dataset::internal {
namespace {

Status WriteAll(int fd, const std::string& path, std::string_view data) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t w = write(fd, data.data() + done, data.size() - done);
    if (w < 0) {
      if (errno == EINTR) continue;
      return Status::Error("cannot write " + path + ": " + std::strerror(errno));
    }
    done += static_cast<size_t>(w);
  }
  return Status::Ok();
}

}  // namespace

void AppendDouble(std::string& out, double v) {
  if (!std::isfinite(v)) {
    out += "null";  // JSON has no NaN or infinity
    return;
  }
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof(buf), v);
  out.append(buf, static_cast<size_t>(r.ptr - buf));
}

namespace {

// Opens for one burst of writes: created (truncated) the first time, appended to after.
// Closing after every burst keeps no descriptor per request in flight, however many
// requests a setting has open at once.
int OpenBurst(const std::string& path, bool started) {
  return open(path.c_str(), O_WRONLY | O_CLOEXEC | (started ? O_APPEND : O_CREAT | O_TRUNC), 0644);
}

}  // namespace

Status FileSink::Write(std::string_view extra) {
  const int fd = OpenBurst(path_, started_);
  if (fd < 0) return Status::Error("cannot write " + path_ + ": " + std::strerror(errno));
  started_ = true;
  Status s = WriteAll(fd, path_, buffer_);
  if (s.ok() && !extra.empty()) s = WriteAll(fd, path_, extra);
  if (close(fd) != 0 && s.ok())
    s = Status::Error("cannot write " + path_ + ": " + std::strerror(errno));
  buffer_.clear();
  return s;
}

Status FileSink::Close() {
  TELLER_RETURN_IF_ERROR(Flush());
  std::string().swap(buffer_);
  return Status::Ok();
}

}  // namespace teller::dataset::internal
