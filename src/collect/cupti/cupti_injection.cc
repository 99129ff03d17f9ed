// CUPTI injection: libcuda dlopens the library named by CUDA_INJECTION64_PATH during
// cuInit and calls InitializeInjection once. From there we
//   - put CUPTI's clock on the event clock (timestamp callback, or a measured offset),
//   - subscribe to API callbacks (whole runtime domain; launch, memcpy/memset and
//     synchronization calls of the driver domain) and record one event per call on
//     the calling thread, into the recorder shared with the NVTX injection,
//   - collect GPU activity (kernels, memcpy, memset, synchronization, overhead) in
//     pooled buffers that CUPTI fills and hands back on its own thread, where they are
//     converted (cupti_records.h) and written into that thread's block of the trace
//     file, like every other event (PushEventWaiting: it no longer waits for anything).
// Without a driver or GPU, CUPTI fails to subscribe or to enable activity; we then
// undo what we did and return 1 so that the program runs as if we were not there.
//
// Locking: we never hold a lock of ours while calling CUPTI, because CUPTI calls back
// into us from inside its own calls (and holds its locks while doing so). The only
// lock here is the buffer pool's, which never calls out.
#include <cupti.h>
#include <pthread.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string_view>

#include "src/collect/cupti/cupti_records.h"
#include "src/collect/recorder.h"
#include "teller/core/clock.h"
#include "teller/core/counter_registry.h"

namespace teller::collect::cupti {
namespace {

bool Verbose() {
  const char* v = std::getenv("TELLER_VERBOSE");
  return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
}

enum class OnError {
  kLog,       // say so (with TELLER_VERBOSE) and carry on
  kDisables,  // say so, adding that CUDA collection is off: the caller gives up
  kQuiet,     // expected (end of buffer) or already reported (clean-up after a failure)
};

// The one wrapper for CUPTI calls (docs/cupti.md): returns the status and, when
// TELLER_VERBOSE is set, prints one line naming the call and CUPTI's error string.
CUptiResult CheckCupti(CUptiResult status, const char* call, OnError on_error) {
  if (status != CUPTI_SUCCESS && on_error != OnError::kQuiet && Verbose()) {
    const char* text = nullptr;
    if (cuptiGetResultString(status, &text) != CUPTI_SUCCESS || text == nullptr) text = "?";
    std::fprintf(stderr, "teller: %s failed: %s (%d)%s\n", call, text, static_cast<int>(status),
                 on_error == OnError::kDisables ? "; CUDA activity is not collected" : "");
  }
  return status;
}

#define TELLER_CUPTI(call) CheckCupti((call), #call, OnError::kLog)
#define TELLER_CUPTI_OR_DISABLE(call) CheckCupti((call), #call, OnError::kDisables)
#define TELLER_CUPTI_QUIET(call) CheckCupti((call), #call, OnError::kQuiet)

// Environment knobs (all optional):
//   TELLER_CUPTI_BUFFER_MB    size of one activity buffer (default 8)
//   TELLER_CUPTI_MAX_BUFFERS  activity buffers handed to CUPTI at once (default 16)
//   TELLER_CUPTI_FLUSH_MS     period of our activity flush, 0 = only when full (1000)
long EnvLong(const char* name, long fallback, long lo, long hi) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  errno = 0;
  const long n = std::strtol(v, &end, 10);
  if (errno != 0 || end == v || *end != '\0' || n < lo || n > hi) return fallback;
  return n;
}

enum Phase : int { kIdle = 0, kStarting = 1, kActive = 2, kClosed = 3, kFailed = 4 };

// Activity kinds we need; without any of them the collector is not worth running.
constexpr CUpti_ActivityKind kRequiredKinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
    CUPTI_ACTIVITY_KIND_MEMCPY,
    CUPTI_ACTIVITY_KIND_MEMSET,
    CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
};

struct State {
  std::atomic<int> phase{kIdle};
  CUpti_SubscriberHandle subscriber = nullptr;
  ClockOffset clock;  // written before activity is enabled, read-only afterwards
  std::unique_ptr<BufferPool> pool;

  // Counts kept off the recorder's lock on hot paths; reported as deltas.
  std::atomic<uint64_t> unmatched_exits{0};
  std::atomic<uint64_t> reported_unmatched_exits{0};
  std::atomic<uint64_t> reported_refused{0};

  // Periodic flush thread: CUPTI hands back a buffer only when it is full, so without
  // it a slow process would keep its GPU records until exit, and a killed one lose them.
  pthread_t flusher{};
  bool flusher_running = false;
  uint32_t flush_ms = 1000;
  std::mutex flush_mu;  // guards stop_flusher only; never held across a CUPTI call
  std::condition_variable flush_cv;
  bool stop_flusher = false;
};

