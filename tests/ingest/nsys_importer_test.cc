// Tests of the Nsight Systems SQLite importer on the two real exports of nsys_pipit in
// TELLER_REAL_DATA_DIR (gunzipped into a temporary directory, never copied into the
// repository; skipped when absent) and on small databases built here with the SQLite C API.
//
// Every golden number of the real exports was derived independently of the importer with
// the sqlite3 command-line tool on the gunzipped file; the query is given above each
// expectation, and tests/golden_scripts/nsys_golden.sh runs them all.
#include "src/ingest/nsys_importer.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>
#include <zlib.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "real_data.h"
#include "teller/core/trace.h"
#include "teller/ingest/ingest.h"

namespace teller::ingest {
namespace {

constexpr const char* kCloverleaf = "nsys_pipit/perlmutter-cloverleaf-cuda.sqlite.gz";
constexpr const char* kSaxpy = "nsys_pipit/saxpy-mpi-cuda_nsys_perlmutter0.sqlite.gz";

// Gunzips `from` into `to`; false on any error.
bool Gunzip(const std::string& from, const std::string& to) {
  gzFile in = gzopen(from.c_str(), "rb");
  if (in == nullptr) return false;
  std::FILE* out = std::fopen(to.c_str(), "wb");
  if (out == nullptr) {
    gzclose(in);
    return false;
  }
  char buf[1 << 16];
  int n;
  bool ok = true;
  while ((n = gzread(in, buf, sizeof(buf))) > 0) {
    ok = ok && std::fwrite(buf, 1, n, out) == static_cast<size_t>(n);
  }
  ok = ok && n == 0;
  gzclose(in);
  return std::fclose(out) == 0 && ok;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void WriteAll(const std::string& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// Builds a database from SQL statements with the C API.
void MakeDb(const std::string& path, const char* sql) {
  std::remove(path.c_str());
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  const int rc = sqlite3_exec(db, sql, nullptr, nullptr, &err);
  const std::string message = err ? err : "";
  sqlite3_free(err);
  sqlite3_close(db);
  ASSERT_EQ(rc, SQLITE_OK) << message;
}

size_t CountType(const Trace& t, EventType type) {
  size_t n = 0;
  for (EventType e : t.events.type) n += e == type;
  return n;
}

size_t CountName(const Trace& t, EventType type, std::string_view name) {
  size_t n = 0;
  for (size_t i = 0; i < t.events.size(); ++i) {
    n += t.events.type[i] == type && t.strings.Get(t.events.name[i]) == name;
  }
  return n;
}

// Kernels with a host call (runtime or driver) of the same correlation id and process.
std::pair<size_t, size_t> LinkedAndOrphanKernels(const Trace& t) {
  std::set<std::pair<uint32_t, uint64_t>> calls;
  for (size_t i = 0; i < t.events.size(); ++i) {
    if (IsHostCall(t.events.type[i])) calls.emplace(t.events.process[i], t.events.correlation[i]);
  }
  size_t linked = 0, orphans = 0;
  for (size_t i = 0; i < t.events.size(); ++i) {
    if (t.events.type[i] != EventType::kKernel) continue;
    if (calls.count({t.events.process[i], t.events.correlation[i]})) {
      ++linked;
    } else {
      ++orphans;
    }
  }
  return {linked, orphans};
}

class NsysImporterTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    char tmpl[] = "/tmp/teller_nsys_test_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = new std::string(tmpl);
    cloverleaf_ = new std::string(*dir_ + "/perlmutter-cloverleaf-cuda.sqlite");
    saxpy_ = new std::string(*dir_ + "/saxpy-mpi-cuda_nsys_perlmutter0.sqlite");
    // The real exports are unpacked when they are there; the tests that read them skip
    // otherwise (TELLER_REQUIRE_REAL_DATA), the hand-made databases need neither.
    if (real_data::Missing(kCloverleaf).empty()) {
      ASSERT_TRUE(Gunzip(real_data::Path(kCloverleaf), *cloverleaf_));
    }
    if (real_data::Missing(kSaxpy).empty()) {
      ASSERT_TRUE(Gunzip(real_data::Path(kSaxpy), *saxpy_));
    }
  }
  static void TearDownTestSuite() {
    if (dir_ != nullptr) {
      std::system(("rm -rf '" + *dir_ + "'").c_str());
    }
    delete dir_;
    delete cloverleaf_;
    delete saxpy_;
    dir_ = cloverleaf_ = saxpy_ = nullptr;
  }
  static std::string Temp(const std::string& name) { return *dir_ + "/" + name; }

  static std::string* dir_;
  static std::string* cloverleaf_;
  static std::string* saxpy_;
};
std::string* NsysImporterTest::dir_ = nullptr;
std::string* NsysImporterTest::cloverleaf_ = nullptr;
std::string* NsysImporterTest::saxpy_ = nullptr;

TEST_F(NsysImporterTest, CloverleafCountsPerKind) {
  TELLER_REQUIRE_REAL_DATA(kCloverleaf);
  Trace trace;
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(ImportNsysSqlite(*cloverleaf_, trace).ok());
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf("cloverleaf import: %.1f ms, %zu events\n", ms, trace.events.size());

  // derived by: sqlite3 f 'SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL' -> 1312
  EXPECT_EQ(CountType(trace, EventType::kKernel), 1312u);
  // derived by: sqlite3 f 'SELECT eventClass, COUNT(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME
  //   GROUP BY 1' -> 0|3047 (CUDA runtime), 1|1 (CUDA driver)
  EXPECT_EQ(CountType(trace, EventType::kRuntime), 3047u);
  EXPECT_EQ(CountType(trace, EventType::kDriver), 1u);
  // derived by: sqlite3 f 'SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY' -> 279
  EXPECT_EQ(CountType(trace, EventType::kMemcpy), 279u);
  // derived by: sqlite3 f 'SELECT copyKind, COUNT(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY
  //   GROUP BY 1' -> 1|254, 2|25; labels from ENUM_CUDA_MEMCPY_OPER
  EXPECT_EQ(CountName(trace, EventType::kMemcpy, "[CUDA memcpy Host-to-Device]"), 254u);
  EXPECT_EQ(CountName(trace, EventType::kMemcpy, "[CUDA memcpy Device-to-Host]"), 25u);
  // derived by: no CUPTI_ACTIVITY_KIND_MEMSET table in
  //   sqlite3 f "SELECT name FROM sqlite_master WHERE type='table'"
  EXPECT_EQ(CountType(trace, EventType::kMemset), 0u);
  // derived by: sqlite3 f 'SELECT syncType, COUNT(*) FROM
  //   CUPTI_ACTIVITY_KIND_SYNCHRONIZATION GROUP BY 1' -> 1|1312 (label 'Event sync')
  EXPECT_EQ(CountType(trace, EventType::kSync), 1312u);
  EXPECT_EQ(CountName(trace, EventType::kSync, "[CUDA Event sync]"), 1312u);
  // derived by: no NVTX_EVENTS table (as above)
  EXPECT_EQ(CountType(trace, EventType::kRange) + CountType(trace, EventType::kMark), 0u);
  // derived by: sqlite3 f 'SELECT SUM(bytes) FROM CUPTI_ACTIVITY_KIND_MEMCPY' -> 225116952
  uint64_t bytes = 0;
  for (size_t i = 0; i < trace.events.size(); ++i) bytes += trace.events.bytes[i];
  EXPECT_EQ(bytes, 225116952u);
  // derived by: sqlite3 f 'SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k WHERE EXISTS
  //   (SELECT 1 FROM CUPTI_ACTIVITY_KIND_RUNTIME r WHERE r.eventClass IN (0,1) AND
  //   r.correlationId = k.correlationId AND (r.globalTid >> 24) = (k.globalPid >> 24))'
  //   -> 1312, hence 0 orphans
  EXPECT_EQ(LinkedAndOrphanKernels(trace), std::make_pair(size_t{1312}, size_t{0}));

  // Both tables that are absent count as missing; nothing else is damaged.
  EXPECT_EQ(trace.counters.Get("nsys.missing_table"), 2u);
  EXPECT_EQ(trace.counters.Get("nsys.corrupt_table"), 0u);
  EXPECT_EQ(trace.counters.Get("nsys.negative_duration"), 0u);
  EXPECT_EQ(trace.counters.Get("nsys.no_session_start"), 0u);
  ASSERT_EQ(trace.sources.size(), 1u);
  EXPECT_EQ(trace.sources[0], *cloverleaf_);
}

TEST_F(NsysImporterTest, CloverleafProcessHostAndTime) {
  TELLER_REQUIRE_REAL_DATA(kCloverleaf);
  Trace trace;
  ASSERT_TRUE(ImportNsysSqlite(*cloverleaf_, trace).ok());
  // derived by: sqlite3 f 'SELECT DISTINCT (globalTid >> 24) & 16777215 FROM
  //   CUPTI_ACTIVITY_KIND_RUNTIME' and the same on globalPid of the GPU tables -> 1701896
  //   only; PROCESSES.pid of that globalPid is 1701896 and its name 'cuda-cloverleaf'.
  ASSERT_EQ(trace.processes.size(), 1u);
  const ProcessInfo& p = trace.processes[0];
  EXPECT_EQ(p.pid, 1701896);
  EXPECT_EQ(trace.strings.Get(p.label), "cuda-cloverleaf");
  // derived by: sqlite3 f "SELECT value FROM TARGET_INFO_SYSTEM_ENV WHERE name='Hostname'"
  EXPECT_EQ(trace.strings.Get(p.host), "nid008553");
  EXPECT_EQ(trace.strings.Get(p.source), *cloverleaf_);
  // derived by: sqlite3 f 'SELECT COUNT(DISTINCT globalTid) FROM CUPTI_ACTIVITY_KIND_RUNTIME'
  //   -> 1, globalTid & 16777215 = 1701896 (the main thread)
  for (size_t i = 0; i < trace.events.size(); ++i) {
    if (IsHostCall(trace.events.type[i])) {
      ASSERT_EQ(trace.events.thread[i], 1701896u);
    }
  }

  // By hand: sqlite3 f 'SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME'
  //   -> 1696392839587175550 (2023-10-04T04:13:59 UTC); the earliest kernel
  //   'SELECT start, correlationId, streamId FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY start
  //   LIMIT 1' -> 533338240|452|7; 1696392839587175550 + 533338240 = 1696392840120513790.
  size_t first = SIZE_MAX;
  for (size_t i = 0; i < trace.events.size(); ++i) {
    if (trace.events.type[i] == EventType::kKernel &&
        (first == SIZE_MAX || trace.events.start_ns[i] < trace.events.start_ns[first])) {
      first = i;
    }
  }
  ASSERT_NE(first, SIZE_MAX);
  EXPECT_EQ(trace.events.start_ns[first], 1696392840120513790);
  EXPECT_EQ(trace.events.correlation[first], 452u);
  EXPECT_EQ(trace.events.stream[first], 7u);
  EXPECT_EQ(trace.events.thread[first], 7u);
  EXPECT_EQ(trace.events.device[first], 0u);
  // derived by: sqlite3 f 'SELECT d.value FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds d
  //   ON d.id = k.demangledName WHERE k.correlationId = 452' (demangled name preferred)
  EXPECT_EQ(trace.strings.Get(trace.events.name[first]).rfind("void clover::par_ranged", 0), 0u);
  // derived by: sqlite3 f 'SELECT SUM("end" - start) FROM CUPTI_ACTIVITY_KIND_KERNEL'
  //   -> 294404540
  int64_t busy = 0;
  for (size_t i = 0; i < trace.events.size(); ++i) {
    if (trace.events.type[i] == EventType::kKernel) {
      busy += trace.events.end_ns[i] - trace.events.start_ns[i];
    }
  }
  EXPECT_EQ(busy, 294404540);
}

TEST_F(NsysImporterTest, SaxpyNvtxRuntimeAndBacktraces) {
  TELLER_REQUIRE_REAL_DATA(kSaxpy);
  Trace trace;
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(ImportNsysSqlite(*saxpy_, trace).ok());
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf("saxpy import: %.1f ms, %zu events\n", ms, trace.events.size());

  // derived by: sqlite3 f 'SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL' -> 5
  EXPECT_EQ(CountType(trace, EventType::kKernel), 5u);
  // derived by: sqlite3 f 'SELECT eventClass, COUNT(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME
  //   GROUP BY 1' -> 0|56 runtime, 1|1 driver, 67|38 CUDA backtrace rows (duplicates of
  //   the calls they enclose: same correlationId), which are skipped and counted
  EXPECT_EQ(CountType(trace, EventType::kRuntime), 56u);
  EXPECT_EQ(CountType(trace, EventType::kDriver), 1u);
  EXPECT_EQ(trace.counters.Get("nsys.runtime_backtrace_skipped"), 38u);
  // derived by: sqlite3 f 'SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY' -> 15;
  //   MEMSET and SYNCHRONIZATION exist with 0 rows
  EXPECT_EQ(CountType(trace, EventType::kMemcpy), 15u);
  EXPECT_EQ(CountType(trace, EventType::kMemset), 0u);
  EXPECT_EQ(CountType(trace, EventType::kSync), 0u);
  // derived by: sqlite3 f 'SELECT eventType, COUNT(*) FROM NVTX_EVENTS GROUP BY 1'
  //   -> 39|1 (NvtxThread: a thread name, skipped), 59|22 (push/pop ranges, all with an
  //   end), 75|1 (NvtxDomainCreate 'MPI', domainId 1)
  EXPECT_EQ(CountType(trace, EventType::kRange), 22u);
  EXPECT_EQ(CountType(trace, EventType::kPush), 0u);
  EXPECT_EQ(CountType(trace, EventType::kMark), 0u);
  EXPECT_EQ(trace.counters.Get("nsys.nvtx_skipped"), 1u);
  // derived by: sqlite3 f 'SELECT domainId, COUNT(*) FROM NVTX_EVENTS WHERE eventType = 59
  //   GROUP BY 1' -> 0|5, 1|17; and 'SELECT COUNT(*) FROM NVTX_EVENTS WHERE text = 'saxpy''
  //   -> 5; 'SELECT s.value FROM NVTX_EVENTS e JOIN StringIds s ON s.id = e.textId
  //   WHERE e.start = 65117824' -> MPI_Init
  size_t mpi = 0, saxpy = 0, mpi_init = 0;
  for (size_t i = 0; i < trace.events.size(); ++i) {
    if (trace.events.type[i] != EventType::kRange) continue;
    EXPECT_EQ(trace.strings.Get(trace.events.category[i]), "nvtx");
    const std::string_view name = trace.strings.Get(trace.events.name[i]);
    const std::string_view domain = trace.strings.Get(trace.events.domain[i]);
    mpi += domain == "MPI";
    if (name == "saxpy") saxpy += domain.empty();
    mpi_init += name == "MPI_Init" && domain == "MPI";
  }
  EXPECT_EQ(mpi, 17u);
  EXPECT_EQ(saxpy, 5u);
  EXPECT_EQ(mpi_init, 1u);
  // derived by: sqlite3 f 'SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k WHERE EXISTS
  //   (SELECT 1 FROM CUPTI_ACTIVITY_KIND_RUNTIME r WHERE r.eventClass IN (0,1) AND
  //   r.correlationId = k.correlationId AND (r.globalTid >> 24) = (k.globalPid >> 24))' -> 5
  EXPECT_EQ(LinkedAndOrphanKernels(trace), std::make_pair(size_t{5}, size_t{0}));
  // derived by: sqlite3 f 'SELECT SUM(bytes) FROM CUPTI_ACTIVITY_KIND_MEMCPY' -> 3932160000
  uint64_t bytes = 0;
  for (size_t i = 0; i < trace.events.size(); ++i) bytes += trace.events.bytes[i];
  EXPECT_EQ(bytes, 3932160000u);

  // derived by: PROCESSES row of globalPid 302119223558144 -> pid 1230493 './saxpy-mpi-cuda';
  //   TARGET_INFO_SYSTEM_ENV Hostname -> nid001608
  ASSERT_EQ(trace.processes.size(), 1u);
  EXPECT_EQ(trace.processes[0].pid, 1230493);
  EXPECT_EQ(trace.strings.Get(trace.processes[0].label), "./saxpy-mpi-cuda");
  EXPECT_EQ(trace.strings.Get(trace.processes[0].host), "nid001608");
  // Every table the importer reads is present in this export.
  EXPECT_EQ(trace.counters.Get("nsys.missing_table"), 0u);
  EXPECT_EQ(trace.counters.Get("nsys.corrupt_table"), 0u);

  // By hand: utcEpochNs 1687813257637297504 (2023-06-26T21:00:57 UTC) + the first kernel's
  // start 924922186 ('SELECT MIN(start) FROM CUPTI_ACTIVITY_KIND_KERNEL') = 1687813258562219690.
  int64_t first = INT64_MAX;
  for (size_t i = 0; i < trace.events.size(); ++i) {
    if (trace.events.type[i] == EventType::kKernel)
      first = std::min(first, trace.events.start_ns[i]);
  }
  EXPECT_EQ(first, 1687813258562219690);
}

TEST_F(NsysImporterTest, TwoExportsAppendToOneTrace) {
  TELLER_REQUIRE_REAL_DATA(kCloverleaf);
  TELLER_REQUIRE_REAL_DATA(kSaxpy);
  Trace trace;
  ASSERT_TRUE(ImportNsysSqlite(*cloverleaf_, trace).ok());
  const size_t after_first = trace.events.size();
  ASSERT_TRUE(ImportNsysSqlite(*saxpy_, trace).ok());
  // Sum of the two single-file imports: 1312+3047+1+279+1312 and 5+56+1+15+22.
  EXPECT_EQ(after_first, 5951u);
  EXPECT_EQ(trace.events.size(), 5951u + 99u);
  EXPECT_EQ(trace.processes.size(), 2u);
  EXPECT_EQ(trace.sources.size(), 2u);
  EXPECT_EQ(trace.counters.Get("nsys.runtime_backtrace_skipped"), 38u);
}

TEST_F(NsysImporterTest, VmStepBudgetStopsCleanly) {
  TELLER_REQUIRE_REAL_DATA(kCloverleaf);
  Trace trace;
  NsysImportOptions options;
  options.max_vm_steps = 20000;
  ASSERT_TRUE(ImportNsysSqliteWithOptions(*cloverleaf_, options, trace).ok());
  EXPECT_EQ(trace.counters.Get("nsys.interrupted"), 1u);
  EXPECT_LT(trace.events.size(), 5951u);
}

TEST_F(NsysImporterTest, MissingFileIsAnErrorNamingIt) {
  Trace trace;
  const std::string path = Temp("does-not-exist.sqlite");
  const Status s = ImportNsysSqlite(path, trace);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
}

TEST_F(NsysImporterTest, NonSqliteFileIsAnErrorNamingIt) {
  const std::string path = Temp("not-sqlite.sqlite");
  WriteAll(path, std::string(4096, 'x') + "this is a text file, not a database\n");
  Trace trace;
  const Status s = ImportNsysSqlite(path, trace);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("not an SQLite database"), std::string::npos) << s.message();
  EXPECT_EQ(trace.events.size(), 0u);
  EXPECT_TRUE(trace.sources.empty());
}

TEST_F(NsysImporterTest, SqliteWithUnrelatedTablesIsAnError) {
  const std::string path = Temp("unrelated.sqlite");
  MakeDb(path, "CREATE TABLE users(id INTEGER, name TEXT); INSERT INTO users VALUES (1, 'a');");
  Trace trace;
  const Status s = ImportNsysSqlite(path, trace);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("not an Nsight Systems export"), std::string::npos) << s.message();
}

