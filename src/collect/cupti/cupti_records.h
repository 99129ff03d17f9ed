// The pure half of the CUPTI collector: CUPTI activity records and API callbacks turned
// into teller::raw::EventRecord, plus the small state machines the injection needs
// (activity buffer pool, per-thread API call stack, clock conversion).
//
// Nothing here calls CUPTI or touches the recorder, so the static library
// `teller_cupti_records` is unit-tested with activity structs filled by hand (no GPU,
// no driver). cupti_injection.cc wires these pieces to CUPTI and to the recorder.
//
// Struct versions are those of CUDA 13.0 (CUPTI_API_VERSION 130001): kernels are
// CUpti_ActivityKernel10, memcpys CUpti_ActivityMemcpy6, memsets CUpti_ActivityMemset4,
// synchronizations CUpti_ActivitySynchronization2, overheads CUpti_ActivityOverhead3.
// Version conditionals, when a later toolkit bumps one, belong in this file pair only.
#ifndef TELLER_COLLECT_CUPTI_CUPTI_RECORDS_H_
#define TELLER_COLLECT_CUPTI_CUPTI_RECORDS_H_

#include <cupti.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "teller/format/raw_format.h"

namespace teller::collect::cupti {

// ---------------------------------------------------------------------------------
// Clock conversion.
//
// EventRecord timestamps are CLOCK_MONOTONIC ns (the event clock). The injection
// registers a CUPTI timestamp callback returning the event clock, in which case CUPTI
// timestamps need no conversion (offset 0). When that registration fails, CUPTI keeps
// its default base (CLOCK_REALTIME on Linux x86_64) and we add a measured offset.
class ClockOffset {
 public:
  constexpr ClockOffset() = default;
  constexpr explicit ClockOffset(int64_t offset_ns) : offset_ns_(offset_ns) {}

  // CUPTI timestamp -> event clock. 0 means "not recorded" in CUPTI records (e.g. a
  // kernel that never completed) and stays 0, so readers can tell it from a time.
  constexpr int64_t ToEventClock(uint64_t cupti_ns) const {
    return cupti_ns == 0 ? 0 : static_cast<int64_t>(cupti_ns) + offset_ns_;
  }
  constexpr int64_t offset_ns() const { return offset_ns_; }

 private:
  int64_t offset_ns_ = 0;
};

// Reads one CUPTI timestamp; false when CUPTI cannot provide one.
using CuptiNowFn = bool (*)(uint64_t* out_ns);
// Reads the event clock.
using EventNowFn = int64_t (*)();

// Measures event_clock - cupti_clock by bracketing each CUPTI read between two event
// clock reads and keeping the tightest of `rounds` brackets (its midpoint is accurate
// to half the bracket width). nullopt when every CUPTI read failed.
std::optional<ClockOffset> MeasureClockOffset(CuptiNowFn cupti_now, EventNowFn event_now,
                                              int rounds = 7);

// ---------------------------------------------------------------------------------
// Activity record conversion.

// Interns a string for the thread doing the conversion; returns its string id
// (0 = empty/unknown). A function pointer and context, not std::function: this runs
// once per record on CUPTI's buffer thread.
struct InternFn {
  uint32_t (*fn)(void* ctx, std::string_view text) = nullptr;
  void* ctx = nullptr;

