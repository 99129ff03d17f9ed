// log.txt lines (include/teller/dataset/log_text.h): the writer's exact text, the reader of
// both versions, and the errors a damaged line gives.
#include "teller/dataset/log_text.h"

#include <gtest/gtest.h>

namespace teller::dataset {
namespace {

TEST(LogText, WritesVersion2Lines) {
  std::string out;
  DatasetLogLine a;
  a.ts_ns = 1050;
  a.step = 0;
  a.template_id = 3;
  a.names_request = false;
  a.level = LogLevel::kInfo;
  a.message = "engine line without a request";
  AppendDatasetLogLine(out, a);
  DatasetLogLine b;
  b.ts_ns = LogTable::kNoTime;
  b.step = 12;
  b.template_id = 0;
  b.names_request = true;
  b.level = LogLevel::kUnknown;
  b.message = "Finished request a";
  AppendDatasetLogLine(out, b);
  EXPECT_EQ(out,
            "1050 step=0 template=3 scope=batch INFO engine line without a request\n"
            "- step=12 template=0 scope=request - Finished request a\n");
}

TEST(LogText, ReadsWhatItWrites) {
  DatasetLogLine in;
  in.ts_ns = -7;  // times before 1970 are still times
  in.step = 4;
  in.template_id = 41;
  in.names_request = true;
  in.level = LogLevel::kCritical;
  in.message = "CUDA error: an illegal memory access  was encountered ";
  std::string text;
  AppendDatasetLogLine(text, in);
  ASSERT_EQ(text.back(), '\n');
  text.pop_back();
  DatasetLogLine out;
  ASSERT_TRUE(ParseDatasetLogLine(text, &out).ok());
  EXPECT_EQ(out.ts_ns, -7);
  EXPECT_EQ(out.step, 4u);
  EXPECT_EQ(out.template_id, 41u);
  EXPECT_TRUE(out.has_scope);
  EXPECT_TRUE(out.names_request);
  EXPECT_EQ(out.level, LogLevel::kCritical);
  // The message comes back byte for byte, inner and trailing blanks included.
  EXPECT_EQ(out.message, in.message);
}

TEST(LogText, ReadsVersion1Lines) {
  DatasetLogLine out;
  ASSERT_TRUE(ParseDatasetLogLine("1500 step=2 WARNING request a did something", &out).ok());
  EXPECT_EQ(out.ts_ns, 1500);
  EXPECT_EQ(out.step, 2u);
  EXPECT_EQ(out.template_id, DatasetLogLine::kNoTemplate);
  EXPECT_FALSE(out.has_scope);
  EXPECT_EQ(out.level, LogLevel::kWarning);
  EXPECT_EQ(out.message, "request a did something");
  ASSERT_TRUE(ParseDatasetLogLine("- step=0 - ", &out).ok());
  EXPECT_EQ(out.ts_ns, LogTable::kNoTime);
  EXPECT_EQ(out.level, LogLevel::kUnknown);
  EXPECT_EQ(out.message, "");
}

TEST(LogText, DamagedLinesSayWhatIsWrong) {
  DatasetLogLine out;
  auto error = [&out](std::string_view line) {
    const Status st = ParseDatasetLogLine(line, &out);
    EXPECT_FALSE(st.ok()) << line;
    return st.ok() ? std::string() : st.message();
  };
  EXPECT_NE(error("12x step=0 INFO m").find("expected a time"), std::string::npos);
  EXPECT_NE(error("12 stp=0 INFO m").find("'step=<k>'"), std::string::npos);
  EXPECT_NE(error("12 step=-1 INFO m").find("'step=<k>'"), std::string::npos);
  EXPECT_NE(error("12 step=0 template=x scope=batch INFO m").find("bad template id"),
            std::string::npos);
  EXPECT_NE(error("12 step=0 template=4294967295 scope=batch INFO m").find("bad template id"),
            std::string::npos);
  EXPECT_NE(error("12 step=0 template=1 INFO m").find("scope="), std::string::npos);
  EXPECT_NE(error("12 step=0 template=1 scope=batch LOUD m").find("expected a level"),
            std::string::npos);
  EXPECT_NE(error("").find("expected a time"), std::string::npos);
}

}  // namespace
}  // namespace teller::dataset
