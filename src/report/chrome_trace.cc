// The Chrome trace-event export (docs/report.md): the trace's events with the diagnosis as
// annotations, in the categories and args Teller's Kineto importer reads back.
#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "src/report/report_util.h"
#include "teller/core/json_writer.h"
#include "teller/report/report.h"

namespace teller::report {
namespace {

// GPU streams become threads of their process with ids from here up, clear of the host
// thread ids a trace has (Linux tids stay below 2^22 by default; pid_max is at most 2^22).
constexpr uint32_t kGpuTrackBase = 0x40000000;

// Kineto's range categories, which the importer reads as ranges; others are written as
// user_annotation with the original category in args.category.
bool IsKinetoRangeCategory(std::string_view c) {
  return c == "cpu_op" || c == "user_annotation" || c == "python_function" || c == "Operator";
}

const char* GpuCategory(EventType t) {
  switch (t) {
    case EventType::kKernel:
      return "kernel";
    case EventType::kMemcpy:
      return "gpu_memcpy";
    case EventType::kMemset:
      return "gpu_memset";
    case EventType::kSync:
      return "cuda_sync";
    case EventType::kGpuAnnotation:
      return "gpu_user_annotation";
    default:
      return nullptr;
  }
}

bool OnGpuTrack(EventType t) { return GpuCategory(t) != nullptr; }

// Time in µs with three decimals relative to `base`, exact for whole nanoseconds, as the
// importer reads it back (decimal text, not a double).
std::string Micros(int64_t ns, int64_t base) {
  int64_t d = ns - base;
  const bool neg = d < 0;
  if (neg) d = -d;
  char buf[40];
  std::snprintf(buf, sizeof buf, "%s%lld.%03lld", neg ? "-" : "", static_cast<long long>(d / 1000),
                static_cast<long long>(d % 1000));
  return buf;
}

struct Tracks {
  int64_t pid = 0;                                        // the pid the export gives the process
  std::map<uint32_t, uint32_t> host;                      // host tid -> tid
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> gpu;  // (device, stream) -> tid
};

class Writer {
 public:
  Writer(const Trace& trace, const reconstruct::Reconstruction& r, const diagnose::Diagnosis* d,
         ChromeTraceStats* stats)
      : trace_(trace), r_(r), d_(d), stats_(*stats) {}

  std::string Write() {
    const EventTable& ev = trace_.events;
    base_ = 0;
    bool any = false;
    for (size_t i = 0; i < ev.size(); ++i) {
      if (!any || ev.start_ns[i] < base_) base_ = ev.start_ns[i];
      any = true;
    }
    AssignTracks();
    MatchPops();
    if (d_ != nullptr) CollectAnnotations();
    out_.reserve(ev.size() * 190 + 4096);
    out_ += "{\"traceEvents\":[";
    WriteMetadata();
    for (size_t i = 0; i < ev.size(); ++i) WriteEvent(i);
    WriteLaunchFlows();
    if (d_ != nullptr) WriteFindings();
    out_ += "\n],\"displayTimeUnit\":\"ns\",\"baseTimeNanoseconds\":";
    AppendJsonInt(out_, base_);
    // One traced rank: its rank goes where the importer reads it. Several processes keep
    // theirs in the process names (Kineto has one distributedInfo per file).
    if (trace_.processes.size() == 1 && trace_.processes[0].rank >= 0) {
      out_ += ",\"distributedInfo\":";
      JsonObjectWriter di(out_);
      di.Field("rank", trace_.processes[0].rank);
      if (trace_.processes[0].world_size >= 0)
        di.Field("world_size", trace_.processes[0].world_size);
      di.Close();
    }
    out_ += ",\"otherData\":";
    JsonObjectWriter od(out_);
    od.Field("producer", "teller export");
    od.Key("sources");
    JsonArrayWriter s(out_);
    for (const std::string& src : trace_.sources) s.Element(src);
    s.Close();
    od.Close();
    out_ += "}\n";
    return std::move(out_);
  }

