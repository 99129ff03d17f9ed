// The self-contained HTML report (docs/report.md). The page is a fixed shell (report.css,
// report.js, embedded at build time) and one JSON document of the diagnosis's data, which
// the script draws as SVG and tables. The data comes from the Diagnosis (what the text
// and JSON reports print) and, for what a picture needs beyond it (step times of every
// rank, the slices of an abnormal step, call paths, collective arrivals, durations of a
// root's instances), from the reconstruction it was made of. Caps keep a paper-scale
// trace's report small: timelines for the highest-scoring steps only, the longest slices
// of each, series thinned to their extremes, tables and samples bounded.
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "report_assets.h"
#include "src/report/report_util.h"
#include "teller/core/json_writer.h"
#include "teller/diagnose/failures.h"
#include "teller/report/report.h"

namespace teller::report {
namespace {

// Roles of a timeline slice; report.js colours them.
enum Role : int { kOther = 0, kRoot = 1, kConsequence = 2, kOnPath = 3 };

int64_t Median(std::vector<int64_t> v) {
  if (v.empty()) return 0;
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  return v[mid];
}

class HtmlWriter {
 public:
  HtmlWriter(const Trace& trace, const reconstruct::Reconstruction& r, const diagnose::Diagnosis& d,
             const HtmlOptions& o, HtmlStats* stats)
      : trace_(trace), r_(r), d_(d), o_(o), stats_(*stats) {}

  std::string Write() {
    t0_ = 0;
    bool any = false;
    for (size_t i = 0; i < r_.steps.size(); ++i) {
      const int64_t s = r_.nodes.start_ns[r_.steps[i].node];
      if (!any || s < t0_) t0_ = s;
      any = true;
    }
    for (size_t i = 0; i < d_.steps.size(); ++i) {
      if (!d_.steps[i].abnormal) continue;
      abnormal_.push_back(i);
      for (const uint32_t rs : d_.steps[i].rank_steps) abnormal_rank_steps_.insert(rs);
    }
    // Highest score first, as the text report lists them.
    std::stable_sort(abnormal_.begin(), abnormal_.end(),
                     [&](size_t a, size_t b) { return d_.steps[a].score > d_.steps[b].score; });
    std::string data;
    data.reserve(1 << 20);
    JsonObjectWriter top(data, JsonDoubles::kDigits6);
    top.Key("meta");
    WriteMeta(data);
    top.Key("verdict");
    WriteVerdict(data);
    top.Key("findings");
    diagnose::AppendFindingsJson(data, d_.findings);
    top.Key("log_evidence");
    WriteLogEvidence(data);
    top.Key("series");
    WriteSeries(data);
    top.Key("steps");
    WriteSteps(data);
    top.Key("operators");
    WriteOperators(data);
    top.Key("top_operators");
    WriteTopOperators(data);
    top.Key("distributions");
    WriteDistributions(data);
    top.Key("counters");
    WriteCounters(data);
    top.Key("names");
    {
      JsonArrayWriter a(data);
      for (const std::string& n : names_) a.Element(n);
      a.Close();
    }
    top.Close();
    return Page(data);
  }

 private:
  uint32_t NameId(std::string_view name) {
    auto it = name_ids_.find(std::string(name));
    if (it != name_ids_.end()) return it->second;
    const uint32_t id = static_cast<uint32_t>(names_.size());
    names_.emplace_back(name);
    name_ids_.emplace(names_.back(), id);
    return id;
  }

  std::string_view NodeName(uint32_t node) const {
    return trace_.strings.Get(trace_.events.name[r_.nodes.event[node]]);
  }
  int RankOf(uint32_t process) const {
    return process < trace_.processes.size() ? trace_.processes[process].rank : -1;
  }

  void WriteMeta(std::string& out) {
    JsonObjectWriter m(out);
    m.Field("mode", d_.mode).Field("scope", d_.scope);
    m.Key("sources");
    JsonArrayWriter s(out);
    for (const std::string& src : o_.sources) s.Element(src);
    s.Close();
    m.Field("processes", static_cast<uint64_t>(trace_.processes.size()));
    m.Field("events", static_cast<uint64_t>(trace_.events.size()));
    m.Field("log_lines", static_cast<uint64_t>(trace_.logs.size()));
    m.Close();
  }

