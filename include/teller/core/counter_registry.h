// The one table of every counter Teller keeps: the collector's (written into the raw
// trace's counter chunks), the importers' and the reconstruction's (trace.counters), the
// dataset builder's (index.json "counters") and the evaluation's. Each has an id (the
// index of its value in an array), the name every report prints, the stage that counts
// it, a severity and a one-line description; docs/counters.md lists the same rows
// (tests/core/counters_test.cc checks that it does).
//
// Header-only and constexpr: the collector's injected library uses the ids and names
// without allocating, and lookups by name are a binary search over a table sorted at
// compile time.
#ifndef TELLER_CORE_COUNTER_REGISTRY_H_
#define TELLER_CORE_COUNTER_REGISTRY_H_

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace teller {

enum class CounterSeverity : uint8_t {
  kInfo,      // a fact about the input; nothing lost or repaired
  kWarning,   // damaged or surprising input that was repaired or worked around
  kDataLoss,  // events, rows, bytes or labels that could not be used
};

// Who counts it. Collector counters are named as the trace file stores them.
enum class CounterStage : uint8_t {
  kCollector,
  kRaw,
  kKineto,
  kNsys,
  kLogs,
  kReconstruct,
  kDataset,
  kEval,
};

// X(id, name, stage, severity, description). Names never change (reports, index.json and
// trace files carry them); ':' is reserved for per-detail extras such as
// "kineto.unknown_category:overhead", which are not rows of the table.
#define TELLER_COUNTER_TABLE(X)                                                                    \
  /* Collector (raw trace counter chunks; `teller dump --stats`). */                               \
  X(kEventsDropped, "events_dropped", kCollector, kDataLoss,                                       \
    "events dropped: no room in the trace file (see ranges_dropped), or recorded from a "          \
    "signal handler while the thread was inside the recorder")                                     \
  X(kStringsDropped, "strings_dropped", kCollector, kDataLoss,                                     \
    "strings that could not be written (no room); the events that used them are dropped")          \
  X(kWriteErrors, "write_errors", kCollector, kDataLoss,                                           \
    "failed writes of the trace file (the data of that write is lost)")                            \
  X(kRangesDropped, "ranges_dropped", kCollector, kDataLoss,                                       \
    "NVTX ranges dropped whole (push, pop and everything between) for want of room; a gap "        \
    "record marks where the thread resumed")                                                       \
  X(kEventsDroppedReentrant, "events_dropped_reentrant", kCollector, kDataLoss,                    \
    "events (in events_dropped) that arrived from a signal handler while their thread was "        \
    "inside the recorder")                                                                         \
  X(kSpaceErrors, "space_errors", kCollector, kDataLoss,                                           \
    "times the trace file could not be extended (disk full, descriptor limit, directory "          \
    "gone); recording resumes when it can")                                                        \
  X(kBufferLimitReached, "buffer_limit_reached", kCollector, kDataLoss,                            \
    "block claims refused because the trace file reached TELLER_BUFFER_MB")                        \
  X(kThreads, "threads", kCollector, kInfo, "threads that recorded into the trace file")           \
  X(kCuptiActive, "cupti_active", kCollector, kInfo, "1 when CUPTI collection started")            \
  X(kCuptiUnavailable, "cupti_unavailable", kCollector, kWarning,                                  \
    "1 when CUPTI could not be started (no driver, no GPU, another subscriber)")                   \
  X(kCuptiRecords, "cupti_records", kCollector, kInfo, "CUPTI activity records converted")         \
  X(kCuptiRecordsDropped, "cupti_records_dropped", kCollector, kDataLoss,                          \
    "activity records CUPTI dropped, e.g. for want of buffers")                                    \
  X(kCuptiBuffersRefused, "cupti_buffers_refused", kCollector, kWarning,                           \
    "CUPTI buffer requests refused because the pool was exhausted")                                \
  X(kCuptiRecordsUnknown, "cupti_records_unknown", kCollector, kInfo,                              \
    "activity records of kinds that are not converted (skipped)")                                  \
  X(kCuptiBufferParseErrors, "cupti_buffer_parse_errors", kCollector, kDataLoss,                   \
    "CUPTI buffers whose iteration ended with an error (rest of the buffer lost)")                 \
  X(kCuptiApiUnmatchedExits, "cupti_api_unmatched_exits", kCollector, kWarning,                    \
    "API exits without a matching enter (calls open when collection started)")                     \
  X(kExportedEvents, "exported_events", kCollector, kInfo,                                         \
    "events `teller inject` wrote into the file (raw::ExportTrace in place of a collector)")       \
  /* Raw trace import. */                                                                          \
  X(kRawDamagedRegions, "raw.damaged_regions", kRaw, kDataLoss,                                    \
    "places in a raw file where damage was found")                                                 \
  X(kRawDroppedBytes, "raw.dropped_bytes", kRaw, kDataLoss,                                        \
    "bytes of a raw file skipped because they were damaged or torn")                               \
  X(kRawBadRecords, "raw.bad_records", kRaw, kDataLoss,                                            \
    "records inside intact chunks that made no sense")                                             \
  X(kRawUnknownChunks, "raw.unknown_chunks", kRaw, kWarning,                                       \
    "intact chunks of a type this reader does not know (skipped)")                                 \
  X(kRawUncleanEnd, "raw.unclean_end", kRaw, kDataLoss,                                            \
    "raw files whose writer did not close them (the last flush interval may be lost)")             \
  X(kRawEventsDroppedByCollector, "raw.events_dropped_by_collector", kRaw, kDataLoss,              \
    "the collector's events_dropped")                                                              \
  X(kRawStringsDroppedByCollector, "raw.strings_dropped_by_collector", kRaw, kDataLoss,            \
    "the collector's strings_dropped")                                                             \
  X(kRawNoClockAnchor, "raw.no_clock_anchor", kRaw, kWarning,                                      \
    "raw files without a clock anchor (times not converted to wall clock)")                        \
  X(kRawUnknownStringId, "raw.unknown_string_id", kRaw, kWarning,                                  \
    "string ids with no string in the file (name left empty)")                                     \
  X(kRawNvtxEndWithoutStart, "raw.nvtx_end_without_start", kRaw, kWarning,                         \
    "NVTX range ends whose start is not in the file (dropped)")                                    \
  X(kRawNvtxStartWithoutEnd, "raw.nvtx_start_without_end", kRaw, kWarning,                         \
    "NVTX range starts whose end never came (closed at their start)")                              \
  X(kRawUnknownCollectorCounters, "raw.unknown_collector_counters", kRaw, kWarning,                \
    "collector counters this version does not know; each kept as "                                 \
    "raw.unknown_collector_counters:NAME with its value")                                          \
  X(kRawCollectorGaps, "raw.collector_gaps", kRaw, kDataLoss,                                      \
    "places where a thread's recording resumed (or the thread ended) after the collector "         \
    "dropped events; each kept as raw.collector_gap:PID/TID with the events dropped")              \
  X(kRawRangesDroppedByCollector, "raw.ranges_dropped_by_collector", kRaw, kDataLoss,              \
    "NVTX ranges the collector dropped whole (counted per thread in the file)")                    \
  X(kRawUncommittedRecords, "raw.uncommitted_records", kRaw, kDataLoss,                            \
    "records written into a trace block but not committed when the process died (not used)")       \
  X(kRawEmptyFiles, "raw.empty_files", kRaw, kWarning,                                             \
    "empty raw files of a trace directory (a process killed before its file had a header: "        \
    "nothing recorded; skipped)")                                                                  \
  /* Kineto (PyTorch profiler) JSON import. */                                                     \
  X(kKinetoFlowEvents, "kineto.flow_events", kKineto, kInfo,                                       \
    "s/f/t flow events seen (not stored; binding is by correlation id)")                           \
  X(kKinetoMissingField, "kineto.missing_field", kKineto, kDataLoss,                               \
    "events without a usable ph, name or ts (skipped)")                                            \
  X(kKinetoMissingDuration, "kineto.missing_duration", kKineto, kWarning,                          \
    "X events without dur (kept with end = start)")                                                \
  X(kKinetoWrongType, "kineto.wrong_type", kKineto, kWarning,                                      \
    "fields of the wrong JSON type (the event is kept when it still has ph, name and ts)")         \
  X(kKinetoNegativeDuration, "kineto.negative_duration", kKineto, kWarning,                        \
    "events with dur < 0 (kept with end = start)")                                                 \
  X(kKinetoUnsupportedPhase, "kineto.unsupported_phase", kKineto, kInfo,                           \
    "events whose ph is not X/i/I/M/s/f/t/B/E (skipped)")                                          \
  X(kKinetoHashedTid, "kineto.hashed_tid", kKineto, kInfo,                                         \
    "tids that are not a uint32 number, replaced by a hash")                                       \
  X(kKinetoNonnumericPid, "kineto.nonnumeric_pid", kKineto, kInfo,                                 \
    "host rows whose pid is not a number (put in the main process)")                               \
  X(kKinetoNonObjectEvent, "kineto.non_object_event", kKineto, kDataLoss,                          \
    "elements of traceEvents that are not objects (skipped)")                                      \
  X(kKinetoTimeOverflow, "kineto.time_overflow", kKineto, kWarning,                                \
    "times outside int64 nanoseconds after adding the base (left unshifted)")                      \
  X(kKinetoDuplicateCorrelation, "kineto.duplicate_correlation", kKineto, kWarning,                \
    "runtime/driver rows sharing a correlation id with an earlier one (kept)")                     \
  X(kKinetoUnknownCategory, "kineto.unknown_category", kKineto, kInfo,                             \
    "X events of other categories (skipped); per category as kineto.unknown_category:CATEGORY")    \
  /* Nsight Systems SQLite import. */                                                              \
  X(kNsysMissingTable, "nsys.missing_table", kNsys, kWarning, "tables the importer reads absent")  \
  X(kNsysMissingColumn, "nsys.missing_column", kNsys, kWarning,                                    \
    "columns the importer reads absent (table skipped or field defaulted)")                        \
  X(kNsysCorruptTable, "nsys.corrupt_table", kNsys, kDataLoss,                                     \
    "tables whose reading stopped at a corrupt page (rows before it kept)")                        \
  X(kNsysCorruptSchema, "nsys.corrupt_schema", kNsys, kDataLoss,                                   \
    "files whose schema was only partly readable (read in salvage mode)")                          \
  X(kNsysQueryError, "nsys.query_error", kNsys, kDataLoss,                                         \
    "tables skipped on another SQLite error")                                                      \
  X(kNsysInterrupted, "nsys.interrupted", kNsys, kDataLoss,                                        \
    "imports whose SQLite step budget ran out (the rest skipped)")                                 \
  X(kNsysNoSessionStart, "nsys.no_session_start", kNsys, kWarning,                                 \
    "files without a session start time (times stay relative)")                                    \
  X(kNsysNullStart, "nsys.null_start", kNsys, kDataLoss, "rows whose start is NULL (dropped)")     \
  X(kNsysNullProcess, "nsys.null_process", kNsys, kDataLoss,                                       \
    "rows whose globalTid/globalPid is NULL (dropped)")                                            \
  X(kNsysNullEnd, "nsys.null_end", kNsys, kWarning,                                                \
    "call or GPU rows whose end is NULL (kept with end = start)")                                  \
  X(kNsysNullField, "nsys.null_field", kNsys, kWarning,                                            \
    "other NULL fields (kept as 0 or an empty name)")                                              \
  X(kNsysNegativeDuration, "nsys.negative_duration", kNsys, kWarning,                              \
    "rows with end < start (kept with end = start)")                                               \
  X(kNsysUnknownStringId, "nsys.unknown_string_id", kNsys, kWarning,                               \
    "ids not in StringIds (kept with an empty name)")                                              \
  X(kNsysRuntimeBacktraceSkipped, "nsys.runtime_backtrace_skipped", kNsys, kInfo,                  \
    "CUDABACKTRACE rows (duplicates, dropped)")                                                    \
  X(kNsysRuntimeUnknownClass, "nsys.runtime_unknown_class", kNsys, kWarning,                       \
    "runtime rows of an unknown eventClass (kept with the table's type)")                          \
  X(kNsysNvtxSkipped, "nsys.nvtx_skipped", kNsys, kInfo,                                           \
    "NVTX rows of types that are not mapped (dropped)")                                            \
  X(kNsysNvtxOpenRange, "nsys.nvtx_open_range", kNsys, kWarning,                                   \
    "NVTX ranges without an end (push or instant range)")                                          \
  X(kNsysNvtxUnknownDomain, "nsys.nvtx_unknown_domain", kNsys, kWarning,                           \
    "NVTX domain ids without a creation row (domain nvtx-domain-ID)")                              \
  /* Log import. */                                                                                \
  X(kLogsLines, "logs.lines", kLogs, kInfo, "log rows imported")                                   \
  X(kLogsNoTimestamp, "logs.no_timestamp", kLogs, kWarning, "log rows left without a time")        \
  X(kLogsEmptyLines, "logs.empty_lines", kLogs, kInfo,                                             \
    "blank lines and lines of nothing but process prefixes (no row)")                              \
  X(kLogsAssumedUtc, "logs.assumed_utc", kLogs, kWarning,                                          \
    "log files whose times were read as UTC for want of an offset")                                \
  X(kLogsYearUnknown, "logs.year_unknown", kLogs, kWarning,                                        \
    "log files without a year or a reference time (1970 assumed)")                                 \
  X(kLogsInvalidTime, "logs.invalid_time", kLogs, kWarning,                                        \
    "printed times that are not valid dates or fall outside int64 nanoseconds")                    \
  X(kLogsTruncatedLines, "logs.truncated_lines", kLogs, kWarning,                                  \
    "lines longer than 64 KiB (cut)")                                                              \
  X(kLogsProgressLines, "logs.progress_lines", kLogs, kInfo,                                       \
    "lines with carriage-return progress updates (the last state kept)")                           \
  X(kLogsMultiRequestLines, "logs.multi_request_lines", kLogs, kInfo,                              \
    "log lines naming more than one request")                                                      \
  X(kLogsRankWithoutProcess, "logs.rank_without_process", kLogs, kWarning,                         \
    "log rows whose rank matches no single process")                                               \
  X(kLogsCaptureWithoutClock, "logs.capture_without_clock", kLogs, kWarning,                       \
    "captured log files without a monotonic-to-UTC clock (printed times used)")                    \
  X(kLogsCaptureLineWithoutNs, "logs.capture_line_without_ns", kLogs, kWarning,                    \
    "captured lines without their capture time")                                                   \
  X(kLogsCaptureTimeMismatch, "logs.capture_time_mismatch", kLogs, kWarning,                       \
    "captured lines whose printed time differs from the capture time by more than 2 s")            \
  X(kLogsGzipTrailingBytes, "logs.gzip_trailing_bytes", kLogs, kWarning,                           \
    "bytes after the last gzip member of a log file (ignored)")                                    \
  /* Reconstruction. */                                                                            \
  X(kReconstructNegativeDuration, "reconstruct.negative_duration", kReconstruct, kWarning,         \
    "events ending before they start (end set to the start)")                                      \
  X(kReconstructOverlappingRanges, "reconstruct.overlapping_ranges", kReconstruct, kWarning,       \
    "ranges ending after their parent (kept under it)")                                            \
  X(kReconstructDuplicateCorrelation, "reconstruct.duplicate_correlation", kReconstruct, kWarning, \
    "host calls of one process sharing a correlation id (the first binds the GPU work)")           \
  X(kReconstructUnmatchedPush, "reconstruct.unmatched_push", kReconstruct, kWarning,               \
    "pushes never popped (closed at the thread's last time)")                                      \
  X(kReconstructUnmatchedPop, "reconstruct.unmatched_pop", kReconstruct, kWarning,                 \
    "pops without a push (dropped)")                                                               \
  X(kReconstructOrphanGpuEvents, "reconstruct.orphan_gpu_events", kReconstruct, kWarning,          \
    "GPU events no host call launched")                                                            \
  X(kReconstructClockUnalignedHosts, "reconstruct.clock_unaligned_hosts", kReconstruct, kWarning,  \
    "hosts too few collectives tie to the first host (clocks left as recorded)")                   \
  X(kReconstructClockAlignedHosts, "reconstruct.clock_aligned_hosts", kReconstruct, kInfo,         \
    "hosts shifted onto the first host's clock")                                                   \
  /* Dataset build (index.json "counters", in this order). */                                      \
  X(kLocators, "locators", kDataset, kInfo,                                                        \
    "node locators in the ground truth (both views of every step)")                                \
  X(kLocatorsUnresolved, "locators_unresolved", kDataset, kDataLoss,                               \
    "locators matching no event (> 0.1 % fails the build)")                                        \
  X(kLocatorsOutsideStep, "locators_outside_step", kDataset, kWarning,                             \
    "resolved locators not in the record of the step that labels them")                            \
  X(kTruthStepsMissing, "truth_steps_missing", kDataset, kWarning,                                 \
    "ground-truth steps whose seq no STEP range carries")                                          \
  X(kTruthAnomalousStepsMissing, "truth_anomalous_steps_missing", kDataset, kDataLoss,             \
    "of those, steps with affected requests (labels lost)")                                        \
  X(kTruthRequestsMissing, "truth_requests_missing", kDataset, kWarning,                           \
    "ground-truth requests in no step of the trace")                                               \
  X(kRequestsWithoutTruth, "requests_without_truth", kDataset, kWarning,                           \
    "requests of the trace the ground truth does not list")                                        \
  X(kAffectedRequestsNotInStep, "affected_requests_not_in_step", kDataset, kWarning,               \
    "(step, affected request) pairs whose trace step does not list the request")                   \
  X(kStepRequestsMismatch, "step_requests_mismatch", kDataset, kWarning,                           \
    "steps whose request set differs from the ground truth's")                                     \
  X(kStepsWithoutSeq, "steps_without_seq", kDataset, kWarning,                                     \
    "STEP ranges grouped by ordinal (no seq=)")                                                    \
  X(kDuplicateSeq, "duplicate_seq", kDataset, kWarning,                                            \
    "STEP ranges whose process already had one with that seq (both kept)")                         \
  X(kTruncatedSteps, "truncated_steps", kDataset, kDataLoss,                                       \
    "step records cut at --max-nodes-per-step")                                                    \
  X(kFaultyRequestsWithoutAnomalousStep, "faulty_requests_without_anomalous_step", kDataset,       \
    kWarning, "faulty requests none of whose steps is anomalous")                                  \
  X(kHealthyRequestsWithAnomalousStep, "healthy_requests_with_anomalous_step", kDataset, kWarning, \
    "healthy requests with an anomalous step")                                                     \
  /* Evaluation (teller eval). */                                                                  \
  X(kNumericAbnormalEngineSteps, "teller-numeric.abnormal_engine_steps", kEval, kInfo,             \
    "engine steps the numeric diagnosis found abnormal")                                           \
  X(kNumericEngineSteps, "teller-numeric.engine_steps", kEval, kInfo,                              \
    "engine steps the numeric diagnosis scored")                                                   \
  X(kNumericEvidence, "teller-numeric.evidence", kEval, kInfo,                                     \
    "evidence nodes of abnormal engine steps")                                                     \
  X(kNumericEvidenceOutsideRecord, "teller-numeric.evidence_outside_record", kEval, kWarning,      \
    "evidence nodes without a local id (not in the step's record)")                                \
  X(kNumericUnitsWithoutDiagnosis, "teller-numeric.units_without_diagnosis", kEval, kWarning,      \
    "dataset steps no diagnosed engine step covers")                                               \
  X(kNumericUnmatchedRequests, "teller-numeric.unmatched_requests", kEval, kWarning,               \
    "(engine step, request) pairs the dataset lacks")

enum class CounterId : uint16_t {
#define TELLER_COUNTER_ID_(id, name, stage, severity, description) id,
  TELLER_COUNTER_TABLE(TELLER_COUNTER_ID_)
#undef TELLER_COUNTER_ID_
};

struct CounterInfo {
  CounterId id;
  std::string_view name;
  CounterStage stage;
  CounterSeverity severity;
  std::string_view description;
};

// Indexed by CounterId.
inline constexpr CounterInfo kCounterTable[] = {
#define TELLER_COUNTER_INFO_(id, name, stage, severity, description) \
  {CounterId::id, name, CounterStage::stage, CounterSeverity::severity, description},
    TELLER_COUNTER_TABLE(TELLER_COUNTER_INFO_)
#undef TELLER_COUNTER_INFO_
};

inline constexpr size_t kCounterCount = std::size(kCounterTable);

constexpr const CounterInfo& CounterInfoOf(CounterId id) {
  return kCounterTable[static_cast<size_t>(id)];
}
constexpr std::string_view CounterName(CounterId id) { return CounterInfoOf(id).name; }

constexpr std::string_view CounterSeverityName(CounterSeverity s) {
  switch (s) {
    case CounterSeverity::kInfo:
      return "info";
    case CounterSeverity::kWarning:
      return "warning";
    case CounterSeverity::kDataLoss:
      return "data_loss";
  }
  return "warning";
}

constexpr std::string_view CounterStageName(CounterStage s) {
  switch (s) {
    case CounterStage::kCollector:
      return "collector";
    case CounterStage::kRaw:
      return "raw";
    case CounterStage::kKineto:
      return "kineto";
    case CounterStage::kNsys:
      return "nsys";
    case CounterStage::kLogs:
      return "logs";
    case CounterStage::kReconstruct:
      return "reconstruct";
    case CounterStage::kDataset:
      return "dataset";
    case CounterStage::kEval:
      return "eval";
  }
  return "";
}

namespace counter_internal {

constexpr std::array<CounterId, kCounterCount> SortedByName() {
  std::array<CounterId, kCounterCount> ids{};
  for (size_t i = 0; i < kCounterCount; ++i) ids[i] = static_cast<CounterId>(i);
  std::sort(ids.begin(), ids.end(),
            [](CounterId a, CounterId b) { return CounterName(a) < CounterName(b); });
  return ids;
}

inline constexpr std::array<CounterId, kCounterCount> kByName = SortedByName();

constexpr bool TableIsWellFormed() {
  for (size_t i = 0; i < kCounterCount; ++i) {
    const CounterInfo& c = kCounterTable[i];
    if (static_cast<size_t>(c.id) != i) return false;  // rows in id order
    if (c.name.empty() || c.description.empty()) return false;
    if (c.name.find(':') != std::string_view::npos) return false;  // reserved for extras
    if (i > 0 && CounterName(kByName[i - 1]) == CounterName(kByName[i])) return false;
  }
  return true;
}
static_assert(TableIsWellFormed(), "counter table: ids out of order, a name reused, or ':'");

}  // namespace counter_internal

// The counter of that exact name, if the table has one.
constexpr std::optional<CounterId> FindCounter(std::string_view name) {
  const auto& ids = counter_internal::kByName;
  const auto it =
      std::lower_bound(ids.begin(), ids.end(), name,
                       [](CounterId id, std::string_view n) { return CounterName(id) < n; });
  if (it == ids.end() || CounterName(*it) != name) return std::nullopt;
  return *it;
}

// Severity of any counter name: a row's own, an extra "<row>:<detail>"'s row's, and a
// warning for a name the table does not know (another version wrote it).
constexpr CounterSeverity CounterSeverityOf(std::string_view name) {
  if (const auto id = FindCounter(name)) return CounterInfoOf(*id).severity;
  const size_t colon = name.find(':');
  if (colon != std::string_view::npos) {
    if (const auto id = FindCounter(name.substr(0, colon))) return CounterInfoOf(*id).severity;
  }
  return CounterSeverity::kWarning;
}

}  // namespace teller

#endif  // TELLER_CORE_COUNTER_REGISTRY_H_