// Leaked on purpose: CUPTI may call back while static destructors run at exit.
State& S() {
  static State* state = new State;
  return *state;
}

// Per-thread stack of open API calls. Constant-initialised, so no TLS init guard.
thread_local ApiCallStack tls_api_stack;

uint64_t CUPTIAPI EventClockTimestamp() { return static_cast<uint64_t>(EventClockNs()); }

bool CuptiNow(uint64_t* out_ns) {
  return TELLER_CUPTI_QUIET(cuptiGetTimestamp(out_ns)) == CUPTI_SUCCESS;
}

int64_t EventNow() { return EventClockNs(); }

void ReportDelta(CounterId id, uint64_t total, std::atomic<uint64_t>& reported) {
  uint64_t prev = reported.load(std::memory_order_relaxed);
  while (total > prev && !reported.compare_exchange_weak(prev, total)) {
  }
  if (total > prev) AddCounter(CounterName(id), total - prev);
}

void ReportCounters(State& s) {
  ReportDelta(CounterId::kCuptiBuffersRefused, s.pool->refused(), s.reported_refused);
  ReportDelta(CounterId::kCuptiApiUnmatchedExits, s.unmatched_exits.load(std::memory_order_relaxed),
              s.reported_unmatched_exits);
}

// --- API callbacks (application threads) ---------------------------------------------

void CUPTIAPI OnApiCallback(void* /*userdata*/, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                            const void* data) noexcept {
  if (domain != CUPTI_CB_DOMAIN_RUNTIME_API && domain != CUPTI_CB_DOMAIN_DRIVER_API) return;
  State& s = S();
  if (s.phase.load(std::memory_order_relaxed) != kActive || data == nullptr) return;
  const auto* cb = static_cast<const CUpti_CallbackData*>(data);
  const ApiDomain api_domain =
      domain == CUPTI_CB_DOMAIN_RUNTIME_API ? ApiDomain::kRuntime : ApiDomain::kDriver;
  ApiCallStack& stack = tls_api_stack;
  if (cb->callbackSite == CUPTI_API_ENTER) {
    stack.Enter(api_domain, EventClockNs());
    return;
  }
  const int64_t now = EventClockNs();
  ThreadBuffer* b = CurrentBuffer();
  ApiExit info;
  info.domain = api_domain;
  info.cbid = cbid;
  info.correlation = cb->correlationId;
  if (b != nullptr) {
    info.tid = b->tid;
    if (cb->functionName != nullptr) {
      info.name = InternLocal(b, cb->functionName, std::strlen(cb->functionName));
    }
  }
  // cudaError_t and CUresult are both int-sized enums.
  if (cb->functionReturnValue != nullptr) {
    std::memcpy(&info.result, cb->functionReturnValue, sizeof(info.result));
  }
  raw::EventRecord e;
  if (!stack.Exit(info, now, &e)) {
    s.unmatched_exits.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (b != nullptr) PushEvent(b, e);
}

// --- Activity buffers (CUPTI's threads) ----------------------------------------------

void CUPTIAPI OnBufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) noexcept {
  // Zero-size answer = "no buffer": CUPTI drops records and counts them.
  *max_records = 0;
  uint8_t* b = S().pool->Acquire();
  *buffer = b;
  *size = b == nullptr ? 0 : S().pool->buffer_bytes();
}

uint32_t InternOnBuffer(void* ctx, std::string_view text) {
  return InternLocal(static_cast<ThreadBuffer*>(ctx), text.data(), text.size());
}

void PushOnBuffer(void* ctx, const raw::EventRecord& event) {
  PushEventWaiting(static_cast<ThreadBuffer*>(ctx), event);
}

