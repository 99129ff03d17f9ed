// Two traces compared column by column, row by row: the same strings under the same ids,
// events, processes, log lines, counters (in order), sources and run.
#ifndef TELLER_TESTS_INGEST_TRACE_COMPARE_H_
#define TELLER_TESTS_INGEST_TRACE_COMPARE_H_

#include <gtest/gtest.h>

#include "teller/core/trace.h"

namespace teller::ingest {

inline void ExpectSameTrace(const Trace& a, const Trace& b) {
  ASSERT_EQ(a.strings.size(), b.strings.size());
  for (StringId s = 0; s < a.strings.size(); ++s) {
    ASSERT_EQ(a.strings.Get(s), b.strings.Get(s)) << "string " << s;
  }
  ASSERT_EQ(a.events.size(), b.events.size());
  for (size_t i = 0; i < a.events.size(); ++i) {
    const EventRow x = a.events.Row(i), y = b.events.Row(i);
    ASSERT_EQ(x.type, y.type) << i;
    ASSERT_EQ(x.name, y.name) << i;
    ASSERT_EQ(x.category, y.category) << i;
    ASSERT_EQ(x.domain, y.domain) << i;
    ASSERT_EQ(x.process, y.process) << i;
    ASSERT_EQ(x.thread, y.thread) << i;
    ASSERT_EQ(x.start_ns, y.start_ns) << i;
    ASSERT_EQ(x.end_ns, y.end_ns) << i;
    ASSERT_EQ(x.correlation, y.correlation) << i;
    ASSERT_EQ(x.external_id, y.external_id) << i;
    ASSERT_EQ(x.device, y.device) << i;
    ASSERT_EQ(x.stream, y.stream) << i;
    ASSERT_EQ(x.bytes, y.bytes) << i;
    ASSERT_EQ(x.flags, y.flags) << i;
    ASSERT_EQ(x.signature, y.signature) << i;
  }
  ASSERT_EQ(a.processes.size(), b.processes.size());
  for (size_t i = 0; i < a.processes.size(); ++i) {
    const ProcessInfo &p = a.processes[i], &q = b.processes[i];
    EXPECT_EQ(p.pid, q.pid) << i;
    EXPECT_EQ(p.host, q.host) << i;
    EXPECT_EQ(p.label, q.label) << i;
    EXPECT_EQ(p.source, q.source) << i;
    EXPECT_EQ(p.rank, q.rank) << i;
    EXPECT_EQ(p.world_size, q.world_size) << i;
    EXPECT_EQ(p.local_rank, q.local_rank) << i;
    EXPECT_EQ(p.clock_offset_ns, q.clock_offset_ns) << i;
  }
  const LogTable &l = a.logs, &m = b.logs;
  ASSERT_EQ(l.size(), m.size());
  EXPECT_EQ(l.ts_ns, m.ts_ns);
  EXPECT_EQ(l.request, m.request);
  EXPECT_EQ(l.level, m.level);
  EXPECT_EQ(l.process, m.process);
  EXPECT_EQ(l.file, m.file);
  EXPECT_EQ(l.line, m.line);
  EXPECT_EQ(l.message, m.message);
  EXPECT_EQ(a.run.known, b.run.known);
  EXPECT_EQ(a.run.finished, b.run.finished);
  EXPECT_EQ(a.run.exit_code, b.run.exit_code);
  EXPECT_EQ(a.run.signal, b.run.signal);
  EXPECT_EQ(a.run.command, b.run.command);
  EXPECT_EQ(a.run.pid, b.run.pid);
  EXPECT_EQ(a.run.end_ns, b.run.end_ns);
  EXPECT_EQ(a.counters.items(), b.counters.items());
  EXPECT_EQ(a.sources, b.sources);
}

}  // namespace teller::ingest

#endif  // TELLER_TESTS_INGEST_TRACE_COMPARE_H_
