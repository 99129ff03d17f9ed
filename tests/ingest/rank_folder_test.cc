// Tests of the import of a folder of Kineto rank files (src/ingest/rank_folder.cc): a few
// files at a time, each into a trace of its own, appended in file order. The reference is
// the import of the same files one after another into one trace, which the folder import
// must give exactly: every string id, row, process, counter and source.
#include "src/ingest/rank_folder.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "real_data.h"
#include "teller/ingest/ingest.h"
#include "temp_dir.h"
#include "trace_compare.h"
#include "zlib_gzip.h"

namespace teller::ingest {
namespace {

// Rank `rank` of `world`: a host op, a runtime launch, its kernel, an instant, an event of
// a category that is skipped (a counter of its own per file), strings shared by every rank
// and strings of this rank alone, and a second host process when `rank` is odd.
std::string RankTrace(int rank, int world) {
  const std::string r = std::to_string(rank);
  const std::string pid = std::to_string(1000 + rank);
  std::string events =
      "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": " + pid +
      ", \"tid\": " + pid +
      ", \"ts\": 100, \"dur\": 50, \"args\": {\"External id\": 7, \"Input Dims\": [[2, 3]], "
      "\"Input type\": [\"float\"]}},\n"
      "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": " +
      pid + ", \"tid\": " + pid +
      ", \"ts\": 110, \"dur\": 5, \"args\": {\"correlation\": 9, \"External id\": 7}},\n"
      "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"gemm_rank" +
      r +
      "\", \"pid\": 0, \"tid\": 7, \"ts\": 120, \"dur\": 30, \"args\": {\"correlation\": 9, "
      "\"device\": 0, \"stream\": 7, \"grid\": [1, 2, 3], \"block\": [4, 5, 6]}},\n"
      "{\"ph\": \"i\", \"cat\": \"cpu_instant_event\", \"name\": \"mark " +
      r + "\", \"pid\": " + pid + ", \"tid\": " + pid +
      ", \"ts\": 130, \"s\": \"t\"},\n"
      "{\"ph\": \"X\", \"cat\": \"overhead_" +
      std::to_string(rank % 3) + "\", \"name\": \"x\", \"pid\": " + pid + ", \"tid\": " + pid +
      ", \"ts\": 140, \"dur\": 1}";
  if (rank % 2 == 1) {
    events += ",\n{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"dataloader\", \"pid\": " +
              std::to_string(5000 + rank) + ", \"tid\": 3, \"ts\": 90, \"dur\": 5}";
  }
  return "{\"schemaVersion\": 1, \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": " + r +
         ", \"world_size\": " + std::to_string(world) + "},\n\"traceEvents\": [\n" + events +
         "\n], \"baseTimeNanoseconds\": " + std::to_string(1700000000000000000LL + rank * 1000LL) +
         "}\n";
}

// A folder of `n` rank files (every third one gzipped), returning their paths in name order.
std::vector<std::string> WriteRanks(const TempDir& dir, int n) {
  std::vector<std::string> paths;
  for (int rank = 0; rank < n; ++rank) {
    char name[64];
    std::snprintf(name, sizeof(name), "rank-%03d.pt.trace.json%s", rank,
                  rank % 3 == 2 ? ".gz" : "");
    const std::string text = RankTrace(rank, n);
    paths.push_back(dir.Write(name, rank % 3 == 2 ? zlib_gzip::Gzip(text) : text));
  }
  return paths;
}

// One after another into one trace: the reference.
void ImportEach(const std::vector<std::string>& paths, Trace& t) {
  for (const std::string& p : paths) {
    const Status s = ImportKineto(p, t);
    ASSERT_TRUE(s.ok()) << s.message();
  }
}

TEST(RankFolderTest, FolderImportIsTheFilesImportedOneAfterAnother) {
  TempDir dir;
  const std::vector<std::string> paths = WriteRanks(dir, 11);
  Trace each;
  ImportEach(paths, each);
  ASSERT_EQ(each.sources.size(), 11u);
  for (size_t in_flight : {1, 2, 3, 4, 16}) {
    Trace folder;
    const Status s = ImportKinetoFiles(dir.path(), paths, folder, in_flight);
    ASSERT_TRUE(s.ok()) << s.message();
    SCOPED_TRACE("in flight " + std::to_string(in_flight));
    ExpectSameTrace(each, folder);
  }
  // The command's way in: ImportPath on the folder.
  Trace path;
  ASSERT_TRUE(ImportPath(dir.path(), path).ok());
  ExpectSameTrace(each, path);
}

TEST(RankFolderTest, AppendsAfterWhatTheTraceHolds) {
  // `teller inspect a.json DIR`: the folder's files go after what is already there,
  // sharing its strings.
  TempDir dir;
  const std::vector<std::string> paths = WriteRanks(dir, 5);
  TempDir other;
  const std::string first = other.Write("first.json", RankTrace(3, 4));
  Trace each;
  ImportEach({first}, each);
  ImportEach(paths, each);
  Trace folder;
  ASSERT_TRUE(ImportKineto(first, folder).ok());
  ASSERT_TRUE(ImportKinetoFiles(dir.path(), paths, folder, 3).ok());
  ExpectSameTrace(each, folder);
}

TEST(RankFolderTest, RanksStayDistinct) {
  TempDir dir;
  const std::vector<std::string> paths = WriteRanks(dir, 6);
  Trace t;
  ASSERT_TRUE(ImportKinetoFiles(dir.path(), paths, t, 4).ok());
  // One main process per file with the file's rank, plus the second process of odd ranks.
  ASSERT_EQ(t.processes.size(), 9u);
  std::set<int32_t> ranks;
  std::set<StringId> sources;
  for (const ProcessInfo& p : t.processes) {
    ranks.insert(p.rank);
    sources.insert(p.source);
    EXPECT_EQ(p.world_size, 6);
  }
  EXPECT_EQ(ranks, (std::set<int32_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(sources.size(), 6u);
  // Each kernel (named after its rank) is on its own file's rank, at that file's base time.
  size_t kernels = 0;
  for (size_t i = 0; i < t.events.size(); ++i) {
    if (t.events.type[i] != EventType::kKernel) continue;
    const ProcessInfo& p = t.processes[t.events.process[i]];
    EXPECT_EQ(t.strings.Get(t.events.name[i]), "gemm_rank" + std::to_string(p.rank));
    EXPECT_EQ(t.events.start_ns[i], 1700000000000000000LL + p.rank * 1000LL + 120000);
    ++kernels;
  }
  EXPECT_EQ(kernels, 6u);
}

TEST(RankFolderTest, FilesHeldAtOnceAreBounded) {
  TempDir dir;
  const std::vector<std::string> paths = WriteRanks(dir, 24);
  for (size_t in_flight : {1, 2, 3}) {
    TakeFolderPeakFilesForTesting();
    Trace t;
    ASSERT_TRUE(ImportKinetoFiles(dir.path(), paths, t, in_flight).ok());
    const size_t peak = TakeFolderPeakFilesForTesting();
    EXPECT_GE(peak, 1u);
    EXPECT_LE(peak, in_flight) << "files held at once";
    EXPECT_EQ(t.sources.size(), 24u);
  }
}

TEST(RankFolderTest, WorkersAheadOfTheAppendsStopAtTheBound) {
  // The appends are slowed down, so that the workers always have a file to start: they
  // fill the bound, and go no further (without it they would read all 24 files ahead).
  TempDir dir;
  const std::vector<std::string> paths = WriteRanks(dir, 24);
  Trace each;
  ImportEach(paths, each);
  SetFolderAppendDelayForTesting(5);
  for (size_t in_flight : {2, 3}) {
    TakeFolderPeakFilesForTesting();
    Trace t;
    ASSERT_TRUE(ImportKinetoFiles(dir.path(), paths, t, in_flight).ok());
    EXPECT_EQ(TakeFolderPeakFilesForTesting(), in_flight);
    ExpectSameTrace(each, t);
  }
  SetFolderAppendDelayForTesting(0);
}

TEST(RankFolderTest, FilesInFlightFollowsTheEnvironment) {
  unsetenv("TELLER_IMPORT_FILES");
  const size_t by_default = FilesInFlight(100);
  EXPECT_GE(by_default, 1u);
  EXPECT_LE(by_default, kDefaultFilesInFlight);
  EXPECT_EQ(FilesInFlight(1), 1u);
  setenv("TELLER_IMPORT_FILES", "3", 1);
  EXPECT_EQ(FilesInFlight(100), 3u);
  EXPECT_EQ(FilesInFlight(2), 2u);  // never more than the files
  setenv("TELLER_IMPORT_FILES", "1", 1);
  EXPECT_EQ(FilesInFlight(100), 1u);
  for (const char* bad : {"0", "-2", "x", "65", ""}) {
    setenv("TELLER_IMPORT_FILES", bad, 1);
    EXPECT_EQ(FilesInFlight(100), by_default) << bad;
  }
  // The folder import reads it.
  TempDir dir;
  const std::vector<std::string> paths = WriteRanks(dir, 10);
  setenv("TELLER_IMPORT_FILES", "2", 1);
  TakeFolderPeakFilesForTesting();
  Trace t;
  ASSERT_TRUE(ImportPath(dir.path(), t).ok());
  EXPECT_LE(TakeFolderPeakFilesForTesting(), 2u);
  unsetenv("TELLER_IMPORT_FILES");
}

TEST(RankFolderTest, TheErrorIsThatOfTheFirstFileThatFails) {
  TempDir dir;
  std::vector<std::string> paths = WriteRanks(dir, 6);
  const std::string bad1 = dir.Write("rank-002.pt.trace.json", "{\"traceEvents\": [ {\"ph\": ");
  const std::string bad2 = dir.Write("rank-004.pt.trace.json", "{\"no\": 1}");
  paths[2] = bad1;
  paths[4] = bad2;
  Trace each;
  Status expected;
  for (const std::string& p : paths) {
    expected = ImportKineto(p, each);
    if (!expected.ok()) break;
  }
  ASSERT_FALSE(expected.ok());
  for (size_t in_flight : {1, 2, 4}) {
    Trace folder;
    const Status s = ImportKinetoFiles(dir.path(), paths, folder, in_flight);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.message(), expected.message());
    EXPECT_NE(s.message().find("rank-002"), std::string::npos) << s.message();
    // The two files before it are in the trace, as one after another leaves them.
    EXPECT_EQ(folder.sources, each.sources);
    EXPECT_EQ(folder.events.size(), each.events.size());
  }
}

TEST(RankFolderTest, AppendTraceCarriesLogLines) {
  // Lines with their year: a log without one takes it from the trace's events, so its
  // import into a trace of its own would differ (AppendTrace is for inputs that do not
  // read the trace they go into).
  TempDir dir;
  const std::string log =
      dir.Write("server.log",
                "2023-11-29 10:00:00,120 INFO engine: Added request cmpl-abc.\n"
                "2023-11-29 10:00:01,250 ERROR engine: CUDA error: out of memory\n");
  const std::string trace_file = dir.Write("t.json", RankTrace(1, 2));
  Trace direct;
  ASSERT_TRUE(ImportKineto(trace_file, direct).ok());
  ASSERT_TRUE(ImportLogFile(log, LogOptions{}, direct).ok());
  ASSERT_GT(direct.logs.size(), 0u);
  Trace part;
  ASSERT_TRUE(ImportLogFile(log, LogOptions{}, part).ok());
  Trace appended;
  ASSERT_TRUE(ImportKineto(trace_file, appended).ok());
  AppendTrace(part, appended);
  ExpectSameTrace(direct, appended);
  ASSERT_EQ(direct.logs.size(), appended.logs.size());
  for (size_t i = 0; i < direct.logs.size(); ++i) {
    EXPECT_EQ(direct.logs.ts_ns[i], appended.logs.ts_ns[i]);
    EXPECT_EQ(direct.logs.request[i], appended.logs.request[i]);
    EXPECT_EQ(direct.logs.level[i], appended.logs.level[i]);
    EXPECT_EQ(direct.logs.process[i], appended.logs.process[i]);
    EXPECT_EQ(direct.logs.file[i], appended.logs.file[i]);
    EXPECT_EQ(direct.logs.line[i], appended.logs.line[i]);
    EXPECT_EQ(direct.logs.message[i], appended.logs.message[i]);
  }
}

TEST(RankFolderRealTest, ParamDlrmFolderIsItsFilesOneAfterAnother) {
  TELLER_REQUIRE_REAL_DATA("param_dlrm_8rank");
  const std::string folder = real_data::Path("param_dlrm_8rank");
  std::vector<std::string> paths;
  for (int w = 0; w < 8; ++w) {
    // In name order, as the folder import lists them.
    const char* names[] = {"worker0_step_12.1694128201545.pt.trace.json.gz",
                           "worker1_step_12.1694128201556.pt.trace.json.gz",
                           "worker2_step_12.1694128201554.pt.trace.json.gz",
                           "worker3_step_12.1694128201557.pt.trace.json.gz",
                           "worker4_step_12.1694128201547.pt.trace.json.gz",
                           "worker5_step_12.1694128201549.pt.trace.json.gz",
                           "worker6_step_12.1694128201553.pt.trace.json.gz",
                           "worker7_step_12.1694128201553.pt.trace.json.gz"};
    paths.push_back(folder + "/" + names[w]);
  }
  Trace each;
  ImportEach(paths, each);
  for (size_t in_flight : {2, 3}) {
    Trace t;
    ASSERT_TRUE(ImportKinetoFiles(folder, paths, t, in_flight).ok());
    ExpectSameTrace(each, t);
  }
  Trace path;
  ASSERT_TRUE(ImportPath(folder, path).ok());
  ExpectSameTrace(each, path);
  std::set<int32_t> ranks;
  for (const ProcessInfo& p : path.processes) ranks.insert(p.rank);
  EXPECT_EQ(ranks, (std::set<int32_t>{0, 1, 2, 3, 4, 5, 6, 7}));
}

}  // namespace
}  // namespace teller::ingest