void CUPTIAPI OnBufferCompleted(CUcontext context, uint32_t stream_id, uint8_t* buffer,
                                size_t /*size*/, size_t valid_size) noexcept {
  State& s = S();
  const int64_t begin = EventClockNs();
  // After the recorder closed, nobody would write what we push: just recycle.
  ThreadBuffer* b = s.phase.load(std::memory_order_acquire) == kActive ? CurrentBuffer() : nullptr;
  if (b != nullptr && buffer != nullptr && valid_size > 0) {
    const InternFn intern{&InternOnBuffer, b};
    const EventSink sink{&PushOnBuffer, b};
    ActivityCounts counts;
    CUpti_Activity* record = nullptr;
    CUptiResult status;
    while ((status = TELLER_CUPTI_QUIET(cuptiActivityGetNextRecord(buffer, valid_size, &record))) ==
           CUPTI_SUCCESS) {
      ConsumeActivity(*record, s.clock, intern, sink, &counts);
    }
    // MAX_LIMIT_REACHED is the normal end of a buffer; anything else lost its rest.
    if (status != CUPTI_ERROR_MAX_LIMIT_REACHED) {
      CheckCupti(status, "cuptiActivityGetNextRecord", OnError::kLog);
      AddCounter(CounterName(CounterId::kCuptiBufferParseErrors), 1);
    }
    if (counts.converted != 0) AddCounter(CounterName(CounterId::kCuptiRecords), counts.converted);
    if (counts.unknown != 0)
      AddCounter(CounterName(CounterId::kCuptiRecordsUnknown), counts.unknown);

    // Our own cost, so that diagnosis can tell collector time from the program's.
    raw::EventRecord overhead{};
    overhead.kind = static_cast<uint8_t>(raw::EventKind::kOverhead);
    overhead.name = InternOnBuffer(b, "teller_cupti_buffer");
    overhead.tid = b->tid;
    overhead.start_ns = begin;
    overhead.end_ns = EventClockNs();
    overhead.value = counts.converted + counts.unknown;
    PushEventWaiting(b, overhead);
  }
  size_t dropped = 0;
  if (TELLER_CUPTI(cuptiActivityGetNumDroppedRecords(context, stream_id, &dropped)) ==
          CUPTI_SUCCESS &&
      dropped != 0 && b != nullptr) {
    AddCounter(CounterName(CounterId::kCuptiRecordsDropped), dropped);
  }
  s.pool->Release(buffer);
  if (b != nullptr) ReportCounters(s);
}

// --- Periodic flush and close ---------------------------------------------------------

void* FlushLoop(void*) {
  State& s = S();
  std::unique_lock<std::mutex> lock(s.flush_mu);
  while (!s.stop_flusher) {
    s.flush_cv.wait_for(lock, std::chrono::milliseconds(s.flush_ms));
    if (s.stop_flusher) break;
    lock.unlock();  // CUPTI calls OnBufferCompleted from inside the flush
    // Flag 0: only buffers whose records are all complete; never blocks on the GPU.
    TELLER_CUPTI(cuptiActivityFlushAll(0));
    lock.lock();
  }
  return nullptr;
}

void StopFlusher(State& s) {
  if (!s.flusher_running) return;
  {
    std::lock_guard<std::mutex> lock(s.flush_mu);
    s.stop_flusher = true;
  }
  s.flush_cv.notify_all();
  pthread_join(s.flusher, nullptr);
  s.flusher_running = false;
}

// Runs first in the recorder's FlushAndClose (at exit), outside the recorder's lock.
void OnRecorderClose() {
  State& s = S();
  if (s.phase.load(std::memory_order_acquire) != kActive) return;
  StopFlusher(s);
  // Forced: also buffers holding records of work still running (their end stays 0).
  TELLER_CUPTI(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
  ReportCounters(s);
  s.phase.store(kClosed, std::memory_order_release);
}

// A forked child has neither our flush thread nor a usable CUPTI (CUDA does not survive
// fork); its exit must not join a thread that is not there or flush CUPTI.
void AtForkChild() {
  State& s = S();
  s.flusher_running = false;
  s.phase.store(kClosed, std::memory_order_release);
}

// --- Set-up ---------------------------------------------------------------------------

bool EnableDriverCallbacks(CUpti_SubscriberHandle sub) {
  for (uint32_t cbid : TracedDriverCallbacks()) {
    if (TELLER_CUPTI_OR_DISABLE(cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, cbid)) !=
        CUPTI_SUCCESS) {
      return false;
    }
  }
  // Variants of the same calls that a newer CUPTI knows and this header did not.
  for (uint32_t cbid = CUPTI_DRIVER_TRACE_CBID_SIZE; cbid < CUPTI_DRIVER_TRACE_CBID_SIZE + 512;
       ++cbid) {
    const char* name = nullptr;
    if (TELLER_CUPTI_QUIET(cuptiGetCallbackName(CUPTI_CB_DOMAIN_DRIVER_API, cbid, &name)) !=
            CUPTI_SUCCESS ||
        name == nullptr) {
      break;
    }
    if (IsTracedDriverFunction(name)) {
      TELLER_CUPTI(cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, cbid));
    }
  }
  return true;
}

void SetUpClock(State& s) {
  // Must precede cuptiActivityEnable: records made earlier keep CUPTI's own base.
  if (TELLER_CUPTI(cuptiActivityRegisterTimestampCallback(&EventClockTimestamp)) == CUPTI_SUCCESS) {
    s.clock = ClockOffset(0);
    return;
  }
  if (std::optional<ClockOffset> measured = MeasureClockOffset(&CuptiNow, &EventNow)) {
    s.clock = *measured;
    return;
  }
  // CUPTI's default base on Linux x86_64 is CLOCK_REALTIME.
  const ClockPair pair = ReadClockPair();
  s.clock = ClockOffset(pair.monotonic_ns - pair.realtime_ns);
}

