// The learned baselines (include/teller/rca/baselines.h) on toy units built so that each
// model can only succeed by doing what its method does: LogRobust tells two orders of the
// same events apart (a bag of events cannot) and reads an event never seen in training by
// its words; LAnoBERT flags an event out of its usual context and one never seen, and
// learns from normal units only; Logs2Graphs flags a different transition graph over the
// same events; MAD-GAN flags a step that breaks its window's pattern. Plus determinism and
// the errors.
#include "teller/rca/baselines.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

namespace teller::rca {
namespace {

// Units over log lines; they keep their lines and windows alive.
struct ToyUnits {
  std::vector<std::vector<std::string>> lines;
  std::vector<FeatureWindow> windows;
  std::vector<BaselineUnit> units;
  void Add(std::vector<std::string> l, bool abnormal, int fault = -1) {
    lines.push_back(std::move(l));
    BaselineUnit u;
    u.abnormal = {abnormal, abnormal};
    u.fault = abnormal ? fault : -1;
    units.push_back(u);
  }
  void AddWindow(FeatureWindow w, bool abnormal) {
    windows.push_back(std::move(w));
    BaselineUnit u;
    u.abnormal = {abnormal, abnormal};
    units.push_back(u);
  }
  // Pointers are set once all units are in (the vectors no longer move).
  std::vector<BaselineUnit>& Done() {
    for (size_t i = 0; i < units.size(); ++i) {
      if (i < lines.size()) units[i].logs = &lines[i];
      if (i < windows.size()) units[i].window = &windows[i];
    }
    return units;
  }
};

const std::string kA = "INFO scheduler admitted request <*> to the running batch";
const std::string kB = "INFO worker finished prefill of request <*> tokens <*>";
const std::string kC = "INFO engine finished request <*> in <*> s";
const std::string kD = "INFO cache evicted <*> blocks of prefix <*>";
const std::string kE = "INFO tokenizer detokenized <*> tokens for <*>";
const std::string kF = "INFO metrics throughput <*> tokens/s running <*>";

TrainOptions Options(uint64_t seed, int epochs) {
  TrainOptions o;
  o.seed = seed;
  o.epochs = epochs;
  o.batch = 16;
  o.learning_rate = 3e-3;
  return o;
}

class BaselinesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!Available()) GTEST_SKIP() << "built without libtorch";
  }
};

TEST(BaselinesWithoutTorch, TrainingIsAClearError) {
  if (Available()) GTEST_SKIP() << "built with libtorch";
  ToyUnits t;
  t.Add({kA, kB}, false);
  auto m = LearnedBaseline::Train(BaselineKind::kLanoBert, t.Done(), Options(1, 1));
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("libtorch"), std::string::npos) << m.status().message();
}

// Normal units run A B C; abnormal ones the same three events as A C B (fault 2) or C A B
// (fault 3): the same bag of events, so only the order tells them apart.
void OrderToy(ToyUnits& t, int per_class) {
  for (int i = 0; i < per_class; ++i) {
    t.Add({kA, kB, kC}, false);
    t.Add({kA, kC, kB}, true, 2);
    t.Add({kC, kA, kB}, true, 3);
  }
}

TEST_F(BaselinesTest, LogRobustTellsOrdersOfTheSameEventsApartAndNamesTheirFaults) {
  ToyUnits train, test;
  OrderToy(train, 20);
  OrderToy(test, 5);
  auto m = LearnedBaseline::Train(BaselineKind::kLogRobust, train.Done(), Options(3, 40));
  ASSERT_TRUE(m.ok()) << m.status().message();
  ASSERT_EQ(m->epoch_loss().size(), 40u);
  EXPECT_LT(m->epoch_loss().back(), 0.25 * m->epoch_loss().front());
  auto s = m->Score(test.Done());
  ASSERT_TRUE(s.ok()) << s.status().message();
  ASSERT_EQ(s->size(), test.units.size());
  for (size_t i = 0; i < s->size(); ++i) {
    const BaselineUnit& u = test.units[i];
    for (int v = 0; v < kViewsCount; ++v)
      EXPECT_EQ((*s)[i].score[v] >= 0.5f, u.abnormal[v]) << "unit " << i << " view " << v;
    if (u.fault >= 0) {
      const auto& f = (*s)[i].fault;
      EXPECT_EQ(std::max_element(f.begin(), f.end()) - f.begin(), u.fault) << "unit " << i;
    }
  }
}

