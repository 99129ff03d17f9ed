#include "src/collect/cupti/cupti_records.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>

namespace teller::collect::cupti {
namespace {

using raw::EventKind;
using raw::EventRecord;

// CUPTI records are 8-byte aligned inside the buffer; the buffer itself must be too.
constexpr size_t kBufferAlignment = 8;

// CUPTI reports grid/block/shared memory as int32; negative values never describe a
// real launch, so they are clamped rather than wrapped to huge unsigned numbers.
inline uint32_t NonNegative(int32_t v) { return v < 0 ? 0u : static_cast<uint32_t>(v); }
inline uint16_t Block(int32_t v) {
  return static_cast<uint16_t>(std::clamp<int32_t>(v, 0, std::numeric_limits<uint16_t>::max()));
}

inline void SetGraph(uint32_t graph_id, EventRecord& e) {
  e.graph_id = graph_id;
  if (graph_id != 0) e.flags |= raw::kFlagInGraph;
}

}  // namespace

std::optional<ClockOffset> MeasureClockOffset(CuptiNowFn cupti_now, EventNowFn event_now,
                                              int rounds) {
  std::optional<ClockOffset> best;
  int64_t best_width = std::numeric_limits<int64_t>::max();
  for (int i = 0; i < rounds; ++i) {
    const int64_t before = event_now();
    uint64_t cupti_ns = 0;
    const bool ok = cupti_now(&cupti_ns);
    const int64_t after = event_now();
    if (!ok || after < before) continue;
    const int64_t width = after - before;
    if (width < best_width) {
      best_width = width;
      const int64_t midpoint = before + width / 2;
      best = ClockOffset(midpoint - static_cast<int64_t>(cupti_ns));
    }
  }
  return best;
}

uint32_t InternFn::operator()(const char* text) const {
  return text == nullptr ? 0 : (*this)(std::string_view(text));
}

EventRecord ConvertKernel(const CUpti_ActivityKernel10& k, const ClockOffset& clock,
                          const InternFn& intern) {
  EventRecord e{};
  e.kind = static_cast<uint8_t>(EventKind::kKernel);
  e.name = intern(k.name);
  e.start_ns = clock.ToEventClock(k.start);
  e.end_ns = clock.ToEventClock(k.end);
  e.correlation = k.correlationId;
  e.value = k.graphNodeId;
  e.device = k.deviceId;
  e.context = k.contextId;
  e.stream = k.streamId;
  SetGraph(k.graphId, e);
  e.grid[0] = NonNegative(k.gridX);
  e.grid[1] = NonNegative(k.gridY);
  e.grid[2] = NonNegative(k.gridZ);
  e.block[0] = Block(k.blockX);
  e.block[1] = Block(k.blockY);
  e.block[2] = Block(k.blockZ);
  e.shared_bytes = NonNegative(k.staticSharedMemory) + NonNegative(k.dynamicSharedMemory);
  return e;
}

namespace {

// Fields memcpy and memset records share (the two CUPTI structs name them alike).
template <typename Record>
void FillCopyOrSet(EventKind kind, const Record& m, const ClockOffset& clock, EventRecord& e) {
  e.kind = static_cast<uint8_t>(kind);
  e.start_ns = clock.ToEventClock(m.start);
  e.end_ns = clock.ToEventClock(m.end);
  e.correlation = m.correlationId;
  e.value = m.bytes;
  e.device = m.deviceId;
  e.context = m.contextId;
  e.stream = m.streamId;
  SetGraph(m.graphId, e);
}

}  // namespace

EventRecord ConvertMemcpy(const CUpti_ActivityMemcpy6& m, const ClockOffset& clock) {
  EventRecord e{};
  FillCopyOrSet(EventKind::kMemcpy, m, clock, e);
  e.aux = m.copyKind;
  return e;
}

EventRecord ConvertMemset(const CUpti_ActivityMemset4& m, const ClockOffset& clock) {
  EventRecord e{};
  FillCopyOrSet(EventKind::kMemset, m, clock, e);
  return e;
}

EventRecord ConvertSync(const CUpti_ActivitySynchronization2& s, const ClockOffset& clock) {
  EventRecord e{};
  e.kind = static_cast<uint8_t>(EventKind::kSync);
  e.aux = static_cast<uint16_t>(s.type);
  e.start_ns = clock.ToEventClock(s.start);
  e.end_ns = clock.ToEventClock(s.end);
  e.correlation = s.correlationId;
  e.value = s.cudaEventId;
  e.context = s.contextId;
  e.stream = s.streamId;
  e.result = static_cast<int32_t>(s.returnValue);
  return e;
}

uint16_t OverheadAux(uint32_t overhead_kind) {
  if (overhead_kind >= (1u << 16)) return static_cast<uint16_t>(overhead_kind >> 16);
  return static_cast<uint16_t>(0x8000u | (overhead_kind & 0x7fffu));
}

std::string_view OverheadKindName(uint32_t overhead_kind) {
  switch (overhead_kind) {
    case CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER:
      return "driver_compiler";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH:
      return "cupti_buffer_flush";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_INSTRUMENTATION:
      return "cupti_instrumentation";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_RESOURCE:
      return "cupti_resource";
    case CUPTI_ACTIVITY_OVERHEAD_RUNTIME_TRIGGERED_MODULE_LOADING:
      return "runtime_triggered_module_loading";
    case CUPTI_ACTIVITY_OVERHEAD_LAZY_FUNCTION_LOADING:
      return "lazy_function_loading";
    case CUPTI_ACTIVITY_OVERHEAD_COMMAND_BUFFER_FULL:
      return "command_buffer_full";
    case CUPTI_ACTIVITY_OVERHEAD_ACTIVITY_BUFFER_REQUEST:
      return "activity_buffer_request";
    case CUPTI_ACTIVITY_OVERHEAD_UVM_ACTIVITY_INIT:
      return "uvm_activity_init";
    default:
      return "overhead_unknown";
  }
}

EventRecord ConvertOverhead(const CUpti_ActivityOverhead3& o, const ClockOffset& clock,
                            const InternFn& intern) {
  const auto kind = static_cast<uint32_t>(o.overheadKind);
  EventRecord e{};
  e.kind = static_cast<uint8_t>(EventKind::kOverhead);
  e.aux = OverheadAux(kind);
  e.name = intern(OverheadKindName(kind));
  e.start_ns = clock.ToEventClock(o.start);
  e.end_ns = clock.ToEventClock(o.end);
  e.correlation = o.correlationId;
  return e;
}

ConvertStatus ConvertActivity(const CUpti_Activity& record, const ClockOffset& clock,
                              const InternFn& intern, EventRecord* out) {
  // The casts below are how CUPTI's records are meant to be read: `kind` is the first
  // member of every record struct and tells which struct the bytes are.
  switch (record.kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      *out = ConvertKernel(reinterpret_cast<const CUpti_ActivityKernel10&>(record), clock, intern);
      return ConvertStatus::kConverted;
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      *out = ConvertMemcpy(reinterpret_cast<const CUpti_ActivityMemcpy6&>(record), clock);
      return ConvertStatus::kConverted;
    case CUPTI_ACTIVITY_KIND_MEMSET:
      *out = ConvertMemset(reinterpret_cast<const CUpti_ActivityMemset4&>(record), clock);
      return ConvertStatus::kConverted;
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
      *out = ConvertSync(reinterpret_cast<const CUpti_ActivitySynchronization2&>(record), clock);
      return ConvertStatus::kConverted;
    case CUPTI_ACTIVITY_KIND_OVERHEAD:
      *out =
          ConvertOverhead(reinterpret_cast<const CUpti_ActivityOverhead3&>(record), clock, intern);
      return ConvertStatus::kConverted;
    default:
      return ConvertStatus::kUnknownKind;
  }
}

void ConsumeActivity(const CUpti_Activity& record, const ClockOffset& clock, const InternFn& intern,
                     const EventSink& sink, ActivityCounts* counts) {
  EventRecord e;
  if (ConvertActivity(record, clock, intern, &e) == ConvertStatus::kConverted) {
    ++counts->converted;
    if (sink.fn != nullptr) sink.fn(sink.ctx, e);
  } else {
    ++counts->unknown;
  }
}

// ---------------------------------------------------------------------------------

void ApiCallStack::Enter(ApiDomain domain, int64_t now_ns) {
  if (depth_ < kMaxDepth) {
    start_ns_[depth_] = now_ns;
    domain_[depth_] = domain;
  }
  ++depth_;
  if (domain == ApiDomain::kRuntime) ++runtime_depth_;
}

bool ApiCallStack::Exit(const ApiExit& info, int64_t now_ns, EventRecord* out) {
  if (depth_ == 0) return false;  // opened before we subscribed
  const int top = depth_ - 1;
  if (top < kMaxDepth && domain_[top] != info.domain) return false;  // not LIFO: keep state
  depth_ = top;
  if (info.domain == ApiDomain::kRuntime) --runtime_depth_;

  EventRecord e{};
  e.kind = static_cast<uint8_t>(info.domain == ApiDomain::kRuntime ? EventKind::kCudaRuntime
                                                                   : EventKind::kCudaDriver);
  // Runtime cbids end below 600 and driver cbids below 900 in CUDA 13: 16 bits suffice.
  e.aux = static_cast<uint16_t>(info.cbid);
  e.name = info.name;
  e.tid = info.tid;
  // Calls nested deeper than kMaxDepth kept no start: record them as instants rather
  // than inventing a duration.
  e.start_ns = top < kMaxDepth ? start_ns_[top] : now_ns;
  e.end_ns = now_ns;
  e.correlation = info.correlation;
  e.result = info.result;
  if (info.domain == ApiDomain::kDriver && runtime_depth_ > 0) e.flags |= raw::kFlagNested;
  *out = e;
  return true;
}

// ---------------------------------------------------------------------------------

namespace {

// Driver callbacks we trace, by cupti_driver_cbid.h name. Kept explicit (rather than
// only matched by name at run time) so that a reader sees what is collected and a
// renamed cbid breaks the build instead of silently dropping a launch.
constexpr uint32_t kTracedDriverCallbacks[] = {
    // Launches. cudaLaunchKernel & co. reach the driver as these; user reports of
    // missing kernels name each of them (graphs: one correlation id for all kernels).
    CUPTI_DRIVER_TRACE_CBID_cuLaunch,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchGrid,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchGridAsync,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernelMultiDevice,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchHostFunc,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchHostFunc_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,
    CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz,
    // Memcpy.
    CUPTI_DRIVER_TRACE_CBID_cuMemcpy,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpy_ptds,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpy_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2_ptds,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2_ptds,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2_ptds,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpy2D_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpy2DAsync_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpy2DUnaligned_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpy3D_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DAsync_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeer,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeerAsync,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeer_ptds,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeerAsync_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyBatchAsync,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyBatchAsync_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyBatchAsync_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyBatchAsync_v2_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DBatchAsync,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DBatchAsync_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DBatchAsync_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DBatchAsync_v2_ptsz,
    // Memset.
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD16_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D8_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D16_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D32_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async,
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async,
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async,
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D8Async,
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D16Async,
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D32Async,
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async_ptsz,
    // Synchronization.
    CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize,
    CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize_v2,
    CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize,
    CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize,
    CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent,
    CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent_ptsz,
};

constexpr std::string_view kTracedDriverPrefixes[] = {
    "cuLaunch",         "cuGraphLaunch",       "cuMemcpy",           "cuMemset",
    "cuCtxSynchronize", "cuStreamSynchronize", "cuEventSynchronize", "cuStreamWaitEvent",
};

}  // namespace

std::span<const uint32_t> TracedDriverCallbacks() { return kTracedDriverCallbacks; }

bool IsTracedDriverFunction(std::string_view name) {
  for (std::string_view prefix : kTracedDriverPrefixes) {
    if (name.starts_with(prefix)) return true;
  }
  return false;
}

// ---------------------------------------------------------------------------------

void BufferPool::FreeDeleter::operator()(uint8_t* p) const { std::free(p); }

BufferPool::BufferPool(size_t buffer_bytes, size_t max_outstanding)
    : buffer_bytes_((std::max<size_t>(buffer_bytes, kBufferAlignment) + kBufferAlignment - 1) &
                    ~(kBufferAlignment - 1)),
      max_outstanding_(max_outstanding) {
  // owned_ and free_ never hold more than max_outstanding_ pointers, so with this
  // reserve Acquire and Release never reallocate: they cannot throw from inside a
  // CUPTI callback.
  owned_.reserve(max_outstanding_);
  free_.reserve(max_outstanding_);
}

BufferPool::~BufferPool() = default;

uint8_t* BufferPool::Acquire() {
  std::lock_guard<std::mutex> lock(mu_);
  if (outstanding_ >= max_outstanding_) {
    ++refused_;
    return nullptr;
  }
  uint8_t* buffer = nullptr;
  if (!free_.empty()) {
    buffer = free_.back();
    free_.pop_back();
  } else {
    // aligned_alloc wants a size that is a multiple of the alignment (ensured above).
    buffer = static_cast<uint8_t*>(std::aligned_alloc(kBufferAlignment, buffer_bytes_));
    if (buffer == nullptr) {
      ++refused_;
      return nullptr;
    }
    std::memset(buffer, 0, buffer_bytes_);
    owned_.emplace_back(buffer);
  }
  ++outstanding_;
  return buffer;
}

void BufferPool::Release(uint8_t* buffer) {
  if (buffer == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const bool ours = std::any_of(owned_.begin(), owned_.end(),
                                  [buffer](const auto& p) { return p.get() == buffer; });
    const bool already_free = std::find(free_.begin(), free_.end(), buffer) != free_.end();
    if (!ours || already_free) return;
  }
  // Zero outside the lock: it is the slow part, and the buffer is still ours alone.
  std::memset(buffer, 0, buffer_bytes_);
  std::lock_guard<std::mutex> lock(mu_);
  free_.push_back(buffer);
  --outstanding_;
}

size_t BufferPool::outstanding() const {
  std::lock_guard<std::mutex> lock(mu_);
  return outstanding_;
}

size_t BufferPool::allocated() const {
  std::lock_guard<std::mutex> lock(mu_);
  return owned_.size();
}

uint64_t BufferPool::refused() const {
  std::lock_guard<std::mutex> lock(mu_);
  return refused_;
}

}  // namespace teller::collect::cupti
