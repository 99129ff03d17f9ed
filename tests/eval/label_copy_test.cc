// The label-copy probe (PredictLabelCopy) on a hand-made timeline: the nearest training
// step in time of the same setting, ties to the earlier one, per view, no nodes.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "teller/eval/methods.h"

namespace teller::eval {
namespace {

// A unit of setting `s` starting at `t`; abnormal in the views given.
Unit At(uint32_t s, int64_t t, bool vertical, bool horizontal) {
  Unit u;
  u.setting = s;
  u.request = "q" + std::to_string(t);
  u.start_ns = t;
  u.end_ns = t + 5;
  u.has_incident = true;
  u.views[0].is_anomaly = vertical;
  u.views[1].is_anomaly = horizontal;
  u.is_anomaly = vertical || horizontal;
  if (u.is_anomaly) u.fault_type = horizontal ? "communication" : "cuda_kernel";
  if (u.is_anomaly) u.views[0].nodes = {3};
  return u;
}

TEST(LabelCopyTest, CopiesTheNearestTrainingStepOfTheSetting) {
  Dataset ds;
  ds.settings.resize(2);
  ds.settings[0].name = "a";
  ds.settings[1].name = "b";
  // Setting a, training steps at 0 (normal), 10 (V), 20 (H+V), 40 (normal);
  // setting b, one training step at 15 (V).
  ds.units = {At(0, 0, false, false), At(0, 10, true, false), At(0, 20, true, true),
              At(0, 40, false, false), At(1, 15, true, false),
              // test: a@4 -> 0 (normal); a@15 ties 10 and 20 -> the earlier, 10 (V);
              // a@29 -> 20 (H+V); a@31 -> 40 (normal); a@100 -> 40; b@0 -> 15 (V).
              At(0, 4, true, true), At(0, 15, false, false), At(0, 29, false, false),
              At(0, 31, true, false), At(0, 100, false, false), At(1, 0, false, false)};
  Fold f;
  f.train = {0, 1, 2, 3, 4};
  f.test = {5, 6, 7, 8, 9, 10};
  auto p = PredictLabelCopy(ds, f);
  ASSERT_TRUE(p.ok()) << p.status().message();
  const bool expect_v[] = {false, true, true, false, false, true};
  const bool expect_h[] = {false, false, true, false, false, false};
  for (size_t k = 0; k < f.test.size(); ++k) {
    SCOPED_TRACE(k);
    const Prediction& v = p->at(f.test[k], View::kVertical);
    const Prediction& h = p->at(f.test[k], View::kHorizontal);
    EXPECT_TRUE(v.present);
    EXPECT_EQ(v.abnormal, expect_v[k]);
    EXPECT_EQ(h.abnormal, expect_h[k]);
    EXPECT_EQ(v.score, expect_v[k] ? 1.0 : 0.0);
    EXPECT_TRUE(v.nodes.empty());  // the trace is never looked at
  }
  EXPECT_EQ(p->at(6, View::kVertical).fault_type, "cuda_kernel");
  EXPECT_EQ(p->at(7, View::kHorizontal).fault_type, "communication");
  EXPECT_FALSE(p->at(0, View::kVertical).present);  // training units are not predicted

  // A setting without training steps: everything normal.
  f.train = {0, 1, 2, 3};
  p = PredictLabelCopy(ds, f);
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(p->at(10, View::kVertical).abnormal);
  EXPECT_TRUE(p->at(10, View::kVertical).present);

  // An older dataset without step times: an error, not a guess.
  ds.units[1].has_incident = false;
  p = PredictLabelCopy(ds, f);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("a/steps.jsonl"), std::string::npos);
}

TEST(LabelCopyTest, IsANamedMethodInAll) {
  auto m = ParseMethods("label-copy");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->front().kind, MethodKind::kLabelCopy);
  auto all = ParseMethods("all");
  ASSERT_TRUE(all.ok());
  bool found = false;
  for (const MethodSpec& s : *all) found |= s.kind == MethodKind::kLabelCopy;
  EXPECT_TRUE(found);
}

// The learned baselines by name, with what each reads in its display name; without
// libtorch each is an error that says so.
TEST(MethodParseTest, TheLearnedBaselinesByName) {
  auto m = ParseMethods("logrobust,lanobert,logs2graphs,mad-gan,step-summary");
  if (!rca::Available()) {
    ASSERT_FALSE(m.ok());
    EXPECT_NE(m.status().message().find("libtorch"), std::string::npos) << m.status().message();
    return;
  }
  ASSERT_TRUE(m.ok()) << m.status().message();
  ASSERT_EQ(m->size(), 5u);
  const MethodKind kinds[] = {MethodKind::kLogRobust, MethodKind::kLanoBert,
                              MethodKind::kLogs2Graphs, MethodKind::kMadGan,
                              MethodKind::kStepSummary};
  const char* displays[] = {"LogRobust (log)", "LAnoBERT (log)", "Logs2Graphs (log)",
                            "MAD-GAN (stat)", "Prompt-only (step summary + log)"};
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ((*m)[i].kind, kinds[i]);
    EXPECT_EQ((*m)[i].display, displays[i]);
    EXPECT_TRUE(IsLearnedBaseline((*m)[i].kind));
    // LogRobust and the prompt-only model train on labels; the others on normal units.
    EXPECT_EQ((*m)[i].supervised, i == 0 || i == 4);
  }
}

