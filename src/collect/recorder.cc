#include "src/collect/recorder.h"

#include <fcntl.h>
#include <pthread.h>
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
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "teller/collect/process_info.h"
#include "teller/core/counter_registry.h"
#include "teller/format/raw_writer.h"

namespace teller::collect {

thread_local ThreadBuffer* tls_buffer __attribute__((tls_model("initial-exec"))) = nullptr;
std::atomic<bool> g_recorder_enabled{false};
uint8_t g_timestamp_flags = 0;

namespace {

constexpr uint64_t kStringRingBytes = 256 * 1024;
constexpr uint64_t kCacheEntries = 4096;
constexpr size_t kCacheArenaBytes = 256 * 1024;
constexpr uint32_t kPadMarker = 0xFFFFFFFFu;
constexpr int64_t kAnchorPeriodNs = 1000000000;  // clock anchor + counters every second
constexpr int64_t kMinCalibrationNs = 50000000;  // baseline of the TSC slope

#if defined(__x86_64__)
// The TSC is a usable clock only when it ticks at a constant rate in every power state
// and across cores: CPUID leaf 0x80000007, EDX bit 8 ("invariant TSC"; Linux shows it as
// the nonstop_tsc flag).
bool CpuHasInvariantTsc() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_max(0x80000000, nullptr) < 0x80000007) return false;
  __cpuid(0x80000007, eax, ebx, ecx, edx);
  return (edx & (1u << 8)) != 0;
}

// A (TSC, CLOCK_MONOTONIC) pair read back to back; the TSC is read between two clock
// reads and paired with their midpoint.
void ReadTscPair(int64_t& tsc, int64_t& mono) {
  const int64_t before = EventClockNs();
  tsc = static_cast<int64_t>(__rdtsc());
  const int64_t after = EventClockNs();
  mono = before + (after - before) / 2;
}
#endif

// A counter whose name is not a row of the counter registry (none of ours today).
struct NamedCounter {
  std::string name;
  std::atomic<uint64_t> value{0};
};

// Process-wide state. Deliberately leaked: late NVTX calls from other threads during
// exit must never touch destroyed objects.
struct Global {
  std::mutex mu;  // guards everything below except the atomics; held while writing
  bool initialized = false;
  std::string dir;
  int flush_ms = 100;
  uint64_t ring_events = 32768;
  std::unique_ptr<raw::RawFileWriter> writer;
  bool write_error_reported = false;
  std::vector<ThreadBuffer*> active;
  std::vector<ThreadBuffer*> free_pool;
  std::vector<std::pair<uint32_t, std::string>> global_strings;
  size_t global_strings_written = 0;
  // The registry's collector counters by CounterId: adding needs no lock.
  std::array<std::atomic<uint64_t>, kCounterCount> counters{};
  std::vector<std::unique_ptr<NamedCounter>> other_counters;
  pthread_t flusher{};
  bool flusher_running = false;
  std::atomic<bool> stop{false};
  bool shutting_down = false;
  int64_t last_anchor_ns = 0;
  void (*pre_close_hook)() = nullptr;
  // TSC calibration (see HotTimestamp): events are converted with the line through the
  // base point (at least kMinCalibrationNs old) and the newest point.
  int64_t tsc_base = 0, mono_base = 0;
  int64_t tsc_now = 0, mono_now = 0;
  double ns_per_tick = 0;
  sem_t wake;
  pthread_key_t thread_key;
  std::vector<char> string_scratch;  // reused payload buffer for string chunks
};

Global& G() {
  static Global* g = new Global();
  return *g;
}

std::atomic<uint32_t> g_next_string_id{1};

uint64_t RoundUpPow2(uint64_t v) {
  uint64_t p = 1;
  while (p < v) p <<= 1;
  return p;
}

