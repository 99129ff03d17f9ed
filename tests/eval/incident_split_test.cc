// The incident split: fault windows and healthy time blocks (GroupIncidents) on a
// hand-checkable timeline, the parts of MakeFolds on a generated dataset (no record, fault
// window or block in two parts), and the shared-record count of the request split.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "teller/eval/evaluate.h"

namespace teller::eval {
namespace {

struct StepSpec {
  uint64_t seq;
  int64_t start, end, fault;
  std::vector<std::string> requests;
  std::vector<std::string> affected;  // requests for which the step is abnormal
  std::string category = "communication";
};

// One setting per call; units in the order given (a batch of n requests gives n units
// sharing one record).
void AddSetting(Dataset* ds, const std::string& name, const std::vector<StepSpec>& steps) {
  Setting st;
  st.name = name;
  st.engine = name;
  const uint32_t s = static_cast<uint32_t>(ds->settings.size());
  for (const StepSpec& spec : steps) {
    const uint32_t record = static_cast<uint32_t>(st.records.size());
    st.records.emplace_back();
    st.records.back().seq = spec.seq;
    for (const std::string& q : spec.requests) {
      Unit u;
      u.setting = s;
      u.request = q;
      u.seq = spec.seq;
      u.record = record;
      u.start_ns = spec.start;
      u.end_ns = spec.end;
      u.fault = spec.fault;
      u.has_incident = true;
      for (const std::string& a : spec.affected) {
        if (a != q) continue;
        u.is_anomaly = true;
        u.fault_type = spec.category;
        u.mechanism = "straggler_rank";
        u.views[1] = {true, {1}, {}, false};
      }
      ds->units.push_back(std::move(u));
    }
  }
  ds->settings.push_back(std::move(st));
}

// The seqs of each incident, in incident order.
std::vector<std::vector<uint64_t>> SeqsOf(const Dataset& ds, const Incidents& g) {
  std::vector<std::vector<uint64_t>> out;
  for (const Incident& inc : g.incidents) {
    std::set<uint64_t> seqs;
    for (uint32_t i : inc.units) seqs.insert(ds.units[i].seq);
    out.emplace_back(seqs.begin(), seqs.end());
  }
  return out;
}

// Timeline (ns):  1 [0,10) 2 [10,20) | 3 [20,30) f0 | 4 [30,40) healthy, starts inside
// f0's window [20,50) | 5 [40,50) f0 | 6 [60,70) | 7 [70,80) f1 | 8 [78,90) f2 |
// 9 [90,100) f2 | 10..14 every 10 ns from 100 (10 starts where the window ends: outside).
// Windows: f0 [20,50) (span 30); f1 [70,80) and f2 [78,100) overlap and merge.
// Median span of the windows {30, 30} = 30 ns, so healthy runs are cut every 30 ns:
// {1,2} | {6} | {10,11,12} {13,14}.
TEST(IncidentTest, GroupsFaultWindowsSiblingsAndHealthyBlocksByHand) {
  Dataset ds;
  AddSetting(&ds, "s",
             {{1, 0, 10, -1, {"a"}, {}},
              {2, 10, 20, -1, {"a", "b"}, {}},
              {3, 20, 30, 0, {"a", "b"}, {"a"}},  // b is an unaffected batch sibling
              {4, 30, 40, -1, {"c"}, {}},
              {5, 40, 50, 0, {"a"}, {"a"}},
              {6, 60, 70, -1, {"c"}, {}},
              {7, 70, 80, 1, {"c", "d"}, {"c", "d"}, "cuda_kernel"},
              {8, 78, 90, 2, {"d"}, {"d"}, "memory_resource"},
              {9, 90, 100, 2, {"d"}, {"d"}, "memory_resource"},
              {10, 100, 110, -1, {"e"}, {}},
              {11, 110, 120, -1, {"e"}, {}},
              {12, 120, 130, -1, {"e"}, {}},
              {13, 130, 140, -1, {"e"}, {}},
              {14, 140, 150, -1, {"e"}, {}}});
  auto g = GroupIncidents(ds);
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g->block_ns, std::vector<int64_t>{30});
  const std::vector<std::vector<uint64_t>> expected = {{1, 2},    {3, 4, 5},    {6},
                                                       {7, 8, 9}, {10, 11, 12}, {13, 14}};
  EXPECT_EQ(SeqsOf(ds, *g), expected);
  const std::vector<bool> fault = {false, true, false, true, false, false};
  for (size_t k = 0; k < expected.size(); ++k) EXPECT_EQ(g->incidents[k].fault, fault[k]) << k;
  EXPECT_EQ(g->incidents[1].category, "communication");
  EXPECT_EQ(g->incidents[1].records, 3u);
  EXPECT_EQ(g->incidents[1].units.size(), 4u);  // 3a, 3b, 4c, 5a
  EXPECT_EQ(g->incidents[3].faults, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(g->incidents[3].category, "cuda_kernel");  // the earliest fault's
  EXPECT_EQ(g->incidents[3].start_ns, 70);
  EXPECT_EQ(g->incidents[3].end_ns, 100);
  for (uint32_t i = 0; i < ds.units.size(); ++i) {
    const Incident& inc = g->incidents[g->of_unit[i]];
    EXPECT_NE(std::find(inc.units.begin(), inc.units.end(), i), inc.units.end());
  }
}

TEST(IncidentTest, InconsistentOrMissingStepFieldsAreErrors) {
  Dataset ds;
  AddSetting(&ds, "s", {{1, 0, 10, -1, {"a", "b"}, {}}});
  ds.units[1].fault = 3;  // a batch sibling disagreeing on the step's fault
  auto g = GroupIncidents(ds);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("s/steps.jsonl"), std::string::npos);
  EXPECT_NE(g.status().message().find("request b"), std::string::npos);
  ds.units[1].fault = -1;
  ds.units[0].has_incident = false;  // an older dataset
  g = GroupIncidents(ds);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("rebuild"), std::string::npos);
  EXPECT_FALSE(MakeFolds(ds, SplitKind::kIncident, 1).ok());
}

