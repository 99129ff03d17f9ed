// libFuzzer target for the raw trace reader: any bytes must give either a clear error
// naming offset 0 (not a trace) or a trace whose counters account for every byte.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "teller/format/raw_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto trace = teller::raw::ReadRawBytes(bytes, "fuzz");
  if (!trace.ok()) {
    if (trace.status().message().find("offset 0") == std::string_view::npos) std::abort();
    return 0;
  }
  const auto& t = trace.value();
  if (t.stats.dropped_bytes > size) std::abort();
  for (const auto& e : t.events) {
    (void)t.String(e.name);  // any id must be safe to look up
  }
  (void)teller::raw::DescribeDamage(t);
  return 0;
}
