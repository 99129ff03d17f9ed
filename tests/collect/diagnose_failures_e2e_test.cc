// End-to-end tests of the failure findings (docs/diagnose.md, "Failures"): real programs
// under the real `teller run`, then `teller diagnose` on their trace directories. One dies
// of SIGSEGV inside two NVTX ranges (crash_workload); one logs a CUDA out-of-memory error
// and an NCCL watchdog timeout and exits 1 (failing_program.py).
#include <gtest/gtest.h>
#include <simdjson.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

#include "tests/collect/crash_workload.h"
#include "tests/command_test_util.h"

namespace teller {
namespace {

using testing::Outcome;
using testing::ReadFile;

class DiagnoseFailuresE2eTest : public testing::CommandTest {
 protected:
  DiagnoseFailuresE2eTest() : CommandTest("teller-failures-e2e-") {}

  // `teller <args>` through the shell, without core dumps (a crash must not fill the disk).
  Outcome Teller(const std::string& args) { return Shell("ulimit -c 0;", TELLER_EXE, args); }
};

TEST_F(DiagnoseFailuresE2eTest, SegfaultInsideARangeIsAFindingNamingTheOpenRanges) {
  const std::string dir = tmp_ + "/crash";
  Outcome o = Teller("run --flush-ms " + std::to_string(kCrashFlushMs) + " --out '" + dir +
                     "' -- '" + std::string(CRASH_EXE) + "'");
  ASSERT_EQ(o.exit_code, 128 + 11) << o.err;

  o = Teller("diagnose '" + dir + "'");
  EXPECT_EQ(o.exit_code, 0) << o.err;
  // The first finding: the death, with what the process was inside of.
  const size_t head = o.out.find("failures: ");
  ASSERT_NE(head, std::string::npos) << o.out;
  const size_t death = o.out.find("ERROR   scheduling_software process ");
  ASSERT_NE(death, std::string::npos) << o.out;
  EXPECT_NE(o.out.find(" died of signal 11 (SIGSEGV)", death), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("Its trace ends inside ProfilerStep#7 > forward"), std::string::npos)
      << o.out;
  EXPECT_NE(o.out.find("- open range: ProfilerStep#7 (thread "), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("- open range: forward (thread "), std::string::npos) << o.out;
  EXPECT_EQ(o.out.find("- open range: embedding"), std::string::npos) << "it was closed";
  // The findings come before the step diagnosis.
  EXPECT_LT(head, o.out.find("steps abnormal")) << o.out;

  o = Teller("diagnose '" + dir + "' --fail-on-anomaly");
  EXPECT_EQ(o.exit_code, 3) << o.out << o.err;
}

TEST_F(DiagnoseFailuresE2eTest, LoggedOomAndNcclTimeoutThenExit1) {
  const std::string dir = tmp_ + "/failing";
  Outcome o = Teller("run --python-hooks none --out '" + dir + "' -- '" + std::string(PYTHON_EXE) +
                     "' '" + std::string(FAILING_PROGRAM) + "'");
  ASSERT_EQ(o.exit_code, 1) << o.err;

  o = Teller("diagnose '" + dir + "' --json '" + tmp_ + "/d.json'");
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("failures: 3 errors, 0 warnings"), std::string::npos) << o.out;

  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.load(tmp_ + "/d.json").get(doc), simdjson::SUCCESS)
      << ReadFile(tmp_ + "/d.json");
  EXPECT_EQ(std::string_view(doc["format"].get_string()), "teller-diagnosis");
  EXPECT_EQ(int64_t(doc["version"].get_int64()), 2);
  EXPECT_EQ(std::string_view(doc["mode"].get_string()), "logs");
  simdjson::dom::array findings = doc["findings"].get_array();
  ASSERT_EQ(findings.size(), 3u);
  auto field = [](simdjson::dom::element f, const char* key) {
    return std::string(std::string_view(f[key].get_string()));
  };
  // The exit status first, its category that of the first specific error in the logs.
  EXPECT_EQ(field(findings.at(0), "kind"), "exit_status");
  EXPECT_NE(field(findings.at(0), "title").find("exited with status 1"), std::string::npos);
  EXPECT_EQ(field(findings.at(0), "category"), "memory_resource");
  EXPECT_NE(field(findings.at(0), "explanation").find("likely cause: CUDA out of memory"),
            std::string::npos);
  // Then the two log errors in the order they were printed.
  EXPECT_EQ(field(findings.at(1), "kind"), "log_error");
  EXPECT_EQ(field(findings.at(1), "category"), "memory_resource");
  EXPECT_EQ(field(findings.at(1), "title"), "CUDA out of memory");
  EXPECT_NE(field(findings.at(1), "source").find("logs/stderr.log"), std::string::npos);
  EXPECT_EQ(int64_t(findings.at(1)["line"].get_int64()), 1);
  EXPECT_EQ(field(findings.at(2), "category"), "communication");
  EXPECT_EQ(field(findings.at(2), "title"), "NCCL collective timed out (watchdog)");
  EXPECT_LT(int64_t(findings.at(1)["ts_ns"].get_int64()),
            int64_t(findings.at(2)["ts_ns"].get_int64()));

  o = Teller("diagnose '" + dir + "' --fail-on-anomaly");
  EXPECT_EQ(o.exit_code, 3) << o.out << o.err;
}

TEST_F(DiagnoseFailuresE2eTest, CleanRunHasNoFindings) {
  const std::string dir = tmp_ + "/clean";
  Outcome o = Teller("run --python-hooks none --out '" + dir + "' -- sh -c 'echo all good'");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  o = Teller("diagnose '" + dir + "' --fail-on-anomaly");
  EXPECT_EQ(o.exit_code, 0) << o.out << o.err;
  EXPECT_NE(o.out.find("no failures found in 1 log lines"), std::string::npos) << o.out;
  // A command that exits non-zero without printing anything still is a finding.
  o = Teller("run --python-hooks none --out '" + tmp_ + "/quiet' -- sh -c 'exit 42'");
  ASSERT_EQ(o.exit_code, 42);
  o = Teller("diagnose '" + tmp_ + "/quiet' --fail-on-anomaly");
  EXPECT_EQ(o.exit_code, 3) << o.out << o.err;
  EXPECT_NE(o.out.find("exited with status 42"), std::string::npos) << o.out;
}

}  // namespace
}  // namespace teller
