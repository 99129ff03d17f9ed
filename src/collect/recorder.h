// The in-process recorder of the injection library: per-thread preallocated event
// rings, per-thread string interning, and one flusher thread that writes the process's
// raw trace file (format: include/teller/format/raw_format.h).
//
// Hot path (RecordEvent, InternLocal): a thread-local pointer load, a few stores into
// the calling thread's ring and one release store; no locks, no allocation, no system
// call. A ring that is full drops the event and counts it (the application is never
// blocked); the flusher is woken when a ring is a quarter full and otherwise runs every
// TELLER_FLUSH_MS (default 100 ms).
//
// Environment (set by `teller run`):
//   TELLER_TRACE_DIR    where to write; without it the recorder stays disabled.
//   TELLER_FLUSH_MS     flush period in milliseconds (default 100).
//   TELLER_RING_EVENTS  events per thread ring (power of two, default 32768).
//
// Fork: the child starts a new file of its own lazily, at its first event; events the
// parent had buffered stay the parent's. Exec: the new image loads the injection again
// through the inherited environment. Exit: an atexit handler drains every ring.
#ifndef TELLER_COLLECT_RECORDER_H_
#define TELLER_COLLECT_RECORDER_H_

#include <atomic>
#include <cstdint>
#include <cstring>
#include <string_view>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "teller/core/clock.h"
#include "teller/format/raw_format.h"

// The recorder lives in libteller_inject.so; these symbols are exported from it so that
// libteller_cupti.so (linked against it) records into the same rings and file.
#define TELLER_RECORDER_API __attribute__((visibility("default")))

namespace teller::collect {

// Producer/consumer state of one recording thread. The owning thread writes `head`
// and the rings; the flusher writes `tail`/`string_tail`. Padding keeps the two sides
// on separate cache lines.
struct ThreadBuffer {
  // --- producer side ---
  raw::EventRecord* events = nullptr;
  uint64_t capacity = 0;  // power of two
  uint64_t mask = 0;
  uint64_t wake_mask = 0;  // wake the flusher every (wake_mask + 1) events
  uint64_t cached_tail = 0;
  uint64_t cached_string_tail = 0;
  uint32_t tid = 0;
  int32_t depth = 0;      // NVTX push/pop nesting of this thread
  int32_t api_depth = 0;  // CUDA API callback nesting (driver calls inside runtime calls)
  alignas(64) std::atomic<uint64_t> head{0};
  std::atomic<uint64_t> string_head{0};
  std::atomic<uint64_t> dropped_events{0};
  std::atomic<uint64_t> dropped_strings{0};

  // Per-thread string cache: direct-mapped, keyed by hash, verified by content. The
  // copies live in `cache_arena`, which is reset (with the cache) when full.
  struct CacheEntry {
    uint64_t hash;
    const char* text;
    uint32_t length;
    uint32_t id;
  };
  CacheEntry* cache = nullptr;
  uint64_t cache_mask = 0;
  char* cache_arena = nullptr;
  size_t cache_arena_size = 0;
  size_t cache_arena_used = 0;

  // New strings for the file: a byte ring of [u32 id][u32 len][bytes, padded to 8].
  char* strings = nullptr;
  uint64_t string_capacity = 0;  // power of two

