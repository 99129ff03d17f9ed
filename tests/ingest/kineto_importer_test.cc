// Tests of the Kineto importer (src/ingest/kineto_importer.cc, docs/ingest-kineto.md).
// Golden counts on real third-party traces (read in place from TELLER_REAL_DATA_DIR;
// skipped when absent); each expected value was derived independently with Python's
// json/gzip by tests/golden_scripts/kineto_golden.py, which prints them per test. Its
// category helper:
//   K = {cpu_op/user_annotation/python_function/Operator: range, cuda_runtime/Runtime:
//        runtime, cuda_driver: driver, kernel/Kernel: kernel, gpu_memcpy/Memcpy: memcpy,
//        gpu_memset/Memset: memset, cuda_sync: sync, gpu_user_annotation: gpu_annotation}
//   count ph=='X' events by K[cat] (unknown cats apart), ph in 'iI' as mark, 'sft' as flow.
#include "src/ingest/kineto_importer.h"

#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "real_data.h"
#include "teller/ingest/ingest.h"
#include "temp_dir.h"
#include "zlib_gzip.h"

namespace teller::ingest {
namespace {

const std::string kReal = real_data::Dir();

std::map<EventType, size_t> CountTypes(const Trace& t) {
  std::map<EventType, size_t> counts;
  for (const EventType type : t.events.type) ++counts[type];
  return counts;
}

size_t CountWhere(const Trace& t, EventType type, uint64_t correlation) {
  size_t n = 0;
  for (size_t i = 0; i < t.events.size(); ++i) {
    n += t.events.type[i] == type && t.events.correlation[i] == correlation;
  }
  return n;
}

// Index of the first row with this type and name, or -1.
long FindRow(const Trace& t, EventType type, std::string_view name) {
  for (size_t i = 0; i < t.events.size(); ++i) {
    if (t.events.type[i] == type && t.strings.Get(t.events.name[i]) == name) {
      return static_cast<long>(i);
    }
  }
  return -1;
}

// Traces are neither copyable nor movable (StringPool); the helpers keep them alive for
// the whole test program and hand out references.
Trace& NewTrace() {
  static std::vector<std::unique_ptr<Trace>> keep;
  keep.push_back(std::make_unique<Trace>());
  return *keep.back();
}

const Trace& ImportOk(const std::string& path) {
  Trace& t = NewTrace();
  const Status s = ImportKineto(path, t);
  EXPECT_TRUE(s.ok()) << s.message();
  return t;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Gzip(const std::string& data) { return zlib_gzip::Gzip(data); }

// Wraps events (a JSON array body) into a minimal trace.
std::string TraceJson(const std::string& events, const std::string& extra = "") {
  return "{\"schemaVersion\": 1," + extra + "\n\"traceEvents\": [\n" + events + "\n]}\n";
}

const Trace& ImportText(const std::string& json, Status* status = nullptr) {
  Trace& t = NewTrace();
  const Status s = ImportKinetoBytes(json, "mem.json", t);
  if (status != nullptr) {
    *status = s;
  } else {
    EXPECT_TRUE(s.ok()) << s.message();
  }
  return t;
}

// ---------------------------------------------------------------------------------------
// Golden counts on real traces

TEST(KinetoRealTest, B200EagerCategoryCounts) {
  TELLER_REQUIRE_REAL_DATA("tracelens/b200__eager_trace.json.gz");
  const Trace& t = ImportOk(kReal + "/tracelens/b200__eager_trace.json.gz");
  const auto c = CountTypes(t);
  // derived by: tests/golden_scripts/kineto_golden.py (category helper above):
  // {'range': 20042, 'memcpy': 161, 'runtime': 1151, 'kernel': 768, 'driver': 221,
  //  'gpu_annotation': 3, 'flow': 2301} unknown {'overhead': 9} rows 22346
  EXPECT_EQ(c.at(EventType::kRange), 20042u);
  EXPECT_EQ(c.at(EventType::kMemcpy), 161u);
  EXPECT_EQ(c.at(EventType::kRuntime), 1151u);
  EXPECT_EQ(c.at(EventType::kKernel), 768u);
  EXPECT_EQ(c.at(EventType::kDriver), 221u);
  EXPECT_EQ(c.at(EventType::kGpuAnnotation), 3u);
  EXPECT_EQ(t.events.size(), 22346u);
  EXPECT_EQ(t.counters.Get("kineto.flow_events"), 2301u);
  EXPECT_EQ(t.counters.Get("kineto.unknown_category:overhead"), 9u);
  EXPECT_EQ(t.counters.Get("kineto.unknown_category"), 9u);
  // derived by: kineto_golden.py, distributedInfo -> rank 0, world_size 8; pid 6583
  ASSERT_FALSE(t.processes.empty());
  EXPECT_EQ(t.processes[0].rank, 0);
  EXPECT_EQ(t.processes[0].world_size, 8);
  EXPECT_EQ(t.processes[0].pid, 6583);
  EXPECT_EQ(t.strings.Get(t.processes[0].label), "b200__eager_trace.json.gz");
  ASSERT_EQ(t.sources.size(), 1u);
  // Time base (key before traceEvents here). First event, by hand: baseTimeNanoseconds
  // 1767189312000000000 + round(1365627862757.064 us * 1000) = 1768554939862757064 ns;
  // dur 87412.863 us -> end = start + 87412863.
  const long row = FindRow(t, EventType::kRange, "execute_context_1(888_788544)_generation_0(0)");
  ASSERT_GE(row, 0);
  EXPECT_EQ(t.events.start_ns[row], 1768554939862757064LL);
  EXPECT_EQ(t.events.end_ns[row], 1768554939862757064LL + 87412863);
  EXPECT_EQ(t.strings.Get(t.events.category[row]), "user_annotation");
  // GPU memcpy: bytes, device, stream from args (derived by: kineto_golden.py, first
  // gpu_memcpy: args bytes 2048, device 0, stream 7, correlation 16).
  const long copy = FindRow(t, EventType::kMemcpy, "Memcpy HtoD (Pinned -> Device)");
  ASSERT_GE(copy, 0);
  EXPECT_EQ(t.events.bytes[copy], 2048u);
  EXPECT_EQ(t.events.stream[copy], 7u);
  EXPECT_EQ(t.events.thread[copy], 7u);
  EXPECT_EQ(t.events.correlation[copy], 16u);
  EXPECT_EQ(t.events.process[copy], 0u);
}

TEST(KinetoRealTest, VllmGraphLaunchSharesOneCorrelation) {
  TELLER_REQUIRE_REAL_DATA("tracelens/inference__vllm_decode_full__graph_execution.json.gz");
  const Trace& t =
      ImportOk(kReal + "/tracelens/inference__vllm_decode_full__graph_execution.json.gz");
  // derived by: tests/golden_scripts/kineto_golden.py (graph_launch: the first runtime
  //   call named *GraphLaunch*, and the kernels with its correlation) -> 505113 421
  const long launch = FindRow(t, EventType::kRuntime, "hipGraphLaunch");
  ASSERT_GE(launch, 0);
  EXPECT_EQ(t.events.correlation[launch], 505113u);
  EXPECT_EQ(CountWhere(t, EventType::kKernel, 505113), 421u);
  // derived by: kineto_golden.py -> {'range': 1085, 'runtime': 20, 'flow': 454, 'memcpy': 9,
  //   'kernel': 425} rows 1539
  const auto c = CountTypes(t);
  EXPECT_EQ(c.at(EventType::kKernel), 425u);
  EXPECT_EQ(c.at(EventType::kRange), 1085u);
  EXPECT_EQ(t.events.size(), 1539u);
  EXPECT_EQ(t.counters.Get("kineto.flow_events"), 454u);
  EXPECT_EQ(t.counters.Get("kineto.duplicate_correlation"), 0u);
}

TEST(KinetoRealTest, SglangDecodeGraphLaunch) {
  TELLER_REQUIRE_REAL_DATA("tracelens/inference__sglang_decode__sglang_Qwen3-8B_decode.json.gz");
  const Trace& t =
      ImportOk(kReal + "/tracelens/inference__sglang_decode__sglang_Qwen3-8B_decode.json.gz");
  // derived by: tests/golden_scripts/kineto_golden.py (graph_launch) -> 92178 544
  EXPECT_EQ(CountWhere(t, EventType::kKernel, 92178), 544u);
  // derived by: kineto_golden.py -> {'range': 884, 'runtime': 29, 'flow': 587, 'kernel': 555,
  //   'memcpy': 3} rows 1471
  const auto c = CountTypes(t);
  EXPECT_EQ(c.at(EventType::kRange), 884u);
  EXPECT_EQ(c.at(EventType::kRuntime), 29u);
  EXPECT_EQ(c.at(EventType::kKernel), 555u);
  EXPECT_EQ(c.at(EventType::kMemcpy), 3u);
  EXPECT_EQ(t.counters.Get("kineto.flow_events"), 587u);
  // Compact JSON without newlines is parsed as a single window.
  EXPECT_EQ(t.events.size(), 1471u);
}

TEST(KinetoRealTest, Resnet50Legacy2021Categories) {
  TELLER_REQUIRE_REAL_DATA("kineto/resnet50_nw0_worker0.1623143089861.pt.trace.json.gz");
  const Trace& t = ImportOk(kReal + "/kineto/resnet50_nw0_worker0.1623143089861.pt.trace.json.gz");
  // derived by: kineto_golden.py -> {'range': 23646, 'mark': 12840, 'memcpy': 12,
  //   'flow': 18192, 'runtime': 11923, 'kernel': 8772, 'memset': 312} unknown {'Trace': 1}
  const auto c = CountTypes(t);
  EXPECT_EQ(c.at(EventType::kRange), 23646u);
  EXPECT_EQ(c.at(EventType::kMark), 12840u);
  EXPECT_EQ(c.at(EventType::kMemcpy), 12u);
  EXPECT_EQ(c.at(EventType::kRuntime), 11923u);
  EXPECT_EQ(c.at(EventType::kKernel), 8772u);
  EXPECT_EQ(c.at(EventType::kMemset), 312u);
  EXPECT_EQ(t.counters.Get("kineto.flow_events"), 18192u);
  EXPECT_EQ(t.counters.Get("kineto.unknown_category:Trace"), 1u);
  // First Memcpy (printed by kineto_golden.py): tid "stream 7", args stream 7, correlation 34417,
  // "external id" 537, bytes 19267584, legacy epoch ts 1623142623529248 us, dur 1940.
  const long copy = FindRow(t, EventType::kMemcpy, "Memcpy HtoD (Pageable -> Device)");
  ASSERT_GE(copy, 0);
  EXPECT_EQ(t.events.external_id[copy], 537u);
  EXPECT_EQ(t.events.correlation[copy], 34417u);
  EXPECT_EQ(t.events.bytes[copy], 19267584u);
  EXPECT_EQ(t.events.stream[copy], 7u);
  EXPECT_EQ(t.events.start_ns[copy], 1623142623529248000LL);
  EXPECT_EQ(t.events.end_ns[copy], 1623142623529248000LL + 1940000);
  EXPECT_EQ(t.strings.Get(t.events.category[copy]), "Memcpy");
  // Host tids are strings ("25738") in this format: parsed as numbers, not hashed.
  const long op = FindRow(t, EventType::kRange, "aten::empty");
  ASSERT_GE(op, 0);
  EXPECT_EQ(t.events.thread[op], 25738u);
  EXPECT_EQ(t.strings.Get(t.events.category[op]), "Operator");
}

TEST(KinetoRealTest, DfIndexResolverRank1Of2) {
  TELLER_REQUIRE_REAL_DATA("hta/df_index_resolver__df_index_resolver.json.gz");
  const Trace& t = ImportOk(kReal + "/hta/df_index_resolver__df_index_resolver.json.gz");
  // derived by: kineto_golden.py -> {'range': 58715, 'mark': 28012, 'kernel': 19370,
  //   'flow': 64663, 'runtime': 42373, 'memset': 880, 'memcpy': 2040} rows 151390
  const auto c = CountTypes(t);
  EXPECT_EQ(c.at(EventType::kRange), 58715u);
  EXPECT_EQ(c.at(EventType::kMark), 28012u);
  EXPECT_EQ(c.at(EventType::kKernel), 19370u);
  EXPECT_EQ(c.at(EventType::kRuntime), 42373u);
  EXPECT_EQ(c.at(EventType::kMemset), 880u);
  EXPECT_EQ(c.at(EventType::kMemcpy), 2040u);
  EXPECT_EQ(t.events.size(), 151390u);
  EXPECT_EQ(t.counters.Get("kineto.flow_events"), 64663u);
  // derived by: kineto_golden.py, distributedInfo -> {'backend': 'nccl', 'rank': 1,
  //   'world_size': 2}
  ASSERT_FALSE(t.processes.empty());
  EXPECT_EQ(t.processes[0].rank, 1);
  EXPECT_EQ(t.processes[0].world_size, 2);
  EXPECT_EQ(t.processes[0].pid, 783658);
  // Legacy (no baseTimeNanoseconds): ts is epoch us. First cpu_op in the file:
  // ts 1669783687464181, dur 45 (kineto_golden.py prints it).
  const long row =
      FindRow(t, EventType::kRange, "autograd::engine::evaluate_function: SumBackward0");
  ASSERT_GE(row, 0);
  EXPECT_EQ(t.events.start_ns[row], 1669783687464181000LL);
  EXPECT_EQ(t.events.end_ns[row], 1669783687464181000LL + 45000);
  EXPECT_EQ(t.events.thread[row], 785244u);
  EXPECT_EQ(t.counters.Get("kineto.duplicate_correlation"), 0u);
}

TEST(KinetoRealTest, ParamDlrmEightRanksIntoOneTrace) {
  TELLER_REQUIRE_REAL_DATA("param_dlrm_8rank");
  // derived by: tests/golden_scripts/kineto_golden.py (rank and kernels of each file)
  const char* files[] = {"worker0_step_12.1694128201545.pt.trace.json.gz",
                         "worker1_step_12.1694128201556.pt.trace.json.gz",
                         "worker2_step_12.1694128201554.pt.trace.json.gz",
                         "worker3_step_12.1694128201557.pt.trace.json.gz",
                         "worker4_step_12.1694128201547.pt.trace.json.gz",
                         "worker5_step_12.1694128201549.pt.trace.json.gz",
                         "worker6_step_12.1694128201553.pt.trace.json.gz",
                         "worker7_step_12.1694128201553.pt.trace.json.gz"};
  const size_t kernels[] = {245, 310, 246, 315, 251, 245, 246, 246};
  Trace t;
  std::vector<size_t> kernels_per_file;
  for (const char* f : files) {
    const size_t before = t.events.size();
    const Status s = ImportKineto(kReal + "/param_dlrm_8rank/" + f, t);
    ASSERT_TRUE(s.ok()) << s.message();
    size_t k = 0;
    for (size_t i = before; i < t.events.size(); ++i) k += t.events.type[i] == EventType::kKernel;
    kernels_per_file.push_back(k);
  }
  EXPECT_EQ(t.sources.size(), 8u);
  std::set<int32_t> ranks;
  std::set<StringId> sources;
  for (const ProcessInfo& p : t.processes) {
    ranks.insert(p.rank);
    sources.insert(p.source);
    EXPECT_EQ(p.world_size, 8);
  }
  EXPECT_EQ(ranks, (std::set<int32_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(sources.size(), 8u);
  for (size_t i = 0; i < 8; ++i) EXPECT_EQ(kernels_per_file[i], kernels[i]) << files[i];
  // GPU rows belong to their file's main process, whose rank is the file's rank.
  for (size_t i = 0; i < t.events.size(); ++i) {
    if (t.events.type[i] != EventType::kKernel) continue;
    const ProcessInfo& p = t.processes[t.events.process[i]];
    EXPECT_GE(p.rank, 0);
  }
}

TEST(KinetoRealTest, BeforeFixOutOfOrderKeptAsIs) {
  TELLER_REQUIRE_REAL_DATA("kineto/before_fix_trace.json");
  const Trace& t = ImportOk(kReal + "/kineto/before_fix_trace.json");
  // derived by: kineto_golden.py -> {'range': 4, 'runtime': 1, 'flow': 4, 'kernel': 1,
  //   'sync': 2, 'mark': 2} unknown {'Trace': 1} rows 10; 3 out-of-order X pairs.
  const auto c = CountTypes(t);
  EXPECT_EQ(t.events.size(), 10u);
  EXPECT_EQ(c.at(EventType::kSync), 2u);
  EXPECT_EQ(c.at(EventType::kMark), 2u);
  bool out_of_order = false;
  for (size_t i = 1; i < t.events.size(); ++i) {
    out_of_order |= t.events.start_ns[i] < t.events.start_ns[i - 1];
  }
  EXPECT_TRUE(out_of_order);  // not sorted by the importer
  // Kernel, by hand: base 1775078550000000000 + 88437691101.749 us -> ...+88437691101749.
  for (size_t i = 0; i < t.events.size(); ++i) {
    if (t.events.type[i] != EventType::kKernel) continue;
    EXPECT_EQ(t.events.start_ns[i], 1775078550000000000LL + 88437691101749LL);
    EXPECT_EQ(t.events.end_ns[i], 1775078550000000000LL + 88437691101749LL + 20);
    EXPECT_EQ(t.events.correlation[i], 1u);
  }
}

TEST(KinetoRealTest, BaseTimeAfterTraceEvents) {
  TELLER_REQUIRE_REAL_DATA("hta/amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz");
  // hta/amd_trace: top-level keys [..., 'traceEvents', 'traceName', 'displayTimeUnit',
  // 'baseTimeNanoseconds'] (kineto_golden.py prints them). First kernel: ts 4203669603771.648,
  // dur 6.88, base 1735632360000000000, args device 2 stream 0 correlation 118.
  // By hand: 1735632360000000000 + 4203669603771648 = 1739836029603771648.
  const Trace& t = ImportOk(kReal + "/hta/amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz");
  long row = -1;
  for (size_t i = 0; i < t.events.size() && row < 0; ++i) {
    if (t.events.type[i] == EventType::kKernel) row = static_cast<long>(i);
  }
  ASSERT_GE(row, 0);
  EXPECT_EQ(t.events.start_ns[row], 1739836029603771648LL);
  EXPECT_EQ(t.events.end_ns[row], 1739836029603771648LL + 6880);
  EXPECT_EQ(t.events.device[row], 2u);
  EXPECT_EQ(t.events.stream[row], 0u);
  EXPECT_EQ(t.events.correlation[row], 118u);
  EXPECT_EQ(t.events.external_id[row], 13u);
}

TEST(KinetoRealTest, TraceFilterNoFlows) {
  TELLER_REQUIRE_REAL_DATA("hta/trace_filter__sampled_rank-0.json.gz");
  const Trace& t = ImportOk(kReal + "/hta/trace_filter__sampled_rank-0.json.gz");
  // derived by: kineto_golden.py -> {'range': 2402, 'kernel': 1154, 'runtime': 1204,
  //   'memcpy': 40, 'memset': 10} unknown {'Trace': 1}; no s/f events at all.
  EXPECT_EQ(t.counters.Get("kineto.flow_events"), 0u);
  const auto c = CountTypes(t);
  EXPECT_EQ(c.at(EventType::kKernel), 1154u);
  EXPECT_EQ(c.at(EventType::kRuntime), 1204u);
  // Binding by correlation still possible: every GPU op has a runtime partner (MANIFEST:
  // linked via args.correlation = 1204 of 1204 GPU-side events).
  std::set<uint64_t> host;
  for (size_t i = 0; i < t.events.size(); ++i) {
    if (t.events.type[i] == EventType::kRuntime) host.insert(t.events.correlation[i]);
  }
  size_t linked = 0;
  for (size_t i = 0; i < t.events.size(); ++i) {
    if (IsGpuWork(t.events.type[i])) linked += host.count(t.events.correlation[i]);
  }
  EXPECT_EQ(linked, 1204u);
  EXPECT_EQ(t.processes[0].rank, 0);
  EXPECT_EQ(t.processes[0].world_size, 128);
}

TEST(KinetoRealTest, MtiaUnknownCategoriesCounted) {
  TELLER_REQUIRE_REAL_DATA("hta/mtia_inference_trace__mtia_inference_rank_0.json.gz");
  const Trace& t = ImportOk(kReal + "/hta/mtia_inference_trace__mtia_inference_rank_0.json.gz");
  // derived by: kineto_golden.py -> {'range': 12042, 'mark': 2, 'flow': 1801} unknown
  //   {'Trace': 1, 'mtia_ccp_events': 1313, 'mtia_runtime': 823} rows 12044
  EXPECT_EQ(t.events.size(), 12044u);
  EXPECT_EQ(t.counters.Get("kineto.unknown_category:mtia_ccp_events"), 1313u);
  EXPECT_EQ(t.counters.Get("kineto.unknown_category:mtia_runtime"), 823u);
  EXPECT_EQ(t.counters.Get("kineto.unknown_category"), 1313u + 823u + 1u);
}

TEST(KinetoRealTest, ExecutionTraceIsNotAChromeTrace) {
  TELLER_REQUIRE_REAL_DATA("hta/execution_trace__benchmark_simple_add_et.json.gz");
  Trace t;
  const Status s = ImportKineto(kReal + "/hta/execution_trace__benchmark_simple_add_et.json.gz", t);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("not a Chrome trace (no traceEvents)"), std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("execution_trace__benchmark_simple_add_et.json.gz"),
            std::string::npos);
  EXPECT_EQ(t.events.size(), 0u);
  EXPECT_TRUE(t.processes.empty());
}

// Windowed parsing must give exactly the rows of a single-window parse.
TEST(KinetoRealTest, SmallWindowsMatchOneWindow) {
  TELLER_REQUIRE_REAL_DATA("param_dlrm_8rank/worker1_step_12.1694128201556.pt.trace.json.gz");
  const std::string file =
      kReal + "/param_dlrm_8rank/worker1_step_12.1694128201556.pt.trace.json.gz";
  SetKinetoWindowBytesForTesting(size_t{1} << 40);  // one window
  const Trace& whole = ImportOk(file);
  SetKinetoWindowBytesForTesting(1000);
  const Trace& windowed = ImportOk(file);
  SetKinetoWindowBytesForTesting(0);
  ASSERT_EQ(whole.events.size(), windowed.events.size());
  for (size_t i = 0; i < whole.events.size(); ++i) {
    ASSERT_EQ(whole.events.start_ns[i], windowed.events.start_ns[i]) << i;
    ASSERT_EQ(whole.strings.Get(whole.events.name[i]),
              windowed.strings.Get(windowed.events.name[i]));
    ASSERT_EQ(whole.events.correlation[i], windowed.events.correlation[i]);
    ASSERT_EQ(whole.strings.Get(whole.events.signature[i]),
              windowed.strings.Get(windowed.events.signature[i]));
  }
  EXPECT_EQ(whole.counters.items(), windowed.counters.items());
}

// ---------------------------------------------------------------------------------------
// Synthetic and damaged input

TEST(KinetoBadInputTest, TruncatedGzip) {
  TELLER_REQUIRE_REAL_DATA("tracelens/b200__eager_trace.json.gz");
  TempDir dir;
  const std::string gz = ReadAll(kReal + "/tracelens/b200__eager_trace.json.gz");
  const std::string path = dir.Write("half.json.gz", gz.substr(0, gz.size() / 2));
  Trace t;
  const Status s = ImportKineto(path, t);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(path + ": truncated gzip stream"), std::string::npos) << s.message();
  EXPECT_EQ(t.events.size(), 0u);
}

TEST(KinetoBadInputTest, CorruptGzip) {
  TELLER_REQUIRE_REAL_DATA("kineto/resnet50_nw0_worker0.1623143089861.pt.trace.json.gz");
  TempDir dir;
  std::string gz = ReadAll(kReal + "/kineto/resnet50_nw0_worker0.1623143089861.pt.trace.json.gz");
  for (size_t i = 1000; i < 1400; ++i) gz[i] = static_cast<char>(gz[i] ^ 0x5a);
  const std::string path = dir.Write("bad.json.gz", gz);
  Trace t;
  const Status s = ImportKineto(path, t);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("corrupt gzip data at byte"), std::string::npos) << s.message();
}

TEST(KinetoBadInputTest, MultiMemberGzip) {
  // Two members: the JSON split in the middle of an event; gunzip concatenates them.
  const std::string json = TraceJson(
      "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"a\",\"pid\":1,\"tid\":2,\"ts\":1,\"dur\":2},\n"
      "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,\"tid\":7,\"ts\":3,\"dur\":1,"
      "\"args\":{\"correlation\":5}}");
  const std::string gz = Gzip(json.substr(0, 40)) + Gzip(json.substr(40));
  Trace t;
  const Status s = ImportKinetoBytes(gz, "multi.json.gz", t);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(t.events.size(), 2u);
}

TEST(KinetoBadInputTest, InvalidJsonNamesFileAndOffset) {
  TempDir dir;
  const std::string text = TraceJson(
      "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"a\",\"pid\":1,\"tid\":2,\"ts\":1,\"dur\":2},\n"
      "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"b\" \"pid\":1}");  // missing comma
  const std::string path = dir.Write("broken.json", text);
  Trace t;
  const Status s = ImportKineto(path, t);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("at byte"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("expected"), std::string::npos) << s.message();
  EXPECT_EQ(t.events.size(), 0u);  // nothing kept from a file that failed
}

TEST(KinetoBadInputTest, LogFileIsAnError) {
  TempDir dir;
  const std::string path = dir.Write(
      "server.log", "INFO 06-10 06:16:58 [api_server.py:1] vLLM API server version 0.9.0\n");
  Trace t;
  const Status s = ImportKineto(path, t);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("server.log"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("at byte 0"), std::string::npos) << s.message();
}

TEST(KinetoBadInputTest, EmptyAndMissingFiles) {
  TempDir dir;
  Trace t;
  Status s = ImportKineto(dir.Write("empty.json", ""), t);
  EXPECT_FALSE(s.ok());
  s = ImportKineto("/nonexistent/trace.json", t);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("/nonexistent/trace.json: cannot open"), std::string::npos);
  Trace t2;
  s = ImportKinetoBytes("{\"traceEvents\": 5}", "x.json", t2);
  EXPECT_FALSE(s.ok());
  s = ImportKinetoBytes("[1,2,3]", "x.json", t2);
  EXPECT_FALSE(s.ok());
}

TEST(KinetoBadInputTest, MissingAndWrongTypedFields) {
  const Trace& t = ImportText(TraceJson(
      // no name, no ts, no ph: skipped and counted
      "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"pid\":1,\"tid\":1,\"ts\":1,\"dur\":1},\n"
      "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"n\",\"pid\":1,\"tid\":1,\"dur\":1},\n"
      "{\"cat\":\"cpu_op\",\"name\":\"n\",\"pid\":1,\"tid\":1,\"ts\":1},\n"
      // wrong types: name a number, ts an object, correlation a string, args an array
      "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":7,\"pid\":1,\"tid\":1,\"ts\":1,\"dur\":1},\n"
      "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"t\",\"pid\":1,\"tid\":1,\"ts\":{},\"dur\":1},\n"
      "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"r\",\"pid\":1,\"tid\":1,\"ts\":1,"
      "\"dur\":1,\"args\":{\"correlation\":\"abc\"}},\n"
      "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"a\",\"pid\":1,\"tid\":1,\"ts\":1,\"dur\":1,"
      "\"args\":[1]},\n"
      // a quoted ts is read but counted; missing dur keeps the event as an instant range
      "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"q\",\"pid\":1,\"tid\":1,\"ts\":\"5.5\"},\n"
      "42, \"not an event\", null"));
  EXPECT_EQ(t.counters.Get("kineto.missing_field"), 5u);  // 3 missing + name 7 + ts {}
  EXPECT_EQ(t.counters.Get("kineto.wrong_type"), 5u);     // name, ts, correlation, args, "5.5"
  EXPECT_EQ(t.counters.Get("kineto.missing_duration"), 1u);
  EXPECT_EQ(t.counters.Get("kineto.non_object_event"), 3u);
  ASSERT_EQ(t.events.size(), 3u);  // r, a, q
  const long q = FindRow(t, EventType::kRange, "q");
  ASSERT_GE(q, 0);
  EXPECT_EQ(t.events.start_ns[q], 5500);
  EXPECT_EQ(t.events.end_ns[q], 5500);
}

TEST(KinetoBadInputTest, NegativeDurationKeptAsInstant) {
  const Trace& t = ImportText(
      TraceJson("{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,\"tid\":7,\"ts\":100.5,"
                "\"dur\":-3.25}"));
  ASSERT_EQ(t.events.size(), 1u);
  EXPECT_EQ(t.counters.Get("kineto.negative_duration"), 1u);
  EXPECT_EQ(t.events.start_ns[0], 100500);
  EXPECT_EQ(t.events.end_ns[0], 100500);
}

TEST(KinetoBadInputTest, DuplicateCorrelationCountedAndKept) {
  const Trace& t = ImportText(TraceJson(
      "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":9,"
      "\"tid\":9,\"ts\":1,\"dur\":1,\"args\":{\"correlation\":42}},\n"
      "{\"ph\":\"X\",\"cat\":\"cuda_driver\",\"name\":\"cuLaunchKernel\",\"pid\":9,\"tid\":9,"
      "\"ts\":2,\"dur\":1,\"args\":{\"correlation\":42}},\n"
      "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":9,"
      "\"tid\":9,\"ts\":3,\"dur\":1,\"args\":{\"correlation\":42}},\n"
      "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,\"tid\":7,\"ts\":4,\"dur\":1,"
      "\"args\":{\"correlation\":42}}"));
  EXPECT_EQ(t.events.size(), 4u);
  EXPECT_EQ(t.counters.Get("kineto.duplicate_correlation"), 2u);
}

TEST(KinetoSyntheticTest, PhasesAndIds) {
  const Trace& t = ImportText(TraceJson(
      "{\"ph\":\"B\",\"cat\":\"user_annotation\",\"name\":\"step\",\"pid\":5,\"tid\":6,\"ts\":10},"
      "\n"
      "{\"ph\":\"E\",\"cat\":\"user_annotation\",\"name\":\"step\",\"pid\":5,\"tid\":6,\"ts\":20},"
      "\n"
      "{\"ph\":\"I\",\"name\":\"mark\",\"pid\":\"Traces\",\"tid\":\"PyTorch "
      "Profiler\",\"ts\":15},\n"
      "{\"ph\":\"C\",\"name\":\"counter\",\"pid\":5,\"tid\":6,\"ts\":15},\n"
      "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":5,\"tid\":0,\"args\":{\"name\":\"python\"}},"
      "\n"
      "{\"ph\":\"s\",\"id\":1,\"pid\":5,\"tid\":6,\"ts\":1,\"cat\":\"ac2g\",\"name\":\"ac2g\"},\n"
      "{\"ph\":\"f\",\"id\":1,\"pid\":0,\"tid\":7,\"ts\":1,\"cat\":\"async_cpu_to_gpu\"},\n"
      "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"other\",\"pid\":77,\"tid\":1,\"ts\":1,\"dur\":1}"
      ",\n"
      "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":3,\"tid\":\"stream 9\",\"ts\":1,"
      "\"dur\":1},\n"
      "{\"ph\":\"X\",\"cat\":\"record_param_comms\",\"name\":\"x\",\"pid\":5,\"tid\":6,\"ts\":1,"
      "\"dur\":1},\n"
      "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"record_param_comms\",\"pid\":5,\"tid\":6,"
      "\"ts\":1694128201426674.1239,\"dur\":0.0004,\"args\":{\"In msg nelems\":1000,"
      "\"dtype\":\"Float\",\"Collective name\":\"allreduce\"}}",
      "\"distributedInfo\": {\"rank\": 3, \"world_size\": 4, \"pg_config\": [{\"a\":1}]},"));
  const auto c = CountTypes(t);
  EXPECT_EQ(c.at(EventType::kPush), 1u);
  EXPECT_EQ(c.at(EventType::kPop), 1u);
  EXPECT_EQ(c.at(EventType::kMark), 1u);
  EXPECT_EQ(c.at(EventType::kKernel), 1u);
  EXPECT_EQ(c.at(EventType::kRange), 2u);
  EXPECT_EQ(t.counters.Get("kineto.unsupported_phase"), 1u);
  EXPECT_EQ(t.counters.Get("kineto.flow_events"), 2u);
  EXPECT_EQ(t.counters.Get("kineto.unknown_category:record_param_comms"), 1u);
  EXPECT_EQ(t.counters.Get("kineto.hashed_tid"), 1u);  // "PyTorch Profiler"
  // Main process: pid 5 (4 host rows) before pid 77 (1).
  ASSERT_EQ(t.processes.size(), 2u);
  EXPECT_EQ(t.processes[0].pid, 5);
  EXPECT_EQ(t.processes[1].pid, 77);
  EXPECT_EQ(t.processes[0].rank, 3);
  EXPECT_EQ(t.processes[1].world_size, 4);
  const long k = FindRow(t, EventType::kKernel, "k");
  ASSERT_GE(k, 0);
  EXPECT_EQ(t.events.process[k], 0u);
  EXPECT_EQ(t.events.device[k], 3u);
  EXPECT_EQ(t.events.stream[k], 9u);
  const long mark = FindRow(t, EventType::kMark, "mark");
  EXPECT_EQ(t.events.process[mark], 0u);
  // ts text 1694128201426674.1239 us -> 1694128201426674124 ns exactly (a double would
  // give ...674112 or so); dur 0.0004 us rounds to 0.
  const long comm = FindRow(t, EventType::kRange, "record_param_comms");
  ASSERT_GE(comm, 0);
  EXPECT_EQ(t.events.start_ns[comm], 1694128201426674124LL);
  EXPECT_EQ(t.events.end_ns[comm], 1694128201426674124LL);
  EXPECT_EQ(t.events.bytes[comm], 4000u);
  EXPECT_EQ(t.processes[t.events.process[FindRow(t, EventType::kRange, "other")]].pid, 77);
}

// A cut candidate inside an event (an args array of objects split over lines) must be
// rejected and the window re-parsed: same rows as one window.
TEST(KinetoSyntheticTest, BogusCutInsideEventIsRolledBack) {
  std::string events;
  for (int i = 0; i < 200; ++i) {
    if (i > 0) events += ",\n";
    events += "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"op" + std::to_string(i) +
              "\",\"pid\":1,\"tid\":1,\"ts\":" + std::to_string(i) +
              ",\"dur\":1,\"args\":{\"list\":[{\"a\":1},\n   {\"b\":\"},\\n{\"},\n {\"c\":3}]}}";
  }
  const std::string json = TraceJson(events);
  SetKinetoWindowBytesForTesting(300);
  const Trace& windowed = ImportText(json);
  SetKinetoWindowBytesForTesting(0);
  const Trace& whole = ImportText(json);
  EXPECT_EQ(windowed.events.size(), 200u);
  EXPECT_EQ(whole.events.size(), 200u);
  EXPECT_EQ(windowed.events.start_ns, whole.events.start_ns);
  EXPECT_EQ(windowed.counters.items(), whole.counters.items());
}

TEST(KinetoSyntheticTest, FuzzLikeInputsNeverCrash) {
  // Prefixes of a valid trace, at every length: errors, never crashes.
  const std::string json = TraceJson(
      "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"a\\\"b\",\"pid\":1,\"tid\":2,\"ts\":1.5,"
      "\"dur\":2,\"args\":{\"External id\":3}},\n"
      "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,\"tid\":7,\"ts\":3,\"dur\":1}",
      "\"baseTimeNanoseconds\": 1000,");
  for (size_t n = 0; n < json.size(); ++n) {
    Trace t;
    (void)ImportKinetoBytes(json.substr(0, n), "prefix.json", t);
  }
  Trace t;
  ASSERT_TRUE(ImportKinetoBytes(json, "full.json", t).ok());
  EXPECT_EQ(t.events.size(), 2u);
  EXPECT_EQ(t.events.start_ns[0], 1000 + 1500);
  EXPECT_EQ(t.strings.Get(t.events.name[0]), "a\"b");
}

// ---------------------------------------------------------------------------------------
// Forms of the trace-event format, and input that is not one trace (issue 14)

// `n` cpu_op events, one per line as Kineto writes them, op<i> at ts = 10 * i us.
std::vector<std::string> NumberedEvents(int n) {
  std::vector<std::string> events;
  for (int i = 0; i < n; ++i) {
    events.push_back("{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"op" + std::to_string(i) +
                     "\",\"pid\":1,\"tid\":1,\"ts\":" + std::to_string(10 * i) +
                     ",\"dur\":1,\"args\":{\"External id\":" + std::to_string(i) + "}}");
  }
  return events;
}

std::string Join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i > 0 ? sep : "") + parts[i];
  return out;
}

