// Grouping accuracy on three LogHub datasets, both label sets, against the floors that
// `loghub_benchmark --floor` computed and tests/logs/ga_floor.txt holds (bench/README.md,
// "Log template mining"). Skips when the shared data is absent.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "bench/logs/loghub_data.h"
#include "real_data.h"
#include "teller/logs/template_miner.h"

namespace teller {
namespace {

std::map<std::string, double> Floors() {
  std::map<std::string, double> floors;
  std::ifstream in(TELLER_GA_FLOOR_FILE);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream f(line);
    std::string name, labels;
    double floor = 0;
    if (f >> name >> labels >> floor) floors[name + " " + labels] = floor;
  }
  return floors;
}

TEST(LoghubGaTest, MeetsTheCheckedInFloors) {
  TELLER_REQUIRE_REAL_DATA("loghub_2k");
  TELLER_REQUIRE_REAL_DATA("loghub_2k_corrected");
  const auto floors = Floors();
  ASSERT_FALSE(floors.empty()) << "no floors in " << TELLER_GA_FLOOR_FILE;
  // A dataset of few templates, one of host and user names, one of uuids and URLs.
  for (const char* name : {"HDFS", "OpenSSH", "OpenStack"}) {
    for (bool corrected : {false, true}) {
      const std::string key = std::string(name) + (corrected ? " corrected" : " original");
      auto d = loghub::LoadStructured(loghub::StructuredPath(real_data::Dir(), name, corrected));
      ASSERT_TRUE(d.ok()) << d.status().message();
      ASSERT_EQ(d->content.size(), 2000u) << key;
      logs::TemplateMiner miner;
      std::vector<uint32_t> mined;
      for (const std::string& m : d->content) mined.push_back(miner.Add(m));
      ASSERT_EQ(floors.count(key), 1u) << key;
      EXPECT_GE(logs::GroupingAccuracy(d->label, mined), floors.at(key)) << key;
    }
  }
}

}  // namespace
}  // namespace teller
