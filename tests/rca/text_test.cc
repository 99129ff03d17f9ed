// The MoT's word tokenizer (src/rca/text.h): which words the vocabulary keeps, ids and text
// both ways, the log stream's budget, its file. Torch-free, so it runs in every build.
#include "src/rca/text.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

namespace teller::rca::internal {
namespace {

using V = TextVocabulary;

TEST(TextVocabularyTest, KeepsFrequentWordsSeenTwiceInCountThenByteOrder) {
  // counts: b 3, a 2, c 2, once 1 (dropped), z 2.
  const std::vector<std::string_view> texts = {"b a c", "b  a\tz", "c b once z"};
  const V v = V::Train(texts, V::kSpecials + 3);
  ASSERT_EQ(v.size(), V::kSpecials + 3);
  // b first (3), then the words seen twice in byte order: a, c (z does not fit).
  EXPECT_EQ(v.Words("b a c z once"), (std::vector<int64_t>{V::kSpecials, V::kSpecials + 1,
                                                           V::kSpecials + 2, V::kUnk, V::kUnk}));
  const V all = V::Train(texts, 100);
  EXPECT_EQ(all.size(), V::kSpecials + 4);  // b, a, c, z; "once" never
  EXPECT_EQ(all.Words("once"), (std::vector<int64_t>{V::kUnk}));
}

TEST(TextVocabularyTest, JoinLeavesOutSpecialsAndUnknowns) {
  const V v = V::Train({"Fault: communication", "Fault: communication"}, 64);
  std::vector<int64_t> ids = v.Words("Fault: ??? communication");
  ids.insert(ids.begin(), V::kBos);
  ids.push_back(V::kLine);
  ids.push_back(V::kEos);
  EXPECT_EQ(v.Join(ids), "Fault: communication");
  EXPECT_EQ(v.Join({}), "");
  EXPECT_EQ(v.Join({999}), "");  // outside the vocabulary: left out, not a crash
}

TEST(TextVocabularyTest, SerializedRoundTripAndRefusals) {
  const V v = V::Train({"x y y x w", "w"}, 64);
  const std::string json = v.Serialize();
  auto back = V::Parse(json, "m/text.json");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->size(), v.size());
  EXPECT_EQ(back->Words("w x y q"), v.Words("w x y q"));
  EXPECT_EQ(back->Serialize(), json);

  auto bad = V::Parse(R"({"format":"teller-rca-text","version":2,"words":[]})", "m/text.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("m/text.json"), std::string::npos);
  EXPECT_NE(bad.status().message().find("version 2"), std::string::npos);
  bad = V::Parse(R"({"format":"teller-rca-text","version":1,"words":["a","a"]})", "t");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("twice"), std::string::npos);
  bad = V::Parse(R"({"format":"teller-rca-text","version":1,"words":["a b"]})", "t");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("whitespace"), std::string::npos);
  bad = V::Parse("{", "t");
  EXPECT_FALSE(bad.ok());
}

TEST(LogTokensTest, LinesEndWithTheLineTokenAndTheSevereOnesKeepTheirPlace) {
  const V v = V::Train({"INFO a b ERROR c WARNING d", "INFO a b ERROR c WARNING d"}, 64);
  const int64_t info = v.Words("INFO")[0], a = v.Words("a")[0], b = v.Words("b")[0],
                error = v.Words("ERROR")[0], c = v.Words("c")[0];
  const std::vector<std::string> lines = {"INFO a b", "INFO a", "ERROR c", "WARNING d"};
  // Everything fits: every line in order, each ended by kLine.
  const std::vector<int64_t> whole = LogTokens(v, lines, 100);
  EXPECT_EQ(whole.size(), 4u + 3 + 3 + 3);
  EXPECT_EQ(std::vector<int64_t>(whole.begin(), whole.begin() + 4),
            (std::vector<int64_t>{info, a, b, V::kLine}));
  // A budget of 7: the ERROR line (3) and the WARNING line (3) first; neither INFO line
  // fits in the 1 left. Written in their original order.
  const std::vector<int64_t> seven = LogTokens(v, lines, 7);
  const int64_t warning = v.Words("WARNING")[0], d = v.Words("d")[0];
  EXPECT_EQ(seven, (std::vector<int64_t>{error, c, V::kLine, warning, d, V::kLine}));
  // A budget of 10: the two severe lines (6), then "INFO a b" (4, exactly what is left),
  // not "INFO a"; in the original order.
  const std::vector<int64_t> ten = LogTokens(v, lines, 10);
  EXPECT_EQ(ten,
            (std::vector<int64_t>{info, a, b, V::kLine, error, c, V::kLine, warning, d, V::kLine}));
  EXPECT_TRUE(LogTokens(v, lines, 0).empty());
  EXPECT_TRUE(LogTokens(v, {}, 10).empty());
}

}  // namespace
}  // namespace teller::rca::internal
