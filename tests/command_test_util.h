// Test scaffolding for end-to-end tests that run a command through the shell: a temporary
// folder per test, and the command's exit status and both output streams.
#ifndef TELLER_TESTS_COMMAND_TEST_UTIL_H_
#define TELLER_TESTS_COMMAND_TEST_UTIL_H_

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace teller::testing {

struct Outcome {
  int exit_code = -1;  // -1 when the shell did not exit normally
  std::string out, err;
};

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A fixture with a fresh /tmp/<prefix>XXXXXX folder, removed after the test.
class CommandTest : public ::testing::Test {
 protected:
  explicit CommandTest(std::string prefix) : prefix_(std::move(prefix)) {}
  void SetUp() override {
    std::string tmpl = "/tmp/" + prefix_ + "XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    tmp_ = tmpl;
  }
  void TearDown() override { std::system(("rm -rf '" + tmp_ + "'").c_str()); }

  // `<prefix> '<exe>' <args>` through the shell; stdout and stderr go through files in the
  // temporary folder.
  Outcome Shell(const std::string& prefix, const std::string& exe, const std::string& args) {
    Outcome o;
    const std::string cmd =
        prefix + " '" + exe + "' " + args + " >'" + tmp_ + "/out.txt' 2>'" + tmp_ + "/err.txt'";
    const int status = std::system(cmd.c_str());
    o.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    o.out = ReadFile(tmp_ + "/out.txt");
    o.err = ReadFile(tmp_ + "/err.txt");
    return o;
  }

  std::string tmp_;

 private:
  std::string prefix_;
};

}  // namespace teller::testing

#endif  // TELLER_TESTS_COMMAND_TEST_UTIL_H_
