#include "src/dataset/json_out.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "teller/core/file_util.h"
#include "teller/core/gzip.h"

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

FileSink& FileSink::operator=(FileSink&& other) noexcept {
  if (this != &other) {
    Abandon();
    path_ = std::move(other.path_);
    gzip_ = other.gzip_;
    tmp_ = std::exchange(other.tmp_, std::string());
    buffer_ = std::move(other.buffer_);
    other.buffer_.clear();
  }
  return *this;
}

void FileSink::Abandon() {
  if (!tmp_.empty()) unlink(tmp_.c_str());
  tmp_.clear();
}

Status FileSink::AppendShared(std::string_view data, std::string* member) {
  if (!gzip_ || data.size() < kDirectBytes) return Append(data);
  if (member->empty() && !AppendGzipMember(data, kGzipLevel, member)) {
    buffer_.clear();
    return Status::Error("cannot write " + path_ + ": out of memory (gzip)");
  }
  return Write({}, *member);
}

Status FileSink::Write(std::string_view extra, std::string_view member) {
  // One open per burst of writes: the temporary is created the first time and appended to
  // after, so no descriptor is held per request in flight.
  const bool first = tmp_.empty();
  // The members of this write; per thread, so that sinks waiting for their request's next
  // step hold no compressed copy.
  thread_local std::string packed;
  if (gzip_) {
    packed.clear();
    // An empty gzip file is not a gzip stream: the first write makes at least one member.
    const bool empty = buffer_.empty() && extra.empty() && member.empty();
    bool ok = true;
    if (!buffer_.empty() || (first && empty)) ok = AppendGzipMember(buffer_, kGzipLevel, &packed);
    if (ok && !extra.empty()) ok = AppendGzipMember(extra, kGzipLevel, &packed);
    if (!ok) {
      buffer_.clear();
      return Status::Error("cannot write " + path_ + ": out of memory (gzip)");
    }
    if (packed.empty() && member.empty()) return Status::Ok();
  }
  if (first) tmp_ = TempPathFor(path_);
  const int fd =
      open(tmp_.c_str(), O_WRONLY | O_CLOEXEC | (first ? O_CREAT | O_EXCL : O_APPEND), 0644);
  if (fd < 0) {
    const int err = errno;
    if (first) tmp_.clear();  // nothing was created
    buffer_.clear();
    return Status::Error("cannot write " + path_ + ": " + std::strerror(err));
  }
  Status s = WriteAll(fd, path_, gzip_ ? std::string_view(packed) : std::string_view(buffer_));
  if (s.ok() && !gzip_ && !extra.empty()) s = WriteAll(fd, path_, extra);
  if (s.ok() && !member.empty()) s = WriteAll(fd, path_, member);
  if (close(fd) != 0 && s.ok())
    s = Status::Error("cannot write " + path_ + ": " + std::strerror(errno));
  buffer_.clear();
  return s;
}

Status FileSink::Close() {
  Status s = Flush();
  if (s.ok() && rename(tmp_.c_str(), path_.c_str()) != 0) {
    s = Status::Error("cannot write " + path_ + ": " + std::strerror(errno));
  }
  if (s.ok()) {
    tmp_.clear();  // it is the file now
  } else {
    Abandon();
  }
  std::string().swap(buffer_);
  return s;
}

}  // namespace teller::dataset::internal