  uint32_t operator()(std::string_view text) const {
    return (fn == nullptr || text.empty()) ? 0 : fn(ctx, text);
  }
  uint32_t operator()(const char* text) const;  // null-safe
};

// Kernel (kind CONCURRENT_KERNEL or KERNEL): name, device/context/stream, correlation,
// grid/block, static + dynamic shared memory; value = graph node id, graph_id and
// kFlagInGraph when the kernel ran as a node of a CUDA graph (graphId != 0).
raw::EventRecord ConvertKernel(const CUpti_ActivityKernel10& k, const ClockOffset& clock,
                               const InternFn& intern);
// Memcpy: value = bytes, aux = CUpti_ActivityMemcpyKind; graph_id/kFlagInGraph as above.
raw::EventRecord ConvertMemcpy(const CUpti_ActivityMemcpy6& m, const ClockOffset& clock);
// Memset: value = bytes; graph_id/kFlagInGraph as above.
raw::EventRecord ConvertMemset(const CUpti_ActivityMemset4& m, const ClockOffset& clock);
// Synchronization: aux = CUpti_ActivitySynchronizationType, context/stream,
// value = CUDA event id (event synchronize / stream wait event), result = returnValue.
// CUPTI reports "no stream" / "no event" as all-ones ids; they are kept as they are.
raw::EventRecord ConvertSync(const CUpti_ActivitySynchronization2& s, const ClockOffset& clock);
// Overhead: name = overhead kind ("cupti_buffer_flush", ...), aux = OverheadAux(kind).
raw::EventRecord ConvertOverhead(const CUpti_ActivityOverhead3& o, const ClockOffset& clock,
                                 const InternFn& intern);

// CUpti_ActivityOverheadKind does not fit in 16 bits: CUPTI-caused kinds are n << 16,
// driver-caused ones small integers. aux = n for the former, 0x8000 | kind for the latter.
uint16_t OverheadAux(uint32_t overhead_kind);
std::string_view OverheadKindName(uint32_t overhead_kind);

enum class ConvertStatus {
  kConverted,    // *out holds the event
  kUnknownKind,  // a kind we do not convert: skipped (and counted by the caller)
};

// Dispatches on record->kind. `record` must point at a complete record of its kind
// (as cuptiActivityGetNextRecord returns them).
ConvertStatus ConvertActivity(const CUpti_Activity& record, const ClockOffset& clock,
                              const InternFn& intern, raw::EventRecord* out);

// Receives converted events.
struct EventSink {
  void (*fn)(void* ctx, const raw::EventRecord& event) = nullptr;
  void* ctx = nullptr;
};

// What a sequence of ConsumeActivity calls saw; the injection turns it into counters.
struct ActivityCounts {
  uint64_t converted = 0;
  uint64_t unknown = 0;  // records of kinds we do not convert ("cupti_records_unknown")
};

// Converts one record and hands it to `sink`; unknown kinds are only counted.
void ConsumeActivity(const CUpti_Activity& record, const ClockOffset& clock, const InternFn& intern,
                     const EventSink& sink, ActivityCounts* counts);

// ---------------------------------------------------------------------------------
// API callbacks.

enum class ApiDomain : uint8_t { kRuntime = 0, kDriver = 1 };

// What the callback knows at API exit.
struct ApiExit {
  ApiDomain domain = ApiDomain::kRuntime;
  uint32_t cbid = 0;
  uint32_t name = 0;         // interned function name
  uint32_t tid = 0;          // OS thread id
  uint64_t correlation = 0;  // cbdata->correlationId
  int32_t result = 0;        // cudaError_t / CUresult returned
};

// Per-thread stack of open API calls (enter timestamps), fixed size, no allocation.
// A driver call that starts while a runtime call is open on the same thread is the
// runtime's implementation (cudaLaunchKernel -> cuLaunchKernel): it is recorded with
// kFlagNested so readers can drop it without losing the user's call.
//
// Invariant: entries are LIFO per thread (CUDA API calls nest, never interleave).
// An exit with no matching enter is expected once per thread: the injection is
// initialised from inside cuInit, so calls already open at subscription time exit
// unseen. Such exits produce no event and are counted by the caller.
class ApiCallStack {
 public:
  static constexpr int kMaxDepth = 32;

  void Enter(ApiDomain domain, int64_t now_ns);
  // Closes the innermost call; false (and *out untouched) when it does not match.
  bool Exit(const ApiExit& info, int64_t now_ns, raw::EventRecord* out);

  int depth() const { return depth_; }
  int runtime_depth() const { return runtime_depth_; }

 private:
  // Zero-initialised so that a thread_local stack is constant-initialised (no TLS
  // guard on the callback path). Entries beyond kMaxDepth keep no start (see Exit).
  int64_t start_ns_[kMaxDepth] = {};
  ApiDomain domain_[kMaxDepth] = {};
  int depth_ = 0;
  int runtime_depth_ = 0;
};

// Driver API callbacks traced besides the whole runtime domain: every launch
// (cuLaunchKernel[Ex], cooperative launches, cuGraphLaunch, host functions),
// memcpy/memset variants, stream/event/context synchronization and stream waits,
// including _v2/_ptds/_ptsz variants. The list is fixed at compile time from
// cupti_driver_cbid.h; IsTracedDriverFunction extends it at run time to variants a
// newer driver adds (matched by name through cuptiGetCallbackName).
std::span<const uint32_t> TracedDriverCallbacks();
bool IsTracedDriverFunction(std::string_view name);

// ---------------------------------------------------------------------------------
// Activity buffer pool.

// Fixed-size, 8-byte aligned (CUPTI's record alignment), zero-filled activity buffers
// with a cap on how many are handed out at once: when CUPTI produces records faster
// than we convert them, CUPTI drops records (and counts them) instead of our memory
// growing without bound. Buffers are allocated lazily, kept for reuse (each first touch
// costs page faults), and zeroed on Release on CUPTI's buffer thread so that CUPTI
// need not zero them on the application's thread (ZEROED_OUT_ACTIVITY_BUFFER).
//
// Thread-safe; never calls CUPTI, so holding its lock cannot deadlock with CUPTI.
class BufferPool {
 public:
  BufferPool(size_t buffer_bytes, size_t max_outstanding);
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // A zero-filled buffer of buffer_bytes(), or nullptr (counted in refused()) when
  // max_outstanding buffers are out or memory is exhausted.
  uint8_t* Acquire();
  // Returns a buffer from Acquire() and zeroes all of it: CUPTI may have written past
  // the valid size it reported (a record cut off by a forced flush). Pointers the pool
  // did not hand out are ignored.
  void Release(uint8_t* buffer);

  size_t buffer_bytes() const { return buffer_bytes_; }
  size_t max_outstanding() const { return max_outstanding_; }
  size_t outstanding() const;
  size_t allocated() const;
  uint64_t refused() const;

 private:
  struct FreeDeleter {
    void operator()(uint8_t* p) const;
  };
  const size_t buffer_bytes_;
  const size_t max_outstanding_;
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<uint8_t, FreeDeleter>> owned_;  // every buffer allocated
  std::vector<uint8_t*> free_;                                // subset of owned_
  size_t outstanding_ = 0;
  uint64_t refused_ = 0;
};

}  // namespace teller::collect::cupti

#endif  // TELLER_COLLECT_CUPTI_CUPTI_RECORDS_H_
