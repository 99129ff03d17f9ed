// Real third-party traces are not part of the repository: the tests that read them find
// them in the folder the CMake cache variable TELLER_REAL_DATA_DIR names (by default
// ../shared/data/real beside the checkout) and skip, naming what is missing, when it or
// the file they need is absent, so that a clone of the repository alone passes its tests.
#ifndef TELLER_TESTS_REAL_DATA_H_
#define TELLER_TESTS_REAL_DATA_H_

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <string>

namespace teller::real_data {

// The configured folder of real traces.
inline std::string Dir() { return TELLER_REAL_DATA_DIR; }

// A file or folder inside it (`rel` relative to it).
inline std::string Path(const std::string& rel) { return Dir() + "/" + rel; }

// Why a test that needs `rel` cannot run: empty when the file or folder exists.
inline std::string Missing(const std::string& rel) {
  const std::string path = Path(rel);
  struct stat st;
  if (stat(path.c_str(), &st) == 0) return "";
  return "real data not found: " + path +
         " (set the CMake cache variable TELLER_REAL_DATA_DIR to the folder of the real traces"
         " to run this test)";
}

}  // namespace teller::real_data

// Skips the current test when the real-data file or folder `rel` is absent. Use it in the
// test body (GTEST_SKIP returns from the function it is in).
#define TELLER_REQUIRE_REAL_DATA(rel)                                     \
  do {                                                                    \
    const std::string teller_missing = ::teller::real_data::Missing(rel); \
    if (!teller_missing.empty()) GTEST_SKIP() << teller_missing;          \
  } while (0)

#endif  // TELLER_TESTS_REAL_DATA_H_
