#include <gtest/gtest.h>

#include <string>
#include <vector>

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
  JsonObjectWriter(out)
      .Field("s", "x")
      .Field("i", int64_t{-3})
      .Field("u", uint64_t{18446744073709551615u})
      .Field("d", 0.5)
      .FieldBool("b", true)
      .FieldRaw("r", "[1]")
      .Field("nan", 0.0 / 0.0)
      .Close();
  EXPECT_EQ(out,
            "{\"s\":\"x\",\"i\":-3,\"u\":18446744073709551615,\"d\":0.5,\"b\":true,\"r\":[1],"
            "\"nan\":null}");
}

TEST(JsonWriterTest, DoubleFormatsArraysNestingAndLines) {
  std::string out;
  JsonObjectWriter(out).Field("a", 0.1).Close();
  EXPECT_EQ(out, "{\"a\":0.10000000000000001}");  // %.17g
  out.clear();
  JsonObjectWriter w(out, JsonDoubles::kShortest);
  w.Field("a", 0.1).Field("b", 1e300 * 1e300).Field("c", -2.5e-7).Field("n", uint64_t{7});
  w.NewLine("  ").Key("list");
  JsonArrayWriter a(out, JsonDoubles::kShortest);
  a.Element(1.0 / 3).Element("x\"y").Element(int64_t{-4}).ElementBool(false).ElementRaw("{}");
  a.NewLine().Next();
  JsonObjectWriter(out).FieldNull("z").Close();
  a.Close();
  w.Field("end", 1).Close();
  // Shortest round-trip forms, derived with Python's repr(): 0.1, -2.5e-07,
  // 0.3333333333333333.
  EXPECT_EQ(out,
            "{\"a\":0.1,\"b\":null,\"c\":-2.5e-07,\"n\":7,\n  \"list\":"
            "[0.3333333333333333,\"x\\\"y\",-4,false,{},\n{\"z\":null}],\"end\":1}");
  std::string empty;
  JsonArrayWriter(empty).Close();
  EXPECT_EQ(empty, "[]");
  std::string six;
  JsonArrayWriter(six, JsonDoubles::kDigits6)
      .Element(3.14159265)
      .Element(2.5e-9)
      .Element(1e6)
      .Close();
  EXPECT_EQ(six, "[3.14159,2.5e-09,1e+06]");  // derived with Python: "%.6g" % x
}

TEST(JsonWriterTest, FixedDecimalsIntegerListsAndSharedFields) {
  std::string fixed;
  JsonArrayWriter(fixed, JsonDoubles::kFixed4)
      .Element(0.91415)
      .Element(1.0)
      .Element(2.0 / 3)
      .Element(-0.00004)
      .Element(0.0 / 0.0)
      .Close();
  // Derived with Python: "%.4f" % x; NaN is null.
  EXPECT_EQ(fixed, "[0.9142,1.0000,0.6667,-0.0000,null]");

  std::string ints;
  JsonArrayWriter(ints)
      .Integers(std::vector<int32_t>{-1, 0, 7})
      .Integers(std::vector<uint16_t>{65535})
      .Close();
  EXPECT_EQ(ints, "[-1,0,7,65535]");

  // Fields written once and spliced into two objects; the second has its last fields
  // appended by the caller after FieldsFollow.
  std::string shared;
  JsonObjectWriter fields(shared, JsonObjectWriter::FieldsOnly{});
  fields.Field("seq", 3).FieldBool("truncated", false);
  fields.Close();
  EXPECT_EQ(shared, "\"seq\":3,\"truncated\":false");
  std::string out;
  JsonObjectWriter(out).Field("step", 0).RawFields(shared).RawFields("").Close();
  EXPECT_EQ(out, "{\"step\":0,\"seq\":3,\"truncated\":false}");
  out.clear();
  JsonObjectWriter only(out);
  only.RawFields(shared).FieldsFollow();
  out += "\"n\":1";
  only.Close();
  EXPECT_EQ(out, "{\"seq\":3,\"truncated\":false,\"n\":1}");
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