  void WriteVerdict(std::string& out) {
    JsonObjectWriter v(out, JsonDoubles::kDigits6);
    v.Field("steps_total", static_cast<uint64_t>(d_.steps.size()));
    v.Field("abnormal_steps", static_cast<uint64_t>(d_.abnormal_steps));
    v.Field("evidence", static_cast<uint64_t>(d_.evidence));
    std::map<std::string, size_t> categories;
    int64_t excess = 0, duration = 0;
    for (const size_t i : abnormal_) {
      ++categories[d_.steps[i].fault_type];
      excess += d_.steps[i].excess_ns;
      duration += d_.steps[i].duration_ns;
    }
    v.Field("excess_ns", excess).Field("abnormal_duration_ns", duration);
    v.Key("categories");
    {
      std::vector<std::pair<std::string, size_t>> c(categories.begin(), categories.end());
      std::stable_sort(c.begin(), c.end(),
                       [](const auto& a, const auto& b) { return a.second > b.second; });
      JsonArrayWriter a(out);
      for (const auto& [name, count] : c) {
        a.Next();
        JsonObjectWriter(out)
            .Field("category", name)
            .Field("steps", static_cast<uint64_t>(count))
            .Close();
      }
      a.Close();
    }
    v.Key("stragglers");
    {
      JsonArrayWriter a(out);
      for (size_t i = 0; i < d_.stragglers.size() && i < 20; ++i) {
        const diagnose::StragglerReport& s = d_.stragglers[i];
        a.Next();
        JsonObjectWriter(out)
            .Field("rank", s.rank)
            .Field("step", s.step)
            .Field("late_ns", s.late_ns)
            .Field("collective", s.collective)
            .Field("waiting", static_cast<uint64_t>(s.waiting))
            .Close();
      }
      a.Close();
    }
    v.Field("stragglers_total", static_cast<uint64_t>(d_.stragglers.size()));
    // The roots: the top operators, most suspicious first (as the text report ranks them).
    v.Key("roots");
    {
      JsonArrayWriter a(out);
      for (size_t i = 0; i < d_.top_operators.size() && i < 5; ++i) {
        const diagnose::TopOperator& t = d_.top_operators[i];
        a.Next();
        JsonObjectWriter w(out, JsonDoubles::kDigits6);
        w.Field("name", t.name).Field("family", t.family).Field("within", t.within);
        w.Field("layer", LayerName(t.layer)).Field("measure", localize::MeasureName(t.measure));
        w.Field("bytes", t.bytes);  // copies: their size (0 for other operators)
        w.Field("suspicion", t.suspicion).Field("excess_ns", t.excess_ns);
        w.Field("count", static_cast<uint64_t>(t.count));
        w.Field("instances", static_cast<uint64_t>(t.instances));
        w.Field("max_ratio", t.max_ratio);
        w.Key("ranks");
        JsonArrayWriter(out).Integers(t.ranks).Close();
        w.Close();
      }
      a.Close();
    }
    v.Key("damage");
    {
      JsonArrayWriter a(out);
      for (const auto& [name, value] : d_.damage) {
        a.Next();
        JsonObjectWriter(out).Field("name", name).Field("value", value).Close();
      }
      a.Close();
    }
    v.Close();
  }

  // Per process: its steps in order, (start, duration, abnormal); thinned to the longest
  // step of each bucket (and every abnormal one) when there are more than series_points.
  void WriteSeries(std::string& out) {
    std::vector<std::vector<uint32_t>> per(trace_.processes.size());
    for (size_t i = 0; i < r_.steps.size(); ++i) {
      if (r_.steps[i].process < per.size())
        per[r_.steps[i].process].push_back(static_cast<uint32_t>(i));
    }
    std::vector<uint32_t> order;
    for (uint32_t p = 0; p < per.size(); ++p) {
      if (!per[p].empty()) order.push_back(p);
    }
    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
      const int ra = RankOf(a), rb = RankOf(b);
      return (ra < 0 ? 1 << 30 : ra) < (rb < 0 ? 1 << 30 : rb);
    });
    JsonArrayWriter a(out);
    for (const uint32_t p : order) {
      std::vector<uint32_t>& steps = per[p];
      std::stable_sort(steps.begin(), steps.end(), [&](uint32_t x, uint32_t y) {
        return r_.nodes.start_ns[r_.steps[x].node] < r_.nodes.start_ns[r_.steps[y].node];
      });
      // Many ranks share a budget of 30,000 points, so that a page of 64 ranks stays small.
      const size_t cap = std::max<size_t>(
          std::min(o_.series_points, std::max<size_t>(100, 30000 / order.size())), 2);
      std::vector<uint32_t> keep;
      if (steps.size() <= cap) {
        keep = steps;
      } else {
        const size_t buckets = cap / 2;
        for (size_t b = 0; b < buckets; ++b) {
          const size_t lo = b * steps.size() / buckets, hi = (b + 1) * steps.size() / buckets;
          // Every abnormal step is kept, also one that was the bucket's longest so far and
          // then gave way to a longer one; duplicates go below.
          uint32_t best = steps[lo];
          for (size_t k = lo; k < hi; ++k) {
            const uint32_t s = steps[k];
            if (abnormal_rank_steps_.count(s) > 0) keep.push_back(s);
            if (Duration(s) > Duration(best)) best = s;
          }
          keep.push_back(best);
        }
        std::sort(keep.begin(), keep.end(), [&](uint32_t x, uint32_t y) {
          return r_.nodes.start_ns[r_.steps[x].node] < r_.nodes.start_ns[r_.steps[y].node];
        });
        keep.erase(std::unique(keep.begin(), keep.end()), keep.end());
      }
      a.Next();
      JsonObjectWriter s(out);
      s.Field("label", ProcessLabel(trace_, p)).Field("rank", RankOf(p));
      s.Field("steps", static_cast<uint64_t>(steps.size()));
      s.FieldBool("thinned", keep.size() < steps.size());
      s.Key("points");
      JsonArrayWriter pts(out);
      for (const uint32_t k : keep) {
        const reconstruct::Step& st = r_.steps[k];
        pts.Next();
        JsonArrayWriter(out)
            .Element(r_.nodes.start_ns[st.node] - t0_)
            .Element(Duration(k))
            .Element(abnormal_rank_steps_.count(k) > 0 ? 1 : 0)
            .Element(st.number >= 0 ? st.number : static_cast<int64_t>(st.ordinal))
            .Close();
      }
      pts.Close();
      s.Close();
      ++stats_.ranks;
      stats_.series_points += keep.size();
    }
    a.Close();
  }

