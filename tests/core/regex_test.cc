#include "teller/core/regex.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace teller {
namespace {

Regex Must(std::string_view pattern, Regex::Flags flags = {}) {
  Result<Regex> r = Regex::Compile(pattern, flags);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return std::move(r).value();
}

TEST(RegexTest, ExtendedSyntaxSearchesAnywhere) {
  const Regex re = Must("nccl|all_?reduce");
  EXPECT_TRUE(re.Matches("ncclDevKernel_AllReduce_Sum_f32"));
  EXPECT_TRUE(re.Matches("cross_device_allreduce"));
  EXPECT_TRUE(re.Matches("vllm::all_reduce"));
  EXPECT_FALSE(re.Matches("NCCL"));  // case matters by default
  EXPECT_FALSE(re.Matches(""));
  EXPECT_EQ(re.pattern(), "nccl|all_?reduce");
}

TEST(RegexTest, IgnoresCaseWhenAsked) {
  Regex::Flags icase;
  icase.icase = true;
  const Regex re = Must("^gemm|cutlass", icase);
  EXPECT_TRUE(re.Matches("GEMM_kernel"));
  EXPECT_TRUE(re.Matches("sm90_CUTLASS_tensorop"));
  EXPECT_FALSE(re.Matches("x_gemm"));  // the anchor still holds
}

TEST(RegexTest, AnchorsAreTheEndsOfTheView) {
  const std::string whole = "xxabcyy";
  const std::string_view middle = std::string_view(whole).substr(2, 3);  // "abc", no NUL after
  EXPECT_TRUE(Must("^abc$").Matches(middle));
  EXPECT_FALSE(Must("abcy").Matches(middle)) << "bytes past the view are not the subject";
  EXPECT_FALSE(Must("xa").Matches(middle)) << "bytes before the view are not the subject";
  EXPECT_TRUE(Must("c$").Matches(middle));
  EXPECT_FALSE(Must("c$").Matches(std::string_view(whole).substr(2, 4)));
  EXPECT_TRUE(Must("^$").Matches(std::string_view()));
}

TEST(RegexTest, MatchesPastAnEmbeddedNul) {
  const std::string text("kernel\0tail", 11);
  EXPECT_TRUE(Must("tail$").Matches(text));
  EXPECT_TRUE(Must("^kernel").Matches(text));
}

TEST(RegexTest, InvalidPatternCarriesRegerrorText) {
  const Result<Regex> r = Regex::Compile("gemm(");
  ASSERT_FALSE(r.ok());
  // glibc's regerror text for REG_EPAREN.
  EXPECT_EQ(r.status().message(), "invalid regular expression 'gemm(': Unmatched ( or \\(");
  const Result<Regex> b = Regex::Compile("[z-a]");
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().message(), "invalid regular expression '[z-a]': Invalid range end");
}

TEST(RegexTest, MovesKeepTheCompiledPattern) {
  Regex a = Must("^aten::");
  Regex b = std::move(a);
  EXPECT_TRUE(b.Matches("aten::mm"));
  EXPECT_FALSE(a.Matches("aten::mm")) << "a moved-from Regex matches nothing";  // NOLINT
  Regex c = Must("x");
  c = std::move(b);
  EXPECT_TRUE(c.Matches("aten::add"));
  std::vector<Regex> many;
  for (int i = 0; i < 50; ++i) many.push_back(Must("k" + std::to_string(i) + "$"));
  EXPECT_TRUE(many[49].Matches("kernel_k49"));
  EXPECT_FALSE(many[48].Matches("kernel_k49"));
}

TEST(RegexTest, SharedAcrossThreads) {
  const Regex re = Must("^(flash|paged)_attn");
  std::vector<std::thread> threads;
  std::vector<int> hits(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 2000; ++i) {
        hits[t] += re.Matches(i % 2 ? "flash_attn_fwd" : "gemm") ? 1 : 0;
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (int h : hits) EXPECT_EQ(h, 1000);
}

}  // namespace
}  // namespace teller
