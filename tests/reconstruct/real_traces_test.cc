// Reconstruction golden tests on real third-party traces (TELLER_REAL_DATA_DIR, see its
// MANIFEST.md; skipped when absent). Expected values come from the MANIFEST's per-file statistics
// (category counts, "linked to runtime/driver via args.correlation", "comm kernels") and from
// docs/serving-notes.md §1.2/§2.8 (graph launch fan-out), as noted at each check.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "real_data.h"
#include "teller/ingest/ingest.h"
#include "teller/reconstruct/reconstruct.h"

namespace teller::reconstruct {
namespace {

const std::string kReal = real_data::Dir();

Reconstruction Load(const std::string& rel, Trace& trace) {
  const Status s = ingest::ImportPath(kReal + "/" + rel, trace);
  EXPECT_TRUE(s.ok()) << s.message();
  return Reconstruct(trace);
}

// Largest number of GPU children owned by one host call.
uint32_t LargestFanOut(const Trace& t, const Reconstruction& r) {
  uint32_t best = 0;
  for (uint32_t n = 0; n < r.nodes.size(); ++n) {
    if (r.nodes.layer[n] != Layer::kHostCall) continue;
    uint32_t kernels = 0;
    for (uint32_t c = r.nodes.child_begin[n]; c < r.nodes.child_begin[n + 1]; ++c) {
      if (t.events.type[r.nodes.event[r.nodes.child_index[c]]] == EventType::kKernel) ++kernels;
    }
    best = std::max(best, kernels);
  }
  return best;
}

TEST(RealTracesTest, DfIndexResolverBindsEveryGpuEvent) {
  TELLER_REQUIRE_REAL_DATA("hta/df_index_resolver__df_index_resolver.json.gz");
  Trace t;
  const Reconstruction r = Load("hta/df_index_resolver__df_index_resolver.json.gz", t);
  // MANIFEST: cats kernel:19370, gpu_memcpy:2040, gpu_memset:880; gpu-side events=22290,
  // all linked via args.correlation; comm kernels=2020; rank=1 world=2.
  EXPECT_EQ(r.stats.kernels, 19370u);
  EXPECT_EQ(r.stats.kernels_linked, 19370u);
  EXPECT_EQ(r.stats.kernels_orphan, 0u);
  EXPECT_EQ(r.stats.memcpy, 2040u);
  EXPECT_EQ(r.stats.memset, 880u);
  EXPECT_EQ(r.stats.gpu_linked, 22290u);
  EXPECT_EQ(r.stats.comm_kernels, 2020u);
  ASSERT_EQ(t.processes.size(), 1u);
  EXPECT_EQ(t.processes[0].rank, 1);
  EXPECT_EQ(t.processes[0].world_size, 2);
  EXPECT_EQ(r.stats.unmatched_pop, 0u);
}

TEST(RealTracesTest, ParamDlrmEightRanksWithTheirCollectives) {
  TELLER_REQUIRE_REAL_DATA("param_dlrm_8rank");
  Trace t;
  const Reconstruction r = Load("param_dlrm_8rank", t);
  // MANIFEST: 8 files, rank=0..7 world=8, comm kernels=8 per rank; ranks 1 and 3 have 64
  // GPU events each without a runtime partner (326-262 and likewise), the others none.
  ASSERT_EQ(t.processes.size(), 8u);
  std::vector<bool> ranks(8, false);
  for (const auto& p : t.processes) {
    ASSERT_GE(p.rank, 0);
    ASSERT_LT(p.rank, 8);
    ranks[p.rank] = true;
    EXPECT_EQ(p.world_size, 8);
  }
  EXPECT_EQ(std::count(ranks.begin(), ranks.end(), true), 8);
  EXPECT_EQ(r.stats.comm_kernels, 64u);
  // One node: collective ends agree to <= 7 us (docs/serving-notes.md §5.3), so aligning
  // the rank files on them moves no rank by more than that.
  for (const auto& p : t.processes)
    EXPECT_LE(std::abs(p.clock_offset_ns), 7000) << "rank " << p.rank;
  EXPECT_EQ(r.stats.gpu_orphan, 128u);
  // One ProfilerStep per rank: the horizontal view pairs them and finds each rank's
  // 8 NCCL kernels, half of which are launched from the autograd thread, outside the
  // step's own thread tree.
  EXPECT_EQ(r.steps.size(), 8u);
  const HorizontalView across = r.CommAcrossRanks(0);
  ASSERT_EQ(across.comm.size(), 8u);
  for (const auto& per_rank : across.comm) {
    size_t comm_kernels = 0;
    for (uint32_t n : per_rank) {
      if (t.events.type[r.nodes.event[n]] == EventType::kKernel) ++comm_kernels;
    }
    EXPECT_EQ(comm_kernels, 8u);
  }
  // The 64 NCCL kernels are 8 collectives of all 8 ranks, one kernel of each rank each,
  // all of the same name.
  ASSERT_EQ(across.collectives.size(), 8u);
  for (const uint32_t g : across.collectives) {
    const std::vector<uint32_t>& members = r.collectives.groups[g];
    ASSERT_EQ(members.size(), 8u);
    for (size_t i = 1; i < members.size(); ++i) {
      EXPECT_LT(r.nodes.process[members[i - 1]], r.nodes.process[members[i]]) << "by process";
      EXPECT_EQ(t.events.name[r.nodes.event[members[i]]], t.events.name[r.nodes.event[members[0]]]);
    }
  }
}

TEST(RealTracesTest, VllmFullGraphDecodeIsOneLaunchOfManyKernels) {
  TELLER_REQUIRE_REAL_DATA("tracelens/inference__vllm_decode_full__graph_execution.json.gz");
  Trace t;
  const Reconstruction r =
      Load("tracelens/inference__vllm_decode_full__graph_execution.json.gz", t);
  // docs/serving-notes.md §1.2: "Measured FULL decode: 1 launch -> 421 kernels".
  EXPECT_EQ(r.stats.graph_launches, 1u);
  EXPECT_EQ(LargestFanOut(t, r), 421u);
  EXPECT_EQ(r.stats.kernels_orphan, 0u);
}

TEST(RealTracesTest, SglangDecodeGraphLaunch) {
  TELLER_REQUIRE_REAL_DATA("tracelens/inference__sglang_decode__sglang_Qwen3-8B_decode.json.gz");
  Trace t;
  const Reconstruction r =
      Load("tracelens/inference__sglang_decode__sglang_Qwen3-8B_decode.json.gz", t);
  // docs/serving-notes.md §1.6: a graph launch call owning 544 kernels (MI300X).
  EXPECT_EQ(LargestFanOut(t, r), 544u);
  EXPECT_GE(r.steps.size(), 1u) << "SGLang's step[DECODE bs=..] annotation is a step";
}

TEST(RealTracesTest, NsightExportReconstructs) {
  TELLER_REQUIRE_REAL_DATA("nsys_pipit/saxpy-mpi-cuda_nsys_perlmutter0.sqlite.gz");
  // The export is gzipped in shared/; the importer test covers the table-level counts.
  // Here: a multi-table trace from a real export binds its kernels to runtime calls.
  const std::string gz = kReal + "/nsys_pipit/saxpy-mpi-cuda_nsys_perlmutter0.sqlite.gz";
  char tmpl[] = "/tmp/teller-nsys-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string db = std::string(tmpl) + "/saxpy.sqlite";
  ASSERT_EQ(std::system(("gunzip -c '" + gz + "' > '" + db + "'").c_str()), 0);
  Trace t;
  ASSERT_TRUE(ingest::ImportPath(db, t).ok());
  const Reconstruction r = Reconstruct(t);
  // nsys importer test (derived with sqlite3, tests/golden_scripts/nsys_golden.sh): 5
  // kernels, all linked; 22 NVTX ranges.
  EXPECT_EQ(r.stats.kernels, 5u);
  EXPECT_EQ(r.stats.kernels_linked, 5u);
  EXPECT_GE(r.stats.ranges, 22u);
  std::system(("rm -rf '" + std::string(tmpl) + "'").c_str());
}

}  // namespace
}  // namespace teller::reconstruct