TEST_F(NsysImporterTest, TruncatedExportDoesNotCrashAndReports) {
  TELLER_REQUIRE_REAL_DATA(kCloverleaf);
  const std::string bytes = ReadAll(*cloverleaf_);
  ASSERT_GT(bytes.size(), 1000000u);
  const std::string path = Temp("truncated.sqlite");
  WriteAll(path, std::string_view(bytes).substr(0, bytes.size() / 2));
  Trace trace;
  const Status s = ImportNsysSqlite(path, trace);
  // SQLite refuses a file shorter than its header says; the importer then reads in
  // salvage mode (PRAGMA writable_schema) the part of the schema on the first half.
  // derived by: sqlite3 'file:cut?immutable=1' 'PRAGMA writable_schema=ON; SELECT COUNT(*)
  //   FROM <table>' -> StringIds 1297, TARGET_INFO_SESSION_START_TIME 1, PROCESSES 1770;
  //   CUPTI_ACTIVITY_KIND_RUNTIME "database disk image is malformed" before any row (its
  //   interior pages lie in the second half); KERNEL, MEMCPY, SYNCHRONIZATION "no such
  //   table" (their schema rows lie in the second half). No NVTX_EVENTS, no MEMSET.
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(trace.counters.Get("nsys.corrupt_schema"), 1u);
  EXPECT_EQ(trace.counters.Get("nsys.corrupt_table"), 1u);
  EXPECT_EQ(trace.counters.Get("nsys.missing_table"), 5u);
  EXPECT_EQ(trace.counters.Get("nsys.no_session_start"), 0u);
  EXPECT_EQ(trace.events.size(), 0u);
  EXPECT_EQ(trace.sources.size(), 1u);
}

