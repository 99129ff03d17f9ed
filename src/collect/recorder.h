// The in-process recorder of the injection library. Every recording thread writes its
// events straight into a block of the process's trace file, which is mapped into memory
// (MAP_SHARED; layout: the block layout of include/teller/format/raw_format.h). What a
// thread recorded is in the file's pages the moment the call returns, so _exit, exec,
// SIGKILL, abort and crashes lose nothing, and nothing is ever flushed. Design and
// guarantees: docs/collector.md.
//
// Hot path (PushEvent, InternLocal): a thread-local pointer load, a re-entrancy flag, a
// bounds check, a store into the thread's block (24 bytes for a push or pop without
// attributes, else 96; see WriteSlot) and a release store of the block's committed count;
// no locks, no allocation, no system call. A thread takes a new block (a lock-free bump of
// the pool's offset) every few hundred events.
//
// Environment (set by `teller run`):
//   TELLER_TRACE_DIR   where to write; without it the recorder stays disabled.
//   TELLER_BUFFER_MB   most bytes of one process's trace file (default 32768). Beyond
//                      it, events are dropped whole-range and counted.
//   TELLER_FLUSH_MS    period of the clock anchors in milliseconds (default 1000).
#ifndef TELLER_COLLECT_RECORDER_H_
#define TELLER_COLLECT_RECORDER_H_

#include <signal.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "teller/core/clock.h"
#include "teller/format/raw_format.h"

// The recorder lives in libteller_inject.so; these symbols are exported from it so that
// libteller_cupti.so (linked against it) records into the same blocks and file.
#define TELLER_RECORDER_API __attribute__((visibility("default")))

namespace teller::collect {

// Slots (96 bytes, one EventRecord) of an event block.
using Slot = raw::EventRecord;

// State of one recording thread. Only the owning thread touches it (a signal handler
// running on that thread included, which is what `busy` is for); it lives in process
// memory, while everything it records lives in the mapped file.
struct ThreadBuffer {
  Slot* slots = nullptr;                       // first slot of the current block
  std::atomic<uint32_t>* committed = nullptr;  // the block's committed count
  raw::BlockHeader* block = nullptr;
  uint32_t used = 0;      // slots written (and committed) in the current block
  uint32_t capacity = 0;  // slots of the current block
  // NVTX push/pop bookkeeping that keeps trees whole when space runs out: a pop is
  // recorded only when its push was, so every recorded push keeps a slot reserved for
  // its pop in the current block.
  uint32_t open_recorded = 0;    // recorded pushes whose pop is still to come
  uint32_t skip_depth = 0;       // dropped pushes whose pop is still to come
  uint32_t inherited_depth = 0;  // ranges a forked child inherited open (not its own)
  uint32_t tid = 0;
  int32_t depth = 0;               // NVTX nesting as the program sees it (the API's return values)
  int32_t api_depth = 0;           // CUDA API callback nesting (driver calls inside runtime calls)
  volatile sig_atomic_t busy = 0;  // inside the recorder: a signal handler must not enter
  bool gap_pending = false;        // events were dropped since the last gap record
  uint32_t generation = 0;         // process generation (bumped in a forked child)
  uint64_t serial = 0;             // thread serial in the process (gap records)
  uint64_t dropped_events = 0;     // cumulative, space exhaustion only
  uint64_t dropped_ranges = 0;
  // Pushes dropped because they arrived while the thread was inside the recorder (from
  // a signal handler); their pops, when they come outside it, are dropped too.
  std::atomic<uint32_t> reentrant_open{0};

