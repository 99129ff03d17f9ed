#include "teller/core/counters.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "teller/core/counter_registry.h"
#include "teller/core/trace.h"
#include "teller/format/raw_writer.h"
#include "teller/ingest/ingest.h"

namespace teller {
namespace {

using Items = std::vector<std::pair<std::string_view, uint64_t>>;

TEST(CounterRegistryTest, IdsAreIndicesAndNamesAreUnique) {
  std::set<std::string_view> names;
  for (size_t i = 0; i < kCounterCount; ++i) {
    const CounterInfo& c = kCounterTable[i];
    EXPECT_EQ(static_cast<size_t>(c.id), i) << c.name;
    EXPECT_TRUE(names.insert(c.name).second) << "reused: " << c.name;
    EXPECT_FALSE(c.description.empty()) << c.name;
    EXPECT_EQ(c.name.find(':'), std::string_view::npos) << c.name;
    EXPECT_EQ(&CounterInfoOf(c.id), &c);
  }
  EXPECT_EQ(names.size(), kCounterCount);
}

TEST(CounterRegistryTest, LookupByNameRoundTrips) {
  for (const CounterInfo& c : kCounterTable) {
    const auto id = FindCounter(c.name);
    ASSERT_TRUE(id.has_value()) << c.name;
    EXPECT_EQ(*id, c.id) << c.name;
    EXPECT_EQ(CounterName(*id), c.name);
  }
  // Prefixes, extensions and near misses of real names are not counters.
  for (std::string_view name : {"", "raw.", "raw", "logs.line", "logs.lines.x", "Logs.lines",
                                "kineto.unknown_category:overhead", "locators ", "zzz"}) {
    EXPECT_FALSE(FindCounter(name).has_value()) << "'" << name << "'";
  }
  static_assert(FindCounter("reconstruct.unmatched_pop") == CounterId::kReconstructUnmatchedPop);
}

// The names reports, index.json and trace files have always carried (a rename would
// change every one of them).
TEST(CounterRegistryTest, KeepsTheNamesOutputsCarry) {
  const std::pair<CounterId, std::string_view> pinned[] = {
      {CounterId::kEventsDropped, "events_dropped"},
      {CounterId::kCuptiRecordsDropped, "cupti_records_dropped"},
      {CounterId::kRawEventsDroppedByCollector, "raw.events_dropped_by_collector"},
      {CounterId::kKinetoUnknownCategory, "kineto.unknown_category"},
      {CounterId::kNsysRuntimeBacktraceSkipped, "nsys.runtime_backtrace_skipped"},
      {CounterId::kLogsCaptureLineWithoutNs, "logs.capture_line_without_ns"},
      {CounterId::kReconstructClockAlignedHosts, "reconstruct.clock_aligned_hosts"},
      {CounterId::kLocatorsUnresolved, "locators_unresolved"},
      {CounterId::kHealthyRequestsWithAnomalousStep, "healthy_requests_with_anomalous_step"},
      {CounterId::kNumericUnitsWithoutDiagnosis, "teller-numeric.units_without_diagnosis"},
  };
  for (const auto& [id, name] : pinned) EXPECT_EQ(CounterName(id), name);
}

// A row filed under the wrong stage would be written to the wrong place (the collector
// writes its own rows into the trace file; index.json lists the dataset rows).
TEST(CounterRegistryTest, NamesMatchTheirStage) {
  for (const CounterInfo& c : kCounterTable) {
    std::string_view prefix;
    switch (c.stage) {
      case CounterStage::kRaw:
        prefix = "raw.";
        break;
      case CounterStage::kKineto:
        prefix = "kineto.";
        break;
      case CounterStage::kNsys:
        prefix = "nsys.";
        break;
      case CounterStage::kLogs:
        prefix = "logs.";
        break;
      case CounterStage::kReconstruct:
        prefix = "reconstruct.";
        break;
      case CounterStage::kEval:
        prefix = "teller-numeric.";
        break;
      case CounterStage::kCollector:
      case CounterStage::kDataset:
        EXPECT_EQ(c.name.find('.'), std::string_view::npos) << c.name;
        continue;
    }
    EXPECT_EQ(c.name.substr(0, prefix.size()), prefix) << c.name;
  }
}

TEST(CounterRegistryTest, SeverityOfExtrasComesFromTheirRow) {
  EXPECT_EQ(CounterSeverityOf("raw.dropped_bytes"), CounterSeverity::kDataLoss);
  EXPECT_EQ(CounterSeverityOf("kineto.flow_events"), CounterSeverity::kInfo);
  EXPECT_EQ(CounterSeverityOf("kineto.unknown_category:overhead"), CounterSeverity::kInfo);
  EXPECT_EQ(CounterSeverityOf("raw.unknown_collector_counters:gpu_lost"),
            CounterSeverity::kWarning);
  EXPECT_EQ(CounterSeverityOf("events_dropped:x"), CounterSeverity::kDataLoss);
  // Unknown names (and a detail of an unknown row) warn: another version wrote them.
  EXPECT_EQ(CounterSeverityOf("newer.thing"), CounterSeverity::kWarning);
  EXPECT_EQ(CounterSeverityOf("newer:kineto.flow_events"), CounterSeverity::kWarning);
}

TEST(CountersTest, AddsByIdAndByName) {
  Counters c;
  c.Add(CounterId::kReconstructUnmatchedPop);
  c.Add(CounterId::kReconstructUnmatchedPop, 4);
  c.AddNamed("reconstruct.unmatched_pop", 2);  // a registry name goes to its id
  EXPECT_EQ(c.Get(CounterId::kReconstructUnmatchedPop), 7u);
  EXPECT_EQ(c.Get("reconstruct.unmatched_pop"), 7u);
  EXPECT_EQ(c.Get(CounterId::kReconstructUnmatchedPush), 0u);
  EXPECT_EQ(c.Get("never.added"), 0u);
  EXPECT_EQ(c.items(), (Items{{"reconstruct.unmatched_pop", 7}}));
}

TEST(CountersTest, ItemsInOrderOfFirstAddWithZerosAndExtras) {
  Counters c;
  c.Add(CounterId::kRawDroppedBytes, 0);  // added, even with nothing to count
  c.AddNamed("kineto.unknown_category:overhead", 9);
  c.Add(CounterId::kKinetoUnknownCategory, 9);
  c.Add(CounterId::kRawDamagedRegions, 2);
  c.AddNamed("kineto.unknown_category:Trace", 1);
  c.Add(CounterId::kRawDroppedBytes, 100);  // not moved by a later add
  c.AddNamed("kineto.unknown_category:overhead", 1);
  c.Add(CounterId::kKinetoUnknownCategory, 1);
  EXPECT_EQ(c.items(), (Items{{"raw.dropped_bytes", 100},
                              {"kineto.unknown_category:overhead", 10},
                              {"kineto.unknown_category", 10},
                              {"raw.damaged_regions", 2},
                              {"kineto.unknown_category:Trace", 1}}));
  EXPECT_EQ(c.Get("kineto.unknown_category:Trace"), 1u);
  EXPECT_EQ(c.Get("kineto.unknown_category:trace"), 0u);

  const std::vector<CounterEntry> e = c.entries();
  ASSERT_EQ(e.size(), 5u);
  EXPECT_EQ(e[0].severity, CounterSeverity::kDataLoss);
  EXPECT_EQ(e[0].description, CounterInfoOf(CounterId::kRawDroppedBytes).description);
  EXPECT_EQ(e[1].name, "kineto.unknown_category:overhead");
  EXPECT_EQ(e[1].value, 10u);
  EXPECT_EQ(e[1].severity, CounterSeverity::kInfo);  // its row's
  EXPECT_TRUE(e[1].description.empty());
}

TEST(CountersTest, MergeSumsAndAppendsNewNamesInTheOtherOrder) {
  Counters a;
  a.Add(CounterId::kLogsLines, 10);
  a.AddNamed("raw.unknown_collector_counters:x", 1);
  Counters b;
  b.Add(CounterId::kNsysNullEnd, 3);
  b.AddNamed("raw.unknown_collector_counters:x", 2);
  b.Add(CounterId::kLogsLines, 5);
  b.AddNamed("raw.unknown_collector_counters:y", 0);
  a.Merge(b);
  EXPECT_EQ(a.items(), (Items{{"logs.lines", 15},
                              {"raw.unknown_collector_counters:x", 3},
                              {"nsys.null_end", 3},
                              {"raw.unknown_collector_counters:y", 0}}));
  // The source is unchanged.
  EXPECT_EQ(b.items(), (Items{{"nsys.null_end", 3},
                              {"raw.unknown_collector_counters:x", 2},
                              {"logs.lines", 5},
                              {"raw.unknown_collector_counters:y", 0}}));
}

TEST(CountersTest, CopiesKeepExtrasAndOrder) {
  Counters a;
  a.AddNamed("foreign.counter", 4);
  a.Add(CounterId::kLocators, 2);
  Counters b = a;
  b.AddNamed("foreign.counter", 1);
  EXPECT_EQ(a.Get("foreign.counter"), 4u);
  EXPECT_EQ(b.items(), (Items{{"foreign.counter", 5}, {"locators", 2}}));
}

// docs/counters.md has one table row per registry row, in table order, with the same
// name, stage, severity and description.
TEST(CounterRegistryTest, DocsListEveryCounter) {
  std::ifstream in(std::string(TELLER_SOURCE_DIR) + "/docs/counters.md");
  ASSERT_TRUE(in) << "docs/counters.md not found under " << TELLER_SOURCE_DIR;
  std::vector<std::vector<std::string>> rows;
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("| `", 0) != 0) continue;  // counter rows start with a quoted name
    std::vector<std::string> cells;
    std::stringstream ss(line.substr(1));
    std::string cell;
    while (std::getline(ss, cell, '|')) {
      const size_t b = cell.find_first_not_of(' ');
      const size_t e = cell.find_last_not_of(' ');
      cells.push_back(b == std::string::npos ? "" : cell.substr(b, e - b + 1));
    }
    rows.push_back(cells);
  }
  ASSERT_EQ(rows.size(), kCounterCount);
  for (size_t i = 0; i < kCounterCount; ++i) {
    const CounterInfo& c = kCounterTable[i];
    ASSERT_EQ(rows[i].size(), 4u) << "row " << i;
    EXPECT_EQ(rows[i][0], "`" + std::string(c.name) + "`") << "row " << i;
    EXPECT_EQ(rows[i][1], CounterStageName(c.stage)) << c.name;
    EXPECT_EQ(rows[i][2], CounterSeverityName(c.severity)) << c.name;
    EXPECT_EQ(rows[i][3], c.description) << c.name;
  }
}