// Corruption inside one table (the schema on page 1 intact): the table stops at the first
// bad page, keeps the rows read before it, and the import still succeeds.
TEST_F(NsysImporterTest, CorruptTablePagesKeepWhatWasRead) {
  const std::string path = Temp("corrupt-pages.sqlite");
  // 5000 kernels of ~100 bytes each: about 130 leaf pages under one interior root page
  // (page 3), so the first half of the file holds the root and the first leaves. (With
  // more rows the root splits and its children are allocated at the end of the file:
  // then no row is reachable, which is the same damage with nothing left to keep.)
  MakeDb(path,
         "CREATE TABLE StringIds(id INTEGER PRIMARY KEY, value TEXT);"
         "INSERT INTO StringIds VALUES (0, 'k');"
         "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL(start INTEGER, end INTEGER, deviceId INTEGER,"
         "  streamId INTEGER, correlationId INTEGER, globalPid INTEGER, demangledName INTEGER,"
         "  pad TEXT);"
         "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5000)"
         "  INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL SELECT i * 10, i * 10 + 5, 0, 7, i,"
         "  16777216, 0, printf('%080d', i) FROM n;");
  const std::string bytes = ReadAll(path);
  const std::string cut = Temp("corrupt-pages-cut.sqlite");
  WriteAll(cut, std::string_view(bytes).substr(0, bytes.size() / 2));
  Trace trace;
  const Status s = ImportNsysSqlite(cut, trace);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(trace.counters.Get("nsys.corrupt_schema"), 1u);
  EXPECT_EQ(trace.counters.Get("nsys.corrupt_table"), 1u);
  const size_t kernels = CountType(trace, EventType::kKernel);
  // derived by: sqlite3 'file:cut?immutable=1' 'PRAGMA writable_schema=ON; SELECT start
  //   FROM CUPTI_ACTIVITY_KIND_KERNEL' prints rows up to start = 24730, then "database disk
  //   image is malformed": 2473 rows.
  EXPECT_EQ(kernels, 2473u);
}