// Trained with "ERROR CUDA out of memory on device <*>" as the abnormal event, LogRobust
// flags "ERROR CUDA out of memory while allocating on host <*>", never seen, by its words.
TEST_F(BaselinesTest, LogRobustReadsAnEventNeverSeenByItsWords) {
  const std::string oom = "ERROR CUDA out of memory on device <*>";
  const std::string unseen = "ERROR CUDA out of memory while allocating on host <*>";
  ToyUnits train, test;
  for (int i = 0; i < 30; ++i) {
    train.Add({kA, kB}, false);
    train.Add({kD, kE}, false);
    train.Add({kA, oom}, true, 1);
  }
  test.Add({kA, kB}, false);
  test.Add({kD, kE}, false);
  test.Add({kA, unseen}, true, 1);
  auto m = LearnedBaseline::Train(BaselineKind::kLogRobust, train.Done(), Options(5, 30));
  ASSERT_TRUE(m.ok()) << m.status().message();
  auto s = m->Score(test.Done());
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_LT((*s)[0].score[0], 0.5f);
  EXPECT_LT((*s)[1].score[0], 0.5f);
  EXPECT_GT((*s)[2].score[0], 0.5f);
}

// Normal units run A B C or D E F. F after A B is out of its context; G was never seen. The
// training part holds three times as many units labelled abnormal running A B F: LAnoBERT
// learns from the normal ones only, so A B F stays unusual (learnt from all, F would be the
// likelier event after A B).
TEST_F(BaselinesTest, LanoBertFlagsEventsOutOfContextAndNeverSeen) {
  const std::string kG = "WARNING watchdog caught collective <*> timeout";
  ToyUnits train, test;
  for (int i = 0; i < 40; ++i) {
    train.Add({kA, kB, kC}, false);
    train.Add({kD, kE, kF}, false);
    for (int k = 0; k < 3; ++k) train.Add({kA, kB, kF}, true);
  }
  for (int i = 0; i < 3; ++i) {
    test.Add({kA, kB, kC}, false);
    test.Add({kD, kE, kF}, false);
  }
  test.Add({kA, kB, kF}, true);
  test.Add({kD, kG, kF}, true);
  auto m = LearnedBaseline::Train(BaselineKind::kLanoBert, train.Done(), Options(2, 40));
  ASSERT_TRUE(m.ok()) << m.status().message();
  auto s = m->Score(test.Done());
  ASSERT_TRUE(s.ok()) << s.status().message();
  float normal_max = 0;
  for (size_t i = 0; i < 6; ++i) normal_max = std::max(normal_max, (*s)[i].score[0]);
  EXPECT_GT((*s)[6].score[0], normal_max) << "A B F";
  EXPECT_GT((*s)[7].score[0], normal_max) << "D G F";
  for (const BaselineScore& x : *s) EXPECT_EQ(x.score[0], x.score[1]);
}

// Normal units run A -> B -> C; abnormal ones the same events as A -> C -> B (other edges),
// and one adds an event never seen.
TEST_F(BaselinesTest, Logs2GraphsFlagsAnotherTransitionGraphOverTheSameEvents) {
  ToyUnits train, test;
  for (int i = 0; i < 60; ++i) train.Add({kA, kB, kC}, false);
  for (int i = 0; i < 3; ++i) test.Add({kA, kB, kC}, false);
  test.Add({kA, kC, kB}, true);
  test.Add({kA, kB, kC, kD}, true);
  auto m = LearnedBaseline::Train(BaselineKind::kLogs2Graphs, train.Done(), Options(4, 30));
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_LT(m->epoch_loss().back(), m->epoch_loss().front());
  auto s = m->Score(test.Done());
  ASSERT_TRUE(s.ok()) << s.status().message();
  const float normal = (*s)[0].score[0];
  EXPECT_EQ((*s)[1].score[0], normal);  // the same graph scores the same
  EXPECT_GT((*s)[3].score[0], normal * 1.5f + 1e-6f) << "A -> C -> B";
  EXPECT_GT((*s)[4].score[0], normal * 1.5f + 1e-6f) << "an extra event";
}

