// libFuzzer target for the Kineto importer: any bytes (plain or gzip) must give an ok
// Status or an error Status, never a crash, a sanitizer report or a runaway allocation.
// Small windows are used so that the window cut / rollback logic is exercised on the
// small inputs libFuzzer produces. The same bytes also go through the format detection of
// ImportPath (DetectFormatOfBytes: magic numbers, the JSON forms, the text check). Seeds:
// any *.json / *.json.gz Chrome trace.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "src/ingest/kineto_importer.h"
#include "teller/ingest/ingest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool init = [] {
    teller::ingest::SetKinetoWindowBytesForTesting(256);
    return true;
  }();
  (void)init;
  teller::Trace trace;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  (void)teller::ingest::DetectFormatOfBytes(bytes, "fuzz.json", size % 2 == 0);
  (void)teller::ingest::DetectFormatOfBytes(bytes, "fuzz", size % 2 == 1);
  const teller::Status status = teller::ingest::ImportKinetoBytes(bytes, "fuzz.json", trace);
  // Invariants of a successful import: every row's process exists; end >= start.
  if (status.ok()) {
    for (size_t i = 0; i < trace.events.size(); ++i) {
      if (trace.events.process[i] >= trace.processes.size()) __builtin_trap();
      if (trace.events.end_ns[i] < trace.events.start_ns[i]) __builtin_trap();
    }
  } else if (trace.events.size() != 0) {
    __builtin_trap();  // a failed file leaves no rows behind
  }
  return 0;
}