// A hand-made export with NULLs, a negative duration, an unknown string id, no session
// start and most optional tables absent.
TEST_F(NsysImporterTest, NullsNegativeDurationsAndMissingTables) {
  const std::string path = Temp("damaged.sqlite");
  // globalTid = (1 << 48) | (77 << 24) | 78 = 281476268556366; globalPid = 281476268556288.
  MakeDb(path,
         "CREATE TABLE StringIds(id INTEGER PRIMARY KEY, value TEXT NOT NULL);"
         "INSERT INTO StringIds VALUES (0, 'cudaLaunchKernel_v7000'), (1, 'my_kernel');"
         "CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME(start INTEGER, end INTEGER, "
         "  eventClass INTEGER, globalTid INTEGER, correlationId INTEGER, nameId INTEGER,"
         "  returnValue INTEGER, callchainId INTEGER);"
         "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES"
         "  (100, 200, 0, 281476268556366, 1, 0, 0, NULL),"      // fine
         "  (300, 250, 0, 281476268556366, 2, 0, 0, NULL),"      // negative duration
         "  (NULL, 400, 0, 281476268556366, 3, 0, 0, NULL),"     // no start: dropped
         "  (500, 600, 0, NULL, 4, 0, 0, NULL),"                 // no thread: dropped
         "  (700, NULL, 0, 281476268556366, 5, NULL, 0, NULL),"  // no end, no name
         "  (800, 900, 0, 281476268556366, 6, 999, 0, NULL);"    // unknown string id
         "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL(start INTEGER, end INTEGER, deviceId INTEGER,"
         "  streamId INTEGER, correlationId INTEGER, globalPid INTEGER, demangledName INTEGER);"
         "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES"
         "  (150, 180, 0, 7, 1, 281476268556288, 1),"
         "  (260, 240, 1, 8, 2, 281476268556288, 1),"                // negative duration
         "  (270, 280, NULL, NULL, NULL, 281476268556288, NULL);");  // defaults
  Trace trace;
  const Status s = ImportNsysSqlite(path, trace);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(CountType(trace, EventType::kRuntime), 4u);
  EXPECT_EQ(CountType(trace, EventType::kKernel), 3u);
  EXPECT_EQ(trace.counters.Get("nsys.null_start"), 1u);
  EXPECT_EQ(trace.counters.Get("nsys.null_process"), 1u);
  EXPECT_EQ(trace.counters.Get("nsys.null_end"), 1u);
  EXPECT_EQ(trace.counters.Get("nsys.negative_duration"), 2u);
  EXPECT_EQ(trace.counters.Get("nsys.unknown_string_id"), 1u);
  // Runtime: NULL nameId. Kernel: NULL device+stream (one), correlation, name.
  EXPECT_EQ(trace.counters.Get("nsys.null_field"), 4u);
  // NVTX_EVENTS, MEMCPY, MEMSET, SYNCHRONIZATION, TARGET_INFO_SESSION_START_TIME, PROCESSES.
  EXPECT_EQ(trace.counters.Get("nsys.missing_table"), 6u);
  // Kernel table: no graphNodeId column is not counted (optional), but deviceId etc. exist;
  // the runtime table lacks none of start/end/globalTid/correlationId/nameId.
  EXPECT_EQ(trace.counters.Get("nsys.missing_column"), 0u);
  // No session start: times stay relative to it.
  EXPECT_EQ(trace.counters.Get("nsys.no_session_start"), 1u);

  ASSERT_EQ(trace.processes.size(), 1u);
  EXPECT_EQ(trace.processes[0].pid, 77);
  // No host name in the file: the file names the host; no PROCESSES: the file is the label.
  EXPECT_EQ(trace.strings.Get(trace.processes[0].host), "nsys:damaged.sqlite");
  EXPECT_EQ(trace.strings.Get(trace.processes[0].label), "damaged.sqlite");
  for (size_t i = 0; i < trace.events.size(); ++i) {
    EXPECT_GE(trace.events.end_ns[i], trace.events.start_ns[i]);
    if (trace.events.type[i] == EventType::kRuntime) {
      EXPECT_EQ(trace.events.thread[i], 78u);
      if (trace.events.correlation[i] == 2) {
        EXPECT_EQ(trace.events.start_ns[i], 300);
        EXPECT_EQ(trace.events.end_ns[i], 300);
      }
      if (trace.events.correlation[i] == 1) {
        EXPECT_EQ(trace.strings.Get(trace.events.name[i]), "cudaLaunchKernel_v7000");
      }
    }
  }
  EXPECT_EQ(CountName(trace, EventType::kKernel, "my_kernel"), 2u);
  EXPECT_EQ(LinkedAndOrphanKernels(trace), std::make_pair(size_t{2}, size_t{1}));
}

