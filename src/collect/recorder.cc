#include "src/collect/recorder.h"

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <new>
#include <string>

#include "teller/collect/process_info.h"
#include "teller/core/counter_registry.h"
#include "teller/format/raw_writer.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

namespace teller::collect {

thread_local constinit ThreadBuffer* tls_buffer __attribute__((tls_model("initial-exec"))) =
    nullptr;
std::atomic<bool> g_recorder_enabled{false};
std::atomic<uint32_t> g_generation{1};
uint8_t g_timestamp_flags = 0;

namespace {

using raw::BlockHeader;
using raw::FileHeaderBlock;

// A thread's first block is small (10,000 threads that record a few ranges each take
// 80 MiB of file, not 640); later ones are large (one claim per 680 events).
constexpr uint32_t kFirstBlockBytes = 8192;
constexpr uint32_t kBlockBytes = 65536;
constexpr uint32_t kSlotBytes = sizeof(Slot);
constexpr uint64_t kClosedBit = 1ull << 63;
// Space allocated at creation, and the smallest step of allocation. Small, because a
// fault on the mapping reads ahead (zero-fills) up to the end of the file, as much as the
// device's read-ahead (8 MiB is common): a large first allocation made the first event's
// header write fault in a megabyte. Read-ahead itself is kept: the large page-cache
// folios it allocates make faulting in ahead (Prefault) two to four times cheaper than
// page by page.
constexpr uint64_t kInitialReserve = 256u << 10;
constexpr uint64_t kGrowStep = 256u << 10;
constexpr uint64_t kMaxHeadroom = 64u << 20;
// Pages the helper faults in ahead of the claims: a sixteenth of the pool used, within
// these bounds. Less than the allocated headroom, because faulted-in pages count in the
// process's RSS, and a short program should not pay for faulting in a megabyte it never
// uses.
constexpr uint64_t kMinPrefault = 64u << 10;
constexpr uint64_t kMaxPrefault = 16u << 20;
// The helper unmaps the pool's pages once they are this far behind the claims (in steps
// of kReleaseStep, so that one TLB shoot-down covers many pages): the data stays in the
// file's page cache, and RSS stays bounded however long the trace grows.
constexpr uint64_t kKeepBehind = 8u << 20;
constexpr uint64_t kReleaseStep = 4u << 20;
// At exit, an allocated but unclaimed tail smaller than this stays in the file (readers
// skip it as unused space): freeing allocated blocks can take milliseconds on some file
// systems (ext4 with online discard), which a short program would pay at every exit.
constexpr uint64_t kTrimMinBytes = 4u << 20;
constexpr uint64_t kPageBytes = 4096;
constexpr int64_t kSpaceRetryNs = 100000000;  // after a failed extension, retry in 100 ms
constexpr size_t kParkSlots = 256;
constexpr uint32_t kMinParkedSlots = 64;  // blocks with less room left are not worth it
constexpr size_t kFreeBufferSlots = 256;
constexpr uint64_t kCacheEntries = 1024;  // 256 sets of ThreadBuffer::kCacheWays
constexpr size_t kBufferBytes = 28672;    // ThreadBuffer + its string cache, lazily touched
static_assert(sizeof(ThreadBuffer) + kCacheEntries * sizeof(ThreadBuffer::CacheEntry) <=
              kBufferBytes);

#if defined(__x86_64__)
// The TSC is a usable clock only when it ticks at a constant rate in every power state
// and across cores: CPUID leaf 0x80000007, EDX bit 8 ("invariant TSC"; Linux shows it as
// the nonstop_tsc flag).
bool CpuHasInvariantTsc() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (static_cast<unsigned>(__get_cpuid_max(0x80000000, nullptr)) < 0x80000007u) return false;
  __cpuid(0x80000007, eax, ebx, ecx, edx);
  return (edx & (1u << 8)) != 0;
}
#endif

// A (TSC, CLOCK_MONOTONIC) pair read back to back; the TSC is read between two clock
// reads and paired with their midpoint.
void ReadTscPair(int64_t& tsc, int64_t& mono) {
#if defined(__x86_64__)
  if (g_timestamp_flags != 0) {
    const int64_t before = EventClockNs();
    tsc = static_cast<int64_t>(__rdtsc());
    const int64_t after = EventClockNs();
    mono = before + (after - before) / 2;
    return;
  }
#endif
  tsc = 0;
  mono = EventClockNs();
}

// A global string, kept for the life of the process so that a forked child writes it
// into its own file. Nodes are only ever pushed (never removed), so the list needs no
// lock.
struct GlobalString {
  GlobalString* next;
  uint32_t id;
  uint32_t length;
  char text[1];
};

// Process-wide state. Deliberately leaked: late NVTX calls from other threads during
// exit must never touch destroyed objects.
struct Global {
  // --- set once per file (under create_mu), read by everyone afterwards ---
  std::mutex create_mu;  // taken only to create the file (a thread's first event)
  std::atomic<char*> base{nullptr};
  std::atomic<FileHeaderBlock*> header{nullptr};
  uint64_t map_bytes = 0;
  std::string path;
  uint32_t file_generation = 0;
  std::atomic<bool> create_failed{false};

