// libFuzzer target of the log importer: arbitrary bytes (plain or gzip) must import
// without crashing, and the log table must stay consistent. The first byte chooses the
// options so that capture files, UTC offsets, years and rank lookups are all reached.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "src/ingest/log_importer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  teller::Trace trace;
  teller::ingest::LogOptions options;
  int64_t monotonic_to_utc = 0;
  if (size > 0) {
    const uint8_t select = data[0];
    options.default_year = (select & 1) ? 2025 : 0;
    options.utc_offset_known = (select & 2) != 0;
    options.utc_offset_s = (select & 4) ? 3600 : -7200;
    if (select & 8) monotonic_to_utc = 1'767'225'600'000'000'000;
    if (select & 16) {  // a process from another importer: host and rank lookups
      const uint32_t i = trace.ProcessIndex("node-1", 7);
      trace.processes[i].rank = 0;
    }
    if (select & 32) {  // an event: the year comes from the trace
      teller::EventRow e;
      e.start_ns = e.end_ns = 1'735'689'600'000'000'000;
      trace.events.Append(e);
    }
    ++data;
    --size;
  }
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const teller::Status status = teller::ingest::ImportLogBytes(
      bytes, "fuzz.log", /*mtime_ns=*/1'767'225'600'000'000'000, options, trace, monotonic_to_utc);
  (void)status;  // errors (corrupt gzip) are fine; crashes and inconsistencies are not
  const teller::LogTable& logs = trace.logs;
  const size_t n = logs.size();
  if (logs.request.size() != n || logs.level.size() != n || logs.process.size() != n ||
      logs.file.size() != n || logs.line.size() != n || logs.message.size() != n) {
    __builtin_trap();
  }
  for (size_t i = 0; i < n; ++i) {
    if (logs.process[i] != teller::LogTable::kNoProcess &&
        logs.process[i] >= trace.processes.size()) {
      __builtin_trap();
    }
    if (logs.message[i] >= trace.strings.size() || logs.request[i] >= trace.strings.size()) {
      __builtin_trap();
    }
    if (trace.strings.Get(logs.message[i]).size() > teller::ingest::kMaxLogLineBytes)
      __builtin_trap();
    if (i > 0 && logs.line[i] <= logs.line[i - 1]) __builtin_trap();
  }
  return 0;
}
