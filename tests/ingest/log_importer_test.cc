// Tests of the log importer (docs/ingest-logs.md): the verbatim samples of
// docs/serving-notes.md §3.2, three real vLLM logs with golden counts, `teller run` capture
// files, year and zone handling, noise (tqdm, ANSI, CRLF, long lines, binary), errors.
#include "src/ingest/log_importer.h"

#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "real_data.h"
#include "src/ingest/log_parser.h"
#include "teller/ingest/ingest.h"

namespace teller::ingest {
namespace {

constexpr int64_t kNoTime = LogTable::kNoTime;

// UTC ns of a civil time, via the C library (independent of the importer's arithmetic).
int64_t Utc(int y, int mo, int d, int h, int mi, int s, int64_t ns = 0) {
  std::tm tm = {};
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = s;
  return static_cast<int64_t>(timegm(&tm)) * 1'000'000'000 + ns;
}

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/teller_log_test_XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() {
    if (DIR* d = opendir(path_.c_str())) {
      while (dirent* e = readdir(d)) {
        if (e->d_name[0] != '.') unlink((path_ + "/" + e->d_name).c_str());
      }
      closedir(d);
    }
    rmdir(path_.c_str());
  }
  std::string Write(const std::string& name, const std::string& bytes) const {
    const std::string p = path_ + "/" + name;
    std::ofstream(p, std::ios::binary) << bytes;
    return p;
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

void SetMtime(const std::string& path, int64_t utc_s) {
  timespec times[2] = {{utc_s, 0}, {utc_s, 0}};
  ASSERT_EQ(utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
}

std::string Str(const Trace& t, StringId id) { return std::string(t.strings.Get(id)); }

// Rows of `trace.logs` by 1-based line number (-1 when the line made no row).
int RowOfLine(const Trace& t, uint32_t line) {
  for (size_t i = 0; i < t.logs.size(); ++i) {
    if (t.logs.line[i] == line) return static_cast<int>(i);
  }
  return -1;
}

struct LevelCounts {
  size_t rows = 0, timed = 0, with_request = 0, unknown = 0, debug = 0, info = 0, warning = 0,
         error = 0, critical = 0;
};

LevelCounts Count(const Trace& t) {
  LevelCounts c;
  const LogTable& l = t.logs;
  c.rows = l.size();
  for (size_t i = 0; i < l.size(); ++i) {
    c.timed += l.ts_ns[i] != kNoTime;
    c.with_request += l.request[i] != 0;
    switch (l.level[i]) {
      case LogLevel::kUnknown:
        ++c.unknown;
        break;
      case LogLevel::kDebug:
        ++c.debug;
        break;
      case LogLevel::kInfo:
        ++c.info;
        break;
      case LogLevel::kWarning:
        ++c.warning;
        break;
      case LogLevel::kError:
        ++c.error;
        break;
      case LogLevel::kCritical:
        ++c.critical;
        break;
    }
  }
  return c;
}

// ---------------------------------------------------------------------------------------
// docs/serving-notes.md §3.2, verbatim, one per line in sample order.
const char* const kSamples[] = {
    "INFO 06-10 06:16:31 [config.py:2118] Chunked prefill is enabled with "
    "max_num_batched_tokens=2048.",
    "INFO 06-10 06:16:44 [kv_cache_utils.py:637] GPU KV cache size: 1,028,832 tokens",
    "(EngineCore_DP0 pid=4045786) INFO 01-29 05:21:46 [gpu_model_runner.py:5055] Graph capturing "
    "finished in 4 secs, took 0.58 GiB",
    "INFO 02-22 16:52:30 async_llm_engine.py:433] Received request "
    "d9e65a86be2a42a4917ba9fee5e97d9e: prompt: ...",
    "(APIServer pid=90458) INFO 02-13 11:33:33 [logger.py:49] Received request "
    "chatcmpl-a269fdcb7c6ce890: params: SamplingParams(n=1, ..., max_tokens=100, ...), "
    "lora_request: None.",
    "(APIServer pid=90458) INFO 02-13 11:33:33 [async_llm.py:382] Added request "
    "chatcmpl-a269fdcb7c6ce890-a8a65d16.",
    "INFO:     127.0.0.1:47344 - \"POST /v1/completions HTTP/1.1\" 200 OK",
    "INFO 07-03 23:23:42 [metrics.py:536] Avg prompt throughput: 0.0 tokens/s, Avg generation "
    "throughput: 616.1 tokens/s, Running: 32 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache "
    "usage: 17.6%, CPU KV cache usage: 0.0%.",
    "(APIServer pid=3646) INFO 05-19 10:13:11 [loggers.py:271] Engine 000: Avg prompt throughput: "
    "0.0 tokens/s, Avg generation throughput: 1055.3 tokens/s, Running: 18 reqs, Waiting: 43 reqs, "
    "GPU KV cache usage: 95.9%, Prefix cache hit rate: 0.0%",
    "WARNING 10-10 20:41:04 scheduler.py:1491] Sequence group "
    "chat-939561076e37472e9902d0cd38511301 is preempted by PreemptionMode.RECOMPUTE mode because "
    "there is not enough KV cache space. This can affect the end-to-end performance. Increase "
    "gpu_memory_utilization or tensor_parallel_size to provide more KV cache memory. "
    "total_num_cumulative_preemption=1",
    "INFO 07-24 12:06:25 [engine.py:330] Aborted request "
    "chatcmpl-e62bd42e7a2c49b789e2bf60f7c520da.",
    "(VllmWorker rank=1 pid=194255) ERROR 05-08 14:46:12 [multiproc_executor.py:435] "
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 270.00 MiB. GPU 1 has a total "
    "capacity of 21.98 GiB of which 156.94 MiB is free. ...",
    "[rank0]:[E ProcessGroupNCCL.cpp:563] [Rank 0] Watchdog caught collective operation timeout: "
    "WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for "
    "600086 milliseconds before timing out.",
    "[rank0]:[E ProcessGroupNCCL.cpp:1537] [PG 0 Rank 0] Timeout at NCCL work: 1, last enqueued "
    "NCCL work: 1, last completed NCCL work: 0.",
    "ERROR 07-01 13:54:43 multiproc_worker_utils.py:120] Worker VllmWorkerProcess pid 1159 died, "
    "exit code: -6",
    "(Worker_PP0 pid=23220) ERROR 07-15 21:01:01 [multiproc_executor.py:1007] "
    "torch.AcceleratorError: CUDA error: an illegal memory access was encountered",
    "(EngineCore pid=12244) ERROR 07-15 21:01:01 [core.py:1240] EngineCore failed to start.",
    "(EngineCore_DP0 pid=77352) INFO 10-22 09:43:49 [shm_broadcast.py:466] No available shared "
    "memory broadcast block found in 60 seconds. This typically happens when some processes are "
    "hanging or doing some time-consuming work (e.g. compilation).",
    "ERROR 08-15 03:15:55 async_llm_engine.py:56] Engine background task failed",
    "[2026-04-05 20:02:51] Prefill batch, #new-seq: 1, #new-token: 158, #cached-token: 0, token "
    "usage: 0.08, #running-req: 31, #queue-req: 0, cuda graph: True, input throughput (token/s): "
    "559.53",
    "[2026-04-05 20:02:51] Decode batch, #running-req: 32, #token: 11179, token usage: 0.08, cuda "
    "graph: True, gen throughput (token/s): 1635.11, #queue-req: 0",
    "[2025-11-11 04:28:01] Prefill batch, #new-seq: 10, #new-token: 4096, #cached-token: 10, token "
    "usage: 0.00, #running-req: 4, #queue-req: 186,",
    "[2025-03-07 21:49:33 TP13] Decode out of memory happened. #retracted_reqs: 1, "
    "#new_token_ratio: 0.1474 -> 0.1845",
    "RuntimeError: Decode out of memory. Try to lower your batch size.",
    "[2025-06-10 06:16:58,323] INFO: Routing request fc469bec-b78e-4e99-acf5-cc23d104b89b to "
    "http://localhost:8000 at 1749536218.3237457, process time = 0.0004 "
    "(request.py:263:vllm_router.services.request_service.request)",
};

struct SampleExpectation {
  LogLevel level;
  int64_t ts;
  const char* request;  // "" = none
  int64_t pid;          // -1 = no process
  const char* role;     // label of that process
  const char* message;
};

TEST(LogImporterTest, VerbatimSamplesOfServingReference) {
  // Without a year in the line, options.default_year applies (2025 here); no month in the
  // sample order drops by 6 or more, so no Dec -> Jan wrap is taken.
  const SampleExpectation kExpected[] = {
      {LogLevel::kInfo, Utc(2025, 6, 10, 6, 16, 31), "", -1, "",
       "Chunked prefill is enabled with max_num_batched_tokens=2048."},
      {LogLevel::kInfo, Utc(2025, 6, 10, 6, 16, 44), "", -1, "",
       "GPU KV cache size: 1,028,832 tokens"},
      {LogLevel::kInfo, Utc(2025, 1, 29, 5, 21, 46), "", 4045786, "EngineCore_DP0",
       "Graph capturing finished in 4 secs, took 0.58 GiB"},
      {LogLevel::kInfo, Utc(2025, 2, 22, 16, 52, 30), "d9e65a86be2a42a4917ba9fee5e97d9e", -1, "",
       "Received request d9e65a86be2a42a4917ba9fee5e97d9e: prompt: ..."},
      {LogLevel::kInfo, Utc(2025, 2, 13, 11, 33, 33), "chatcmpl-a269fdcb7c6ce890", 90458,
       "APIServer",
       "Received request chatcmpl-a269fdcb7c6ce890: params: SamplingParams(n=1, ..., "
       "max_tokens=100, "
       "...), lora_request: None."},
      // The engine-internal id maps to the external one of the line above.
      {LogLevel::kInfo, Utc(2025, 2, 13, 11, 33, 33), "chatcmpl-a269fdcb7c6ce890", 90458,
       "APIServer", "Added request chatcmpl-a269fdcb7c6ce890-a8a65d16."},
      {LogLevel::kInfo, kNoTime, "", -1, "",
       "127.0.0.1:47344 - \"POST /v1/completions HTTP/1.1\" 200 OK"},
      {LogLevel::kInfo, Utc(2025, 7, 3, 23, 23, 42), "", -1, "",
       "Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 616.1 tokens/s, Running: "
       "32 "
       "reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 17.6%, CPU KV cache usage: "
       "0.0%."},
      {LogLevel::kInfo, Utc(2025, 5, 19, 10, 13, 11), "", 3646, "APIServer",
       "Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 1055.3 "
       "tokens/s, "
       "Running: 18 reqs, Waiting: 43 reqs, GPU KV cache usage: 95.9%, Prefix cache hit rate: "
       "0.0%"},
      {LogLevel::kWarning, Utc(2025, 10, 10, 20, 41, 4), "chat-939561076e37472e9902d0cd38511301",
       -1, "", nullptr},
      {LogLevel::kInfo, Utc(2025, 7, 24, 12, 6, 25), "chatcmpl-e62bd42e7a2c49b789e2bf60f7c520da",
       -1, "", "Aborted request chatcmpl-e62bd42e7a2c49b789e2bf60f7c520da."},
      {LogLevel::kError, Utc(2025, 5, 8, 14, 46, 12), "", 194255, "VllmWorker rank=1", nullptr},
      // Old c10d lines print no time; "[rank0]" names a rank no process of the trace has yet.
      {LogLevel::kError, kNoTime, "", -1, "",
       "[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, "
       "OpType=ALLREDUCE, "
       "NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600086 milliseconds before timing out."},
      {LogLevel::kError, kNoTime, "", -1, "",
       "[PG 0 Rank 0] Timeout at NCCL work: 1, last enqueued NCCL work: 1, last completed NCCL "
       "work: 0."},
      {LogLevel::kError, Utc(2025, 7, 1, 13, 54, 43), "", -1, "",
       "Worker VllmWorkerProcess pid 1159 died, exit code: -6"},
      {LogLevel::kError, Utc(2025, 7, 15, 21, 1, 1), "", 23220, "Worker_PP0",
       "torch.AcceleratorError: CUDA error: an illegal memory access was encountered"},
      {LogLevel::kError, Utc(2025, 7, 15, 21, 1, 1), "", 12244, "EngineCore",
       "EngineCore failed to start."},
      {LogLevel::kInfo, Utc(2025, 10, 22, 9, 43, 49), "", 77352, "EngineCore_DP0", nullptr},
      {LogLevel::kError, Utc(2025, 8, 15, 3, 15, 55), "", -1, "", "Engine background task failed"},
      {LogLevel::kUnknown, Utc(2026, 4, 5, 20, 2, 51), "", -1, "", nullptr},
      {LogLevel::kUnknown, Utc(2026, 4, 5, 20, 2, 51), "", -1, "", nullptr},
      {LogLevel::kUnknown, Utc(2025, 11, 11, 4, 28, 1), "", -1, "",
       "Prefill batch, #new-seq: 10, #new-token: 4096, #cached-token: 10, token usage: 0.00, "
       "#running-req: 4, #queue-req: 186,"},
      {LogLevel::kUnknown, Utc(2025, 3, 7, 21, 49, 33), "", -1, "",
       "Decode out of memory happened. #retracted_reqs: 1, #new_token_ratio: 0.1474 -> 0.1845"},
      // A Python exception line has no level word: kUnknown, no time.
      {LogLevel::kUnknown, kNoTime, "", -1, "",
       "RuntimeError: Decode out of memory. Try to lower your batch size."},
      {LogLevel::kInfo, Utc(2025, 6, 10, 6, 16, 58, 323'000'000),
       "fc469bec-b78e-4e99-acf5-cc23d104b89b", -1, "",
       "Routing request fc469bec-b78e-4e99-acf5-cc23d104b89b to http://localhost:8000 at "
       "1749536218.3237457, process time = 0.0004 "
       "(request.py:263:vllm_router.services.request_service.request)"},
  };
  static_assert(std::size(kExpected) == std::size(kSamples));
  std::string text;
  for (const char* s : kSamples) text += std::string(s) + "\n";
  TempDir dir;
  const std::string path = dir.Write("samples.log", text);
  Trace trace;
  LogOptions options;
  options.default_year = 2025;
  ASSERT_TRUE(ImportLogFile(path, options, trace).ok());
  ASSERT_EQ(trace.logs.size(), std::size(kSamples));
  const StringId file = trace.strings.Find(path);
  for (size_t i = 0; i < std::size(kSamples); ++i) {
    SCOPED_TRACE("sample " + std::to_string(i + 1) + ": " + kSamples[i]);
    const SampleExpectation& e = kExpected[i];
    const LogTable& l = trace.logs;
    EXPECT_EQ(l.line[i], i + 1);
    EXPECT_EQ(l.file[i], file);
    EXPECT_EQ(l.level[i], e.level);
    EXPECT_EQ(l.ts_ns[i], e.ts);
    EXPECT_EQ(Str(trace, l.request[i]), e.request);
    if (e.pid < 0) {
      EXPECT_EQ(l.process[i], LogTable::kNoProcess);
    } else {
      ASSERT_LT(l.process[i], trace.processes.size());
      const ProcessInfo& p = trace.processes[l.process[i]];
      EXPECT_EQ(p.pid, e.pid);
      EXPECT_EQ(Str(trace, p.label), e.role);
      EXPECT_EQ(Str(trace, p.host), "") << "no process in the trace before: no host";
      EXPECT_EQ(p.source, file);
    }
    if (e.message != nullptr) {
      EXPECT_EQ(Str(trace, l.message[i]), e.message);
    }
  }
  // Ranks from prefixes: "rank=1" and "Worker_PP0" (TP=1 when vLLM names only PP).
  EXPECT_EQ(trace.processes[trace.logs.process[11]].rank, 1);
  EXPECT_EQ(trace.processes[trace.logs.process[15]].rank, 0);
  EXPECT_EQ(trace.processes[trace.logs.process[2]].rank, -1) << "EngineCore_DP0 is no worker rank";
  EXPECT_EQ(trace.processes.size(), 7u);  // 4045786 90458 3646 194255 23220 12244 77352
  // Samples 7, 13, 14, 24 have no time; 13, 14 and 23 name ranks no process has.
  EXPECT_EQ(trace.counters.Get("logs.no_timestamp"), 4u);
  EXPECT_EQ(trace.counters.Get("logs.rank_without_process"), 3u);
  EXPECT_EQ(trace.counters.Get("logs.assumed_utc"), 1u) << "once per file";
  EXPECT_EQ(trace.counters.Get("logs.lines"), std::size(kSamples));
  ASSERT_EQ(trace.sources.size(), 1u);
  EXPECT_EQ(trace.sources[0], path);
}

// ---------------------------------------------------------------------------------------
// Real logs (vllm_logs in TELLER_REAL_DATA_DIR, Apache-2.0), read in place; skipped when
// absent. Years: the server and router logs are from 2025 (vLLM 0.9.0.1, router epoch
// 1749536218 = 2025-06-10); their mtime here is the copy time, so the year is given.
// The counts below are those of the grep commands cited; tests/golden_scripts/
// logs_golden.py counts them all the same way with Python's re.
const std::string kVllmLogs = real_data::Path("vllm_logs/");

TEST(LogImporterTest, RealProductionStackServerLog) {
  TELLER_REQUIRE_REAL_DATA("vllm_logs/production-stack_vllm_server.log");
  Trace trace;
  LogOptions options;
  options.default_year = 2025;
  ASSERT_TRUE(ImportLogFile(kVllmLogs + "production-stack_vllm_server.log", options, trace).ok());
  const LevelCounts c = Count(trace);
  // derived by: grep -c -v '^[[:space:]]*$' production-stack_vllm_server.log  -> 78
  EXPECT_EQ(c.rows, 78u);
  // derived by: grep -c '^[[:space:]]*$' (the blank line after the tqdm bars) -> 1
  EXPECT_EQ(trace.counters.Get("logs.empty_lines"), 1u);
  // derived by: grep -cE '^(INFO|WARNING|ERROR|DEBUG) [0-9]{2}-[0-9]{2} [0-9:]{8}
  // |^\[rank[0-9]+\]:\[[IWEF][0-9]{3,4} '  -> 61
  EXPECT_EQ(c.timed, 61u);
  EXPECT_EQ(trace.counters.Get("logs.no_timestamp"), 78u - 61u);
  // derived by: grep -cE 'request [0-9a-f-]{8,}|chatcmpl-|cmpl-' -> 0 (started with
  // disable_log_requests)
  EXPECT_EQ(c.with_request, 0u);
  // derived by: grep -cE '^INFO[ :]' -> 70 (vLLM headers and uvicorn "INFO:")
  EXPECT_EQ(c.info, 70u);
  // derived by: grep -cE '^WARNING |^\[rank[0-9]+\]:\[W' -> 5
  EXPECT_EQ(c.warning, 5u);
  // derived by: grep -cE '^ERROR|^\[rank[0-9]+\]:\[E' -> 0
  EXPECT_EQ(c.error, 0u);
  // derived by: the rest, 78 - 70 - 5: the three tqdm "\rLoading safetensors" lines
  EXPECT_EQ(c.unknown, 3u);
  // derived by: grep -c $'\r' -> 3
  EXPECT_EQ(trace.counters.Get("logs.progress_lines"), 3u);
  // Spot checks: line 8 is sample 1; line 76 is the c10d warning with a 9-digit fraction.
  const int r8 = RowOfLine(trace, 8);
  ASSERT_GE(r8, 0);
  EXPECT_EQ(trace.logs.ts_ns[r8], Utc(2025, 6, 10, 6, 16, 31));
  const int r76 = RowOfLine(trace, 76);
  ASSERT_GE(r76, 0);
  EXPECT_EQ(trace.logs.ts_ns[r76], Utc(2025, 6, 10, 6, 17, 1, 666'789'213));
  EXPECT_EQ(trace.logs.level[r76], LogLevel::kWarning);
  const int r24 = RowOfLine(trace, 24);
  ASSERT_GE(r24, 0);
  EXPECT_EQ(Str(trace, trace.logs.message[r24]),
            "Loading safetensors checkpoint shards: 100% Completed | 1/1 [00:00<00:00,  2.83it/s]");
  EXPECT_EQ(RowOfLine(trace, 26), -1) << "the blank line makes no row";
}

TEST(LogImporterTest, RealProductionStackRouterLog) {
  TELLER_REQUIRE_REAL_DATA("vllm_logs/production-stack_router.log");
  Trace trace;
  LogOptions options;
  options.default_year = 2025;
  ASSERT_TRUE(ImportLogFile(kVllmLogs + "production-stack_router.log", options, trace).ok());
  const LevelCounts c = Count(trace);
  // derived by: sed 's/\x1b\[[0-9;]*m//g' production-stack_router.log | grep -c -v '^[[:space:]]*$'
  // -> 33
  EXPECT_EQ(c.rows, 33u);
  // derived by: ... | grep -cE '^\[[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:]{8},[0-9]{3}\]' -> 17
  EXPECT_EQ(c.timed, 17u);
  // derived by: ... | grep -cE 'request
  // [0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}' -> 6
  EXPECT_EQ(c.with_request, 6u);
  // derived by: ... | grep -cE '^(\[[^]]*\] )?INFO:' -> 27
  EXPECT_EQ(c.info, 27u);
  // derived by: ... | grep -cE '^(\[[^]]*\] )?DEBUG:' -> 5
  EXPECT_EQ(c.debug, 5u);
  // derived by: the rest, 33 - 27 - 5: "Semantic cache model specified ..." -> 1
  EXPECT_EQ(c.unknown, 1u);
  // The router's own epoch float on line 13 (1749536218.3237457) agrees with its header
  // time read as UTC (the run's local zone was UTC).
  const int r13 = RowOfLine(trace, 13);
  ASSERT_GE(r13, 0);
  EXPECT_EQ(trace.logs.ts_ns[r13], Utc(2025, 6, 10, 6, 16, 58, 323'000'000));
  EXPECT_EQ(trace.logs.ts_ns[r13] / 1'000'000, 1749536218323);
  EXPECT_EQ(Str(trace, trace.logs.request[r13]), "fc469bec-b78e-4e99-acf5-cc23d104b89b");
  std::vector<std::string> ids;
  for (size_t i = 0; i < trace.logs.size(); ++i) {
    if (trace.logs.request[i] != 0) ids.push_back(Str(trace, trace.logs.request[i]));
  }
  EXPECT_EQ(ids,
            (std::vector<std::string>{
                "fc469bec-b78e-4e99-acf5-cc23d104b89b", "fc469bec-b78e-4e99-acf5-cc23d104b89b",
                "a0759aee-f0cc-4e71-bcec-37150c3c6c03", "a0759aee-f0cc-4e71-bcec-37150c3c6c03",
                "3bb63a4b-efb2-48ba-86c3-37107fc34350", "3bb63a4b-efb2-48ba-86c3-37107fc34350"}));
  const int r1 = RowOfLine(trace, 1);
  ASSERT_GE(r1, 0);
  EXPECT_EQ(Str(trace, trace.logs.message[r1]),
            "Scraping metrics from 1 serving engine(s) "
            "(engine_stats.py:136:vllm_router.stats.engine_stats)")
      << "ANSI colours removed";
}

TEST(LogImporterTest, RealLlmCompressorMixedLog) {
  TELLER_REQUIRE_REAL_DATA("vllm_logs/llm-compressor_vllm_eval.log");
  Trace trace;
  LogOptions options;
  options.default_year = 2026;  // its loguru lines print 2026-01-29
  ASSERT_TRUE(ImportLogFile(kVllmLogs + "llm-compressor_vllm_eval.log", options, trace).ok());
  const LevelCounts c = Count(trace);
  // P='^(\x1b\[0;36m\(EngineCore_DP0 pid=[0-9]+\)\x1b\[0;0m )?'
  // derived by: wc -l -> 132 lines, none blank; minus the 2 lines that hold only the
  // process prefix: grep -cP '^\x1b\[0;36m\(EngineCore_DP0 pid=[0-9]+\)\x1b\[0;0m $' -> 2
  EXPECT_EQ(c.rows, 130u);
  EXPECT_EQ(trace.counters.Get("logs.empty_lines"), 2u);
  // derived by: grep -cP "${P}(INFO|WARNING|ERROR|DEBUG) \d\d-\d\d \d\d:\d\d:\d\d " -> 48
  //           + grep -cP '^\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d' -> 39 (loguru)
  //           + grep -cP '^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\]' -> 16 (lm-eval)
  //           + grep -cP '^\[rank\d+\]:\[[IWEF]\d{3,4} ' -> 1 (c10d)        = 104
  EXPECT_EQ(c.timed, 104u);
  EXPECT_EQ(c.with_request, 0u);  // derived by: grep -cE 'cmpl-|rid=|request [0-9a-f]{8}' -> 0
  // derived by: for L in INFO WARNING ERROR: grep -cP "${P}$L \d\d-\d\d |^\d{4}-\d\d-\d\d[
  // T][0-9:.+]+ \| ($L +|\w+ \| $L -)|^\[\d{4}-\d\d-\d\d [0-9:]{8}\] $L "
  //   -> INFO 95, WARNING 3, ERROR 5; plus grep -cP '^\[rank\d+\]:\[W' -> 1 warning
  EXPECT_EQ(c.info, 95u);
  EXPECT_EQ(c.warning, 4u);
  EXPECT_EQ(c.error, 5u);
  EXPECT_EQ(c.unknown, 26u);  // derived by: 130 - 95 - 4 - 5
  // derived by: grep -c $'\r' -> 18
  EXPECT_EQ(trace.counters.Get("logs.progress_lines"), 18u);
  // Two engine starts: derived by grep -cP '^\x1b\[0;36m\(EngineCore_DP0 pid=4045786\)' -> 25
  // and pid=4046679 -> 27 lines, each minus its one prefix-only line.
  size_t first = 0, second = 0;
  for (size_t i = 0; i < trace.logs.size(); ++i) {
    if (trace.logs.process[i] == LogTable::kNoProcess) continue;
    const int64_t pid = trace.processes[trace.logs.process[i]].pid;
    first += pid == 4045786;
    second += pid == 4046679;
  }
  EXPECT_EQ(first, 24u);
  EXPECT_EQ(second, 26u);
  // tqdm lines keep their process prefix and show the final state of the bar.
  const int r27 = RowOfLine(trace, 27);
  ASSERT_GE(r27, 0);
  EXPECT_EQ(trace.processes[trace.logs.process[r27]].pid, 4045786);
  EXPECT_EQ(Str(trace, trace.logs.message[r27]),
            "Loading safetensors checkpoint shards: 100% Completed | 2/2 [00:00<00:00,  2.12it/s]");
  // Loguru ISO time with "+0000" keeps its µs; loguru local time keeps its ms.
  const int r44 = RowOfLine(trace, 44);
  ASSERT_GE(r44, 0);
  EXPECT_EQ(trace.logs.ts_ns[r44], Utc(2026, 1, 29, 5, 21, 48, 246'142'000));
  EXPECT_EQ(Str(trace, trace.logs.message[r44]), "Starting evaluation...");
  const int r3 = RowOfLine(trace, 3);
  ASSERT_GE(r3, 0);
  EXPECT_EQ(trace.logs.ts_ns[r3], Utc(2026, 1, 29, 5, 21, 22, 178'000'000));
  const int r130 = RowOfLine(trace, 130);
  ASSERT_GE(r130, 0);
  EXPECT_EQ(trace.logs.level[r130], LogLevel::kError);
  EXPECT_EQ(Str(trace, trace.logs.message[r130]), "FAILED: Recovery thresholds not met");
  EXPECT_EQ(trace.counters.Get("logs.truncated_lines"), 0u)
      << "the 94,832-byte tqdm lines shrink to their last segment first";
}

// ---------------------------------------------------------------------------------------
TEST(LogImporterTest, CaptureFileUsesCaptureTime) {
  TempDir dir;
  const int64_t kMonoToUtc = Utc(2026, 11, 29, 8, 23, 0);
  const std::string path = dir.Write(
      "stdout.log",
      "123456789 INFO 11-29 08:23:56 [demo_engine.py:42] Received request cmpl-1000: prompt\n"
      "223456789 (Worker_TP1 pid=777) WARNING 11-29 08:23:57 [demo.py:7] slow step\n"
      "323456789 \n"
      "423456789 plain text without header\n");
  Trace trace;
  ASSERT_TRUE(ImportLogFile(path, LogOptions{}, trace, kMonoToUtc).ok());
  ASSERT_EQ(trace.logs.size(), 3u);
  const LogTable& l = trace.logs;
  EXPECT_EQ(l.ts_ns[0], 123456789 + kMonoToUtc) << "the capture time wins over the printed one";
  EXPECT_EQ(l.level[0], LogLevel::kInfo);
  EXPECT_EQ(Str(trace, l.request[0]), "cmpl-1000");
  EXPECT_EQ(Str(trace, l.message[0]), "Received request cmpl-1000: prompt");
  EXPECT_EQ(l.ts_ns[1], 223456789 + kMonoToUtc);
  EXPECT_EQ(trace.processes[l.process[1]].pid, 777);
  EXPECT_EQ(trace.processes[l.process[1]].rank, 1);
  EXPECT_EQ(Str(trace, trace.processes[l.process[1]].label), "Worker_TP1");
  EXPECT_EQ(l.line[2], 4u);
  EXPECT_EQ(l.ts_ns[2], 423456789 + kMonoToUtc)
      << "lines without a header still get the capture time";
  EXPECT_EQ(Str(trace, l.message[2]), "plain text without header");
  EXPECT_EQ(trace.counters.Get("logs.empty_lines"), 1u);
  EXPECT_EQ(trace.counters.Get("logs.no_timestamp"), 0u);
  EXPECT_EQ(trace.counters.Get("logs.assumed_utc"), 0u);

  // Cross-check: with a known zone the printed time is compared with the capture time.
  Trace checked;
  LogOptions utc;
  utc.utc_offset_known = true;
  ASSERT_TRUE(ImportLogFile(path, utc, checked, kMonoToUtc - 3600LL * 1'000'000'000).ok());
  EXPECT_EQ(checked.counters.Get("logs.capture_time_mismatch"), 2u);

  // Without the launcher's clock pair the printed times are used (year from default_year).
  Trace unclocked;
  LogOptions y2026;
  y2026.default_year = 2026;
  ASSERT_TRUE(ImportLogFile(path, y2026, unclocked).ok());
  EXPECT_EQ(unclocked.logs.ts_ns[0], Utc(2026, 11, 29, 8, 23, 56));
  EXPECT_EQ(unclocked.logs.ts_ns[2], kNoTime);
  EXPECT_EQ(unclocked.counters.Get("logs.capture_without_clock"), 1u);
}

TEST(LogImporterTest, CaptureDetectionNeedsCaptureTimesOnFirstLines) {
  TempDir dir;
  // HDFS-style "yyMMdd HHmmss" is no capture time (leading zero, 6 digits).
  const std::string hdfs = dir.Write(
      "hdfs.log", "081109 203615 148 INFO dfs.DataNode$PacketResponder: PacketResponder 1\n");
  Trace trace;
  ASSERT_TRUE(ImportLogFile(hdfs, LogOptions{}, trace, 1'000'000'000).ok());
  ASSERT_EQ(trace.logs.size(), 1u);
  EXPECT_EQ(trace.logs.ts_ns[0], kNoTime);
  EXPECT_EQ(Str(trace, trace.logs.message[0]),
            "081109 203615 148 INFO dfs.DataNode$PacketResponder: PacketResponder 1");
  // A capture file is recognised when its first five non-empty lines carry capture times;
  // a later line without one is parsed as is and counted.
  std::string capture;
  for (int i = 0; i < 5; ++i)
    capture += std::to_string(1'000'000'000 + i) + " [2026-01-02 03:04:05] x\n";
  capture += "INFO 01-02 03:04:06 [x.py:1] no capture time\n";
  const std::string mixed = dir.Write("mixed.log", capture);
  Trace t2;
  LogOptions o;
  o.default_year = 2026;
  ASSERT_TRUE(ImportLogFile(mixed, o, t2, 5).ok());
  ASSERT_EQ(t2.logs.size(), 6u);
  EXPECT_EQ(t2.logs.ts_ns[0], 1'000'000'005);
  EXPECT_EQ(t2.logs.ts_ns[5], Utc(2026, 1, 2, 3, 4, 6));
  EXPECT_EQ(t2.counters.Get("logs.capture_line_without_ns"), 1u);
  // One early line without a capture time: not a capture file, the numbers are text.
  const std::string plain = dir.Write("plain.log",
                                      "1000000000 [2026-01-02 03:04:05] started\n"
                                      "INFO 01-02 03:04:06 [x.py:1] no capture time\n");
  Trace t3;
  ASSERT_TRUE(ImportLogFile(plain, o, t3, 5).ok());
  ASSERT_EQ(t3.logs.size(), 2u);
  EXPECT_EQ(t3.logs.ts_ns[0], Utc(2026, 1, 2, 3, 4, 5)) << "a late full timestamp, not a capture";
  EXPECT_EQ(t3.counters.Get("logs.capture_line_without_ns"), 0u);
}

TEST(LogImporterTest, YearFromMtimeWrapsDecemberIntoPreviousYear) {
  TempDir dir;
  const std::string path = dir.Write("wrap.log",
                                     "INFO 12-31 23:59:59 [a.py:1] last of the year\n"
                                     "INFO 01-01 00:00:01 [a.py:2] first of the next\n");
  SetMtime(path, Utc(2026, 1, 2, 12, 0, 0) / 1'000'000'000);
  Trace trace;
  ASSERT_TRUE(ImportLogFile(path, LogOptions{}, trace).ok());
  ASSERT_EQ(trace.logs.size(), 2u);
  EXPECT_EQ(trace.logs.ts_ns[0], Utc(2025, 12, 31, 23, 59, 59));
  EXPECT_EQ(trace.logs.ts_ns[1], Utc(2026, 1, 1, 0, 0, 1));

  // With default_year: the year of the first line, one more after the Dec -> Jan step.
  Trace given;
  LogOptions options;
  options.default_year = 2030;
  ASSERT_TRUE(ImportLogFile(path, options, given).ok());
  EXPECT_EQ(given.logs.ts_ns[0], Utc(2030, 12, 31, 23, 59, 59));
  EXPECT_EQ(given.logs.ts_ns[1], Utc(2031, 1, 1, 0, 0, 1));

  // The trace's own events (same run) win over the mtime.
  Trace with_events;
  EventRow e;
  e.start_ns = e.end_ns = Utc(2024, 1, 5, 0, 0, 0);
  with_events.events.Append(e);
  ASSERT_TRUE(ImportLogFile(path, LogOptions{}, with_events).ok());
  EXPECT_EQ(with_events.logs.ts_ns[0], Utc(2023, 12, 31, 23, 59, 59));
  EXPECT_EQ(with_events.logs.ts_ns[1], Utc(2024, 1, 1, 0, 0, 1));
}

TEST(LogImporterTest, LocalTimeOffsetAndZones) {
  TempDir dir;
  const std::string path = dir.Write(
      "zones.log",
      "2026-05-12T08:01:39.331095044Z (APIServer pid=1) INFO 05-12 10:01:39 [api.py:1] collector\n"
      "[2026-05-12 10:01:40] sglang local\n"
      "INFO 05-12 10:01:41 [x.py:2] vllm local\n"
      "2026-05-12T10:01:42.5+02:00 | INFO | iso with offset\n");
  LogOptions cest;
  cest.utc_offset_s = 2 * 3600;
  cest.utc_offset_known = true;
  cest.default_year = 2026;
  Trace trace;
  ASSERT_TRUE(ImportLogFile(path, cest, trace).ok());
  ASSERT_EQ(trace.logs.size(), 4u);
  const LogTable& l = trace.logs;
  EXPECT_EQ(l.ts_ns[0], Utc(2026, 5, 12, 8, 1, 39, 331'095'044)) << "the collector's zone wins";
  EXPECT_EQ(trace.processes[l.process[0]].pid, 1);
  EXPECT_EQ(l.level[0], LogLevel::kInfo);
  EXPECT_EQ(Str(trace, l.message[0]), "collector");
  EXPECT_EQ(l.ts_ns[1], Utc(2026, 5, 12, 8, 1, 40));
  EXPECT_EQ(l.ts_ns[2], Utc(2026, 5, 12, 8, 1, 41));
  EXPECT_EQ(l.ts_ns[3], Utc(2026, 5, 12, 8, 1, 42, 500'000'000));
  EXPECT_EQ(Str(trace, l.message[3]), "iso with offset");
  EXPECT_EQ(trace.counters.Get("logs.assumed_utc"), 0u);

  Trace unknown;
  LogOptions y;
  y.default_year = 2026;
  ASSERT_TRUE(ImportLogFile(path, y, unknown).ok());
  EXPECT_EQ(unknown.logs.ts_ns[0], Utc(2026, 5, 12, 8, 1, 39, 331'095'044));
  EXPECT_EQ(unknown.logs.ts_ns[1], Utc(2026, 5, 12, 10, 1, 40)) << "local time taken as UTC";
  EXPECT_EQ(unknown.counters.Get("logs.assumed_utc"), 1u);
}

TEST(LogImporterTest, ProcessesJoinTheTraceHostAndRanks) {
  TempDir dir;
  const std::string path =
      dir.Write("ranks.log",
                "(Worker_TP3 pid=40) INFO 01-02 03:04:05 [w.py:1] tp3\n"
                "(RayWorkerWrapper pid=41, ip=10.0.0.7) INFO 01-02 03:04:05 [w.py:1] ray\n"
                "(APIServer pid=1) (EngineCore_7 pid=304) (VllmWorker pid=368) ERROR 01-02 "
                "03:04:06 [w.py:2] nested\n"
                "[2025-03-07 21:49:33 TP13] Decode out of memory happened.\n"
                "[rank3]:[E102 03:04:07.000000001 ProcessGroupNCCL.cpp:607] [Rank 3] timeout\n"
                "(Worker_PP1_TP0 pid=42) INFO 01-02 03:04:05 [w.py:1] pp1\n");
  Trace trace;
  ProcessInfo kineto;  // a rank-13 process from another importer, on host node-1
  kineto.pid = 9;
  kineto.host = trace.strings.Intern("node-1");
  kineto.rank = 13;
  kineto.label = trace.strings.Intern("python3 -m sglang");
  trace.processes.push_back(kineto);
  LogOptions options;
  options.default_year = 2025;
  ASSERT_TRUE(ImportLogFile(path, options, trace).ok());
  const LogTable& l = trace.logs;
  ASSERT_EQ(l.size(), 6u);
  const ProcessInfo& tp3 = trace.processes[l.process[0]];
  EXPECT_EQ(Str(trace, tp3.host), "node-1") << "the one host of the trace";
  EXPECT_EQ(tp3.rank, 3);
  EXPECT_EQ(Str(trace, trace.processes[l.process[1]].label), "RayWorkerWrapper");
  EXPECT_EQ(trace.processes[l.process[1]].pid, 41);
  EXPECT_EQ(trace.processes[l.process[2]].pid, 368) << "the innermost prefix printed the line";
  EXPECT_EQ(Str(trace, trace.processes[l.process[2]].label), "VllmWorker");
  EXPECT_EQ(Str(trace, trace.processes[trace.ProcessIndex("node-1", 304)].label), "EngineCore_7");
  EXPECT_EQ(l.process[3], 0u) << "SGLang TP13 -> the trace's only rank-13 process";
  EXPECT_EQ(Str(trace, trace.processes[0].label), "python3 -m sglang") << "labels are kept";
  EXPECT_EQ(l.process[4], l.process[0]) << "[rank3] -> the Worker_TP3 process";
  EXPECT_EQ(l.ts_ns[4], Utc(2025, 1, 2, 3, 4, 7, 1));
  EXPECT_EQ(l.level[4], LogLevel::kError);
  EXPECT_EQ(trace.processes[l.process[5]].rank, -1) << "PP1 with TP0: tp_size unknown";

  // Two hosts in the trace: processes named by the log get no host.
  Trace two;
  two.ProcessIndex("a", 1);
  two.ProcessIndex("b", 2);
  ASSERT_TRUE(ImportLogFile(path, options, two).ok());
  EXPECT_EQ(Str(two, two.processes[two.logs.process[0]].host), "");
}

TEST(LogImporterTest, SglangRequestIds) {
  TempDir dir;
  const std::string path =
      dir.Write("sglang.log",
                "[2026-04-05 20:02:51] Receive: "
                "obj=GenerateReqInput(rid='bf890d9c2c1a4c5e8d0f1a2b3c4d5e6f', text='hi')\n"
                "[2026-04-05 20:02:52 TP0] [RTRACE] rids=['aa11', 'bb22', 'cc33'] stage=decode\n"
                "[2026-04-05 20:02:53] Finish: obj=GenerateReqInput(rid=\"custom id 7\"), out=...\n"
                "[2026-04-05 20:02:54] Running generate_until requests: 3/1000\n"
                "INFO 04-05 20:02:55 [engine.py:1] Finished request "
                "cmpl-0123456789abcdef0123456789abcdef-0.\n"
                "INFO 04-05 20:02:55 [engine.py:1] Sequence group 221 is preempted by "
                "PreemptionMode.RECOMPUTE\n"
                "INFO 04-05 20:02:56 [engine.py:1] request_id=abc-123, done\n");
  Trace trace;
  LogOptions options;
  options.default_year = 2026;
  ASSERT_TRUE(ImportLogFile(path, options, trace).ok());
  ASSERT_EQ(trace.logs.size(), 7u);
  const LogTable& l = trace.logs;
  EXPECT_EQ(Str(trace, l.request[0]), "bf890d9c2c1a4c5e8d0f1a2b3c4d5e6f");
  EXPECT_EQ(Str(trace, l.request[1]), "aa11");
  EXPECT_EQ(Str(trace, l.message[1]), "[RTRACE] rids=['aa11', 'bb22', 'cc33'] stage=decode");
  EXPECT_EQ(trace.counters.Get("logs.multi_request_lines"), 1u);
  EXPECT_EQ(Str(trace, l.request[2]), "custom id 7") << "quoted ids are kept verbatim";
  EXPECT_EQ(l.request[3], 0u) << "\"requests:\" names no id";
  EXPECT_EQ(Str(trace, l.request[4]), "cmpl-0123456789abcdef0123456789abcdef-0");
  EXPECT_EQ(Str(trace, l.request[5]), "221");
  EXPECT_EQ(Str(trace, l.request[6]), "abc-123");
}

TEST(LogImporterTest, NoiseIsCleanedNeverFatal) {
  TempDir dir;
  std::string text;
  text += "\rLoading:  0%|   | 0/2\rLoading: 50%|#  | 1/2\rLoading: 100%|###| 2/2\n";      // 1
  text += "\x1b[0;36m(EngineCore_DP0 pid=5)\x1b[0;0m \rCapturing: 0%\rCapturing: 100%\n";  // 2
  text +=
      "\x1b[32;20m[2025-06-10 06:16:52,393] INFO:\x1b[0m Scraping \x1b[3m(e.py:1:m)\x1b[0m\n";  // 3
  text += "WARNING 06-10 06:16:53 [a.py:1] crlf line\r\n";                                      // 4
  text += "\r\n";                                                                               // 5
  text += "   \t \n";                                                                           // 6
  text += "INFO 06-10 06:16:54 [a.py:2] " + std::string(100 * 1024, 'x') + "\n";                // 7
  text += std::string("\x00\xff\xfe garbage \x80\x81 INFO", 19) + "\n";                         // 8
  text += "\x1b[1";  // 9, cut escape
  const std::string path = dir.Write("noise.log", text);
  Trace trace;
  LogOptions options;
  options.default_year = 2025;
  ASSERT_TRUE(ImportLogFile(path, options, trace).ok());
  const LogTable& l = trace.logs;
  ASSERT_EQ(l.size(), 6u);
  EXPECT_EQ(Str(trace, l.message[0]), "Loading: 100%|###| 2/2") << "last \\r segment";
  EXPECT_EQ(Str(trace, l.message[1]), "Capturing: 100%");
  EXPECT_EQ(trace.processes[l.process[1]].pid, 5) << "the prefix before the first \\r is kept";
  EXPECT_EQ(Str(trace, l.message[2]), "Scraping (e.py:1:m)");
  EXPECT_EQ(l.level[2], LogLevel::kInfo);
  EXPECT_EQ(l.ts_ns[2], Utc(2025, 6, 10, 6, 16, 52, 393'000'000));
  EXPECT_EQ(Str(trace, l.message[3]), "crlf line");
  EXPECT_EQ(l.level[3], LogLevel::kWarning);
  EXPECT_EQ(l.line[4], 7u);
  EXPECT_EQ(l.ts_ns[4], Utc(2025, 6, 10, 6, 16, 54));
  EXPECT_EQ(trace.strings.Get(l.message[4]).size(), kMaxLogLineBytes - 29) << "cut at 64 KiB";
  EXPECT_EQ(l.line[5], 8u);
  EXPECT_EQ(trace.strings.Get(l.message[5]),
            std::string_view("\x00\xff\xfe garbage \x80\x81 INFO", 19))
      << "bytes are kept as they are";
  EXPECT_EQ(trace.counters.Get("logs.empty_lines"), 3u);  // lines 5, 6 and the cut escape
  EXPECT_EQ(trace.counters.Get("logs.truncated_lines"), 1u);
  EXPECT_EQ(trace.counters.Get("logs.progress_lines"), 2u);
}

TEST(LogImporterTest, EmptyMissingAndDirectory) {
  TempDir dir;
  const std::string empty = dir.Write("empty.log", "");
  Trace trace;
  EXPECT_TRUE(ImportLogFile(empty, LogOptions{}, trace).ok());
  EXPECT_EQ(trace.logs.size(), 0u);
  const std::string missing = dir.path() + "/no_such.log";
  const Status s = ImportLogFile(missing, LogOptions{}, trace);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(missing), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("No such file"), std::string::npos) << s.message();
  const Status d = ImportLogFile(dir.path(), LogOptions{}, trace);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.message().find(dir.path()), std::string::npos) << d.message();
}

TEST(LogImporterTest, GzipLogsAreInflated) {
  TempDir dir;
  const std::string path = dir.path() + "/server.log.gz";
  const std::string text = "INFO 06-10 06:16:31 [config.py:2118] Chunked prefill\nsecond line\n";
  gzFile gz = gzopen(path.c_str(), "wb");
  ASSERT_NE(gz, nullptr);
  ASSERT_EQ(gzwrite(gz, text.data(), static_cast<unsigned>(text.size())),
            static_cast<int>(text.size()));
  ASSERT_EQ(gzclose(gz), Z_OK);
  Trace trace;
  LogOptions options;
  options.default_year = 2025;
  ASSERT_TRUE(ImportLogFile(path, options, trace).ok());
  ASSERT_EQ(trace.logs.size(), 2u);
  EXPECT_EQ(trace.logs.ts_ns[0], Utc(2025, 6, 10, 6, 16, 31));
  EXPECT_EQ(Str(trace, trace.logs.message[1]), "second line");

  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string cut = dir.Write("cut.log.gz", bytes.substr(0, bytes.size() - 12));
  Trace t2;
  const Status s = ImportLogFile(cut, options, t2);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(cut), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("truncated gzip"), std::string::npos) << s.message();
}

// Every LogHub sample (16 systems, 2k lines each, CRLF) imports; rows + blank lines add up
// to the file's lines, and the formats with an ISO date get a time on every line
// (tests/golden_scripts/logs_golden.py counts those).
TEST(LogImporterTest, LoghubSamplesImport) {
  TELLER_REQUIRE_REAL_DATA("loghub_2k");
  const std::string base = real_data::Path("loghub_2k/");
  const char* const kSystems[] = {"Android", "Apache",      "BGL",       "HDFS",
                                  "HPC",     "Hadoop",      "HealthApp", "Linux",
                                  "Mac",     "OpenSSH",     "OpenStack", "Proxifier",
                                  "Spark",   "Thunderbird", "Windows",   "Zookeeper"};
  for (const char* system : kSystems) {
    SCOPED_TRACE(system);
    const std::string path = base + system + "_2k.log";
    Trace trace;
    LogOptions options;
    options.default_year = 2017;
    ASSERT_TRUE(ImportLogFile(path, options, trace).ok());
    std::ifstream in(path, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    size_t lines = static_cast<size_t>(std::count(bytes.begin(), bytes.end(), '\n'));
    if (!bytes.empty() && bytes.back() != '\n') ++lines;
    EXPECT_EQ(trace.logs.size() + trace.counters.Get("logs.empty_lines"), lines);
    const LevelCounts c = Count(trace);
    // derived by: grep -c -P '^\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d' Hadoop_2k.log / Zookeeper_2k.log
    // -> 2000 / 2000; grep -cP ' \d{4}-\d\d-\d\d \d\d:\d\d:\d\d' OpenStack_2k.log -> 2000
    if (std::string(system) == "Hadoop" || std::string(system) == "Zookeeper" ||
        std::string(system) == "OpenStack") {
      EXPECT_EQ(c.timed, 2000u);
    }
  }
}

// ---------------------------------------------------------------------------------------
// Scanners, directly.
TEST(LogParserTest, RankFromRole) {
  EXPECT_EQ(logs::RankFromRole("Worker_TP3"), 3);
  EXPECT_EQ(logs::RankFromRole("VllmWorker TP0"), 0);
  EXPECT_EQ(logs::RankFromRole("VllmWorker rank=5"), 5);
  EXPECT_EQ(logs::RankFromRole("Worker_PP0_TP2"), 2);
  EXPECT_EQ(logs::RankFromRole("Worker_PP1_TP2"), -1);
  EXPECT_EQ(logs::RankFromRole("Worker_PP1"), 1);
  EXPECT_EQ(logs::RankFromRole("Worker_DP1_TP0"), -1);
  EXPECT_EQ(logs::RankFromRole("EngineCore_DP0"), -1);
  EXPECT_EQ(logs::RankFromRole("APIServer"), -1);
}

TEST(LogParserTest, GenericHeaders) {
  logs::ParsedLine p;
  logs::ParseLogLine(
      "2015-07-29 17:41:44,747 - INFO  "
      "[QuorumPeer[myid=1]/0:0:0:0:0:0:0:0:2181:FastLeaderElection@774] - Notification time out: "
      "3200",
      &p);
  EXPECT_TRUE(p.has_time);
  EXPECT_EQ(p.time.nanos, 747'000'000);
  EXPECT_EQ(p.level, LogLevel::kInfo);
  logs::ParseLogLine(
      "2015-10-18 18:01:47,978 INFO [main] org.apache.hadoop.mapreduce.v2.app.MRAppMaster: Created",
      &p);
  EXPECT_EQ(p.level, LogLevel::kInfo);
  EXPECT_EQ(p.message, "[main] org.apache.hadoop.mapreduce.v2.app.MRAppMaster: Created");
  logs::ParseLogLine(
      "nova-api.log.1.2017-05-16_13:53:08 2017-05-16 00:00:00.008 25746 INFO "
      "nova.osapi_compute.wsgi.server [-] x",
      &p);
  EXPECT_TRUE(p.has_time);
  EXPECT_EQ(p.time.year, 2017);
  EXPECT_EQ(p.time.nanos, 8'000'000);
  EXPECT_EQ(p.level, LogLevel::kInfo);
  EXPECT_EQ(p.message, "nova.osapi_compute.wsgi.server [-] x");
  logs::ParseLogLine("ERROR:root:something broke", &p);
  EXPECT_EQ(p.level, LogLevel::kError);
  EXPECT_EQ(p.message, "root:something broke");
  logs::ParseLogLine("INFORMATION only", &p);
  EXPECT_EQ(p.level, LogLevel::kUnknown);
  EXPECT_EQ(p.message, "INFORMATION only");
  logs::ParseLogLine("[2026-03-01 10:00:00 PP0 ATTN_CP0 TP5] hello", &p);
  EXPECT_EQ(p.tp_rank, 5);
  EXPECT_EQ(p.pp_rank, 0);
  EXPECT_EQ(p.message, "hello");
  logs::ParseLogLine("[rank2]: Traceback (most recent call last):", &p);
  EXPECT_EQ(p.global_rank, 2);
  EXPECT_EQ(p.level, LogLevel::kUnknown);
  EXPECT_EQ(p.message, "Traceback (most recent call last):");
  logs::ParseLogLine("INFO 13-45 99:99:99 [a.py:1] invalid date", &p);
  EXPECT_TRUE(p.has_time);
  EXPECT_FALSE(logs::IsValidTime(p.time));
}

TEST(LogImporterTest, InvalidTimesAreCounted) {
  Trace trace;
  LogOptions options;
  options.default_year = 2025;
  ASSERT_TRUE(ImportLogBytes("INFO 13-45 10:00:00 [a.py:1] bad\n"
                             "INFO 02-29 10:00:00 [a.py:2] no leap\n"
                             "[0000-01-01 00:00:00] year 0 would overflow int64 ns\n",
                             "bytes.log", 0, options, trace)
                  .ok());
  ASSERT_EQ(trace.logs.size(), 3u);
  EXPECT_EQ(trace.logs.ts_ns[0], kNoTime);
  EXPECT_EQ(trace.logs.ts_ns[2], kNoTime);
  EXPECT_EQ(trace.counters.Get("logs.invalid_time"), 2u);
  EXPECT_EQ(trace.counters.Get("logs.year_unknown"), 0u) << "default_year given";
  // 2025 is no leap year, but the line itself prints no year: Feb 29 is accepted as a
  // date and lands on Mar 1 rather than being dropped.
  EXPECT_EQ(trace.logs.ts_ns[1], Utc(2025, 3, 1, 10, 0, 0));
}

}  // namespace
}  // namespace teller::ingest