// The start times the numbered events must give: 10 * i us in ns, in file order.
std::vector<int64_t> NumberedStarts(int n) {
  std::vector<int64_t> starts;
  for (int i = 0; i < n; ++i) starts.push_back(int64_t{10'000} * i);
  return starts;
}

TEST(KinetoFormsTest, ByteOrderMarkAndArrayFormReadAsTraces) {
  const auto events = NumberedEvents(300);
  const std::string body = Join(events, ",\n");
  const std::vector<std::pair<std::string, std::string>> forms = {
      {"object", TraceJson(body)},
      {"bom object", "\xEF\xBB\xBF" + TraceJson(body)},
      {"array", "[\n" + body + "\n]\n"},
      {"bom array", "\xEF\xBB\xBF  [\n" + body + "\n]"},
      // The format allows the final ']' to be missing, also after a trailing comma.
      {"array without ]", "[\n" + body + "\n"},
      {"array without ] after a comma", "[\n" + body + ",\n\n"},
  };
  for (const size_t window : {size_t{0}, size_t{300}}) {  // one window, and many cuts
    SetKinetoWindowBytesForTesting(window);
    for (const auto& [what, text] : forms) {
      Status s;
      const Trace& t = ImportText(text, &s);
      ASSERT_TRUE(s.ok()) << what << ": " << s.message();
      EXPECT_EQ(t.events.start_ns, NumberedStarts(300)) << what << ", window " << window;
      EXPECT_EQ(t.strings.Get(t.events.name[299]), "op299") << what;
      EXPECT_EQ(t.counters.items().size(), 0u) << what;
    }
  }
  SetKinetoWindowBytesForTesting(0);
  // An empty array is an empty trace; an array of non-objects is not a trace.
  Status s;
  EXPECT_EQ(ImportText("[]", &s).events.size(), 0u);
  EXPECT_TRUE(s.ok()) << s.message();
  ImportText("[1, 2, 3]", &s);
  EXPECT_EQ(s.message(), "mem.json: not a Chrome trace (an array without event objects)");
  // An array form cut inside an event is truncated, not closed by guessing; the `]` added
  // after a '}' that closed only the event's args is no input, and no error points past
  // the input's end.
  ImportText("[\n" + events[0] + ",\n" + events[1].substr(0, 30), &s);
  EXPECT_FALSE(s.ok());
  const std::string cut_after_args =
      "[\n" + events[0] + ",\n" + events[1].substr(0, events[1].size() - 1);
  ImportText(cut_after_args, &s);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message().rfind(
                "mem.json: invalid JSON at byte " + std::to_string(cut_after_args.size()), 0),
            0u)
      << s.message();
}

TEST(KinetoFormsTest, ConcatenatedDocumentsAreAnErrorNotDropped) {
  const std::string first = TraceJson(Join(NumberedEvents(3), ",\n"));
  const std::string second = TraceJson(Join(NumberedEvents(5), ",\n"));
  for (const std::string& sep : {std::string(), std::string("\n"), std::string(" \n\t")}) {
    Status s;
    const Trace& t = ImportText(first + sep + second, &s);
    ASSERT_FALSE(s.ok()) << "separator of " << sep.size();
    // The second document starts right after the first and its separator.
    EXPECT_EQ(s.message().rfind("mem.json: invalid JSON at byte " +
                                    std::to_string(first.size() + sep.size()) +
                                    ": a second JSON document follows the trace",
                                0),
              0u)
        << s.message();
    EXPECT_EQ(t.events.size(), 0u);
  }
  // Also for the array form, and after whitespace that is fine on its own.
  Status s;
  ImportText("[" + NumberedEvents(2)[0] + "]\n[" + NumberedEvents(2)[1] + "]", &s);
  EXPECT_NE(s.message().find("a second JSON document"), std::string::npos) << s.message();
  EXPECT_TRUE((ImportText(first + " \n\n", &s), s.ok())) << s.message();
  // Two gzip members, each a whole trace (cat a.json.gz b.json.gz): the same error, which
  // names the members; a trace split over members still reads whole (MultiMemberGzip).
  Trace t;
  s = ImportKinetoBytes(Gzip(first) + Gzip(second), "two.json.gz", t);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("two.json.gz: invalid JSON at byte " + std::to_string(first.size())),
            std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("the file has 2 gzip members"), std::string::npos) << s.message();
  EXPECT_EQ(t.events.size(), 0u);
}

