// The prompt-only baseline's step summary (src/eval/learned_baselines.h, StepSummaryLines) on
// a hand-built record, against lines written out by hand from the record's numbers.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "src/eval/learned_baselines.h"

namespace teller::eval {
namespace {

TEST(StepSummaryTest, SaysWhatAPromptWouldWithoutComparingSteps) {
  Dataset ds;
  Setting s;
  s.name = "toy";
  s.names = {"teller.step seq=1", "aten::mm", "cudaLaunchKernel", "gemm_kernel", "ncclKernel"};
  StepColumns r;
  // node: type, layer, name, parent, rank, offset (ns), duration (ns)
  struct Node {
    uint8_t layer;
    uint32_t name;
    int32_t parent, rank;
    int64_t offset, dur;
  };
  const std::vector<Node> nodes = {
      {0, 0, -1, 0, 0, 1'000'000},        // rank 0 STEP, 1 ms
      {1, 1, 0, 0, 10'000, 300'000},      // aten::mm, 300 us -> 2^8 (log2 300 = 8.23)
      {4, 2, 1, 0, 20'000, 5'000},        // launch, 5 us -> 2^2 (2.32)
      {5, 3, 2, 0, 30'000, 200'000},      // gemm, 200 us -> 2^8 (7.64)
      {0, 0, -1, 1, 500'000, 1'600'000},  // rank 1 STEP: the span runs to 2.1 ms
      {5, 4, 4, 1, 600'000, 90'000},      // nccl kernel on rank 1, 90 us -> 2^6 (6.49)
  };
  for (const Node& n : nodes) {
    r.type.push_back(0);
    r.layer.push_back(n.layer);
    r.name.push_back(n.name);
    r.parent.push_back(n.parent);
    r.depth.push_back(0);
    r.rank.push_back(n.rank);
    r.offset_ns.push_back(n.offset);
    r.dur_ns.push_back(n.dur);
  }
  s.records.push_back(r);
  ds.settings.push_back(s);
  Unit u;
  u.setting = 0;
  u.record = 0;
  ds.units.push_back(u);
  // 6 nodes -> 2^3 (2.58); span 0 .. 2.1 ms = 2100 us -> 2^11 (11.04). FRONTEND: 1 op, 300
  // us; HOST: 1, 5 us; GPU: 2 ops, 290 us -> 2^8 (8.18); counts 1 -> 2^0, 2 -> 2^1.
  const std::vector<std::string> want = {
      "step ranks 2 nodes 2^3 span 2^11us",
      "layer FRONTEND count 2^0 total 2^8us",
      "layer HOST count 2^0 total 2^2us",
      "layer GPU count 2^1 total 2^8us",
      "op FRONTEND aten::mm 2^8us",
      "op GPU gemm_kernel 2^8us",
      "op GPU ncclKernel 2^6us",
      "op HOST cudaLaunchKernel 2^2us",
  };
  EXPECT_EQ(StepSummaryLines(ds, 0), want);
}

}  // namespace
}  // namespace teller::eval