  int64_t Duration(uint32_t rank_step) const {
    const uint32_t n = r_.steps[rank_step].node;
    return r_.nodes.end_ns[n] - r_.nodes.start_ns[n];
  }

  // `max` entries at most; call paths only when `paths` (the steps with a timeline).
  void WriteEvidenceList(std::string& out, const std::vector<diagnose::Evidence>& list, bool paths,
                         size_t max) {
    JsonArrayWriter a(out);
    for (size_t i = 0; i < list.size() && i < max; ++i) {
      const diagnose::Evidence& e = list[i];
      a.Next();
      JsonObjectWriter w(out, JsonDoubles::kDigits6);
      w.Field("name", e.name).Field("family", e.family).Field("within", e.within);
      w.Field("layer", LayerName(e.layer)).Field("rank", e.rank);
      w.Field("measure", localize::MeasureName(e.measure));
      w.Field("time_ns", e.time_ns).Field("expected_ns", e.expected_ns);
      w.Field("excess_ns", e.excess_ns).Field("ratio", e.ratio);
      w.Field("peers", static_cast<uint64_t>(e.peers));
      w.Field("source", localize::PeerSourceName(e.source));
      if (e.consequence) w.Field("waited_for_rank", e.waited_for_rank);
      // The call path, outermost first: engine step -> operators -> runtime call -> GPU work.
      w.Key("path");
      JsonArrayWriter p(out);
      if (paths && e.node < r_.nodes.size()) {
        std::vector<uint32_t> chain;
        for (int32_t n = static_cast<int32_t>(e.node); n >= 0 && chain.size() < 64;
             n = r_.nodes.parent[static_cast<size_t>(n)]) {
          chain.push_back(static_cast<uint32_t>(n));
        }
        for (size_t k = chain.size(); k-- > 0;) {
          p.Next();
          JsonArrayWriter(out)
              .Element(NodeName(chain[k]))
              .Element(LayerName(r_.nodes.layer[chain[k]]))
              .Element(r_.nodes.end_ns[chain[k]] - r_.nodes.start_ns[chain[k]])
              .Close();
        }
      }
      p.Close();
      w.Close();
    }
    a.Close();
  }