 private:
  void AssignTracks() {
    const EventTable& ev = trace_.events;
    tracks_.resize(trace_.processes.size());
    std::set<int64_t> pids;
    bool unique = true;
    for (const ProcessInfo& p : trace_.processes) unique &= pids.insert(p.pid).second;
    for (size_t p = 0; p < tracks_.size(); ++p) {
      // Processes of several hosts may share a pid: then each gets its index instead.
      tracks_[p].pid = unique ? trace_.processes[p].pid : static_cast<int64_t>(p) + 1;
    }
    for (size_t i = 0; i < ev.size(); ++i) {
      if (ev.process[i] >= tracks_.size()) continue;
      Tracks& t = tracks_[ev.process[i]];
      if (OnGpuTrack(ev.type[i])) {
        t.gpu.emplace(std::make_pair(ev.device[i], ev.stream[i]), 0);
      } else {
        t.host.emplace(ev.thread[i], ev.thread[i]);
      }
    }
    for (Tracks& t : tracks_) {
      uint32_t next = kGpuTrackBase;
      for (auto& [key, tid] : t.gpu) {
        while (t.host.count(next) > 0) ++next;
        tid = next++;
      }
    }
  }

  // The push each pop closes: the innermost open one of its thread and domain, in time
  // order (as the reconstruction pairs them). Viewers such as speedscope match an E event
  // to its B by name and args, so a pop is written with those of its push.
  void MatchPops() {
    const EventTable& ev = trace_.events;
    std::vector<uint32_t> order;
    for (size_t i = 0; i < ev.size(); ++i) {
      if (ev.type[i] == EventType::kPush || ev.type[i] == EventType::kPop) {
        order.push_back(static_cast<uint32_t>(i));
      }
    }
    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
      return std::tie(ev.process[a], ev.thread[a], ev.domain[a], ev.start_ns[a]) <
             std::tie(ev.process[b], ev.thread[b], ev.domain[b], ev.start_ns[b]);
    });
    std::vector<uint32_t> stack;
    for (size_t k = 0; k < order.size(); ++k) {
      const uint32_t i = order[k];
      if (k > 0) {
        const uint32_t j = order[k - 1];
        if (ev.process[i] != ev.process[j] || ev.thread[i] != ev.thread[j] ||
            ev.domain[i] != ev.domain[j]) {
          stack.clear();
        }
      }
      if (ev.type[i] == EventType::kPush) {
        stack.push_back(i);
      } else if (!stack.empty()) {
        push_of_pop_[i] = stack.back();
        stack.pop_back();
      }
    }
  }

  // The process and thread of event i in the export.
  std::pair<int64_t, uint32_t> Where(size_t i) const {
    const EventTable& ev = trace_.events;
    if (ev.process[i] >= tracks_.size()) return {0, ev.thread[i]};
    const Tracks& t = tracks_[ev.process[i]];
    if (OnGpuTrack(ev.type[i])) return {t.pid, t.gpu.at({ev.device[i], ev.stream[i]})};
    return {t.pid, ev.thread[i]};
  }

  void Begin(char ph, std::string_view name, std::string_view cat, int64_t pid, uint32_t tid,
             int64_t ts) {
    out_ += first_ ? "\n" : ",\n";
    first_ = false;
    out_ += "{\"ph\":\"";
    out_ += ph;
    out_ += "\",\"name\":";
    AppendJsonString(out_, name);
    if (!cat.empty()) {
      out_ += ",\"cat\":";
      AppendJsonString(out_, cat);
    }
    out_ += ",\"pid\":";
    AppendJsonInt(out_, pid);
    out_ += ",\"tid\":";
    AppendJsonUint(out_, tid);
    out_ += ",\"ts\":";
    out_ += Micros(ts, base_);
  }

  // One metadata event: {"ph":"M","name":<what>,...,"args":{<key>:<value>}}.
  template <typename T>
  void Metadata(std::string_view what, int64_t pid, uint32_t tid, std::string_view key,
                const T& value) {
    Begin('M', what, "", pid, tid, base_);
    out_ += ",\"args\":";
    JsonObjectWriter(out_).Field(key, value).Close();
    out_ += '}';
  }

  void WriteMetadata() {
    for (size_t p = 0; p < tracks_.size(); ++p) {
      const ProcessInfo& info = trace_.processes[p];
      const Tracks& t = tracks_[p];
      Metadata("process_name", t.pid, 0, "name", ProcessLabel(trace_, static_cast<uint32_t>(p)));
      Metadata("process_sort_index", t.pid, 0, "sort_index",
               static_cast<int64_t>(info.rank >= 0 ? info.rank : 100000 + p));
      // Host threads first, then the GPU streams, each named.
      int64_t order = 0;
      for (const auto& [host_tid, tid] : t.host) {
        Metadata("thread_name", t.pid, tid, "name", "thread " + std::to_string(host_tid));
        Metadata("thread_sort_index", t.pid, tid, "sort_index", order++);
        ++stats_.tracks;
      }
      for (const auto& [key, tid] : t.gpu) {
        Metadata("thread_name", t.pid, tid, "name", StreamLabel(key.first, key.second));
        Metadata("thread_sort_index", t.pid, tid, "sort_index", order++);
        ++stats_.tracks;
      }
    }
  }

