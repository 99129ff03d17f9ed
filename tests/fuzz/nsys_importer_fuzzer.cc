// libFuzzer target for the Nsight Systems SQLite importer: any bytes, written to a file
// and imported, must give an error naming the file or a trace whose rows are all
// consistent (valid string ids and process indexes). SQLite is given a
// VM-step budget and a heap limit so that a crafted database can neither hang the import
// nor exhaust memory. Seeds: small real exports (see seed_corpus.sh), e.g. the first
// pages of the nsys_pipit exports.
#include <sqlite3.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "src/ingest/nsys_importer.h"
#include "teller/core/trace.h"

namespace {

// One temp file per fuzzing process, rewritten for every input.
const std::string& TempPath() {
  static const std::string path = [] {
    char tmpl[] = "/tmp/nsys_importer_fuzzer_XXXXXX";
    const int fd = mkstemp(tmpl);
    if (fd < 0) std::abort();
    close(fd);
    return std::string(tmpl);
  }();
  return path;
}

bool WriteFile(const std::string& path, const uint8_t* data, size_t size) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return false;
  const bool ok = size == 0 || std::fwrite(data, 1, size, f) == size;
  return std::fclose(f) == 0 && ok;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Bounded SQLite memory: a corrupt record may declare a huge size.
  sqlite3_hard_heap_limit64(256 << 20);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = TempPath();
  if (!WriteFile(path, data, size)) std::abort();
  teller::Trace trace;
  teller::ingest::NsysImportOptions options;
  options.max_vm_steps = 2'000'000;
  const teller::Status s = teller::ingest::ImportNsysSqliteWithOptions(path, options, trace);
  if (!s.ok()) {
    if (s.message().find(path) == std::string::npos) std::abort();
    return 0;
  }
  const auto& ev = trace.events;
  for (size_t i = 0; i < ev.size(); ++i) {
    if (ev.name[i] >= trace.strings.size() || ev.domain[i] >= trace.strings.size()) std::abort();
    if (ev.process[i] >= trace.processes.size()) std::abort();
  }
  for (const auto& p : trace.processes) (void)trace.strings.Get(p.label);
  return 0;
}
