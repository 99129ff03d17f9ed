// Temporary folders of a test program, removed when it exits (each test runs in a process
// of its own), so that runs of the suite leave nothing under /tmp. TELLER_KEEP_TEST_DIRS=1
// keeps them for a look after a failure.
#ifndef TELLER_TESTS_TEMP_DIRS_H_
#define TELLER_TESTS_TEMP_DIRS_H_

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

namespace teller::testing {

class TempDirs {
 public:
  ~TempDirs() {
    if (std::getenv("TELLER_KEEP_TEST_DIRS") != nullptr) return;
    for (const std::string& d : dirs_) {
      std::error_code ec;
      std::filesystem::remove_all(d, ec);
    }
  }
  // A fresh (removed if it exists) folder /tmp/<prefix>-<pid>-<tag><n>, not created.
  std::string Make(const std::string& prefix, const std::string& tag) {
    std::string dir = "/tmp/" + prefix + "-" + std::to_string(getpid()) + "-" + tag +
                      std::to_string(dirs_.size());
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    dirs_.push_back(dir);
    return dir;
  }

 private:
  std::vector<std::string> dirs_;
};

// The program's registry: destroyed, and its folders removed, at exit.
inline TempDirs& ProgramTempDirs() {
  static TempDirs dirs;
  return dirs;
}

}  // namespace teller::testing

#endif  // TELLER_TESTS_TEMP_DIRS_H_
