// Failure findings (docs/diagnose.md, "Failures") on hand-built traces: every log pattern,
// grouping, severity, Python tracebacks, ranges open at the end of a process, the run
// manifest; and `teller diagnose` on logs alone, including the real vLLM logs
// (TELLER_REAL_DATA_DIR; skipped when absent).
#include "teller/diagnose/failures.h"

#include <gtest/gtest.h>
#include <simdjson.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "real_data.h"
#include "teller/ingest/ingest.h"
#include "teller/logs/signatures.h"
#include "teller/reconstruct/reconstruct.h"

namespace teller {
namespace {

using diagnose::FindFailures;
using diagnose::Finding;

constexpr const char* kLog = "/var/log/serve.log";

void AddLog(Trace& t, uint32_t line, LogLevel level, std::string_view message,
            uint32_t process = LogTable::kNoProcess, int64_t ts = LogTable::kNoTime,
            const char* file = kLog) {
  t.logs.ts_ns.push_back(ts);
  t.logs.request.push_back(0);
  t.logs.level.push_back(level);
  t.logs.process.push_back(process);
  t.logs.file.push_back(t.strings.Intern(file));
  t.logs.line.push_back(line);
  t.logs.message.push_back(t.strings.Intern(message));
}

std::vector<Finding> LogFindings(const Trace& t) { return FindFailures(t, nullptr); }

std::string Joined(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& l : lines) s += l + "\n";
  return s;
}

// ---- Log patterns -----------------------------------------------------------------------

struct PatternCase {
  const char* message;
  FaultCategory category;
  const char* title;  // the finding's title starts with this
};

// One line of each kind, in the formats the programs print (PyTorch, c10d, NCCL, the
// NVIDIA driver, vLLM); every one is an error of its category.
TEST(FailuresTest, EachLogPatternGivesItsCategory) {
  const PatternCase cases[] = {
      {"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
       "total capacity of 79.19 GiB of which 1.02 GiB is free.",
       FaultCategory::kMemoryResource, "CUDA out of memory"},
      {"RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 1.96 GiB total "
       "capacity)",
       FaultCategory::kMemoryResource, "CUDA out of memory"},
      {"cudaErrorMemoryAllocation while growing the KV cache", FaultCategory::kMemoryResource,
       "CUDA out of memory"},
      {"RuntimeError: CUDA error: an illegal memory access was encountered",
       FaultCategory::kCudaKernel, "illegal memory access on the GPU"},
      {"RuntimeError: CUDA error: device-side assert triggered", FaultCategory::kCudaKernel,
       "device-side assertion failed"},
      {"../aten/src/ATen/native/cuda/Indexing.cu:1141: indexSelectLargeIndex: block: [615,0,0], "
       "thread: [121,0,0] Assertion `srcIndex < srcSelectDimSize` failed.",
       FaultCategory::kCudaKernel, "device-side assertion failed"},
      {"CUDA error: unspecified launch failure", FaultCategory::kCudaKernel, "GPU kernel fault"},
      {"[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, "
       "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600013 "
       "milliseconds before timing out.",
       FaultCategory::kCommunication, "NCCL collective timed out"},
      {"torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1333, "
       "unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.18.1",
       FaultCategory::kCommunication, "NCCL error"},
      {"ncclSystemError: System call (e.g. socket, malloc) or external library call failed or "
       "device error.",
       FaultCategory::kCommunication, "NCCL error"},
      {"To avoid data inconsistency, we are taking the entire process down.",
       FaultCategory::kCommunication, "NCCL communicator aborted"},
      {"NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python3, GPU has fallen off the bus.",
       FaultCategory::kRuntimeDriver, "GPU driver error (Xid) 79"},
      {"NVRM: GPU 0000:01:00.0: GPU has fallen off the bus.", FaultCategory::kRuntimeDriver,
       "GPU driver error (Xid)"},
      {"RuntimeError: CUDA error: no kernel image is available for execution on the device",
       FaultCategory::kRuntimeDriver, "CUDA error"},
      {"EngineCore failed to start.", FaultCategory::kSchedulingSoftware, "serving engine failed"},
      {"Engine core proc EngineCore_DP0 died unexpectedly, shutting down client.",
       FaultCategory::kSchedulingSoftware, "serving engine failed"},
      {"FAILED: Recovery thresholds not met", FaultCategory::kSchedulingSoftware,
       "a check reported FAILED"},
      // Several rows match: the first row of the table wins, wherever its text is in the
      // line (out of memory is the root of this NCCL error).
      {"NCCL error in: ProcessGroupNCCL.cpp:1, unhandled cuda error; CUDA error: out of memory",
       FaultCategory::kMemoryResource, "CUDA out of memory"},
      {"CUDA error: misaligned address", FaultCategory::kCudaKernel, "GPU kernel fault"},
  };
  for (const PatternCase& c : cases) {
    Trace t;
    AddLog(t, 12, LogLevel::kUnknown, c.message);
    const auto f = LogFindings(t);
    ASSERT_EQ(f.size(), 1u) << c.message;
    EXPECT_EQ(f[0].kind, "log_error");
    EXPECT_EQ(f[0].severity, "error") << c.message;
    EXPECT_EQ(FaultCategoryName(f[0].category), FaultCategoryName(c.category)) << c.message;
    EXPECT_EQ(f[0].title.rfind(c.title, 0), 0u) << f[0].title;
    EXPECT_EQ(f[0].source, kLog);
    EXPECT_EQ(f[0].line, 12u);
    EXPECT_FALSE(f[0].explanation.empty());
    EXPECT_NE(Joined(f[0].details).find(c.message), std::string::npos) << Joined(f[0].details);
  }
}

TEST(FailuresTest, OrdinaryLinesAreNoFindings) {
  Trace t;
  AddLog(t, 1, LogLevel::kInfo, "Loading weights took 1.13 seconds");
  AddLog(t, 2, LogLevel::kWarning, "FlashInfer is not available. Falling back.");
  AddLog(t, 3, LogLevel::kUnknown, "the request failed validation and was retried");  // lower case
  AddLog(t, 4, LogLevel::kInfo, "Engine core ready");
  AddLog(t, 5, LogLevel::kUnknown, "Status FAILEDX is a column name");  // not at the start
  EXPECT_TRUE(LogFindings(t).empty());
  EXPECT_EQ(diagnose::FindingsText(LogFindings(t)), "");
}

TEST(FailuresTest, PatternAtInfoLevelIsAWarning) {
  Trace t;
  // Advice text at INFO level names the error without it having happened.
  AddLog(t, 1, LogLevel::kInfo, "to avoid CUDA out of memory, lower --max-num-seqs");
  auto f = LogFindings(t);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, "warning");
  EXPECT_EQ(f[0].category, FaultCategory::kMemoryResource);
  // The same pattern at ERROR level on another line makes the finding an error.
  AddLog(t, 2, LogLevel::kError, "CUDA out of memory. Tried to allocate 1.00 GiB");
  f = LogFindings(t);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, "error");
  EXPECT_NE(f[0].title.find("(2 lines)"), std::string::npos) << f[0].title;
}

