// Unit tests of the CUPTI record conversion and the injection's state machines, fed
// with CUPTI structs filled by hand: no driver, no GPU.
#include "src/collect/cupti/cupti_records.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace teller::collect::cupti {
namespace {

using raw::EventKind;
using raw::EventRecord;

// Interns into a map so tests can look names up; ids start at 1 (0 = no name).
struct TestInterner {
  std::map<std::string, uint32_t> ids;
  std::vector<std::string> texts{""};

  static uint32_t Intern(void* ctx, std::string_view text) {
    auto* self = static_cast<TestInterner*>(ctx);
    auto [it, inserted] = self->ids.emplace(std::string(text), 0);
    if (inserted) {
      it->second = static_cast<uint32_t>(self->texts.size());
      self->texts.emplace_back(text);
    }
    return it->second;
  }
  InternFn fn() { return InternFn{&Intern, this}; }
  const std::string& Text(uint32_t id) const { return texts.at(id); }
};

CUpti_ActivityKernel10 MakeKernel() {
  CUpti_ActivityKernel10 k;
  std::memset(&k, 0, sizeof(k));
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.name = "ampere_sgemm_128x64_nn";
  k.start = 1'000'000;
  k.end = 1'250'000;
  k.deviceId = 3;
  k.contextId = 7;
  k.streamId = 13;
  k.correlationId = 4242;
  k.gridX = 120;
  k.gridY = 2;
  k.gridZ = 1;
  k.blockX = 256;
  k.blockY = 1;
  k.blockZ = 1;
  k.staticSharedMemory = 4096;
  k.dynamicSharedMemory = 12288;
  return k;
}

TEST(ConvertKernelTest, ConvertsEveryField) {
  TestInterner interner;
  const CUpti_ActivityKernel10 k = MakeKernel();
  const EventRecord e = ConvertKernel(k, ClockOffset(-500), interner.fn());
  EXPECT_EQ(e.kind, static_cast<uint8_t>(EventKind::kKernel));
  EXPECT_EQ(e.flags, raw::kFlagNone);
  EXPECT_EQ(interner.Text(e.name), "ampere_sgemm_128x64_nn");
  EXPECT_EQ(e.start_ns, 999'500);
  EXPECT_EQ(e.end_ns, 1'249'500);
  EXPECT_EQ(e.device, 3u);
  EXPECT_EQ(e.context, 7u);
  EXPECT_EQ(e.stream, 13u);
  EXPECT_EQ(e.correlation, 4242u);
  EXPECT_EQ(e.grid[0], 120u);
  EXPECT_EQ(e.grid[1], 2u);
  EXPECT_EQ(e.grid[2], 1u);
  EXPECT_EQ(e.block[0], 256u);
  EXPECT_EQ(e.block[1], 1u);
  EXPECT_EQ(e.block[2], 1u);
  EXPECT_EQ(e.shared_bytes, 4096u + 12288u);
  EXPECT_EQ(e.graph_id, 0u);
  EXPECT_EQ(e.value, 0u);
  EXPECT_EQ(e.tid, 0u);  // GPU work has no host thread
  EXPECT_EQ(e.aux, 0u);
  EXPECT_EQ(e.result, 0);
}

TEST(ConvertKernelTest, GraphKernelsAreFlaggedWithGraphAndNode) {
  TestInterner interner;
  CUpti_ActivityKernel10 k = MakeKernel();
  k.graphId = 9;
  k.graphNodeId = 0x1234'5678'9abcull;
  const EventRecord e = ConvertKernel(k, ClockOffset(), interner.fn());
  EXPECT_TRUE(e.flags & raw::kFlagInGraph);
  EXPECT_EQ(e.graph_id, 9u);
  EXPECT_EQ(e.value, 0x1234'5678'9abcull);
}

TEST(ConvertKernelTest, NullNameAndNegativeSizesAreSafe) {
  TestInterner interner;
  CUpti_ActivityKernel10 k = MakeKernel();
  k.name = nullptr;
  k.gridX = -1;
  k.blockX = 100000;  // beyond uint16: clamped, not wrapped
  k.dynamicSharedMemory = -5;
  const EventRecord e = ConvertKernel(k, ClockOffset(), interner.fn());
  EXPECT_EQ(e.name, 0u);
  EXPECT_EQ(e.grid[0], 0u);
  EXPECT_EQ(e.block[0], 65535u);
  EXPECT_EQ(e.shared_bytes, 4096u);
}

TEST(ConvertMemcpyTest, ConvertsEveryField) {
  CUpti_ActivityMemcpy6 m;
  std::memset(&m, 0, sizeof(m));
  m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
  m.bytes = 64ull << 20;
  m.start = 5000;
  m.end = 9000;
  m.deviceId = 1;
  m.contextId = 2;
  m.streamId = 17;
  m.correlationId = 99;
  const EventRecord e = ConvertMemcpy(m, ClockOffset(1000));
  EXPECT_EQ(e.kind, static_cast<uint8_t>(EventKind::kMemcpy));
  EXPECT_EQ(e.aux, static_cast<uint16_t>(CUPTI_ACTIVITY_MEMCPY_KIND_HTOD));
  EXPECT_EQ(e.value, 64ull << 20);
  EXPECT_EQ(e.start_ns, 6000);
  EXPECT_EQ(e.end_ns, 10000);
  EXPECT_EQ(e.device, 1u);
  EXPECT_EQ(e.context, 2u);
  EXPECT_EQ(e.stream, 17u);
  EXPECT_EQ(e.correlation, 99u);
  EXPECT_EQ(e.flags, raw::kFlagNone);
  EXPECT_EQ(e.graph_id, 0u);
  EXPECT_EQ(e.name, 0u);

  m.graphId = 4;
  const EventRecord g = ConvertMemcpy(m, ClockOffset(1000));
  EXPECT_TRUE(g.flags & raw::kFlagInGraph);
  EXPECT_EQ(g.graph_id, 4u);
}

TEST(ConvertMemsetTest, ConvertsEveryField) {
  CUpti_ActivityMemset4 m;
  std::memset(&m, 0, sizeof(m));
  m.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  m.value = 0xff;
  m.bytes = 4096;
  m.start = 100;
  m.end = 300;
  m.deviceId = 5;
  m.contextId = 6;
  m.streamId = 8;
  m.correlationId = 77;
  m.graphId = 2;
  const EventRecord e = ConvertMemset(m, ClockOffset(0));
  EXPECT_EQ(e.kind, static_cast<uint8_t>(EventKind::kMemset));
  EXPECT_EQ(e.value, 4096u);
  EXPECT_EQ(e.start_ns, 100);
  EXPECT_EQ(e.end_ns, 300);
  EXPECT_EQ(e.device, 5u);
  EXPECT_EQ(e.context, 6u);
  EXPECT_EQ(e.stream, 8u);
  EXPECT_EQ(e.correlation, 77u);
  EXPECT_TRUE(e.flags & raw::kFlagInGraph);
  EXPECT_EQ(e.graph_id, 2u);
}

TEST(ConvertSyncTest, ConvertsEveryField) {
  CUpti_ActivitySynchronization2 s;
  std::memset(&s, 0, sizeof(s));
  s.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
  s.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE;
  s.start = 2'000;
  s.end = 52'000;
  s.correlationId = 31;
  s.contextId = 4;
  s.streamId = 0xffffffffu;  // CUPTI's "no stream": kept as is
  s.cudaEventId = 12;
  s.returnValue = 0;
  const EventRecord e = ConvertSync(s, ClockOffset(-2'000));
  EXPECT_EQ(e.kind, static_cast<uint8_t>(EventKind::kSync));
  EXPECT_EQ(e.aux, static_cast<uint16_t>(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE));
  EXPECT_EQ(e.start_ns, 0);  // 2000 - 2000: a real time, even though it is zero
  EXPECT_EQ(e.end_ns, 50'000);
  EXPECT_EQ(e.correlation, 31u);
  EXPECT_EQ(e.context, 4u);
  EXPECT_EQ(e.stream, 0xffffffffu);
  EXPECT_EQ(e.value, 12u);
  EXPECT_EQ(e.result, 0);

  s.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE;
  s.returnValue = 700;  // cudaErrorIllegalAddress surfaced at the sync
  const EventRecord f = ConvertSync(s, ClockOffset());
  EXPECT_EQ(f.aux, 4u);
  EXPECT_EQ(f.result, 700);
}

TEST(ConvertOverheadTest, NamesAndFoldsTheKind) {
  TestInterner interner;
  CUpti_ActivityOverhead3 o;
  std::memset(&o, 0, sizeof(o));
  o.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
  o.overheadKind = CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH;
  o.start = 10;
  o.end = 20;
  o.correlationId = 5;
  const EventRecord e = ConvertOverhead(o, ClockOffset(5), interner.fn());
  EXPECT_EQ(e.kind, static_cast<uint8_t>(EventKind::kOverhead));
  EXPECT_EQ(interner.Text(e.name), "cupti_buffer_flush");
  EXPECT_EQ(e.aux, 1u);
  EXPECT_EQ(e.start_ns, 15);
  EXPECT_EQ(e.end_ns, 25);
  EXPECT_EQ(e.correlation, 5u);

  EXPECT_EQ(OverheadAux(CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER), 0x8001u);
  EXPECT_EQ(OverheadAux(CUPTI_ACTIVITY_OVERHEAD_UVM_ACTIVITY_INIT), 8u);
  EXPECT_EQ(OverheadKindName(CUPTI_ACTIVITY_OVERHEAD_LAZY_FUNCTION_LOADING),
            "lazy_function_loading");
  EXPECT_EQ(OverheadKindName(12345), "overhead_unknown");
}

TEST(ClockOffsetTest, ConvertsAndKeepsZeroAsMissing) {
  const ClockOffset offset(-1'700'000'000'000'000'000ll);
  EXPECT_EQ(offset.ToEventClock(1'700'000'000'123'456'789ull), 123'456'789);
  EXPECT_EQ(offset.ToEventClock(0), 0);
  EXPECT_EQ(ClockOffset().ToEventClock(42), 42);
}

// Fake clocks for MeasureClockOffset: the event clock advances by a scripted step per
// read, the CUPTI clock is the event clock + 1e9 (as CLOCK_REALTIME vs MONOTONIC).
struct FakeClocks {
  static inline int64_t event_now = 0;
  static inline std::vector<int64_t> steps;  // event clock advance per event read
  static inline size_t step_index = 0;
  static inline int cupti_failures_left = 0;

  static int64_t Event() {
    const int64_t step = step_index < steps.size() ? steps[step_index] : 100;
    ++step_index;
    event_now += step;
    return event_now;
  }
  static bool Cupti(uint64_t* out) {
    if (cupti_failures_left > 0) {
      --cupti_failures_left;
      return false;
    }
    *out = static_cast<uint64_t>(event_now + 1'000'000'000);
    return true;
  }
  static void Reset(std::vector<int64_t> s, int failures) {
    event_now = 5'000;
    steps = std::move(s);
    step_index = 0;
    cupti_failures_left = failures;
  }
};

TEST(MeasureClockOffsetTest, KeepsTheTightestBracket) {
  // Round 1: the CUPTI read happens right after a 10 ns event read, then the second
  // read is 990 ns later: a wide bracket whose midpoint is 490 ns off. Round 2 has a
  // 20 ns bracket (midpoint 10 ns after the CUPTI read).
  FakeClocks::Reset({10, 990, 10, 20}, 0);
  const std::optional<ClockOffset> offset =
      MeasureClockOffset(&FakeClocks::Cupti, &FakeClocks::Event, 2);
  ASSERT_TRUE(offset.has_value());
  EXPECT_EQ(offset->offset_ns(), -1'000'000'000 + 10);
}

TEST(MeasureClockOffsetTest, SkipsFailedReadsAndFailsWhenAllFail) {
  FakeClocks::Reset({}, 2);
  std::optional<ClockOffset> offset = MeasureClockOffset(&FakeClocks::Cupti, &FakeClocks::Event, 3);
  ASSERT_TRUE(offset.has_value());
  EXPECT_EQ(offset->offset_ns(), -1'000'000'000 + 50);  // 100 ns bracket, midpoint +50

  FakeClocks::Reset({}, 100);
  offset = MeasureClockOffset(&FakeClocks::Cupti, &FakeClocks::Event, 3);
  EXPECT_FALSE(offset.has_value());
}

// A record as CUPTI hands it over: bytes in an 8-byte aligned buffer, read through
// CUpti_Activity* (casting a typed local instead would break strict aliasing).
template <typename T>
class ActivityBytes {
 public:
  explicit ActivityBytes(const T& record) { std::memcpy(bytes_, &record, sizeof(T)); }
  const CUpti_Activity& get() const { return *reinterpret_cast<const CUpti_Activity*>(bytes_); }

 private:
  alignas(8) unsigned char bytes_[sizeof(T)];
};

TEST(ConvertActivityTest, DispatchesOnKind) {
  TestInterner interner;
  CUpti_ActivityKernel10 k = MakeKernel();
  EventRecord e{};
  ASSERT_EQ(ConvertActivity(ActivityBytes(k).get(), ClockOffset(), interner.fn(), &e),
            ConvertStatus::kConverted);
  EXPECT_EQ(e.kind, static_cast<uint8_t>(EventKind::kKernel));
  EXPECT_EQ(e.correlation, 4242u);

  // The serial KERNEL kind has the same layout.
  k.kind = CUPTI_ACTIVITY_KIND_KERNEL;
  ASSERT_EQ(ConvertActivity(ActivityBytes(k).get(), ClockOffset(), interner.fn(), &e),
            ConvertStatus::kConverted);
  EXPECT_EQ(e.kind, static_cast<uint8_t>(EventKind::kKernel));

  CUpti_ActivityMemset4 m;
  std::memset(&m, 0, sizeof(m));
  m.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  m.bytes = 8;
  ASSERT_EQ(ConvertActivity(ActivityBytes(m).get(), ClockOffset(), interner.fn(), &e),
            ConvertStatus::kConverted);
  EXPECT_EQ(e.kind, static_cast<uint8_t>(EventKind::kMemset));
  EXPECT_EQ(e.value, 8u);
}

struct CollectingSink {
  std::vector<EventRecord> events;
  static void Push(void* ctx, const EventRecord& e) {
    static_cast<CollectingSink*>(ctx)->events.push_back(e);
  }
  EventSink sink() { return EventSink{&Push, this}; }
};

TEST(ConsumeActivityTest, UnknownKindsAreSkippedAndCounted) {
  TestInterner interner;
  CollectingSink sink;
  ActivityCounts counts;

  const CUpti_ActivityKernel10 kernel = MakeKernel();
  // A kind we never convert (as if a future CUPTI enabled something new); only the
  // kind field may be read, so give it nothing else.
  CUpti_Activity unknown;
  unknown.kind = CUPTI_ACTIVITY_KIND_PC_SAMPLING;
  CUpti_Activity future;
  future.kind = static_cast<CUpti_ActivityKind>(0x7ffffff0);
  CUpti_ActivitySynchronization2 sync;
  std::memset(&sync, 0, sizeof(sync));
  sync.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
  sync.correlationId = 8;

  ConsumeActivity(ActivityBytes(kernel).get(), ClockOffset(), interner.fn(), sink.sink(), &counts);
  ConsumeActivity(unknown, ClockOffset(), interner.fn(), sink.sink(), &counts);
  ConsumeActivity(future, ClockOffset(), interner.fn(), sink.sink(), &counts);
  ConsumeActivity(ActivityBytes(sync).get(), ClockOffset(), interner.fn(), sink.sink(), &counts);

  EXPECT_EQ(counts.converted, 2u);
  EXPECT_EQ(counts.unknown, 2u);
  ASSERT_EQ(sink.events.size(), 2u);
  EXPECT_EQ(sink.events[0].kind, static_cast<uint8_t>(EventKind::kKernel));
  EXPECT_EQ(sink.events[1].kind, static_cast<uint8_t>(EventKind::kSync));
  EXPECT_EQ(sink.events[1].correlation, 8u);
}

// --- API call stack ---------------------------------------------------------------

ApiExit Exit(ApiDomain domain, uint32_t cbid, uint32_t name, uint64_t correlation,
             int32_t result = 0) {
  ApiExit x;
  x.domain = domain;
  x.cbid = cbid;
  x.name = name;
  x.tid = 4321;
  x.correlation = correlation;
  x.result = result;
  return x;
}

TEST(ApiCallStackTest, BuildsRuntimeRecord) {
  ApiCallStack stack;
  stack.Enter(ApiDomain::kRuntime, 1000);
  EventRecord e{};
  ASSERT_TRUE(stack.Exit(
      Exit(ApiDomain::kRuntime, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 17, 555, 0), 1800,
      &e));
  EXPECT_EQ(e.kind, static_cast<uint8_t>(EventKind::kCudaRuntime));
  EXPECT_EQ(e.aux, 211u);
  EXPECT_EQ(e.name, 17u);
  EXPECT_EQ(e.tid, 4321u);
  EXPECT_EQ(e.start_ns, 1000);
  EXPECT_EQ(e.end_ns, 1800);
  EXPECT_EQ(e.correlation, 555u);
  EXPECT_EQ(e.result, 0);
  EXPECT_EQ(e.flags, raw::kFlagNone);
  EXPECT_EQ(stack.depth(), 0);
}

TEST(ApiCallStackTest, DriverInsideRuntimeIsNested) {
  ApiCallStack stack;
  // cudaGraphLaunch -> cuGraphLaunch, then a direct cuLaunchKernel afterwards.
  stack.Enter(ApiDomain::kRuntime, 100);
  stack.Enter(ApiDomain::kDriver, 110);
  EXPECT_EQ(stack.depth(), 2);
  EXPECT_EQ(stack.runtime_depth(), 1);
  EventRecord inner{};
  ASSERT_TRUE(stack.Exit(Exit(ApiDomain::kDriver, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, 2, 901, 0),
                         190, &inner));
  EventRecord outer{};
  ASSERT_TRUE(stack.Exit(
      Exit(ApiDomain::kRuntime, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000, 1, 900, 0), 200,
      &outer));
  EXPECT_EQ(inner.kind, static_cast<uint8_t>(EventKind::kCudaDriver));
  EXPECT_TRUE(inner.flags & raw::kFlagNested);
  EXPECT_EQ(inner.aux, static_cast<uint16_t>(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch));
  EXPECT_EQ(inner.start_ns, 110);
  EXPECT_EQ(inner.end_ns, 190);
  EXPECT_EQ(inner.correlation, 901u);
  EXPECT_EQ(outer.kind, static_cast<uint8_t>(EventKind::kCudaRuntime));
  EXPECT_FALSE(outer.flags & raw::kFlagNested);
  EXPECT_EQ(outer.start_ns, 100);
  EXPECT_EQ(outer.end_ns, 200);

  // A driver call of its own (no runtime call open) is not nested.
  stack.Enter(ApiDomain::kDriver, 300);
  EventRecord direct{};
  ASSERT_TRUE(stack.Exit(Exit(ApiDomain::kDriver, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 3, 902,
                              /*CUDA_ERROR_INVALID_VALUE=*/1),
                         350, &direct));
  EXPECT_FALSE(direct.flags & raw::kFlagNested);
  EXPECT_EQ(direct.result, 1);
  EXPECT_EQ(stack.depth(), 0);
  EXPECT_EQ(stack.runtime_depth(), 0);
}

TEST(ApiCallStackTest, UnmatchedExitIsRejectedWithoutDamage) {
  ApiCallStack stack;
  EventRecord e{};
  e.name = 77;
  // The exit of the cuInit/cudaGetDeviceCount call that loaded us: never entered.
  EXPECT_FALSE(stack.Exit(Exit(ApiDomain::kRuntime, 1, 1, 1), 10, &e));
  EXPECT_EQ(e.name, 77u);  // untouched
  EXPECT_EQ(stack.depth(), 0);
  // A driver exit while the innermost open call is a runtime call does not pop it.
  stack.Enter(ApiDomain::kRuntime, 20);
  EXPECT_FALSE(stack.Exit(Exit(ApiDomain::kDriver, 1, 1, 1), 30, &e));
  EXPECT_EQ(stack.depth(), 1);
  ASSERT_TRUE(stack.Exit(Exit(ApiDomain::kRuntime, 2, 1, 2), 40, &e));
  EXPECT_EQ(e.start_ns, 20);
}

TEST(ApiCallStackTest, OverflowBeyondMaxDepthStaysBalanced) {
  ApiCallStack stack;
  const int n = ApiCallStack::kMaxDepth + 3;
  for (int i = 0; i < n; ++i) stack.Enter(ApiDomain::kRuntime, 1000 + i);
  EventRecord e{};
  ASSERT_TRUE(stack.Exit(Exit(ApiDomain::kRuntime, 1, 1, 1), 5000, &e));
  EXPECT_EQ(e.start_ns, 5000);  // start not kept: an instant, not a made-up duration
  for (int i = 1; i < n; ++i) ASSERT_TRUE(stack.Exit(Exit(ApiDomain::kRuntime, 1, 1, 1), 6000, &e));
  EXPECT_EQ(e.start_ns, 1000);  // the outermost call kept its start
  EXPECT_EQ(stack.depth(), 0);
  EXPECT_EQ(stack.runtime_depth(), 0);
}

// --- Driver callbacks ---------------------------------------------------------------

TEST(TracedDriverCallbacksTest, CoversLaunchesCopiesAndSyncs) {
  const std::span<const uint32_t> list = TracedDriverCallbacks();
  const std::set<uint32_t> cbids(list.begin(), list.end());
  EXPECT_EQ(cbids.size(), list.size()) << "duplicates";
  for (uint32_t required : {
           CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
           CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
           CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
           CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernelMultiDevice,
           CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,
           CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync,
           CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2,
           CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2,
           CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async,
           CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2,
           CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize,
           CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize,
           CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize,
           CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent,
       }) {
    EXPECT_TRUE(cbids.count(required)) << "missing driver cbid " << required;
  }
  for (uint32_t cbid : list) EXPECT_LT(cbid, static_cast<uint32_t>(CUPTI_DRIVER_TRACE_CBID_SIZE));
}

TEST(TracedDriverCallbacksTest, NameMatchForNewVariants) {
  EXPECT_TRUE(IsTracedDriverFunction("cuLaunchKernelEx_ptsz"));
  EXPECT_TRUE(IsTracedDriverFunction("cuGraphLaunch"));
  EXPECT_TRUE(IsTracedDriverFunction("cuMemcpyBatchAsync_v3"));
  EXPECT_TRUE(IsTracedDriverFunction("cuMemsetD16Async_ptsz"));
  EXPECT_TRUE(IsTracedDriverFunction("cuStreamSynchronize_v2"));
  EXPECT_TRUE(IsTracedDriverFunction("cuCtxSynchronize_v3"));
  EXPECT_FALSE(IsTracedDriverFunction("cuMemAlloc_v2"));
  EXPECT_FALSE(IsTracedDriverFunction("cuCtxGetCurrent"));
  EXPECT_FALSE(IsTracedDriverFunction("cuStreamQuery"));
  EXPECT_FALSE(IsTracedDriverFunction(""));
}

// --- Buffer pool --------------------------------------------------------------------

TEST(BufferPoolTest, CapsOutstandingBuffersAndCountsRefusals) {
  BufferPool pool(4096, 2);
  uint8_t* a = pool.Acquire();
  uint8_t* b = pool.Acquire();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_NE(a, b);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 8, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b) % 8, 0u);
  EXPECT_EQ(pool.outstanding(), 2u);
  EXPECT_EQ(pool.Acquire(), nullptr);
  EXPECT_EQ(pool.Acquire(), nullptr);
  EXPECT_EQ(pool.refused(), 2u);

  pool.Release(a);
  EXPECT_EQ(pool.outstanding(), 1u);
  uint8_t* c = pool.Acquire();
  EXPECT_EQ(c, a) << "released buffers are reused, not reallocated";
  EXPECT_EQ(pool.allocated(), 2u);
  EXPECT_EQ(pool.refused(), 2u);
}

TEST(BufferPoolTest, BuffersComeBackZeroed) {
  BufferPool pool(1000, 1);  // rounded up to the 8-byte alignment
  EXPECT_EQ(pool.buffer_bytes(), 1000u);
  uint8_t* a = pool.Acquire();
  ASSERT_NE(a, nullptr);
  for (size_t i = 0; i < pool.buffer_bytes(); ++i) ASSERT_EQ(a[i], 0) << i;
  std::memset(a, 0xab, pool.buffer_bytes());
  pool.Release(a);
  uint8_t* b = pool.Acquire();
  ASSERT_EQ(b, a);
  for (size_t i = 0; i < pool.buffer_bytes(); ++i) ASSERT_EQ(b[i], 0) << i;
  EXPECT_EQ(BufferPool(1001, 1).buffer_bytes(), 1008u);
}

TEST(BufferPoolTest, ForeignAndDoubleReleasesAreIgnored) {
  BufferPool pool(64, 1);
  uint8_t* a = pool.Acquire();
  ASSERT_NE(a, nullptr);
  uint8_t foreign[64];
  pool.Release(foreign);
  pool.Release(nullptr);
  EXPECT_EQ(pool.outstanding(), 1u);
  pool.Release(a);
  pool.Release(a);
  EXPECT_EQ(pool.outstanding(), 0u);
  EXPECT_NE(pool.Acquire(), nullptr);
  EXPECT_EQ(pool.Acquire(), nullptr);
}

}  // namespace
}  // namespace teller::collect::cupti