// The ablations: a learned method names its TPE vocabulary size after an @ (Table 3), the
// MoT a stream it leaves out after a colon (Table 5), in the command line and in the
// tables; any other method or option, or a size outside 64 to 65536, is an error that
// says so.
TEST(MethodParseTest, ALearnedMethodCarriesItsVocabularySize) {
  auto m = ParseMethods("teller-gcn,teller-gcn@512,teller-mot@1024,teller-single@512:no-log");
  ASSERT_TRUE(m.ok()) << m.status().message();
  ASSERT_EQ(m->size(), 4u);
  EXPECT_EQ((*m)[0].tpe_vocab, 0u);
  EXPECT_EQ((*m)[1].kind, MethodKind::kTellerGcn);
  EXPECT_EQ((*m)[1].tpe_vocab, 512u);
  EXPECT_EQ((*m)[1].name, "teller-gcn@512");
  EXPECT_EQ((*m)[1].display, "Teller (trace encoder, vocab 512)");
  EXPECT_EQ((*m)[2].kind, MethodKind::kTellerMot);
  EXPECT_EQ((*m)[2].tpe_vocab, 1024u);
  EXPECT_EQ((*m)[2].display, "Teller (MoT: trace + log, vocab 1024)");
  EXPECT_EQ((*m)[3].kind, MethodKind::kTellerSingle);
  EXPECT_EQ((*m)[3].tpe_vocab, 512u);
  EXPECT_FALSE((*m)[3].log_stream);
  EXPECT_EQ((*m)[3].display, "Teller (single stream: trace only, vocab 512)");
  auto streams = ParseMethods("teller-mot:no-trace,teller-mot@512:no-log");
  ASSERT_TRUE(streams.ok()) << streams.status().message();
  EXPECT_FALSE((*streams)[0].trace_stream);
  EXPECT_TRUE((*streams)[0].log_stream);
  EXPECT_EQ((*streams)[0].display, "Teller (MoT: log only)");
  EXPECT_TRUE((*streams)[1].trace_stream);
  EXPECT_FALSE((*streams)[1].log_stream);
  EXPECT_EQ((*streams)[1].tpe_vocab, 512u);
  EXPECT_EQ((*streams)[1].name, "teller-mot@512:no-log");
  EXPECT_EQ((*streams)[1].display, "Teller (MoT: trace only, vocab 512)");
  // The learned baselines take neither.
  for (const char* bad : {"logrobust@512", "lanobert:no-log", "mad-gan@256", "step-summary@512",
                          "step-summary:no-log"}) {
    auto r = ParseMethods(bad);
    if (!rca::Available()) continue;  // refused anyway, for want of libtorch
    ASSERT_FALSE(r.ok()) << bad;
  }
  // ":summary": the step summary before the log lines, with the other suffixes too.
  auto summary = ParseMethods("teller-mot:summary,teller-single@512:no-trace:summary");
  ASSERT_TRUE(summary.ok()) << summary.status().message();
  EXPECT_TRUE((*summary)[0].summary);
  EXPECT_TRUE((*summary)[0].trace_stream);
  EXPECT_EQ((*summary)[0].display, "Teller (MoT: trace + log + step summary)");
  EXPECT_TRUE((*summary)[1].summary);
  EXPECT_FALSE((*summary)[1].trace_stream);
  EXPECT_EQ((*summary)[1].tpe_vocab, 512u);
  EXPECT_EQ((*summary)[1].display, "Teller (single stream: log only + step summary, vocab 512)");
  for (const char* bad : {"teller-mot:no-log:summary", "teller-mot:no-trace:no-log",
                          "teller-gcn:summary", "teller-mot:summaries"}) {
    auto r = ParseMethods(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find(bad), std::string::npos) << r.status().message();
  }
  for (const char* bad : {"teller-numeric@512", "teller-gcn@", "teller-gcn@32", "teller-gcn@5x",
                          "teller-gcn@70000", "teller-gcn:no-log", "teller-mot:no-both"}) {
    auto r = ParseMethods(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find(bad), std::string::npos) << r.status().message();
  }
}

}  // namespace
}  // namespace teller::eval