  // String cache, keyed by hash, verified by content, in sets of kCacheWays entries: a
  // string is looked for in every entry of the set its hash picks, so that names a
  // program alternates between that pick one set do not evict each other at every call
  // (each eviction costs a new string definition in the file). `text` points at the
  // string's slots in the mapped file, which stay valid for the process's life.
  static constexpr uint64_t kCacheWays = 4;
  struct CacheEntry {
    uint64_t hash;
    const char* text;
    uint32_t length;
    uint32_t id;
  };
  CacheEntry* cache = nullptr;
  uint64_t cache_mask = 0;
};

// Longest string kept; longer NVTX messages are truncated.
inline constexpr size_t kMaxStringBytes = 4096;
// Returned by the interning functions when the string could not be written (no space,
// or the thread is inside the recorder already): the event that needed it is dropped.
inline constexpr uint32_t kInternFailed = 0xFFFFFFFFu;

// constinit: the pointer has no dynamic initialiser, so the compiler reads it directly
// instead of first testing for (and calling) a TLS init function at every event.
TELLER_RECORDER_API extern thread_local constinit ThreadBuffer* tls_buffer
    __attribute__((tls_model("initial-exec")));

// True once InitRecorder() found a trace directory; the hot paths check it first.
TELLER_RECORDER_API extern std::atomic<bool> g_recorder_enabled;

// Slow paths (recorder.cc).
TELLER_RECORDER_API ThreadBuffer* RegisterThread();  // nullptr when disabled or re-entered
// The thread's buffer when it belongs to a file of an earlier generation (a forked
// child): re-attaches it to this process's file. nullptr when that fails.
TELLER_RECORDER_API ThreadBuffer* RenewThread(ThreadBuffer* b);
// Gets a block with room for `need` more slots (besides the reserved ones); false when
// none can be had (the caller drops and counts).
TELLER_RECORDER_API bool MoreSpace(ThreadBuffer* b, uint32_t need);
// Counts an event dropped for want of space; `range` when it was a push.
TELLER_RECORDER_API void NoteDropped(ThreadBuffer* b, bool range);
// Counts an event dropped because the thread was inside the recorder.
TELLER_RECORDER_API void NoteReentrant();
TELLER_RECORDER_API uint32_t InternSlow(ThreadBuffer* b, const char* text, uint32_t length,
                                        uint64_t hash);
TELLER_RECORDER_API void WriteGap(ThreadBuffer* b, raw::GapReason reason);
TELLER_RECORDER_API extern std::atomic<uint32_t> g_generation;

// Reads the environment and creates the trace file. Idempotent and safe to call from
// every injection entry point.
TELLER_RECORDER_API bool InitRecorder();
// Interns a string shared by all threads (NVTX domains, registered strings, category
// and thread names): kept for the process so that a forked child's file has it too.
TELLER_RECORDER_API uint32_t InternGlobal(std::string_view text);
// Adds to a named counter kept in the trace file's header (e.g. "cupti_records").
TELLER_RECORDER_API void AddCounter(std::string_view name, uint64_t delta);
// Runs first in FlushAndClose (CUPTI's final activity flush, which records).
TELLER_RECORDER_API void SetPreCloseHook(void (*hook)());
// Writes the final clock anchor, marks the file closed and trims its unused tail
// (called at exit; exposed for tests). Events recorded afterwards into blocks that
// threads already hold still land in the file.
TELLER_RECORDER_API void FlushAndClose();
// Nothing is buffered any more; kept for callers of the earlier recorder.
TELLER_RECORDER_API void FlushNow();

// Hot-path timestamps. On x86-64 with an invariant TSC (constant_tsc and nonstop_tsc),
// events store raw TSC ticks (about 7 ns to read, against about 25 ns for
// clock_gettime) flagged kFlagRawTsc; readers convert them with the TSC anchors of the
// file. Elsewhere, or with TELLER_CLOCK=monotonic, events read CLOCK_MONOTONIC.
// `g_timestamp_flags` is kFlagRawTsc or 0 and is fixed before the first event.
TELLER_RECORDER_API extern uint8_t g_timestamp_flags;

inline int64_t HotTimestamp() {
#if defined(__x86_64__)
  if (__builtin_expect(g_timestamp_flags != 0, 1)) return static_cast<int64_t>(__rdtsc());
#endif
  return EventClockNs();
}

inline ThreadBuffer* CurrentBuffer() {
  ThreadBuffer* b = tls_buffer;
  if (__builtin_expect(b == nullptr, 0)) return RegisterThread();
  if (__builtin_expect(b->generation != g_generation.load(std::memory_order_relaxed), 0)) {
    return RenewThread(b);
  }
  return b;
}

// Re-entrancy guard: an event that arrives (from a signal handler) while its thread is
// inside the recorder is dropped and counted, never mixed into the interrupted write.
inline bool EnterRecorder(ThreadBuffer* b) {
  if (__builtin_expect(b->busy != 0, 0)) {
    NoteReentrant();
    return false;
  }
  b->busy = 1;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  return true;
}

inline void LeaveRecorder(ThreadBuffer* b) {
  std::atomic_signal_fence(std::memory_order_seq_cst);
  b->busy = 0;
}

// One slot stays reserved for the thread's final gap record.
inline constexpr uint32_t kReservedSlots = 1;

// True when `need` slots fit besides the reserved ones (pops of recorded pushes and the
// final gap record).
inline bool Fits(const ThreadBuffer* b, uint32_t need) {
  return b->used + need + b->open_recorded + kReservedSlots <= b->capacity;
}

// A record's bytes up to and including start_ns: all that a push or pop without
// attributes, and most marks, has that is not zero.
inline constexpr size_t kSlotHeadBytes = offsetof(Slot, end_ns);

// The head of a record whose other fields are zero (see WriteSlot): what the hot NVTX
// entry points build, so that they neither zero nor copy a whole 96-byte record.
struct SlotHead {
  uint8_t kind;
  uint8_t flags;
  uint16_t aux;
  uint32_t name;
  uint32_t tid;
  uint32_t domain;
  int64_t start_ns;
};
static_assert(sizeof(SlotHead) == kSlotHeadBytes);
static_assert(offsetof(SlotHead, start_ns) == offsetof(Slot, start_ns));

inline bool ZeroPastHead(const Slot& s) {
  uint64_t words[(sizeof(Slot) - kSlotHeadBytes) / 8];
  std::memcpy(words, reinterpret_cast<const char*>(&s) + kSlotHeadBytes, sizeof(words));
  uint64_t any = 0;
  for (uint64_t w : words) any |= w;
  return any == 0;
}

// Slots at and past a block's committed count are zero: the file's unclaimed space reads
// as zeros, and every slot written is committed before the next one is (here and in
// WriteStringDef), so an adopted block continues after its last committed slot. A record
// that is zero past start_ns is therefore stored as its first 24 bytes: one cache line of
// the mapped file instead of two, which is most of a push+pop's cost
// (bench/README.md, "Collector overhead").
inline void WriteSlot(ThreadBuffer* b, const Slot& s) {
  Slot* d = b->slots + b->used;
  if (ZeroPastHead(s)) {
    std::memcpy(static_cast<void*>(d), &s, kSlotHeadBytes);
  } else {
    *d = s;
  }
  b->used += 1;
  b->committed->store(b->used, std::memory_order_release);
}

inline void WriteSlot(ThreadBuffer* b, const SlotHead& s) {
  // Stored as three words composed in registers: a copy of the struct went through the
  // stack, where a 16-byte load of fields just stored one by one stalled the thread
  // (no store-to-load forwarding across several stores).
  static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the head's words are little-endian");
  const uint64_t w0 = static_cast<uint64_t>(s.kind) | static_cast<uint64_t>(s.flags) << 8 |
                      static_cast<uint64_t>(s.aux) << 16 | static_cast<uint64_t>(s.name) << 32;
  const uint64_t w1 = static_cast<uint64_t>(s.tid) | static_cast<uint64_t>(s.domain) << 32;
  char* d = reinterpret_cast<char*>(b->slots + b->used);
  std::memcpy(d, &w0, 8);
  std::memcpy(d + 8, &w1, 8);
  std::memcpy(d + 16, &s.start_ns, 8);
  b->used += 1;
  b->committed->store(b->used, std::memory_order_release);
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
  // The last 0-7 bytes in at most two loads (overlapping when n is 5-7): a memcpy of a
  // variable length under 8 is a byte loop, a tenth of a push's instructions. The hash
  // only has to be the same for the same bytes (cache entries are verified by content).
  uint64_t w = 0;
  if (n >= 4) {
    uint32_t lo, hi;
    std::memcpy(&lo, p, 4);
    std::memcpy(&hi, p + n - 4, 4);
    w = lo | (static_cast<uint64_t>(hi) << 32);
  } else if (n > 0) {
    w = static_cast<uint64_t>(static_cast<uint8_t>(p[0])) |
        static_cast<uint64_t>(static_cast<uint8_t>(p[n / 2])) << 8 |
        static_cast<uint64_t>(static_cast<uint8_t>(p[n - 1])) << 16;
  }
  h = (h ^ w) * 0x100000001b3ull;
  // A multiply carries bits only upwards, so before this the low bits, which pick the
  // cache entry, never saw the last bytes: "main/a", "main/b" and "main/c", or
  // "model.layers.10" to "model.layers.31", shared one entry and evicted each other at
  // every call (each eviction a new string definition in the file). The finalizer of
  // MurmurHash3 mixes every bit into every other.
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  return h ^ (h >> 33);
}

// Id of `text` for events of the calling thread, whose recorder it has entered.
inline uint32_t InternHeld(ThreadBuffer* b, const char* text, size_t length) {
  if (length > kMaxStringBytes) length = kMaxStringBytes;
  const uint64_t hash = HashBytes(text, length);
  const ThreadBuffer::CacheEntry* set =
      b->cache + (hash & b->cache_mask & ~(ThreadBuffer::kCacheWays - 1));
  for (uint64_t i = 0; i < ThreadBuffer::kCacheWays; ++i) {
    const ThreadBuffer::CacheEntry& e = set[i];
    if (e.hash == hash && e.length == length && std::memcmp(e.text, text, length) == 0) {
      return e.id;
    }
  }
  return InternSlow(b, text, static_cast<uint32_t>(length), hash);
}

// Records a single event (not a push or pop) of a thread inside the recorder. `R` is a
// whole record (Slot) or the head of one (SlotHead).
template <typename R>
inline void RecordSingleHeld(ThreadBuffer* b, const R& e) {
  if (b->skip_depth != 0 || e.name == kInternFailed) {  // inside a dropped range
    NoteDropped(b, false);
    return;
  }
  const uint32_t need = 1 + (b->gap_pending ? 1 : 0);
  if (__builtin_expect(!Fits(b, need), 0) && !MoreSpace(b, need)) {
    NoteDropped(b, false);
    return;
  }
  if (__builtin_expect(b->gap_pending, 0)) WriteGap(b, raw::GapReason::kResumed);
  WriteSlot(b, e);
}

// A push: recorded together with the reservation of its pop, or dropped with everything
// up to its pop.
template <typename R>
inline void RecordPushHeld(ThreadBuffer* b, const R& e) {
  if (b->skip_depth != 0 || e.name == kInternFailed) {
    b->skip_depth += 1;
    NoteDropped(b, true);
    return;
  }
  const uint32_t need = 2 + (b->gap_pending ? 1 : 0);  // the push and its pop
  if (__builtin_expect(!Fits(b, need), 0) && !MoreSpace(b, need)) {
    b->skip_depth = 1;
    NoteDropped(b, true);
    return;
  }
  if (__builtin_expect(b->gap_pending, 0)) WriteGap(b, raw::GapReason::kResumed);
  WriteSlot(b, e);
  b->open_recorded += 1;
}

template <typename R>
inline void RecordPopHeld(ThreadBuffer* b, const R& e) {
  if (b->reentrant_open.load(std::memory_order_relaxed) != 0) {
    // The pop of a push dropped inside the recorder (a handler that pops outside it).
    b->reentrant_open.fetch_sub(1, std::memory_order_relaxed);
    NoteReentrant();
    return;
  }
  if (b->skip_depth != 0) {
    b->skip_depth -= 1;
    NoteDropped(b, false);
    return;
  }
  if (b->open_recorded != 0) {
    WriteSlot(b, e);  // its slot was reserved with the push
    b->open_recorded -= 1;
    return;
  }
  if (b->inherited_depth != 0) {  // closes a range of the parent process
    b->inherited_depth -= 1;
    return;
  }
  RecordSingleHeld(b, e);  // a pop without any push: the program's own imbalance
}

// Public entry points for other collectors (CUPTI): each enters the recorder itself.
inline uint32_t InternLocal(ThreadBuffer* b, const char* text, size_t length) {
  if (!EnterRecorder(b)) return kInternFailed;
  const uint32_t id = InternHeld(b, text, length);
  LeaveRecorder(b);
  return id;
}

inline void PushEvent(ThreadBuffer* b, const raw::EventRecord& event) {
  if (!EnterRecorder(b)) return;
  RecordSingleHeld(b, event);
  LeaveRecorder(b);
}

// Same as PushEvent: nothing is waited for any more (there is no flusher); kept for
// CUPTI's buffer-completion thread.
TELLER_RECORDER_API void PushEventWaiting(ThreadBuffer* b, const raw::EventRecord& event);

}  // namespace teller::collect

#endif  // TELLER_COLLECT_RECORDER_H_