TEST(FailuresTest, RepeatedPatternLinesAreOneFindingWithTheirRanks) {
  Trace t;
  for (int rank = 0; rank < 4; ++rank) {
    const uint32_t p = t.ProcessIndex("", 100 + rank);
    t.processes[p].rank = rank;
  }
  // Every rank's watchdog reports the same collective; line order is not rank order.
  const int order[] = {2, 0, 3, 1};
  for (int i = 0; i < 4; ++i) {
    AddLog(t, 10 + i, LogLevel::kError,
           "[Rank " + std::to_string(order[i]) +
               "] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=808, "
               "OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600020 milliseconds before timing "
               "out.",
           static_cast<uint32_t>(order[i]), 1'000'000'000LL + i);
  }
  const auto f = LogFindings(t);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].category, FaultCategory::kCommunication);
  EXPECT_EQ(f[0].rank, 2) << "the first line's rank";
  EXPECT_EQ(f[0].pid, 102);
  EXPECT_EQ(f[0].ts_ns, 1'000'000'000LL);
  EXPECT_EQ(f[0].line, 10u);
  EXPECT_NE(f[0].title.find("(4 lines)"), std::string::npos) << f[0].title;
  const std::string d = Joined(f[0].details);
  EXPECT_NE(d.find("ranks: 0 1 2 3"), std::string::npos) << d;
  EXPECT_NE(d.find("last at serve.log:13"), std::string::npos) << d;
}

// Unmatched ERROR lines group by template (tokens with digits masked): 300 lines of one
// template and 12 single lines of other templates give the 8 most frequent templates one
// by one and one summary of the other 5 lines.
TEST(FailuresTest, UnmatchedErrorLinesGroupByTemplate) {
  Trace t;
  uint32_t line = 1;
  for (int i = 0; i < 300; ++i) {
    AddLog(t, line++, LogLevel::kError,
           "request req-" + std::to_string(1000 + i) + " timed out after " + std::to_string(i % 7) +
               " s");
  }
  const char* words[] = {"alpha", "bravo", "charlie", "delta",  "echo", "foxtrot",
                         "golf",  "hotel", "india",   "juliet", "kilo", "lima"};
  for (const char* w : words) {
    AddLog(t, line++, LogLevel::kCritical, std::string("component ") + w + " is unhealthy");
  }
  const auto f = LogFindings(t);
  ASSERT_EQ(f.size(), 9u);
  for (const Finding& x : f) {
    EXPECT_EQ(x.severity, "warning") << x.title;
    EXPECT_EQ(x.kind, "log_error");
  }
  size_t big = 0, summary = 0;
  for (const Finding& x : f) {
    if (x.title == "ERROR line: request <*> timed out after <*> s (300 lines)") ++big;
    if (x.title == "5 more ERROR/CRITICAL lines of 5 other kinds") ++summary;
  }
  EXPECT_EQ(big, 1u);
  EXPECT_EQ(summary, 1u);
}

