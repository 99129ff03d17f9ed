// The log features of `teller eval` (features.h, LogFeature in core/vocabulary.h): what
// LoadDataset reads from a hand-written dataset's log.txt files, the raw features of a
// unit, and template rarity counted on the training part only.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "teller/core/file_util.h"
#include "teller/eval/dataset.h"
#include "teller/eval/features.h"

namespace teller::eval {
namespace {

void Write(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

std::string StepLine(const char* request, int step, int seq, int64_t start) {
  return std::string("{\"request\":\"") + request + "\",\"step\":" + std::to_string(step) +
         ",\"seq\":" + std::to_string(seq) +
         ",\"is_anomaly\":false,\"fault_type\":null,\"mechanism\":null,\"start_ns\":" +
         std::to_string(start) + ",\"end_ns\":" + std::to_string(start + 1000) +
         ",\"fault\":-1,\"vertical\":{\"is_anomaly\":false,\"affected_nodes\":[]},"
         "\"horizontal\":{\"is_anomaly\":false,\"affected_nodes\":[]}}\n";
}

class LogFeaturesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/teller_log_features_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    dir_ = root_ + "/s";
    ASSERT_TRUE(MakeDirs(dir_ + "/a").ok());
    ASSERT_TRUE(MakeDirs(dir_ + "/b").ok());
    // Engine step seq 1 (requests a, b) starts at 3.2 s, seq 2 (a) at 4 s.
    Write(dir_ + "/steps.jsonl", StepLine("a", 0, 1, 3'200'000'000) +
                                     StepLine("b", 0, 1, 3'200'000'000) +
                                     StepLine("a", 1, 2, 4'000'000'000));
  }
  void TearDown() override { std::system(("rm -rf " + root_).c_str()); }

  void WriteVersion2() {
    Write(dir_ + "/templates.txt",
          "teller-log-templates 1 depth=4 similarity=0.7 max_children=100\n"
          "0 2 Received request <*>\n1 1 admitted request <*>\n2 1 CUDA error: out of memory\n"
          "3 1 first token of request <*>\n4 1 slow step\n5 1 Finished request <*>\n");
    Write(dir_ + "/a/log.txt",
          "1000000000 step=0 template=0 scope=request INFO Received request a\n"
          "3000000000 step=0 template=1 scope=request INFO admitted request a\n"
          "3100000000 step=0 template=2 scope=batch ERROR CUDA error: out of memory\n"
          "3500000000 step=1 template=3 scope=request INFO first token of request a\n"
          "4100000000 step=1 template=4 scope=batch WARNING slow step\n"
          "5000000000 step=1 template=5 scope=request INFO Finished request a\n");
    Write(dir_ + "/b/log.txt",
          "2000000000 step=0 template=0 scope=request INFO Received request b\n"
          "3100000000 step=0 template=2 scope=batch ERROR CUDA error: out of memory\n");
  }

  Result<Dataset> Load() {
    LoadOptions o;
    o.columns = false;
    o.explanations = false;
    o.logs = true;
    return LoadDataset(root_, o);
  }

  std::string root_, dir_;
};

using Templates = std::vector<std::pair<uint32_t, uint32_t>>;

TEST_F(LogFeaturesTest, ReadsEveryUnitsLines) {
  WriteVersion2();
  auto ds = Load();
  ASSERT_TRUE(ds.ok()) << ds.status().message();
  ASSERT_EQ(ds->units.size(), 3u);
  EXPECT_EQ(ds->settings[0].templates, 6u);
  EXPECT_FALSE(ds->settings[0].templates_mined);
  EXPECT_EQ(ds->settings[0].log_lines, 8u);
  const UnitLogs& a0 = ds->units[0].logs;  // steps.jsonl order: a@0, b@0, a@1
  const UnitLogs& b0 = ds->units[1].logs;
  const UnitLogs& a1 = ds->units[2].logs;
  EXPECT_EQ(a0.lines, 3u);
  EXPECT_EQ(a0.by_level[static_cast<int>(LogLevel::kInfo)], 2u);
  EXPECT_EQ(a0.by_level[static_cast<int>(LogLevel::kError)], 1u);
  EXPECT_EQ(a0.templates, (Templates{{0, 1}, {1, 1}, {2, 1}}));
  // "CUDA error: out of memory" is the built-in cuda_oom signature, a memory fault.
  EXPECT_EQ(a0.signatures[static_cast<int>(FaultCategory::kMemoryResource)], 1u);
  EXPECT_EQ(a1.signatures[static_cast<int>(FaultCategory::kMemoryResource)], 0u);
  EXPECT_EQ(a1.templates, (Templates{{3, 1}, {4, 1}, {5, 1}}));
  EXPECT_EQ(a1.by_level[static_cast<int>(LogLevel::kWarning)], 1u);
  // a's lifecycle, over both steps' lines: arrived 1 s, scheduled 3 s, first token 3.5 s,
  // finished 5 s; every step of a carries it, with its own age (start - arrival).
  for (const UnitLogs* u : {&a0, &a1}) {
    EXPECT_EQ(u->queue_ns, 2'000'000'000);
    EXPECT_EQ(u->first_token_ns, 2'500'000'000);
    EXPECT_EQ(u->end_to_end_ns, 4'000'000'000);
  }
  EXPECT_EQ(a0.age_ns, 2'200'000'000);
  EXPECT_EQ(a1.age_ns, 3'000'000'000);
  // b only arrived: no interval, but an age.
  EXPECT_EQ(b0.queue_ns, UnitLogs::kUnknown);
  EXPECT_EQ(b0.end_to_end_ns, UnitLogs::kUnknown);
  EXPECT_EQ(b0.age_ns, 1'200'000'000);
  EXPECT_EQ(b0.templates, (Templates{{0, 1}, {2, 1}}));

  // Raw features: rarity against hand-made training counts (rare = at most 2 lines there;
  // ids past the counts have none).
  const std::vector<uint64_t> train = {5, 0, 3, 1};
  const std::vector<double> fa0 = LogFeatures(ds->units[0], train);
  const std::vector<double> fb0 = LogFeatures(ds->units[1], train);
  const std::vector<double> fa1 = LogFeatures(ds->units[2], train);
  auto at = [](const std::vector<double>& f, LogFeature k) { return f[static_cast<size_t>(k)]; };
  EXPECT_EQ(at(fa0, LogFeature::kLines), 3);
  EXPECT_EQ(at(fa0, LogFeature::kErrorLines), 1);
  EXPECT_EQ(at(fa0, LogFeature::kTemplates), 3);
  EXPECT_EQ(at(fa0, LogFeature::kRareTemplates), 1);  // template 1: no training line
  EXPECT_EQ(at(fb0, LogFeature::kRareTemplates), 0);  // 0 (5 lines) and 2 (3 lines)
  EXPECT_EQ(at(fa1, LogFeature::kRareTemplates), 3);  // 3 (1 line), 4 and 5 (none)
  EXPECT_EQ(at(fa0, LogFeature::kMemorySignatures), 1);
  EXPECT_EQ(at(fa0, LogFeature::kQueueUs), 2e6);
  EXPECT_EQ(at(fa1, LogFeature::kAgeUs), 3e6);
  EXPECT_EQ(at(fb0, LogFeature::kQueueUs), 0);  // unknown counts as none
  EXPECT_EQ(LogFeatureNames().size(), static_cast<size_t>(kLogFeatureCount));
  EXPECT_EQ(LogFeatureNames()[static_cast<size_t>(LogFeature::kCommunicationSignatures)],
            "log.signature.communication");
}

// The log stream the MoT reads: a unit's distinct (level, template) pairs in order of first
// appearance, as "LEVEL template text".
TEST_F(LogFeaturesTest, LogStreamKeepsDistinctLinesInOrder) {
  WriteVersion2();
  Write(dir_ + "/a/log.txt",
        "1000000000 step=0 template=0 scope=request INFO Received request a\n"
        "3100000000 step=0 template=2 scope=batch ERROR CUDA error: out of memory\n"
        "3200000000 step=0 template=0 scope=request INFO Received request a\n"
        "3300000000 step=0 template=2 scope=batch WARNING CUDA error: out of memory\n"
        "3400000000 step=0 template=2 scope=batch ERROR CUDA error: out of memory\n"
        "- step=1 template=4 scope=batch - slow step\n");
  auto ds = Load();
  ASSERT_TRUE(ds.ok()) << ds.status().message();
  using Sequence = std::vector<std::pair<LogLevel, uint32_t>>;
  EXPECT_EQ(ds->units[0].logs.sequence,
            (Sequence{{LogLevel::kInfo, 0}, {LogLevel::kError, 2}, {LogLevel::kWarning, 2}}));
  EXPECT_EQ(ds->units[2].logs.sequence, (Sequence{{LogLevel::kUnknown, 4}}));
  EXPECT_EQ(ds->settings[0].template_text.size(), 6u);
  EXPECT_EQ(ds->settings[0].template_text[0], "Received request <*>");
}

TEST_F(LogFeaturesTest, Version1LogsStillLoad) {
  // No templates.txt, no ids: the loader mines the templates itself, and a line names the
  // request when its message holds the id.
  Write(dir_ + "/a/log.txt",
        "1000000000 step=0 INFO Received request a\n"
        "3000000000 step=0 INFO admitted request a\n"
        "5000000000 step=1 INFO Finished request a\n");
  Write(dir_ + "/b/log.txt", "2000000000 step=0 INFO Received request b\n");
  auto ds = Load();
  ASSERT_TRUE(ds.ok()) << ds.status().message();
  EXPECT_TRUE(ds->settings[0].templates_mined);
  // Mined in request order: a's received (0), admitted (1), finished (2); b's received
  // line shares only 2 of 3 tokens with template 0 (< 0.7): a template of its own (3).
  EXPECT_EQ(ds->settings[0].templates, 4u);
  EXPECT_EQ(ds->units[0].logs.templates, (Templates{{0, 1}, {1, 1}}));
  EXPECT_EQ(ds->units[1].logs.templates, (Templates{{3, 1}}));
  EXPECT_EQ(ds->units[2].logs.templates, (Templates{{2, 1}}));
  EXPECT_EQ(ds->units[0].logs.queue_ns, 2'000'000'000);
  EXPECT_EQ(ds->units[2].logs.end_to_end_ns, 4'000'000'000);
}

TEST_F(LogFeaturesTest, DamagedLogsNameFileAndLine) {
  WriteVersion2();
  Write(dir_ + "/b/log.txt",
        "2000000000 step=0 template=0 scope=request INFO Received request b\n"
        "3100000000 step=0 template=9 scope=batch ERROR CUDA error: out of memory\n");
  auto ds = Load();
  ASSERT_FALSE(ds.ok());
  EXPECT_NE(ds.status().message().find("s/b/log.txt:2: template 9 is not in"), std::string::npos)
      << ds.status().message();

  Write(dir_ + "/b/log.txt", "2000000000 step=3 template=0 scope=request INFO Received b\n");
  ds = Load();
  ASSERT_FALSE(ds.ok());
  EXPECT_NE(ds.status().message().find("s/b/log.txt:1: step=3, a step steps.jsonl does not list"),
            std::string::npos)
      << ds.status().message();

  Write(dir_ + "/b/log.txt", "2000000000 step=0 INFO Received request b\n");
  ds = Load();
  ASSERT_FALSE(ds.ok());
  EXPECT_NE(ds.status().message().find("s/b/log.txt:1: no template id"), std::string::npos)
      << ds.status().message();

  std::remove((dir_ + "/b/log.txt").c_str());
  ds = Load();
  ASSERT_FALSE(ds.ok());
  EXPECT_NE(ds.status().message().find("s/b/log.txt: missing"), std::string::npos)
      << ds.status().message();
}

TEST(LogRarity, CountsTemplatesOnTheTrainingPartOnly) {
  // Units 0-3 (training) print template 7 once each; units 4-8 (test) print template 7 and
  // template 9, which the training part never printed.
  Dataset ds;
  ds.settings.resize(1);
  ds.settings[0].name = "s";
  ds.settings[0].templates = 10;
  ds.settings[0].records.resize(1);
  std::vector<uint32_t> train, test;
  for (uint32_t i = 0; i < 9; ++i) {
    Unit u;
    u.record = 0;
    u.logs.lines = i < 4 ? 1 : 2;
    u.logs.templates = i < 4 ? Templates{{7, 1}} : Templates{{7, 1}, {9, 1}};
    ds.units.push_back(u);
    (i < 4 ? train : test).push_back(i);
  }
  const Features all = ComputeFeatures(ds, FeatureSet::kStat);
  const size_t rare = all.record_cols + static_cast<size_t>(LogFeature::kRareTemplates);
  ASSERT_EQ(all.names.size(), all.record_cols + kLogFeatureCount);
  EXPECT_EQ(all.names[rare], "log.rare_templates");
  // Over all units template 9 has 5 lines and 7 has 9: nothing is rare, the column is flat.
  const Matrix m_all = all.Rows(ds, test);
  for (size_t r = 0; r < m_all.rows; ++r) EXPECT_EQ(m_all.at(r, rare), 0.0);
  // Counted on the training part, 9 is new (0 lines), 7 is common (4 > 2): each test unit
  // has one rare template, each training unit none.
  const Features fold = all.ForTraining(ds, train);
  const Matrix m_test = fold.Rows(ds, test);
  const Matrix m_train = fold.Rows(ds, train);
  for (size_t r = 0; r < m_test.rows; ++r) EXPECT_GT(m_test.at(r, rare), m_train.at(0, rare));
  EXPECT_EQ(LogFeatures(ds.units[4],
                        {0, 0, 0, 0, 0, 0, 0, 4})[static_cast<size_t>(LogFeature::kRareTemplates)],
            1.0);
}

}  // namespace
}  // namespace teller::eval