TEST(KinetoFormsTest, TruncatedJsonIsReportedWhereItEnds) {
  // 2000 events, about 190 KB: cut at 60%, at an event boundary, inside an event and
  // inside a number; with one window and with the windowed parse, the error must name
  // the end of the input (where the file was cut), not the start of the last window.
  const auto events = NumberedEvents(2000);
  const std::string json = TraceJson(Join(events, ",\n"));
  const size_t at60 = json.size() * 6 / 10;
  const size_t boundary = json.find("},\n", at60) + 3;   // after "},\n": the next event is gone
  const size_t inside = json.find("\"pid\"", at60);      // inside an object
  const size_t number = json.find("\"ts\":", at60) + 7;  // inside the digits of ts
  for (const size_t window : {size_t{0}, size_t{4096}}) {
    SetKinetoWindowBytesForTesting(window);
    for (const size_t cut : {boundary, inside, number}) {
      Status s;
      ImportText(json.substr(0, cut), &s);
      ASSERT_FALSE(s.ok());
      EXPECT_EQ(s.message().rfind("mem.json: invalid JSON at byte " + std::to_string(cut) +
                                      " (the end of the input): the file ends inside an "
                                      "object or array, it is truncated",
                                  0),
                0u)
          << "cut " << cut << " of " << json.size() << ", window " << window << ": " << s.message();
    }
    // Cut inside a string: simdjson's stage 1 finds it; the offset is the opening quote
    // of the unclosed string, the last one before the cut.
    const size_t in_name = json.find("\"op", at60) + 3;
    Status s;
    ImportText(json.substr(0, in_name), &s);
    EXPECT_NE(s.message().find("at byte " + std::to_string(in_name - 3)), std::string::npos)
        << s.message();
    // A raw control character (ESC) inside a name, as a corrupted file can have: the offset
    // is that byte's, not the start of the document.
    std::string escaped = json;
    const size_t esc = json.find("\"op", at60) + 2;
    escaped[esc] = '\x1b';
    ImportText(escaped, &s);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.message().find("at byte " + std::to_string(esc) + ":"), std::string::npos)
        << s.message();
  }
  SetKinetoWindowBytesForTesting(0);
}

