// Log signatures (docs/logs.md, "Log signatures"): the rules file's form, its errors, rule
// order, and that the built-in set is share/teller/log_signatures.rules.
#include "teller/logs/signatures.h"

#include <gtest/gtest.h>

#include <string>

namespace teller::logs {
namespace {

constexpr const char* kRules =
    "# comment\n"
    "[oom] memory_resource auto\n"
    "title: out of memory\n"
    "why: first half,\n"
    "why: second half.\n"
    "contains: CUDA error: out of memory\n"
    "\n"
    "[cuda] runtime_driver warning\n"
    "title: CUDA error\n"
    "contains: CUDA error:\n"
    "contains: block: [ && Assertion\n"
    "starts: FATAL\n";

TEST(SignaturesTest, RulesMatchInFileOrder) {
  auto set = SignatureSet::FromText(kRules, "t.rules");
  ASSERT_TRUE(set.ok()) << set.status().message();
  const SignatureSet& s = *set.value();
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s.at(0).id, "oom");
  EXPECT_EQ(s.at(0).category, FaultCategory::kMemoryResource);
  EXPECT_FALSE(s.at(0).warning_only);
  EXPECT_EQ(s.at(0).why, "first half, second half.");
  EXPECT_TRUE(s.at(1).warning_only);
  // Both rules match; the earlier one wins wherever its text is in the line.
  EXPECT_EQ(s.Match("NCCL failed; CUDA error: out of memory"), 0);
  EXPECT_EQ(s.Match("CUDA error: misaligned address"), 1);
  // "also" must be there too; "starts" only at the start.
  EXPECT_EQ(s.Match("x.cu:1: block: [1,0,0] Assertion `i < n` failed"), 1);
  EXPECT_EQ(s.Match("x.cu:1: block: [1,0,0] thread: [2,0,0]"), SignatureSet::kNoSignature);
  EXPECT_EQ(s.Match("FATAL: bad"), 1);
  EXPECT_EQ(s.Match("not FATAL"), SignatureSet::kNoSignature);
  EXPECT_EQ(s.Match(""), SignatureSet::kNoSignature);
  EXPECT_EQ(s.Match("C"), SignatureSet::kNoSignature);
}

TEST(SignaturesTest, DamagedRulesNameFileAndLine) {
  struct Case {
    const char* text;
    const char* error;
  };
  const Case cases[] = {
      {"title: x\n", "u.rules:1: 'title:' before any [ID]"},
      {"[a] memory auto\n", "u.rules:1: unknown category 'memory'"},
      {"[a] cuda_kernel loud\n", "u.rules:1: unknown severity 'loud'"},
      {"[a] cuda_kernel auto extra\n", "u.rules:1: unexpected 'extra'"},
      {"[] cuda_kernel auto\n", "u.rules:1: expected '[ID] CATEGORY SEVERITY'"},
      {"[a] cuda_kernel auto\ncontains: abc\n", "u.rules:2: signature [a] has no title"},
      {"[a] cuda_kernel auto\ntitle: t\ncontains: x\n", "u.rules:3: a text to look for needs"},
      {"[a] cuda_kernel auto\ntitle: t\ncontains: xy && \n", "u.rules:3: a text to look for"},
      {"[a] cuda_kernel auto\ntitle: t\nmatches: xy\n", "u.rules:3: unknown key 'matches'"},
      {"[a] cuda_kernel auto\ntitle: t\njust text\n", "u.rules:3: expected 'KEY: value'"},
      {"[a] cuda_kernel auto\ntitle: t\n[a] cuda_kernel auto\n", "u.rules:3: signature [a] is"},
  };
  for (const Case& c : cases) {
    auto set = SignatureSet::FromText(c.text, "u.rules");
    ASSERT_FALSE(set.ok()) << c.text;
    EXPECT_EQ(set.status().message().rfind(c.error, 0), 0u) << set.status().message();
  }
  auto missing = SignatureSet::FromFile("/nonexistent/x.rules");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(), "cannot open log signatures /nonexistent/x.rules");
}

// The built-in text is the shipped file: same signatures, same answers.
TEST(SignaturesTest, BuiltInIsTheSharedFile) {
  auto file = SignatureSet::FromFile(TELLER_SIGNATURES_FILE);
  ASSERT_TRUE(file.ok()) << file.status().message();
  const auto built_in = SignatureSet::BuiltIn();
  ASSERT_EQ(built_in->size(), file.value()->size());
  ASSERT_GE(built_in->size(), 15u);
  for (size_t i = 0; i < built_in->size(); ++i) {
    EXPECT_EQ(built_in->at(i).id, file.value()->at(i).id);
    EXPECT_FALSE(built_in->at(i).title.empty()) << built_in->at(i).id;
    EXPECT_FALSE(built_in->at(i).why.empty()) << built_in->at(i).id;
  }
  // One line per item of the vocabulary the file must cover.
  const std::pair<const char*, const char*> lines[] = {
      {"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", "cuda_oom"},
      {"RuntimeError: CUDA error: an illegal memory access was encountered", "cuda_illegal_access"},
      {"RuntimeError: CUDA error: device-side assert triggered", "cuda_device_assert"},
      {"[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5)", "nccl_timeout"},
      {"To avoid data inconsistency, we are taking the entire process down.", "nccl_abort"},
      {"NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus.", "xid"},
      {"Sequence group 7 is preempted by PreemptionMode.RECOMPUTE mode", "kv_preemption"},
      {"Aborted request cmpl-8f2e1c.", "request_aborted"},
      {"EngineDeadError: EngineCore encountered an issue.", "engine_error"},
      {"FAILED: Recovery thresholds not met", "failed_check"},
  };
  for (const auto& [line, id] : lines) {
    const int k = built_in->Match(line);
    ASSERT_NE(k, SignatureSet::kNoSignature) << line;
    EXPECT_EQ(built_in->at(static_cast<size_t>(k)).id, id) << line;
  }
}

}  // namespace
}  // namespace teller::logs