// The serving signatures that are warnings whatever the line's level: the engine survived
// them, but they explain slowness (preemption) or lost requests.
TEST(FailuresTest, ServingWarningsStayWarnings) {
  const PatternCase cases[] = {
      {"Sequence group chat-939561076e37472e9902d0cd38511301 is preempted by "
       "PreemptionMode.RECOMPUTE mode because there is not enough KV cache space. This can "
       "affect the end-to-end performance. total_num_cumulative_preemption=1",
       FaultCategory::kMemoryResource, "requests preempted: KV cache full"},
      {"Decode out of memory happened. #retracted_reqs: 1, #new_token_ratio: 0.4000 -> 0.5000",
       FaultCategory::kMemoryResource, "requests preempted: KV cache full"},
      {"Aborted request chatcmpl-e62bd42e7a2c49b789e2bf60f7c520da.",
       FaultCategory::kSchedulingSoftware, "requests aborted"},
      {"node1:1234:1290 [0] NCCL WARN Call to connect returned Connection refused, retrying",
       FaultCategory::kCommunication, "NCCL warning"},
      {"No available shared memory broadcast block found in 60 seconds. This typically happens "
       "when some processes are hanging.",
       FaultCategory::kSchedulingSoftware, "engine worker stalled"},
  };
  for (const PatternCase& c : cases) {
    Trace t;
    AddLog(t, 3, LogLevel::kWarning, c.message);
    AddLog(t, 4, LogLevel::kError, c.message);  // even at ERROR level
    const auto f = LogFindings(t);
    ASSERT_EQ(f.size(), 1u) << c.message;
    EXPECT_EQ(f[0].severity, "warning") << c.message;
    EXPECT_EQ(FaultCategoryName(f[0].category), FaultCategoryName(c.category)) << c.message;
    EXPECT_EQ(f[0].title, std::string(c.title) + " (2 lines)");
  }
}

// Engine deaths of vLLM v0 and SGLang join vLLM v1's.
TEST(FailuresTest, EngineFailuresOfEachEngine) {
  Trace t;
  AddLog(t, 1, LogLevel::kError, "Engine background task failed");
  AddLog(t, 2, LogLevel::kError, "Scheduler hit an exception: Traceback (most recent call last):");
  AddLog(t, 3, LogLevel::kError,
         "Received sigquit from a child process. It usually means the child failed.");
  AddLog(t, 4, LogLevel::kError, "vllm.v1.engine.exceptions.EngineDeadError: EngineCore died");
  const auto f = LogFindings(t);
  ASSERT_EQ(f.size(), 1u) << diagnose::FindingsText(f);
  EXPECT_EQ(f[0].title, "serving engine failed (4 lines)");
  EXPECT_EQ(f[0].severity, "error");
}

// A user's signature file replaces the built-in one: its rules name the lines, and the
// built-in ones no longer apply.
TEST(FailuresTest, UserSignaturesReplaceTheBuiltInOnes) {
  auto sigs = logs::SignatureSet::FromText(
      "[disk_full] runtime_driver auto\n"
      "title: scratch disk full\n"
      "why: The node's scratch disk filled up.\n"
      "contains: No space left on device\n",
      "site.rules");
  ASSERT_TRUE(sigs.ok()) << sigs.status().message();
  Trace t;
  AddLog(t, 1, LogLevel::kError, "OSError: [Errno 28] No space left on device: '/scratch/x'");
  AddLog(t, 2, LogLevel::kWarning, "CUDA out of memory. Tried to allocate 1.00 GiB");
  const auto f = FindFailures(t, nullptr, *sigs.value());
  ASSERT_EQ(f.size(), 1u) << diagnose::FindingsText(f);
  EXPECT_EQ(f[0].title, "scratch disk full");
  EXPECT_EQ(f[0].category, FaultCategory::kRuntimeDriver);
  EXPECT_EQ(f[0].explanation, "The node's scratch disk filled up.");
  EXPECT_EQ(f[0].severity, "error");
  // Built in: the out-of-memory line is named (an error: only DEBUG and INFO lines are
  // taken for advice), and the ERROR line that no rule names is
  // grouped by its template.
  const auto b = FindFailures(t, nullptr);
  ASSERT_EQ(b.size(), 2u) << diagnose::FindingsText(b);
  EXPECT_EQ(b[0].title, "CUDA out of memory");
  EXPECT_EQ(b[0].severity, "error");
  EXPECT_EQ(b[1].title.rfind("ERROR line: OSError:", 0), 0u) << b[1].title;
}

// ---- Python tracebacks --------------------------------------------------------------------

