// Operator signatures (docs/signature.md) of the Teller raw-trace importer
// (src/ingest/teller_raw_importer.cc), on a file written here record by record, and the
// same launch through the three importers: one call, one string.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "src/ingest/kineto_importer.h"
#include "teller/core/trace.h"
#include "teller/format/raw_writer.h"
#include "teller/ingest/ingest.h"

namespace teller::ingest {
namespace {

using raw::EventKind;
using raw::EventRecord;

class RawSignatureTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/teller-raw-signature-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::system(("rm -rf '" + dir_ + "'").c_str()); }

  // Writes one process file with the strings (ids 1..n) and the events.
  std::string WriteFile(const std::vector<std::string>& strings,
                        const std::vector<EventRecord>& events) {
    const std::string path = dir_ + "/p" + std::to_string(files_++) + ".tlr";
    auto w = raw::RawFileWriter::Create(path);
    EXPECT_TRUE(w.ok()) << w.status().message();
    if (!w.ok()) return path;
    raw::PayloadBuilder info;
    info.AddKeyValue("pid", "4242");
    info.AddKeyValue("host", "node-1");
    EXPECT_TRUE(w.value()->WritePayload(raw::ChunkType::kProcessInfo, info).ok());
    EXPECT_TRUE(w.value()->WriteClockAnchor({1'700'000'000'000'000'000, 5'000, 30}).ok());
    raw::PayloadBuilder table;
    for (size_t i = 0; i < strings.size(); ++i) {
      table.AddString(static_cast<uint32_t>(i + 1), strings[i]);
    }
    EXPECT_TRUE(w.value()->WritePayload(raw::ChunkType::kStrings, table).ok());
    EXPECT_TRUE(w.value()->WriteEvents(events.data(), events.size()).ok());
    raw::PayloadBuilder end;
    EXPECT_TRUE(w.value()->WritePayload(raw::ChunkType::kEnd, end).ok());
    return path;
  }

  std::string dir_;
  int files_ = 0;
};

EventRecord Kernel(uint64_t correlation, uint32_t name, std::vector<uint32_t> grid,
                   std::vector<uint16_t> block, uint32_t shared) {
  EventRecord e{};
  e.kind = static_cast<uint8_t>(EventKind::kKernel);
  e.name = name;
  e.start_ns = 10'000 + static_cast<int64_t>(correlation) * 100;
  e.end_ns = e.start_ns + 50;
  e.correlation = correlation;
  e.stream = 7;
  for (int i = 0; i < 3; ++i) {
    e.grid[i] = grid[i];
    e.block[i] = block[i];
  }
  e.shared_bytes = shared;
  return e;
}

EventRecord Copy(EventKind kind, uint64_t correlation, uint32_t name, uint16_t copy_kind) {
  EventRecord e{};
  e.kind = static_cast<uint8_t>(kind);
  e.name = name;
  e.aux = copy_kind;
  e.start_ns = 10'000 + static_cast<int64_t>(correlation) * 100;
  e.end_ns = e.start_ns + 50;
  e.correlation = correlation;
  e.value = 4096;
  e.stream = 7;
  return e;
}

std::string SignatureOfCorrelation(const Trace& t, uint64_t correlation) {
  for (size_t i = 0; i < t.events.size(); ++i) {
    if (t.events.correlation[i] == correlation) {
      return std::string(t.strings.Get(t.events.signature[i]));
    }
  }
  return "<no row>";
}

TEST_F(RawSignatureTest, KernelAndCopyRecords) {
  EventRecord launch{};
  launch.kind = static_cast<uint8_t>(EventKind::kCudaRuntime);
  launch.name = 1;
  launch.start_ns = 9'000;
  launch.end_ns = 9'050;
  launch.correlation = 1;
  const std::string path =
      WriteFile({"cudaLaunchKernel", "gemm", "Memcpy DtoH (Device -> Pinned)"},
                {
                    launch,
                    Kernel(2, 2, {128, 1, 1}, {256, 1, 1}, 0),
                    Kernel(3, 2, {8, 2, 1}, {544, 1, 1}, 87568),
                    // Geometry unknown to the writer (zeros): no signature.
                    Kernel(4, 2, {0, 0, 0}, {0, 0, 0}, 0),
                    // The collector writes copies without a name: the kind goes into the signature.
                    Copy(EventKind::kMemcpy, 5, 0, 1),
                    Copy(EventKind::kMemcpy, 6, 0, 10),
                    // A name that says the kind (the simulator's): nothing added.
                    Copy(EventKind::kMemcpy, 7, 3, 2),
                    // Unknown kind, memset: nothing.
                    Copy(EventKind::kMemcpy, 8, 0, 0),
                    Copy(EventKind::kMemset, 9, 0, 0),
                });
  Trace t;
  ASSERT_TRUE(ImportTellerRaw(path, t).ok());
  ASSERT_EQ(t.events.size(), 9u);
  ASSERT_EQ(t.events.signature.size(), t.events.size());
  EXPECT_EQ(SignatureOfCorrelation(t, 1), "");
  EXPECT_EQ(SignatureOfCorrelation(t, 2), "grid=128,1,1 block=256,1,1");
  EXPECT_EQ(SignatureOfCorrelation(t, 3), "grid=8,2,1 block=544,1,1 smem=87568");
  EXPECT_EQ(SignatureOfCorrelation(t, 4), "");
  EXPECT_EQ(SignatureOfCorrelation(t, 5), "copy=HtoD");
  EXPECT_EQ(SignatureOfCorrelation(t, 6), "copy=PtoP");
  EXPECT_EQ(SignatureOfCorrelation(t, 7), "");
  EXPECT_EQ(SignatureOfCorrelation(t, 8), "");
  EXPECT_EQ(SignatureOfCorrelation(t, 9), "");
}

TEST_F(RawSignatureTest, AnEmptyFileInARunDirectoryIsCountedAndSkipped) {
  // A process killed after creating its file and before its header: an empty file beside
  // the others. The directory still reads, with the empty file counted; alone, the empty
  // file is an error naming it.
  WriteFile({"gemm"},
            {Kernel(1, 1, {1, 1, 1}, {32, 1, 1}, 0), Kernel(2, 1, {1, 1, 1}, {32, 1, 1}, 0)});
  const std::string empty = dir_ + "/p9.tlr";
  { std::ofstream(empty.c_str()); }
  Trace t;
  const Status s = ImportTellerRaw(dir_, t);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(t.events.size(), 2u);
  EXPECT_EQ(t.counters.Get(CounterId::kRawEmptyFiles), 1u);
  Trace alone;
  const Status e = ImportTellerRaw(empty, alone);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.message().find(empty), std::string::npos);
  EXPECT_NE(e.message().find("empty file"), std::string::npos);
}

// One launch (grid 8,2,1, block 544,1,1, 87000 + 568 bytes of shared memory, 96 registers)
// as Kineto, Nsight Systems and the collector record it.
TEST_F(RawSignatureTest, SameLaunchSameStringInEveryImporter) {
  const std::string expected = "grid=8,2,1 block=544,1,1 smem=87568";

  Trace kineto;
  const std::string json =
      "{\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,\"tid\":7,"
      "\"ts\":1,\"dur\":1,\"args\":{\"correlation\":1,\"registers per thread\":96,"
      "\"shared memory\":87568,\"grid\":[8, 2, 1],\"block\":[544, 1, 1]}}]}";
  ASSERT_TRUE(ImportKinetoBytes(json, "k.json", kineto).ok());

  Trace nsys;
  const std::string db_path = dir_ + "/k.sqlite";
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(db_path.c_str(), &db), SQLITE_OK);
  const int rc = sqlite3_exec(
      db,
      "CREATE TABLE StringIds(id INTEGER PRIMARY KEY, value TEXT);"
      "INSERT INTO StringIds VALUES (0, 'k');"
      "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL(start INTEGER, end INTEGER, deviceId INTEGER,"
      "  streamId INTEGER, correlationId INTEGER, globalPid INTEGER, demangledName INTEGER,"
      "  registersPerThread INTEGER, gridX INTEGER, gridY INTEGER, gridZ INTEGER,"
      "  blockX INTEGER, blockY INTEGER, blockZ INTEGER, staticSharedMemory INTEGER,"
      "  dynamicSharedMemory INTEGER);"
      "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES"
      "  (10, 20, 0, 7, 1, 16777216, 0, 96, 8, 2, 1, 544, 1, 1, 87000, 568);",
      nullptr, nullptr, nullptr);
  sqlite3_close(db);
  ASSERT_EQ(rc, SQLITE_OK);
  ASSERT_TRUE(ImportNsysSqlite(db_path, nsys).ok());

  Trace teller_raw;
  ASSERT_TRUE(
      ImportTellerRaw(WriteFile({"k"}, {Kernel(1, 1, {8, 2, 1}, {544, 1, 1}, 87568)}), teller_raw)
          .ok());

  EXPECT_EQ(SignatureOfCorrelation(kineto, 1), expected);
  EXPECT_EQ(SignatureOfCorrelation(nsys, 1), expected);
  EXPECT_EQ(SignatureOfCorrelation(teller_raw, 1), expected);
}

// A .tlr read through a pipe (`cat p0.tlr | teller inspect /dev/stdin`) gives the rows the
// file gives; an Nsight export through a pipe is refused, naming why.
TEST_F(RawSignatureTest, RawFileThroughAPipeMatchesTheFile) {
  const std::string path = WriteFile({"k", "memcpy"}, {Kernel(1, 1, {8, 2, 1}, {544, 1, 1}, 87568),
                                                       Kernel(2, 1, {4, 1, 1}, {128, 1, 1}, 0),
                                                       Copy(EventKind::kMemcpy, 3, 2, 1)});
  Trace file;
  ASSERT_TRUE(ImportPath(path, file).ok());
  ASSERT_EQ(file.events.size(), 3u);
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string sqlite_head = std::string("SQLite format 3\0", 16) + std::string(4080, 'x');
  for (const std::string* input : {&bytes, &sqlite_head}) {
    std::signal(SIGPIPE, SIG_IGN);
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    std::thread writer([input, fd = fds[1]] {
      size_t done = 0;
      while (done < input->size()) {
        const ssize_t n = write(fd, input->data() + done, input->size() - done);
        if (n <= 0) break;
        done += static_cast<size_t>(n);
      }
      close(fd);
    });
    Trace piped;
    const std::string name = "/dev/fd/" + std::to_string(fds[0]);
    const Status s = ImportPath(name, piped);
    close(fds[0]);
    writer.join();
    if (input == &sqlite_head) {
      EXPECT_EQ(s.message(), name +
                                 ": an Nsight Systems SQLite export cannot be read from a pipe "
                                 "(SQLite needs a file): save it to a file first");
      continue;
    }
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_EQ(piped.events.start_ns, file.events.start_ns);
    EXPECT_EQ(piped.events.type, file.events.type);
    EXPECT_EQ(SignatureOfCorrelation(piped, 1), SignatureOfCorrelation(file, 1));
  }
}

}  // namespace
}  // namespace teller::ingest