TEST(KinetoFormsTest, GunzipLimitComesFromTheEnvironment) {
  const std::string json = TraceJson(Join(NumberedEvents(2000), ",\n"));  // ~190 KB
  ASSERT_GT(json.size(), size_t{64} << 10);
  const std::string gz = Gzip(json);
  setenv("TELLER_MAX_GUNZIP_BYTES", "64K", 1);
  Trace t;
  const Status s = ImportKinetoBytes(gz, "big.json.gz", t);
  unsetenv("TELLER_MAX_GUNZIP_BYTES");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(),
            "big.json.gz: gunzipped data larger than 65536 bytes (the limit set by "
            "TELLER_MAX_GUNZIP_BYTES)");
  EXPECT_EQ(t.events.size(), 0u);
  Trace u;
  ASSERT_TRUE(ImportKinetoBytes(gz, "big.json.gz", u).ok());  // the default guard lets it be
  EXPECT_EQ(u.events.size(), 2000u);
}

// ---------------------------------------------------------------------------------------
// Signatures (docs/signature.md)

std::string_view SignatureOf(const Trace& t, long row) {
  return row < 0 ? std::string_view("<no row>") : t.strings.Get(t.events.signature[row]);
}

// FNV-1a 64 of every row's signature, each followed by '\n', in row order (the same hash
// tests/golden_scripts/signature_golden.py prints).
uint64_t SignatureHash(const Trace& t) {
  uint64_t h = 0xcbf29ce484222325ull;
  auto add = [&h](char c) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ull;
  };
  for (const StringId id : t.events.signature) {
    for (const char c : t.strings.Get(id)) add(c);
    add('\n');
  }
  return h;
}