  // Every slice of the step's trees on each of its ranks, by lane (host thread, GPU
  // stream); at most timeline_items, the evidence, consequences and their call paths
  // always kept and then the longest slices.
  void WriteTimeline(std::string& out, const diagnose::StepDiagnosis& s) {
    const reconstruct::Nodes& n = r_.nodes;
    const EventTable& ev = trace_.events;
    std::unordered_map<uint32_t, int> role;
    for (const diagnose::Evidence& e : s.evidence) role[e.node] = kRoot;
    for (const diagnose::Evidence& e : s.consequences) role[e.node] = kConsequence;
    for (const auto& [node, r] : std::vector<std::pair<uint32_t, int>>(role.begin(), role.end())) {
      if (node >= n.size()) continue;
      for (int32_t p = n.parent[node]; p >= 0; p = n.parent[static_cast<size_t>(p)]) {
        role.emplace(static_cast<uint32_t>(p), kOnPath);
      }
    }
    std::vector<uint32_t> nodes;
    int64_t t0 = s.start_ns, t1 = s.end_ns;
    for (const uint32_t rs : s.rank_steps) {
      std::vector<uint32_t> stack = {r_.steps[rs].node};
      while (!stack.empty()) {
        const uint32_t x = stack.back();
        stack.pop_back();
        if (n.layer[x] != Layer::kMark) nodes.push_back(x);
        t0 = std::min(t0, n.start_ns[x]);
        t1 = std::max(t1, n.end_ns[x]);
        for (uint32_t c = n.child_begin[x]; c < n.child_begin[x + 1]; ++c) {
          stack.push_back(n.child_index[c]);
        }
      }
    }
    const size_t total = nodes.size();
    if (nodes.size() > o_.timeline_items) {
      std::stable_sort(nodes.begin(), nodes.end(), [&](uint32_t a, uint32_t b) {
        const bool ka = role.count(a) > 0, kb = role.count(b) > 0;
        if (ka != kb) return ka;
        return n.end_ns[a] - n.start_ns[a] > n.end_ns[b] - n.start_ns[b];
      });
      size_t keep = o_.timeline_items;
      while (keep < nodes.size() && role.count(nodes[keep]) > 0) ++keep;
      nodes.resize(keep);
    }
    // Lanes: (process, GPU?, thread or device/stream).
    struct LaneKey {
      int rank;
      uint32_t process;
      bool gpu;
      uint32_t a, b;
      bool operator<(const LaneKey& o) const {
        return std::tie(rank, process, gpu, a, b) < std::tie(o.rank, o.process, o.gpu, o.a, o.b);
      }
    };
    std::map<LaneKey, std::vector<uint32_t>> lanes;
    for (const uint32_t x : nodes) {
      const size_t e = n.event[x];
      const bool gpu =
          n.layer[x] == Layer::kGpu ||
          (n.layer[x] == Layer::kComm && (IsGpuWork(ev.type[e]) || ev.type[e] == EventType::kSync));
      const int rank = RankOf(n.process[x]);
      LaneKey k{rank < 0 ? 1 << 30 : rank, n.process[x], gpu, gpu ? ev.device[e] : ev.thread[e],
                gpu ? ev.stream[e] : 0};
      lanes[k].push_back(x);
    }
    JsonObjectWriter t(out);
    t.Field("t0", t0 - t0_).Field("t1", t1 - t0_);
    t.Field("items_total", static_cast<uint64_t>(total));
    t.Field("items_shown", static_cast<uint64_t>(nodes.size()));
    t.Key("lanes");
    JsonArrayWriter la(out);
    for (auto& [key, items] : lanes) {
      std::sort(items.begin(), items.end(),
                [&](uint32_t a, uint32_t b) { return n.start_ns[a] < n.start_ns[b]; });
      uint16_t base_depth = 0xffff;
      for (const uint32_t x : items) base_depth = std::min(base_depth, n.depth[x]);
      la.Next();
      JsonObjectWriter l(out);
      std::string label = ProcessLabel(trace_, key.process);
      label += key.gpu ? " · " + StreamLabel(key.a, key.b) : " · thread " + std::to_string(key.a);
      l.Field("label", label).FieldBool("gpu", key.gpu);
      l.Key("items");
      JsonArrayWriter it(out);
      for (const uint32_t x : items) {
        const auto rl = role.find(x);
        it.Next();
        JsonArrayWriter(out)
            .Element(n.start_ns[x] - t0_)
            .Element(n.end_ns[x] - n.start_ns[x])
            .Element(NameId(NodeName(x)))
            .Element(rl == role.end() ? 0 : rl->second)
            .Element(key.gpu ? 0 : static_cast<int>(n.depth[x] - base_depth))
            .Element(LayerName(n.layer[x]))
            .Close();
        ++stats_.timeline_items;
      }
      it.Close();
      l.Close();
    }
    la.Close();
    t.Close();
  }