// Two settings of 400 engine steps, batches of 1-3 requests drawn from a pool so that a
// request spans many steps, a fault every 40 steps lasting 6, categories alternating.
Dataset Generated() {
  Dataset ds;
  for (int s = 0; s < 2; ++s) {
    std::vector<StepSpec> steps;
    int fault = 0;
    for (uint64_t k = 0; k < 400; ++k) {
      StepSpec spec;
      spec.seq = k;
      spec.start = static_cast<int64_t>(k) * 1000;
      spec.end = spec.start + 900;
      for (uint64_t b = 0; b < 1 + k % 3; ++b)
        spec.requests.push_back("q" + std::to_string((k / 5 + b * 7) % 60));
      const bool faulty = k % 40 >= 20 && k % 40 < 26;
      spec.fault = faulty ? fault : -1;
      if (faulty) {
        spec.affected = {spec.requests.front()};
        spec.category = fault % 2 == 0 ? "communication" : "cuda_kernel";
      }
      if (k % 40 == 25) ++fault;
      steps.push_back(std::move(spec));
    }
    AddSetting(&ds, "setting-" + std::to_string(s), steps);
  }
  return ds;
}

TEST(IncidentTest, SplitKeepsRecordsWindowsAndBlocksInOnePart) {
  const Dataset ds = Generated();
  auto g = GroupIncidents(ds);
  ASSERT_TRUE(g.ok());
  auto folds = MakeFolds(ds, SplitKind::kIncident, 7);
  ASSERT_TRUE(folds.ok()) << folds.status().message();
  ASSERT_EQ(folds->size(), 1u);
  const Fold& f = folds->front();
  EXPECT_EQ(f.train.size() + f.validation.size() + f.test.size(), ds.units.size());
  std::map<std::pair<uint32_t, uint32_t>, std::set<int>> parts_of_record;
  std::map<std::pair<uint32_t, int64_t>, std::set<int>> parts_of_fault;
  std::map<uint32_t, std::set<int>> parts_of_incident;
  std::map<std::string, int> test_windows;  // by category
  int part = 0;
  for (const std::vector<uint32_t>* units : {&f.train, &f.validation, &f.test}) {
    for (uint32_t i : *units) {
      const Unit& u = ds.units[i];
      parts_of_record[{u.setting, u.record}].insert(part);
      if (u.fault >= 0) parts_of_fault[{u.setting, u.fault}].insert(part);
      parts_of_incident[g->of_unit[i]].insert(part);
    }
    ++part;
  }
  for (const auto& [key, parts] : parts_of_record) EXPECT_EQ(parts.size(), 1u);
  for (const auto& [key, parts] : parts_of_fault) EXPECT_EQ(parts.size(), 1u);
  for (const auto& [key, parts] : parts_of_incident) EXPECT_EQ(parts.size(), 1u);
  // 20 windows (10 per category, pooled over the two settings): 1 test, 1 validation each.
  size_t windows = 0, blocks_per_setting[2] = {0, 0};
  for (uint32_t k = 0; k < g->incidents.size(); ++k) {
    const Incident& inc = g->incidents[k];
    if (!inc.fault) {
      ++blocks_per_setting[inc.setting];
      continue;
    }
    ++windows;
    if (*parts_of_incident[k].begin() == 2) ++test_windows[inc.category];
  }
  EXPECT_EQ(windows, 20u);
  EXPECT_EQ(test_windows["communication"], 1);
  EXPECT_EQ(test_windows["cuda_kernel"], 1);
  // Healthy blocks: median window span 5,900 ns, so each healthy run of 34 steps (34 us)
  // makes ceil(34,000 / 6,000) = 6 blocks (the first run: 20 steps, 4 blocks).
  EXPECT_EQ(g->block_ns[0], 5900);
  EXPECT_EQ(blocks_per_setting[0], 4u + 9u * 6u + 3u);  // last run: 14 steps
  // Same seed, same split; another seed, another.
  EXPECT_EQ(MakeFolds(ds, SplitKind::kIncident, 7)->front().test, f.test);
  EXPECT_NE(MakeFolds(ds, SplitKind::kIncident, 8)->front().test, f.test);
  EXPECT_EQ(CountSharedRecords(ds, f).records, 0u);
}

