// Parts (include/teller/ingest/parts.h): an input's files imported alone, carried as bytes
// and appended by the import give the trace the import gives by itself, row for row; the
// bytes of a part are refused whole when damaged.
#include "teller/ingest/parts.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "real_data.h"
#include "teller/format/raw_writer.h"
#include "teller/ingest/ingest.h"
#include "temp_dir.h"
#include "trace_compare.h"

namespace teller::ingest {
namespace {

// Imports what it is asked for through the whole trip: alone, encoded, decoded. With
// `every` = 2 it takes every other file and leaves the rest to the import, as the process
// that reads the report does with its own share.
class TripParts : public PartSource {
 public:
  explicit TripParts(size_t every = 1) : every_(every) {}
  void Begin(const std::vector<std::string>& paths) override { begun = paths; }
  void End() override { ++ended; }
  bool Take(const std::string& file, ImportedPart& part, Status& status) override {
    asked.push_back(file);
    if ((asked.size() - 1) % every_ != 0) return false;
    ImportedPart alone;
    status = ImportPart(file, alone);
    if (!status.ok()) return true;
    status = DecodePart(EncodePart(alone), file, part);
    return true;
  }
  std::vector<std::string> asked, begun;
  int ended = 0;

 private:
  size_t every_;
};

// `paths` imported one after another, with parts from `parts` (null: none).
void ImportAll(const std::vector<std::string>& paths, Trace& t, PartSource* parts) {
  const Status s = ImportPaths(paths, t, parts);
  ASSERT_TRUE(s.ok()) << s.message();
}

// The trace of `paths` is the same with every file as a part and with every other one,
// and the files asked for are PartFiles(paths), in order.
void ExpectPartsGiveTheSameTrace(const std::vector<std::string>& paths) {
  Trace plain;
  ImportAll(paths, plain, nullptr);
  ASSERT_GT(plain.events.size(), 0u);
  for (size_t every : {1, 2}) {
    SCOPED_TRACE("a part every " + std::to_string(every) + " files");
    TripParts parts(every);
    Trace t;
    ImportAll(paths, t, &parts);
    EXPECT_EQ(parts.asked, PartFiles(paths));
    EXPECT_EQ(parts.begun, paths);
    EXPECT_EQ(parts.ended, 1);
    ExpectSameTrace(plain, t);
  }
}

// A raw file of process `pid` on `host`: a range and a kernel launched in it, named from
// a string table whose first names are shared by every file (so that ids must be mapped).
std::string WriteRawFile(const std::string& path, int pid, const std::string& host,
                         int64_t realtime_ns) {
  auto w = raw::RawFileWriter::Create(path);
  EXPECT_TRUE(w.ok()) << w.status().message();
  if (!w.ok()) return path;
  raw::PayloadBuilder info;
  info.AddKeyValue("pid", std::to_string(pid));
  info.AddKeyValue("host", host);
  info.AddKeyValue("rank", std::to_string(pid % 10));
  EXPECT_TRUE(w.value()->WritePayload(raw::ChunkType::kProcessInfo, info).ok());
  EXPECT_TRUE(w.value()->WriteClockAnchor({realtime_ns, 5'000, 30}).ok());
  raw::PayloadBuilder table;
  table.AddString(1, "teller.step");
  table.AddString(2, "cudaLaunchKernel");
  table.AddString(3, "gemm_of_" + std::to_string(pid));
  EXPECT_TRUE(w.value()->WritePayload(raw::ChunkType::kStrings, table).ok());
  std::vector<raw::EventRecord> events(4);
  events[0].kind = static_cast<uint8_t>(raw::EventKind::kNvtxPush);
  events[0].name = 1;
  events[0].start_ns = 10'000;
  events[1].kind = static_cast<uint8_t>(raw::EventKind::kCudaRuntime);
  events[1].name = 2;
  events[1].start_ns = 10'100;
  events[1].end_ns = 10'200;
  events[1].correlation = 1;
  events[2].kind = static_cast<uint8_t>(raw::EventKind::kKernel);
  events[2].name = 3;
  events[2].start_ns = 10'300;
  events[2].end_ns = 10'900;
  events[2].correlation = 1;
  events[2].stream = 7;
  events[3].kind = static_cast<uint8_t>(raw::EventKind::kNvtxPop);
  events[3].name = 1;
  events[3].start_ns = 11'000;
  EXPECT_TRUE(w.value()->WriteEvents(events.data(), events.size()).ok());
  raw::PayloadBuilder end;
  EXPECT_TRUE(w.value()->WritePayload(raw::ChunkType::kEnd, end).ok());
  return path;
}

TEST(PartsTest, RunDirectoryThroughPartsIsTheSameTrace) {
  // Three processes on two hosts, an empty file (a process killed before its header), the
  // manifest and a capture log whose times need the run's clock pair.
  TempDir dir;
  WriteRawFile(dir.Path("a.tlr"), 11, "node-1", 1'700'000'000'000'000'000);
  WriteRawFile(dir.Path("b.tlr"), 12, "node-1", 1'700'000'000'000'000'000);
  dir.Write("c.tlr", "");
  WriteRawFile(dir.Path("d.tlr"), 13, "node-2", 1'700'000'000'000'001'000);
  dir.Write("manifest.json",
            "{\"format\":\"teller-run-manifest\",\"finished\":true,\"exit_code\":1,"
            "\"pid\":11,\"command\":[\"python\",\"serve.py\"]}");
  ASSERT_EQ(system(("mkdir -p '" + dir.Path("logs") + "'").c_str()), 0);
  dir.Write("logs/stdout.log", "10500 ERROR something failed\n20000 done\n");
  const std::vector<std::string> files = PartFiles({dir.path()});
  ASSERT_EQ(files.size(), 3u);  // the empty file is skipped, as the import skips it
  EXPECT_EQ(files[0], dir.Path("a.tlr"));
  EXPECT_EQ(files[2], dir.Path("d.tlr"));
  ExpectPartsGiveTheSameTrace({dir.path()});
  Trace t;
  ImportAll({dir.path()}, t, nullptr);
  EXPECT_EQ(t.counters.Get(CounterId::kRawEmptyFiles), 1u);
  EXPECT_EQ(t.logs.size(), 2u);
  EXPECT_TRUE(t.run.known);
  EXPECT_EQ(t.run.exit_code, 1);
}

std::string KinetoRank(int rank) {
  const std::string r = std::to_string(rank);
  return "{\"distributedInfo\":{\"rank\":" + r +
         ",\"world_size\":3},\"traceEvents\":["
         "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::mm\",\"pid\":" +
         std::to_string(100 + rank) +
         ",\"tid\":1,\"ts\":10,\"dur\":5,\"args\":{\"External id\":1}},"
         "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":" +
         std::to_string(100 + rank) +
         ",\"tid\":1,\"ts\":11,\"dur\":1,\"args\":{\"correlation\":" + r +
         "}},"
         "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"gemm_rank" +
         r + "\",\"pid\":0,\"tid\":7,\"ts\":12,\"dur\":3,\"args\":{\"correlation\":" + r +
         ",\"device\":0,\"stream\":7}}]}";
}

TEST(PartsTest, KinetoFilesAndFoldersThroughPartsAreTheSameTrace) {
  TempDir dir;
  ASSERT_EQ(system(("mkdir -p '" + dir.Path("ranks") + "'").c_str()), 0);
  for (int rank = 0; rank < 3; ++rank) {
    dir.Write("ranks/rank" + std::to_string(rank) + ".json", KinetoRank(rank));
  }
  const std::string single = dir.Write("single.json", KinetoRank(7));
  const std::string log = dir.Write("serve.log", "INFO 12-05 10:00:00 started\n");
  // The folder, a file beside it and a log (which is never a part), in one trace.
  const std::vector<std::string> paths = {dir.Path("ranks"), single, log};
  const std::vector<std::string> files = PartFiles(paths);
  ASSERT_EQ(files.size(), 4u);
  EXPECT_EQ(files[0], dir.Path("ranks") + "/rank0.json");
  EXPECT_EQ(files[3], single);
  ExpectPartsGiveTheSameTrace(paths);
}

// An Nsight export, gunzipped into `dir`.
std::string Gunzip(const std::string& gz, const TempDir& dir) {
  gzFile in = gzopen(gz.c_str(), "rb");
  if (in == nullptr) return "";
  const std::string out = dir.Path("export.sqlite");
  std::ofstream f(out, std::ios::binary);
  char buf[1 << 16];
  int n = 0;
  while ((n = gzread(in, buf, sizeof(buf))) > 0) f.write(buf, n);
  gzclose(in);
  return out;
}

TEST(PartsTest, RealNsightExportAndRankFolderThroughPartsAreTheSameTrace) {
  TELLER_REQUIRE_REAL_DATA("nsys_pipit/saxpy-mpi-cuda_nsys_perlmutter0.sqlite.gz");
  TELLER_REQUIRE_REAL_DATA("param_dlrm_8rank");
  TempDir dir;
  const std::string sqlite =
      Gunzip(real_data::Path("nsys_pipit/saxpy-mpi-cuda_nsys_perlmutter0.sqlite.gz"), dir);
  ASSERT_FALSE(sqlite.empty());
  ExpectPartsGiveTheSameTrace({sqlite});
  ExpectPartsGiveTheSameTrace({real_data::Path("param_dlrm_8rank")});
  EXPECT_EQ(PartFiles({real_data::Path("param_dlrm_8rank")}).size(), 8u);
}

// A part that fails is the import's error, as the file's own import error would be.
TEST(PartsTest, APartsErrorIsTheImportsError) {
  TempDir dir;
  const std::string bad = dir.Write("bad.json", "{\"traceEvents\":[{\"ph\":\"X\",");
  Trace plain;
  const Status expected = ImportPath(bad, plain, nullptr);
  ASSERT_FALSE(expected.ok());
  TripParts parts;
  Trace t;
  const Status s = ImportPaths({bad}, t, &parts);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), expected.message());
  EXPECT_EQ(parts.ended, 1);  // the source is told the import ended, also on an error
}

// A trace that uses every field a part carries.
void FillVariedTrace(ImportedPart& part) {
  Trace& t = part.trace;
  part.monotonic_to_utc_ns = 1'699'999'999'000'000'000;
  const uint32_t p0 = t.ProcessIndex("node-1", 4242);
  const uint32_t p1 = t.ProcessIndex("node-2", 77);
  t.processes[p0].rank = 3;
  t.processes[p0].world_size = 8;
  t.processes[p0].local_rank = 1;
  t.processes[p1].clock_offset_ns = -12'345;
  t.processes[p1].label = t.strings.Intern("python serve.py");
  for (int i = 0; i < 5; ++i) {
    EventRow e;
    e.type = i % 2 ? EventType::kKernel : EventType::kRuntime;
    e.name = t.strings.Intern("op" + std::to_string(i % 3));
    e.category = t.strings.Intern("cat");
    e.process = static_cast<uint32_t>(i % 2);
    e.thread = 10 + i;
    e.start_ns = -5 + 100 * i;
    e.end_ns = 100 * i + 50;
    e.correlation = 1ull << 40 | i;
    e.external_id = 9 + i;
    e.device = i;
    e.stream = 7;
    e.bytes = 1ull << 33;
    e.flags = kEventInGraph | kEventSynthetic;
    e.signature = t.strings.Intern("grid=1,1,1");
    t.events.Append(e);
  }
  t.logs.ts_ns = {LogTable::kNoTime, 1'700'000'000'000'000'000};
  t.logs.request = {0, t.strings.Intern("req-1")};
  t.logs.level = {LogLevel::kError, LogLevel::kInfo};
  t.logs.process = {LogTable::kNoProcess, p1};
  t.logs.file = {t.strings.Intern("a.log"), t.strings.Intern("a.log")};
  t.logs.line = {1, 2};
  t.logs.message = {t.strings.Intern("CUDA out of memory"), t.strings.Intern("ok")};
  t.counters.Add(CounterId::kRawEmptyFiles, 0);  // a zero that a report still lists
  t.counters.AddNamed("kineto.unknown_category:overhead", 3);
  t.counters.Add(CounterId::kRawBadRecords, 2);
  t.sources = {"a.tlr", "b.tlr"};
  t.run.known = true;
  t.run.finished = false;
  t.run.exit_code = 139;
  t.run.signal = 11;
  t.run.command = "python serve.py --tp 2";
  t.run.pid = 4242;
  t.run.end_ns = 1'700'000'000'500'000'000;
}

TEST(PartsTest, EncodedPartDecodesToTheSameTrace) {
  ImportedPart part;
  FillVariedTrace(part);
  ImportedPart back;
  const Status s = DecodePart(EncodePart(part), "part", back);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(back.monotonic_to_utc_ns, part.monotonic_to_utc_ns);
  ExpectSameTrace(part.trace, back.trace);
  // An empty trace travels too.
  ImportedPart empty, empty_back;
  ASSERT_TRUE(DecodePart(EncodePart(empty), "empty", empty_back).ok());
  ExpectSameTrace(empty.trace, empty_back.trace);
}

TEST(PartsTest, DamagedBytesAreRefusedWithTheirOffset) {
  ImportedPart part;
  FillVariedTrace(part);
  const std::string bytes = EncodePart(part);
  // Cut anywhere: never a crash, never a part.
  for (size_t n = 0; n < bytes.size(); ++n) {
    ImportedPart back;
    const Status s = DecodePart(std::string_view(bytes).substr(0, n), "rank 3", back);
    ASSERT_FALSE(s.ok()) << "cut at " << n;
    EXPECT_EQ(s.message().rfind("rank 3: not a whole part at byte ", 0), 0u) << s.message();
  }
  ImportedPart back;
  const Status trailing = DecodePart(bytes + "x", "p", back);
  ASSERT_FALSE(trailing.ok());
  EXPECT_NE(trailing.message().find("at byte " + std::to_string(bytes.size())), std::string::npos)
      << trailing.message();
  std::string magic = bytes;
  magic[0] = 'X';
  ImportedPart m;
  EXPECT_NE(DecodePart(magic, "p", m).message().find("not a part of this build"),
            std::string::npos);
  // An event name id beyond the string table: every id column is checked.
  std::string ids = bytes;
  Trace& t = part.trace;
  const StringId bad = static_cast<StringId>(t.strings.size() + 5);
  // The name column follows the type column: find the first event's name id and replace it.
  const StringId first = t.events.name[0];
  const std::string needle(reinterpret_cast<const char*>(&first), sizeof(first));
  const size_t types =
      ids.find(std::string(reinterpret_cast<const char*>(t.events.type.data()), t.events.size()));
  ASSERT_NE(types, std::string::npos);
  const size_t at = types + t.events.size() + sizeof(uint64_t);  // past the name column's length
  ASSERT_EQ(ids.compare(at, needle.size(), needle), 0);
  std::memcpy(ids.data() + at, &bad, sizeof(bad));
  ImportedPart n;
  EXPECT_NE(DecodePart(ids, "p", n).message().find("an event names a string beyond the table"),
            std::string::npos);
}

}  // namespace
}  // namespace teller::ingest