  // The collectives of the step's communication evidence and consequences: each rank's
  // kernel start (arrival) and end.
  void WriteCollectives(std::string& out, const diagnose::StepDiagnosis& s) {
    std::vector<int32_t> groups;
    for (const std::vector<diagnose::Evidence>* list : {&s.consequences, &s.evidence}) {
      for (const diagnose::Evidence& e : *list) {
        if (e.node >= r_.collectives.group_of.size()) continue;
        const int32_t g = r_.collectives.group_of[e.node];
        if (g >= 0 && std::find(groups.begin(), groups.end(), g) == groups.end())
          groups.push_back(g);
      }
    }
    JsonArrayWriter a(out);
    for (size_t i = 0; i < groups.size() && i < 6; ++i) {
      const std::vector<uint32_t>& members = r_.collectives.groups[static_cast<size_t>(groups[i])];
      if (members.empty()) continue;
      a.Next();
      JsonObjectWriter c(out);
      c.Field("name", NodeName(members.front()));
      c.Key("members");
      JsonArrayWriter m(out);
      for (const uint32_t x : members) {
        m.Next();
        JsonArrayWriter(out)
            .Element(RankOf(r_.nodes.process[x]))
            .Element(r_.nodes.start_ns[x] - t0_)
            .Element(r_.nodes.end_ns[x] - t0_)
            .Close();
      }
      m.Close();
      c.Close();
      ++stats_.collectives;
    }
    a.Close();
  }

  // The diagnosis's log evidence (docs/report.md, "Log evidence"): every step's
  // request_latency, request_route and rare_template entries, then the findings made of log lines
  // (log_period, log_error), each with its line (time on the page's clock, level, file,
  // line, message), its request and its step. `step` is the step's index in the page's
  // steps (-1 when it is not listed there, or a finding falls in no step); `detailed`
  // says that step has its own section to link to.
  void WriteLogEvidence(std::string& out) {
    std::unordered_map<size_t, size_t> listed;  // index in d_.steps -> index in the page
    for (size_t k = 0; k < abnormal_.size() && k < o_.table_rows; ++k) listed[abnormal_[k]] = k;
    const LogTable& logs = trace_.logs;
    JsonArrayWriter a(out);
    size_t n = 0;
    auto step_fields = [&](JsonObjectWriter& w, int64_t i) {
      const auto it = i < 0 ? listed.end() : listed.find(static_cast<size_t>(i));
      w.Field("step_label", i < 0 ? std::string() : StepLabel(d_.steps[static_cast<size_t>(i)]));
      w.Field("step", it == listed.end() ? int64_t{-1} : static_cast<int64_t>(it->second));
      w.FieldBool("detailed", it != listed.end() && it->second < o_.detailed_steps);
    };
    // The page's clock starts at the first step; a log without steps starts at its first
    // timed line instead, so that times read as offsets there too.
    int64_t base = t0_;
    if (r_.steps.empty()) {
      bool any = false;
      for (const int64_t ts : logs.ts_ns) {
        if (ts == LogTable::kNoTime || (any && ts >= base)) continue;
        base = ts;
        any = true;
      }
    }
    auto time_field = [&](JsonObjectWriter& w, int64_t ts) {
      if (ts == LogTable::kNoTime) {
        w.FieldNull("ts_ns");
      } else {
        w.Field("ts_ns", ts - base);
      }
    };
    for (size_t i = 0; i < d_.steps.size() && n < o_.table_rows; ++i) {
      const diagnose::StepDiagnosis& s = d_.steps[i];
      for (const diagnose::LogEvidence& e : s.log_evidence) {
        if (n >= o_.table_rows) break;
        // Only a request_route has no line: the trace alone said the request was not prefilled.
        const bool has_line = e.row < logs.size();
        if (!has_line && e.kind != "request_route") continue;
        ++n;
        a.Next();
        JsonObjectWriter w(out, JsonDoubles::kDigits6);
        w.Field("kind", e.kind);
        step_fields(w, static_cast<int64_t>(i));
        const bool latency = e.kind == "request_latency";
        const bool route = e.kind == "request_route";
        w.Field("request", latency || route ? std::string_view(e.request)
                                            : trace_.strings.Get(logs.request[e.row]));
        if (!has_line) {
          w.Field("step_kind", e.step_kind).Field("peers", static_cast<uint64_t>(e.peers));
          w.FieldNull("ts_ns").Field("level", "").Field("file", "").Field("line", uint64_t{0});
          w.Field("message", "");
          w.Close();
          continue;
        }
        if (latency) {
          w.Field("interval", e.interval).Field("time_ns", e.time_ns);
          w.Field("expected_ns", e.expected_ns).Field("excess_ns", e.excess_ns);
          w.Field("peers", static_cast<uint64_t>(e.peers)).Field("z", e.z);
        } else if (route) {
          w.Field("step_kind", e.step_kind).Field("peers", static_cast<uint64_t>(e.peers));
        } else {
          w.Field("template_id", static_cast<uint64_t>(e.template_id));
          w.Field("template", e.template_text);
          w.Field("template_lines", e.template_lines).FieldBool("new", e.is_new);
        }
        time_field(w, logs.ts_ns[e.row]);
        w.Field("level", LogLevelName(logs.level[e.row]));
        w.Field("file", trace_.strings.Get(logs.file[e.row]));
        w.Field("line", static_cast<uint64_t>(logs.line[e.row]));
        w.Field("message", trace_.strings.Get(logs.message[e.row]));
        w.Close();
      }
    }
    for (const diagnose::Finding& f : d_.findings) {
      if (f.kind != "log_period" && f.kind != "log_error") continue;
      if (n >= o_.table_rows) break;
      ++n;
      // The step the line's time falls in (first in diagnosis order), if any.
      int64_t step = -1;
      for (size_t i = 0; f.ts_ns != LogTable::kNoTime && i < d_.steps.size(); ++i) {
        if (d_.steps[i].start_ns <= f.ts_ns && f.ts_ns < d_.steps[i].end_ns) {
          step = static_cast<int64_t>(i);
          break;
        }
      }
      a.Next();
      JsonObjectWriter w(out);
      w.Field("kind", f.kind);
      step_fields(w, step);
      w.Field("request", "");
      w.Field("title", f.title).Field("severity", f.severity);
      w.Field("category", FaultCategoryName(f.category));
      time_field(w, f.ts_ns);
      w.Field("level", "");
      w.Field("file", f.source).Field("line", static_cast<uint64_t>(f.line));
      w.Field("message", f.details.empty() ? std::string() : f.details.front());
      w.Close();
    }
    a.Close();
    stats_.log_evidence = n;
  }

