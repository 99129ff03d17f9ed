// Import speed and memory of the Kineto importer (docs/ingest-kineto.md).
//
//   kineto_import_benchmark [--runs N] FILE...
//   kineto_import_benchmark --import-only [--runs N] FILE
//
// For each file: median over N runs of (a) read + gunzip, (b) JSON parse into a fresh
// Trace, (c) the whole ImportKineto; events/s (rows appended / total median); and the
// process's peak RSS (getrusage) minus the RSS before the first import, per row, with the
// size of the decompressed JSON (the input) shown beside it. Peak RSS is process-wide, so
// it is printed for the first file only: run one file per process to measure memory. Target
// (bench/README.md): hta/df_index_resolver in < 0.15 s including gzip on the 2-core dev VM.
//
// --import-only: only ImportKineto, N times (the first one cold, all timed): the median,
// the peak RSS above start of the first import, and the bytes of the event columns it
// filled (rows x the bytes of one row across the columns), the floor of any importer. For
// the scaling curve (bench/ingest/kineto_scaling.sh), where the other measurements would
// hold the whole text in memory.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "src/ingest/kineto_importer.h"
#include "teller/ingest/ingest.h"

namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

long PeakRssKb() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;
}

long CurrentRssKb() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  long pages = 0, resident = 0;
  if (f != nullptr) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return resident * 4;
}

// Bytes of one row across the event columns.
size_t RowBytes() {
  const teller::EventTable t;
  auto size_of = [](const auto& column) {
    return sizeof(typename std::decay_t<decltype(column)>::value_type);
  };
  return size_of(t.type) + size_of(t.name) + size_of(t.category) + size_of(t.domain) +
         size_of(t.process) + size_of(t.thread) + size_of(t.start_ns) + size_of(t.end_ns) +
         size_of(t.correlation) + size_of(t.external_id) + size_of(t.device) + size_of(t.stream) +
         size_of(t.bytes) + size_of(t.flags) + size_of(t.signature);
}

// User + system seconds of the process so far, all threads.
double CpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
         (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

int ImportOnly(const std::string& file, int runs) {
  const long rss_before = CurrentRssKb();
  std::vector<double> total_s;
  std::vector<double> cpu_s;
  size_t rows = 0;
  long peak = 0;
  for (int r = 0; r < runs; ++r) {
    teller::Trace trace;
    const double t0 = Now();
    const double c0 = CpuSeconds();
    const teller::Status s = teller::ingest::ImportKineto(file, trace);
    total_s.push_back(Now() - t0);
    cpu_s.push_back(CpuSeconds() - c0);
    if (!s.ok()) {
      std::fprintf(stderr, "%s\n", s.message().c_str());
      return 1;
    }
    rows = trace.events.size();
    if (r == 0) peak = PeakRssKb();
  }
  std::sort(total_s.begin(), total_s.end());
  std::printf(
      "%s\n  import-only: rows %zu, runs %d, ImportKineto median %.4f s (min %.4f, max %.4f), "
      "cpu median %.4f s, peak RSS above start %.1f MB, event columns %.1f MB (%zu B/row)\n",
      file.c_str(), rows, runs, Median(total_s), total_s.front(), total_s.back(), Median(cpu_s),
      (peak - rss_before) / 1024.0, static_cast<double>(rows * RowBytes()) / (1 << 20), RowBytes());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 10;
  bool import_only = false;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
      runs = std::max(1, std::atoi(argv[++i]));
    } else if (std::strcmp(argv[i], "--import-only") == 0) {
      import_only = true;
    } else {
      files.emplace_back(argv[i]);
    }
  }
  if (files.empty()) {
    std::fprintf(stderr, "usage: %s [--runs N] FILE...\n       %s --import-only [--runs N] FILE\n",
                 argv[0], argv[0]);
    return 2;
  }
  if (import_only) return ImportOnly(files[0], runs);
  bool first = true;
  for (const std::string& file : files) {
    const long rss_before = CurrentRssKb();
    // First import alone, so that peak RSS reflects one import (not the timing loop's
    // extra buffers).
    size_t rows = 0;
    size_t json_bytes = 0;
    {
      teller::Trace trace;
      const teller::Status s = teller::ingest::ImportKineto(file, trace);
      if (!s.ok()) {
        std::fprintf(stderr, "%s\n", s.message().c_str());
        return 1;
      }
      rows = trace.events.size();
    }
    const long peak = PeakRssKb();
    std::vector<double> read_s, parse_s, total_s;
    for (int r = 0; r < runs; ++r) {
      double t0 = Now();
      teller::ingest::PaddedBuffer json;
      if (!teller::ingest::ReadMaybeGzip(file, json).ok()) return 1;
      json_bytes = json.size();
      double t1 = Now();
      teller::Trace trace;
      if (!teller::ingest::ImportKinetoJson(json, file, trace).ok()) return 1;
      double t2 = Now();
      read_s.push_back(t1 - t0);
      parse_s.push_back(t2 - t1);
      teller::Trace whole;
      double t3 = Now();
      if (!teller::ingest::ImportKineto(file, whole).ok()) return 1;
      total_s.push_back(Now() - t3);
    }
    const double total = Median(total_s);
    std::printf(
        "%s\n  rows %zu, json %.1f MB, runs %d\n"
        "  median: read+gunzip %.4f s, parse %.4f s, ImportKineto %.4f s (%.2f M rows/s, "
        "%.0f MB/s of JSON)\n",
        file.c_str(), rows, json_bytes / 1e6, runs, Median(read_s), Median(parse_s), total,
        rows / total / 1e6, json_bytes / total / 1e6);
    if (first) {
      std::printf(
          "  peak RSS %.1f MB; above start %.1f MB = %.0f B/row, minus the JSON %.0f B/row\n",
          peak / 1024.0, (peak - rss_before) / 1024.0, (peak - rss_before) * 1024.0 / rows,
          ((peak - rss_before) * 1024.0 - json_bytes) / rows);
    }
    first = false;
  }
  return 0;
}