TEST(FailuresTest, TracebackIsOneFindingNamedByItsException) {
  Trace t;
  const uint32_t api = t.ProcessIndex("", 90);
  const uint32_t core = t.ProcessIndex("", 91);
  uint32_t n = 1;
  // vLLM prints every line of a traceback at ERROR level; another process interleaves.
  AddLog(t, n++, LogLevel::kError, "Traceback (most recent call last):", api);
  AddLog(t, n++, LogLevel::kInfo, "Added request cmpl-1.", core);
  AddLog(t, n++, LogLevel::kError, "File \"/vllm/v1/engine/utils.py\", line 759, in wait", api);
  AddLog(t, n++, LogLevel::kError, "raise RuntimeError(\"Engine core initialization failed. \"",
         api);
  AddLog(t, n++, LogLevel::kError, "File \"/vllm/v1/engine/core.py\", line 71, in init", api);
  AddLog(t, n++, LogLevel::kError, "self._initialize_kv_caches(vllm_config)", api);
  AddLog(t, n++, LogLevel::kError, "^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^", api);
  AddLog(t, n++, LogLevel::kError, "KeyError: 'kv_cache_dtype'", api);
  const auto f = LogFindings(t);
  ASSERT_EQ(f.size(), 1u) << diagnose::FindingsText(f);
  EXPECT_EQ(f[0].title, "Python exception KeyError");
  EXPECT_EQ(f[0].category, FaultCategory::kSchedulingSoftware);
  EXPECT_EQ(f[0].severity, "error");
  EXPECT_EQ(f[0].line, 8u) << "the exception line";
  const std::string d = Joined(f[0].details);
  EXPECT_NE(d.find("  File \"/vllm/v1/engine/core.py\", line 71, in init"), std::string::npos) << d;
  EXPECT_NE(d.find("KeyError: 'kv_cache_dtype'"), std::string::npos);
  EXPECT_EQ(d.find("^^^"), std::string::npos) << "caret markers are left out";
}

TEST(FailuresTest, TracebackEndingInAKnownFailureTakesItsCategory) {
  Trace t;
  AddLog(t, 1, LogLevel::kUnknown, "Traceback (most recent call last):");
  AddLog(t, 2, LogLevel::kUnknown, "File \"train.py\", line 3, in <module>");
  AddLog(t, 3, LogLevel::kUnknown, "loss.backward()");
  AddLog(t, 4, LogLevel::kUnknown,
         "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 512.00 MiB.");
  AddLog(t, 5, LogLevel::kUnknown,
         "During handling of the above exception, another exception occurred:");
  AddLog(t, 6, LogLevel::kUnknown, "Exception raised from malloc at CUDACachingAllocator.cpp:1");
  AddLog(t, 7, LogLevel::kUnknown, "frame #0: c10::Error::Error(c10::SourceLocation) + 0x96");
  // The same error printed again by a logger joins the same finding.
  AddLog(t, 8, LogLevel::kError, "CUDA out of memory. Tried to allocate 512.00 MiB.");
  const auto f = LogFindings(t);
  ASSERT_EQ(f.size(), 1u) << diagnose::FindingsText(f);
  EXPECT_EQ(f[0].category, FaultCategory::kMemoryResource);
  EXPECT_EQ(f[0].title, "CUDA out of memory (2 lines)");
  EXPECT_EQ(f[0].line, 4u);
  EXPECT_NE(Joined(f[0].details).find("  loss.backward()"), std::string::npos);
}

TEST(FailuresTest, TracebackWithoutExceptionLineIsReported) {
  Trace t;
  AddLog(t, 1, LogLevel::kUnknown, "Traceback (most recent call last):");
  AddLog(t, 2, LogLevel::kUnknown, "File \"serve.py\", line 9, in run");
  AddLog(t, 3, LogLevel::kUnknown, "else:");  // a source line, not an exception
  const auto f = LogFindings(t);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].title, "Python traceback without its exception line");
  EXPECT_EQ(f[0].severity, "error");
  EXPECT_EQ(f[0].line, 1u);
}

// ---- Open ranges, last calls and GPU work; the run ----------------------------------------

// One process whose thread opened "ProfilerStep#3" and "forward" and never closed them,
// launched one kernel; a second process stuck in "nccl:all_reduce".
struct CrashTrace {
  Trace trace;
  reconstruct::Reconstruction rec;
  CrashTrace() {
    const uint32_t p0 = trace.ProcessIndex("h", 4242);
    trace.processes[p0].rank = 0;
    const uint32_t p1 = trace.ProcessIndex("h", 4243);
    trace.processes[p1].rank = 1;
    auto add = [&](uint32_t proc, EventType type, const char* name, int64_t start, int64_t end,
                   uint64_t corr, uint32_t thread) {
      EventRow row;
      row.type = type;
      row.name = trace.strings.Intern(name);
      row.process = proc;
      row.thread = thread;
      row.start_ns = start;
      row.end_ns = end;
      row.correlation = corr;
      row.stream = type == EventType::kKernel ? 7 : 0;
      trace.events.Append(row);
    };
    add(p0, EventType::kPush, "ProfilerStep#3", 1000, 1000, 0, 11);
    add(p0, EventType::kPush, "forward", 1010, 1010, 0, 11);
    add(p0, EventType::kRuntime, "cudaLaunchKernel", 1020, 1025, 1, 11);
    add(p0, EventType::kKernel, "gemm_kernel", 1030, 1080, 1, 7);
    add(p1, EventType::kPush, "nccl:all_reduce", 2000, 2000, 0, 21);
    add(p1, EventType::kRuntime, "cudaStreamSynchronize", 2010, 2500, 0, 21);
    rec = reconstruct::Reconstruct(trace);
  }
};