  void WriteSteps(std::string& out) {
    JsonArrayWriter a(out);
    for (size_t k = 0; k < abnormal_.size() && k < o_.table_rows; ++k) {
      const diagnose::StepDiagnosis& s = d_.steps[abnormal_[k]];
      a.Next();
      JsonObjectWriter w(out, JsonDoubles::kDigits6);
      w.Field("label", StepLabel(s)).Field("kind", s.kind);
      w.Field("score", static_cast<double>(s.score)).Field("fault_type", s.fault_type);
      w.FieldBool("vertical", s.vertical).FieldBool("horizontal", s.horizontal);
      w.Field("start_ns", s.start_ns - t0_).Field("duration_ns", s.duration_ns);
      w.Field("excess_ns", s.excess_ns).Field("spread_ns", s.spread_ns);
      w.Field("explanation", s.explanation);
      w.Key("ranks");
      {
        JsonArrayWriter ra(out);
        for (const diagnose::RankRef& ref : s.ranks) ra.Element(ref.rank);
        ra.Close();
      }
      w.Key("requests");
      {
        JsonArrayWriter q(out);
        for (const std::string& req : s.requests) q.Element(req);
        q.Close();
      }
      const bool detailed = k < o_.detailed_steps;
      w.Key("evidence");
      WriteEvidenceList(out, s.evidence, detailed, s.evidence.size());
      // Consequences can be one per rank and collective: the steps without a timeline
      // list the first eight, in the diagnosis's order.
      w.Key("consequences");
      WriteEvidenceList(out, s.consequences, detailed, detailed ? s.consequences.size() : 8);
      w.Field("consequences_total", static_cast<uint64_t>(s.consequences.size()));
      if (detailed) {
        w.Key("timeline");
        WriteTimeline(out, s);
        w.Key("collectives");
        WriteCollectives(out, s);
        ++stats_.detailed_steps;
      }
      w.Key("logs");
      JsonArrayWriter l(out);
      for (size_t i = 0; i < s.logs.size() && i < 20; ++i) {
        const uint32_t row = s.logs[i];
        l.Next();
        JsonObjectWriter lo(out);
        if (trace_.logs.ts_ns[row] == LogTable::kNoTime)
          lo.FieldNull("ts_ns");
        else
          lo.Field("ts_ns", trace_.logs.ts_ns[row] - t0_);
        lo.Field("level", LogLevelName(trace_.logs.level[row]));
        lo.Field("file", trace_.strings.Get(trace_.logs.file[row]));
        lo.Field("line", static_cast<uint64_t>(trace_.logs.line[row]));
        lo.Field("message", trace_.strings.Get(trace_.logs.message[row]));
        lo.Close();
        ++stats_.log_lines;
      }
      l.Close();
      w.Field("logs_total", static_cast<uint64_t>(s.logs.size()));
      w.Close();
    }
    a.Close();
  }

