// The reports a person opens (docs/report.md): the Chrome trace-event export read back by
// Teller's own Kineto importer (same events, times to the nanosecond, the findings as the
// only additions), the diagnosis JSON read back, and the HTML report's data checked
// against the Diagnosis it was written from.
#include "teller/report/report.h"

#include <gtest/gtest.h>
#include <simdjson.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "real_data.h"
#include "teller/core/file_util.h"
#include "teller/diagnose/diagnose.h"
#include "teller/ingest/ingest.h"
#include "teller/sim/faults.h"
#include "teller/sim/sim.h"

namespace teller {
namespace {

std::string TempPath(const std::string& name) {
  return "/tmp/teller-report-test-" + std::to_string(getpid()) + "-" + name;
}

struct Case {
  Trace trace;
  reconstruct::Reconstruction r;
  diagnose::Diagnosis d;
};

// A small version of the README's demo: 2 nodes x 3 GPUs, one GPU's GEMMs 3x slower.
const Case& Demo() {
  static Case* c = [] {
    auto* out = new Case;
    sim::SimConfig cfg;
    cfg.profile = "vllm-v1-online";
    cfg.seed = 7;
    cfg.requests = 10;
    cfg.layers = 4;
    cfg.output_median = 12;
    sim::FaultSpec f;
    std::string error;
    EXPECT_TRUE(sim::ParseFaultSpec(
        "kernel_slow_one_gpu:target=gemm,magnitude=3,onset=0.1s,duration=0.3s,rank=1", &f, &error))
        << error;
    cfg.faults.push_back(f);
    const std::string dir = TempPath("demo");
    EXPECT_EQ(std::system(("rm -rf '" + dir + "'").c_str()), 0);
    auto s = sim::Simulate(cfg, dir);
    EXPECT_TRUE(s.ok()) << s.status().message();
    EXPECT_TRUE(ingest::ImportPath(dir, out->trace).ok());
    out->r = reconstruct::Reconstruct(out->trace);
    out->d = diagnose::Diagnose(out->trace, out->r, {});
    EXPECT_EQ(std::system(("rm -rf '" + dir + "'").c_str()), 0);
    return out;
  }();
  return *c;
}

using EventKey = std::tuple<EventType, std::string, int64_t, int64_t>;

// Every event as (type, name, start, end), sorted: what must survive the round trip. Pops
// are written with the name of the push they close (viewers match E to B by name), so
// their names are left out here and checked by BeginEndNest.
std::vector<EventKey> Events(const Trace& t) {
  std::vector<EventKey> out;
  for (size_t i = 0; i < t.events.size(); ++i) {
    const bool pop = t.events.type[i] == EventType::kPop;
    out.emplace_back(t.events.type[i], pop ? "" : std::string(t.strings.Get(t.events.name[i])),
                     t.events.start_ns[i], t.events.end_ns[i]);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::map<EventType, size_t> CountByType(const Trace& t) {
  std::map<EventType, size_t> out;
  for (size_t i = 0; i < t.events.size(); ++i) ++out[t.events.type[i]];
  return out;
}

void ReadBack(const std::string& json, const std::string& name, Trace* back) {
  const std::string path = TempPath(name + ".json");
  EXPECT_TRUE(WriteFileAtomic(path, json).ok());
  const Status st = ingest::ImportPath(path, *back);
  EXPECT_TRUE(st.ok()) << st.message();
  std::remove(path.c_str());
}

// Phases of the exported JSON: counts per ph and per (ph, cat), flow ids by phase.
struct Parsed {
  size_t mismatched_ends = 0;  // E events whose name and args are not those of the open B
  size_t unclosed = 0;         // B events never closed
  std::map<std::string, size_t> ph;
  std::map<std::string, size_t> ph_cat;
  std::multiset<uint64_t> flow_start, flow_end;
  size_t teller_args = 0;
};
Parsed Parse(const std::string& json) {
  Parsed p;
  std::map<std::string, std::vector<std::string>> open;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  EXPECT_EQ(parser.parse(json).get(doc), simdjson::SUCCESS);
  for (simdjson::dom::element e : doc["traceEvents"].get_array()) {
    const std::string ph(std::string_view(e["ph"].get_string()));
    std::string_view cat;
    if (e["cat"].get(cat) != simdjson::SUCCESS) cat = "";
    ++p.ph[ph];
    ++p.ph_cat[ph + "/" + std::string(cat)];
    uint64_t id = 0;
    if (ph == "s" && e["id"].get(id) == simdjson::SUCCESS) p.flow_start.insert(id);
    if (ph == "f" && e["id"].get(id) == simdjson::SUCCESS) p.flow_end.insert(id);
    simdjson::dom::element t;
    if (ph != "E" && e["args"]["teller"].get(t) == simdjson::SUCCESS) ++p.teller_args;
    if (ph == "B" || ph == "E") {
      // File order is time order per thread for B/E of one thread in the export.
      const std::string key =
          std::to_string(int64_t(e["pid"])) + "/" + std::to_string(int64_t(e["tid"]));
      const std::string id = std::string(std::string_view(e["name"].get_string())) + "|" +
                             simdjson::to_string(e["args"]);
      auto& stack = open[key];
      if (ph == "B") {
        stack.push_back(id);
      } else if (stack.empty() || stack.back() != id) {
        ++p.mismatched_ends;
      } else {
        stack.pop_back();
      }
    }
  }
  for (const auto& [key, stack] : open) p.unclosed += stack.size();
  return p;
}

TEST(ChromeTrace, DemoRoundTripsThroughTheKinetoImporter) {
  const Case& c = Demo();
  ASSERT_GT(c.trace.events.size(), 1000u);
  report::ChromeTraceStats stats;
  const std::string json = report::ToChromeTrace(c.trace, c.r, nullptr, &stats);
  EXPECT_EQ(stats.events, c.trace.events.size());
  // A flow per GPU operation that reconstruction bound to its host call (its own count).
  EXPECT_EQ(stats.flows, c.r.stats.gpu_linked);
  EXPECT_EQ(stats.markers, 0u);
  const Parsed p = Parse(json);
  EXPECT_EQ(p.ph.at("s"), stats.flows);
  EXPECT_EQ(p.flow_start, p.flow_end);  // every flow has both ends, ids unique per pair
  // Every E closes the B open on its thread, with its name and args (as viewers match them).
  EXPECT_GT(p.ph.at("B"), 0u);
  EXPECT_EQ(p.ph.at("B"), p.ph.at("E"));
  EXPECT_EQ(p.mismatched_ends, 0u);
  EXPECT_EQ(p.unclosed, 0u);
  EXPECT_EQ(std::set<uint64_t>(p.flow_start.begin(), p.flow_start.end()).size(), stats.flows);
  // Process names: one per traced process, and thread names for its tracks.
  EXPECT_EQ(json.find("\"name\":\"process_name\"") != std::string::npos, true);
  size_t process_names = 0;
  for (size_t at = json.find("process_name"); at != std::string::npos;
       at = json.find("process_name", at + 1)) {
    ++process_names;
  }
  EXPECT_EQ(process_names, c.trace.processes.size());
  for (const ProcessInfo& info : c.trace.processes) {
    // Ranks by number; a process without one (the serving front end) by its pid.
    const std::string label = info.rank >= 0 ? "rank " + std::to_string(info.rank) + " ("
                                             : "pid " + std::to_string(info.pid);
    EXPECT_NE(json.find("\"args\":{\"name\":\"" + label), std::string::npos) << label;
  }

  Trace back;
  ReadBack(json, "demo", &back);
  EXPECT_EQ(CountByType(back), CountByType(c.trace));
  EXPECT_EQ(Events(back), Events(c.trace));  // names and times to the nanosecond
  // The importer counted the flows it skipped: both ends of each.
  EXPECT_EQ(back.counters.Get("kineto.flow_events"), 2 * stats.flows);
  // The steps are the same step ranges.
  const reconstruct::Reconstruction rb = reconstruct::Reconstruct(back);
  EXPECT_EQ(rb.steps.size(), c.r.steps.size());
}

TEST(ChromeTrace, FindingsAreAnnotationsAndTheOnlyAdditions) {
  const Case& c = Demo();
  ASSERT_GT(c.d.abnormal_steps, 0u);
  report::ChromeTraceStats stats;
  const std::string json = report::ToChromeTrace(c.trace, c.r, &c.d, &stats);
  size_t markers = 0, annotated = 0, flows = 0;
  for (const diagnose::StepDiagnosis& s : c.d.steps) {
    if (!s.abnormal) continue;
    markers += s.rank_steps.size();
    annotated += s.evidence.size() + s.consequences.size();
    for (const diagnose::Evidence& q : s.consequences) {
      for (const diagnose::Evidence& e : s.evidence) flows += e.rank == q.waited_for_rank;
    }
  }
  EXPECT_EQ(stats.markers, markers);
  EXPECT_EQ(stats.annotated, annotated);
  EXPECT_EQ(stats.finding_flows, flows);
  const Parsed p = Parse(json);
  EXPECT_EQ(p.ph_cat.at("i/teller_finding"), markers);
  EXPECT_EQ(p.teller_args, annotated);
  if (flows > 0) {
    EXPECT_EQ(p.ph_cat.at("s/teller_finding"), flows);
    EXPECT_EQ(p.ph_cat.at("f/teller_finding"), flows);
  }
  // Read back: the trace's events, plus the markers as marks; nothing else.
  Trace back;
  ReadBack(json, "findings", &back);
  std::map<EventType, size_t> want = CountByType(c.trace);
  want[EventType::kMark] += markers;
  EXPECT_EQ(CountByType(back), want);
}

TEST(ChromeTrace, RealKinetoTraceRoundTrips) {
  const std::string rel =
      "hta/critical_path__alexnet__benchmark_result_2869224_1695835535_trace.json.gz";
  TELLER_REQUIRE_REAL_DATA(rel);
  Trace t;
  ASSERT_TRUE(ingest::ImportPath(real_data::Path(rel), t).ok());
  const reconstruct::Reconstruction r = reconstruct::Reconstruct(t);
  report::ChromeTraceStats stats;
  const std::string json = report::ToChromeTrace(t, r, nullptr, &stats);
  // The MANIFEST's figures for the file: 98 GPU events, all linked to their launch.
  EXPECT_EQ(stats.flows, 98u);
  Trace back;
  ReadBack(json, "alexnet", &back);
  EXPECT_EQ(CountByType(back), CountByType(t));
  EXPECT_EQ(Events(back), Events(t));
  ASSERT_EQ(back.processes.size(), t.processes.size());
  EXPECT_EQ(back.processes[0].rank, t.processes[0].rank);
}

TEST(DiagnosisJson, ReadsBackAndBindsToItsTrace) {
  const Case& c = Demo();
  const std::string path = TempPath("diagnosis.json");
  ASSERT_TRUE(WriteFileAtomic(path, diagnose::ToJson(c.trace, c.d, {"demo"})).ok());
  auto read = report::ReadDiagnosisJson(path);
  ASSERT_TRUE(read.ok()) << read.status().message();
  diagnose::Diagnosis d = std::move(read.value());
  ASSERT_EQ(d.steps.size(), c.d.steps.size());
  EXPECT_EQ(d.abnormal_steps, c.d.abnormal_steps);
  ASSERT_TRUE(report::BindDiagnosis(c.trace, c.r, &d).ok());
  for (size_t i = 0; i < d.steps.size(); ++i) {
    const diagnose::StepDiagnosis &a = d.steps[i], &b = c.d.steps[i];
    EXPECT_EQ(a.abnormal, b.abnormal);
    EXPECT_EQ(a.number, b.number);
    std::vector<uint32_t> ra = a.rank_steps, rb = b.rank_steps;
    std::sort(ra.begin(), ra.end());
    std::sort(rb.begin(), rb.end());
    EXPECT_EQ(ra, rb) << "step " << b.number;
    ASSERT_EQ(a.evidence.size(), b.evidence.size());
    for (size_t k = 0; k < a.evidence.size(); ++k) {
      EXPECT_EQ(a.evidence[k].node, b.evidence[k].node);
      EXPECT_EQ(a.evidence[k].excess_ns, b.evidence[k].excess_ns);
    }
  }
  // The export from the file read back is the export from memory.
  EXPECT_EQ(report::ToChromeTrace(c.trace, c.r, &d), report::ToChromeTrace(c.trace, c.r, &c.d));
  // Bound to another trace, it says so.
  Trace other;
  reconstruct::Reconstruction none;
  diagnose::Diagnosis copy = d;
  const Status st = report::BindDiagnosis(other, none, &copy);
  if (c.d.evidence > 0) {
    EXPECT_FALSE(st.ok());
    EXPECT_NE(st.message().find("does not match this trace"), std::string::npos) << st.message();
  }
  // Not a diagnosis: a clear error naming the file.
  ASSERT_TRUE(WriteFileAtomic(path, "{\"format\":\"other\",\"version\":2}").ok());
  auto bad = report::ReadDiagnosisJson(path);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find(path), std::string::npos);
  std::remove(path.c_str());
}

// The JSON document inside the page.
simdjson::dom::element PageData(const std::string& html, simdjson::dom::parser& parser,
                                std::string* text) {
  const std::string open = "<script type=\"application/json\" id=\"teller-data\">";
  const size_t a = html.find(open);
  EXPECT_NE(a, std::string::npos);
  const size_t b = html.find("</script>", a);
  *text = html.substr(a + open.size(), b - a - open.size());
  simdjson::dom::element doc;
  EXPECT_EQ(parser.parse(*text).get(doc), simdjson::SUCCESS);
  return doc;
}

TEST(Html, IsSelfContainedAndCarriesTheDiagnosis) {
  const Case& c = Demo();
  report::HtmlOptions o;
  o.sources = {"demo"};
  report::HtmlStats stats;
  const std::string html = report::ToHtml(c.trace, c.r, c.d, o, &stats);
  EXPECT_LT(html.size(), 5u << 20);
  // Nothing is fetched: no external scripts, styles, images or fonts.
  for (const char* s : {"<link", "src=", "@import", "url(", "https://"}) {
    EXPECT_EQ(html.find(s), std::string::npos) << s;
  }
  simdjson::dom::parser parser;
  std::string text;
  const simdjson::dom::element doc = PageData(html, parser, &text);
  EXPECT_EQ(uint64_t(doc["verdict"]["abnormal_steps"]), c.d.abnormal_steps);
  EXPECT_EQ(uint64_t(doc["verdict"]["steps_total"]), c.d.steps.size());
  // The abnormal steps, highest score first, with their evidence.
  std::vector<const diagnose::StepDiagnosis*> ab;
  for (const diagnose::StepDiagnosis& s : c.d.steps) {
    if (s.abnormal) ab.push_back(&s);
  }
  std::stable_sort(ab.begin(), ab.end(), [](auto* a, auto* b) { return a->score > b->score; });
  const simdjson::dom::array steps = doc["steps"];
  ASSERT_EQ(steps.size(), ab.size());
  size_t k = 0, detailed = 0, evidence = 0;
  for (simdjson::dom::element s : steps) {
    EXPECT_EQ(simdjson::dom::array(s["evidence"]).size(), ab[k]->evidence.size());
    EXPECT_EQ(std::string_view(s["fault_type"]), ab[k]->fault_type);
    evidence += ab[k]->evidence.size();
    simdjson::dom::element tl;
    if (s["timeline"].get(tl) == simdjson::SUCCESS) {
      ++detailed;
      // Every root is drawn, as a root, in the timeline.
      size_t roots = 0;
      for (simdjson::dom::element lane : tl["lanes"].get_array()) {
        for (simdjson::dom::element it : lane["items"].get_array()) {
          roots += int64_t(it.at(3)) == 1;
        }
      }
      std::set<uint32_t> nodes;
      for (const diagnose::Evidence& e : ab[k]->evidence) nodes.insert(e.node);
      EXPECT_EQ(roots, nodes.size()) << ab[k]->number;
      // The call path of a root starts at its step and ends at the root itself.
      if (!ab[k]->evidence.empty()) {
        const simdjson::dom::array path = s["evidence"].at(0)["path"];
        ASSERT_GT(path.size(), 0u);
        EXPECT_EQ(std::string_view(path.at(path.size() - 1).at(0)), ab[k]->evidence[0].name);
        EXPECT_EQ(std::string_view(path.at(0).at(1)), "STEP");
      }
    }
    ++k;
  }
  EXPECT_EQ(detailed, std::min(ab.size(), o.detailed_steps));
  EXPECT_EQ(stats.detailed_steps, detailed);
  // The operator table accounts for every piece of evidence of the abnormal steps once.
  size_t counted = 0;
  for (simdjson::dom::element op : doc["operators"].get_array()) counted += uint64_t(op["count"]);
  EXPECT_EQ(counted, evidence);
  // The series: one per rank with steps, every step once (no thinning at this size), the
  // abnormal ones flagged.
  size_t points = 0, flagged = 0;
  for (simdjson::dom::element s : doc["series"].get_array()) {
    for (simdjson::dom::element p : s["points"].get_array()) {
      ++points;
      flagged += int64_t(p.at(2));
    }
  }
  EXPECT_EQ(points, c.r.steps.size());
  size_t rank_steps = 0;
  for (const auto* s : ab) rank_steps += s->rank_steps.size();
  EXPECT_EQ(flagged, rank_steps);
  // The counters are the trace's non-zero ones.
  size_t nonzero = 0;
  for (const CounterEntry& e : c.trace.counters.entries()) nonzero += e.value != 0;
  EXPECT_EQ(simdjson::dom::array(doc["counters"]).size(), nonzero);
}

TEST(Html, SeriesAreThinnedToTheirExtremesKeepingAbnormalSteps) {
  const Case& c = Demo();
  report::HtmlOptions o;
  o.series_points = 10;
  const std::string html = report::ToHtml(c.trace, c.r, c.d, o);
  simdjson::dom::parser parser;
  std::string text;
  const simdjson::dom::element doc = PageData(html, parser, &text);
  std::set<uint32_t> abnormal;
  for (const diagnose::StepDiagnosis& s : c.d.steps) {
    if (s.abnormal) abnormal.insert(s.rank_steps.begin(), s.rank_steps.end());
  }
  // The longest step of each process must be kept.
  std::map<uint32_t, int64_t> longest;
  std::map<uint32_t, size_t> abnormal_per_process;
  for (size_t i = 0; i < c.r.steps.size(); ++i) {
    const uint32_t n = c.r.steps[i].node;
    const uint32_t p = c.r.steps[i].process;
    longest[p] = std::max(longest[p], c.r.nodes.end_ns[n] - c.r.nodes.start_ns[n]);
    abnormal_per_process[p] += abnormal.count(static_cast<uint32_t>(i));
  }
  size_t k = 0;
  std::vector<uint32_t> procs;
  for (const auto& [p, _] : longest) procs.push_back(p);
  std::stable_sort(procs.begin(), procs.end(), [&](uint32_t a, uint32_t b) {
    return c.trace.processes[a].rank < c.trace.processes[b].rank;
  });
  for (simdjson::dom::element s : doc["series"].get_array()) {
    const uint32_t p = procs[k++];
    EXPECT_TRUE(bool(s["thinned"]));
    size_t flagged = 0, n = 0;
    int64_t max_dur = 0;
    for (simdjson::dom::element pt : s["points"].get_array()) {
      ++n;
      flagged += int64_t(pt.at(2));
      max_dur = std::max(max_dur, int64_t(pt.at(1)));
    }
    EXPECT_EQ(flagged, abnormal_per_process[p]);
    EXPECT_LE(n, 5 + abnormal_per_process[p]);
    EXPECT_EQ(max_dur, longest[p]);
  }
}

TEST(Html, ListsTheLogEvidenceWithLineStepAndRequest) {
  // Two steps (1-2 us and 3-4 us); three log lines; the diagnosis, written by hand: step 0
  // abnormal with a request wait and two requests never prefilled, step 1 normal with a rare line,
  // a log period in step 0, a log failure outside every step and a finding that is not from a log.
  Trace t;
  t.processes.push_back({});
  for (int64_t start : {1000, 3000}) {
    EventRow row;
    row.type = EventType::kRange;
    row.name = t.strings.Intern("teller.step kind=decode n=1 reqs=q1");
    row.start_ns = start;
    row.end_ns = start + 1000;
    t.events.Append(row);
  }
  auto log = [&t](int64_t ts, const char* request, LogLevel level, const char* message) {
    t.logs.ts_ns.push_back(ts);
    t.logs.request.push_back(*request ? t.strings.Intern(request) : 0);
    t.logs.level.push_back(level);
    t.logs.process.push_back(LogTable::kNoProcess);
    t.logs.file.push_back(t.strings.Intern("server.log"));
    t.logs.line.push_back(static_cast<uint32_t>(t.logs.ts_ns.size() * 10));
    t.logs.message.push_back(t.strings.Intern(message));
  };
  log(1200, "q1", LogLevel::kInfo, "Received request q1");
  log(3500, "q2", LogLevel::kWarning, "request q2 swapped out");
  log(9000, "", LogLevel::kError, "CUDA error: out of memory");
  const reconstruct::Reconstruction r = reconstruct::Reconstruct(t);
  ASSERT_EQ(r.steps.size(), 2u);
  diagnose::Diagnosis d;
  d.mode = "self";
  d.scope = "steps";
  for (int k = 0; k < 2; ++k) {
    diagnose::StepDiagnosis s;
    s.number = -1;
    s.ordinal = k;
    s.kind = "decode";
    s.start_ns = 1000 + 2000 * k;
    s.end_ns = s.start_ns + 1000;
    s.duration_ns = 1000;
    s.abnormal = k == 0;
    s.score = k == 0 ? 0.9f : 0.1f;
    s.fault_type = k == 0 ? "scheduling_software" : "";
    d.steps.push_back(s);
  }
  d.abnormal_steps = 1;
  diagnose::LogEvidence wait;
  wait.kind = "request_latency";
  wait.request = "q1";
  wait.interval = "queue";
  wait.time_ns = 5'000'000'000;
  wait.expected_ns = 1'000'000'000;
  wait.excess_ns = 4'000'000'000;
  wait.peers = 12;
  wait.z = 8.5;
  wait.row = 0;
  d.steps[0].log_evidence.push_back(wait);
  // Two requests never prefilled: one that a log line names, one the trace alone showed.
  diagnose::LogEvidence route;
  route.kind = "request_route";
  route.request = "q1";
  route.step_kind = "decode";
  route.peers = 5;
  route.row = 0;
  d.steps[0].log_evidence.push_back(route);
  route.request = "q3";
  route.row = diagnose::LogEvidence::kNoRow;
  d.steps[0].log_evidence.push_back(route);
  diagnose::LogEvidence rare;
  rare.kind = "rare_template";
  rare.template_id = 7;
  rare.template_text = "request <*> swapped out";
  rare.template_lines = 1;
  rare.is_new = true;
  rare.row = 1;
  d.steps[1].log_evidence.push_back(rare);
  diagnose::Finding period;
  period.kind = "log_period";
  period.severity = "warning";
  period.title = "1 request(s) waited";
  period.ts_ns = 1500;
  period.source = "server.log";
  period.line = 10;
  period.details = {"q1 waited 5 s"};
  diagnose::Finding oom = period;
  oom.kind = "log_error";
  oom.severity = "error";
  oom.category = FaultCategory::kMemoryResource;
  oom.title = "CUDA out of memory";
  oom.ts_ns = 9000;
  oom.line = 30;
  oom.details = {"first at server.log:30: CUDA error: out of memory"};
  diagnose::Finding signal;
  signal.kind = "signal";
  d.findings = {period, oom, signal};
  ASSERT_TRUE(report::BindDiagnosis(t, r, &d).ok());

  report::HtmlStats stats;
  const std::string html = report::ToHtml(t, r, d, {}, &stats);
  simdjson::dom::parser parser;
  std::string text;
  const simdjson::dom::element doc = PageData(html, parser, &text);
  const simdjson::dom::array ev = doc["log_evidence"];
  ASSERT_EQ(ev.size(), 6u);  // the signal finding is not from a log
  EXPECT_EQ(stats.log_evidence, 6u);
  // Times are on the page's clock: from the first step's start (1000 ns).
  const simdjson::dom::element w = ev.at(0);
  EXPECT_EQ(std::string_view(w["kind"]), "request_latency");
  EXPECT_EQ(std::string_view(w["step_label"]), "step #0");
  EXPECT_EQ(int64_t(w["step"]), 0);  // the first (only) abnormal step of the page
  EXPECT_TRUE(bool(w["detailed"]));
  EXPECT_EQ(std::string_view(w["request"]), "q1");
  EXPECT_EQ(std::string_view(w["interval"]), "queue");
  EXPECT_EQ(int64_t(w["time_ns"]), 5'000'000'000);
  EXPECT_EQ(int64_t(w["expected_ns"]), 1'000'000'000);
  EXPECT_EQ(uint64_t(w["peers"]), 12u);
  EXPECT_EQ(int64_t(w["ts_ns"]), 200);
  EXPECT_EQ(std::string_view(w["level"]), "INFO");
  EXPECT_EQ(std::string_view(w["file"]), "server.log");
  EXPECT_EQ(uint64_t(w["line"]), 10u);
  EXPECT_EQ(std::string_view(w["message"]), "Received request q1");
  // The routes: with the request's line, and without one (no time, no place).
  const simdjson::dom::element ro = ev.at(1);
  EXPECT_EQ(std::string_view(ro["kind"]), "request_route");
  EXPECT_EQ(std::string_view(ro["request"]), "q1");
  EXPECT_EQ(std::string_view(ro["step_kind"]), "decode");
  EXPECT_EQ(uint64_t(ro["peers"]), 5u);
  EXPECT_EQ(int64_t(ro["ts_ns"]), 200);
  EXPECT_EQ(std::string_view(ro["message"]), "Received request q1");
  const simdjson::dom::element alone = ev.at(2);
  EXPECT_EQ(std::string_view(alone["request"]), "q3");
  EXPECT_EQ(std::string_view(alone["step_label"]), "step #0");
  EXPECT_TRUE(alone["ts_ns"].is_null());
  EXPECT_EQ(std::string_view(alone["file"]), "");
  EXPECT_EQ(std::string_view(alone["message"]), "");
  // The rare line of a normal step: no section to link to; the request is the line's.
  const simdjson::dom::element rr = ev.at(3);
  EXPECT_EQ(std::string_view(rr["kind"]), "rare_template");
  EXPECT_EQ(std::string_view(rr["step_label"]), "step #1");
  EXPECT_EQ(int64_t(rr["step"]), -1);
  EXPECT_FALSE(bool(rr["detailed"]));
  EXPECT_EQ(std::string_view(rr["request"]), "q2");
  EXPECT_EQ(uint64_t(rr["template_id"]), 7u);
  EXPECT_EQ(std::string_view(rr["template"]), "request <*> swapped out");
  EXPECT_TRUE(bool(rr["new"]));
  EXPECT_EQ(int64_t(rr["ts_ns"]), 2500);
  EXPECT_EQ(std::string_view(rr["level"]), "WARNING");
  EXPECT_EQ(uint64_t(rr["line"]), 20u);
  // Findings: the period falls in step 0 (1000 <= 1500 < 2000), the failure in none.
  const simdjson::dom::element p = ev.at(4);
  EXPECT_EQ(std::string_view(p["kind"]), "log_period");
  EXPECT_EQ(int64_t(p["step"]), 0);
  EXPECT_EQ(int64_t(p["ts_ns"]), 500);
  EXPECT_EQ(std::string_view(p["message"]), "q1 waited 5 s");
  const simdjson::dom::element o = ev.at(5);
  EXPECT_EQ(std::string_view(o["kind"]), "log_error");
  EXPECT_EQ(int64_t(o["step"]), -1);
  EXPECT_EQ(std::string_view(o["step_label"]), "");
  EXPECT_EQ(std::string_view(o["category"]), "memory_resource");
  EXPECT_EQ(std::string_view(o["title"]), "CUDA out of memory");
  EXPECT_EQ(int64_t(o["ts_ns"]), 8000);
  EXPECT_EQ(uint64_t(o["line"]), 30u);
  // The script draws the section.
  EXPECT_NE(html.find("log-evidence-table"), std::string::npos);
}

TEST(Html, LogEvidenceOfALogWithoutStepsCountsFromItsFirstLine) {
  Trace t;
  for (int64_t ts : {LogTable::kNoTime, int64_t{7'000'000'000}, int64_t{5'000'000'000}}) {
    t.logs.ts_ns.push_back(ts);
    t.logs.request.push_back(0);
    t.logs.level.push_back(LogLevel::kInfo);
    t.logs.process.push_back(LogTable::kNoProcess);
    t.logs.file.push_back(t.strings.Intern("serve.log"));
    t.logs.line.push_back(static_cast<uint32_t>(t.logs.ts_ns.size()));
    t.logs.message.push_back(t.strings.Intern("line"));
  }
  const reconstruct::Reconstruction r = reconstruct::Reconstruct(t);
  diagnose::Diagnosis d;
  d.mode = "logs";
  diagnose::Finding f;
  f.kind = "log_period";
  f.severity = "warning";
  f.title = "3 lines of 1 rare template(s)";
  f.ts_ns = 7'500'000'000;
  f.source = "serve.log";
  f.line = 2;
  d.findings.push_back(f);
  const std::string html = report::ToHtml(t, r, d, {});
  simdjson::dom::parser parser;
  std::string text;
  const simdjson::dom::element doc = PageData(html, parser, &text);
  const simdjson::dom::array ev = doc["log_evidence"];
  ASSERT_EQ(ev.size(), 1u);
  // From the earliest timed line (5 s; the untimed first line does not count).
  EXPECT_EQ(int64_t(ev.at(0)["ts_ns"]), 2'500'000'000);
  EXPECT_EQ(int64_t(ev.at(0)["step"]), -1);
  EXPECT_EQ(std::string_view(ev.at(0)["file"]), "serve.log");
}

TEST(Html, ScriptEndsOnlyWhereThePageEndsIt) {
  // A name with "</script>" in it must not close the data element.
  Trace t;
  t.processes.push_back({});
  EventRow row;
  row.type = EventType::kRange;
  row.name = t.strings.Intern("teller.step kind=decode n=1 reqs=a</script><b>x");
  row.start_ns = 0;
  row.end_ns = 1000;
  t.events.Append(row);
  const reconstruct::Reconstruction r = reconstruct::Reconstruct(t);
  diagnose::Diagnosis d;
  d.mode = "self";
  d.scope = "steps";
  d.findings.push_back({});
  d.findings.back().title = "</script><script>alert(1)</script>";
  const std::string html = report::ToHtml(t, r, d, {});
  EXPECT_EQ(html.find("</script><script>alert"), std::string::npos);
  simdjson::dom::parser parser;
  std::string text;
  const simdjson::dom::element doc = PageData(html, parser, &text);
  EXPECT_EQ(std::string_view(doc["findings"].at(0)["title"]), "</script><script>alert(1)</script>");
}

}  // namespace
}  // namespace teller
