#include <string>

#include <gtest/gtest.h>

#include "teller/core/json_writer.h"
#include "teller/core/status.h"
#include "teller/core/string_pool.h"

namespace teller {
namespace {

TEST(StringPoolTest, InternsOnceAndKeepsViewsStable) {
  StringPool pool;
  EXPECT_EQ(pool.Intern(""), 0u);
  const StringId a = pool.Intern("aten::mm");
  const std::string_view view = pool.Get(a);
  for (int i = 0; i < 200000; ++i) pool.Intern("name-" + std::to_string(i));  // many blocks
  EXPECT_EQ(pool.Intern("aten::mm"), a);
  EXPECT_EQ(view, "aten::mm") << "views survive growth";
  EXPECT_EQ(pool.Get(a).data(), view.data());
  const std::string large(600000, 'x');
  const StringId big = pool.Intern(large);
  EXPECT_EQ(pool.Get(big), large);
  EXPECT_EQ(pool.Find("name-199999"), pool.Intern("name-199999"));
  EXPECT_EQ(pool.Find("never"), StringPool::kNotFound);
}

TEST(JsonWriterTest, EscapesAndRepairsText) {
  std::string out;
  AppendJsonString(out, "a\"b\\c\n\t\x01");
  EXPECT_EQ(out, "\"a\\\"b\\\\c\\n\\t\\u0001\"");
  out.clear();
  AppendJsonString(out, "ok \xce\xb3 bad \xff\xfe end \xe2\x82");  // valid, invalid, truncated
  EXPECT_EQ(out, "\"ok \xce\xb3 bad \xEF\xBF\xBD\xEF\xBF\xBD end \xEF\xBF\xBD\xEF\xBF\xBD\"");
  out.clear();
  JsonObjectWriter(out).Field("s", "x").Field("i", int64_t{-3}).Field("u", uint64_t{18446744073709551615u})
      .Field("d", 0.5).FieldBool("b", true).FieldRaw("r", "[1]").Field("nan", 0.0 / 0.0).Close();
  EXPECT_EQ(out, "{\"s\":\"x\",\"i\":-3,\"u\":18446744073709551615,\"d\":0.5,\"b\":true,\"r\":[1],\"nan\":null}");
}

TEST(StatusTest, CarriesMessagesAndValues) {
  Result<int> good = 5;
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(*good, 5);
  Result<int> bad = Status::Error("file.json: offset 12: expected '{'");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "file.json: offset 12: expected '{'");
  auto fails = []() -> Status {
    TELLER_RETURN_IF_ERROR(Status::Error("inner"));
    return Status::Ok();
  };
  EXPECT_EQ(fails().message(), "inner");
}

}  // namespace
}  // namespace teller