// Each expected string is written by hand from the grammar.
TEST(KinetoSignatureTest, HandWrittenArgs) {
  const Trace& t = ImportText(TraceJson(
      // Shapes and types of a host op.
      R"j({"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":1,"dur":5,)j"
      R"j("args":{"External id":7,"Input Dims":[[8, 4096], [4096, 4096]],)j"
      R"j("Input type":["float", "float"]}},)j"
      "\n"
      // Keys in another order, whitespace and newlines inside the arrays, an empty type,
      // a type with a space, a tensor list (depth 3), reserved characters in a type.
      R"j({"ph":"X","cat":"user_annotation","name":"op2","pid":1,"tid":1,"ts":2,"dur":1,)j"
      R"j("args":{"Input type":["long int", "", "a,b]"],"Concrete Inputs":["", "3"],)j"
      R"j("Input Dims":[[],)j"
      "\n"
      R"j(  [3], [[1, 2], [3]]]}},)j"
      "\n"
      // A kernel: grid and block; registers per thread are not part of it; shared
      // memory 0 is left out.
      R"j({"ph":"X","cat":"kernel","name":"gemm","pid":0,"tid":7,"ts":3,"dur":1,)j"
      R"j("args":{"grid":[128, 1, 1],"block":[256, 1, 1],"registers per thread":40,)j"
      R"j("shared memory":0,"stream":7,"correlation":5}},)j"
      "\n"
      // An NCCL kernel: collective first, then geometry and shared memory.
      R"j({"ph":"X","cat":"kernel","name":"ncclKernel_AllReduce","pid":0,"tid":40,"ts":4,)j"
      R"j("dur":1,"args":{"shared memory":87568,"grid":[8,1,1],"block":[544,1,1],)j"
      R"j("Collective name":"allreduce","In msg nelems":1048576,"Out msg nelems":1048576,)j"
      R"j("Group size":8,"dtype":"Float","Process Group Name":"0"}},)j"
      "\n"
      // record_param_comms: Out before In in the input, canonical order in the output.
      R"j({"ph":"X","cat":"cpu_op","name":"record_param_comms","pid":1,"tid":1,"ts":5,)j"
      R"j("dur":1,"args":{"Out msg nelems":8192,"Group size":8,"In msg nelems":1024,)j"
      R"j("dtype":"BFloat16","Collective name":"_allgather_base"}},)j"
      "\n"
      // Copies: the name says the kind (nothing added), or does not (copy=).
      R"j({"ph":"X","cat":"gpu_memcpy","name":"Memcpy HtoD (Host -> Device)","pid":0,)j"
      R"j("tid":7,"ts":6,"dur":1,"args":{"bytes":64,"kind":"HtoD"}},)j"
      "\n"
      R"j({"ph":"X","cat":"gpu_memcpy","name":"copy","pid":0,"tid":7,"ts":7,"dur":1,)j"
      R"j("args":{"bytes":64,"kind":"DtoD"}},)j"
      "\n"
      // No signature: a launch call (ROCm writes the geometry on it), a kernel with grid
      // but no block, a grid that is not three numbers, an op without args, a dtype alone,
      // a memset.
      R"j({"ph":"X","cat":"cuda_runtime","name":"hipLaunchKernel","pid":1,"tid":1,"ts":8,)j"
      R"j("dur":1,"args":{"grid":[3,1,1],"block":[128,1,1],"shared memory":0}},)j"
      "\n"
      R"j({"ph":"X","cat":"kernel","name":"k_noblock","pid":0,"tid":7,"ts":9,"dur":1,)j"
      R"j("args":{"grid":[3,1,1]}},)j"
      "\n"
      R"j({"ph":"X","cat":"kernel","name":"k_badgrid","pid":0,"tid":7,"ts":10,"dur":1,)j"
      R"j("args":{"grid":"grid(100,)","block":[1,1,1]}},)j"
      "\n"
      R"j({"ph":"X","cat":"cpu_op","name":"noargs","pid":1,"tid":1,"ts":11,"dur":1},)j"
      "\n"
      R"j({"ph":"X","cat":"cpu_op","name":"dtypeonly","pid":1,"tid":1,"ts":12,"dur":1,)j"
      R"j("args":{"dtype":"Float"}},)j"
      "\n"
      R"j({"ph":"X","cat":"gpu_memset","name":"Memset (Device)","pid":0,"tid":7,"ts":13,)j"
      R"j("dur":1,"args":{"bytes":64}},)j"
      "\n"
      // A type list with a non-string entry keeps its dims but no types; a collective
      // name with a space is escaped.
      R"j({"ph":"X","cat":"cpu_op","name":"odd","pid":1,"tid":1,"ts":14,"dur":1,)j"
      R"j("args":{"Input Dims":[[2]],"Input type":["float", 3]}},)j"
      "\n"
      R"j({"ph":"X","cat":"cpu_op","name":"spaced","pid":1,"tid":1,"ts":15,"dur":1,)j"
      R"j("args":{"Collective name":"all reduce","Group size":"4"}},)j"
      "\n"
      // PyTorch 1.8-1.9 spell it "Input dims" (an Operator of a 2021 ResNet-50 trace).
      R"j({"ph":"X","cat":"Operator","name":"aten::cudnn_convolution","pid":1,"tid":1,)j"
      R"j("ts":15,"dur":1,"args":{"Input dims":[[32, 3, 224, 224], [64, 3, 7, 7], []],)j"
      R"j("Input type":[],"Output dims":[]}},)j"
      "\n"
      // The same call again: the same id.
      R"j({"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":16,"dur":5,)j"
      R"j("args":{"External id":8,"Input Dims":[[8,4096],[4096,4096]],)j"
      R"j("Input type":["float","float"]}})j"));
  ASSERT_EQ(t.events.signature.size(), t.events.size());
  EXPECT_EQ(SignatureOf(t, FindRow(t, EventType::kRange, "aten::mm")),
            "dims=[[8,4096],[4096,4096]] types=[float,float]");
  EXPECT_EQ(SignatureOf(t, FindRow(t, EventType::kRange, "op2")),
            "dims=[[],[3],[[1,2],[3]]] types=[long int,,a\\,b\\]]");
  EXPECT_EQ(SignatureOf(t, FindRow(t, EventType::kRange, "aten::cudnn_convolution")),
            "dims=[[32,3,224,224],[64,3,7,7],[]] types=[]");
  EXPECT_EQ(SignatureOf(t, FindRow(t, EventType::kKernel, "gemm")), "grid=128,1,1 block=256,1,1");
  EXPECT_EQ(SignatureOf(t, FindRow(t, EventType::kKernel, "ncclKernel_AllReduce")),
            "coll=allreduce in=1048576 out=1048576 group=8 dtype=Float grid=8,1,1 "
            "block=544,1,1 smem=87568");
  EXPECT_EQ(SignatureOf(t, FindRow(t, EventType::kRange, "record_param_comms")),
            "coll=_allgather_base in=1024 out=8192 group=8 dtype=BFloat16");
  EXPECT_EQ(SignatureOf(t, FindRow(t, EventType::kMemcpy, "Memcpy HtoD (Host -> Device)")), "");
  EXPECT_EQ(SignatureOf(t, FindRow(t, EventType::kMemcpy, "copy")), "copy=DtoD");
  EXPECT_EQ(SignatureOf(t, FindRow(t, EventType::kRuntime, "hipLaunchKernel")), "");
  EXPECT_EQ(SignatureOf(t, FindRow(t, EventType::kKernel, "k_noblock")), "");
  EXPECT_EQ(SignatureOf(t, FindRow(t, EventType::kKernel, "k_badgrid")), "");
  EXPECT_EQ(SignatureOf(t, FindRow(t, EventType::kRange, "noargs")), "");
  EXPECT_EQ(SignatureOf(t, FindRow(t, EventType::kRange, "dtypeonly")), "");
  EXPECT_EQ(SignatureOf(t, FindRow(t, EventType::kMemset, "Memset (Device)")), "");
  EXPECT_EQ(SignatureOf(t, FindRow(t, EventType::kRange, "odd")), "dims=[[2]]");
  EXPECT_EQ(SignatureOf(t, FindRow(t, EventType::kRange, "spaced")), "coll=all\\ reduce group=4");
  // Both aten::mm rows (whitespace differs in the input) share one interned id.
  std::vector<StringId> mm;
  for (size_t i = 0; i < t.events.size(); ++i) {
    if (t.strings.Get(t.events.name[i]) == "aten::mm") mm.push_back(t.events.signature[i]);
  }
  ASSERT_EQ(mm.size(), 2u);
  EXPECT_EQ(mm[0], mm[1]);
  EXPECT_NE(mm[0], 0u);
  // Nothing of this is damage.
  EXPECT_EQ(t.counters.Get("kineto.wrong_type"), 0u);
}

