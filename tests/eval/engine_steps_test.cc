// Engine-step units (CollapseToEngineSteps, CollapsePredictions): a batch of three
// requests on one record, one of them affected, collapses to one abnormal engine step;
// predictions OR their flags and keep the highest score.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "teller/eval/evaluate.h"

namespace teller::eval {
namespace {

TEST(EngineStepsTest, CollapsesBatchesByHand) {
  Dataset ds;
  ds.settings.resize(1);
  ds.settings[0].name = "s";
  ds.settings[0].records.resize(2);
  // Record 0: requests a, b, c; b affected (V nodes {2, 5}, H {7}); c affected in V {1}.
  // Record 1: request a alone, normal.
  auto unit = [](const std::string& q, uint32_t rec) {
    Unit u;
    u.request = q;
    u.record = rec;
    return u;
  };
  ds.units = {unit("a", 0), unit("b", 0), unit("c", 0), unit("a", 1)};
  ds.units[1].is_anomaly = true;
  ds.units[1].fault_type = "communication";
  ds.units[1].views[0] = {true, {2, 5}, {}, false};
  ds.units[1].views[1] = {true, {7}, {}, false};
  ds.units[2].is_anomaly = true;
  ds.units[2].fault_type = "communication";
  ds.units[2].views[0] = {true, {1}, {}, false};
  const EngineStepUnits e = CollapseToEngineSteps(ds);
  ASSERT_EQ(e.dataset.units.size(), 2u);
  EXPECT_EQ(e.unit_of, (std::vector<uint32_t>{0, 0, 0, 1}));
  const Unit& step = e.dataset.units[0];
  EXPECT_TRUE(step.is_anomaly);
  EXPECT_EQ(step.fault_type, "communication");
  EXPECT_EQ(step.views[0].nodes, (std::vector<uint32_t>{1, 2, 5}));
  EXPECT_EQ(step.views[1].nodes, (std::vector<uint32_t>{7}));
  EXPECT_FALSE(e.dataset.units[1].is_anomaly);
  EXPECT_EQ(EngineStepsOf(e, {3, 2, 0}), (std::vector<uint32_t>{0, 1}));

  Predictions p;
  p.units.resize(4);
  p.at(0, View::kVertical) = {true, false, 0.2, "", {}, ""};
  p.at(2, View::kVertical) = {true, true, 0.9, "cuda_kernel", {1}, "x"};
  p.at(1, View::kVertical) = {true, false, 0.4, "", {}, ""};
  const Predictions q = CollapsePredictions(e, p, {0, 1, 2, 3});
  EXPECT_TRUE(q.at(0, View::kVertical).abnormal);
  EXPECT_DOUBLE_EQ(q.at(0, View::kVertical).score, 0.9);
  EXPECT_EQ(q.at(0, View::kVertical).nodes, (std::vector<uint32_t>{1}));
  EXPECT_EQ(q.at(0, View::kVertical).fault_type, "cuda_kernel");
  EXPECT_FALSE(q.at(1, View::kVertical).present);
  // Scored on the engine steps: one abnormal step flagged (V), the other normal and not
  // flagged: step F1 1; V operator set {1} vs {1,2,5}: F1 = 2 * 1 * 1/3 / (4/3) = 1/2.
  ScoreOptions o;
  o.low_prior = false;
  const Scores s = ScoreUnits(e.dataset, q, {0, 1}, o);
  EXPECT_DOUBLE_EQ(s.view(View::kVertical).step.f1, 1.0);
  EXPECT_DOUBLE_EQ(s.view(View::kVertical).op.macro_plus.f1, 0.5);
  EXPECT_EQ(s.view(View::kVertical).units, 2u);
}

}  // namespace
}  // namespace teller::eval