// K-fold cross-validation of the incident split: every unit tested exactly once over the
// K folds; in each fold no incident or record in two parts; fold i validates on the part
// fold i+1 tests; every fault category spread over the folds (its 10 windows in 10
// different folds, as the deal goes round-robin).
TEST(IncidentTest, KFoldTestsEveryIncidentOnceAndKeepsEachWhole) {
  const Dataset ds = Generated();
  auto g = GroupIncidents(ds);
  ASSERT_TRUE(g.ok());
  constexpr int kK = 10;
  auto folds = MakeFolds(ds, SplitKind::kIncident, 7, kK);
  ASSERT_TRUE(folds.ok()) << folds.status().message();
  ASSERT_EQ(folds->size(), static_cast<size_t>(kK));
  std::vector<int> tested(ds.units.size(), 0);
  std::map<std::string, std::set<size_t>> folds_testing_category;
  for (size_t i = 0; i < folds->size(); ++i) {
    const Fold& f = (*folds)[i];
    EXPECT_EQ(f.name, "fold " + std::to_string(i + 1) + "/10");
    EXPECT_EQ(f.train.size() + f.validation.size() + f.test.size(), ds.units.size());
    EXPECT_EQ(f.validation, (*folds)[(i + 1) % kK].test);
    EXPECT_FALSE(f.test.empty());
    std::map<uint32_t, std::set<int>> parts_of_incident;
    std::map<std::pair<uint32_t, uint32_t>, std::set<int>> parts_of_record;
    int part = 0;
    for (const std::vector<uint32_t>* units : {&f.train, &f.validation, &f.test}) {
      for (uint32_t u : *units) {
        parts_of_incident[g->of_unit[u]].insert(part);
        parts_of_record[{ds.units[u].setting, ds.units[u].record}].insert(part);
      }
      ++part;
    }
    for (const auto& [k, parts] : parts_of_incident) EXPECT_EQ(parts.size(), 1u) << k;
    for (const auto& [k, parts] : parts_of_record) EXPECT_EQ(parts.size(), 1u);
    for (uint32_t u : f.test) {
      ++tested[u];
      const Incident& inc = g->incidents[g->of_unit[u]];
      if (inc.fault) folds_testing_category[inc.category].insert(i);
    }
  }
  for (size_t u = 0; u < tested.size(); ++u) EXPECT_EQ(tested[u], 1) << "unit " << u;
  EXPECT_EQ(folds_testing_category["communication"].size(), 10u);
  EXPECT_EQ(folds_testing_category["cuda_kernel"].size(), 10u);
  // The same seed deals the same folds.
  auto again = MakeFolds(ds, SplitKind::kIncident, 7, kK);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)[3].test, (*folds)[3].test);
}

