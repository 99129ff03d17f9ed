// The report commands end to end: `teller export --perfetto [--diagnosis]` and `teller
// diagnose --html --trace-out`, their summaries and their errors (docs/report.md).
#include <gtest/gtest.h>

#include <string>

#include "command_test_util.h"

namespace teller {
namespace {

class ReportCliTest : public testing::CommandTest {
 protected:
  ReportCliTest() : CommandTest("teller-report-cli-") {}
  testing::Outcome Teller(const std::string& args) { return Shell("", TELLER_BIN, args); }
  // A small simulated run with a slowed GEMM on one GPU.
  void Simulate(const std::string& dir, int seed) {
    const testing::Outcome o = Teller(
        "simulate --profile vllm-v1-online --requests 4 --layers 4 --output-median 8 --seed " +
        std::to_string(seed) +
        " --fault kernel_slow_one_gpu:target=gemm,magnitude=3,onset=0.1s,duration=0.3s,rank=1 "
        "--out '" +
        dir + "'");
    ASSERT_EQ(o.exit_code, 0) << o.err;
  }
};

TEST_F(ReportCliTest, DiagnoseWritesBothAndExportFromItsJsonIsTheSame) {
  Simulate(tmp_ + "/run", 7);
  const testing::Outcome d =
      Teller("diagnose '" + tmp_ + "/run' --json '" + tmp_ + "/d.json' --html '" + tmp_ +
             "/r.html' --trace-out '" + tmp_ + "/t.json'");
  ASSERT_EQ(d.exit_code, 0) << d.err;
  EXPECT_NE(d.out.find("wrote " + tmp_ + "/r.html ("), std::string::npos) << d.out;
  EXPECT_NE(d.out.find("wrote " + tmp_ + "/t.json: "), std::string::npos) << d.out;
  EXPECT_NE(d.out.find("step markers"), std::string::npos) << d.out;
  const std::string html = testing::ReadFile(tmp_ + "/r.html");
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("id=\"teller-data\""), std::string::npos);
  const testing::Outcome e = Teller("export '" + tmp_ + "/run' --perfetto '" + tmp_ +
                                    "/e.json' --diagnosis '" + tmp_ + "/d.json'");
  ASSERT_EQ(e.exit_code, 0) << e.err;
  EXPECT_EQ(testing::ReadFile(tmp_ + "/e.json"), testing::ReadFile(tmp_ + "/t.json"));
}

TEST_F(ReportCliTest, ExportRefusesTheDiagnosisOfAnotherTrace) {
  Simulate(tmp_ + "/a", 7);
  Simulate(tmp_ + "/b", 8);
  ASSERT_EQ(Teller("diagnose '" + tmp_ + "/a' --json '" + tmp_ + "/a.json'").exit_code, 0);
  const testing::Outcome o = Teller("export '" + tmp_ + "/b' --perfetto '" + tmp_ +
                                    "/b.perfetto.json' --diagnosis '" + tmp_ + "/a.json'");
  EXPECT_EQ(o.exit_code, 1) << o.out;
  EXPECT_NE(o.err.find("does not match this trace"), std::string::npos) << o.err;
}

TEST_F(ReportCliTest, UsageErrors) {
  EXPECT_EQ(Teller("export").exit_code, 2);
  const testing::Outcome no_out = Teller("export somewhere");
  EXPECT_EQ(no_out.exit_code, 2);
  EXPECT_NE(no_out.err.find("--perfetto FILE"), std::string::npos) << no_out.err;
  EXPECT_EQ(Teller("export x --perfetto").exit_code, 2);
  EXPECT_EQ(Teller("export x --bogus").exit_code, 2);
  EXPECT_EQ(Teller("export --help").exit_code, 0);
  const testing::Outcome missing =
      Teller("export '" + tmp_ + "/none' --perfetto '" + tmp_ + "/o.json'");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("teller export: "), std::string::npos) << missing.err;
  // A diagnosis file that is not one.
  Simulate(tmp_ + "/run", 7);
  const testing::Outcome bad = Teller("export '" + tmp_ + "/run' --perfetto '" + tmp_ +
                                      "/o.json' --diagnosis '" + tmp_ + "/run/manifest.json'");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("manifest.json"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace teller