  // --- the pool: lock-free ---
  std::atomic<uint64_t> next{0};        // first unclaimed byte (| kClosedBit once closed)
  std::atomic<uint64_t> reserved{0};    // bytes of the file allocated on disk
  std::atomic<uint64_t> prefaulted{0};  // pages below it were faulted in by the helper
  uint64_t released = 0;                // pages below it were unmapped by the helper (helper only)
  uint64_t release_floor = 0;           // first byte after the file header and process info
  std::atomic<uint64_t> sequence{0};    // claim order of blocks and segments
  std::atomic<int64_t> space_retry_ns{0};
  std::array<std::atomic<uint64_t>, kParkSlots> parked{};  // offsets of blocks with room
  std::atomic<int> parked_count{0};
  std::array<std::atomic<ThreadBuffer*>, kFreeBufferSlots> free_buffers{};
  std::atomic<uint64_t> next_serial{1};
  std::atomic<GlobalString*> globals{nullptr};
  std::atomic<bool> globals_pending{false};  // a new file still lacks the global strings

  // --- configuration ---
  bool initialized = false;
  std::string dir;
  int anchor_ms = 1000;
  uint64_t buffer_bytes = 32ull << 30;
  double ns_per_tick = 0;

  // --- the helper thread (clock anchors, extends the file ahead of the threads) ---
  pthread_t helper{};
  bool helper_running = false;
  std::atomic<bool> stop{false};
  // Set while the helper works on the file (allocates, faults in, writes an anchor);
  // closing waits only for that, never for the helper to be scheduled (see FlushAndClose).
  std::atomic<bool> helper_busy{false};
  std::atomic<bool> wake_pending{false};  // a wake-up is posted and not yet taken
  std::atomic<bool> closed{false};
  sem_t wake;
  pthread_key_t thread_key;
  void (*pre_close_hook)() = nullptr;
  std::mutex named_mu;  // non-registry counter names (cold)
};

Global& G() {
  static Global* g = new Global();
  return *g;
}

std::atomic<uint32_t> g_next_string_id{1};
thread_local bool tls_registering __attribute__((tls_model("initial-exec"))) = false;

// Slot of each collector counter of the registry in the file header: the same layout
// in every file.
struct CounterSlots {
  std::array<int16_t, kCounterCount> slot_of{};
  uint32_t used = 0;
  constexpr CounterSlots() {
    for (auto& s : slot_of) s = -1;
    for (const CounterInfo& c : kCounterTable) {
      if (c.stage == CounterStage::kCollector) slot_of[static_cast<size_t>(c.id)] = used++;
    }
  }
};
constexpr CounterSlots kSlots;
static_assert(kSlots.used < raw::kMaxCounterSlots);

void CounterAdd(CounterId id, uint64_t delta) {
  FileHeaderBlock* h = G().header.load(std::memory_order_acquire);
  const int slot = kSlots.slot_of[static_cast<size_t>(id)];
  if (h == nullptr || slot < 0) return;
  std::atomic_ref<uint64_t>(h->counters[slot].value).fetch_add(delta, std::memory_order_relaxed);
}

uint64_t RoundUp(uint64_t v, uint64_t to) { return (v + to - 1) / to * to; }

// One post per wake-up the helper has not taken yet: claimers that find the headroom
// short while the helper waits for a processor do not each make a system call.
void WakeHelper() {
  Global& g = G();
  if (g.wake_pending.load(std::memory_order_relaxed) || g.wake_pending.exchange(true)) return;
  sem_post(&g.wake);
}

// Makes sure bytes [0, end) of the file are allocated, so that stores into the mapping
// never meet a hole on a full disk (which would be a SIGBUS in the program). The file is
// opened by path for the call and closed again: the collector holds no descriptor the
// program could close or reuse. No lock: concurrent callers allocate overlapping ranges,
// which is harmless.
bool EnsureReserved(uint64_t end) {
  Global& g = G();
  uint64_t cur = g.reserved.load(std::memory_order_acquire);
  end = std::min(end, g.map_bytes);
  if (end <= cur) return true;
  const int64_t now = EventClockNs();
  if (now < g.space_retry_ns.load(std::memory_order_relaxed)) return false;
  const uint64_t target = std::min(RoundUp(end, kGrowStep), g.map_bytes);
  int fd = open(g.path.c_str(), O_RDWR | O_CLOEXEC);
  // A program at its descriptor limit: the one free descriptor may be the helper's for a
  // moment (it extends the file too); wait for it, or for the helper's extension.
  for (int attempt = 0; fd < 0 && (errno == EMFILE || errno == ENFILE) && attempt < 100;
       ++attempt) {
    usleep(20);
    if (g.reserved.load(std::memory_order_acquire) >= end) return true;
    fd = open(g.path.c_str(), O_RDWR | O_CLOEXEC);
  }
  int err = fd < 0 ? errno : 0;
  if (fd >= 0) {
    cur = g.reserved.load(std::memory_order_acquire);
    err = cur >= target
              ? 0
              : posix_fallocate(fd, static_cast<off_t>(cur), static_cast<off_t>(target - cur));
    close(fd);
  }
  if (err != 0) {
    g.space_retry_ns.store(now + kSpaceRetryNs, std::memory_order_relaxed);
    CounterAdd(CounterId::kSpaceErrors, 1);
    return false;
  }
  while (cur < target && !g.reserved.compare_exchange_weak(cur, target)) {
  }
  return true;
}

uint64_t Headroom() {
  const uint64_t used = G().next.load(std::memory_order_relaxed) & ~kClosedBit;
  return std::clamp<uint64_t>(used / 8, kInitialReserve, kMaxHeadroom);
}

uint64_t PrefaultWindow() {
  const uint64_t used = G().next.load(std::memory_order_relaxed) & ~kClosedBit;
  return std::clamp<uint64_t>(used / 16, kMinPrefault, kMaxPrefault);
}

// True when the claims have come close enough to the end of the allocated or of the
// faulted-in space that the helper should move it on.
bool HelperNeeded(uint64_t end) {
  Global& g = G();
  return g.reserved.load(std::memory_order_relaxed) < end + Headroom() / 2 ||
         g.prefaulted.load(std::memory_order_relaxed) < end + PrefaultWindow() / 2;
}

// Helper thread: faults in the allocated pages just ahead of the claims
// (MADV_POPULATE_WRITE), so that the program's threads store into pages that are already
// mapped instead of taking the page faults themselves.
void Prefault() {
  Global& g = G();
  char* base = g.base.load(std::memory_order_acquire);
  const uint64_t used = g.next.load(std::memory_order_relaxed) & ~kClosedBit;
  const uint64_t from =
      std::max(g.prefaulted.load(std::memory_order_relaxed), RoundUp(used, kPageBytes));
  const uint64_t to = std::min(g.reserved.load(std::memory_order_acquire),
                               RoundUp(used + PrefaultWindow(), kPageBytes));
  if (base == nullptr || to <= from) return;
  madvise(base + from, to - from, MADV_POPULATE_WRITE);
  g.prefaulted.store(to, std::memory_order_relaxed);
}

// Helper thread: unmaps the pool's pages far behind the claims (see kKeepBehind). A
// thread that still writes into an old block there (a thread that records rarely) faults
// its page back in from the page cache, with everything it wrote; nothing is lost, since
// MAP_SHARED pages are the file's.
void ReleaseBehind() {
  Global& g = G();
  char* base = g.base.load(std::memory_order_acquire);
  const uint64_t used = g.next.load(std::memory_order_relaxed) & ~kClosedBit;
  if (base == nullptr || used < kKeepBehind) return;
  const uint64_t to = (used - kKeepBehind) / kReleaseStep * kReleaseStep;
  const uint64_t from = std::max(g.released, g.release_floor);
  if (to < from + kReleaseStep) return;
  madvise(base + from, to - from, MADV_DONTNEED);
  g.released = to;
}

// Claims `bytes` (a multiple of kBlockAlign) of the pool; returns the offset, or 0.
uint64_t ClaimBlock(uint64_t bytes) {
  Global& g = G();
  uint64_t v = g.next.load(std::memory_order_acquire);
  for (;;) {
    if (v & kClosedBit) return 0;
    const uint64_t end = v + bytes;
    if (end > g.map_bytes) {
      CounterAdd(CounterId::kBufferLimitReached, 1);
      return 0;
    }
    if (end > g.reserved.load(std::memory_order_acquire)) {
      WakeHelper();
      if (!EnsureReserved(end)) return 0;
      v = g.next.load(std::memory_order_acquire);
      continue;
    }
    if (g.next.compare_exchange_weak(v, end, std::memory_order_acq_rel)) {
      if (HelperNeeded(end)) WakeHelper();
      return v;
    }
  }
}

void SetOwner(BlockHeader* h, const ThreadBuffer* b) {
  std::atomic_ref<uint32_t>(h->owner_tid).store(b->tid, std::memory_order_relaxed);
  std::atomic_ref<uint64_t>(h->owner_serial).store(b->serial, std::memory_order_relaxed);
  std::atomic_ref<uint64_t>(h->dropped_events).store(b->dropped_events, std::memory_order_relaxed);
  std::atomic_ref<uint64_t>(h->dropped_ranges).store(b->dropped_ranges, std::memory_order_relaxed);
}

void UseBlock(ThreadBuffer* b, BlockHeader* h, uint32_t used) {
  b->block = h;
  b->slots = reinterpret_cast<Slot*>(reinterpret_cast<char*>(h) + raw::kBlockHeaderBytes);
  b->committed = reinterpret_cast<std::atomic<uint32_t>*>(&h->committed);
  b->used = used;
  b->capacity = (h->block_bytes - raw::kBlockHeaderBytes) / kSlotBytes;
}

void Park(BlockHeader* h) {
  Global& g = G();
  const uint64_t offset = static_cast<uint64_t>(reinterpret_cast<char*>(h) - g.base.load());
  for (auto& slot : g.parked) {
    uint64_t empty = 0;
    if (slot.compare_exchange_strong(empty, offset)) {
      g.parked_count.fetch_add(1, std::memory_order_release);
      return;
    }
  }
}

// Takes a parked block with at least `min_free` free slots (a block an exited thread
// left, or one a thread moved on from).
BlockHeader* Adopt(uint32_t min_free) {
  Global& g = G();
  if (g.parked_count.load(std::memory_order_acquire) <= 0) return nullptr;
  char* base = g.base.load();
  for (auto& slot : g.parked) {
    if (slot.load(std::memory_order_relaxed) == 0) continue;
    const uint64_t offset = slot.exchange(0, std::memory_order_acq_rel);
    if (offset == 0) continue;
    g.parked_count.fetch_sub(1, std::memory_order_relaxed);
    auto* h = reinterpret_cast<BlockHeader*>(base + offset);
    const uint32_t capacity = (h->block_bytes - raw::kBlockHeaderBytes) / kSlotBytes;
    const uint32_t used = std::atomic_ref<uint32_t>(h->committed).load(std::memory_order_acquire);
    if (capacity >= used + min_free) return h;
    Park(h);  // too small for this request; keep it for a smaller one
    return nullptr;
  }
  return nullptr;
}

}  // namespace