TEST_F(NsysImporterTest, MissingRequiredColumnSkipsOnlyThatTable) {
  const std::string path = Temp("no-globaltid.sqlite");
  MakeDb(path,
         "CREATE TABLE StringIds(id INTEGER PRIMARY KEY, value TEXT);"
         "INSERT INTO StringIds VALUES (0, 'k'), (1, 'MyDomain'), (2, 'step');"
         "CREATE TABLE TARGET_INFO_SESSION_START_TIME(utcEpochNs INTEGER);"
         "INSERT INTO TARGET_INFO_SESSION_START_TIME VALUES (1000000000);"
         "CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME(start INTEGER, end INTEGER, nameId INTEGER);"
         "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (1, 2, 0);"
         "CREATE TABLE NVTX_EVENTS(start INTEGER, end INTEGER, eventType INTEGER, text TEXT,"
         "  globalTid INTEGER, textId INTEGER, domainId INTEGER);"
         // No ENUM_NSYS_EVENT_TYPE: the fallback codes apply (75 domain, 59 push/pop,
         // 60 start/end, 34 mark). The domain row comes after its ranges on purpose.
         "INSERT INTO NVTX_EVENTS VALUES"
         "  (10, 20, 59, NULL, 16777217, 2, 5),"
         "  (11, NULL, 59, 'open', 16777217, NULL, 0),"
         "  (12, 15, 60, 'se', 16777217, NULL, 9),"
         "  (13, NULL, 34, 'mark', 16777217, NULL, 0),"
         "  (1, NULL, 75, NULL, 16777217, 1, 5);");
  Trace trace;
  ASSERT_TRUE(ImportNsysSqlite(path, trace).ok());
  EXPECT_EQ(CountType(trace, EventType::kRuntime), 0u);
  // RUNTIME lacks globalTid (required) and correlationId is not reached.
  EXPECT_EQ(trace.counters.Get("nsys.missing_column"), 1u);
  EXPECT_EQ(CountType(trace, EventType::kRange), 2u);
  EXPECT_EQ(CountType(trace, EventType::kPush), 1u);
  EXPECT_EQ(CountType(trace, EventType::kMark), 1u);
  EXPECT_EQ(trace.counters.Get("nsys.nvtx_open_range"), 1u);
  EXPECT_EQ(trace.counters.Get("nsys.nvtx_unknown_domain"), 1u);
  for (size_t i = 0; i < trace.events.size(); ++i) {
    const std::string_view name = trace.strings.Get(trace.events.name[i]);
    const std::string_view domain = trace.strings.Get(trace.events.domain[i]);
    if (name == "step") {
      EXPECT_EQ(domain, "MyDomain");
      EXPECT_EQ(trace.events.start_ns[i], 1000000010);
      EXPECT_EQ(trace.events.end_ns[i], 1000000020);
    }
    if (name == "se") {
      EXPECT_EQ(domain, "nvtx-domain-9");
    }
    if (name == "open") {
      EXPECT_EQ(trace.events.type[i], EventType::kPush);
    }
  }
  ASSERT_EQ(trace.processes.size(), 1u);
  EXPECT_EQ(trace.processes[0].pid, 1);
}