  void WriteEvent(size_t i) {
    const EventTable& ev = trace_.events;
    const EventType type = ev.type[i];
    // A pop is written with the name, category and args of the push it closes.
    size_t src = i;
    if (type == EventType::kPop) {
      const auto it = push_of_pop_.find(static_cast<uint32_t>(i));
      if (it != push_of_pop_.end()) src = it->second;
    }
    const std::string_view name = trace_.strings.Get(ev.name[src]);
    const std::string_view orig_cat = trace_.strings.Get(ev.category[src]);
    const auto [pid, tid] = Where(i);
    std::string_view cat;
    char ph = 'X';
    bool keep_cat = false;  // write the original category into args.category
    switch (type) {
      case EventType::kPush:
      case EventType::kPop:
      case EventType::kRange:
        ph = type == EventType::kPush ? 'B' : type == EventType::kPop ? 'E' : 'X';
        cat = IsKinetoRangeCategory(orig_cat) ? orig_cat : "user_annotation";
        keep_cat = cat != orig_cat && !orig_cat.empty();
        break;
      case EventType::kMark:
        ph = 'i';
        cat = orig_cat;
        break;
      case EventType::kRuntime:
        cat = "cuda_runtime";
        keep_cat = orig_cat != cat && !orig_cat.empty();
        break;
      case EventType::kDriver:
        cat = "cuda_driver";
        keep_cat = orig_cat != cat && !orig_cat.empty();
        break;
      default:
        cat = GpuCategory(type);
        keep_cat = orig_cat != cat && !orig_cat.empty();
        break;
    }
    Begin(ph, name, cat, pid, tid, ev.start_ns[i]);
    if (ph == 'X') {
      out_ += ",\"dur\":";
      out_ += Micros(std::max(ev.end_ns[i], ev.start_ns[i]), ev.start_ns[i]);
    } else if (ph == 'i') {
      out_ += ",\"s\":\"t\"";
    }
    out_ += ",\"args\":";
    if (type == EventType::kPush) {
      const size_t at = out_.size();
      WriteArgs(i, keep_cat, orig_cat);
      push_args_[static_cast<uint32_t>(i)] = out_.substr(at);
    } else if (const auto it = push_args_.find(static_cast<uint32_t>(src));
               it != push_args_.end()) {
      out_ += it->second;
      push_args_.erase(it);
    } else {
      WriteArgs(i, keep_cat, orig_cat);
    }
    out_ += '}';
    ++stats_.events;
  }

  void WriteArgs(size_t i, bool keep_cat, std::string_view orig_cat) {
    const EventTable& ev = trace_.events;
    const EventType type = ev.type[i];
    JsonObjectWriter a(out_, JsonDoubles::kDigits6);
    if (ev.correlation[i] != 0) a.Field("correlation", ev.correlation[i]);
    if (ev.external_id[i] != 0) a.Field("External id", ev.external_id[i]);
    if (OnGpuTrack(type)) {
      a.Field("device", static_cast<uint64_t>(ev.device[i]));
      // A stream of -1 (context-wide syncs) was stored as 0xffffffff; it goes back as -1.
      if (ev.stream[i] == 0xffffffffu)
        a.Field("stream", static_cast<int64_t>(-1));
      else
        a.Field("stream", static_cast<uint64_t>(ev.stream[i]));
    }
    if (ev.bytes[i] != 0) a.Field("bytes", ev.bytes[i]);
    if (keep_cat) a.Field("category", orig_cat);
    if (ev.domain[i] != 0) a.Field("domain", trace_.strings.Get(ev.domain[i]));
    if (ev.signature[i] != 0) a.Field("signature", trace_.strings.Get(ev.signature[i]));
    if (const auto it = annotation_.find(static_cast<uint32_t>(i)); it != annotation_.end()) {
      a.FieldRaw("teller", it->second);
      ++stats_.annotated;
    }
    a.Close();
  }

  void Flow(std::string_view name, std::string_view cat, size_t from_event, int64_t from_ts,
            size_t to_event, int64_t to_ts) {
    const uint64_t id = ++flow_id_;
    const auto [pa, ta] = Where(from_event);
    const auto [pb, tb] = Where(to_event);
    Begin('s', name, cat, pa, ta, from_ts);
    out_ += ",\"id\":";
    AppendJsonUint(out_, id);
    out_ += '}';
    Begin('f', name, cat, pb, tb, to_ts);
    out_ += ",\"id\":";
    AppendJsonUint(out_, id);
    out_ += ",\"bp\":\"e\"}";
  }

