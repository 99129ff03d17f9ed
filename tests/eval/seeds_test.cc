// Mean and 95 % interval over seeds (MeanWithInterval, StudentT975, SeedTableMarkdown),
// checked against values computed by hand.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "teller/eval/evaluate.h"

namespace teller::eval {
namespace {

TEST(SeedsTest, MeanIntervalByHand) {
  // 0.2 0.4 0.6 0.8 1.0: mean 0.6, s = sqrt(0.1) = 0.316228, t(4) = 2.776,
  // half = 2.776 * 0.316228 / sqrt(5) = 2.776 * 0.141421 = 0.392585.
  const MeanInterval m = MeanWithInterval({0.2, 0.4, 0.6, 0.8, 1.0});
  EXPECT_EQ(m.n, 5u);
  EXPECT_NEAR(m.mean, 0.6, 1e-12);
  EXPECT_NEAR(m.half, 0.392585, 1e-6);
  // Two values 1 and 3: mean 2, s = sqrt(2), t(1) = 12.706, half = 12.706.
  EXPECT_NEAR(MeanWithInterval({1, 3}).half, 12.706, 1e-9);
  EXPECT_EQ(MeanWithInterval({0.7}).half, 0);
  EXPECT_EQ(MeanWithInterval({0.7}).mean, 0.7);
  EXPECT_EQ(MeanWithInterval({}).mean, 0);
  EXPECT_EQ(MeanWithInterval({0.5, 0.5, 0.5}).half, 0);
  EXPECT_EQ(StudentT975(0), 0);
  EXPECT_EQ(StudentT975(9), 2.262);
  EXPECT_EQ(StudentT975(30), 2.042);
  EXPECT_EQ(StudentT975(200), 1.96);
}

TEST(SeedsTest, TableShowsMeanAndHalfWidth) {
  SeedRow r;
  r.method = "M";
  r.split = "incident";
  r.view = "vertical";
  for (double f1 : {0.5, 0.7}) {
    Scores s;
    s.views[0].step.f1 = f1;
    s.views[0].step.precision = 1.0;
    s.views[1].step.f1 = 0.0;  // the other view: not shown in this row
    r.seeds.push_back(s);
  }
  const std::string md = SeedTableMarkdown({r}, "1-2");
  // step P 1 ± 0; step R 0 ± 0; step F1 0.6 ± 12.706 * 0.141421 / 1.414214 = 1.271.
  EXPECT_NE(md.find("| incident | M | V | 1.000 ± 0.000 | 0.000 ± 0.000 | 0.600 ± 1.271 |"),
            std::string::npos)
      << md;
  const std::string csv = SeedTableCsv({r});
  EXPECT_NE(csv.find("incident,M,vertical,step F1,2,0.6000,-0.6706,1.8706\n"), std::string::npos)
      << csv;
}

}  // namespace
}  // namespace teller::eval