void* MapPopulated(size_t bytes) {
  // MAP_POPULATE: touching fresh pages costs microseconds each on these VMs; pay it
  // once, at registration, not on the hot path.
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
                 -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

std::atomic<uint64_t>& Counter(CounterId id) { return G().counters[static_cast<size_t>(id)]; }

NamedCounter* OtherCounterLocked(std::string_view name) {
  Global& g = G();
  for (auto& c : g.other_counters) {
    if (c->name == name) return c.get();
  }
  g.other_counters.push_back(std::make_unique<NamedCounter>());
  g.other_counters.back()->name = std::string(name);
  return g.other_counters.back().get();
}

void ReportWriteError(const Status& status) {
  Global& g = G();
  Counter(CounterId::kWriteErrors).fetch_add(1, std::memory_order_relaxed);
  if (!g.write_error_reported) {
    g.write_error_reported = true;
    std::fprintf(stderr, "teller: %s (further trace data of this process may be lost)\n",
                 status.message().c_str());
  }
}

void WriteLocked(const Status& status) {
  if (!status.ok()) ReportWriteError(status);
}

bool OpenFileLocked() {
  Global& g = G();
  if (g.writer) return true;
  const ProcessIdentity id = ReadProcessIdentity();
  for (int n = 0; n < 1000; ++n) {
    const std::string path = g.dir + "/" + RawFileName(id.host, id.pid, n);
    auto created = raw::RawFileWriter::Create(path);
    if (created.ok()) {
      g.writer = std::move(created).value();
      break;
    }
    if (access(path.c_str(), F_OK) != 0) {  // a real error, not a name clash
      std::fprintf(stderr, "teller: %s; tracing disabled in this process\n",
                   created.status().message().c_str());
      return false;
    }
  }
  if (!g.writer) return false;
  raw::PayloadBuilder info;
  for (const auto& [key, value] : id.fields) info.AddKeyValue(key, value);
  info.AddKeyValue("flush_ms", std::to_string(g.flush_ms));
  info.AddKeyValue("ring_events", std::to_string(g.ring_events));
  WriteLocked(g.writer->WritePayload(raw::ChunkType::kProcessInfo, info));
  WriteLocked(g.writer->WriteClockAnchor(ReadClockPair()));
  g.last_anchor_ns = EventClockNs();
  g.global_strings_written = 0;  // (re)emit every shared string into this file
  return true;
}

ThreadBuffer* AllocateBuffer(uint64_t ring_events) {
  auto* b = new ThreadBuffer();
  b->capacity = ring_events;
  b->mask = ring_events - 1;
  b->wake_mask = ring_events / 4 - 1;
  b->events = static_cast<raw::EventRecord*>(MapPopulated(ring_events * sizeof(raw::EventRecord)));
  b->strings = static_cast<char*>(MapPopulated(kStringRingBytes));
  b->string_capacity = kStringRingBytes;
  b->cache = static_cast<ThreadBuffer::CacheEntry*>(
      MapPopulated(kCacheEntries * sizeof(ThreadBuffer::CacheEntry)));
  b->cache_mask = kCacheEntries - 1;
  b->cache_arena = static_cast<char*>(MapPopulated(kCacheArenaBytes));
  b->cache_arena_size = kCacheArenaBytes;
  if (!b->events || !b->strings || !b->cache || !b->cache_arena) return nullptr;  // OOM: stay off
  return b;
}

void ResetBuffer(ThreadBuffer* b) {
  b->head.store(0, std::memory_order_relaxed);
  b->tail.store(0, std::memory_order_relaxed);
  b->string_head.store(0, std::memory_order_relaxed);
  b->string_tail.store(0, std::memory_order_relaxed);
  b->cached_tail = 0;
  b->cached_string_tail = 0;
  b->dropped_events.store(0, std::memory_order_relaxed);
  b->dropped_strings.store(0, std::memory_order_relaxed);
  b->flushed_dropped = 0;
  b->last_converted_ns = 0;
  b->depth = 0;
  b->api_depth = 0;
  b->retired.store(false, std::memory_order_relaxed);
  std::memset(b->cache, 0, (b->cache_mask + 1) * sizeof(ThreadBuffer::CacheEntry));
  b->cache_arena_used = 0;
}

// Writes the strings in [tail, head) of a buffer's string ring as one chunk.
void WriteStringRange(ThreadBuffer* b, uint64_t tail, uint64_t head) {
  Global& g = G();
  if (tail == head) return;
  auto& out = g.string_scratch;
  out.clear();
  uint32_t count = 0;
  const uint64_t mask = b->string_capacity - 1;
  while (tail < head) {
    const char* p = b->strings + (tail & mask);
    uint32_t id, len;
    std::memcpy(&id, p, 4);
    if (id == kPadMarker) {
      tail += b->string_capacity - (tail & mask);  // skip to the ring start
      continue;
    }
    std::memcpy(&len, p + 4, 4);
    out.insert(out.end(), p, p + 8 + len);
    ++count;
    tail += (8 + len + 7) & ~uint64_t{7};
  }
  const raw::PayloadPart part{out.data(), out.size()};
  WriteLocked(g.writer->WriteChunk(raw::ChunkType::kStrings, 0, count, &part, 1));
}

void WriteCountersLocked(raw::ChunkType type) {
  Global& g = G();
  uint64_t dropped_events = 0, dropped_strings = 0;
  for (ThreadBuffer* b : g.active) {
    dropped_events += b->dropped_events.load(std::memory_order_relaxed);
    dropped_strings += b->dropped_strings.load(std::memory_order_relaxed);
  }
  raw::PayloadBuilder payload;
  // Counters of retired threads were folded into the named counters when recycled.
  dropped_events += Counter(CounterId::kEventsDropped).load();
  dropped_strings += Counter(CounterId::kStringsDropped).load();
  for (const CounterInfo& c : kCounterTable) {
    if (c.stage != CounterStage::kCollector || c.id == CounterId::kEventsDropped ||
        c.id == CounterId::kStringsDropped) {
      continue;
    }
    const uint64_t value = Counter(c.id).load(std::memory_order_relaxed);
    if (value != 0) payload.AddKeyValue(c.name, std::to_string(value));
  }
  for (auto& c : g.other_counters) {
    payload.AddKeyValue(c->name, std::to_string(c->value.load(std::memory_order_relaxed)));
  }
  // Always written, so that a reader can tell "nothing dropped" from "not counted".
  payload.AddKeyValue(CounterName(CounterId::kEventsDropped), std::to_string(dropped_events));
  payload.AddKeyValue(CounterName(CounterId::kStringsDropped), std::to_string(dropped_strings));
  WriteLocked(g.writer->WritePayload(type, payload));
}

// Rewrites raw TSC timestamps of the events in [tail, head) of each buffer to the event
// clock, in place (the flusher owns that part of the ring until it advances the tail).
// A thread's timestamps never go backwards after conversion.
template <typename Snapshot>
void ConvertTimestampsLocked(Snapshot* snaps, size_t count) {
#if defined(__x86_64__)
  Global& g = G();
  ReadTscPair(g.tsc_now, g.mono_now);
  if (g.mono_now - g.mono_base >= kMinCalibrationNs && g.tsc_now > g.tsc_base) {
    g.ns_per_tick =
        static_cast<double>(g.mono_now - g.mono_base) / static_cast<double>(g.tsc_now - g.tsc_base);
    if (g.mono_now - g.mono_base >= 20 * kMinCalibrationNs) {
      g.tsc_base = g.tsc_now;  // keep the baseline recent so NTP slewing is followed
      g.mono_base = g.mono_now;
    }
  } else if (g.ns_per_tick == 0) {
    // A flush soon after start (a short program): calibrate over what has elapsed,
    // waiting until at least a millisecond has (slope error about 3e-5).
    while (g.mono_now - g.mono_base < 1000000) {
      usleep(200);
      ReadTscPair(g.tsc_now, g.mono_now);
    }
    g.ns_per_tick =
        static_cast<double>(g.mono_now - g.mono_base) / static_cast<double>(g.tsc_now - g.tsc_base);
  }
  for (size_t k = 0; k < count; ++k) {
    ThreadBuffer* b = snaps[k].b;
    for (uint64_t i = b->tail.load(std::memory_order_relaxed); i < snaps[k].head; ++i) {
      raw::EventRecord& e = b->events[i & b->mask];
      if ((e.flags & raw::kFlagRawTsc) == 0) continue;
      int64_t ns = g.mono_now + static_cast<int64_t>(static_cast<double>(e.start_ns - g.tsc_now) *
                                                     g.ns_per_tick);
      if (ns < b->last_converted_ns) ns = b->last_converted_ns;
      b->last_converted_ns = ns;
      e.start_ns = ns;
      e.flags &= static_cast<uint8_t>(~raw::kFlagRawTsc);
    }
  }
#endif
}

void FlushCycleLocked() {
  Global& g = G();
  if (!g.writer) return;
  struct Snapshot {
    ThreadBuffer* b;
    uint64_t head, string_head;
  };
  std::vector<Snapshot> snaps;
  snaps.reserve(g.active.size());
  // Event heads first, then string heads: every string an included event refers to was
  // published before that event, so it is included too.
  for (ThreadBuffer* b : g.active) {
    const uint64_t head = b->head.load(std::memory_order_acquire);
    snaps.push_back({b, head, 0});
  }
  for (auto& s : snaps) s.string_head = s.b->string_head.load(std::memory_order_acquire);
  if (g_timestamp_flags != 0) ConvertTimestampsLocked(snaps.data(), snaps.size());

  if (g.global_strings_written < g.global_strings.size()) {
    raw::PayloadBuilder payload;
    for (size_t i = g.global_strings_written; i < g.global_strings.size(); ++i) {
      payload.AddString(g.global_strings[i].first, g.global_strings[i].second);
    }
    WriteLocked(g.writer->WritePayload(raw::ChunkType::kStrings, payload));
    g.global_strings_written = g.global_strings.size();
  }

  for (auto& s : snaps) {
    ThreadBuffer* b = s.b;
    WriteStringRange(b, b->string_tail.load(std::memory_order_relaxed), s.string_head);
    b->string_tail.store(s.string_head, std::memory_order_release);
    const uint64_t tail = b->tail.load(std::memory_order_relaxed);
    if (s.head > tail) {
      const uint64_t begin = tail & b->mask;
      const uint64_t count = s.head - tail;
      const uint64_t first = std::min(count, b->capacity - begin);
      WriteLocked(g.writer->WriteEvents(b->events + begin, first, b->events, count - first));
      b->tail.store(s.head, std::memory_order_release);
    }
  }

  // Recycle buffers of exited threads once drained (their pages stay warm).
  for (size_t i = 0; i < g.active.size();) {
    ThreadBuffer* b = g.active[i];
    if (b->retired.load(std::memory_order_acquire) &&
        b->head.load(std::memory_order_acquire) == b->tail.load(std::memory_order_relaxed)) {
      Counter(CounterId::kEventsDropped).fetch_add(b->dropped_events.load());
      Counter(CounterId::kStringsDropped).fetch_add(b->dropped_strings.load());
      g.active[i] = g.active.back();
      g.active.pop_back();
      g.free_pool.push_back(b);
    } else {
      ++i;
    }
  }

  const int64_t now = EventClockNs();
  if (now - g.last_anchor_ns >= kAnchorPeriodNs) {
    WriteLocked(g.writer->WriteClockAnchor(ReadClockPair()));
    WriteCountersLocked(raw::ChunkType::kCounters);
    g.last_anchor_ns = now;
  }
}

void* FlusherMain(void*) {
  Global& g = G();
  // The flusher must never record into the trace it writes.
  pthread_setname_np(pthread_self(), "teller-flush");
  while (!g.stop.load(std::memory_order_acquire)) {
    timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    const int64_t ns = deadline.tv_nsec + static_cast<int64_t>(g.flush_ms) * 1000000;
    deadline.tv_sec += ns / 1000000000;
    deadline.tv_nsec = ns % 1000000000;
    while (sem_timedwait(&g.wake, &deadline) != 0 && errno == EINTR) {
    }
    while (sem_trywait(&g.wake) == 0) {  // coalesce wake-ups
    }
    std::lock_guard<std::mutex> lock(g.mu);
    FlushCycleLocked();
  }
  return nullptr;
}

void StartFlusherLocked() {
  Global& g = G();
  if (g.flusher_running || g.shutting_down) return;
  // Block all signals in the flusher so the application's handlers run on its threads.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  g.stop.store(false);
  g.flusher_running = pthread_create(&g.flusher, nullptr, FlusherMain, nullptr) == 0;
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

void ThreadExit(void* arg) {
  auto* b = static_cast<ThreadBuffer*>(arg);
  if (tls_buffer == b) tls_buffer = nullptr;
  b->retired.store(true, std::memory_order_release);
}

void AtForkPrepare() { G().mu.lock(); }
void AtForkParent() { G().mu.unlock(); }
void AtForkChild() {
  Global& g = G();
  // Only the forking thread exists now. Its buffered events belong to the parent (which
  // flushes them); everything restarts empty, and the file opens at the first event.
  for (ThreadBuffer* b : g.active) g.free_pool.push_back(b);
  g.active.clear();
  if (tls_buffer != nullptr) pthread_setspecific(g.thread_key, nullptr);
  tls_buffer = nullptr;
  if (g.writer) g.writer->Abandon();
  g.writer.reset();
  g.flusher_running = false;
  g.write_error_reported = false;
  for (auto& c : g.counters) c.store(0);
  for (auto& c : g.other_counters) c->value.store(0);
  sem_destroy(&g.wake);
  sem_init(&g.wake, 0, 0);
  g.mu.unlock();
}

void AtExit() { FlushAndClose(); }

}  // namespace

bool InitRecorder() {
  Global& g = G();
  std::lock_guard<std::mutex> lock(g.mu);
  if (g.initialized) return g_recorder_enabled.load();
  g.initialized = true;
  const char* dir = std::getenv("TELLER_TRACE_DIR");
  if (dir == nullptr || *dir == '\0') return false;  // not under `teller run`: stay off
  g.dir = dir;
  if (const char* ms = std::getenv("TELLER_FLUSH_MS")) {
    const int v = std::atoi(ms);
    if (v > 0) g.flush_ms = v;
  }
  if (const char* n = std::getenv("TELLER_RING_EVENTS")) {
    const long v = std::atol(n);
    if (v >= 1024 && v <= (1L << 24)) g.ring_events = RoundUpPow2(static_cast<uint64_t>(v));
  }
#if defined(__x86_64__)
  const char* clock = std::getenv("TELLER_CLOCK");
  const bool want_tsc = clock == nullptr || std::string_view(clock) != "monotonic";
  if (want_tsc && CpuHasInvariantTsc()) {
    ReadTscPair(g.tsc_base, g.mono_base);
    g_timestamp_flags = raw::kFlagRawTsc;
  }
#endif
  sem_init(&g.wake, 0, 0);
  pthread_key_create(&g.thread_key, ThreadExit);
  pthread_atfork(AtForkPrepare, AtForkParent, AtForkChild);
  std::atexit(AtExit);
  if (!OpenFileLocked()) return false;
  StartFlusherLocked();
  g_recorder_enabled.store(true, std::memory_order_release);
  return true;
}

ThreadBuffer* RegisterThread() {
  if (!g_recorder_enabled.load(std::memory_order_acquire)) return nullptr;
  Global& g = G();
  std::lock_guard<std::mutex> lock(g.mu);
  if (g.shutting_down) return nullptr;
  if (!g.writer && !OpenFileLocked()) return nullptr;
  StartFlusherLocked();
  ThreadBuffer* b = nullptr;
  if (!g.free_pool.empty()) {
    b = g.free_pool.back();
    g.free_pool.pop_back();
  } else {
    b = AllocateBuffer(g.ring_events);
    if (b == nullptr) return nullptr;
  }
  ResetBuffer(b);
  b->tid = static_cast<uint32_t>(syscall(SYS_gettid));
  g.active.push_back(b);
  pthread_setspecific(g.thread_key, b);
  tls_buffer = b;
  return b;
}

void WakeFlusher() { sem_post(&G().wake); }

uint32_t InternSlow(ThreadBuffer* b, const char* text, uint32_t length, uint64_t hash) {
  const uint32_t id = g_next_string_id.fetch_add(1, std::memory_order_relaxed);
  const uint64_t need = (8 + length + 7) & ~uint64_t{7};
  const uint64_t cap = b->string_capacity;
  uint64_t sh = b->string_head.load(std::memory_order_relaxed);
  uint64_t pos = sh & (cap - 1);
  const uint64_t to_end = cap - pos;
  const uint64_t total = need + (need > to_end ? to_end : 0);
  if (sh + total - b->cached_string_tail > cap) {
    b->cached_string_tail = b->string_tail.load(std::memory_order_acquire);
    if (sh + total - b->cached_string_tail > cap) {
      b->dropped_strings.fetch_add(1, std::memory_order_relaxed);
      WakeFlusher();
      return 0;
    }
  }
  if (need > to_end) {
    std::memcpy(b->strings + pos, &kPadMarker, 4);
    sh += to_end;
    pos = 0;
  }
  std::memcpy(b->strings + pos, &id, 4);
  std::memcpy(b->strings + pos + 4, &length, 4);
  std::memcpy(b->strings + pos + 8, text, length);
  b->string_head.store(sh + need, std::memory_order_release);

  if (b->cache_arena_used + length > b->cache_arena_size) {
    std::memset(b->cache, 0, (b->cache_mask + 1) * sizeof(ThreadBuffer::CacheEntry));
    b->cache_arena_used = 0;
  }
  char* copy = b->cache_arena + b->cache_arena_used;
  std::memcpy(copy, text, length);
  b->cache_arena_used += length;
  b->cache[hash & b->cache_mask] = {hash, copy, length, id};
  return id;
}

uint32_t InternGlobal(std::string_view text) {
  if (text.size() > kMaxStringBytes) text = text.substr(0, kMaxStringBytes);
  Global& g = G();
  std::lock_guard<std::mutex> lock(g.mu);
  for (const auto& [id, s] : g.global_strings) {
    if (s == text) return id;
  }
  const uint32_t id = g_next_string_id.fetch_add(1, std::memory_order_relaxed);
  g.global_strings.emplace_back(id, std::string(text));
  return id;
}

void AddCounter(std::string_view name, uint64_t delta) {
  // Callers pass the registry's names (CounterName(id)): a compile-time sorted lookup and
  // a relaxed add, no lock and no allocation.
  if (const auto id = FindCounter(name)) {
    Counter(*id).fetch_add(delta, std::memory_order_relaxed);
    return;
  }
  Global& g = G();
  std::lock_guard<std::mutex> lock(g.mu);
  OtherCounterLocked(name)->value.fetch_add(delta, std::memory_order_relaxed);
}

void SetPreCloseHook(void (*hook)()) {
  Global& g = G();
  std::lock_guard<std::mutex> lock(g.mu);
  g.pre_close_hook = hook;
}

void PushEventWaiting(ThreadBuffer* b, const raw::EventRecord& event) {
  // Up to ~5 s of waiting for the flusher, then drop (and count) like PushEvent.
  for (int attempt = 0; attempt < 5000; ++attempt) {
    const uint64_t h = b->head.load(std::memory_order_relaxed);
    b->cached_tail = b->tail.load(std::memory_order_acquire);
    if (h - b->cached_tail < b->capacity) {
      PushEvent(b, event);
      return;
    }
    WakeFlusher();
    usleep(1000);
  }
  PushEvent(b, event);
}

void FlushNow() {
  Global& g = G();
  std::lock_guard<std::mutex> lock(g.mu);
  FlushCycleLocked();
}

void FlushAndClose() {
  Global& g = G();
  void (*hook)() = nullptr;
  {
    std::lock_guard<std::mutex> lock(g.mu);
    if (g.shutting_down || !g_recorder_enabled.load()) return;
    hook = g.pre_close_hook;
  }
  if (hook != nullptr) hook();  // e.g. CUPTI's final activity flush, outside our lock
  bool join = false;
  {
    std::lock_guard<std::mutex> lock(g.mu);
    g.shutting_down = true;
    join = g.flusher_running;
    g.flusher_running = false;
  }
  if (join) {
    g.stop.store(true, std::memory_order_release);
    sem_post(&g.wake);
    pthread_join(g.flusher, nullptr);
  }
  std::lock_guard<std::mutex> lock(g.mu);
  if (!g.writer) return;
  FlushCycleLocked();
  WriteLocked(g.writer->WriteClockAnchor(ReadClockPair()));
  WriteCountersLocked(raw::ChunkType::kEnd);
  g.writer.reset();
}

}  // namespace teller::collect
