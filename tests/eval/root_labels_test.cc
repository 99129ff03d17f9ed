// The root nodes of a view as LoadDataset reads them from steps.jsonl: `root_nodes` where
// the dataset was built from ground truth with roles (version 3), none (has_roots false)
// for older datasets, and an error naming the line for a malformed list.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "teller/core/file_util.h"
#include "teller/eval/dataset.h"

namespace teller::eval {
namespace {

void Write(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// One steps.jsonl line of request `request` at seq `seq` with the given view objects.
std::string StepLine(const char* request, int seq, const std::string& vertical,
                     const std::string& horizontal) {
  return std::string("{\"request\":\"") + request + "\",\"step\":0,\"seq\":" + std::to_string(seq) +
         ",\"is_anomaly\":true,\"fault_type\":\"communication\",\"mechanism\":"
         "\"worker_stall\",\"start_ns\":1000,\"end_ns\":2000,\"fault\":0,\"vertical\":" +
         vertical + ",\"horizontal\":" + horizontal + "}\n";
}

class RootLabelsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/teller_root_labels_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    ASSERT_TRUE(MakeDirs(root_ + "/s").ok());
  }
  void TearDown() override { std::system(("rm -rf " + root_).c_str()); }

  Result<Dataset> Load() {
    LoadOptions o;
    o.columns = false;
    o.explanations = false;
    o.logs = false;
    return LoadDataset(root_, o);
  }

  std::string root_;
};

TEST_F(RootLabelsTest, RootNodesAreReadWhereTheDatasetHasThem) {
  // a: a stalled worker's step as a build from version 3 ground truth writes it: the
  // horizontal view's nodes 4, 9 and 12, of which 12 (the stalled rank's own collective)
  // is the root; listed out of order and twice, read back sorted and unique. The
  // vertical view has roles but no root among its nodes (an empty list).
  // b: a dataset from older ground truth: no root_nodes, roles unknown.
  Write(root_ + "/s/steps.jsonl",
        StepLine("a", 1, "{\"is_anomaly\":true,\"affected_nodes\":[3],\"root_nodes\":[]}",
                 "{\"is_anomaly\":true,\"affected_nodes\":[12,4,9],\"root_nodes\":[12,12]}") +
            StepLine("b", 2, "{\"is_anomaly\":false,\"affected_nodes\":[]}",
                     "{\"is_anomaly\":true,\"affected_nodes\":[4,9]}"));
  auto ds = Load();
  ASSERT_TRUE(ds.ok()) << ds.status().message();
  ASSERT_EQ(ds->units.size(), 2u);
  const Unit& a = ds->units[0];
  EXPECT_EQ(a.view(View::kHorizontal).nodes, (std::vector<uint32_t>{4, 9, 12}));
  EXPECT_TRUE(a.view(View::kHorizontal).has_roots);
  EXPECT_EQ(a.view(View::kHorizontal).roots, std::vector<uint32_t>{12});
  EXPECT_TRUE(a.view(View::kVertical).has_roots);
  EXPECT_TRUE(a.view(View::kVertical).roots.empty());
  const Unit& b = ds->units[1];
  EXPECT_EQ(b.view(View::kHorizontal).nodes, (std::vector<uint32_t>{4, 9}));
  EXPECT_FALSE(b.view(View::kHorizontal).has_roots);
  EXPECT_FALSE(b.view(View::kVertical).has_roots);
}

TEST_F(RootLabelsTest, AMalformedRootListNamesTheLine) {
  Write(root_ + "/s/steps.jsonl",
        StepLine("a", 1, "{\"is_anomaly\":false,\"affected_nodes\":[]}",
                 "{\"is_anomaly\":true,\"affected_nodes\":[4],\"root_nodes\":[4]}") +
            StepLine("b", 2, "{\"is_anomaly\":false,\"affected_nodes\":[]}",
                     "{\"is_anomaly\":true,\"affected_nodes\":[4],\"root_nodes\":\"4\"}"));
  auto ds = Load();
  ASSERT_FALSE(ds.ok());
  EXPECT_NE(ds.status().message().find("s/steps.jsonl:2"), std::string::npos)
      << ds.status().message();
  EXPECT_NE(ds.status().message().find("bad \"horizontal\" labels"), std::string::npos)
      << ds.status().message();
}

}  // namespace
}  // namespace teller::eval