// Kernel signatures (docs/signature.md) from the launch-geometry columns; expected strings
// written by hand from the grammar.
TEST_F(NsysImporterTest, KernelSignaturesFromGeometryColumns) {
  const std::string path = Temp("geometry.sqlite");
  MakeDb(path,
         "CREATE TABLE StringIds(id INTEGER PRIMARY KEY, value TEXT);"
         "INSERT INTO StringIds VALUES (0, 'gemm'), (1, 'nccl');"
         "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL(start INTEGER, end INTEGER, deviceId INTEGER,"
         "  streamId INTEGER, correlationId INTEGER, globalPid INTEGER, demangledName INTEGER,"
         "  registersPerThread INTEGER, gridX INTEGER, gridY INTEGER, gridZ INTEGER,"
         "  blockX INTEGER, blockY INTEGER, blockZ INTEGER, staticSharedMemory INTEGER,"
         "  dynamicSharedMemory INTEGER);"
         "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES"
         "  (10, 20, 0, 7, 1, 16777216, 0, 40, 128, 1, 1, 256, 1, 1, 0, 0),"
         "  (30, 40, 0, 7, 2, 16777216, 1, 96, 8, 2, 1, 544, 1, 1, 87000, 568),"
         "  (50, 60, 0, 7, 3, 16777216, 0, 40, 128, 1, 1, 256, 1, 1, 0, NULL),"
         "  (70, 80, 0, 7, 4, 16777216, 0, 40, NULL, 1, 1, 256, 1, 1, 0, 0),"
         "  (90, 95, 0, 7, 5, 16777216, 0, 40, 128, 1, 1, -1, 1, 1, 0, 0);"
         "CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY(start INTEGER, end INTEGER, deviceId INTEGER,"
         "  streamId INTEGER, correlationId INTEGER, globalPid INTEGER, bytes INTEGER,"
         "  copyKind INTEGER);"
         "INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (100, 110, 0, 7, 6, 16777216, 64, 1);");
  Trace trace;
  ASSERT_TRUE(ImportNsysSqlite(path, trace).ok());
  std::map<uint64_t, std::string> by_correlation;
  for (size_t i = 0; i < trace.events.size(); ++i) {
    by_correlation[trace.events.correlation[i]] = trace.strings.Get(trace.events.signature[i]);
  }
  ASSERT_EQ(by_correlation.size(), 6u);
  EXPECT_EQ(by_correlation[1], "grid=128,1,1 block=256,1,1");
  // static + dynamic shared memory, as Kineto and the collector write it.
  EXPECT_EQ(by_correlation[2], "grid=8,2,1 block=544,1,1 smem=87568");
  // The same launch as the first: the same string (and id).
  EXPECT_EQ(by_correlation[3], "grid=128,1,1 block=256,1,1");
  // A NULL or negative dimension: no signature.
  EXPECT_EQ(by_correlation[4], "");
  EXPECT_EQ(by_correlation[5], "");
  // Copies: the name already says the kind.
  EXPECT_EQ(by_correlation[6], "");
  // Geometry columns are optional: nothing counted as missing.
  EXPECT_EQ(trace.counters.Get("nsys.missing_column"), 0u);
}