// Undoes a partial start; quiet, since the failure that led here was already reported.
void TearDown(State& s, int enabled_kinds, bool overhead_enabled) {
  for (int i = 0; i < enabled_kinds; ++i) {
    TELLER_CUPTI_QUIET(cuptiActivityDisable(kRequiredKinds[i]));
  }
  if (overhead_enabled) TELLER_CUPTI_QUIET(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_OVERHEAD));
  if (s.subscriber != nullptr) {
    TELLER_CUPTI_QUIET(cuptiUnsubscribe(s.subscriber));
    s.subscriber = nullptr;
  }
}

int Start() {
  State& s = S();
  int expected = kIdle;
  if (!s.phase.compare_exchange_strong(expected, kStarting)) {
    return expected == kActive ? 0 : 1;  // once per process; a failure is final
  }
  if (!InitRecorder()) {  // not under `teller run`, or the trace file cannot be written
    s.phase.store(kFailed);
    return 1;
  }
  const size_t buffer_bytes = static_cast<size_t>(EnvLong("TELLER_CUPTI_BUFFER_MB", 8, 1, 256))
                              << 20;
  const size_t max_buffers = static_cast<size_t>(EnvLong("TELLER_CUPTI_MAX_BUFFERS", 16, 2, 1024));
  s.flush_ms = static_cast<uint32_t>(EnvLong("TELLER_CUPTI_FLUSH_MS", 1000, 0, 3600000));
  try {  // no exception may leave InitializeInjection (it returns into libcuda)
    s.pool = std::make_unique<BufferPool>(buffer_bytes, max_buffers);
  } catch (...) {
    s.pool.reset();
  }

  // Subscribing first: on a machine without a driver it is the call that fails, so the
  // user sees one line (with TELLER_VERBOSE) and nothing else happens.
  if (s.pool == nullptr || TELLER_CUPTI_OR_DISABLE(cuptiSubscribe(&s.subscriber, &OnApiCallback,
                                                                  nullptr)) != CUPTI_SUCCESS) {
    s.subscriber = nullptr;
    AddCounter(CounterName(CounterId::kCuptiUnavailable), 1);
    s.phase.store(kFailed);
    return 1;
  }
  SetUpClock(s);

  int enabled_kinds = 0;
  bool overhead_enabled = false;
  bool ok = TELLER_CUPTI_OR_DISABLE(
                cuptiEnableDomain(1, s.subscriber, CUPTI_CB_DOMAIN_RUNTIME_API)) == CUPTI_SUCCESS &&
            EnableDriverCallbacks(s.subscriber);
  if (ok) {
    // CUPTI zeroes each buffer on the application's thread unless told that we hand
    // out zeroed ones (the pool does); an optimisation only, so failure is fine.
    uint8_t zeroed = 1;
    size_t zeroed_size = sizeof(zeroed);
    TELLER_CUPTI_QUIET(cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER,
                                                 &zeroed_size, &zeroed));
    ok = TELLER_CUPTI_OR_DISABLE(cuptiActivityRegisterCallbacks(
             &OnBufferRequested, &OnBufferCompleted)) == CUPTI_SUCCESS;
  }
  // Active before the kinds are enabled so that no early record is ignored.
  if (ok) s.phase.store(kActive, std::memory_order_release);
  for (CUpti_ActivityKind kind : kRequiredKinds) {
    if (!ok) break;
    ok = TELLER_CUPTI_OR_DISABLE(cuptiActivityEnable(kind)) == CUPTI_SUCCESS;
    if (ok) ++enabled_kinds;
  }
  if (ok) {
    overhead_enabled =
        TELLER_CUPTI_QUIET(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_OVERHEAD)) == CUPTI_SUCCESS;
  }
  if (!ok) {
    s.phase.store(kFailed, std::memory_order_release);
    TearDown(s, enabled_kinds, overhead_enabled);
    AddCounter(CounterName(CounterId::kCuptiUnavailable), 1);
    return 1;
  }

  SetPreCloseHook(&OnRecorderClose);
  pthread_atfork(nullptr, nullptr, &AtForkChild);
  if (s.flush_ms != 0) {
    s.flusher_running = pthread_create(&s.flusher, nullptr, &FlushLoop, nullptr) == 0;
  }
  AddCounter(CounterName(CounterId::kCuptiActive), 1);
  return 0;
}

}  // namespace
}  // namespace teller::collect::cupti

// Entry point looked up by libcuda in the library named by CUDA_INJECTION64_PATH.
// 0 = injection active; anything else = not active (the program runs normally).
extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  return teller::collect::cupti::Start();
}
