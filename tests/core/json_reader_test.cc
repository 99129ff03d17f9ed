#include "teller/core/json_reader.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace teller {
namespace {

namespace od = simdjson::ondemand;

const std::string kText =
    R"({"format":"teller-x","count":12,"big":5000000000,"neg":-3,"ratio":0.25,)"
    R"("ok":true,"none":null,"list":[1,2],"obj":{"inner":"v"}})";

TEST(JsonContextTest, ReadsTypedFields) {
  const simdjson::padded_string json(kText);
  od::parser parser;
  od::document doc;
  ASSERT_EQ(parser.iterate(json).get(doc), simdjson::SUCCESS);
  const JsonContext ctx("f.json", json, doc);
  std::string format;
  uint64_t count = 0;
  uint32_t count32 = 0;
  int64_t neg = 0;
  double ratio = 0;
  bool ok = false;
  ASSERT_TRUE(ctx.Field(doc, "format", &format).ok());
  ASSERT_TRUE(ctx.Field(doc, "count", &count).ok());
  ASSERT_TRUE(ctx.Field(doc, "count", &count32).ok());
  ASSERT_TRUE(ctx.Field(doc, "neg", &neg).ok());
  ASSERT_TRUE(ctx.Field(doc, "ratio", &ratio).ok());
  ASSERT_TRUE(ctx.Field(doc, "ok", &ok).ok());
  EXPECT_EQ(format, "teller-x");
  EXPECT_EQ(count, 12u);
  EXPECT_EQ(count32, 12u);
  EXPECT_EQ(neg, -3);
  EXPECT_EQ(ratio, 0.25);
  EXPECT_TRUE(ok);
  od::object obj;
  ASSERT_TRUE(ctx.Field(doc, "obj", &obj).ok());
  std::string_view inner;
  ASSERT_TRUE(ctx.Field(obj, "inner", &inner, "obj").ok());
  EXPECT_EQ(inner, "v");
  od::array list;
  ASSERT_TRUE(ctx.Field(doc, "list", &list).ok());
  size_t n = 0;
  ASSERT_EQ(list.count_elements().get(n), simdjson::SUCCESS);
  EXPECT_EQ(n, 2u);
}

TEST(JsonContextTest, ErrorsNameFileOffsetFieldAndType) {
  const simdjson::padded_string json(kText);
  od::parser parser;
  od::document doc;
  ASSERT_EQ(parser.iterate(json).get(doc), simdjson::SUCCESS);
  const JsonContext ctx("f.json", json, doc);
  std::string s;
  const Status wrong = ctx.Field(doc, "count", &s);
  ASSERT_FALSE(wrong.ok());
  // The parser stands on the value 12.
  EXPECT_EQ(wrong.message(), "f.json: byte " + std::to_string(kText.find("12")) +
                                 ": \"count\": expected a string (" +
                                 simdjson::error_message(simdjson::INCORRECT_TYPE) + ")");
  uint32_t small = 0;
  const Status range = ctx.Field(doc, "big", &small);
  ASSERT_FALSE(range.ok());
  EXPECT_NE(range.message().find("\"big\": expected an unsigned 32-bit integer"), std::string::npos)
      << range.message();
  uint64_t u = 0;
  const Status negative = ctx.Field(doc, "neg", &u);
  ASSERT_FALSE(negative.ok());
  EXPECT_NE(negative.message().find("f.json: byte " + std::to_string(kText.find("-3")) +
                                    ": \"neg\": expected an unsigned integer"),
            std::string::npos)
      << negative.message();
  const Status missing = ctx.Field(doc, "absent", &u, "settings[2]");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.message().find(": missing field \"settings[2].absent\""), std::string::npos)
      << missing.message();
  EXPECT_EQ(missing.message().rfind("f.json: byte ", 0), 0u) << missing.message();
}

TEST(JsonContextTest, OptionalFieldsMayBeAbsentOrNull) {
  const simdjson::padded_string json(kText);
  od::parser parser;
  od::document doc;
  ASSERT_EQ(parser.iterate(json).get(doc), simdjson::SUCCESS);
  const JsonContext ctx("f.json", json, doc);
  std::string v = "kept";
  bool present = true;
  ASSERT_TRUE(ctx.OptionalField(doc, "none", &v, &present).ok());
  EXPECT_FALSE(present);
  EXPECT_EQ(v, "kept");
  present = true;
  ASSERT_TRUE(ctx.OptionalField(doc, "nowhere", &v, &present).ok());
  EXPECT_FALSE(present);
  ASSERT_TRUE(ctx.OptionalField(doc, "format", &v, &present).ok());
  EXPECT_TRUE(present);
  EXPECT_EQ(v, "teller-x");
  const Status bad = ctx.OptionalField(doc, "ok", &v, &present);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("\"ok\": expected a string"), std::string::npos) << bad.message();
}

TEST(JsonContextTest, OffsetsCountFromTheStartOfTheFileForJsonLines) {
  // Two JSON lines parsed in place: the second line's error offset is in file bytes.
  const std::string text = "{\"a\":1}\n{\"a\":\"x\"}\n";
  const simdjson::padded_string json(text);
  const size_t second = text.find('\n') + 1;
  od::parser parser;
  od::document doc;
  ASSERT_EQ(parser
                .iterate(json.data() + second, text.size() - second - 1,
                         json.size() - second + simdjson::SIMDJSON_PADDING)
                .get(doc),
            simdjson::SUCCESS);
  const JsonContext ctx("steps.jsonl:2", json, doc);
  int64_t a = 0;
  const Status s = ctx.Field(doc, "a", &a);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message().rfind("steps.jsonl:2: byte " + std::to_string(text.find("\"x\"")) +
                                  ": \"a\": expected an integer",
                              0),
            0u)
      << s.message();
}

TEST(JsonContextTest, LoadNamesTheFile) {
  const Result<simdjson::padded_string> r = LoadJsonFile("/nonexistent/teller.json");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            std::string("/nonexistent/teller.json: cannot read (") + std::strerror(ENOENT) + ")");
  const Result<simdjson::padded_string> dir = LoadJsonFile("/");
  ASSERT_FALSE(dir.ok());
  EXPECT_EQ(dir.status().message(), "/: cannot read (not a regular file)");
}

TEST(JsonContextTest, FirstStageErrorsAreLocatedByAScan) {
  // simdjson reports an unclosed string and bad UTF-8 before parsing, without a position.
  const std::string unclosed = R"({"a":1,"b":"no end)";
  EXPECT_EQ(LocateStage1Error(unclosed, simdjson::UNCLOSED_STRING), unclosed.find("\"no end"));
  const std::string bad = std::string(R"({"a":"ok","b":")") + "\xff" + R"("})";
  EXPECT_EQ(LocateStage1Error(bad, simdjson::UTF8_ERROR), bad.find('\xff'));
  EXPECT_EQ(LocateStage1Error(bad, simdjson::TAPE_ERROR), bad.size()) << "not a first-stage error";

  const simdjson::padded_string json(unclosed);
  od::parser parser;
  od::document doc;
  const simdjson::error_code e = parser.iterate(json).get(doc);
  ASSERT_EQ(e, simdjson::UNCLOSED_STRING);
  const JsonContext ctx("f.json", json, doc);
  EXPECT_EQ(
      ctx.Error(e, "not JSON")
          .message()
          .rfind("f.json: byte " + std::to_string(unclosed.find("\"no end")) + ": not JSON (", 0),
      0u)
      << ctx.Error(e, "not JSON").message();
}

}  // namespace
}  // namespace teller