void NoteReentrant() {
  CounterAdd(CounterId::kEventsDropped, 1);
  CounterAdd(CounterId::kEventsDroppedReentrant, 1);
}

void NoteDropped(ThreadBuffer* b, bool range) {
  b->dropped_events += 1;
  if (range) b->dropped_ranges += 1;
  b->gap_pending = true;
  if (b->block != nullptr) SetOwner(b->block, b);  // the tally survives a kill
  CounterAdd(CounterId::kEventsDropped, 1);
  if (range) CounterAdd(CounterId::kRangesDropped, 1);
}

void WriteGap(ThreadBuffer* b, raw::GapReason reason) {
  Slot s{};
  s.kind = raw::kSlotGap;
  s.flags = g_timestamp_flags;
  s.aux = static_cast<uint16_t>(reason);
  s.tid = b->tid;
  s.start_ns = HotTimestamp();
  s.value = b->dropped_events;
  s.correlation = b->dropped_ranges;
  s.end_ns = static_cast<int64_t>(b->serial);
  WriteSlot(b, s);
  b->gap_pending = false;
}

bool MoreSpace(ThreadBuffer* b, uint32_t need) {
  Global& g = G();
  if (g.base.load(std::memory_order_acquire) == nullptr) return false;
  const uint32_t min_free = need + b->open_recorded + kReservedSlots;
  BlockHeader* h = Adopt(min_free + 1);  // +1: the segment record
  if (h != nullptr) {
    BlockHeader* old = b->block;
    UseBlock(b, h, std::atomic_ref<uint32_t>(h->committed).load(std::memory_order_acquire));
    SetOwner(h, b);
    Slot s{};
    s.kind = raw::kSlotSegment;
    s.flags = g_timestamp_flags;
    s.tid = b->tid;
    s.start_ns = HotTimestamp();
    s.value = g.sequence.fetch_add(1, std::memory_order_relaxed);
    s.end_ns = static_cast<int64_t>(b->serial);
    WriteSlot(b, s);
    if (old != nullptr && old != h) {
      const uint32_t old_free = (old->block_bytes - raw::kBlockHeaderBytes) / kSlotBytes -
                                std::atomic_ref<uint32_t>(old->committed).load();
      if (old_free >= kMinParkedSlots) Park(old);
    }
    return true;
  }
  uint64_t bytes = b->block == nullptr ? kFirstBlockBytes : kBlockBytes;
  const uint64_t min_bytes = raw::kBlockHeaderBytes + static_cast<uint64_t>(min_free) * kSlotBytes;
  if (bytes < min_bytes) bytes = RoundUp(min_bytes + kBlockBytes / 2, raw::kBlockAlign);
  const uint64_t offset = ClaimBlock(bytes);
  if (offset == 0) return false;
  h = reinterpret_cast<BlockHeader*>(g.base.load() + offset);
  BlockHeader init{};
  init.magic = raw::kBlockMagic;
  init.type = static_cast<uint16_t>(raw::BlockType::kEvents);
  init.version = raw::kBlockFormatVersion;
  init.block_bytes = static_cast<uint32_t>(bytes);
  init.sequence = g.sequence.fetch_add(1, std::memory_order_relaxed);
  init.header_crc = raw::BlockHeaderCrc(init);
  ReadTscPair(init.claim_tsc, init.claim_mono);
  // The magic goes last: a process killed while claiming leaves a header without it,
  // which readers skip as unclaimed space (nothing was recorded there yet).
  std::memcpy(reinterpret_cast<char*>(h) + 4, reinterpret_cast<const char*>(&init) + 4,
              sizeof(init) - 4);
  SetOwner(h, b);
  std::atomic_ref<uint32_t>(h->magic).store(raw::kBlockMagic, std::memory_order_release);
  BlockHeader* old = b->block;
  UseBlock(b, h, 0);
  b->committed->store(0, std::memory_order_release);
  if (old != nullptr) {
    const uint32_t old_free = (old->block_bytes - raw::kBlockHeaderBytes) / kSlotBytes -
                              std::atomic_ref<uint32_t>(old->committed).load();
    if (old_free >= kMinParkedSlots) Park(old);
  }
  return true;
}