TEST(FailuresTest, OpenRangesAreWhatWasInFlight) {
  CrashTrace c;
  const auto f = FindFailures(c.trace, &c.rec);
  ASSERT_EQ(f.size(), 2u) << diagnose::FindingsText(f);
  // No run manifest: open ranges may be a profiling window's cut, so they are warnings.
  for (const Finding& x : f) {
    EXPECT_EQ(x.kind, "in_flight");
    EXPECT_EQ(x.severity, "warning");
  }
  const Finding& a = f[0].pid == 4242 ? f[0] : f[1];
  const Finding& b = f[0].pid == 4242 ? f[1] : f[0];
  EXPECT_EQ(a.title, "process 4242 (rank 0) ended with 2 ranges open: ProfilerStep#3 > forward");
  EXPECT_EQ(a.category, FaultCategory::kSchedulingSoftware);
  EXPECT_EQ(a.ts_ns, 1080) << "the process's last event: the kernel's end";
  // Times before the end (1080): step opened at 1000, forward at 1010; the launch ended at
  // 1025, the kernel at 1080.
  EXPECT_EQ(a.details, (std::vector<std::string>{
                           "open range: ProfilerStep#3 (thread 11, opened 80 ns before the end, "
                           "never closed)",
                           "open range: forward (thread 11, opened 70 ns before the end, never "
                           "closed)",
                           "last host call: cudaLaunchKernel (thread 11, ended 55 ns before the "
                           "end)",
                           "last GPU work: kernel gemm_kernel (device 0, stream 7, ended 0 ns "
                           "before the end)"}));
  EXPECT_EQ(b.title, "process 4243 (rank 1) ended with 1 range open: nccl:all_reduce");
  EXPECT_EQ(b.category, FaultCategory::kCommunication) << "waiting in a collective";
  EXPECT_NE(b.explanation.find("collective"), std::string::npos);
}

TEST(FailuresTest, SignalDeathNamesWhatWasInFlight) {
  CrashTrace c;
  c.trace.run.known = c.trace.run.finished = true;
  c.trace.run.signal = 11;
  c.trace.run.exit_code = 128 + 11;
  c.trace.run.pid = 4242;
  c.trace.run.command = "python3 serve.py";
  const auto f = FindFailures(c.trace, &c.rec);
  ASSERT_EQ(f.size(), 2u) << diagnose::FindingsText(f);
  EXPECT_EQ(f[0].kind, "signal");
  EXPECT_EQ(f[0].severity, "error");
  EXPECT_EQ(f[0].title, "process 4242 (rank 0) died of signal 11 (SIGSEGV)");
  EXPECT_EQ(f[0].category, FaultCategory::kSchedulingSoftware);
  EXPECT_NE(f[0].explanation.find("ProfilerStep#3 > forward"), std::string::npos)
      << f[0].explanation;
  EXPECT_NE(f[0].explanation.find("`python3 serve.py`"), std::string::npos);
  EXPECT_EQ(f[0].details.size(), 4u) << "open ranges, last call and GPU work of process 4242";
  EXPECT_EQ(f[0].ts_ns, 1080);
  // The other rank was waiting in the collective when the run failed: an error now.
  EXPECT_EQ(f[1].kind, "in_flight");
  EXPECT_EQ(f[1].severity, "error");
  EXPECT_EQ(f[1].pid, 4243);
  EXPECT_EQ(f[1].category, FaultCategory::kCommunication);

  // With the launcher's end time, the death is dated then, and the quiet time between the
  // last event (1080) and the end (5000) is said: 3920 ns.
  c.trace.run.end_ns = 5000;
  const auto g = FindFailures(c.trace, &c.rec);
  EXPECT_EQ(g[0].ts_ns, 5000);
  ASSERT_EQ(g[0].details.size(), 5u);
  EXPECT_EQ(g[0].details[4].rfind("its last traced event is 3.9 us before the command ended", 0),
            0u)
      << g[0].details[4];
}