// "Input type" strings are unescaped from JSON before they are written: \" and \\ stay
// characters, \u00e9 and a surrogate pair become UTF-8, and a control character (\n)
// becomes \x0a. The same shapes written with other whitespace give the same id.
TEST(KinetoSignatureTest, TypeNamesAreUnescaped) {
  const Trace& t = ImportText(TraceJson(
      R"j({"ph":"X","cat":"cpu_op","name":"a","pid":1,"tid":1,"ts":1,"dur":1,)j"
      R"j("args":{"Input type":["caf\u00e9", "a\"b\\c", "\ud83d\ude00", "x\ny", "q\/r"]}},)j"
      "\n"
      R"j({"ph":"X","cat":"cpu_op","name":"b","pid":1,"tid":1,"ts":2,"dur":1,)j"
      R"j("args":{"Input Dims":[[1,2]],"Input type":["float"]}},)j"
      "\n"
      R"j({"ph":"X","cat":"cpu_op","name":"c","pid":1,"tid":1,"ts":3,"dur":1,)j"
      R"j("args":{"Input type":[ "float" ],"Input Dims":[ [ 1 , 2 ] ]}},)j"
      "\n"
      R"j({"ph":"X","cat":"cpu_op","name":"d","pid":1,"tid":1,"ts":4,"dur":1,)j"
      R"j("args":{"Input Dims":[],"Input type":[]}})j"));
  EXPECT_EQ(SignatureOf(t, FindRow(t, EventType::kRange, "a")),
            "types=[caf\xc3\xa9,a\"b\\\\c,\xf0\x9f\x98\x80,x\\x0ay,q/r]");
  EXPECT_EQ(SignatureOf(t, FindRow(t, EventType::kRange, "b")), "dims=[[1,2]] types=[float]");
  EXPECT_EQ(t.events.signature[FindRow(t, EventType::kRange, "b")],
            t.events.signature[FindRow(t, EventType::kRange, "c")]);
  EXPECT_EQ(SignatureOf(t, FindRow(t, EventType::kRange, "d")), "dims=[] types=[]");
}

