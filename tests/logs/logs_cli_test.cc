// `teller logs mine` (docs/logs.md): templates of log files, saved, reused on a second run
// (old ids kept, new templates marked), and its errors.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "tests/command_test_util.h"

namespace teller {
namespace {

class LogsCliTest : public testing::CommandTest {
 protected:
  LogsCliTest() : CommandTest("teller_logs_cli_") {}
  testing::Outcome Teller(const std::string& args) { return Shell("", TELLER_BIN, args); }
};

TEST_F(LogsCliTest, BaselineTemplatesAreReusedOnAnIncident) {
  std::ofstream(tmp_ + "/base.log")
      << "INFO 05-23 09:31:22 [a.py:1] Received request cmpl-1a from 10.0.0.1\n"
         "INFO 05-23 09:31:23 [a.py:1] Received request cmpl-2b from 10.0.0.2\n"
         "\n"
         "INFO 05-23 09:31:24 [a.py:2] Finished request cmpl-1a in 12 ms\n";
  std::ofstream(tmp_ + "/inc.log")
      << "INFO 05-23 10:00:00 [a.py:1] Received request cmpl-9 from 10.0.0.9\n"
         "ERROR 05-23 10:00:01 [w.py:3] CUDA out of memory. Tried to allocate 2.00 GiB\n"
         "ERROR 05-23 10:00:02 [w.py:3] CUDA out of memory. Tried to allocate 1.50 GiB\n";
  auto o = Teller("logs mine '" + tmp_ + "/base.log' --out '" + tmp_ + "/base.tpl'");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("3 lines of 1 file: 2 templates\n"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("      0         2  Received request cmpl-<*> from <*>\n"),
            std::string::npos)
      << o.out;
  EXPECT_NE(o.out.find("counter logs.empty_lines = 1"), std::string::npos) << o.out;
  EXPECT_EQ(testing::ReadFile(tmp_ + "/base.tpl"),
            "teller-log-templates 1 depth=4 similarity=0.69999999999999996 max_children=100\n"
            "0 2 Received request cmpl-<*> from <*>\n"
            "1 1 Finished request cmpl-<*> in <*> ms\n");

  o = Teller("logs mine '" + tmp_ + "/inc.log' --templates '" + tmp_ + "/base.tpl' --out '" + tmp_ +
             "/inc.tpl'");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("3 lines of 1 file: 2 templates (1 new, 1 of the 2 in "), std::string::npos)
      << o.out;
  // Most frequent first: the new template (2 lines) before the old one (1 line).
  const size_t fresh =
      o.out.find("      2         2  [new] CUDA out of memory. Tried to allocate <*> GiB\n");
  const size_t old = o.out.find("      0         1  Received request cmpl-<*> from <*>\n");
  ASSERT_NE(fresh, std::string::npos) << o.out;
  ASSERT_NE(old, std::string::npos) << o.out;
  EXPECT_LT(fresh, old);
  EXPECT_EQ(testing::ReadFile(tmp_ + "/inc.tpl"),
            "teller-log-templates 1 depth=4 similarity=0.69999999999999996 max_children=100\n"
            "0 3 Received request cmpl-<*> from <*>\n"
            "1 1 Finished request cmpl-<*> in <*> ms\n"
            "2 2 CUDA out of memory. Tried to allocate <*> GiB\n");
  // --top limits the list and says what it left out.
  o = Teller("logs mine '" + tmp_ + "/base.log' --top 1");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("... 1 more templates (--top 0 lists all)"), std::string::npos) << o.out;
}

TEST_F(LogsCliTest, ErrorsAndUsage) {
  std::ofstream(tmp_ + "/a.log") << "hello 1\n";
  std::ofstream(tmp_ + "/bad.tpl") << "teller-log-templates 1 depth=4\n0 1 x\n3 1 y\n";
  auto o = Teller("logs mine '" + tmp_ + "/a.log' --templates '" + tmp_ + "/bad.tpl'");
  EXPECT_EQ(o.exit_code, 1);
  EXPECT_NE(o.err.find("bad.tpl:3: template id 3 where 1 was expected"), std::string::npos)
      << o.err;
  o = Teller("logs mine '" + tmp_ + "/missing.log'");
  EXPECT_EQ(o.exit_code, 1);
  EXPECT_NE(o.err.find("missing.log"), std::string::npos) << o.err;
  EXPECT_EQ(Teller("logs mine").exit_code, 2);
  EXPECT_EQ(Teller("logs grep x").exit_code, 2);
  EXPECT_EQ(Teller("logs mine '" + tmp_ + "/a.log' --similarity 2").exit_code, 2);
  EXPECT_EQ(Teller("logs mine '" + tmp_ + "/a.log' --depth x").exit_code, 2);
  o = Teller("logs mine '" + tmp_ + "/a.log' --templates x --depth 5");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("come from the --templates file"), std::string::npos) << o.err;
  o = Teller("logs --help");
  EXPECT_EQ(o.exit_code, 0);
  EXPECT_NE(o.out.find("usage: teller logs mine"), std::string::npos);
}

}  // namespace
}  // namespace teller