// An export without geometry columns (older nsys) imports as before, with no signatures.
TEST_F(NsysImporterTest, KernelTableWithoutGeometryHasNoSignatures) {
  const std::string path = Temp("no-geometry.sqlite");
  MakeDb(path,
         "CREATE TABLE StringIds(id INTEGER PRIMARY KEY, value TEXT);"
         "INSERT INTO StringIds VALUES (0, 'k');"
         "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL(start INTEGER, end INTEGER, deviceId INTEGER,"
         "  streamId INTEGER, correlationId INTEGER, globalPid INTEGER, demangledName INTEGER);"
         "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (10, 20, 0, 7, 1, 16777216, 0);");
  Trace trace;
  ASSERT_TRUE(ImportNsysSqlite(path, trace).ok());
  ASSERT_EQ(CountType(trace, EventType::kKernel), 1u);
  EXPECT_EQ(trace.events.signature[0], 0u);
  EXPECT_EQ(trace.counters.Get("nsys.missing_column"), 0u);
}

TEST_F(NsysImporterTest, CloverleafKernelSignatures) {
  TELLER_REQUIRE_REAL_DATA(kCloverleaf);
  Trace trace;
  ASSERT_TRUE(ImportNsysSqlite(*cloverleaf_, trace).ok());
  std::map<std::string, size_t> counts;
  size_t kernels = 0;
  for (size_t i = 0; i < trace.events.size(); ++i) {
    if (trace.events.type[i] != EventType::kKernel) {
      EXPECT_EQ(trace.events.signature[i], 0u);
      continue;
    }
    ++kernels;
    ++counts[std::string(trace.strings.Get(trace.events.signature[i]))];
  }
  EXPECT_EQ(kernels, 1312u);
  // derived by: sqlite3 f "SELECT COUNT(DISTINCT 'grid=' || gridX || ',' || gridY || ',' ||
  //   gridZ || ' block=' || blockX || ',' || blockY || ',' || blockZ || CASE WHEN
  //   staticSharedMemory + dynamicSharedMemory > 0 THEN ' smem=' || (staticSharedMemory +
  //   dynamicSharedMemory) ELSE '' END) FROM CUPTI_ACTIVITY_KIND_KERNEL" -> 16 (no NULL
  //   geometry); signature_golden.py: most common 'grid=31,1,1 block=256,1,1' x484
  EXPECT_EQ(counts.count(""), 0u);
  EXPECT_EQ(counts.size(), 16u);
  EXPECT_EQ(counts["grid=31,1,1 block=256,1,1"], 484u);
  // derived by: sqlite3 f 'SELECT staticSharedMemory + dynamicSharedMemory, COUNT(*) FROM
  //   CUPTI_ACTIVITY_KIND_KERNEL GROUP BY 1' -> 0|1299, 2048|10, 10240|3
  size_t smem_2048 = 0, smem_10240 = 0;
  for (const auto& [sig, n] : counts) {
    if (sig.size() > 10 && sig.substr(sig.size() - 10) == " smem=2048") smem_2048 += n;
    if (sig.size() > 11 && sig.substr(sig.size() - 11) == " smem=10240") smem_10240 += n;
  }
  EXPECT_EQ(smem_2048, 10u);
  EXPECT_EQ(smem_10240, 3u);
}

}  // namespace
}  // namespace teller::ingest