// A window cut and its rollback must not leave a signature behind or shift one.
TEST(KinetoSignatureTest, WindowsKeepSignaturesAligned) {
  std::string events;
  for (int i = 0; i < 300; ++i) {
    if (i > 0) events += ",\n";
    events += R"j({"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":)j" + std::to_string(i) +
              R"j(,"dur":1,"args":{"grid":[)j" + std::to_string(i % 7 + 1) +
              R"j(,1,1],"block":[32,1,1],"list":[{"a":1},)" + "\n" + R"(   {"b":2}]}})j";
  }
  const std::string json = TraceJson(events);
  SetKinetoWindowBytesForTesting(256);
  const Trace& windowed = ImportText(json);
  SetKinetoWindowBytesForTesting(0);
  ASSERT_EQ(windowed.events.size(), 300u);
  for (size_t i = 0; i < 300; ++i) {
    ASSERT_EQ(SignatureOf(windowed, static_cast<long>(i)),
              "grid=" + std::to_string(i % 7 + 1) + ",1,1 block=32,1,1")
        << i;
  }
}

// Real traces: every row's signature against the Python computation of the grammar
// (tests/golden_scripts/signature_golden.py), by a hash over all rows in order and by
// counts a reader can check.
TEST(KinetoSignatureRealTest, NcclParserConfigCollectives) {
  TELLER_REQUIRE_REAL_DATA("hta/nccl_parser_config__nccl_data.json.gz");
  const Trace& t = ImportOk(kReal + "/hta/nccl_parser_config__nccl_data.json.gz");
  // derived by: signature_golden.py -> rows 26934, hash 0xe8c78f55e0c7ac52
  ASSERT_EQ(t.events.size(), 26934u);
  EXPECT_EQ(SignatureHash(t), 0xe8c78f55e0c7ac52ull);
  size_t kernels = 0, with = 0, coll = 0;
  std::set<StringId> distinct, distinct_coll;
  for (size_t i = 0; i < t.events.size(); ++i) {
    if (t.events.type[i] != EventType::kKernel) continue;
    ++kernels;
    const std::string_view sig = t.strings.Get(t.events.signature[i]);
    if (sig.empty()) continue;
    ++with;
    distinct.insert(t.events.signature[i]);
    if (sig.substr(0, 5) == "coll=") {
      ++coll;
      distinct_coll.insert(t.events.signature[i]);
      // Every collective kernel is an NCCL kernel.
      EXPECT_EQ(t.strings.Get(t.events.name[i]).substr(0, 10), "ncclKernel");
    }
  }
  // derived by: signature_golden.py -> kernel: rows 2700, with signature 2700, distinct
  //   signatures 142; with coll=: 21, distinct 7
  EXPECT_EQ(kernels, 2700u);
  EXPECT_EQ(with, 2700u);
  EXPECT_EQ(distinct.size(), 142u);
  EXPECT_EQ(coll, 21u);
  EXPECT_EQ(distinct_coll.size(), 7u);
  EXPECT_EQ(SignatureOf(t, FindRow(t, EventType::kKernel,
                                   "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, "
                                   "unsigned long, ncclWork*)")),
            "coll=allreduce in=6637568 out=6637568 group=2 dtype=Float grid=8,1,1 "
            "block=544,1,1 smem=87568");
}

