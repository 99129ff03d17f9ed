// The CUPTI injection on a machine without a driver (like CI): InitializeInjection must
// fail quietly, leave the program alone and leave a valid trace file that says CUDA
// collection was unavailable. Each case runs in a fresh process (death-test
// "threadsafe" style re-executes this binary), because InitializeInjection and the
// recorder initialise once per process.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "teller/format/raw_format.h"
#include "teller/format/raw_reader.h"

extern "C" int InitializeInjection(void);

namespace {

namespace fs = std::filesystem;

// An empty directory for one test. The death-test child re-runs the test body from the
// start, so the parent exports the path and the child reuses it instead of making its
// own (the path holds the parent's pid, to keep concurrent runs apart).
fs::path TestDir(const std::string& name) {
  const std::string var = "TELLER_CUPTI_TEST_DIR_" + name;
  if (const char* inherited = std::getenv(var.c_str())) return fs::path(inherited);
  const fs::path dir =
      fs::path(::testing::TempDir()) / ("teller_cupti_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  setenv(var.c_str(), dir.c_str(), 1);
  return dir;
}

// Runs InitializeInjection in a child with the given environment; exits with its result.
[[noreturn]] void RunInjection(const fs::path& trace_dir, bool verbose) {
  if (trace_dir.empty()) {
    unsetenv("TELLER_TRACE_DIR");
  } else {
    setenv("TELLER_TRACE_DIR", trace_dir.c_str(), 1);
  }
  if (verbose) {
    setenv("TELLER_VERBOSE", "1", 1);
  } else {
    unsetenv("TELLER_VERBOSE");
  }
  const int rc = InitializeInjection();
  // A second call (libcuda calls once, but be safe) must agree and stay quiet.
  const int again = InitializeInjection();
  std::exit(rc == again ? rc : 100 + again);
}

class CuptiInjectionTest : public ::testing::Test {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

bool HaveGpuDriver() {
  // The no-driver expectations below do not hold where a driver exists.
  return fs::exists("/dev/nvidiactl") || fs::exists("/proc/driver/nvidia/version");
}

TEST_F(CuptiInjectionTest, WithoutDriverDisablesQuietlyAndSaysSoInTheTrace) {
  if (HaveGpuDriver()) GTEST_SKIP() << "a GPU driver is present";
  const fs::path dir = TestDir("quiet");
  // Exit status 1 = "not active"; nothing at all on stderr.
  EXPECT_EXIT(RunInjection(dir, /*verbose=*/false), ::testing::ExitedWithCode(1), "^$");

  auto files = teller::raw::ListRawFiles(dir.string());
  ASSERT_TRUE(files.ok()) << files.status().message();
  ASSERT_EQ(files->size(), 1u);
  auto trace = teller::raw::ReadRawFile(files->front());
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  EXPECT_TRUE(trace->stats.clean_end);
  EXPECT_EQ(trace->Counter("cupti_unavailable"), 1u);
  EXPECT_EQ(trace->Counter("cupti_active"), 0u);
  for (const teller::raw::EventRecord& e : trace->events) {
    EXPECT_LT(e.kind, static_cast<uint8_t>(teller::raw::EventKind::kCudaRuntime))
        << "no CUDA event may appear without a driver";
  }
  fs::remove_all(dir);
}

TEST_F(CuptiInjectionTest, VerboseSaysWhyInOneLine) {
  if (HaveGpuDriver()) GTEST_SKIP() << "a GPU driver is present";
  const fs::path dir = TestDir("verbose");
  // Exactly one line, naming the failing call and CUPTI's error string.
  EXPECT_EXIT(RunInjection(dir, /*verbose=*/true), ::testing::ExitedWithCode(1),
              "^teller: cuptiSubscribe\\([^\n]*\\) failed: [^\n]+\n$");
  fs::remove_all(dir);
}

TEST_F(CuptiInjectionTest, OutsideTellerRunDoesNothing) {
  const fs::path dir = TestDir("off");
  // No TELLER_TRACE_DIR: the recorder stays off, so we return 1 before touching CUPTI.
  EXPECT_EXIT(RunInjection(fs::path(), /*verbose=*/true), ::testing::ExitedWithCode(1), "^$");
  EXPECT_TRUE(fs::is_empty(dir));
  fs::remove_all(dir);
}

}  // namespace