  // The evidence of every abnormal step grouped by operator family and measure: how many
  // instances, their time against their peers' (count, total, median, expected, excess,
  // ratio), with the ranking's suspicion where the family is a top operator.
  void WriteOperators(std::string& out) {
    struct Group {
      std::string family, name, layer, measure, within;
      std::vector<int64_t> times, expected;
      int64_t total = 0, expected_total = 0, excess = 0;
      double max_ratio = 0;
      std::set<int> ranks;
    };
    std::map<std::string, Group> groups;
    for (const size_t i : abnormal_) {
      for (const diagnose::Evidence& e : d_.steps[i].evidence) {
        const std::string key = e.family + '\x1f' + std::string(LayerName(e.layer)) + '\x1f' +
                                localize::MeasureName(e.measure) + '\x1f' + e.within;
        Group& g = groups[key];
        if (g.times.empty()) {
          g.family = e.family.empty() ? e.name : e.family;
          g.name = e.name;
          g.layer = LayerName(e.layer);
          g.measure = localize::MeasureName(e.measure);
          g.within = e.within;
        }
        g.times.push_back(e.time_ns);
        g.expected.push_back(e.expected_ns);
        g.total += e.time_ns;
        g.expected_total += e.expected_ns;
        g.excess += e.excess_ns;
        g.max_ratio = std::max(g.max_ratio, e.ratio);
        if (e.rank >= 0) g.ranks.insert(e.rank);
      }
    }
    std::vector<const Group*> rows;
    for (const auto& [key, g] : groups) rows.push_back(&g);
    std::stable_sort(rows.begin(), rows.end(),
                     [](const Group* a, const Group* b) { return a->excess > b->excess; });
    JsonArrayWriter a(out);
    for (size_t i = 0; i < rows.size() && i < o_.table_rows; ++i) {
      const Group& g = *rows[i];
      a.Next();
      JsonObjectWriter w(out, JsonDoubles::kDigits6);
      w.Field("family", g.family).Field("name", g.name).Field("layer", g.layer);
      w.Field("measure", g.measure).Field("within", g.within);
      w.Field("count", static_cast<uint64_t>(g.times.size()));
      w.Field("total_ns", g.total).Field("median_ns", Median(g.times));
      w.Field("expected_ns", Median(g.expected)).Field("excess_ns", g.excess);
      w.Field("ratio",
              g.expected_total > 0 ? static_cast<double>(g.total) / g.expected_total : 0.0);
      w.Field("max_ratio", g.max_ratio);
      const diagnose::TopOperator* top = nullptr;
      for (const diagnose::TopOperator& t : d_.top_operators) {
        if (t.family == g.family && LayerName(t.layer) == g.layer &&
            localize::MeasureName(t.measure) == g.measure && t.within == g.within) {
          top = &t;
          break;
        }
      }
      if (top != nullptr) {
        w.Field("suspicion", top->suspicion)
            .Field("instances", static_cast<uint64_t>(top->instances));
      } else {
        w.FieldNull("suspicion").FieldNull("instances");
      }
      w.Key("ranks");
      JsonArrayWriter r(out);
      for (const int x : g.ranks) r.Element(x);
      r.Close();
      w.Close();
      ++stats_.operator_rows;
    }
    a.Close();
  }

  // The whole trace's ranking, as the text report's "top operators" (evidence of normal
  // steps included: a fault too small to make a step abnormal still ranks here).
  void WriteTopOperators(std::string& out) {
    JsonArrayWriter a(out);
    for (const diagnose::TopOperator& t : d_.top_operators) {
      a.Next();
      JsonObjectWriter w(out, JsonDoubles::kDigits6);
      w.Field("name", t.name).Field("family", t.family).Field("within", t.within);
      w.Field("layer", LayerName(t.layer)).Field("measure", localize::MeasureName(t.measure));
      w.Field("bytes", t.bytes);  // copies: their size (0 for other operators)
      w.Field("suspicion", t.suspicion).Field("score", static_cast<double>(t.score));
      w.Field("excess_ns", t.excess_ns).Field("straggling_ns", t.straggling_ns);
      w.Field("count", static_cast<uint64_t>(t.count));
      w.Field("instances", static_cast<uint64_t>(t.instances));
      w.Field("median_ns", t.median_ns).Field("max_ratio", t.max_ratio);
      w.Key("ranks");
      JsonArrayWriter(out).Integers(t.ranks).Close();
      w.Close();
    }
    a.Close();
  }

