// A folder of Kineto rank files as one trace. Each file streams through about one parse
// window (kineto_importer.cc), so what a file costs beyond its rows is a few MB; the
// rows are the folder's tables. Files are imported a few at a time, each into a trace of
// its own on a worker thread (the parser and window buffer are per thread), and appended
// to the folder's trace strictly in file order by the calling thread, each freed as soon
// as it is appended. A worker starts file i only while i is fewer than `in_flight` files
// ahead of the last one appended, so at most `in_flight` files' tables exist beside the
// folder's, however many files there are and whichever finishes first.
//
// The result is that of importing the files one after another into the trace: strings
// are interned in the order of their ids in the file's pool, which is the order in which
// that file's import would have interned them; processes are found or added in the order
// the file's import added them; counters keep their first-Add order (Counters::Merge).
#include "src/ingest/rank_folder.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <thread>

#include "teller/core/parallel.h"
#include "teller/core/progress.h"
#include "teller/ingest/ingest.h"

namespace teller::ingest {
namespace {

std::atomic<size_t> g_peak_files{0};
std::atomic<int> g_append_delay_ms{0};

void NotePeak(size_t held) {
  size_t peak = g_peak_files.load();
  while (held > peak && !g_peak_files.compare_exchange_weak(peak, held)) {
  }
}

template <typename T, typename F>
void AppendMapped(std::vector<T>& to, const std::vector<T>& from, F map) {
  const size_t at = to.size();
  to.resize(at + from.size());
  for (size_t i = 0; i < from.size(); ++i) to[at + i] = map(from[i]);
}

template <typename T>
void AppendAll(std::vector<T>& to, const std::vector<T>& from) {
  to.insert(to.end(), from.begin(), from.end());
}

}  // namespace

size_t FilesInFlight(size_t files) {
  size_t n = std::min(WorkerCount(files), kDefaultFilesInFlight);
  if (const char* env = std::getenv("TELLER_IMPORT_FILES")) {
    char* end = nullptr;
    const long v = std::strtol(env, &end, 10);
    if (end != env && *end == '\0' && v >= 1 && v <= 64) n = static_cast<size_t>(v);
  }
  return std::max<size_t>(1, std::min(n, files));
}

size_t TakeFolderPeakFilesForTesting() { return g_peak_files.exchange(0); }

void SetFolderAppendDelayForTesting(int ms) { g_append_delay_ms = ms; }

void AppendTrace(const Trace& part, Trace& into) {
  std::vector<StringId> id(part.strings.size());
  for (size_t s = 0; s < id.size(); ++s) {
    id[s] = into.strings.Intern(part.strings.Get(static_cast<StringId>(s)));
  }
  auto str = [&id](StringId s) { return id[s]; };

  std::vector<uint32_t> process(part.processes.size());
  for (size_t i = 0; i < part.processes.size(); ++i) {
    const ProcessInfo& p = part.processes[i];
    process[i] = into.ProcessIndex(part.strings.Get(p.host), p.pid);
    // As an importer does to a process it finds: its description is the file's.
    ProcessInfo& q = into.processes[process[i]];
    q.label = id[p.label];
    q.source = id[p.source];
    q.rank = p.rank;
    q.world_size = p.world_size;
    q.local_rank = p.local_rank;
    q.clock_offset_ns = p.clock_offset_ns;
  }

  // Every column of EventTable (trace.h); geometric growth keeps many appends linear.
  const EventTable& e = part.events;
  EventTable& t = into.events;
  const size_t needed = t.size() + e.size();
  if (t.type.capacity() < needed) t.Reserve(std::max(needed, t.type.capacity() * 3 / 2));
  AppendAll(t.type, e.type);
  AppendMapped(t.name, e.name, str);
  AppendMapped(t.category, e.category, str);
  AppendMapped(t.domain, e.domain, str);
  AppendMapped(t.process, e.process, [&process](uint32_t p) { return process[p]; });
  AppendAll(t.thread, e.thread);
  AppendAll(t.start_ns, e.start_ns);
  AppendAll(t.end_ns, e.end_ns);
  AppendAll(t.correlation, e.correlation);
  AppendAll(t.external_id, e.external_id);
  AppendAll(t.device, e.device);
  AppendAll(t.stream, e.stream);
  AppendAll(t.bytes, e.bytes);
  AppendAll(t.flags, e.flags);
  AppendMapped(t.signature, e.signature, str);

  const LogTable& l = part.logs;
  LogTable& m = into.logs;
  AppendAll(m.ts_ns, l.ts_ns);
  AppendMapped(m.request, l.request, str);
  AppendAll(m.level, l.level);
  AppendMapped(m.process, l.process,
               [&process](uint32_t p) { return p == LogTable::kNoProcess ? p : process[p]; });
  AppendMapped(m.file, l.file, str);
  AppendAll(m.line, l.line);
  AppendMapped(m.message, l.message, str);

  into.counters.Merge(part.counters);
  into.sources.insert(into.sources.end(), part.sources.begin(), part.sources.end());
  if (part.run.known) into.run = part.run;
}

Status ImportKinetoFiles(const std::string& folder, const std::vector<std::string>& paths,
                         Trace& trace, size_t in_flight) {
  const size_t n = paths.size();
  ProgressTask progress("importing " + folder, n, ProgressUnit::kItems, "files");
  const size_t k = in_flight == 0 ? FilesInFlight(n) : std::min(in_flight, std::max<size_t>(n, 1));
  if (k <= 1) {
    // One after another, straight into the trace: no second copy of any row.
    for (const std::string& path : paths) {
      TELLER_RETURN_IF_ERROR(ImportKineto(path, trace));
      progress.Advance();
    }
    NotePeak(n == 0 ? 0 : 1);
    return Status::Ok();
  }

  struct Slot {
    std::unique_ptr<Trace> trace;
    Status status;
    bool done = false;
  };
  std::vector<Slot> slots(n);
  std::mutex mu;
  std::condition_variable cv;
  size_t next = 0;    // the next file a worker starts
  size_t merged = 0;  // files appended to `trace` (and freed)
  size_t held = 0;    // files started and not yet freed: at most k
  bool stop = false;  // a file failed: start no more

  auto work = [&] {
    std::unique_lock<std::mutex> lock(mu);
    for (;;) {
      cv.wait(lock, [&] { return stop || next >= n || next < merged + k; });
      if (stop || next >= n) return;
      const size_t i = next++;
      NotePeak(++held);
      lock.unlock();
      auto part = std::make_unique<Trace>();
      Status s = ImportKineto(paths[i], *part);
      lock.lock();
      slots[i].trace = std::move(part);
      slots[i].status = std::move(s);
      slots[i].done = true;
      cv.notify_all();
    }
  };
  std::vector<std::thread> workers;
  workers.reserve(k);
  for (size_t w = 0; w < k; ++w) workers.emplace_back(work);

  Status result;
  for (size_t i = 0; i < n; ++i) {
    std::unique_ptr<Trace> part;
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return slots[i].done; });
      part = std::move(slots[i].trace);
      if (!slots[i].status.ok()) {
        // As one after another: the files before it are in the trace, none after it.
        result = slots[i].status;
        stop = true;
        cv.notify_all();
        break;
      }
    }
    if (const int ms = g_append_delay_ms.load(); ms > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    }
    AppendTrace(*part, trace);
    part.reset();
    progress.Advance();
    std::lock_guard<std::mutex> lock(mu);
    --held;
    ++merged;
    cv.notify_all();
  }
  for (std::thread& w : workers) w.join();
  return result;
}

}  // namespace teller::ingest