TEST(FailuresTest, StopRequestIsAWarningAndUnknownSignalsAreNamedByNumber) {
  CrashTrace c;
  c.trace.run.known = c.trace.run.finished = true;
  c.trace.run.signal = 15;
  c.trace.run.pid = 4242;
  auto f = FindFailures(c.trace, &c.rec);
  ASSERT_FALSE(f.empty());
  const Finding* sig = nullptr;
  for (const Finding& x : f) {
    if (x.kind == "signal") sig = &x;
    if (x.kind == "in_flight") {
      EXPECT_EQ(x.severity, "warning") << "the run did not fail";
    }
  }
  ASSERT_NE(sig, nullptr);
  EXPECT_EQ(sig->severity, "warning");
  EXPECT_EQ(sig->title, "process 4242 (rank 0) died of signal 15 (SIGTERM)");
  EXPECT_FALSE(diagnose::HasErrorFinding(f));
  c.trace.run.signal = 40;  // a real-time signal: no name
  f = FindFailures(c.trace, &c.rec);
  EXPECT_EQ(f[0].title, "process 4242 (rank 0) died of signal 40");
  EXPECT_EQ(f[0].severity, "error");
}

TEST(FailuresTest, ExitStatusTakesTheCategoryOfTheLikelyCauseInTheLogs) {
  Trace t;
  t.run.known = t.run.finished = true;
  t.run.exit_code = 1;
  t.run.pid = 77;
  // The engine error comes first but only reports the consequence; the specific cause
  // (out of memory) wins over the generic software one.
  AddLog(t, 3, LogLevel::kError, "EngineCore failed to start.", LogTable::kNoProcess, 100);
  AddLog(t, 4, LogLevel::kError, "torch.OutOfMemoryError: CUDA out of memory.",
         LogTable::kNoProcess, 200);
  const auto f = FindFailures(t, nullptr);
  ASSERT_EQ(f.size(), 3u) << diagnose::FindingsText(f);
  EXPECT_EQ(f[0].kind, "exit_status");
  EXPECT_EQ(f[0].title, "process 77 exited with status 1");
  EXPECT_EQ(f[0].category, FaultCategory::kMemoryResource);
  EXPECT_NE(f[0].explanation.find("likely cause: CUDA out of memory (serve.log:4)"),
            std::string::npos)
      << f[0].explanation;
  // Then the log findings by time.
  EXPECT_EQ(f[1].title, "serving engine failed");
  EXPECT_EQ(f[2].title, "CUDA out of memory");
}

TEST(FailuresTest, UnfinishedRunAndCleanExit) {
  Trace t;
  t.run.known = true;  // finished stays false: the launcher never wrote the end
  auto f = FindFailures(t, nullptr);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, "unfinished");
  EXPECT_EQ(f[0].severity, "error");
  EXPECT_EQ(f[0].title, "the run of the command never finished");
  t.run.finished = true;  // exit 0, no signal: nothing to report
  EXPECT_TRUE(FindFailures(t, nullptr).empty());
}

TEST(FailuresTest, JsonHasEveryFieldAndNullsForTheUnknown) {
  Trace t;
  const uint32_t p = t.ProcessIndex("", 55);
  t.processes[p].rank = 3;
  AddLog(t, 9, LogLevel::kError, "NCCL error: unhandled system error", p, 123456789);
  AddLog(t, 10, LogLevel::kError, "disk \"full\"");
  std::string json;
  diagnose::AppendFindingsJson(json, LogFindings(t));
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(json).get(doc), simdjson::SUCCESS) << json;
  simdjson::dom::array arr = doc.get_array();
  ASSERT_EQ(arr.size(), 2u);
  simdjson::dom::object a = arr.at(0).get_object();
  EXPECT_EQ(std::string_view(a["category"].get_string()), "communication");
  EXPECT_EQ(std::string_view(a["kind"].get_string()), "log_error");
  EXPECT_EQ(std::string_view(a["severity"].get_string()), "error");
  EXPECT_EQ(std::string_view(a["title"].get_string()), "NCCL error on rank 3");
  EXPECT_EQ(int64_t(a["rank"].get_int64()), 3);
  EXPECT_EQ(int64_t(a["pid"].get_int64()), 55);
  EXPECT_EQ(int64_t(a["ts_ns"].get_int64()), 123456789);
  EXPECT_EQ(std::string_view(a["source"].get_string()), kLog);
  EXPECT_EQ(int64_t(a["line"].get_int64()), 9);
  EXPECT_FALSE(std::string_view(a["explanation"].get_string()).empty());
  EXPECT_EQ(a["details"].get_array().size(), 1u);
  simdjson::dom::object b = arr.at(1).get_object();
  EXPECT_EQ(std::string_view(b["severity"].get_string()), "warning");
  EXPECT_TRUE(b["rank"].is_null());
  EXPECT_TRUE(b["pid"].is_null());
  EXPECT_TRUE(b["ts_ns"].is_null());
  std::string empty;
  diagnose::AppendFindingsJson(empty, {});
  EXPECT_EQ(empty, "[]");
}

// ---- The run manifest ---------------------------------------------------------------------

std::string TempDir(const std::string& tag) {
  static int counter = 0;
  const std::string dir = "/tmp/teller-failures-test-" + std::to_string(getpid()) + "-" + tag +
                          std::to_string(counter++);
  EXPECT_EQ(std::system(("rm -rf '" + dir + "' && mkdir -p '" + dir + "'").c_str()), 0);
  return dir;
}