  // For the top roots: durations (start to end) of the instances with the root's exact
  // name and layer, its evidence instances apart from the rest (its peers), the peers
  // sampled evenly to at most 4000.
  void WriteDistributions(std::string& out) {
    std::unordered_set<uint32_t> evidence;
    for (const size_t i : abnormal_) {
      for (const diagnose::Evidence& e : d_.steps[i].evidence) evidence.insert(e.node);
    }
    JsonArrayWriter a(out);
    for (size_t k = 0; k < d_.top_operators.size() && k < o_.distribution_roots; ++k) {
      const diagnose::TopOperator& t = d_.top_operators[k];
      std::vector<int64_t> peers, abnormal;
      for (size_t x = 0; x < r_.nodes.size(); ++x) {
        if (r_.nodes.layer[x] != t.layer || NodeName(static_cast<uint32_t>(x)) != t.name) continue;
        const int64_t dur = r_.nodes.end_ns[x] - r_.nodes.start_ns[x];
        (evidence.count(static_cast<uint32_t>(x)) > 0 ? abnormal : peers).push_back(dur);
      }
      const size_t peers_total = peers.size();
      constexpr size_t kSample = 4000;
      if (peers.size() > kSample) {
        std::vector<int64_t> sample;
        for (size_t i = 0; i < kSample; ++i) sample.push_back(peers[i * peers.size() / kSample]);
        peers.swap(sample);
      }
      a.Next();
      JsonObjectWriter w(out);
      w.Field("name", t.name).Field("layer", LayerName(t.layer));
      w.Field("peers_total", static_cast<uint64_t>(peers_total));
      w.Key("peers");
      JsonArrayWriter(out).Integers(peers).Close();
      w.Key("abnormal");
      JsonArrayWriter(out).Integers(abnormal).Close();
      w.Close();
      ++stats_.distributions;
    }
    a.Close();
  }

  void WriteCounters(std::string& out) {
    JsonArrayWriter a(out);
    for (const CounterEntry& c : trace_.counters.entries()) {
      if (c.value == 0) continue;
      a.Next();
      JsonObjectWriter(out)
          .Field("name", c.name)
          .Field("value", c.value)
          .Field("severity", CounterSeverityName(c.severity))
          .Field("description", c.description)
          .Close();
    }
    a.Close();
  }

  std::string Page(std::string& data) {
    // Inside a <script> element only "</" can end it early: written as "<\/", which JSON
    // reads as the same "/".
    std::string safe;
    safe.reserve(data.size() + 64);
    for (size_t i = 0; i < data.size(); ++i) {
      safe += data[i];
      if (data[i] == '<' && i + 1 < data.size() && data[i + 1] == '/') safe += '\\';
    }
    std::string title = "Teller diagnosis";
    if (!o_.sources.empty()) title += ": " + o_.sources.front();
    std::string html;
    html.reserve(safe.size() + sizeof(kReportCss) + sizeof(kReportJs) + 2048);
    html +=
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
        "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\n<title>";
    AppendEscaped(html, title);
    html += "</title>\n<style>\n";
    html += kReportCss;
    html +=
        "</style></head>\n<body>\n<header><h1>Teller diagnosis</h1><p "
        "id=\"sources\"></p></header>\n";
    html +=
        "<noscript><p class=\"warn\">This report draws itself with JavaScript; enable it to "
        "see the report (the data is in the page, script#teller-data).</p></noscript>\n"
        "<main id=\"report\"></main>\n<script type=\"application/json\" id=\"teller-data\">";
    html += safe;
    html += "</script>\n<script>\n";
    html += kReportJs;
    html += "</script>\n</body></html>\n";
    return html;
  }

  static void AppendEscaped(std::string& out, std::string_view text) {
    for (const char c : text) {
      switch (c) {
        case '<':
          out += "&lt;";
          break;
        case '>':
          out += "&gt;";
          break;
        case '&':
          out += "&amp;";
          break;
        case '"':
          out += "&quot;";
          break;
        default:
          out += c;
      }
    }
  }

  const Trace& trace_;
  const reconstruct::Reconstruction& r_;
  const diagnose::Diagnosis& d_;
  const HtmlOptions& o_;
  HtmlStats& stats_;
  int64_t t0_ = 0;
  std::vector<size_t> abnormal_;  // indices into d_.steps, highest score first
  std::unordered_set<uint32_t> abnormal_rank_steps_;
  std::vector<std::string> names_;
  std::unordered_map<std::string, uint32_t> name_ids_;
};

}  // namespace

std::string ToHtml(const Trace& trace, const reconstruct::Reconstruction& r,
                   const diagnose::Diagnosis& d, const HtmlOptions& options, HtmlStats* stats) {
  HtmlStats local;
  return HtmlWriter(trace, r, d, options, stats != nullptr ? stats : &local).Write();
}

}  // namespace teller::report