// Windows of 8 steps x 3 features: each feature a sine over the steps with its own phase
// per window, plus small noise. An abnormal window's last step jumps by `jump` in one feature.
FeatureWindow Wave(std::mt19937_64& rng, double jump) {
  FeatureWindow w;
  w.rows = 8;
  w.cols = 3;
  std::uniform_real_distribution<double> phase(0, 6.283), noise(-0.05, 0.05);
  const double p = phase(rng);
  for (int r = 0; r < w.rows; ++r) {
    for (int c = 0; c < w.cols; ++c) {
      double v = 2 * std::sin(p + 0.6 * r + c) + noise(rng);
      if (r == w.rows - 1 && c == 1) v += jump;
      w.values.push_back(static_cast<float>(v));
    }
  }
  return w;
}

TEST_F(BaselinesTest, MadGanFlagsAStepThatBreaksItsWindowsPattern) {
  std::mt19937_64 rng(11);
  ToyUnits train, test;
  for (int i = 0; i < 400; ++i) train.AddWindow(Wave(rng, 0), false);
  for (int i = 0; i < 40; ++i) test.AddWindow(Wave(rng, 0), false);
  for (int i = 0; i < 10; ++i) test.AddWindow(Wave(rng, 6), true);
  auto m = LearnedBaseline::Train(BaselineKind::kMadGan, train.Done(), Options(6, 30));
  ASSERT_TRUE(m.ok()) << m.status().message();
  auto s = m->Score(test.Done());
  ASSERT_TRUE(s.ok()) << s.status().message();
  // Every abnormal window above the 90th percentile of the normal ones.
  std::vector<float> normal;
  for (size_t i = 0; i < 40; ++i) normal.push_back((*s)[i].score[0]);
  std::sort(normal.begin(), normal.end());
  const float p90 = normal[36];
  for (size_t i = 40; i < 50; ++i) EXPECT_GT((*s)[i].score[0], p90) << "window " << i;
}

TEST_F(BaselinesTest, SameSeedSameScores) {
  ToyUnits train, test;
  OrderToy(train, 5);
  OrderToy(test, 2);
  for (BaselineKind k :
       {BaselineKind::kLogRobust, BaselineKind::kLanoBert, BaselineKind::kLogs2Graphs}) {
    auto a = LearnedBaseline::Train(k, train.Done(), Options(9, 3));
    auto b = LearnedBaseline::Train(k, train.Done(), Options(9, 3));
    ASSERT_TRUE(a.ok() && b.ok()) << BaselineKindName(k);
    auto sa = a->Score(test.Done());
    auto sb = b->Score(test.Done());
    ASSERT_TRUE(sa.ok() && sb.ok());
    for (size_t i = 0; i < sa->size(); ++i)
      EXPECT_EQ((*sa)[i].score, (*sb)[i].score) << BaselineKindName(k) << " unit " << i;
    EXPECT_GT(a->parameters(), 0u);
  }
}

TEST_F(BaselinesTest, ErrorsNameWhatIsMissing) {
  ToyUnits abnormal_only;
  abnormal_only.Add({kA}, true, 1);
  auto m = LearnedBaseline::Train(BaselineKind::kLanoBert, abnormal_only.Done(), Options(1, 1));
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("no normal training unit"), std::string::npos)
      << m.status().message();

  ToyUnits logs_only;
  logs_only.Add({kA}, false);
  m = LearnedBaseline::Train(BaselineKind::kMadGan, logs_only.Done(), Options(1, 1));
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("feature window"), std::string::npos) << m.status().message();

  std::mt19937_64 rng(1);
  ToyUnits waves;
  for (int i = 0; i < 8; ++i) waves.AddWindow(Wave(rng, 0), false);
  m = LearnedBaseline::Train(BaselineKind::kMadGan, waves.Done(), Options(1, 1));
  ASSERT_TRUE(m.ok()) << m.status().message();
  ToyUnits narrow;
  FeatureWindow w = Wave(rng, 0);
  w.cols = 2;
  w.values.resize(16);
  narrow.AddWindow(w, false);
  auto s = m->Score(narrow.Done());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("trained shape"), std::string::npos) << s.status().message();
}

}  // namespace
}  // namespace teller::rca