namespace {

// Writes a string definition into the thread's block; false when there is no room.
bool WriteStringDef(ThreadBuffer* b, uint32_t id, const char* text, uint32_t length,
                    const char** stored) {
  const uint32_t slots = 1 + (length + kSlotBytes - 1) / kSlotBytes;
  // Room for the string and for the event that needs it (a push and its pop).
  const uint32_t need = slots + 2 + (b->gap_pending ? 1 : 0);
  if (!Fits(b, need) && !MoreSpace(b, need)) return false;
  if (b->gap_pending) WriteGap(b, raw::GapReason::kResumed);
  Slot* s = b->slots + b->used;
  Slot def{};
  def.kind = raw::kSlotString;
  def.name = id;
  def.value = length;
  *s = def;
  char* dst = reinterpret_cast<char*>(s + 1);
  std::memcpy(dst, text, length);
  const uint32_t tail = (slots - 1) * kSlotBytes - length;
  if (tail > 0) std::memset(dst + length, 0, tail);
  b->used += slots;
  b->committed->store(b->used, std::memory_order_release);
  if (stored != nullptr) *stored = dst;
  return true;
}

void WriteAnchor() {
  Global& g = G();
  FileHeaderBlock* h = g.header.load(std::memory_order_acquire);
  if (h == nullptr) return;
  raw::TscAnchor a{};
  const ClockPair pair = ReadClockPair();
  ReadTscPair(a.tsc, a.monotonic_ns);
  a.realtime_ns = pair.realtime_ns + (a.monotonic_ns - pair.monotonic_ns);
  a.uncertainty_ns = static_cast<uint32_t>(std::min<int64_t>(pair.uncertainty_ns, UINT32_MAX));
  a.crc = raw::TscAnchorCrc(a);
  const uint32_t n = std::atomic_ref<uint32_t>(h->anchor_count).load(std::memory_order_relaxed);
  if (n < raw::kMaxTscAnchors) {
    h->anchors[n] = a;
    std::atomic_ref<uint32_t>(h->anchor_count).store(n + 1, std::memory_order_release);
  } else {
    // Full: alternate between the last two entries, so that one intact recent anchor
    // survives a kill in the middle of rewriting the other.
    static uint32_t toggle = 0;
    h->anchors[raw::kMaxTscAnchors - 1 - (toggle++ & 1)] = a;
  }
}

void* HelperMain(void*) {
  Global& g = G();
  // The helper never records into the trace: it only keeps anchors and space.
  pthread_setname_np(pthread_self(), "teller-helper");
  int64_t interval_ms = 1;  // anchors at 1, 2, 4, ... ms, then every anchor_ms
  int64_t next_anchor = EventClockNs() + interval_ms * 1000000;
  for (;;) {
    // Announce the work before checking `stop` (both sequentially consistent, as in
    // FlushAndClose): either closing sees the helper busy and waits, or the helper sees
    // the stop and touches nothing more.
    g.helper_busy.store(true);
    if (g.stop.load()) break;
    g.wake_pending.store(false, std::memory_order_relaxed);
    const int64_t now = EventClockNs();
    if (now >= next_anchor) {
      WriteAnchor();
      interval_ms = std::min<int64_t>(interval_ms * 2, g.anchor_ms);
      next_anchor = now + interval_ms * 1000000;
    }
    const uint64_t used = g.next.load(std::memory_order_relaxed);
    if ((used & kClosedBit) == 0) {
      // Allocate in large steps once the headroom is half used (fallocate is cheap; its
      // pages cost nothing until touched), then fault in the next pages to be claimed.
      if (g.reserved.load(std::memory_order_relaxed) < used + Headroom() / 2) {
        EnsureReserved(used + Headroom());
      }
      Prefault();
      ReleaseBehind();
    }
    g.helper_busy.store(false, std::memory_order_release);
    timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    const int64_t wait_ns = std::max<int64_t>(next_anchor - EventClockNs(), 100000);
    const int64_t ns = deadline.tv_nsec + wait_ns;
    deadline.tv_sec += ns / 1000000000;
    deadline.tv_nsec = ns % 1000000000;
    while (sem_timedwait(&g.wake, &deadline) != 0 && errno == EINTR) {
    }
    while (sem_trywait(&g.wake) == 0) {  // coalesce wake-ups
    }
  }
  g.helper_busy.store(false, std::memory_order_release);
  return nullptr;
}

void StartHelperLocked() {
  Global& g = G();
  if (g.helper_running || g.closed.load()) return;
  // Block all signals in the helper so the application's handlers run on its threads.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  g.stop.store(false);
  g.helper_busy.store(false);
  g.wake_pending.store(false);
  // Detached: closing never joins it (it would wait for the helper to be scheduled).
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  g.helper_running = pthread_create(&g.helper, &attr, HelperMain, nullptr) == 0;
  pthread_attr_destroy(&attr);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

void* MapFile(int fd, uint64_t& bytes) {
  // The whole pool is mapped once (address space only; pages exist where the file is
  // allocated and are touched lazily), so blocks never move and no thread ever remaps.
  while (bytes >= 2 * kInitialReserve) {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
    if (p != MAP_FAILED) return p;
    bytes /= 2;  // an address-space limit (ulimit -v): take less
  }
  return nullptr;
}

bool CreateFileLocked() {
  Global& g = G();
  const ProcessIdentity id = ReadProcessIdentity();
  int fd = -1;
  std::string path;
  for (int n = 0; n < 1000 && fd < 0; ++n) {
    path = g.dir + "/" + RawFileName(id.host, id.pid, n);
    fd = open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) return false;
  uint64_t map_bytes = g.buffer_bytes;
  void* map = nullptr;
  if (posix_fallocate(fd, 0, static_cast<off_t>(kInitialReserve)) == 0) {
    map = MapFile(fd, map_bytes);
  }
  close(fd);
  if (map == nullptr) {
    unlink(path.c_str());  // no room even for the header: leave nothing half-made
    return false;
  }
  char* base = static_cast<char*>(map);
  g.path = path;
  g.map_bytes = map_bytes;
  g.reserved.store(kInitialReserve);
  g.prefaulted.store(0);
  g.released = 0;
  g.release_floor = 0;
  g.space_retry_ns.store(0);
  for (auto& p : g.parked) p.store(0);
  g.parked_count.store(0);

  auto* h = reinterpret_cast<FileHeaderBlock*>(base);
  std::memcpy(h->signature, raw::kFileSignature.data(), raw::kFileSignature.size());
  h->record_bytes = sizeof(raw::EventRecord);
  h->ns_per_tick = g.ns_per_tick;
  for (const CounterInfo& c : kCounterTable) {
    const int slot = kSlots.slot_of[static_cast<size_t>(c.id)];
    if (slot < 0) continue;
    std::memcpy(h->counters[slot].name, c.name.data(),
                std::min<size_t>(c.name.size(), sizeof(h->counters[slot].name) - 1));
  }
  BlockHeader init{};
  init.magic = raw::kBlockMagic;
  init.type = static_cast<uint16_t>(raw::BlockType::kFileHeader);
  init.version = raw::kBlockFormatVersion;
  init.block_bytes = raw::kFileHeaderBlockBytes;
  init.header_crc = raw::BlockHeaderCrc(init);
  // Everything but the magic now; the magic once the file is complete (a process killed
  // in between leaves a file that reads as an empty trace).
  std::memcpy(reinterpret_cast<char*>(&h->header) + 4, reinterpret_cast<const char*>(&init) + 4,
              sizeof(init) - 4);

  // Process identity: one block after the header.
  raw::PayloadBuilder info;
  for (const auto& [key, value] : id.fields) info.AddKeyValue(key, value);
  info.AddKeyValue("anchor_ms", std::to_string(g.anchor_ms));
  info.AddKeyValue("buffer_mb", std::to_string(map_bytes >> 20));
  const uint64_t info_bytes =
      RoundUp(raw::kBlockHeaderBytes + 4 + info.bytes().size(), raw::kBlockAlign);
  g.next.store(raw::kFileHeaderBlockBytes + info_bytes);
  g.sequence.store(2);
  // The header stays mapped (counters and anchors are written there all along).
  g.release_floor = raw::kFileHeaderBlockBytes + info_bytes;
  if (g.next.load() > kInitialReserve) {
    g.base.store(base);
    if (!EnsureReserved(g.next.load())) g.next.store(raw::kFileHeaderBlockBytes);
  }
  if (g.next.load() > raw::kFileHeaderBlockBytes) {
    auto* ib = reinterpret_cast<BlockHeader*>(base + raw::kFileHeaderBlockBytes);
    const uint32_t count = info.count();
    std::memcpy(reinterpret_cast<char*>(ib) + raw::kBlockHeaderBytes, &count, 4);
    std::memcpy(reinterpret_cast<char*>(ib) + raw::kBlockHeaderBytes + 4, info.bytes().data(),
                info.bytes().size());
    ib->magic = raw::kBlockMagic;
    ib->type = static_cast<uint16_t>(raw::BlockType::kProcessInfo);
    ib->version = raw::kBlockFormatVersion;
    ib->block_bytes = static_cast<uint32_t>(info_bytes);
    ib->sequence = 1;
    ib->header_crc = raw::BlockHeaderCrc(*ib);
    std::atomic_ref<uint32_t>(ib->committed)
        .store(static_cast<uint32_t>(4 + info.bytes().size()), std::memory_order_release);
  }
  g.base.store(base, std::memory_order_release);
  g.header.store(h, std::memory_order_release);
  WriteAnchor();
  std::atomic_ref<uint32_t>(h->header.magic).store(raw::kBlockMagic, std::memory_order_release);
  g.file_generation = g_generation.load();
  g.globals_pending.store(g.globals.load() != nullptr);
  StartHelperLocked();
  return true;
}

// The file of this process generation, created at the first event.
bool EnsureFile() {
  Global& g = G();
  if (g.header.load(std::memory_order_acquire) != nullptr &&
      g.file_generation == g_generation.load(std::memory_order_relaxed)) {
    return true;
  }
  if (g.create_failed.load(std::memory_order_relaxed)) return false;
  std::lock_guard<std::mutex> lock(g.create_mu);
  if (g.header.load() != nullptr && g.file_generation == g_generation.load()) return true;
  if (g.create_failed.load() || g.closed.load()) return false;
  if (!CreateFileLocked()) {
    g.create_failed.store(true);
    return false;
  }
  return true;
}

void ResetBuffer(ThreadBuffer* b) {
  b->slots = nullptr;
  b->committed = nullptr;
  b->block = nullptr;
  b->used = 0;
  b->capacity = 0;
  b->open_recorded = 0;
  b->skip_depth = 0;
  b->gap_pending = false;
  b->dropped_events = 0;
  b->dropped_ranges = 0;
  b->reentrant_open.store(0, std::memory_order_relaxed);
  b->busy = 0;
  b->tid = static_cast<uint32_t>(syscall(SYS_gettid));
  b->serial = G().next_serial.fetch_add(1, std::memory_order_relaxed);
  if (b->generation != g_generation.load()) {
    // Cached texts point into another process's file (this is a forked child).
    std::memset(static_cast<void*>(b->cache), 0,
                (b->cache_mask + 1) * sizeof(ThreadBuffer::CacheEntry));
    b->generation = g_generation.load();
  }
}

ThreadBuffer* NewBuffer() {
  Global& g = G();
  for (auto& slot : g.free_buffers) {
    if (slot.load(std::memory_order_relaxed) == nullptr) continue;
    if (ThreadBuffer* b = slot.exchange(nullptr, std::memory_order_acq_rel)) return b;
  }
  // No MAP_POPULATE: a thread touches the pages of its cache that its strings hash to.
  void* p = mmap(nullptr, kBufferBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  auto* b = new (p) ThreadBuffer();
  b->cache = reinterpret_cast<ThreadBuffer::CacheEntry*>(static_cast<char*>(p) +
                                                         RoundUp(sizeof(ThreadBuffer), 64));
  b->cache_mask = kCacheEntries - 1;
  b->generation = g_generation.load();  // fresh pages are zero: an empty cache
  return b;
}

void ReleaseBuffer(ThreadBuffer* b) {
  Global& g = G();
  for (auto& slot : g.free_buffers) {
    ThreadBuffer* empty = nullptr;
    if (slot.compare_exchange_strong(empty, b)) return;
  }
  munmap(b, kBufferBytes);
}

// Writes every global string into the calling thread's blocks (a new file of a forked
// child, whose program still holds the parent's handles).
void EmitGlobals(ThreadBuffer* b) {
  Global& g = G();
  bool expected = true;
  if (!g.globals_pending.load(std::memory_order_relaxed) ||
      !g.globals_pending.compare_exchange_strong(expected, false) || !EnterRecorder(b)) {
    return;
  }
  for (GlobalString* s = g.globals.load(std::memory_order_acquire); s != nullptr; s = s->next) {
    if (!WriteStringDef(b, s->id, s->text, s->length, nullptr)) {
      CounterAdd(CounterId::kStringsDropped, 1);
    }
  }
  LeaveRecorder(b);
}

void ThreadExit(void* arg) {
  auto* b = static_cast<ThreadBuffer*>(arg);
  if (tls_buffer == b) tls_buffer = nullptr;
  b->busy = 1;  // a late signal handler must not write while the block is handed over
  std::atomic_signal_fence(std::memory_order_seq_cst);
  if (b->generation == g_generation.load() && b->block != nullptr) {
    if (b->gap_pending) WriteGap(b, raw::GapReason::kThreadExit);  // the reserved slot
    const uint32_t free_slots = b->capacity - b->used;
    if (free_slots >= kMinParkedSlots) Park(b->block);
  }
  ReleaseBuffer(b);
}

void AtForkChild() {
  Global& g = G();
  // Only the forking thread exists now. The parent's file stays the parent's: unmap it
  // here, and let the child create its own at its first event.
  g_generation.fetch_add(1);
  char* base = g.base.exchange(nullptr);
  g.header.store(nullptr);
  if (base != nullptr) munmap(base, g.map_bytes);
  g.next.store(0);
  g.reserved.store(0);
  g.prefaulted.store(0);
  for (auto& p : g.parked) p.store(0);
  g.parked_count.store(0);
  g.helper_running = false;  // the parent's helper thread does not exist here
  g.helper_busy.store(false);
  g.wake_pending.store(false);
  g.create_failed.store(false);
  new (&g.create_mu) std::mutex();
  new (&g.named_mu) std::mutex();
  sem_destroy(&g.wake);
  sem_init(&g.wake, 0, 0);
  tls_registering = false;
  if (ThreadBuffer* b = tls_buffer) {
    // Ranges open across the fork close in the child without being its own.
    b->inherited_depth += b->open_recorded + b->skip_depth;
  }
}

void AtExit() { FlushAndClose(); }

#if defined(__x86_64__)
// TSC rate over a short busy wait: readers use it only when a file has a single anchor
// (a process killed within a millisecond of its first event).
double MeasureNsPerTick() {
  int64_t t0, m0, t1, m1;
  ReadTscPair(t0, m0);
  do {
    ReadTscPair(t1, m1);
  } while (m1 - m0 < 200000);
  return t1 > t0 ? static_cast<double>(m1 - m0) / static_cast<double>(t1 - t0) : 0;
}
#endif

}  // namespace

bool InitRecorder() {
  Global& g = G();
  std::lock_guard<std::mutex> lock(g.create_mu);
  if (g.initialized) return g_recorder_enabled.load();
  g.initialized = true;
  const char* dir = std::getenv("TELLER_TRACE_DIR");
  if (dir == nullptr || *dir == '\0') return false;  // not under `teller run`: stay off
  g.dir = dir;
  if (const char* ms = std::getenv("TELLER_FLUSH_MS")) {
    const int v = std::atoi(ms);
    if (v > 0) g.anchor_ms = std::max(v, 10);
  }
  if (const char* mb = std::getenv("TELLER_BUFFER_MB")) {
    const long long v = std::atoll(mb);
    if (v >= 1 && v <= (1LL << 26)) g.buffer_bytes = static_cast<uint64_t>(v) << 20;
  }
  if (g.buffer_bytes < 2 * kInitialReserve) g.buffer_bytes = 2 * kInitialReserve;
#if defined(__x86_64__)
  const char* clock = std::getenv("TELLER_CLOCK");
  const bool want_tsc = clock == nullptr || std::string_view(clock) != "monotonic";
  if (want_tsc && CpuHasInvariantTsc()) {
    g_timestamp_flags = raw::kFlagRawTsc;
    g.ns_per_tick = MeasureNsPerTick();
  }
#endif
  sem_init(&g.wake, 0, 0);
  pthread_key_create(&g.thread_key, ThreadExit);
  pthread_atfork(nullptr, nullptr, AtForkChild);
  std::atexit(AtExit);
  if (!CreateFileLocked()) return false;
  g_recorder_enabled.store(true, std::memory_order_release);
  return true;
}

ThreadBuffer* RegisterThread() {
  if (!g_recorder_enabled.load(std::memory_order_acquire)) return nullptr;
  if (tls_registering) {  // a signal handler interrupted this thread's registration
    NoteReentrant();
    return nullptr;
  }
  tls_registering = true;
  ThreadBuffer* b = nullptr;
  if (EnsureFile() && (b = NewBuffer()) != nullptr) {
    ResetBuffer(b);
    b->inherited_depth = 0;
    b->depth = 0;
    b->api_depth = 0;
    pthread_setspecific(G().thread_key, b);
    tls_buffer = b;
    EmitGlobals(b);
    CounterAdd(CounterId::kThreads, 1);
  }
  tls_registering = false;
  return b;
}

ThreadBuffer* RenewThread(ThreadBuffer* b) {
  if (tls_registering || b->busy) return nullptr;
  tls_registering = true;
  ThreadBuffer* result = nullptr;
  if (EnsureFile()) {
    ResetBuffer(b);
    EmitGlobals(b);
    CounterAdd(CounterId::kThreads, 1);
    result = b;
  }
  tls_registering = false;
  return result;
}

uint32_t InternSlow(ThreadBuffer* b, const char* text, uint32_t length, uint64_t hash) {
  if (b->skip_depth != 0) return kInternFailed;  // the event is dropped anyway
  const uint32_t id = g_next_string_id.fetch_add(1, std::memory_order_relaxed);
  const char* stored = nullptr;
  if (!WriteStringDef(b, id, text, length, &stored)) {
    CounterAdd(CounterId::kStringsDropped, 1);
    return kInternFailed;
  }
  // The newest string goes first in its set; the set's oldest entry is evicted.
  ThreadBuffer::CacheEntry* set =
      b->cache + (hash & b->cache_mask & ~(ThreadBuffer::kCacheWays - 1));
  std::memmove(static_cast<void*>(set + 1), set,
               (ThreadBuffer::kCacheWays - 1) * sizeof(ThreadBuffer::CacheEntry));
  set[0] = {hash, stored, length, id};
  return id;
}

uint32_t InternGlobal(std::string_view text) {
  if (text.size() > kMaxStringBytes) text = text.substr(0, kMaxStringBytes);
  ThreadBuffer* b = CurrentBuffer();
  if (b == nullptr) return 0;
  Global& g = G();
  // Registration calls repeat (a handle per call site): reuse the id of equal text.
  int scanned = 0;
  for (GlobalString* s = g.globals.load(std::memory_order_acquire); s != nullptr && scanned < 4096;
       s = s->next, ++scanned) {
    if (s->length == text.size() && std::memcmp(s->text, text.data(), text.size()) == 0) {
      return s->id;
    }
  }
  if (!EnterRecorder(b)) return 0;
  const uint32_t id = g_next_string_id.fetch_add(1, std::memory_order_relaxed);
  const size_t bytes = RoundUp(sizeof(GlobalString) + text.size(), 4096);
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p != MAP_FAILED) {
    auto* s = static_cast<GlobalString*>(p);
    s->id = id;
    s->length = static_cast<uint32_t>(text.size());
    std::memcpy(s->text, text.data(), text.size());
    s->next = g.globals.load(std::memory_order_relaxed);
    while (!g.globals.compare_exchange_weak(s->next, s, std::memory_order_release)) {
    }
  }
  if (!WriteStringDef(b, id, text.data(), static_cast<uint32_t>(text.size()), nullptr)) {
    CounterAdd(CounterId::kStringsDropped, 1);
  }
  LeaveRecorder(b);
  return id;
}

void AddCounter(std::string_view name, uint64_t delta) {
  // Callers pass the registry's names (CounterName(id)): a compile-time sorted lookup and
  // a relaxed add into the file header, no lock and no allocation.
  if (const auto id = FindCounter(name); id && kSlots.slot_of[static_cast<size_t>(*id)] >= 0) {
    CounterAdd(*id, delta);
    return;
  }
  Global& g = G();
  std::lock_guard<std::mutex> lock(g.named_mu);
  FileHeaderBlock* h = g.header.load(std::memory_order_acquire);
  if (h == nullptr) return;
  const size_t len = std::min(name.size(), sizeof(h->counters[0].name) - 1);
  for (uint32_t i = kSlots.used; i < raw::kMaxCounterSlots; ++i) {
    raw::CounterSlot& c = h->counters[i];
    if (c.name[0] == '\0') {
      std::memcpy(c.name, name.data(), len);
    } else if (std::string_view(c.name) != name.substr(0, len)) {
      continue;
    }
    std::atomic_ref<uint64_t>(c.value).fetch_add(delta, std::memory_order_relaxed);
    return;
  }
}

void SetPreCloseHook(void (*hook)()) { G().pre_close_hook = hook; }

void PushEventWaiting(ThreadBuffer* b, const raw::EventRecord& event) { PushEvent(b, event); }

void FlushNow() {}

void FlushAndClose() {
  Global& g = G();
  if (!g_recorder_enabled.load() || g.closed.exchange(true)) return;
  if (g.pre_close_hook != nullptr) g.pre_close_hook();  // e.g. CUPTI's final activity flush
  if (g.helper_running) {
    // Stop the helper without waiting for it to run: only work it is doing right now
    // (an allocation, faulting in, an anchor) is waited for. It then sees `stop` and
    // ends by itself, or with the process.
    g.stop.store(true);
    while (g.helper_busy.load()) sched_yield();
    sem_post(&g.wake);
    g.helper_running = false;
  }
  FileHeaderBlock* h = g.header.load(std::memory_order_acquire);
  if (h == nullptr || g.file_generation != g_generation.load()) return;
  if (ThreadBuffer* b = tls_buffer; b != nullptr && b->block != nullptr && b->gap_pending &&
                                    b->generation == g_generation.load() && EnterRecorder(b)) {
    WriteGap(b, raw::GapReason::kThreadExit);
    LeaveRecorder(b);
  }
  WriteAnchor();
  std::atomic_ref<uint32_t>(h->clean_end).store(1, std::memory_order_release);
  // No block can be claimed from here on; trim the space allocated ahead. Threads that
  // still record do so into blocks below the cut.
  const uint64_t end = g.next.fetch_or(kClosedBit) & ~kClosedBit;
  if (g.reserved.load() >= end + kTrimMinBytes &&
      truncate(g.path.c_str(), static_cast<off_t>(end)) == 0) {
    g.reserved.store(end);
  }
}

}  // namespace teller::collect