TEST(KinetoSignatureRealTest, Resnet50LegacyShapes) {
  TELLER_REQUIRE_REAL_DATA("kineto/resnet50_nw0_worker0.1623143089861.pt.trace.json.gz");
  const Trace& t = ImportOk(kReal + "/kineto/resnet50_nw0_worker0.1623143089861.pt.trace.json.gz");
  // derived by: signature_golden.py -> rows 57505, hash 0xfa80344d3529f38f; range: rows
  //   23646, with signature 23622, distinct signatures 501
  ASSERT_EQ(t.events.size(), 57505u);
  EXPECT_EQ(SignatureHash(t), 0xfa80344d3529f38full);
  size_t with = 0;
  std::set<StringId> distinct;
  for (size_t i = 0; i < t.events.size(); ++i) {
    if (t.events.type[i] != EventType::kRange || t.events.signature[i] == 0) continue;
    ++with;
    distinct.insert(t.events.signature[i]);
  }
  EXPECT_EQ(with, 23622u);
  EXPECT_EQ(distinct.size(), 501u);
  EXPECT_EQ(SignatureOf(t, FindRow(t, EventType::kRange, "aten::conv2d")),
            "dims=[[32,3,224,224],[64,3,7,7],[],[],[],[],[]] "
            "types=[float,float,,GenericList,GenericList,GenericList,Int]");
}

TEST(KinetoSignatureRealTest, RocmCopiesNamedByKind) {
  TELLER_REQUIRE_REAL_DATA("hta/amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz");
  const Trace& t = ImportOk(kReal + "/hta/amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz");
  // derived by: signature_golden.py -> rows 114, hash 0x53bf0cf590a97240 (the copies'
  //   names say HtoD, so they carry no copy= field; 64 ranges have shapes)
  ASSERT_EQ(t.events.size(), 114u);
  EXPECT_EQ(SignatureHash(t), 0x53bf0cf590a97240ull);
}

}  // namespace
}  // namespace teller::ingest
