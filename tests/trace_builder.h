// A trace built event by event for tests whose answer is known by construction: host
// ranges, calls and GPU work on one process ("node-1", pid 100) unless told otherwise, and
// log lines.
#ifndef TELLER_TESTS_TRACE_BUILDER_H_
#define TELLER_TESTS_TRACE_BUILDER_H_

#include <cstdint>
#include <string_view>

#include "teller/core/trace.h"

namespace teller::testing {

class TraceBuilder {
 public:
  TraceBuilder() {
    proc_ = trace_.ProcessIndex("node-1", 100);
    nvtx_ = trace_.strings.Intern("nvtx");
  }
  size_t Add(EventType type, std::string_view name, int64_t start, int64_t end = -1,
             uint64_t correlation = 0, uint32_t thread = 1, uint32_t process = 0) {
    EventRow row;
    row.type = type;
    row.name = trace_.strings.Intern(name);
    row.category = IsGpuWork(type)    ? trace_.strings.Intern("kernel")
                   : IsHostCall(type) ? trace_.strings.Intern("cuda_runtime")
                                      : nvtx_;
    row.process = process;
    row.thread = thread;
    row.start_ns = start;
    row.end_ns = end < 0 ? start : end;
    row.correlation = correlation;
    return trace_.events.Append(row);
  }
  void Log(int64_t ts, std::string_view request, std::string_view message) {
    auto& l = trace_.logs;
    l.ts_ns.push_back(ts);
    l.request.push_back(request.empty() ? 0 : trace_.strings.Intern(request));
    l.level.push_back(LogLevel::kInfo);
    l.process.push_back(LogTable::kNoProcess);
    l.file.push_back(0);
    l.line.push_back(static_cast<uint32_t>(l.ts_ns.size()));
    l.message.push_back(trace_.strings.Intern(message));
  }
  Trace& trace() { return trace_; }
  uint32_t proc_ = 0;

 private:
  Trace trace_;
  StringId nvtx_ = 0;
};

}  // namespace teller::testing

#endif  // TELLER_TESTS_TRACE_BUILDER_H_
