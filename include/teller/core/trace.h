// The normalized trace every importer produces and every later stage reads
// (docs/method.md §2 step 1): interned strings, a columnar event table, a process table and a
// log table, plus counters for damaged input.
//
// Time base: all timestamps are nanoseconds since the Unix epoch (UTC) as seen by the
// recording host's clock, converted by the importer (Kineto base time, Nsight Systems
// session start, Teller clock anchors). Cross-host alignment is the reconstruction's job
// and is applied through ProcessInfo::clock_offset_ns.
#ifndef TELLER_CORE_TRACE_H_
#define TELLER_CORE_TRACE_H_

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "teller/core/counters.h"
#include "teller/core/string_pool.h"

namespace teller {

enum class EventType : uint8_t {
  kPush = 1,            // a range opens on a host thread (NVTX push); closed by a kPop
  kPop = 2,             // the innermost open range of the thread (same domain) closes
  kRange = 3,           // a complete host range: start..end (Kineto complete events,
                        // NVTX start/end pairs)
  kMark = 4,            // an instant annotation
  kRuntime = 5,         // CUDA/HIP runtime API call on a host thread
  kDriver = 6,          // CUDA driver API call on a host thread
  kKernel = 7,          // GPU kernel
  kMemcpy = 8,          // GPU copy
  kMemset = 9,          // GPU memset
  kSync = 10,           // synchronization (cuda_sync, CUPTI synchronization records)
  kGpuAnnotation = 11,  // an annotation range on a GPU stream (gpu_user_annotation)
};
std::string_view EventTypeName(EventType type);
inline bool IsHostCall(EventType t) { return t == EventType::kRuntime || t == EventType::kDriver; }
inline bool IsGpuWork(EventType t) {
  return t == EventType::kKernel || t == EventType::kMemcpy || t == EventType::kMemset;
}

// Bits of EventTable::flags.
enum EventFlag : uint32_t {
  kEventInGraph = 1u << 0,     // GPU work launched by a graph launch
  kEventNestedCall = 1u << 1,  // driver call made inside a runtime call (same thread)
  kEventSynthetic = 1u << 2,   // added by Teller (e.g. a range closed at end of trace)
};

// Columnar events (struct of arrays). Row i of every column is event i. Append through
// EventRow so that no column is forgotten.
struct EventRow {
  EventType type = EventType::kMark;
  StringId name = 0;
  StringId category = 0;  // source category as the input names it ("cpu_op", "nvtx", ...)
  StringId domain = 0;    // NVTX domain; 0 = default
  uint32_t process = 0;   // index into Trace::processes
  uint32_t thread = 0;    // host thread id; for GPU events the stream
  int64_t start_ns = 0;
  int64_t end_ns = 0;        // == start_ns for instants and push/pop
  uint64_t correlation = 0;  // CUDA/HIP correlation id, 0 = none
  uint64_t external_id = 0;  // Kineto "External id", 0 = none
  uint32_t device = 0;
  uint32_t stream = 0;
  uint64_t bytes = 0;  // memcpy/memset size; collective message size when known
  uint32_t flags = 0;  // EventFlag bits
  // What the trace records of the call's size (input shapes, grid/block, collective
  // size, copy kind) as one canonical string, so that instances that should cost the
  // same can be told apart from the others of the same name; 0 = nothing recorded.
  // Grammar: docs/signature.md.
  StringId signature = 0;
};

struct EventTable {
  std::vector<EventType> type;
  std::vector<StringId> name;
  std::vector<StringId> category;
  std::vector<StringId> domain;
  std::vector<uint32_t> process;
  std::vector<uint32_t> thread;
  std::vector<int64_t> start_ns;
  std::vector<int64_t> end_ns;
  std::vector<uint64_t> correlation;
  std::vector<uint64_t> external_id;
  std::vector<uint32_t> device;
  std::vector<uint32_t> stream;
  std::vector<uint64_t> bytes;
  std::vector<uint32_t> flags;
  std::vector<StringId> signature;

  size_t size() const { return type.size(); }
  void Reserve(size_t n);
  size_t Append(const EventRow& row);
  EventRow Row(size_t i) const;
  // Bytes held by the columns (capacity), for the memory budget of importers.
  size_t MemoryBytes() const;
};

struct ProcessInfo {
  int64_t pid = 0;
  StringId host = 0;
  StringId label = 0;   // command line, or the source file's name
  StringId source = 0;  // file it came from
  int32_t rank = -1;    // distributed rank, -1 unknown
  int32_t world_size = -1;
  int32_t local_rank = -1;
  // Added to this process's timestamps to put it on the trace's reference clock
  // (set by clock alignment across hosts; 0 after import).
  int64_t clock_offset_ns = 0;
};

enum class LogLevel : uint8_t { kUnknown = 0, kDebug, kInfo, kWarning, kError, kCritical };
std::string_view LogLevelName(LogLevel level);

// One row per log line (docs/method.md §2 step 6: l = (ts, rid, level, msg)).
struct LogTable {
  static constexpr int64_t kNoTime = std::numeric_limits<int64_t>::min();
  std::vector<int64_t> ts_ns;     // UTC ns, kNoTime when the line has no usable time
  std::vector<StringId> request;  // request id found in the line, 0 = none
  std::vector<LogLevel> level;
  std::vector<uint32_t> process;  // index into Trace::processes, kNoProcess when unknown
  std::vector<StringId> file;     // the log file
  std::vector<uint32_t> line;     // 1-based line number in that file
  std::vector<StringId> message;  // the line without its header (time, level, prefix)
  static constexpr uint32_t kNoProcess = std::numeric_limits<uint32_t>::max();
  size_t size() const { return ts_ns.size(); }
};

struct Trace {
  StringPool strings;
  EventTable events;
  std::vector<ProcessInfo> processes;
  LogTable logs;
  Counters counters;
  std::vector<std::string> sources;  // input files, in import order

  // How the `teller run` that recorded this trace ended, from its manifest.json (known is
  // false for inputs without one). exit_code is the launcher's: 128 + signal when the
  // command died of a signal; finished is false when the launcher itself never wrote the
  // end of the run (it was killed, or the machine went down).
  struct RunInfo {
    bool known = false, finished = false;
    int exit_code = 0, signal = 0;
    std::string command;  // the argv, joined by spaces
    int64_t pid = 0;      // the command's process (the launcher's child), 0 when unknown
    int64_t end_ns = 0;   // UTC ns when the launcher saw the command end, 0 when unknown
  };
  RunInfo run;

  // Finds or adds the process (host, pid) and returns its index.
  uint32_t ProcessIndex(std::string_view host, int64_t pid);
};

}  // namespace teller

#endif  // TELLER_CORE_TRACE_H_