TEST(IncidentTest, KFoldOfTheRequestSplitTestsEveryRequestOnce) {
  const Dataset ds = Generated();
  auto folds = MakeFolds(ds, SplitKind::kRequest, 3, 5);
  ASSERT_TRUE(folds.ok()) << folds.status().message();
  ASSERT_EQ(folds->size(), 5u);
  std::map<std::pair<uint32_t, std::string>, std::set<size_t>> folds_of_request;
  size_t tested = 0;
  for (size_t i = 0; i < folds->size(); ++i) {
    for (uint32_t u : (*folds)[i].test) {
      folds_of_request[{ds.units[u].setting, ds.units[u].request}].insert(i);
      ++tested;
    }
  }
  EXPECT_EQ(tested, ds.units.size());
  EXPECT_EQ(folds_of_request.size(), 120u);  // 60 requests in each of the two settings
  for (const auto& [key, in] : folds_of_request) EXPECT_EQ(in.size(), 1u) << key.second;
}

TEST(IncidentTest, KFoldRefusesWhatItCannotDeal) {
  const Dataset ds = Generated();
  auto two = MakeFolds(ds, SplitKind::kIncident, 1, 2);
  ASSERT_FALSE(two.ok());
  EXPECT_NE(two.status().message().find("3 to 100"), std::string::npos) << two.status().message();
  auto engine = MakeFolds(ds, SplitKind::kEngine, 1, 5);
  ASSERT_FALSE(engine.ok());
  EXPECT_NE(engine.status().message().find("incident and request"), std::string::npos);
  // One setting, one fault window of 6 steps and its healthy neighbours: 3 incidents, too
  // few for 5 folds.
  Dataset small;
  std::vector<StepSpec> steps;
  for (uint64_t k = 0; k < 12; ++k) {
    StepSpec spec{k,  static_cast<int64_t>(k) * 1000, static_cast<int64_t>(k) * 1000 + 900,
                  -1, {"q" + std::to_string(k)},      {}};
    if (k >= 3 && k < 9) {
      spec.fault = 0;
      spec.affected = spec.requests;
    }
    steps.push_back(spec);
  }
  AddSetting(&small, "s", steps);
  auto g = GroupIncidents(small);
  ASSERT_TRUE(g.ok());
  ASSERT_LT(g->incidents.size(), 5u);
  auto few = MakeFolds(small, SplitKind::kIncident, 1, 5);
  ASSERT_FALSE(few.ok());
  EXPECT_NE(few.status().message().find("needs at least 5 incidents; the dataset has " +
                                        std::to_string(g->incidents.size())),
            std::string::npos)
      << few.status().message();
}

// Two requests sharing every record: the request split puts one in test and one in
// train, and every test unit sits on a record trained on.
TEST(IncidentTest, SharedRecordsOfTheRequestSplitAreCounted) {
  Dataset ds;
  AddSetting(&ds, "s", {{1, 0, 10, -1, {"a", "b"}, {}}, {2, 10, 20, -1, {"a", "b", "c"}, {}}});
  Fold f;
  f.test = {0, 2};     // a@1, a@2
  f.train = {1, 3};    // b@1, b@2
  f.validation = {4};  // c@2: not counted
  const SharedRecordCount c = CountSharedRecords(ds, f);
  EXPECT_EQ(c.records, 2u);
  EXPECT_EQ(c.test_units, 2u);
  f.train = {1};
  EXPECT_EQ(CountSharedRecords(ds, f).records, 1u);
  EXPECT_EQ(CountSharedRecords(ds, f).test_units, 1u);
}

}  // namespace
}  // namespace teller::eval