TEST(FailuresTest, RunManifestIsRead) {
  const std::string dir = TempDir("manifest");
  std::ofstream(dir + "/manifest.json")
      << "{\"format\":\"teller-run-manifest\",\"format_version\":1,\"command\":[\"python3\","
         "\"crash.py\",\"--n\",\"3\"],\"start_realtime_ns\":1,\"start_monotonic_ns\":1,"
         "\"finished\":true,\"end_realtime_ns\":1700000000123456789,\"pid\":4321,\"exit_code\":139,"
         "\"signal\":11,\"files\":[]}\n";
  Trace t;
  ASSERT_TRUE(ingest::ImportPath(dir, t).ok());
  EXPECT_TRUE(t.run.known);
  EXPECT_TRUE(t.run.finished);
  EXPECT_EQ(t.run.exit_code, 139);
  EXPECT_EQ(t.run.signal, 11);
  EXPECT_EQ(t.run.pid, 4321);
  EXPECT_EQ(t.run.end_ns, 1700000000123456789);
  EXPECT_EQ(t.run.command, "python3 crash.py --n 3");
  const auto f = FindFailures(t, nullptr);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].title, "process 4321 died of signal 11 (SIGSEGV)");

  // An unfinished run has no exit status yet.
  const std::string dir2 = TempDir("unfinished");
  std::ofstream(dir2 + "/manifest.json")
      << "{\"format\":\"teller-run-manifest\",\"command\":[\"x\"],\"finished\":false,"
         "\"pid\":9}\n";
  Trace u;
  ASSERT_TRUE(ingest::ImportPath(dir2, u).ok());
  EXPECT_TRUE(u.run.known);
  EXPECT_FALSE(u.run.finished);
  // A manifest that is not JSON leaves the run unknown, as one without a manifest.
  std::ofstream(dir2 + "/manifest.json") << "{\"finished\":tru";
  Trace v;
  ASSERT_TRUE(ingest::ImportPath(dir2, v).ok());
  EXPECT_FALSE(v.run.known);
  EXPECT_EQ(std::system(("rm -rf '" + dir + "' '" + dir2 + "'").c_str()), 0);
}

// ---- `teller diagnose` on logs alone ------------------------------------------------------

