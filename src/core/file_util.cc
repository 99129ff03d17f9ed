#include "teller/core/file_util.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace teller {

Status MakeDirs(const std::string& path) {
  for (size_t pos = path.find('/', 1);; pos = path.find('/', pos + 1)) {
    const std::string partial = path.substr(0, pos);
    if (!partial.empty() && !IsDirectory(partial) && mkdir(partial.c_str(), 0755) != 0 &&
        errno != EEXIST) {
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

bool IsEmptyRegularFile(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0;
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

namespace {

// Distinguishes the temporaries of several writers of one process in one directory.
std::atomic<uint64_t> g_temp_counter{0};

}  // namespace

std::string TempPathFor(const std::string& path) {
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  return dir + "." + base + "." + std::to_string(getpid()) + "." +
         std::to_string(g_temp_counter.fetch_add(1)) + ".tmp";
}

AtomicFileWriter::AtomicFileWriter(std::string path, const WriteFileOptions& options)
    : path_(std::move(path)), options_(options) {}

AtomicFileWriter::~AtomicFileWriter() { Abandon(); }

Status AtomicFileWriter::Fail(int err) {
  Abandon();
  status_ = Status::Error("cannot write " + path_ + ": " + std::strerror(err));
  return status_;
}

Status AtomicFileWriter::Open() {
  if (!status_.ok()) return status_;
  if (done_) return status_ = Status::Error("cannot write " + path_ + ": already committed");
  if (fd_ >= 0) return Status::Ok();
  if (!options_.replace && access(path_.c_str(), F_OK) == 0) {
    return status_ = Status::Error("cannot write " + path_ + ": the file already exists");
  }
  target_ = path_;
  struct stat st;
  if (lstat(path_.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
    // Through a symlink the file it names is replaced, not the link.
    if (char* real = realpath(path_.c_str(), nullptr)) {
      target_ = real;
      std::free(real);
    }
  }
  if (stat(target_.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    if (S_ISDIR(st.st_mode)) return Fail(EISDIR);
    // A device or a pipe (/dev/stdout, /dev/null, a FIFO) cannot be replaced by a file:
    // it is written in place, with the same checks.
    direct_ = true;
    fd_ = open(target_.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
    return fd_ >= 0 ? Status::Ok() : Fail(errno);
  }
  for (int attempt = 0;; ++attempt) {
    tmp_ = TempPathFor(target_);
    fd_ = open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, options_.mode);
    if (fd_ >= 0) return Status::Ok();
    // A leftover of a crashed process with a recycled pid: take the next name.
    if (errno != EEXIST || attempt == 100) {
      const int err = errno;
      tmp_.clear();
      return Fail(err);
    }
  }
}

Status AtomicFileWriter::Append(std::string_view bytes) {
  TELLER_RETURN_IF_ERROR(Open());
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = write(fd_, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Fail(errno);
    }
    if (n == 0) return Fail(ENOSPC);
    done += static_cast<size_t>(n);
  }
  return Status::Ok();
}

Status AtomicFileWriter::Commit() {
  TELLER_RETURN_IF_ERROR(Open());
  if (options_.sync && !direct_ && fsync(fd_) != 0) return Fail(errno);
  const int fd = fd_;
  fd_ = -1;
  // close() reports the delayed write errors of some file systems (NFS, quotas).
  if (close(fd) != 0) return Fail(errno);
  if (direct_) {
    done_ = true;
    return Status::Ok();
  }
  if (options_.replace) {
    if (rename(tmp_.c_str(), target_.c_str()) != 0) return Fail(errno);
  } else {
    // link() fails when the target exists, where rename() would replace it.
    if (link(tmp_.c_str(), target_.c_str()) == 0) {
      unlink(tmp_.c_str());
    } else if (errno == EEXIST) {
      return Fail(EEXIST);
    } else if ((errno == EPERM || errno == ENOTSUP) && access(target_.c_str(), F_OK) != 0) {
      // File systems without hard links (FAT, some FUSE mounts): rename, the target
      // having been absent just now.
      if (rename(tmp_.c_str(), target_.c_str()) != 0) return Fail(errno);
    } else {
      return Fail(errno);
    }
  }
  tmp_.clear();
  done_ = true;
  return Status::Ok();
}

void AtomicFileWriter::Abandon() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
  if (!tmp_.empty()) unlink(tmp_.c_str());
  tmp_.clear();
}

Status WriteFileAtomic(const std::string& path, std::string_view bytes,
                       const WriteFileOptions& options) {
  AtomicFileWriter writer(path, options);
  TELLER_RETURN_IF_ERROR(writer.Append(bytes));
  return writer.Commit();
}

}  // namespace teller
