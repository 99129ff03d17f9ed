// Writes a normalized Trace (core/trace.h) back out as a Teller raw trace directory, the
// layout `teller run` writes (docs/raw-format.md, docs/collector.md): one *.tlr per
// process, logs/stdout.log (+ logs/stderr.log) in the launcher's capture format and a
// manifest.json. `teller inject` uses it to hand back a modified trace that every Teller
// command reads like a real collection.
//
// Fidelity contract (tested on real Kineto traces and on `teller run` output):
// ImportTellerRaw(ExportTrace(T)) has, per process and in table order, the same events
// with the same type, name, domain, thread, start/end (to the nanosecond), correlation,
// device, stream, graph flag, nested-call flag and memcpy/memset byte counts; the same
// processes (host, pid, label, rank, local rank, world size) in the same order; and the
// same log lines (time, request id, level, process, message). What the raw format has no
// place for is not carried:
//   - event categories ("cpu_op", "kernel", ...): the raw importer names them "nvtx",
//     "cuda_runtime", "cuda_driver" and "gpu". Range categories are still written as
//     NVTX category ids with nvtx_name_category records, ready for a reader that wants
//     them; the classification rules do not depend on categories;
//   - Kineto "External id", kernel byte counts (collective sizes), the stream/device of
//     host calls, the synthetic flag, ProcessInfo::clock_offset_ns;
//   - GPU annotation rows (gpu_user_annotation): dropped and counted;
//   - log file names and line numbers (lines are re-homed to logs/stdout.log), the order
//     of log lines (re-written in time order, lines without a time last).
// Events of one process are written in table order, so "the k-th range of that name on
// that thread in file order" (sim/ground_truth.h locators) can be counted on the Trace.
#ifndef TELLER_FORMAT_TRACE_EXPORT_H_
#define TELLER_FORMAT_TRACE_EXPORT_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "teller/core/status.h"
#include "teller/core/trace.h"

namespace teller::raw {

struct ExportOptions {
  std::vector<std::string> command;  // manifest "command" (the argv that made the trace)
  std::string teller_version;        // manifest "teller_version"
  std::string source;                // manifest "exported_from": the input it came from
  // Extra string fields for the manifest (e.g. "injected_fault").
  std::vector<std::pair<std::string, std::string>> manifest_fields;
};

struct ExportStats {
  uint64_t files = 0;              // *.tlr written (one per process)
  uint64_t events = 0;             // trace rows written
  uint64_t records = 0;            // raw records written (a range is two)
  uint64_t log_lines = 0;          // log rows written
  uint64_t untimed_log_lines = 0;  // of which without a time (written last)
  uint64_t dropped_gpu_annotations = 0;
  uint64_t newlines_in_messages = 0;  // '\n' in a log message, written as ' '
  // Log lines whose process a "(pid=N)" prefix cannot name: in a multi-host trace, a pid
  // that several hosts' processes share (the log importer then cannot tell them apart).
  uint64_t log_process_lost = 0;
  // The event clock of the written files is UTC minus this (one value for every file and
  // the manifest), chosen so that every event-clock time is positive.
  int64_t realtime_minus_monotonic_ns = 0;
  std::vector<std::string> files_written;  // relative to the output directory
};

// Refuses a directory that already holds a trace (a manifest.json or *.tlr file) or any
// other file, and a path that is a file; a missing directory is fine (it is created).
Status CheckExportDir(const std::string& out_dir);

// Writes `trace` into `out_dir` (CheckExportDir first, then created). Errors name the
// file that could not be written.
Result<ExportStats> ExportTrace(const Trace& trace, const std::string& out_dir,
                                const ExportOptions& options);

// File name of process `index` of the trace inside the output directory: sorted names
// keep the process order on import ("proc-0003.tlr").
std::string ExportFileName(size_t process_index);

}  // namespace teller::raw

#endif  // TELLER_FORMAT_TRACE_EXPORT_H_
