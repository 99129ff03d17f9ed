// WriteFileAtomic / AtomicFileWriter: whole file or nothing, the old file intact on failure.
#include "teller/core/file_util.h"

#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace teller {
namespace {

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/teller_file_util_test_XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() { std::system(("rm -rf '" + path_ + "'").c_str()); }
  const std::string& path() const { return path_; }
  // Every entry but "." and "..", dot files included (temporaries are dot files).
  std::vector<std::string> Entries() const {
    std::vector<std::string> out;
    if (DIR* d = opendir(path_.c_str())) {
      while (dirent* e = readdir(d)) {
        if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) {
          out.push_back(e->d_name);
        }
      }
      closedir(d);
    }
    return out;
  }

 private:
  std::string path_;
};

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Files may grow to `bytes` only: a write past it fails with EFBIG, the way a full disk
// fails a write (root ignores permissions, so a read-only directory would not do).
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    getrlimit(RLIMIT_FSIZE, &old_);
    old_handler_ = signal(SIGXFSZ, SIG_IGN);
    rlimit lim = old_;
    lim.rlim_cur = bytes;
    setrlimit(RLIMIT_FSIZE, &lim);
  }
  ~FileSizeLimit() {
    setrlimit(RLIMIT_FSIZE, &old_);
    signal(SIGXFSZ, old_handler_);
  }

 private:
  rlimit old_{};
  void (*old_handler_)(int) = nullptr;
};

TEST(WriteFileAtomicTest, WritesAndReplacesLeavingNoTemporary) {
  TempDir dir;
  const std::string path = dir.path() + "/out.json";
  ASSERT_TRUE(WriteFileAtomic(path, "first\n").ok());
  EXPECT_EQ(ReadAll(path), "first\n");
  const std::string binary("a\0b\xff", 4);
  ASSERT_TRUE(WriteFileAtomic(path, binary).ok());
  EXPECT_EQ(ReadAll(path), binary);
  ASSERT_TRUE(WriteFileAtomic(dir.path() + "/empty", "").ok());
  EXPECT_TRUE(IsRegularFile(dir.path() + "/empty"));
  EXPECT_EQ(ReadAll(dir.path() + "/empty"), "");
  std::vector<std::string> entries = dir.Entries();
  std::sort(entries.begin(), entries.end());
  EXPECT_EQ(entries, (std::vector<std::string>{"empty", "out.json"}));
}

TEST(WriteFileAtomicTest, FailedWriteKeepsTheOldFile) {
  TempDir dir;
  const std::string path = dir.path() + "/manifest.json";
  ASSERT_TRUE(WriteFileAtomic(path, "good old content\n").ok());
  const std::string big(size_t{1} << 20, 'x');
  Status s;
  {
    FileSizeLimit limit(4096);
    s = WriteFileAtomic(path, big);
  }
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "cannot write " + path + ": " + std::strerror(EFBIG));
  EXPECT_EQ(ReadAll(path), "good old content\n");
  EXPECT_EQ(dir.Entries(), std::vector<std::string>{"manifest.json"}) << "temporary removed";
}

TEST(WriteFileAtomicTest, ErrorsNameTheFileAndTheReason) {
  TempDir dir;
  const std::string path = dir.path() + "/no/such/dir/x.json";
  const Status s = WriteFileAtomic(path, "x");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "cannot write " + path + ": " + std::strerror(ENOENT));
}

TEST(WriteFileAtomicTest, NoReplaceRefusesAnExistingFile) {
  TempDir dir;
  const std::string path = dir.path() + "/a.log";
  WriteFileOptions once;
  once.replace = false;
  ASSERT_TRUE(WriteFileAtomic(path, "one", once).ok());
  const Status s = WriteFileAtomic(path, "two", once);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
  EXPECT_EQ(ReadAll(path), "one");
  EXPECT_EQ(dir.Entries(), std::vector<std::string>{"a.log"});
  WriteFileOptions sync;
  sync.sync = true;
  ASSERT_TRUE(WriteFileAtomic(path, "three", sync).ok());
  EXPECT_EQ(ReadAll(path), "three");
}

