// Slices on a small synthetic trace whose communicators are known by construction.
#include "teller/slice/slice.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "teller/reconstruct/reconstruct.h"

namespace teller::slice {
namespace {

constexpr std::string_view kAllReduce = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL";

// Four ranks of one host in two communicators, {0, 1} and {2, 3}, each rank with one step
// that runs a GEMM and then two all-reduces (a "vllm::all_reduce" range around the launch
// of an NCCL kernel). Within a communicator the k-th all-reduces end together; the second
// communicator's second all-reduce ends 300 us after the first's, so its ranks' end times
// do not agree with ranks 0 and 1 and they are another communicator.
class FourRanks {
 public:
  FourRanks() {
    for (uint32_t p = 0; p < 4; ++p) t_.ProcessIndex("node-1", 100 + p);
    for (uint32_t p = 0; p < 4; ++p) {
      const int64_t late = 20'000 * p;  // ranks enter the collectives at different times
      Add(EventType::kPush, "teller.step seq=1 kind=decode n=1 reqs=r1", 0, 0, 0, p);
      Add(EventType::kRuntime, "cudaLaunchKernel", 10'000, 15'000, 1, p);
      Add(EventType::kKernel, "sm90_xmma_gemm_bf16bf16", 20'000, 90'000, 1, p);
      for (int k = 0; k < 2; ++k) {
        const int64_t at = 100'000 + 400'000 * k + late;
        const int64_t end = 400'000 + 400'000 * k + (p >= 2 && k == 1 ? 300'000 : 0) + p * 500;
        const uint64_t corr = 10 + static_cast<uint64_t>(k);
        Add(EventType::kPush, "vllm::all_reduce", at, 0, 0, p);
        Add(EventType::kRuntime, "cudaLaunchKernel", at + 1'000, at + 5'000, corr, p);
        Add(EventType::kKernel, kAllReduce, at + 10'000, end, corr, p);
        Add(EventType::kPop, "", at + 6'000, 0, 0, p);
      }
      Add(EventType::kPop, "", 1'500'000, 0, 0, p);
    }
    r_ = reconstruct::Reconstruct(t_);
  }

  // The node of the k-th event with this name on the process (by start).
  uint32_t Node(std::string_view name, uint32_t process, int k) const {
    std::vector<uint32_t> found;
    for (uint32_t n = 0; n < r_.nodes.size(); ++n) {
      if (r_.nodes.process[n] == process &&
          t_.strings.Get(t_.events.name[r_.nodes.event[n]]) == name)
        found.push_back(n);
    }
    std::sort(found.begin(), found.end(),
              [&](uint32_t a, uint32_t b) { return r_.nodes.start_ns[a] < r_.nodes.start_ns[b]; });
    EXPECT_LT(static_cast<size_t>(k), found.size()) << name;
    return found.at(static_cast<size_t>(k));
  }
  std::vector<uint32_t> Roots() const {
    std::vector<uint32_t> roots;
    for (const auto& s : r_.steps) roots.push_back(s.node);
    return roots;
  }
  bool Kept(const Slice& s, uint32_t node) const {
    return std::binary_search(s.nodes.begin(), s.nodes.end(), node);
  }
  const Trace& trace() const { return t_; }
  const reconstruct::Reconstruction& rec() const { return r_; }

 private:
  void Add(EventType type, std::string_view name, int64_t start, int64_t end, uint64_t corr,
           uint32_t process) {
    EventRow row;
    row.type = type;
    row.name = t_.strings.Intern(name);
    row.category = t_.strings.Intern(IsGpuWork(type) ? "kernel" : "nvtx");
    row.process = process;
    row.thread = 1;
    row.start_ns = start;
    row.end_ns = std::max(start, end);
    row.correlation = corr;
    t_.events.Append(row);
  }
  Trace t_;
  reconstruct::Reconstruction r_;
};

TEST(SliceTest, TheReconstructionSeesTwoCommunicators) {
  const FourRanks f;
  ASSERT_EQ(f.rec().steps.size(), 4u);
  EXPECT_EQ(f.rec().collectives.cluster_of, (std::vector<int32_t>{0, 0, 1, 1}));
  EXPECT_EQ(f.rec().collectives.groups.size(), 4u) << "two all-reduces in each communicator";
  EXPECT_EQ(f.rec().CollectiveOf(f.Node(kAllReduce, 0, 1)),
            (std::vector<uint32_t>{f.Node(kAllReduce, 0, 1), f.Node(kAllReduce, 1, 1)}));
}

TEST(SliceTest, AKernelIsCoupledWithItsCollectiveOnTheOtherRanksOnly) {
  const FourRanks f;
  const Slice s = BuildSlice(f.trace(), f.rec(), f.Roots(), {f.Node(kAllReduce, 0, 0)});
  EXPECT_TRUE(f.Kept(s, f.Node(kAllReduce, 0, 0)));
  EXPECT_TRUE(f.Kept(s, f.Node(kAllReduce, 1, 0))) << "the same collective on rank 1";
  EXPECT_FALSE(f.Kept(s, f.Node(kAllReduce, 1, 1))) << "rank 1's next collective";
  EXPECT_FALSE(f.Kept(s, f.Node(kAllReduce, 2, 0))) << "same name and position, other communicator";
  EXPECT_FALSE(f.Kept(s, f.Node(kAllReduce, 3, 0))) << "same name and position, other communicator";
  // The GEMM before it on its stream feeds it (E_c), and its launch is its parent (beta).
  EXPECT_TRUE(f.Kept(s, f.Node("sm90_xmma_gemm_bf16bf16", 0, 0)));
  EXPECT_TRUE(f.Kept(s, f.Node("cudaLaunchKernel", 0, 1)));
}

TEST(SliceTest, ACommRangeIsCoupledWithTheSameRangeAboveItsCollectivesKernels) {
  const FourRanks f;
  const Slice s = BuildSlice(f.trace(), f.rec(), f.Roots(), {f.Node("vllm::all_reduce", 2, 1)});
  EXPECT_TRUE(f.Kept(s, f.Node("vllm::all_reduce", 3, 1))) << "rank 3's range of that collective";
  EXPECT_FALSE(f.Kept(s, f.Node(kAllReduce, 3, 1))) << "its kernel is not coupled itself";
  EXPECT_FALSE(f.Kept(s, f.Node("vllm::all_reduce", 3, 0)));
  EXPECT_FALSE(f.Kept(s, f.Node("vllm::all_reduce", 0, 1)));
  EXPECT_FALSE(f.Kept(s, f.Node("vllm::all_reduce", 1, 1)));
}

}  // namespace
}  // namespace teller::slice