  // --- consumer side ---
  alignas(64) std::atomic<uint64_t> tail{0};
  std::atomic<uint64_t> string_tail{0};
  std::atomic<bool> retired{false};  // the thread exited; recycle once drained
  uint64_t flushed_dropped = 0;
  int64_t last_converted_ns = 0;  // last event-clock time written for this thread
};

// Longest string kept; longer NVTX messages are truncated (and counted).
inline constexpr size_t kMaxStringBytes = 4096;

TELLER_RECORDER_API extern thread_local ThreadBuffer* tls_buffer
    __attribute__((tls_model("initial-exec")));

// Slow paths (recorder.cc).
TELLER_RECORDER_API ThreadBuffer* RegisterThread();  // nullptr when the recorder is disabled
TELLER_RECORDER_API void WakeFlusher();
TELLER_RECORDER_API uint32_t InternSlow(ThreadBuffer* b, const char* text, uint32_t length,
                                        uint64_t hash);

// True once InitRecorder() found a trace directory; the hot paths check it first.
TELLER_RECORDER_API extern std::atomic<bool> g_recorder_enabled;

// Reads the environment, opens the trace file and starts the flusher. Idempotent and
// safe to call from every injection entry point.
TELLER_RECORDER_API bool InitRecorder();
// Interns a string shared by all threads (NVTX domains, registered strings, CUDA API
// names); takes a lock, so never call it on a hot path.
TELLER_RECORDER_API uint32_t InternGlobal(std::string_view text);
// Named counter written to the trace file (e.g. "cupti_records_dropped").
TELLER_RECORDER_API void AddCounter(std::string_view name, uint64_t delta);
// Runs first in FlushAndClose, outside the recorder's lock (CUPTI's final activity
// flush, which calls back into the recorder).
TELLER_RECORDER_API void SetPreCloseHook(void (*hook)());
// Drains every ring and writes the end chunk (called at exit; exposed for tests).
TELLER_RECORDER_API void FlushAndClose();
// Flushes everything recorded so far (blocks until written). For tests and benches.
TELLER_RECORDER_API void FlushNow();

// Hot-path timestamps. On x86-64 with an invariant TSC (constant_tsc and nonstop_tsc),
// events store raw TSC ticks (about 7 ns to read, against about 25 ns for
// clock_gettime) flagged kFlagRawTsc, and the flusher converts them to the event clock
// with a calibration taken at every flush. Elsewhere, or with TELLER_CLOCK=monotonic,
// events read CLOCK_MONOTONIC directly. `g_timestamp_flags` is kFlagRawTsc or 0 and is
// fixed before the first event.
TELLER_RECORDER_API extern uint8_t g_timestamp_flags;

inline int64_t HotTimestamp() {
#if defined(__x86_64__)
  if (__builtin_expect(g_timestamp_flags != 0, 1)) return static_cast<int64_t>(__rdtsc());
#endif
  return EventClockNs();
}

inline ThreadBuffer* CurrentBuffer() {
  ThreadBuffer* b = tls_buffer;
  if (__builtin_expect(b == nullptr, 0)) b = RegisterThread();
  return b;
}

// 64-bit FNV-1a variant on 8-byte words: strings here are short names.
inline uint64_t HashBytes(const char* p, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull ^ n;
  while (n >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    h = (h ^ w) * 0x100000001b3ull;
    h ^= h >> 29;
    p += 8;
    n -= 8;
  }
  uint64_t w = 0;
  std::memcpy(&w, p, n);
  h = (h ^ w) * 0x100000001b3ull;
  return h ^ (h >> 32);
}

// Id of `text` for events of the calling thread's buffer `b`.
inline uint32_t InternLocal(ThreadBuffer* b, const char* text, size_t length) {
  if (length > kMaxStringBytes) length = kMaxStringBytes;
  const uint64_t hash = HashBytes(text, length);
  const ThreadBuffer::CacheEntry& e = b->cache[hash & b->cache_mask];
  if (e.hash == hash && e.length == length && std::memcmp(e.text, text, length) == 0) {
    return e.id;
  }
  return InternSlow(b, text, static_cast<uint32_t>(length), hash);
}

// Appends one event to the calling thread's ring; drops (and counts) when full.
inline void PushEvent(ThreadBuffer* b, const raw::EventRecord& event) {
  const uint64_t h = b->head.load(std::memory_order_relaxed);
  if (__builtin_expect(h - b->cached_tail >= b->capacity, 0)) {
    b->cached_tail = b->tail.load(std::memory_order_acquire);
    if (h - b->cached_tail >= b->capacity) {
      b->dropped_events.fetch_add(1, std::memory_order_relaxed);
      WakeFlusher();
      return;
    }
  }
  b->events[h & b->mask] = event;
  b->head.store(h + 1, std::memory_order_release);
  if (__builtin_expect(((h + 1) & b->wake_mask) == 0, 0)) WakeFlusher();
}

// Like PushEvent, but waits for the flusher instead of dropping. Only for threads that
// are not the application's (CUPTI's buffer-completion thread).
TELLER_RECORDER_API void PushEventWaiting(ThreadBuffer* b, const raw::EventRecord& event);

}  // namespace teller::collect

#endif  // TELLER_COLLECT_RECORDER_H_
