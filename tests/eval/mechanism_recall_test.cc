// Recall per fault mechanism (AddMechanismRecall, MechanismRecallMarkdown) on a hand case:
// positives per view, positives without evidence nodes, the healthy units' false alarms,
// timing-invisible mechanisms apart, sums over folds.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "teller/eval/evaluate.h"

namespace teller::eval {
namespace {

Unit Make(const std::string& mechanism, int64_t fault, bool v, bool h, bool v_nodes) {
  Unit u;
  u.has_incident = true;
  u.fault = fault;
  u.mechanism = mechanism;
  u.views[0].is_anomaly = v;
  u.views[1].is_anomaly = h;
  if (v && v_nodes) u.views[0].nodes = {4};
  if (h) u.views[1].nodes = {7};
  u.is_anomaly = v || h;
  return u;
}

TEST(MechanismRecallTest, CountsByHand) {
  Dataset ds;
  ds.settings.resize(1);
  ds.units = {
      Make("straggler_rank", 0, true, true, true),  // 0: V+H, detected in V only
      Make("straggler_rank", 0, true, true, true),  // 1: V+H, detected in both
      Make("", 0, false, false, false),             // 2: unaffected sibling: no row
      Make("starvation", 1, true, false, false),    // 3: V without evidence, detected
      Make("starvation", 1, true, false, false),    // 4: V without evidence, missed
      Make("", -1, false, false, false),            // 5: healthy, false alarm in V
      Make("", -1, false, false, false),            // 6: healthy, quiet
  };
  Predictions p;
  p.units.resize(ds.units.size());
  p.at(0, View::kVertical).abnormal = true;
  p.at(1, View::kVertical).abnormal = true;
  p.at(1, View::kHorizontal).abnormal = true;
  p.at(2, View::kVertical).abnormal = true;  // ignored: the step had a fault
  p.at(3, View::kVertical).abnormal = true;
  p.at(5, View::kVertical).abnormal = true;
  std::map<std::string, MechanismRecall> rows;
  const std::set<std::string> invisible = {"starvation", "misroute"};
  AddMechanismRecall(ds, p, {0, 1, 2, 3}, invisible, &rows);  // two "folds"
  AddMechanismRecall(ds, p, {4, 5, 6}, invisible, &rows);
  ASSERT_EQ(rows.size(), 3u);
  const auto& st = rows.at("straggler_rank").views;
  EXPECT_EQ(st[0].positives, 2u);
  EXPECT_EQ(st[0].detected, 2u);
  EXPECT_EQ(st[1].positives, 2u);
  EXPECT_EQ(st[1].detected, 1u);
  EXPECT_EQ(st[0].without_evidence, 0u);
  const auto& sv = rows.at("starvation").views;
  EXPECT_EQ(sv[0].positives, 2u);
  EXPECT_EQ(sv[0].detected, 1u);
  EXPECT_EQ(sv[0].without_evidence, 2u);
  EXPECT_EQ(sv[0].without_evidence_detected, 1u);
  EXPECT_EQ(sv[1].positives, 0u);
  const auto& healthy = rows.at("").views;
  EXPECT_EQ(healthy[0].positives, 2u);  // units 5 and 6
  EXPECT_EQ(healthy[0].detected, 1u);
  EXPECT_EQ(healthy[1].detected, 0u);

  EXPECT_TRUE(rows.at("starvation").timing_invisible);
  EXPECT_FALSE(rows.at("straggler_rank").timing_invisible);
  const std::string md = MechanismRecallMarkdown("M", rows);
  const size_t straggler = md.find("| straggler_rank | 2/2 (1.000) | - | 1/2 (0.500) | - |");
  const size_t apart = md.find("*invisible in timing:*");
  const size_t starvation = md.find("| starvation | 1/2 (0.500) | 1/2 (0.500) | - | - |");
  const size_t healthy_row =
      md.find("| healthy: false alarms | 1/2 (0.500) | - | 0/2 (0.000) | - |");
  ASSERT_NE(straggler, std::string::npos) << md;
  ASSERT_NE(apart, std::string::npos) << md;
  ASSERT_NE(starvation, std::string::npos) << md;
  ASSERT_NE(healthy_row, std::string::npos) << md;
  EXPECT_LT(straggler, apart);
  EXPECT_LT(apart, starvation);
  EXPECT_LT(starvation, healthy_row);
  const std::string csv = MechanismRecallCsv("incident", "M", rows, true);
  EXPECT_NE(csv.find("incident,M,starvation,1,vertical,2,1,0.5000,2,1\n"), std::string::npos)
      << csv;
  EXPECT_NE(csv.find("incident,M,healthy,0,vertical,2,1,0.5000,0,0\n"), std::string::npos) << csv;
}

}  // namespace
}  // namespace teller::eval