struct Cli {
  int status = -1;
  std::string out, err;
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Cli Teller(const std::string& args) {
  const std::string dir = TempDir("cli");
  const std::string cmd =
      std::string("'") + TELLER_BIN + "' " + args + " >'" + dir + "/out' 2>'" + dir + "/err'";
  const int st = std::system(cmd.c_str());
  Cli c;
  c.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  c.out = ReadFile(dir + "/out");
  c.err = ReadFile(dir + "/err");
  EXPECT_EQ(std::system(("rm -rf '" + dir + "'").c_str()), 0);
  return c;
}

TEST(FailuresCliTest, LogsAloneAreTriaged) {
  const std::string dir = TempDir("logs");
  std::ofstream(dir + "/server.log")
      << "INFO 05-23 09:31:22 [loader.py:458] Loading weights took 38.52 seconds\n"
         "ERROR 05-23 09:31:47 [core.py:396] EngineCore failed to start.\n"
         "ERROR 05-23 09:31:47 [core.py:396] Traceback (most recent call last):\n"
         "ERROR 05-23 09:31:47 [core.py:396]   File \"/vllm/v1/engine/core.py\", line 71, in "
         "init\n"
         "ERROR 05-23 09:31:47 [core.py:396]     self._initialize_kv_caches(vllm_config)\n"
         "ERROR 05-23 09:31:47 [core.py:396] torch.OutOfMemoryError: CUDA out of memory. Tried "
         "to allocate 2.00 GiB.\n";
  Cli c = Teller("diagnose '" + dir + "/server.log'");
  EXPECT_EQ(c.status, 0) << c.err;
  EXPECT_NE(c.out.find("failures: 2 errors, 0 warnings"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("memory_resource"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("CUDA out of memory"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("serving engine failed"), std::string::npos) << c.out;
  c = Teller("diagnose '" + dir + "/server.log' --fail-on-anomaly --json '" + dir + "/d.json'");
  EXPECT_EQ(c.status, 3) << c.err;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.load(dir + "/d.json").get(doc), simdjson::SUCCESS);
  EXPECT_EQ(std::string_view(doc["format"].get_string()), "teller-diagnosis");
  EXPECT_EQ(int64_t(doc["version"].get_int64()), 2);
  EXPECT_EQ(std::string_view(doc["mode"].get_string()), "logs");
  EXPECT_EQ(int64_t(doc["log_lines"].get_int64()), 6);
  EXPECT_EQ(doc["findings"].get_array().size(), 2u);
  EXPECT_TRUE(doc["counters"].is_object());

  // A clean log: no findings, exit 0 even with --fail-on-anomaly.
  std::ofstream(dir + "/clean.log") << "INFO 05-23 09:31:22 [loader.py:458] ready\n";
  c = Teller("diagnose '" + dir + "/clean.log' --fail-on-anomaly");
  EXPECT_EQ(c.status, 0) << c.err;
  EXPECT_NE(c.out.find("no failures found in 1 log lines"), std::string::npos) << c.out;
  // Warnings alone are no anomaly.
  std::ofstream(dir + "/warn.log") << "ERROR 05-23 09:31:22 [x.py:1] request 7 rejected\n";
  c = Teller("diagnose '" + dir + "/warn.log' --fail-on-anomaly");
  EXPECT_EQ(c.status, 0) << c.out;
  EXPECT_NE(c.out.find("0 errors, 1 warning"), std::string::npos) << c.out;
  EXPECT_EQ(std::system(("rm -rf '" + dir + "'").c_str()), 0);
}

// `--log-signatures FILE` replaces the built-in signatures; a damaged file is an error
// naming its line.
TEST(FailuresCliTest, LogSignaturesFileIsUsed) {
  const std::string dir = TempDir("sigs");
  std::ofstream(dir + "/server.log")
      << "ERROR 05-23 09:31:47 [io.py:3] OSError: [Errno 28] No space left on device\n";
  std::ofstream(dir + "/site.rules") << "[disk_full] runtime_driver auto\n"
                                        "title: scratch disk full\n"
                                        "why: The node's scratch disk filled up.\n"
                                        "contains: No space left on device\n";
  Cli c = Teller("diagnose '" + dir + "/server.log' --log-signatures '" + dir + "/site.rules'");
  EXPECT_EQ(c.status, 0) << c.err;
  EXPECT_NE(c.out.find("failures: 1 error, 0 warnings"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("runtime_driver      scratch disk full"), std::string::npos) << c.out;
  std::ofstream(dir + "/bad.rules") << "[disk_full] disk auto\n";
  c = Teller("diagnose '" + dir + "/server.log' --log-signatures '" + dir + "/bad.rules'");
  EXPECT_EQ(c.status, 1);
  EXPECT_NE(c.err.find("bad.rules:1: unknown category 'disk'"), std::string::npos) << c.err;
  EXPECT_EQ(std::system(("rm -rf '" + dir + "'").c_str()), 0);
}

TEST(FailuresCliTest, MinEffectIsValidated) {
  for (const char* bad : {"1", "0.5", "abc", "nan", "-2"}) {
    const Cli c = Teller(std::string("diagnose x.log --min-effect ") + bad);
    EXPECT_EQ(c.status, 2) << bad;
    EXPECT_NE(c.err.find("--min-effect"), std::string::npos) << c.err;
  }
  const Cli h = Teller("diagnose --help");
  EXPECT_EQ(h.status, 0);
  EXPECT_NE(h.out.find("--fail-on-anomaly"), std::string::npos);
  EXPECT_NE(h.out.find("3 anomaly"), std::string::npos);
}

// The real vLLM logs: the recovery failure of the llm-compressor evaluation is an error
// finding at its line; the healthy server and router logs give no error.
TEST(FailuresRealDataTest, VllmRecoveryFailureIsSurfaced) {
  TELLER_REQUIRE_REAL_DATA("vllm_logs/llm-compressor_vllm_eval.log");
  Trace t;
  ASSERT_TRUE(
      ingest::ImportPath(real_data::Path("vllm_logs/llm-compressor_vllm_eval.log"), t).ok());
  const auto f = FindFailures(t, nullptr);
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].severity, "error");
  EXPECT_EQ(f[0].title, "a check reported FAILED");
  EXPECT_EQ(f[0].line, 130u);
  EXPECT_NE(Joined(f[0].details).find("FAILED: Recovery thresholds not met"), std::string::npos);
  // The other four ERROR lines (two per metric, each metric its own template) are warnings.
  size_t warnings = 0;
  for (const Finding& x : f) warnings += x.severity == "warning";
  EXPECT_EQ(f.size(), 5u) << diagnose::FindingsText(f);
  EXPECT_EQ(warnings, 4u);

  const Cli c = Teller("diagnose '" + real_data::Path("vllm_logs/llm-compressor_vllm_eval.log") +
                       "' --fail-on-anomaly");
  EXPECT_EQ(c.status, 3) << c.err;
  EXPECT_NE(c.out.find("FAILED: Recovery thresholds not met"), std::string::npos) << c.out;
  for (const char* healthy :
       {"vllm_logs/production-stack_vllm_server.log", "vllm_logs/production-stack_router.log"}) {
    Trace h;
    ASSERT_TRUE(ingest::ImportPath(real_data::Path(healthy), h).ok());
    EXPECT_FALSE(diagnose::HasErrorFinding(FindFailures(h, nullptr))) << healthy;
  }
}

}  // namespace
}  // namespace teller