// Collector counters travel through the raw file by name: the importer maps the two it
// reports, ignores the other known ones (`teller dump --stats` shows them) and keeps a
// name it does not know, so that a newer collector's counter is not lost.
TEST(CountersTest, RawImportKeepsCollectorCountersItDoesNotKnow) {
  char tmpl[] = "/tmp/teller-counters-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string path = std::string(tmpl) + "/p.tlr";
  {
    auto w = raw::RawFileWriter::Create(path);
    ASSERT_TRUE(w.ok()) << w.status().message();
    raw::PayloadBuilder info;
    info.AddKeyValue("pid", "7");
    info.AddKeyValue("host", "node-0");
    ASSERT_TRUE(w.value()->WritePayload(raw::ChunkType::kProcessInfo, info).ok());
    ASSERT_TRUE(w.value()->WriteClockAnchor({1'700'000'000'000'000'000, 1'000, 30}).ok());
    raw::PayloadBuilder periodic;  // an earlier value, replaced by the end chunk's
    periodic.AddKeyValue("gpu_widgets_lost", "1");
    ASSERT_TRUE(w.value()->WritePayload(raw::ChunkType::kCounters, periodic).ok());
    raw::PayloadBuilder end;
    end.AddKeyValue(CounterName(CounterId::kCuptiRecords), "1234");
    end.AddKeyValue("gpu_widgets_lost", "5");
    end.AddKeyValue("another_new_one", "0");
    end.AddKeyValue(CounterName(CounterId::kEventsDropped), "3");
    end.AddKeyValue(CounterName(CounterId::kStringsDropped), "0");
    ASSERT_TRUE(w.value()->WritePayload(raw::ChunkType::kEnd, end).ok());
  }
  Trace trace;
  const Status st = ingest::ImportPath(path, trace);
  std::system(("rm -rf '" + std::string(tmpl) + "'").c_str());
  ASSERT_TRUE(st.ok()) << st.message();

  EXPECT_EQ(trace.counters.Get(CounterId::kRawEventsDroppedByCollector), 3u);
  EXPECT_EQ(trace.counters.Get(CounterId::kRawStringsDroppedByCollector), 0u);
  EXPECT_EQ(trace.counters.Get(CounterId::kRawUncleanEnd), 0u);
  EXPECT_EQ(trace.counters.Get(CounterId::kCuptiRecords), 0u);  // known: left to dump
  EXPECT_EQ(trace.counters.Get(CounterId::kRawUnknownCollectorCounters), 2u);
  EXPECT_EQ(trace.counters.Get("raw.unknown_collector_counters:gpu_widgets_lost"), 5u);
  Items nonzero;
  for (const auto& item : trace.counters.items()) {
    if (item.second != 0) nonzero.push_back(item);
  }
  EXPECT_EQ(nonzero, (Items{{"raw.events_dropped_by_collector", 3},
                            {"raw.unknown_collector_counters", 2},
                            {"raw.unknown_collector_counters:gpu_widgets_lost", 5}}));
}

}  // namespace
}  // namespace teller
