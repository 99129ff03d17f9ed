// teller-numeric's predictions (src/eval/numeric.cc) where the diagnosis is abnormal for
// one request of a step only: a simulated misroute (a new request run as a decode, never
// prefilled) makes its own dataset step abnormal, and the other requests of the same
// engine step stay normal; and `teller eval --without-logs`, the ablation of the log
// modality, takes the log columns out of the features and says so.
#include "teller/eval/numeric.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>
#include <utility>

#include "teller/eval/dataset.h"
#include "teller/eval/features.h"
#include "tests/temp_dirs.h"

namespace teller::eval {
namespace {

struct Outcome {
  int exit_code = -1;
  std::string out;
};

Outcome Teller(const std::string& dir, const std::string& args) {
  const std::string cmd =
      "'" + std::string(TELLER_BIN) + "' " + args + " >'" + dir + "/out.txt' 2>&1";
  const int status = std::system(cmd.c_str());
  Outcome o;
  o.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  FILE* f = std::fopen((dir + "/out.txt").c_str(), "r");
  if (f != nullptr) {
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) o.out.append(buf, n);
    std::fclose(f);
  }
  return o;
}

class NumericPredictionsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = teller::testing::ProgramTempDirs().Make("teller-numeric-test", "ds");
    std::filesystem::create_directories(dir_);
    // One GPU, two layers, 16 requests: a misroute acts on a new request admitted while
    // it lasts (docs/simulator.md).
    const Outcome sim =
        Teller(dir_,
               "simulate --profile vllm-v1-online --requests 16 --layers 2 --nodes 1 "
               "--gpus-per-node 1 --tp 1 --pp 1 --seed 3 --fault misroute:onset=1s,duration=3s "
               "--out '" +
                   dir_ + "/raw/online'");
    ASSERT_EQ(sim.exit_code, 0) << sim.out;
    const Outcome build =
        Teller(dir_, "dataset build '" + dir_ + "/raw' --out '" + dir_ + "/ds' -q --jobs 1");
    ASSERT_EQ(build.exit_code, 0) << build.out;
  }
  static std::string dir_;
};
std::string NumericPredictionsTest::dir_;

TEST_F(NumericPredictionsTest, ARequestScopedVerdictMarksOnlyItsRequestsUnits) {
  auto ds = LoadDataset(dir_ + "/ds");
  ASSERT_TRUE(ds.ok()) << ds.status().message();
  auto p = PredictTellerNumeric(ds.value(), {});
  ASSERT_TRUE(p.ok()) << p.status().message();
  const Dataset& d = ds.value();
  // The misrouted units (labelled abnormal, mechanism misroute) and the engine steps
  // (records) they are in.
  std::set<uint32_t> misrouted;
  std::set<std::pair<uint32_t, uint32_t>> records;
  for (uint32_t i = 0; i < d.units.size(); ++i) {
    if (d.units[i].mechanism != "misroute" || !d.units[i].view(View::kVertical).is_anomaly)
      continue;
    misrouted.insert(i);
    records.emplace(d.units[i].setting, d.units[i].record);
  }
  ASSERT_FALSE(misrouted.empty()) << "the simulated misroute acted on no request";
  size_t siblings = 0;
  for (uint32_t i = 0; i < d.units.size(); ++i) {
    if (records.count({d.units[i].setting, d.units[i].record}) == 0) continue;
    const Prediction& v = p.value().at(i, View::kVertical);
    if (misrouted.count(i) > 0) {
      EXPECT_TRUE(v.abnormal) << d.units[i].request << " seq " << d.units[i].seq;
      EXPECT_EQ(v.fault_type, "scheduling_software");
    } else {
      // Batch siblings: decoded as usual in the same engine step, labelled normal.
      EXPECT_FALSE(d.units[i].view(View::kVertical).is_anomaly);
      EXPECT_FALSE(v.abnormal) << d.units[i].request << " seq " << d.units[i].seq;
      ++siblings;
    }
  }
  EXPECT_GT(siblings, 0u) << "no misrouted request shared its step: the scoping is untested";
}

TEST_F(NumericPredictionsTest, WithoutLogsTheFeaturesHaveNoLogColumnsAndTheTablesSaySo) {
  auto ds = LoadDataset(dir_ + "/ds");
  ASSERT_TRUE(ds.ok()) << ds.status().message();
  const Features with = ComputeFeatures(ds.value(), FeatureSet::kStat);
  const Features without = ComputeFeatures(ds.value(), FeatureSet::kStat, false);
  EXPECT_EQ(with.names.size(), StatFeatureNames().size() + LogFeatureNames().size());
  EXPECT_EQ(without.names.size(), StatFeatureNames().size());
  EXPECT_TRUE(without.log_per_setting.empty());
  const Matrix rows = without.Rows(ds.value(), {0, 1});
  EXPECT_EQ(rows.cols, StatFeatureNames().size());
  // The record columns are the same either way.
  const Matrix full = with.Rows(ds.value(), {0, 1});
  for (size_t c = 0; c < rows.cols; ++c) EXPECT_EQ(rows.at(1, c), full.at(1, c)) << c;

  const Outcome o = Teller(
      dir_, "eval --data '" + dir_ + "/ds' --method kmeans-stat --split request --without-logs -q");
  ASSERT_EQ(o.exit_code, 0) << o.out;
  EXPECT_NE(o.out.find("Without logs: the methods read no log line (--without-logs)."),
            std::string::npos)
      << o.out;
}

}  // namespace
}  // namespace teller::eval
