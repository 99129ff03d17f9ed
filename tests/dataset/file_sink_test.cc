// The dataset build's streamed output files (src/dataset/json_out.h): written through a
// temporary that takes the file's name only when the file is complete.
#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "src/dataset/json_out.h"

namespace teller::dataset::internal {
namespace {

class FileSinkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/teller_file_sink_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::system(("rm -rf '" + dir_ + "'").c_str()); }

  // The names in the directory, sorted.
  std::vector<std::string> Entries() const {
    std::vector<std::string> out;
    if (DIR* d = opendir(dir_.c_str())) {
      while (dirent* e = readdir(d)) {
        const std::string name = e->d_name;
        if (name != "." && name != "..") out.push_back(name);
      }
      closedir(d);
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  static std::string Read(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

  std::string dir_;
};

TEST_F(FileSinkTest, TheFileAppearsWholeAtClose) {
  const std::string path = dir_ + "/steps.jsonl";
  FileSink sink(path);
  sink.buffer() += "{\"a\":1}\n";
  ASSERT_TRUE(sink.Flush().ok());
  const std::string large(300 << 10, 'x');  // past the size that goes straight to the file
  ASSERT_TRUE(sink.Append(large).ok());
  sink.buffer() += "\n";
  // Written so far, but only to the temporary: no file of that name yet.
  ASSERT_EQ(Entries().size(), 1u);
  EXPECT_NE(Entries()[0], "steps.jsonl");
  EXPECT_EQ(Entries()[0].rfind(".steps.jsonl.", 0), 0u) << Entries()[0];
  ASSERT_TRUE(sink.Close().ok());
  EXPECT_EQ(Entries(), std::vector<std::string>{"steps.jsonl"}) << "the temporary is gone";
  EXPECT_EQ(Read(path), "{\"a\":1}\n" + large + "\n");
}

TEST_F(FileSinkTest, AnEmptyFileIsStillCreated) {
  FileSink sink(dir_ + "/trace.json");
  ASSERT_TRUE(sink.Close().ok());
  EXPECT_EQ(Entries(), std::vector<std::string>{"trace.json"});
  EXPECT_EQ(Read(dir_ + "/trace.json"), "");
}

TEST_F(FileSinkTest, AnAbortedWriteLeavesNoFile) {
  {
    FileSink sink(dir_ + "/trace.json");
    sink.buffer() += "{\"steps\":[";
    ASSERT_TRUE(sink.Flush().ok());
    // A moved sink owns the temporary; the moved-from one must not remove it.
    FileSink moved = std::move(sink);
    moved.buffer() += "{\"step\":0}";
    ASSERT_TRUE(moved.Flush().ok());
    EXPECT_EQ(Entries().size(), 1u);
    // The build stops here (an error elsewhere): the sink goes without Close().
  }
  EXPECT_TRUE(Entries().empty()) << Entries().front();
}

TEST_F(FileSinkTest, AFailedCloseLeavesNoPartialFile) {
  // The target's name is taken by a directory that is not empty: the temporary cannot
  // take it, and is removed.
  const std::string path = dir_ + "/out";
  ASSERT_EQ(mkdir(path.c_str(), 0755), 0);
  std::ofstream(path + "/keep") << "x";
  FileSink sink(path);
  sink.buffer() += "partial";
  ASSERT_TRUE(sink.Flush().ok());
  const Status s = sink.Close();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message().rfind("cannot write " + path + ": ", 0), 0u) << s.message();
  EXPECT_EQ(Entries(), std::vector<std::string>{"out"}) << "no temporary left";
  EXPECT_EQ(Read(path + "/keep"), "x");

  // A file that cannot be created at all leaves nothing either.
  FileSink nowhere(dir_ + "/missing/trace.json");
  nowhere.buffer() += "x";
  EXPECT_FALSE(nowhere.Flush().ok());
  EXPECT_FALSE(nowhere.Close().ok());
  EXPECT_EQ(Entries(), std::vector<std::string>{"out"});
}

}  // namespace
}  // namespace teller::dataset::internal