  // A flow from every host call to each GPU operation the reconstruction bound to it
  // (graph launches have many).
  void WriteLaunchFlows() {
    const reconstruct::Nodes& n = r_.nodes;
    const EventTable& ev = trace_.events;
    for (size_t i = 0; i < n.size(); ++i) {
      const size_t e = n.event[i];
      if (!IsGpuWork(ev.type[e]) || n.parent[i] < 0) continue;
      const size_t pe = n.event[static_cast<size_t>(n.parent[i])];
      if (!IsHostCall(ev.type[pe])) continue;
      Flow("launch", "ac2g", pe, ev.start_ns[pe], e, ev.start_ns[e]);
      ++stats_.flows;
    }
  }

  void CollectAnnotations() {
    const reconstruct::Nodes& n = r_.nodes;
    for (const diagnose::StepDiagnosis& s : d_->steps) {
      if (!s.abnormal) continue;
      for (const std::vector<diagnose::Evidence>* list : {&s.evidence, &s.consequences}) {
        for (const diagnose::Evidence& e : *list) {
          if (e.node >= n.size()) continue;
          std::string obj;
          JsonObjectWriter w(obj, JsonDoubles::kDigits6);
          w.Field("role", diagnose::EvidenceRole(e));
          w.Field("step", StepLabel(s)).Field("fault_type", s.fault_type);
          w.Field("measure", localize::MeasureName(e.measure));
          w.Field("time_ns", e.time_ns).Field("expected_ns", e.expected_ns);
          w.Field("excess_ns", e.excess_ns).Field("ratio", e.ratio);
          w.Field("peers", static_cast<uint64_t>(e.peers));
          if (e.consequence) w.Field("waited_for_rank", e.waited_for_rank);
          w.Close();
          annotation_[n.event[e.node]] = std::move(obj);
        }
      }
    }
  }

  void WriteFindings() {
    const reconstruct::Nodes& n = r_.nodes;
    const EventTable& ev = trace_.events;
    for (const diagnose::StepDiagnosis& s : d_->steps) {
      if (!s.abnormal) continue;
      const std::string title = StepLabel(s) + " abnormal: " + s.fault_type;
      for (const uint32_t rs : s.rank_steps) {
        if (rs >= r_.steps.size()) continue;
        const uint32_t node = r_.steps[rs].node;
        const size_t e = n.event[node];
        const auto [pid, tid] = Where(e);
        Begin('i', title, kFindingCategory, pid, tid, n.start_ns[node]);
        out_ += ",\"s\":\"p\",\"args\":";
        JsonObjectWriter a(out_, JsonDoubles::kDigits6);
        a.Field("score", static_cast<double>(s.score)).Field("fault_type", s.fault_type);
        a.Field("excess_ns", s.excess_ns).Field("spread_ns", s.spread_ns);
        a.Field("duration_ns", s.duration_ns).Field("explanation", s.explanation);
        a.Close();
        out_ += '}';
        ++stats_.markers;
      }
      // Each consequence waited for a rank: the roots on that rank are what it waited for.
      for (const diagnose::Evidence& c : s.consequences) {
        if (c.node >= n.size() || c.waited_for_rank < 0) continue;
        for (const diagnose::Evidence& root : s.evidence) {
          if (root.node >= n.size() || root.rank != c.waited_for_rank) continue;
          const size_t from = n.event[root.node], to = n.event[c.node];
          Flow("root -> consequence", kFindingCategory, from, ev.start_ns[from], to,
               ev.start_ns[to]);
          ++stats_.finding_flows;
        }
      }
    }
  }

  const Trace& trace_;
  const reconstruct::Reconstruction& r_;
  const diagnose::Diagnosis* d_;
  ChromeTraceStats& stats_;
  std::string out_;
  std::vector<Tracks> tracks_;
  std::unordered_map<uint32_t, std::string> annotation_;  // event -> its "teller" arg
  std::unordered_map<uint32_t, uint32_t> push_of_pop_;    // pop event -> its push event
  std::unordered_map<uint32_t, std::string> push_args_;   // push event -> its args JSON
  int64_t base_ = 0;
  uint64_t flow_id_ = 0;
  bool first_ = true;
};

}  // namespace

std::string ToChromeTrace(const Trace& trace, const reconstruct::Reconstruction& r,
                          const diagnose::Diagnosis* d, ChromeTraceStats* stats) {
  ChromeTraceStats local;
  return Writer(trace, r, d, stats != nullptr ? stats : &local).Write();
}

}  // namespace teller::report
