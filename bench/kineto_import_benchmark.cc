// Import speed and memory of the Kineto importer (docs/ingest-kineto.md).
//
//   kineto_import_benchmark [--runs N] FILE...
//
// For each file: median over N runs of (a) read + gunzip, (b) JSON parse into a fresh
// Trace, (c) the whole ImportKineto; events/s (rows appended / total median); and the
// process's peak RSS (getrusage) minus the RSS before the first import, per row, with the
// size of the decompressed JSON (the input) shown beside it. Peak RSS is process-wide, so
// it is printed for the first file only: run one file per process to measure memory. Target
// (bench/README.md): hta/df_index_resolver in < 0.15 s including gzip on the 2-core dev VM.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
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

}  // namespace

int main(int argc, char** argv) {
  int runs = 10;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
      runs = std::max(1, std::atoi(argv[++i]));
    } else {
      files.emplace_back(argv[i]);
    }
  }
  if (files.empty()) {
    std::fprintf(stderr, "usage: %s [--runs N] FILE...\n", argv[0]);
    return 2;
  }
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