TEST(WriteFileAtomicTest, DevicesAreWrittenInPlaceNeverReplaced) {
  // A device cannot be renamed over (as root it could, and the device would be gone).
  struct stat before;
  ASSERT_EQ(stat("/dev/full", &before), 0);
  ASSERT_TRUE(S_ISCHR(before.st_mode));
  const Status full = WriteFileAtomic("/dev/full", "data");
  ASSERT_FALSE(full.ok());
  EXPECT_EQ(full.message(), std::string("cannot write /dev/full: ") + std::strerror(ENOSPC));
  EXPECT_TRUE(WriteFileAtomic("/dev/null", "data").ok());
  struct stat after;
  ASSERT_EQ(stat("/dev/full", &after), 0);
  EXPECT_TRUE(S_ISCHR(after.st_mode));
  EXPECT_EQ(after.st_rdev, before.st_rdev);
  ASSERT_EQ(stat("/dev/null", &after), 0);
  EXPECT_TRUE(S_ISCHR(after.st_mode));

  TempDir dir;
  const Status d = WriteFileAtomic(dir.path(), "x");
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.message(), "cannot write " + dir.path() + ": " + std::strerror(EISDIR));
}

TEST(WriteFileAtomicTest, SymlinksAreWrittenThrough) {
  TempDir dir;
  const std::string real = dir.path() + "/real.json";
  const std::string link = dir.path() + "/link.json";
  ASSERT_TRUE(WriteFileAtomic(real, "old").ok());
  ASSERT_EQ(symlink("real.json", link.c_str()), 0);
  ASSERT_TRUE(WriteFileAtomic(link, "new").ok());
  EXPECT_EQ(ReadAll(real), "new");
  struct stat st;
  ASSERT_EQ(lstat(link.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode)) << "the link stays a link";
  std::vector<std::string> entries = dir.Entries();
  std::sort(entries.begin(), entries.end());
  EXPECT_EQ(entries, (std::vector<std::string>{"link.json", "real.json"}));
}

TEST(AtomicFileWriterTest, StreamsAndCommitsOrLeavesNothing) {
  TempDir dir;
  const std::string path = dir.path() + "/steps.jsonl";
  {
    AtomicFileWriter w(path);
    ASSERT_TRUE(w.Append("line 1\n").ok());
    ASSERT_TRUE(w.Append("line 2\n").ok());
    EXPECT_FALSE(IsRegularFile(path)) << "not visible before Commit";
    // Destroyed without Commit: an error path of the caller.
  }
  EXPECT_TRUE(dir.Entries().empty());
  ASSERT_TRUE(WriteFileAtomic(path, "old\n").ok());
  {
    AtomicFileWriter w(path);
    for (int i = 0; i < 1000; ++i) ASSERT_TRUE(w.Append(std::to_string(i) + "\n").ok());
    ASSERT_TRUE(w.Commit().ok());
    EXPECT_FALSE(w.Append("late").ok()) << "a committed writer takes no more data";
  }
  std::string expected;
  for (int i = 0; i < 1000; ++i) expected += std::to_string(i) + "\n";
  EXPECT_EQ(ReadAll(path), expected);
  EXPECT_EQ(dir.Entries(), std::vector<std::string>{"steps.jsonl"});
}

TEST(AtomicFileWriterTest, ErrorIsStickyAndTheTargetUntouched) {
  TempDir dir;
  const std::string path = dir.path() + "/big.json";
  ASSERT_TRUE(WriteFileAtomic(path, "previous").ok());
  AtomicFileWriter w(path);
  ASSERT_TRUE(w.Append(std::string(1000, 'a')).ok());
  {
    FileSizeLimit limit(2048);
    const Status s = w.Append(std::string(4096, 'b'));
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.message().find(std::strerror(EFBIG)), std::string::npos) << s.message();
  }
  EXPECT_FALSE(w.Append("c").ok());
  EXPECT_FALSE(w.Commit().ok()) << "a failed writer never renames";
  EXPECT_EQ(ReadAll(path), "previous");
  EXPECT_EQ(dir.Entries(), std::vector<std::string>{"big.json"});
}

}  // namespace
}  // namespace teller
