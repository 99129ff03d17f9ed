// Tolerant reader of raw trace files (format: raw_format.h). It reads every intact
// chunk, stops at damage (a torn tail, flipped bytes, a bad checksum), resynchronises on
// the next intact chunk, and reports what it skipped; it never fails on damage after a
// valid file header. It fails (with the file and offset) only when the file cannot be
// opened or is not a Teller raw trace at all.
#ifndef TELLER_FORMAT_RAW_READER_H_
#define TELLER_FORMAT_RAW_READER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "teller/core/status.h"
#include "teller/format/raw_format.h"

namespace teller::raw {

struct RawReadStats {
  uint64_t file_bytes = 0;
  uint64_t chunks = 0;           // intact chunks read
  uint64_t damaged_regions = 0;  // places where damage was found
  uint64_t dropped_bytes = 0;    // bytes skipped because they were damaged or torn
  uint64_t unknown_chunks = 0;   // intact chunks of a type this reader does not know
  uint64_t bad_records = 0;      // records inside intact chunks that made no sense
  bool clean_end = false;        // the writer closed the file normally
  // Block layout (version 2) only:
  uint64_t uncommitted_records = 0;  // written into a block but never committed (not used)
  uint64_t unused_bytes = 0;         // space allocated ahead that no block claimed
  // First damage, for the report: "offset 1234: payload checksum mismatch".
  std::string first_damage;
};

// Events a thread of the process lost for want of room (block layout only).
struct ThreadDrops {
  uint32_t tid = 0;
  uint64_t serial = 0;  // the thread's serial in its process (tids may be reused)
  uint64_t events = 0;
  uint64_t ranges = 0;  // whole NVTX ranges among `events`
};

struct RawProcessTrace {
  std::string path;
  uint16_t format_version = 0;  // 1: chunk stream, 2: block layout
  std::vector<std::pair<std::string, std::string>> process_info;
  std::vector<ClockAnchor> anchors;
  // In recording order per thread. Times are event-clock ns (raw TSC ticks of version-2
  // files are converted); kCollectorGap events mark where the collector dropped events.
  std::vector<EventRecord> events;
  std::vector<ThreadDrops> thread_drops;  // threads that lost events, by serial
  // Collector counters: the latest value of each (from kCounters and kEnd chunks).
  std::vector<std::pair<std::string, uint64_t>> counters;
  RawReadStats stats;

  // Text of string `id` ("" when the id is unknown, e.g. its chunk was damaged).
  std::string_view String(uint32_t id) const {
    return id < strings.size() ? std::string_view(strings[id]) : std::string_view();
  }
  // Value of a process-info key, or "" when absent.
  std::string_view Info(std::string_view key) const;
  uint64_t Counter(std::string_view name) const;
  int64_t pid() const;

  std::vector<std::string> strings;  // indexed by string id
};

Result<RawProcessTrace> ReadRawFile(const std::string& path);
// Same, for bytes already in memory (`name` is used in messages).
Result<RawProcessTrace> ReadRawBytes(std::string_view bytes, const std::string& name);

// The collector counters of a file of the block layout, read from its header block only
// (cheap for any file size); empty for version-1 files, whose counters are at the end.
Result<std::vector<std::pair<std::string, uint64_t>>> ReadRawCounters(const std::string& path);

// The *.tlr files of a trace directory, sorted; a file path is returned as is.
Result<std::vector<std::string>> ListRawFiles(const std::string& file_or_dir);

// One line describing the damage of a file, or "" when it was read cleanly.
std::string DescribeDamage(const RawProcessTrace& trace);

}  // namespace teller::raw

#endif  // TELLER_FORMAT_RAW_READER_H_
