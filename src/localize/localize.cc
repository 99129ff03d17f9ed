// Candidate localization (include/teller/localize/localize.h, docs/localization.md).
#include "teller/localize/localize.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <map>
#include <memory>
#include <numeric>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "teller/core/parallel.h"
#include "teller/core/progress.h"
#include "teller/core/stats.h"
#include "teller/localize/iterations.h"
#include "teller/localize/shared.h"

namespace teller::localize {

using reconstruct::Nodes;
using reconstruct::Reconstruction;

const char* PeerSourceName(PeerSource s) {
  switch (s) {
    case PeerSource::kNone:
      return "none";
    case PeerSource::kPositions:
      return "positions";
    case PeerSource::kFamily:
      return "family";
    case PeerSource::kBaseline:
      return "baseline";
    case PeerSource::kLayers:
      return "layers";
    case PeerSource::kRest:
      return "rest";
    case PeerSource::kCallers:
      return "callers";
    case PeerSource::kReplaced:
      return "replaced";
  }
  return "?";
}

const char* MeasureName(Measure m) {
  switch (m) {
    case Measure::kGpuTime:
      return "gpu_time";
    case Measure::kCallTime:
      return "call_time";
    case Measure::kSyncCost:
      return "sync_cost";
    case Measure::kOwnTime:
      return "own_time";
    case Measure::kTransferTime:
      return "transfer_time";
  }
  return "?";
}

Feature MeasureFeature(Measure m) {
  switch (m) {
    case Measure::kGpuTime:
    case Measure::kTransferTime:
      return kGpuNs;
    case Measure::kCallTime:
    case Measure::kSyncCost:
      return kHostCallNs;
    case Measure::kOwnTime:
      return kSelfNs;
  }
  return kSelfNs;
}

namespace {
// The host operations a slowed host is judged by (MarkSlowDevices): operator ranges (their
// own time) and runtime calls that do not wait for the GPU (call time). Synchronizations,
// whose time is the GPU's, and a step range's own time (a host pause, docs/localization.md)
// are not among them.
bool InHostCell(const Family& f) {
  return (f.measure == Measure::kOwnTime && f.layer != Layer::kStep) ||
         f.measure == Measure::kCallTime;
}
}  // namespace

bool InSlowTime(const Result& result, uint32_t k) {
  const Instance& in = result.instances[k];
  if (!in.evidence || !in.shared || in.consequence) return false;
  const Family& f = result.families[in.family];
  if (f.measure == Measure::kGpuTime) return true;
  // Host evidence shared with the operators around it is a slow time only on a host found
  // slowed as a whole: host time varies more, and a few host operators slower around one
  // time are no slower host.
  if (!InHostCell(f)) return false;
  for (const SlowDevice& d : result.slow_devices) {
    if (d.unit == in.unit && d.device == kHostDevice) return true;
  }
  return false;
}

uint32_t SlowTimeDevice(const Trace& trace, const reconstruct::Reconstruction& r,
                        const Result& result, uint32_t k) {
  const Instance& in = result.instances[k];
  return result.families[in.family].measure == Measure::kGpuTime
             ? trace.events.device[r.nodes.event[in.node]]
             : kHostDevice;
}

std::vector<SlowTime> SlowTimes(const Trace& trace, const reconstruct::Reconstruction& r,
                                const Result& result) {
  std::map<std::pair<uint32_t, uint32_t>, std::pair<int64_t, std::set<std::string>>> by;
  for (uint32_t k = 0; k < result.instances.size(); ++k) {
    if (!InSlowTime(result, k)) continue;
    const Instance& in = result.instances[k];
    auto& [excess, families] = by[{in.unit, SlowTimeDevice(trace, r, result, k)}];
    excess += in.excess_ns;
    // Kernel families as the top operators count them: one kernel after different
    // operators (its contexts) is one.
    families.insert(result.families[in.family].pattern);
  }
  std::vector<SlowTime> out;
  for (const auto& [where, x] : by) {
    if (x.second.size() < kSlowTimeFamilies) continue;
    SlowTime s{where.first, where.second, x.first, static_cast<uint32_t>(x.second.size())};
    for (const SlowDevice& d : result.slow_devices) {
      if (d.unit == s.unit && d.device == s.device) {
        s.device_wide = true;
        s.ratio = d.ratio;
      }
    }
    out.push_back(s);
  }
  return out;
}

std::string NamePattern(std::string_view name) {
  auto separator = [](char c) {
    return c == '.' || c == '_' || c == '#' || c == '[' || c == ']' || c == ' ' || c == '/' ||
           c == ':' || c == '(' || c == ')' || c == ',' || c == '-' || c == '=';
  };
  std::string out;
  out.reserve(name.size());
  for (size_t i = 0; i < name.size();) {
    const char c = name[i];
    // Addresses ("at 0x7fdc1d2e4b80") vary per process and run.
    if (c == '0' && i + 2 < name.size() && name[i + 1] == 'x' &&
        std::isxdigit(static_cast<unsigned char>(name[i + 2])) &&
        (i == 0 || !std::isalnum(static_cast<unsigned char>(name[i - 1])))) {
      out += "0x#";
      i += 2;
      while (i < name.size() && std::isxdigit(static_cast<unsigned char>(name[i]))) ++i;
      continue;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) && (i == 0 || separator(name[i - 1]))) {
      size_t j = i;
      while (j < name.size() && std::isdigit(static_cast<unsigned char>(name[j]))) ++j;
      if (j == name.size() || separator(name[j])) {
        if (out.empty() || out.back() != '#') out += '#';
        i = j;
        continue;
      }
    }
    out += c;
    ++i;
  }
  return out;
}

namespace {

bool IsRange(EventType t) { return t == EventType::kPush || t == EventType::kRange; }
bool IsOperatorLayer(Layer l) {
  return l == Layer::kFrontend || l == Layer::kBackend || l == Layer::kComm;
}

// Robust location and spread of a sample (it is reordered).
struct Spread {
  double median = 0, mad = 0;
};
// The median of v (reordered); 0 for none.
double MedianInPlace(std::vector<double>& v) {
  if (v.empty()) return 0;
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<long>(mid), v.end());
  double median = v[mid];
  if (v.size() % 2 == 0) {
    median = 0.5 * (median + *std::max_element(v.begin(), v.begin() + static_cast<long>(mid)));
  }
  return median;
}

// The median absolute deviation from `median` of v (reordered).
double MadInPlace(std::vector<double>& v, double median) {
  if (v.empty()) return 0;
  const size_t mid = v.size() / 2;
  for (double& x : v) x = std::fabs(x - median);
  std::nth_element(v.begin(), v.begin() + static_cast<long>(mid), v.end());
  return v[mid];
}

Spread RobustSpread(std::vector<double>& v) {
  Spread s;
  if (v.empty()) return s;
  s.median = MedianInPlace(v);
  s.mad = MadInPlace(v, s.median);
  return s;
}

// The 90th percentile of v (reordered), interpolated between the order statistics around
// (n - 1) * 0.9 (the usual sample quantile): taking the order statistic at n * 0.9 would
// make the largest of ten values the percentile, so that one slowed instance of a family
// of ten set its own noise. 0 for none.
double Quantile90InPlace(std::vector<double>& v) {
  if (v.empty()) return 0;
  const double h = 0.9 * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(h);
  std::nth_element(v.begin(), v.begin() + static_cast<long>(lo), v.end());
  const double below = v[lo];
  if (lo + 1 >= v.size()) return below;
  const double above = *std::min_element(v.begin() + static_cast<long>(lo) + 1, v.end());
  return below + (h - static_cast<double>(lo)) * (above - below);
}

// A heavy-tailed sample's upper tail as noise: how far its 90th percentile lies above
// `median`, read as a normal's 1.2816 sigma. v is reordered.
double UpperTailNoise(std::vector<double>& v, double median) {
  return (Quantile90InPlace(v) - median) / 1.2816;
}

// The noise an excess is measured in: the peers' spread, with the relative and absolute
// floors of Options (docs/localization.md, "Evidence and its floors").
double Noise(const Spread& s, const Options& o) {
  return std::max(
      {1.4826 * s.mad, o.noise_rel_floor * s.median, static_cast<double>(o.noise_abs_floor_ns)});
}

// One extracted instance before scoring. Identities are ids into Keys.
struct Raw {
  uint32_t node = 0, unit = 0;
  Measure measure = Measure::kOwnTime;
  int64_t time_ns = 0;
  // GPU work launched by an operator whose input shapes the trace records: its identity
  // with those shapes, with and without the preceding operator (else fine and coarse).
  uint32_t shaped_fine = 0, shaped = 0;
  uint32_t coarse = 0;           // identity without context
  uint32_t fine = 0;             // identity with the preceding operator
  uint32_t sized = 0;            // coarse with its launch grid's size class (else coarse)
  uint32_t bare = 0;             // host calls: the call whoever makes it (else coarse)
  uint32_t within = UINT32_MAX;  // pattern id of the operator that makes a host call
  bool unpaired_collective = false;
  // Every identity, finest first; an instance's peers are kept under each.
  static constexpr size_t kIdentities = 6;
  std::array<uint32_t, kIdentities> Identities() const {
    return {shaped_fine, shaped, fine, coarse, sized, bare};
  }
};

// A launch grid dimension's size class, as a copy's (CopySizeClass): grids at most
// 2^(1/4) = 1.19x apart in each dimension, under the smallest ratio that is evidence, do
// about the same work. Per dimension, not by the blocks in all: a kernel's grid
// dimensions follow dimensions of its problem (tiles along M and N, batch, splits), so
// that grids 56x2x17 and 7x16x17, the same 1904 blocks, took 0.1 and 2.1 ms for one
// convolution kernel.
uint32_t GridSizeClass(double blocks) {
  return blocks >= 1 ? static_cast<uint32_t>(std::lround(4 * std::log2(blocks))) + 1 : 0;
}

// Interned identities: name patterns and the tuples that make a family's key. Integer
// keys keep the scoring of a 200,000-event trace cheap; the text of a key is built once
// per family (a baseline is matched by it).
class Keys {
 public:
  static constexpr uint32_t kNone = UINT32_MAX;
  uint32_t Pattern(const Trace& t, StringId name, bool exact) {
    const uint64_t k = (static_cast<uint64_t>(name) << 2) | (exact ? 1 : 0);
    const auto it = by_name_.find(k);
    if (it != by_name_.end()) return it->second;
    const std::string_view text = t.strings.Get(name);
    std::string pattern = exact ? std::string(text) : NamePattern(text);
    auto [p, added] = by_pattern_.emplace(pattern, static_cast<uint32_t>(patterns_.size()));
    if (added) patterns_.push_back(std::move(pattern));
    by_name_.emplace(k, p->second);
    return p->second;
  }
  // A step marker's identity: its name up to the first space, patterned. What follows is
  // the step's own attributes (teller.step's "seq=812 kind=decode n=4 reqs=..."): its kind
  // and size are parts of the key already, and its number and requests differ from step
  // to step, so that a family keyed by them would hold only the steps of one batch.
  uint32_t StepPattern(const Trace& t, StringId name) {
    const uint64_t k = (static_cast<uint64_t>(name) << 2) | 2;
    const auto it = by_name_.find(k);
    if (it != by_name_.end()) return it->second;
    const std::string_view text = t.strings.Get(name);
    std::string pattern = NamePattern(text.substr(0, text.find(' ')));
    auto [p, added] = by_pattern_.emplace(pattern, static_cast<uint32_t>(patterns_.size()));
    if (added) patterns_.push_back(std::move(pattern));
    by_name_.emplace(k, p->second);
    return p->second;
  }
  uint32_t Key(uint32_t pattern, Layer layer, StringId kind, uint32_t size_class,
               StringId signature, uint32_t within, uint32_t context, uint32_t bytes_class,
               uint32_t shape = kNone) {
    const Tuple tuple{pattern,     static_cast<uint32_t>(layer) | (size_class << 8),
                      kind,        signature,
                      within,      context,
                      bytes_class, shape};
    // Looked up before it is inserted: emplace would allocate a node for every instance,
    // and almost every instance's identity is there already.
    if (const auto it = by_tuple_.find(tuple); it != by_tuple_.end()) return it->second;
    const auto key = static_cast<uint32_t>(tuples_.size());
    by_tuple_.emplace(tuple, key);
    tuples_.push_back(tuple);
    return key;
  }
  // A signature with its launch grid replaced by its dimensions' size classes (GridSizeClass),
  // the rest kept: kernels whose grid follows the data (a scan over this step's tokens,
  // an embedding lookup over its indices) get a grid of their own in nearly every step,
  // and so a family of one. Ids of these texts have kOwnSignature set (they are not in
  // the trace's strings). A signature without a grid is returned as it is.
  StringId SizedSignature(const Trace& t, StringId signature) {
    if (signature == 0) return 0;
    const auto it = sized_of_.find(signature);
    if (it != sized_of_.end()) return it->second;
    StringId out = signature;
    std::string text(t.strings.Get(signature));
    const size_t at = text.rfind("grid=", 0) == 0 ? 0 : text.find(" grid=");
    if (at != std::string::npos) {
      const size_t begin = text.find('=', at) + 1;
      const size_t end = std::min(text.find(' ', begin), text.size());
      std::string classes;  // x,y,z each by its size class
      for (size_t field = begin; field < end;) {
        const size_t comma = std::min(text.find(',', field), end);
        if (!classes.empty()) classes += ',';
        classes += std::to_string(
            GridSizeClass(std::strtod(text.substr(field, comma - field).c_str(), nullptr)));
        field = comma + 1;
      }
      const size_t name_at = at == 0 ? 0 : at + 1;  // where "grid=" begins
      text.replace(name_at, end - name_at, "grid~" + classes);
      auto [own, added] =
          own_by_text_.emplace(text, static_cast<StringId>(own_texts_.size()) | kOwnSignature);
      if (added) own_texts_.push_back(text);
      out = own->second;
    }
    sized_of_.emplace(signature, out);
    return out;
  }
  // The operator that launched a kernel, with the input shapes the trace records of it
  // (its signature): the same kernel on the same grid does other work for other shapes (a
  // convolution kernel with a wider inner dimension). kNone when the signature records no
  // dimension (no dims field, or only empty ones: "types=[]", "dims=[[],[]]"), which
  // would split a kernel's family by its callers and tell nothing of its work.
  uint32_t Shape(uint32_t op_pattern, StringId op_signature, const Trace& t) {
    const uint64_t k = (static_cast<uint64_t>(op_pattern) << 32) | op_signature;
    const auto it = shape_of_.find(k);
    if (it != shape_of_.end()) return it->second;
    const std::string_view text = t.strings.Get(op_signature);
    const size_t at = text.rfind("dims=", 0) == 0 ? 0 : text.find(" dims=");
    bool sized = false;
    if (at != std::string_view::npos) {
      // The field's JSON array ends where its brackets balance.
      int depth = 0;
      for (size_t c = text.find('[', at); c < text.size(); ++c) {
        depth += text[c] == '[' ? 1 : text[c] == ']' ? -1 : 0;
        sized |= std::isdigit(static_cast<unsigned char>(text[c])) != 0;
        if (depth == 0) break;
      }
    }
    uint32_t id = kNone;
    if (sized) {
      id = static_cast<uint32_t>(shape_texts_.size());
      shape_texts_.push_back(patterns_[op_pattern] + " " + std::string(text));
    }
    shape_of_.emplace(k, id);
    return id;
  }
  const std::string& PatternText(uint32_t p) const { return patterns_[p]; }
  uint32_t WithinOf(uint32_t key) const { return tuples_[key].within; }
  uint32_t BytesClassOf(uint32_t key) const { return tuples_[key].bytes; }
  std::string KeyText(const Trace& t, uint32_t key) const {
    const Tuple& x = tuples_[key];
    std::string out = patterns_[x.pattern];
    out += '\x1f';
    out += LayerName(static_cast<Layer>(x.layer & 0xff));
    out += '\x1f';
    if (x.kind != 0) out += t.strings.Get(x.kind);
    if (x.layer >> 8) out += "/size" + std::to_string(x.layer >> 8);
    out += '\x1f';
    if ((x.signature & kOwnSignature) != 0) {
      out += own_texts_[x.signature & ~kOwnSignature];
    } else if (x.signature != 0) {
      out += t.strings.Get(x.signature);
    }
    out += '\x1f';
    if (x.within != kNone) out += patterns_[x.within];
    out += '\x1f';
    if (x.context != kNone) out += patterns_[x.context];
    if (x.bytes != 0) out += "\x1f" + std::to_string(x.bytes);
    if (x.shape != kNone) out += "\x1flaunched by " + shape_texts_[x.shape];
    return out;
  }
  size_t size() const { return tuples_.size(); }

 private:
  struct Tuple {
    uint32_t pattern, layer;
    StringId kind, signature;
    uint32_t within, context;
    uint32_t bytes;  // copies: their size class (CopySizeClass), else 0
    uint32_t shape;  // GPU work: the launching operator's shapes (Shape), else kNone
    bool operator==(const Tuple& o) const {
      return pattern == o.pattern && layer == o.layer && kind == o.kind &&
             signature == o.signature && within == o.within && context == o.context &&
             bytes == o.bytes && shape == o.shape;
    }
  };
  struct TupleHash {
    size_t operator()(const Tuple& x) const {
      uint64_t h = 1469598103934665603ull;
      for (uint64_t v :
           {uint64_t{x.pattern}, uint64_t{x.layer}, uint64_t{x.kind}, uint64_t{x.signature},
            uint64_t{x.within}, uint64_t{x.context}, uint64_t{x.bytes}, uint64_t{x.shape}})
        h = (h ^ v) * 1099511628211ull;
      return static_cast<size_t>(h);
    }
  };
  static constexpr StringId kOwnSignature = 0x80000000u;
  std::unordered_map<uint64_t, uint32_t> shape_of_;
  std::vector<std::string> shape_texts_;
  std::unordered_map<StringId, StringId> sized_of_;
  std::unordered_map<std::string, StringId> own_by_text_;
  std::vector<std::string> own_texts_;
  std::unordered_map<uint64_t, uint32_t> by_name_;
  std::unordered_map<std::string, uint32_t> by_pattern_;
  std::vector<std::string> patterns_;
  std::unordered_map<Tuple, uint32_t, TupleHash> by_tuple_;
  std::vector<Tuple> tuples_;
};

// The unit a step or a process timeline owns, and which engine step it belongs to.
void BuildUnits(const Trace& t, const Reconstruction& r, Result* out) {
  const Nodes& n = r.nodes;
  // Roots per process, by start.
  std::map<uint32_t, std::vector<uint32_t>> roots;
  for (uint32_t i = 0; i < n.size(); ++i) {
    if (n.parent[i] < 0) roots[n.process[i]].push_back(i);
  }
  for (auto& [p, list] : roots) {
    std::sort(list.begin(), list.end(), [&](uint32_t a, uint32_t b) {
      return n.start_ns[a] != n.start_ns[b] ? n.start_ns[a] < n.start_ns[b] : a < b;
    });
  }
  if (r.steps.empty()) {
    // Without step markers: the iterations the work repeats in, else the whole timeline.
    for (const auto& [p, list] : roots) {
      const Iterations it = FindIterations(t, r, list);
      std::vector<std::vector<uint32_t>> parts;
      if (!it.cuts_ns.empty()) parts = SplitAtCuts(r, list, it.cuts_ns);
      if (parts.empty()) parts.push_back(list);
      for (size_t k = 0; k < parts.size(); ++k) {
        Unit u;
        u.process = p;
        const size_t before = it.prologue ? 1 : 0;
        u.iteration = parts.size() <= 1                      ? -1
                      : it.prologue && k == 0                ? Unit::kPrologue
                      : it.epilogue && k + 1 == parts.size() ? Unit::kEpilogue
                                                             : static_cast<int32_t>(k - before);
        u.roots = std::move(parts[k]);
        u.start_ns = INT64_MAX;
        u.end_ns = INT64_MIN;
        for (uint32_t root : u.roots) {
          u.start_ns = std::min(u.start_ns, n.start_ns[root]);
          u.end_ns = std::max(u.end_ns, n.end_ns[root]);
        }
        if (u.roots.empty()) u.start_ns = u.end_ns = 0;
        out->units.push_back(std::move(u));
      }
    }
    out->iterations = std::any_of(out->units.begin(), out->units.end(),
                                  [](const Unit& u) { return u.iteration >= 0; });
    out->whole_trace = !out->iterations;
  } else {
    std::vector<uint8_t> taken(n.size(), 0);
    for (uint32_t s = 0; s < r.steps.size(); ++s) taken[r.steps[s].node] = 1;
    for (uint32_t s = 0; s < r.steps.size(); ++s) {
      const reconstruct::Step& st = r.steps[s];
      Unit u;
      u.step = static_cast<int32_t>(s);
      u.process = st.process;
      u.start_ns = n.start_ns[st.node];
      u.end_ns = n.end_ns[st.node];
      u.roots.push_back(st.node);
      // Work of the process on other threads and streams that starts inside the step
      // (autograd's backward thread, worker threads, orphaned GPU work) belongs to it.
      const auto it = roots.find(st.process);
      if (it != roots.end()) {
        const auto& list = it->second;
        auto first = std::lower_bound(list.begin(), list.end(), u.start_ns,
                                      [&](uint32_t a, int64_t ts) { return n.start_ns[a] < ts; });
        for (; first != list.end() && n.start_ns[*first] < u.end_ns; ++first) {
          if (taken[*first]) continue;
          taken[*first] = 1;
          u.roots.push_back(*first);
        }
      }
      out->units.push_back(std::move(u));
    }
  }
  // Engine steps: the units of different processes with the same step number.
  std::map<int64_t, uint32_t> by_number;
  for (uint32_t u = 0; u < out->units.size(); ++u) {
    // An iteration's number is its index: the k-th iteration of every process is one.
    // The prologues of all processes are one, as are the epilogues.
    const int32_t iteration = out->units[u].iteration;
    const int64_t number = out->units[u].step >= 0        ? r.steps[out->units[u].step].number
                           : iteration == Unit::kPrologue ? INT64_MAX - 1
                           : iteration == Unit::kEpilogue ? INT64_MAX
                                                          : iteration;
    uint32_t g = static_cast<uint32_t>(out->group_units.size());
    if (number >= 0) {
      const auto it = by_number.find(number);
      bool joined = false;
      if (it != by_number.end()) {
        // The same number twice on one process is two steps, not one.
        bool same_process = false;
        for (uint32_t v : out->group_units[it->second])
          same_process |= out->units[v].process == out->units[u].process;
        if (!same_process) {
          g = it->second;
          joined = true;
        }
      }
      if (!joined) by_number[number] = g;
    }
    if (g == out->group_units.size()) {
      out->group_units.emplace_back();
      out->group_steps.emplace_back();
      out->group_roots.emplace_back();
      // A prologue or an epilogue has no number of its own (its key only joins them).
      out->group_number.push_back(number >= INT64_MAX - 1 ? -1 : number);
    }
    out->group_of_unit.push_back(g);
    out->group_units[g].push_back(u);
    if (out->units[u].step >= 0)
      out->group_steps[g].push_back(static_cast<uint32_t>(out->units[u].step));
    for (uint32_t root : out->units[u].roots) out->group_roots[g].push_back(root);
  }
}

bool IsPointToPoint(std::string_view name) {
  // Covers "SendRecv" too.
  return name.find("Send") != std::string_view::npos ||
         name.find("Recv") != std::string_view::npos ||
         name.find("send_recv") != std::string_view::npos;
}

// Point-to-point kernels that an all-to-all launched are a collective's parts: NCCL runs
// all-to-all as grouped sends and receives on every rank (DLRM's embedding exchange,
// expert parallelism), and then the k-th such kernel on every rank is one exchange.
// Pipeline sends and receives are not: one rank's partner is not every rank. Which it is
// shows in the operator that launched the kernel (PyTorch's "nccl:all_to_all",
// "c10d::alltoall_"), when every rank that communicates runs as many of them.
bool IsAllToAllOp(std::string_view name) {
  std::string lower(name);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower.find("all_to_all") != std::string::npos ||
         lower.find("alltoall") != std::string::npos;
}
// Per node: 1 for a point-to-point kernel that is part of an all-to-all.
std::vector<uint8_t> AllToAllParts(const Trace& t, const Reconstruction& r) {
  const Nodes& n = r.nodes;
  std::vector<uint8_t> part(n.size(), 0);
  std::map<StringId, std::map<uint32_t, uint32_t>> counts;  // name -> process -> kernels
  std::map<uint32_t, bool> comm_processes;
  for (uint32_t i = 0; i < n.size(); ++i) {
    const uint32_t e = n.event[i];
    if (!IsGpuWork(t.events.type[e]) || n.layer[i] != Layer::kComm) continue;
    comm_processes[n.process[i]] = true;
    if (!IsPointToPoint(t.strings.Get(t.events.name[e]))) continue;
    ++counts[t.events.name[e]][n.process[i]];
    for (int64_t a = n.parent[i]; a >= 0; a = n.parent[static_cast<size_t>(a)]) {
      if (IsAllToAllOp(t.strings.Get(t.events.name[n.event[static_cast<size_t>(a)]]))) {
        part[i] = 1;
        break;
      }
    }
  }
  for (uint32_t i = 0; i < n.size(); ++i) {
    if (!part[i]) continue;
    const auto& per = counts[t.events.name[n.event[i]]];
    bool equal = per.size() >= 2 && per.size() == comm_processes.size();
    for (const auto& [proc, c] : per) equal &= c == per.begin()->second;
    part[i] = equal;
  }
  return part;
}

// Steps of very different batch sizes are not peers: sizes go in powers of two
// (1, 2-3, 4-7, ...); 0 = unknown.
uint32_t SizeClass(int64_t size) {
  if (size < 0) return 0;
  uint32_t c = 1;
  while (size > 1 && c < 60) {
    size >>= 1;
    ++c;
  }
  return c;
}

// What the trace records of a call's size (shapes, grid, collective size); 0 = nothing.
StringId EventSignature(const EventTable& ev, uint32_t e) { return ev.signature[e]; }

// A copy costs what its size does: copies are peers only within a quarter of an octave of
// size (at most 2^(1/4) = 1.19x apart, under the smallest ratio that is evidence), so that
// a model's weight copies of every size are not one family. 0 when the size is unknown.
uint32_t CopySizeClass(uint64_t bytes) {
  if (bytes == 0) return 0;
  return 1 + static_cast<uint32_t>(std::lround(4.0 * std::log2(static_cast<double>(bytes))));
}

// The resolution the trace's times are recorded in: the greatest common divisor of its GPU
// times (1 us in Kineto files that write whole microseconds), at most kCoarsestTickNs:
// trace formats record at 1 us or finer, so a larger common divisor is a coincidence of
// round times (a hand-made trace), not a tick. 0 without GPU times.
constexpr int64_t kCoarsestTickNs = 1000;
int64_t TraceTick(const std::vector<Raw>& raw) {
  int64_t tick = 0;
  for (const Raw& x : raw) {
    if (x.measure == Measure::kGpuTime) tick = std::gcd(tick, x.time_ns);
    if (tick == 1) break;
  }
  return std::min(tick, kCoarsestTickNs);
}

// How long copy or memset call `call` blocked waiting for earlier work on its GPU
// operation's stream: an "asynchronous" copy from pageable host memory returns only when
// its copy is done, and its copy starts only when the work queued before it on the
// stream has finished (the stream's first operation in a capture waits for work queued
// before the capture began). That wait is the earlier work's time, not the call's: the part of the
// call before both the stream's previous operation ended and its own copy started. A
// call whose copy started after the call returned waited for nothing; a call delayed on
// the host (its stream idle) keeps all of its time.
int64_t QueueWait(const Nodes& n, uint32_t call, const std::vector<int64_t>& prev_on_stream,
                  const EventTable& ev) {
  int64_t wait = 0;
  for (uint32_t c = n.child_begin[call]; c < n.child_begin[call + 1]; ++c) {
    const uint32_t g = n.child_index[c];
    if (!IsGpuWork(ev.type[n.event[g]])) continue;
    if (n.start_ns[g] >= n.end_ns[call]) continue;  // started after the call returned
    // The stream's first operation in the trace waited for work queued before it began.
    const int64_t busy_until =
        prev_on_stream[g] < 0
            ? n.start_ns[g]
            : std::min(n.start_ns[g], n.end_ns[static_cast<uint32_t>(prev_on_stream[g])]);
    wait = std::max(wait, busy_until - n.start_ns[call]);
  }
  return std::clamp<int64_t>(wait, 0, n.end_ns[call] - n.start_ns[call]);
}

// A host node's child ranges and calls: their summed time and where the last one ends
// (the node's start when it has none).
struct HostChildren {
  int64_t time_ns = 0;
  int64_t last_end_ns = 0;
};
HostChildren HostChildrenOf(const Nodes& n, const EventTable& ev, uint32_t i) {
  HostChildren h;
  h.last_end_ns = n.start_ns[i];
  for (uint32_t c = n.child_begin[i]; c < n.child_begin[i + 1]; ++c) {
    const uint32_t child = n.child_index[c];
    const EventType ct = ev.type[n.event[child]];
    if (!IsRange(ct) && !IsHostCall(ct)) continue;
    h.time_ns += n.end_ns[child] - n.start_ns[child];
    h.last_end_ns = std::max(h.last_end_ns, n.end_ns[child]);
  }
  return h;
}

// Extracts the instances of every unit.
std::vector<Raw> Extract(const Trace& t, const Reconstruction& r, const Result& res,
                         const std::vector<uint8_t>& all_to_all, Keys* keys) {
  const Nodes& n = r.nodes;
  const EventTable& ev = t.events;
  const size_t N = n.size();
  // GPU work end times per process, sorted: a synchronization's own cost starts when the
  // GPU work it waited for was done.
  std::unordered_map<uint32_t, std::vector<int64_t>> gpu_ends;
  for (uint32_t i = 0; i < N; ++i) {
    if (IsGpuWork(ev.type[n.event[i]])) gpu_ends[n.process[i]].push_back(n.end_ns[i]);
  }
  for (auto& [p, ends] : gpu_ends) std::sort(ends.begin(), ends.end());
  // The GPU operation before each one on its stream: the context that tells apart the
  // same kernel serving different shapes (the four GEMMs of a layer).
  std::vector<int64_t> prev_on_stream(N, -1);
  {
    std::map<std::tuple<uint32_t, uint32_t, uint32_t>, std::vector<uint32_t>> by_stream;
    for (uint32_t i = 0; i < N; ++i) {
      const uint32_t e = n.event[i];
      if (IsGpuWork(ev.type[e])) by_stream[{n.process[i], ev.device[e], ev.stream[e]}].push_back(i);
    }
    for (auto& [key, list] : by_stream) {
      std::sort(list.begin(), list.end(), [&](uint32_t a, uint32_t b) {
        return n.start_ns[a] != n.start_ns[b] ? n.start_ns[a] < n.start_ns[b] : a < b;
      });
      for (size_t k = 1; k < list.size(); ++k) prev_on_stream[list[k]] = list[k - 1];
    }
  }
  // GPU operations keep their exact name: template arguments tell real kernels apart.
  auto pattern = [&](uint32_t node) {
    const uint32_t e = n.event[node];
    return keys->Pattern(t, ev.name[e], IsGpuWork(ev.type[e]));
  };
  // Whether a call's name is a copy or memset call, decided once per name.
  std::vector<int8_t> copy_call(t.strings.size(), -1);
  auto is_copy_call = [&](StringId name) {
    auto decide = [&] {
      const CallKind kind = ClassifyCall(t.strings.Get(name));
      return kind == CallKind::kMemcpy || kind == CallKind::kMemset;
    };
    if (name >= copy_call.size()) return decide();
    if (copy_call[name] < 0) copy_call[name] = decide();
    return copy_call[name] != 0;
  };
  // Whether a call's name is a synchronizing call, decided once per name.
  std::vector<int8_t> synchronizing(t.strings.size(), -1);
  auto is_synchronizing = [&](StringId name) {
    if (name >= synchronizing.size()) return IsSynchronizingCall(t.strings.Get(name));
    if (synchronizing[name] < 0) synchronizing[name] = IsSynchronizingCall(t.strings.Get(name));
    return synchronizing[name] != 0;
  };
  // The last step of a capture is closed when the profiler stops: its range runs on after
  // its last operation for as long as the profiler takes to stop (tens of ms in PyTorch's),
  // which is no pause of the program. Its time after its last operation counts only up to
  // what the process's other steps spend after theirs (their median): the end its range
  // is measured to, per step range node (-1: its own end).
  std::vector<int64_t> step_end(N, -1);
  {
    std::vector<double> after;  // the other steps' time after their last operation
    for (size_t k = 0; k < r.steps.size(); ++k) {
      const uint32_t i = r.steps[k].node;
      const int64_t last = HostChildrenOf(n, ev, i).last_end_ns;
      if (k + 1 < r.steps.size() && r.steps[k + 1].process == r.steps[k].process) {
        after.push_back(static_cast<double>(n.end_ns[i] - last));
        continue;
      }
      const int64_t usual = after.empty() ? 0 : static_cast<int64_t>(MedianInPlace(after));
      step_end[i] = std::min(n.end_ns[i], last + usual);
      after.clear();
    }
  }
  std::vector<Raw> out;
  out.reserve(N);  // at most one instance per node
  for (uint32_t u = 0; u < res.units.size(); ++u) {
    const Unit& unit = res.units[u];
    const StringId kind = unit.step >= 0 ? r.steps[unit.step].kind : 0;
    const uint32_t size_class = unit.step >= 0 ? SizeClass(r.steps[unit.step].size) : 0;
    // (node, enclosing operator range or -1, previous sibling or -1)
    std::vector<std::tuple<uint32_t, int64_t, int64_t>> todo;
    for (size_t k = unit.roots.size(); k-- > 0;) todo.push_back({unit.roots[k], -1, -1});
    while (!todo.empty()) {
      const auto [i, op, prev] = todo.back();
      todo.pop_back();
      const uint32_t e = n.event[i];
      const EventType type = ev.type[e];
      const int64_t dur = n.end_ns[i] - n.start_ns[i];
      const bool op_range = IsRange(type) && IsOperatorLayer(n.layer[i]);
      // A step range's own time is its thread's time outside every recorded operation:
      // when the host pauses inside a step (garbage collection, another process on its
      // CPU, untraced Python or data loading), nothing else in the step is slower, only
      // this grows (compared at its position with the other steps').
      const bool step_range = IsRange(type) && n.layer[i] == Layer::kStep;
      const bool nested_call = IsHostCall(type) && n.parent[i] >= 0 &&
                               IsHostCall(ev.type[n.event[static_cast<size_t>(n.parent[i])]]);
      Raw x;
      x.node = i;
      x.unit = u;
      bool keep = false;
      uint32_t context = Keys::kNone;
      if (IsGpuWork(type)) {
        keep = true;
        x.measure = n.layer[i] == Layer::kComm ? Measure::kTransferTime : Measure::kGpuTime;
        x.time_ns = dur;
        // Point-to-point kernels (pipeline sends and receives) wait for their partner,
        // which the k-th-of-a-name matching of collectives cannot name.
        if (n.layer[i] == Layer::kComm && IsPointToPoint(t.strings.Get(ev.name[e])) &&
            !all_to_all[i]) {
          x.measure = Measure::kGpuTime;
          x.unpaired_collective = true;
        }
        if (prev_on_stream[i] >= 0) context = pattern(static_cast<uint32_t>(prev_on_stream[i]));
      } else if (IsHostCall(type) && !nested_call) {
        keep = true;
        x.measure = Measure::kCallTime;
        x.time_ns = dur;
        if (is_synchronizing(ev.name[e])) {
          // Its own cost: how long it blocks after the GPU work it waits for has finished;
          // the waiting belongs to that work.
          const auto& ends = gpu_ends[n.process[i]];
          const auto it = std::upper_bound(ends.begin(), ends.end(), n.end_ns[i]);
          const int64_t gpu_done =
              it == ends.begin() ? n.start_ns[i] : std::max(n.start_ns[i], *(it - 1));
          x.measure = Measure::kSyncCost;
          x.time_ns = std::max<int64_t>(0, n.end_ns[i] - gpu_done);
        } else if (is_copy_call(ev.name[e])) {
          x.time_ns -= QueueWait(n, i, prev_on_stream, ev);
        }
        if (op >= 0) x.within = pattern(static_cast<uint32_t>(op));
        if (prev >= 0) context = pattern(static_cast<uint32_t>(prev));
      } else if (op_range || step_range) {
        keep = true;
        x.measure = Measure::kOwnTime;
        const int64_t span = step_range && step_end[i] >= 0 ? step_end[i] - n.start_ns[i] : dur;
        x.time_ns = std::max<int64_t>(0, span - HostChildrenOf(n, ev, i).time_ns);
        if (prev >= 0) context = pattern(static_cast<uint32_t>(prev));
      }
      if (keep) {
        const uint32_t self = step_range ? keys->StepPattern(t, ev.name[e]) : pattern(i);
        const StringId signature = EventSignature(ev, e);
        const uint32_t bytes = type == EventType::kMemcpy || type == EventType::kMemset
                                   ? CopySizeClass(ev.bytes[e])
                                   : 0;
        x.coarse =
            keys->Key(self, n.layer[i], kind, size_class, signature, x.within, Keys::kNone, bytes);
        x.fine = keys->Key(self, n.layer[i], kind, size_class, signature, x.within, context, bytes);
        const StringId sized = keys->SizedSignature(t, signature);
        x.sized = sized == signature ? x.coarse
                                     : keys->Key(self, n.layer[i], kind, size_class, sized,
                                                 x.within, Keys::kNone, bytes);
        x.bare = x.within == Keys::kNone ? x.coarse
                                         : keys->Key(self, n.layer[i], kind, size_class, signature,
                                                     Keys::kNone, Keys::kNone, bytes);
        x.shaped_fine = x.fine;
        x.shaped = x.coarse;
        const StringId op_signature =
            IsGpuWork(type) && op >= 0 ? EventSignature(ev, n.event[static_cast<uint32_t>(op)]) : 0;
        const uint32_t shape =
            op_signature == 0 ? Keys::kNone
                              : keys->Shape(pattern(static_cast<uint32_t>(op)), op_signature, t);
        if (shape != Keys::kNone) {
          x.shaped_fine = keys->Key(self, n.layer[i], kind, size_class, signature, x.within,
                                    context, bytes, shape);
          x.shaped = keys->Key(self, n.layer[i], kind, size_class, signature, x.within, Keys::kNone,
                               bytes, shape);
        }
        out.push_back(x);
      }
      const int64_t inner_op = op_range ? static_cast<int64_t>(i) : op;
      for (uint32_t c = n.child_begin[i + 1]; c-- > n.child_begin[i];) {
        const int64_t before =
            c > n.child_begin[i] ? static_cast<int64_t>(n.child_index[c - 1]) : -1;
        todo.push_back({n.child_index[c], inner_op, before});
      }
    }
  }
  return out;
}

// Per kernel identity without shapes (Raw::coarse), whether its launches for different
// input shapes cost differently: the usual times (medians) of its shapes with at least
// min_peers launches span min_ratio or more (a convolution kernel that runs 28 us for one
// layer's shapes and 74 us for another's on the same grid). Then each shape is a family of
// its own; shapes that cost alike (an add kernel on 4096 floats whether add_ or sub_
// launched it) keep the kernel's family whole: more peers, and the same layout of
// positions in every step.
std::vector<uint8_t> ShapesMatter(const std::vector<Raw>& raw, size_t keys, const Options& o) {
  std::unordered_map<uint32_t, std::vector<double>> times;  // per shaped identity
  std::unordered_map<uint32_t, uint32_t> kernel_of;         // shaped -> coarse
  for (const Raw& x : raw) {
    if (x.shaped == x.coarse) continue;
    times[x.shaped].push_back(static_cast<double>(x.time_ns));
    kernel_of[x.shaped] = x.coarse;
  }
  std::unordered_map<uint32_t, std::pair<double, double>> span;  // coarse -> (least, most)
  for (auto& [id, v] : times) {
    if (v.size() < o.min_peers) continue;
    const double m = std::max(1.0, MedianInPlace(v));
    auto [it, added] = span.emplace(kernel_of[id], std::make_pair(m, m));
    it->second.first = std::min(it->second.first, m);
    it->second.second = std::max(it->second.second, m);
  }
  std::vector<uint8_t> matter(keys, 0);
  for (const auto& [id, coarse] : kernel_of) {
    const auto it = span.find(coarse);
    matter[id] = it != span.end() && it->second.second >= o.min_ratio * it->second.first;
  }
  return matter;
}

// Which identity each raw instance uses: a kernel launched by an operator whose input
// shapes the trace records is compared with the kernels launched for the same shapes
// when there are enough of them and the kernel's shapes cost differently (ShapesMatter);
// else its fine key when that family is large enough, else the
// coarse one; a kernel whose exact grid is too rare to have peers (its grid follows the
// data) is compared with the kernels of its grid's size class; a host call whose operator
// makes it too rarely to have peers there (one launch of an op that runs once) is compared
// with the same call made by any operator.
std::vector<uint32_t> ChooseKeys(const std::vector<Raw>& raw, size_t keys, const Options& o) {
  std::vector<uint32_t> count(keys, 0);
  for (const Raw& x : raw) {
    const auto ids = x.Identities();
    for (size_t l = 0; l < ids.size(); ++l) {
      if (std::find(ids.begin(), ids.begin() + l, ids[l]) == ids.begin() + l) ++count[ids[l]];
    }
  }
  const std::vector<uint8_t> shapes_matter = ShapesMatter(raw, keys, o);
  std::vector<uint32_t> key(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) {
    const Raw& x = raw[i];
    const bool shaped = shapes_matter[x.shaped] != 0;
    key[i] = shaped && count[x.shaped_fine] >= o.min_context_family ? x.shaped_fine
             : shaped && count[x.shaped] >= o.min_peers             ? x.shaped
             : count[x.fine] >= o.min_context_family                ? x.fine
             : count[x.coarse] >= o.min_peers                       ? x.coarse
             : count[x.sized] >= o.min_peers                        ? x.sized
                                                                    : x.bare;
  }
  return key;
}

// Per instance and identity, its occurrence among the instances of its unit that hold
// that identity at any of their levels (the instances its family's peers are kept from):
// a kernel that no operator launched (work of the step before the capture began) has its
// fine identity at the level where the others have their shaped one, and is still the
// k-th of that identity in its unit.
using IdentityOccurrences = std::array<uint32_t, Raw::kIdentities>;
std::vector<IdentityOccurrences> Occurrences(const std::vector<Raw>& raw, size_t keys) {
  std::vector<IdentityOccurrences> occ(raw.size());
  std::vector<uint32_t> seen(keys, 0);
  std::vector<uint32_t> touched;
  uint32_t unit = UINT32_MAX;
  for (size_t i = 0; i < raw.size(); ++i) {
    if (raw[i].unit != unit) {
      for (uint32_t k : touched) seen[k] = 0;
      touched.clear();
      unit = raw[i].unit;
    }
    const auto ids = raw[i].Identities();
    for (size_t l = 0; l < ids.size(); ++l) {
      const auto same = std::find(ids.begin(), ids.begin() + l, ids[l]);
      if (same != ids.begin() + l) {
        occ[i][l] = occ[i][static_cast<size_t>(same - ids.begin())];
        continue;
      }
      if (seen[ids[l]] == 0) touched.push_back(ids[l]);
      occ[i][l] = seen[ids[l]]++;
    }
  }
  return occ;
}

// Collectives: for every communication kernel that a collective group pairs with the
// other ranks', how long it waited for the last rank to start.
struct Waits {
  std::vector<int64_t> wait_ns;               // per node
  std::vector<int32_t> late_process;          // per node: who it waited for, -1 none
  std::vector<int64_t> transfer_ns;           // per node: end - max(start, last start)
  std::vector<std::vector<uint32_t>> groups;  // node lists of each collective
};
Waits CollectiveWaits(const Trace& t, const Reconstruction& r,
                      const std::vector<uint8_t>& all_to_all) {
  Waits w;
  const Nodes& n = r.nodes;
  w.wait_ns.assign(n.size(), 0);
  w.late_process.assign(n.size(), -1);
  w.transfer_ns.assign(n.size(), -1);
  if (t.processes.size() < 2) return w;
  // The collectives the reconstruction paired across processes (with the user's rules,
  // on aligned clocks).
  for (const auto& g : r.collectives.groups) {
    std::vector<uint32_t> nodes(g.begin(), g.end());
    if (nodes.size() < 2) continue;
    bool parts = true;
    for (uint32_t x : nodes) parts &= all_to_all[x] != 0;
    if (IsPointToPoint(t.strings.Get(t.events.name[n.event[nodes.front()]])) && !parts) continue;
    uint32_t last = nodes.front();
    for (uint32_t x : nodes) {
      if (n.start_ns[x] > n.start_ns[last]) last = x;
    }
    const int64_t last_start = n.start_ns[last];
    for (uint32_t x : nodes) {
      w.wait_ns[x] = std::max<int64_t>(0, last_start - n.start_ns[x]);
      w.transfer_ns[x] = n.end_ns[x] - std::max(n.start_ns[x], last_start);
      if (x != last) w.late_process[x] = static_cast<int32_t>(n.process[last]);
    }
    w.groups.push_back(std::move(nodes));
  }
  return w;
}

// The times of a family's instances, overall and per occurrence in its unit (each unit
// has at most one k-th occurrence, so by_occ[k].size() is the number of units holding it).
struct FamilyPeers {
  std::vector<double> all;
  std::vector<uint32_t> occ;  // each value's occurrence in its unit
  std::vector<std::vector<double>> by_occ;
  // The repeated layers of a step: a family whose times repeat with a period (a layer's
  // three large GEMMs and four small ones of one kernel) compares each instance with the
  // instances at the same phase of the other layers.
  uint32_t period = 1;
  std::vector<uint32_t> phase;  // each value's phase, when period > 1
  std::vector<std::vector<double>> by_phase;
  // A call's family whoever makes it (Raw::bare) mixes every operator's calls in visiting
  // order: no repeating structure to find, and finding none would cost the most there.
  bool callers_mixed = false;
};

// The period of a family's times in visiting order: the lag P (2..64) at which the times
// repeat best, measured as the trimmed mean |log t[i+P] - log t[i]|; 1 when no lag explains the
// family's variation at least twice as well as consecutive instances do (or it has too
// little variation to explain). The smallest lag within 10% of the best wins (multiples of
// the period repeat as well). Measured on the first kPeriodValues times: a structure that
// repeats every 64 or fewer shows in a few thousand of them as well as in all, and a large
// family (a kernel in every layer of a long run) would otherwise cost 64 passes over all of
// its times.
constexpr size_t kPeriodValues = 8192;
uint32_t Period(const std::vector<double>& v) {
  const size_t n = std::min(v.size(), kPeriodValues);
  if (n < 12) return 1;
  std::vector<double> l(n);
  for (size_t i = 0; i < n; ++i) l[i] = std::log(std::max(1.0, v[i]));
  const size_t max_lag = std::min<size_t>(64, n / 3);
  std::vector<double> cost(max_lag + 1, 0);
  std::vector<double> d;
  for (size_t lag = 1; lag <= max_lag; ++lag) {
    d.clear();
    for (size_t i = 0; i + lag < n; ++i) d.push_back(std::fabs(l[i + lag] - l[i]));
    // The mean of the lower 90%: a pattern where a few of every P instances differ moves
    // the mean, while a few outliers (or a slowed window) do not. The lower 90% as a set
    // (selection, linear): a full sort per lag was most of a large trace's diagnosis.
    const size_t keep = std::max<size_t>(1, d.size() * 9 / 10);
    if (keep < d.size()) std::nth_element(d.begin(), d.begin() + static_cast<long>(keep), d.end());
    double sum = 0;
    for (size_t i = 0; i < keep; ++i) sum += d[i];
    cost[lag] = sum / static_cast<double>(keep);
  }
  if (cost[1] < 0.05) return 1;
  double best = cost[1];
  for (size_t lag = 2; lag <= max_lag; ++lag) best = std::min(best, cost[lag]);
  if (best > 0.5 * cost[1]) return 1;
  for (size_t lag = 2; lag <= max_lag; ++lag) {
    if (cost[lag] <= best * 1.1 + 1e-9) return static_cast<uint32_t>(lag);
  }
  return 1;
}

// The phase of each value of a sequence in a structure of period P, given each phase's
// typical log time: a repeating structure is not always whole (a step holds a few forward
// passes, each with an extra head operator; a unit starts mid-pattern), so the phase of the
// k-th value is not always k mod P. The alignment chooses, for every value, an offset d with
// phase (k + d) mod P: the cost of a value is its log distance to its phase's typical time
// (capped, so that a slowed value costs what a mismatched one does), and changing the offset
// costs kPhaseSwitch: only a sustained run of mismatches moves it, a few slowed values never
// do (Viterbi over the P offsets).
constexpr double kPhaseCap = 1.0;
constexpr double kPhaseSwitch = 3.0;
std::vector<uint32_t> AlignPhases(const std::vector<double>& v,
                                  const std::vector<double>& typical) {
  const size_t n = v.size(), P = typical.size();
  std::vector<uint32_t> phase(n, 0);
  if (n == 0 || P < 2) return phase;
  std::vector<double> cost(P, 0), next(P);
  std::vector<uint8_t> switched(n * P, 0);  // did offset d at value k come from another?
  std::vector<uint32_t> from(n, 0);         // the best offset before value k (for switches)
  for (size_t k = 0; k < n; ++k) {
    const double l = std::log(std::max(1.0, v[k]));
    size_t best = 0;
    for (size_t d = 1; d < P; ++d) {
      if (cost[d] < cost[best]) best = d;
    }
    from[k] = static_cast<uint32_t>(best);
    for (size_t d = 0; d < P; ++d) {
      const double stay = cost[d], move = cost[best] + kPhaseSwitch;
      const bool sw = k > 0 && move < stay;
      switched[k * P + d] = sw;
      next[d] = (sw ? move : stay) + std::min(kPhaseCap, std::fabs(l - typical[(k + d) % P]));
    }
    cost.swap(next);
  }
  size_t d = 0;
  for (size_t x = 1; x < P; ++x) {
    if (cost[x] < cost[d]) d = x;
  }
  for (size_t k = n; k-- > 0;) {
    phase[k] = static_cast<uint32_t>((k + d) % P);
    if (switched[k * P + d]) d = from[k];
  }
  return phase;
}

// The typical log time of each phase.
std::vector<double> PhaseTypical(const std::vector<double>& v, const std::vector<uint32_t>& phase,
                                 uint32_t period) {
  std::vector<std::vector<double>> by(period);
  for (size_t i = 0; i < v.size(); ++i) by[phase[i]].push_back(std::log(std::max(1.0, v[i])));
  std::vector<double> typical(period, 0);
  for (uint32_t k = 0; k < period; ++k) typical[k] = RobustSpread(by[k]).median;
  return typical;
}

// `position_units`: when every occurrence of the family is held by at least this many units,
// its instances are compared at their positions and never at a phase, and finding its
// period (most of a long trace's cost) is skipped; 0 never skips (a baseline's families
// serve traces whose instances may lie beyond its positions).
void FinishPeers(FamilyPeers& f, size_t position_units) {
  const bool positions_everywhere =
      position_units > 0 && std::all_of(f.by_occ.begin(), f.by_occ.end(), [&](const auto& at) {
        return at.size() >= position_units;
      });
  f.period = f.callers_mixed || positions_everywhere ? 1 : Period(f.all);
  f.by_phase.assign(f.period, {});
  f.phase.clear();
  if (f.period < 2) return;
  // Start from each value's occurrence mod P, then align twice.
  f.phase.resize(f.all.size());
  for (size_t i = 0; i < f.all.size(); ++i) f.phase[i] = f.occ[i] % f.period;
  for (int pass = 0; pass < 2; ++pass)
    f.phase = AlignPhases(f.all, PhaseTypical(f.all, f.phase, f.period));
  for (size_t i = 0; i < f.all.size(); ++i) f.by_phase[f.phase[i]].push_back(f.all[i]);
}
struct StepPeers {
  std::unordered_map<std::string, std::vector<double>> durations;  // per step kind
};

// Everything localization derives from one trace before scoring.
struct Prepared {
  Result res;
  Keys keys;
  std::vector<Raw> raw;
  std::vector<uint32_t> key;
  std::vector<uint32_t> occ;
  std::vector<uint32_t> pos;  // each raw instance's index in its family's FamilyPeers
  Waits waits;
  std::vector<std::string> group_kind;
  std::vector<int64_t> group_duration;
  std::vector<FamilyPeers> peers;  // per key id
  StepPeers steps;
};

Prepared Prepare(const Trace& t, const Reconstruction& r, const Options& o) {
  ProgressTask progress("grouping operators into families", 0);
  Prepared p;
  BuildUnits(t, r, &p.res);
  const std::vector<uint8_t> all_to_all = AllToAllParts(t, r);
  p.raw = Extract(t, r, p.res, all_to_all, &p.keys);
  p.waits = CollectiveWaits(t, r, all_to_all);
  for (Raw& x : p.raw) {
    if (x.measure == Measure::kTransferTime && !x.unpaired_collective) {
      const int64_t transfer = p.waits.transfer_ns[x.node];
      if (transfer >= 0) {
        x.time_ns = transfer;
      } else {
        // Not paired with the other ranks' kernels (their traces are missing): its whole
        // time, which includes waiting for ranks this trace cannot see.
        x.measure = Measure::kGpuTime;
        x.unpaired_collective = true;
      }
    }
  }
  p.key = ChooseKeys(p.raw, p.keys.size(), o);
  // Peers are kept under every identity: an instance that uses the coarse one (its
  // context is rare, e.g. the first kernel on a stream) is compared with every instance of
  // its operator, not only with the few that share its rare context.
  const std::vector<IdentityOccurrences> occ_of = Occurrences(p.raw, p.keys.size());
  p.occ.resize(p.raw.size());
  p.pos.resize(p.raw.size());
  p.peers.resize(p.keys.size());
  // The work before the iterations and after them (a prologue, an epilogue: set-up, a
  // partial last pass) is laid out otherwise than an iteration: it is compared with the
  // iterations' positions but holds none of them.
  auto add = [&](uint32_t key, uint32_t occ, double v, bool positioned) {
    FamilyPeers& f = p.peers[key];
    const uint32_t at = static_cast<uint32_t>(f.all.size());
    f.all.push_back(v);
    f.occ.push_back(occ);
    if (positioned) {
      if (f.by_occ.size() <= occ) f.by_occ.resize(occ + 1);
      f.by_occ[occ].push_back(v);
    }
    return at;
  };
  for (size_t i = 0; i < p.raw.size(); ++i) {
    const double v = static_cast<double>(p.raw[i].time_ns);
    const bool positioned = !p.res.units[p.raw[i].unit].OutsideIterations();
    const auto ids = p.raw[i].Identities();
    for (size_t l = 0; l < ids.size(); ++l) {
      // An identity equal to a finer one holds the instance once.
      if (std::find(ids.begin(), ids.begin() + l, ids[l]) != ids.begin() + l) continue;
      const uint32_t at = add(ids[l], occ_of[i][l], v, positioned);
      if (p.key[i] == ids[l]) {
        p.occ[i] = occ_of[i][l];
        p.pos[i] = at;
      }
    }
  }
  // Identities used only as a call's family whoever makes it.
  std::vector<uint8_t> mixed(p.keys.size(), 0);
  for (const Raw& x : p.raw) mixed[x.bare] = 1;
  for (const Raw& x : p.raw) {
    const auto ids = x.Identities();
    for (size_t l = 0; l + 1 < ids.size(); ++l) mixed[ids[l]] = 0;  // all but bare
  }
  for (size_t k = 0; k < p.peers.size(); ++k) p.peers[k].callers_mixed = mixed[k] != 0;
  for (FamilyPeers& f : p.peers)
    FinishPeers(f, std::max<size_t>({1, o.min_peers, o.min_position_units}));
  const size_t groups = p.res.group_units.size();
  p.group_kind.assign(groups, "");
  p.group_duration.assign(groups, 0);
  for (uint32_t g = 0; g < groups; ++g) {
    for (uint32_t u : p.res.group_units[g]) {
      const Unit& unit = p.res.units[u];
      p.group_duration[g] = std::max(p.group_duration[g], unit.end_ns - unit.start_ns);
      if (unit.step >= 0) {
        const reconstruct::Step& st = r.steps[unit.step];
        p.group_kind[g] = std::string(st.kind != 0 ? t.strings.Get(st.kind) : "") + "/size" +
                          std::to_string(SizeClass(st.size));
      } else if (unit.OutsideIterations()) {
        // Not peers of the iterations: set-up and tear-down have lengths of their own.
        p.group_kind[g] = unit.iteration == Unit::kPrologue ? "prologue" : "epilogue";
      }
    }
    p.steps.durations[p.group_kind[g]].push_back(static_cast<double>(p.group_duration[g]));
  }
  return p;
}

// A family's GPU instances compared with the whole family (no positions or layer phases
// to pin them down), per process in time order: the contiguous segment of at least
// kMinSegment instances, leaving at least kMinSegment others, whose median is the most
// significantly above the others' median (by the evidence margins: min_ratio, min_excess,
// min_z against the others' noise), with at least 80% of its instances min_ratio above
// the others' median. Its instances that clear the margins on their own become evidence,
// with the others as peers (PeerSource::kRest). Families of up to kMaxSegmentFamily
// instances: in a larger family a segment of a few dozen leaves the median alone.
constexpr size_t kMinSegment = 3;
constexpr size_t kMaxSegmentFamily = 96;
// A family of a few instances (a kernel run once per step, in a capture of six steps) has
// a run of kMinSegment and a rest of two: two instances that agree are a reference for
// a large slowdown only, so there every instance of the run must be kSmallRestRatio times
// the rest's median. Slowdowns only add time: two instances at the usual time against
// three at 4x are the usual time and a slowdown, not a family of two speeds.
constexpr size_t kMinSmallRest = 2;
constexpr double kSmallRestRatio = 2.0;
// The least rest whose noise is trusted for a run's mean (a MAD of a handful is rough).
constexpr size_t kMinRestForRun = 4 * kMinSegment;

// A run of [begin, end) in a sequence of n, judged as the mean of its length (the
// standard error of a mean: sqrt(length)) when the rest is kMinRestForRun or more, else
// per instance (1).
double RunScale(size_t n, size_t begin, size_t end) {
  const size_t length = end - begin;
  return n - length >= kMinRestForRun ? std::sqrt(static_cast<double>(length)) : 1.0;
}

// The excess each instance of a sustained run must exceed. A run repeats one slowdown, so
// its floor of min_excess_ns is on the run's total excess; each instance still needs more
// than the noise floor, and more than the resolution the trace's times are recorded in
// (Result::tick_ns), where one tick more is rounding, not a slowdown: a 1 us memset
// written as 2 us may have taken 1.49 and 1.50 us.
double RunFloor(const Result& out, const Options& o) {
  return static_cast<double>(std::max(out.tick_ns, o.noise_abs_floor_ns));
}

// A family key (Keys::KeyText) without its context field, the operator before it: one
// kernel after different operators is one identity here.
std::string WithoutContext(const std::string& key) {
  constexpr size_t kContextField = 5;
  size_t at = 0;
  for (size_t i = 0; i < kContextField; ++i) {
    at = key.find('\x1f', at);
    if (at == std::string::npos) return key;
    ++at;
  }
  const size_t next = key.find('\x1f', at);
  return key.substr(0, at) + (next == std::string::npos ? "" : key.substr(next));
}

// Each process's first unit (units are listed in time order per process).
std::unordered_map<uint32_t, uint32_t> FirstUnits(const std::vector<Unit>& units) {
  std::unordered_map<uint32_t, uint32_t> first;  // process -> its first unit
  for (uint32_t u = 0; u < units.size(); ++u) first.emplace(units[u].process, u);
  return first;
}

void FindSlowSegments(const Reconstruction& r, const Options& o, Result* out) {
  std::map<std::pair<uint32_t, uint32_t>, std::vector<uint32_t>> sequences;  // (family, process)
  for (uint32_t k = 0; k < out->instances.size(); ++k) {
    const Instance& in = out->instances[k];
    const Family& f = out->families[in.family];
    // GPU time, and host framework time compared with its whole family, whose noise is
    // the family's upper tail: a run of slowed instances is that tail when it holds more
    // than a tenth of the family, so that none of them stands out (the rest's tail does
    // not have them).
    const bool host_tail = f.measure == Measure::kOwnTime && in.source == PeerSource::kFamily;
    if ((f.measure != Measure::kGpuTime && !host_tail) || in.warmup ||
        (in.source != PeerSource::kFamily && in.source != PeerSource::kPositions))
      continue;
    sequences[{in.family, r.nodes.process[in.node]}].push_back(k);
  }
  const std::unordered_map<uint32_t, uint32_t> first_unit = FirstUnits(out->units);
  const double floor = RunFloor(*out, o);
  struct Found {
    std::vector<uint32_t>* seq = nullptr;  // null: no run found
    size_t begin = 0, end = 0;
    double median = 0, noise = 0;
    bool after_first_unit = false;  // the rest is the process's first unit alone
    bool host_time = false;         // a host framework family (own time)
  };
  // Each sequence's search is independent of the others (and costs up to n^3 for n up to
  // kMaxSegmentFamily): searched on the cores available, each into its own slot, then
  // applied in the sequences' order, so the result does not depend on the workers.
  std::vector<std::pair<const std::pair<uint32_t, uint32_t>, std::vector<uint32_t>>*> order;
  for (auto& entry : sequences) order.push_back(&entry);
  std::vector<Found> found(order.size());
  ParallelFor(order.size(), [&](size_t slot) {
    const auto& key = order[slot]->first;
    std::vector<uint32_t>& seq = order[slot]->second;
    const size_t n = seq.size();
    const bool host_time = out->families[key.first].measure == Measure::kOwnTime;
    // Host framework time is heavy-tailed (sizes the trace may not record): no small rest.
    const size_t min_family = host_time ? 2 * kMinSegment + 2 : kMinSegment + kMinSmallRest;
    if (n < min_family || n > kMaxSegmentFamily) return;
    const size_t min_rest = n >= 2 * kMinSegment + 2 || host_time ? kMinSegment : kMinSmallRest;
    std::sort(seq.begin(), seq.end(), [&](uint32_t a, uint32_t b) {
      return r.nodes.start_ns[out->instances[a].node] < r.nodes.start_ns[out->instances[b].node];
    });
    std::vector<double> inside, rest;
    const auto first_it = first_unit.find(key.second);
    const uint32_t first = first_it == first_unit.end() ? UINT32_MAX : first_it->second;
    size_t in_first = 0;  // the leading instances in the process's first unit
    while (in_first < n && out->instances[seq[in_first]].unit == first) ++in_first;
    double best_z = 0, best_median = 0, best_noise = 0, best_excess = 0;
    size_t best_begin = 0, best_end = 0;
    for (size_t b = 0; b < n; ++b) {
      for (size_t e = b + kMinSegment; e <= n && n - (e - b) >= min_rest; ++e) {
        // Host time: the usual time is what most instances take (a heavy-tailed family's
        // fast minority is no norm), so a run is at most half the family.
        if (host_time && 2 * (e - b) > n) break;
        inside.clear();
        rest.clear();
        for (size_t i = 0; i < n; ++i)
          (i >= b && i < e ? inside : rest)
              .push_back(static_cast<double>(out->instances[seq[i]].time_ns));
        // The rest's spread only for a run that passes the tests on medians (most do not).
        const double m_in = MedianInPlace(inside);
        Spread sr;
        sr.median = MedianInPlace(rest);
        const double run = static_cast<double>(e - b);
        if (m_in < o.min_ratio * sr.median || m_in - sr.median <= floor ||
            (m_in - sr.median) * run < o.min_excess_ns)
          continue;
        size_t slow = 0;
        for (double v : inside) slow += v >= o.min_ratio * sr.median;
        if (slow * 5 < inside.size() * 4) continue;
        if (n - (e - b) < kMinSegment &&
            *std::min_element(inside.begin(), inside.end()) < kSmallRestRatio * sr.median)
          continue;
        // And the rest is the normal time: a rest that is itself partly as slow (two short
        // first instances and one of the usual ones, around a long run of the usual time)
        // says the short ones are what differs, not the run.
        // Host framework time is heavy-tailed (sizes the trace may not record): there, as
        // slow means at least halfway to the run's median.
        const double as_slow =
            host_time ? sr.median + (m_in - sr.median) / 2 : o.min_ratio * sr.median;
        size_t slow_rest = 0;
        for (size_t i = 0; i < n; ++i) {
          if (i >= b && i < e) continue;
          slow_rest += static_cast<double>(out->instances[seq[i]].time_ns) >= as_slow;
        }
        if (slow_rest * 5 > (n - (e - b))) continue;
        // Host time, as the instances compared with the whole family (Score): the rest's
        // own upper tail is part of the noise (taken before the MAD turns `rest` into
        // deviations).
        const double tail = host_time ? UpperTailNoise(rest, sr.median) : 0.0;
        sr.mad = MadInPlace(rest, sr.median);
        const double noise = std::max(Noise(sr, o), tail);
        // The run's median against the rest's noise, as a mean of its length where the
        // rest is large enough to trust that noise (RunScale): a run is a repeated
        // measurement of one slowdown.
        // Not for host time: its runs are not independent measurements (a phase of the
        // program with larger tensors is a run too), so every instance of the run, its
        // fastest, must clear the rest's tail.
        const double z = host_time
                             ? (*std::min_element(inside.begin(), inside.end()) - sr.median) / noise
                             : (m_in - sr.median) / noise * RunScale(n, b, e);
        // Of runs as far out (host time's runs are judged by their median alone, so a run
        // with one usual instance more or less ties), the one whose instances that stand
        // out on their own explain the most time, and of those the shortest.
        double excess = 0;
        for (size_t i = b; i < e; ++i) {
          const double x = static_cast<double>(out->instances[seq[i]].time_ns) - sr.median;
          if (x >= o.min_z * noise) excess += x;
        }
        if (z > best_z ||
            (z == best_z &&
             (excess > best_excess || (excess == best_excess && e - b < best_end - best_begin)))) {
          best_z = z;
          best_median = sr.median;
          best_noise = noise;
          best_excess = excess;
          best_begin = b;
          best_end = e;
        }
      }
    }
    if (best_z < o.min_z) return;
    found[slot] = {&seq,        best_begin, best_end,
                   best_median, best_noise, best_end == n && best_begin <= in_first,
                   host_time};
  });
  // Per process, the identities (without the operator before them) whose deviation is
  // everything after the first unit.
  std::map<uint32_t, std::set<std::string>> first_unit_splits;
  for (size_t slot = 0; slot < order.size(); ++slot) {
    if (!found[slot].after_first_unit) continue;
    const auto& [family, process] = order[slot]->first;
    first_unit_splits[process].insert(WithoutContext(out->families[family].key));
  }
  for (const Found& f : found) {
    if (f.seq == nullptr) continue;
    const std::vector<uint32_t>& seq = *f.seq;
    // A first unit faster than everything after it in several identities of a process
    // (copies of several sizes, different kernels) is that unit's difference (it ran
    // before the caches, the allocator or the other streams reached their steady state),
    // not one family's fault that began with the second step and lasted to the end.
    const uint32_t process = r.nodes.process[out->instances[seq.front()].node];
    if (f.after_first_unit && first_unit_splits[process].size() >= 2) continue;
    for (size_t i = f.begin; i < f.end; ++i) {
      Instance& in = out->instances[seq[i]];
      const double excess = static_cast<double>(in.time_ns) - f.median;
      const double scale = f.host_time ? 1.0 : RunScale(seq.size(), f.begin, f.end);
      if (excess <= floor || in.time_ns < o.min_ratio * f.median ||
          excess < o.min_z * f.noise / scale)
        continue;
      in.source = PeerSource::kRest;
      in.peers = static_cast<uint32_t>(seq.size() - (f.end - f.begin));
      in.expected_ns = static_cast<int64_t>(std::llround(f.median));
      in.noise_ns = static_cast<int64_t>(std::llround(f.noise));
      in.z = static_cast<float>(excess / f.noise);
      in.evidence = true;
      in.excess_ns = in.time_ns - in.expected_ns;
    }
  }
}

// The launch calls of each operator compared with the same call made by the other
// operators (self-fit only): a launch costs the host about the same whoever makes it, so
// when every launch of one operator got slower (a slow path in its launch code, a lock, a
// hook), its own instances have no faster peers left, but the other operators' launches
// still show the usual cost. Per launch call name (and layer), each operator's median
// call time is compared with the other operators' medians: at least min_peers of them,
// their median as the expected time and their spread (with the noise floors) as the
// noise. An operator whose median is above that by the evidence margins has its
// instances that clear them on their own made evidence (PeerSource::kCallers). Only
// instances compared with their own family so far, and not yet evidence, are moved.
// The least number of operators making a launch call for FindSlowCallers to compare them.
constexpr size_t kMinCallerFamilies = 2;

void FindSlowCallers(const Options& o, Result* out) {
  // Launch-call families made by an operator, by (call pattern, layer).
  std::map<std::pair<std::string, Layer>, uint32_t> call_ids;
  std::vector<int64_t> call_of(out->families.size(), -1);
  for (uint32_t f = 0; f < out->families.size(); ++f) {
    const Family& family = out->families[f];
    if (family.measure != Measure::kCallTime || family.within.empty() ||
        ClassifyCall(family.name) != CallKind::kLaunch)
      continue;
    call_of[f] = call_ids.emplace(std::make_pair(family.pattern, family.layer), call_ids.size())
                     .first->second;
  }
  // call -> family -> its scored instances
  std::vector<std::map<uint32_t, std::vector<uint32_t>>> calls(call_ids.size());
  for (uint32_t k = 0; k < out->instances.size(); ++k) {
    const Instance& in = out->instances[k];
    if (call_of[in.family] < 0 || in.warmup) continue;
    calls[static_cast<size_t>(call_of[in.family])][in.family].push_back(k);
  }
  // Per layer, the scored launches of every launch API, by the operator that makes them:
  // the reference of an operator that alone makes its call.
  std::map<Layer, std::vector<std::pair<uint32_t, uint32_t>>> any_api;  // (family, instance)
  for (const auto& families : calls) {
    for (const auto& [fam, list] : families) {
      for (uint32_t k : list) any_api[out->families[fam].layer].push_back({fam, k});
    }
  }
  std::vector<double> v;
  // Marks as evidence the instances of `list` that clear the margins against `v` (the
  // expected time its median, the noise its spread) at `min_ratio` or more, when the
  // family's median does.
  auto against = [&](const std::vector<uint32_t>& list, double m, double min_ratio) {
    const Spread others = RobustSpread(v);
    const double noise = Noise(others, o);
    if (m < min_ratio * others.median || m - others.median < o.min_excess_ns ||
        m - others.median < o.min_z * noise)
      return;
    const uint32_t peers = static_cast<uint32_t>(v.size());
    for (uint32_t k : list) {
      Instance& in = out->instances[k];
      if (in.evidence || in.source == PeerSource::kNone) continue;
      const double excess = static_cast<double>(in.time_ns) - others.median;
      if (excess < o.min_excess_ns || in.time_ns < min_ratio * others.median ||
          excess < o.min_z * noise)
        continue;
      in.source = PeerSource::kCallers;
      in.peers = peers;
      in.expected_ns = static_cast<int64_t>(std::llround(others.median));
      in.noise_ns = static_cast<int64_t>(std::llround(noise));
      in.z = static_cast<float>(excess / noise);
      in.evidence = true;
      in.excess_ns = in.time_ns - in.expected_ns;
    }
  };
  for (const auto& families : calls) {
    // An operator alone in making its call: the other operators' launches, whatever their
    // API, pooled, at min_other_api_ratio.
    if (families.size() == 1) {
      const auto& [fam, list] = *families.begin();
      v.clear();
      for (uint32_t k : list) v.push_back(static_cast<double>(out->instances[k].time_ns));
      const double m = RobustSpread(v).median;
      v.clear();
      for (const auto& [other, k] : any_api[out->families[fam].layer]) {
        if (out->families[other].within != out->families[fam].within)
          v.push_back(static_cast<double>(out->instances[k].time_ns));
      }
      if (v.size() >= o.min_peers)
        against(list, m, std::max({o.min_ratio, o.min_callers_ratio, o.min_other_api_ratio}));
      continue;
    }
    // With min_peers other callers, their medians are the peers; with fewer (a small model
    // has few operators that launch), the instances of the other callers, pooled: a call
    // costs about the same whichever operator makes it; so are one other caller's (a model
    // whose GEMMs are its only users of a launch API, as hipBLASLt's launches on MI300).
    if (families.size() < kMinCallerFamilies) continue;
    const bool pooled = families.size() < o.min_peers + 1;
    std::map<uint32_t, double> median;
    for (const auto& [fam, list] : families) {
      v.clear();
      for (uint32_t k : list) v.push_back(static_cast<double>(out->instances[k].time_ns));
      median[fam] = RobustSpread(v).median;
    }
    for (const auto& [fam, list] : families) {
      v.clear();
      if (pooled) {
        for (const auto& [other, olist] : families) {
          if (other == fam) continue;
          for (uint32_t k : olist) v.push_back(static_cast<double>(out->instances[k].time_ns));
        }
        if (v.size() < o.min_peers) continue;
      } else {
        for (const auto& [other, m] : median) {
          if (other != fam) v.push_back(m);
        }
      }
      against(list, median[fam], std::max(o.min_ratio, o.min_callers_ratio));
    }
  }
}

}  // namespace

namespace {
// Operators as the top operators group families: pattern, layer, measure, maker, and a
// copy's size class.
std::string OperatorKey(const Family& f) {
  std::string k = f.pattern;
  k += '\x1f';
  k += LayerName(f.layer);
  k += '\x1f';
  k += MeasureName(f.measure);
  k += '\x1f';
  k += f.within;
  if (f.bytes_class != 0) k += '\x1f' + std::to_string(f.bytes_class);
  return k;
}
}  // namespace

// Per step kind (Result::group_kind): its steps and units, and per operator (NameLayerKey)
// how many of its steps ran it and, per unit that ran it, its instances and their time
// (sync costs left out: a wait, not the operator's work). Iterations and whole timelines
// ("" kind) keep their work per unit but no steps.
struct OperatorWork {
  uint32_t steps = 0;
  Model::Operator op;
  std::vector<double> count, time_ns;
};
struct KindWork {
  uint32_t steps = 0, units = 0;
  std::map<std::string, OperatorWork> ran;
};
using WorkByKind = std::map<std::string, KindWork>;

struct Model::Impl {
  std::unordered_map<std::string, FamilyPeers> families;  // by key text
  StepPeers steps;
  std::unordered_map<std::string, Habit> habits;  // by OperatorKey
  // The longest gap by which each rank was the last at each collective (StragglerKey).
  std::unordered_map<std::string, int64_t> straggler_gaps;
  std::unordered_set<std::string> operators;  // NameLayerKey of every family it ran
  WorkByKind by_kind;
};

namespace {
std::string NameLayerKey(const Family& f) {
  return f.pattern + '\x1f' + std::string(LayerName(f.layer));
}
// Adds a scored result's work to `by_kind`: which operators each of its steps ran, and
// each unit's instances and time per operator.
void AddWork(const Result& res, WorkByKind* by_kind) {
  // One id per operator (families of one name pattern and layer share it).
  std::unordered_map<std::string, uint32_t> id_of;
  std::vector<int32_t> family_id(res.families.size(), -1);
  std::vector<const Family*> first;
  for (size_t k = 0; k < res.families.size(); ++k) {
    const Family& f = res.families[k];
    if (f.layer == Layer::kStep) continue;
    const auto [it, added] = id_of.emplace(NameLayerKey(f), static_cast<uint32_t>(first.size()));
    if (added) first.push_back(&f);
    family_id[k] = static_cast<int32_t>(it->second);
  }
  std::vector<std::vector<uint32_t>> step_ran(res.group_units.size());
  // Per unit: operator id -> (instances, time).
  std::vector<std::map<uint32_t, std::pair<uint32_t, int64_t>>> unit_work(res.units.size());
  for (const Instance& in : res.instances) {
    if (family_id[in.family] < 0) continue;
    const auto id = static_cast<uint32_t>(family_id[in.family]);
    step_ran[res.group_of_unit[in.unit]].push_back(id);
    if (res.families[in.family].measure == Measure::kSyncCost) continue;
    auto& [count, time] = unit_work[in.unit][id];
    ++count;
    time += in.time_ns;
  }
  for (size_t g = 0; g < step_ran.size(); ++g) {
    // Iterations and whole timelines ("" kind) keep their work per unit (the expectation
    // of new work) but no steps.
    auto& kind = (*by_kind)[res.group_kind[g]];
    kind.units += static_cast<uint32_t>(res.group_units[g].size());
    for (const uint32_t u : res.group_units[g]) {
      for (const auto& [id, work] : unit_work[u]) {
        auto& ran = kind.ran[NameLayerKey(*first[id])];
        if (ran.op.pattern.empty())
          ran.op = Model::Operator{first[id]->name, first[id]->pattern, first[id]->layer};
        ran.count.push_back(work.first);
        ran.time_ns.push_back(static_cast<double>(work.second));
      }
    }
    if (res.group_kind[g].empty()) continue;
    ++kind.steps;
    std::vector<uint32_t>& ids = step_ran[g];
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    for (const uint32_t id : ids) {
      const Family& f = *first[id];
      auto& ran = kind.ran[NameLayerKey(f)];
      if (ran.steps++ == 0) ran.op = Model::Operator{f.name, f.pattern, f.layer};
    }
  }
}
// A straggler's rank (its pid when the trace has no ranks) and collective, so that the same
// rank late at the same collective in another trace of the deployment is recognised.
std::string StragglerKey(const Trace& t, const Reconstruction& r, const Straggler& s) {
  const ProcessInfo& p = t.processes[s.process];
  return (p.rank >= 0 ? "rank " + std::to_string(p.rank) : "pid " + std::to_string(p.pid)) + "|" +
         std::string(t.strings.Get(t.events.name[r.nodes.event[s.node]]));
}
}  // namespace
Model::Model() : impl_(std::make_unique<Impl>()) {}
Model::~Model() = default;
Model::Model(Model&&) noexcept = default;
Model& Model::operator=(Model&&) noexcept = default;
size_t Model::families() const { return impl_->families.size(); }
const Habit* Model::HabitOf(const Family& f) const {
  const auto it = impl_->habits.find(OperatorKey(f));
  return it == impl_->habits.end() ? nullptr : &it->second;
}
bool Model::Ran(const Family& f) const { return RanKey(NameLayerKey(f)); }
bool Model::RanKey(const std::string& name_layer_key) const {
  return impl_->operators.count(name_layer_key) != 0;
}
std::vector<Model::Operator> Model::EveryStepRan(const std::string& kind) const {
  std::vector<Operator> out;
  const auto it = impl_->by_kind.find(kind);
  if (kind.empty() || it == impl_->by_kind.end()) return out;
  for (const auto& [key, ran] : it->second.ran) {
    if (ran.steps == it->second.steps) out.push_back(ran.op);
  }
  return out;
}

bool Model::HasUnitsOf(const std::string& kind) const {
  const auto it = impl_->by_kind.find(kind);
  return it != impl_->by_kind.end() && it->second.units > 0;
}

namespace {
// `fitting`: the baseline being fitted scores its own traces (its operators are not all
// known yet, so none is new work).
Result Score(Prepared p, const Trace& trace, const Reconstruction& r, const Options& o,
             const Model* baseline, bool fitting = false);
}  // namespace

Model FitBaseline(const std::vector<std::pair<const Trace*, const Reconstruction*>>& traces,
                  const Options& options) {
  ProgressTask progress("modelling the baseline", 0);
  Model model;
  // Kept: each is scored against the finished model below.
  std::vector<Prepared> prepared;
  prepared.reserve(traces.size());
  for (const auto& [t, r] : traces) {
    prepared.push_back(Prepare(*t, *r, options));
    const Prepared& p = prepared.back();
    for (uint32_t k = 0; k < p.peers.size(); ++k) {
      const FamilyPeers& src = p.peers[k];
      if (src.all.empty()) continue;
      const std::string text = p.keys.KeyText(*t, k);
      const bool known = model.impl().families.count(text) != 0;
      FamilyPeers& dst = model.impl().families[text];
      dst.callers_mixed = known ? dst.callers_mixed && src.callers_mixed : src.callers_mixed;
      dst.all.insert(dst.all.end(), src.all.begin(), src.all.end());
      dst.occ.insert(dst.occ.end(), src.occ.begin(), src.occ.end());
      if (dst.by_occ.size() < src.by_occ.size()) dst.by_occ.resize(src.by_occ.size());
      for (size_t o = 0; o < src.by_occ.size(); ++o)
        dst.by_occ[o].insert(dst.by_occ[o].end(), src.by_occ[o].begin(), src.by_occ[o].end());
    }
    for (const auto& [kind, d] : p.steps.durations) {
      auto& dst = model.impl().steps.durations[kind];
      dst.insert(dst.end(), d.begin(), d.end());
    }
  }
  for (auto& [key, f] : model.impl().families) FinishPeers(f, 0);
  // The baseline's habits: its own instances scored against it.
  for (size_t i = 0; i < traces.size(); ++i) {
    const auto& [t, r] = traces[i];
    const Result res = Score(std::move(prepared[i]), *t, *r, options, &model, /*fitting=*/true);
    for (const Family& f : res.families) model.impl().operators.insert(NameLayerKey(f));
    AddWork(res, &model.impl().by_kind);
    // (operator, process) -> (start, ratio or 0)
    std::map<std::pair<std::string, uint32_t>, std::vector<std::pair<int64_t, double>>> seq;
    for (const Instance& in : res.instances) {
      if (in.source == PeerSource::kNone || in.warmup || in.consequence) continue;
      const double ratio =
          in.evidence && !in.shared && in.expected_ns > 0
              ? static_cast<double>(in.time_ns) / static_cast<double>(in.expected_ns)
              : 0.0;
      seq[{OperatorKey(res.families[in.family]), r->nodes.process[in.node]}].push_back(
          {r->nodes.start_ns[in.node], ratio});
    }
    for (const Straggler& s : res.stragglers) {
      int64_t& gap = model.impl().straggler_gaps[StragglerKey(*t, *r, s)];
      gap = std::max(gap, s.gap_ns);
    }
    for (auto& [where, list] : seq) {
      std::sort(list.begin(), list.end());
      auto& out = model.impl().habits[where.first].sequences;
      out.emplace_back();
      for (const auto& [start, ratio] : list) out.back().push_back(ratio);
    }
  }
  return model;
}

Result Localize(const Trace& trace, const Reconstruction& r, const Options& o,
                const Model* baseline) {
  Result out = Score(Prepare(trace, r, o), trace, r, o, baseline);
  if (baseline != nullptr) {
    // A rank that the healthy traces show last at the same collective by about as long (less
    // than the minimum effect more) is how this deployment runs (a rank that always does
    // more work before it, a slower node), not news: the stragglers are those the baseline
    // does not explain, among them a usual straggler that is now later still.
    const auto& known = baseline->impl().straggler_gaps;
    std::erase_if(out.stragglers, [&](const Straggler& s) {
      const auto it = known.find(StragglerKey(trace, r, s));
      return it != known.end() &&
             static_cast<double>(s.gap_ns) < o.min_ratio * static_cast<double>(it->second);
    });
  }
  return out;
}

namespace {
// Per node: whether it is a kernel launch call whose every kernel its process had already
// launched before it (from any operator). A launch's one-time cost is loading its kernel's
// module on the kernel's first launch; a launch of a kernel already loaded pays none, so it
// is no warm-up even as the first launch its operator makes (an operator the program calls
// once). Graph launches are left out: a graph's first launch uploads the graph.
std::vector<uint8_t> Relaunches(const Trace& trace, const Reconstruction& r) {
  const reconstruct::Nodes& n = r.nodes;
  const auto& ev = trace.events;
  std::unordered_map<StringId, bool> launch_name;
  auto is_launch = [&](size_t i) {
    if (!IsHostCall(ev.type[n.event[i]])) return false;
    const StringId name = ev.name[n.event[i]];
    auto it = launch_name.find(name);
    if (it == launch_name.end())
      it = launch_name.emplace(name, ClassifyCall(trace.strings.Get(name)) == CallKind::kLaunch)
               .first;
    return it->second;
  };
  // (process, kernel name) -> the earliest start of a launch call of it.
  std::unordered_map<uint64_t, int64_t> first_launch;
  auto key = [&](size_t kernel) {
    return (static_cast<uint64_t>(n.process[kernel]) << 32) | ev.name[n.event[kernel]];
  };
  std::vector<uint8_t> out(n.size(), 0);
  std::vector<size_t> launches;
  for (size_t i = 0; i < n.size(); ++i) {
    if (!is_launch(i)) continue;
    launches.push_back(i);
    for (uint32_t c = n.child_begin[i]; c < n.child_begin[i + 1]; ++c) {
      const uint32_t k = n.child_index[c];
      if (!IsGpuWork(ev.type[n.event[k]])) continue;
      auto [it, added] = first_launch.emplace(key(k), n.start_ns[i]);
      if (!added) it->second = std::min(it->second, n.start_ns[i]);
    }
  }
  for (size_t i : launches) {
    bool any = false, all_before = true;
    for (uint32_t c = n.child_begin[i]; c < n.child_begin[i + 1]; ++c) {
      const uint32_t k = n.child_index[c];
      if (!IsGpuWork(ev.type[n.event[k]])) continue;
      any = true;
      all_before = all_before && first_launch[key(k)] < n.start_ns[i];
    }
    out[i] = any && all_before;
  }
  return out;
}

// Scores the instances `p` holds (Localize; FitBaseline scores a baseline against itself).
// Marks the evidence that most operators around it share (teller/localize/shared.h): per
// process and measure, the scored instances in time order, operators as the top operators
// group them.
void MarkShared(const Reconstruction& r, Result* out) {
  std::unordered_map<std::string, uint32_t> ops;
  std::vector<uint32_t> op_of_family(out->families.size());
  for (size_t f = 0; f < out->families.size(); ++f) {
    op_of_family[f] =
        ops.emplace(OperatorKey(out->families[f]), static_cast<uint32_t>(ops.size())).first->second;
  }
  std::map<std::pair<uint32_t, Measure>, std::vector<uint32_t>> runs;
  for (uint32_t k = 0; k < out->instances.size(); ++k) {
    const Instance& in = out->instances[k];
    if (in.source == PeerSource::kNone || in.warmup || in.consequence) continue;
    runs[{r.nodes.process[in.node], out->families[in.family].measure}].push_back(k);
  }
  for (auto& [where, run] : runs) {
    std::stable_sort(run.begin(), run.end(), [&](uint32_t a, uint32_t b) {
      return r.nodes.start_ns[out->instances[a].node] < r.nodes.start_ns[out->instances[b].node];
    });
    std::vector<uint32_t> op(run.size());
    std::vector<uint8_t> deviating(run.size());
    for (size_t i = 0; i < run.size(); ++i) {
      const Instance& in = out->instances[run[i]];
      op[i] = op_of_family[in.family];
      deviating[i] = in.evidence;
    }
    const std::vector<uint8_t> shared = SharedDeviations(op, deviating);
    for (size_t i = 0; i < run.size(); ++i) out->instances[run[i]].shared = shared[i] != 0;
  }
}

// Marks the GPU evidence that ran beside work its family's usual instances ran without
// (teller/localize/shared.h, ContendedDeviations): per family measured by its GPU time, each
// scored instance's window is covered by each class of work on the other streams of its
// device. An evidence instance's window is its expected time from its start, so that a
// kernel slowed on its own, which lasts into work it would have missed, is judged by the
// time it should have taken.
void MarkContended(const Trace& trace, const Reconstruction& r, Result* out) {
  const Nodes& n = r.nodes;
  // The ConcurrentClass of a node's GPU work, -1 for anything else.
  auto class_of = [&](uint32_t node) -> int {
    const EventType t = trace.events.type[n.event[node]];
    ConcurrentClass cls;
    if (t == EventType::kMemcpy) {
      cls = ConcurrentClass::kCopy;
    } else if (t == EventType::kMemset) {
      cls = ConcurrentClass::kMemset;
    } else if (t == EventType::kKernel) {
      cls = n.layer[node] == Layer::kComm ? ConcurrentClass::kCommunication
                                          : ConcurrentClass::kCompute;
    } else {
      return -1;
    }
    return static_cast<int>(cls);
  };
  // Only the devices (process, device) that instances of a family with GPU-time evidence
  // not yet shared ran on need their lanes (its usual instances' cover is what the
  // evidence is judged against): most families of most traces deviate nowhere.
  auto scored = [&](const Instance& in) {
    return in.source != PeerSource::kNone && !in.warmup && !in.consequence &&
           out->families[in.family].measure == Measure::kGpuTime && class_of(in.node) >= 0;
  };
  std::vector<uint8_t> is_scored(out->instances.size(), 0);
  std::vector<uint8_t> deviating_family(out->families.size(), 0);
  for (uint32_t k = 0; k < out->instances.size(); ++k) {
    const Instance& in = out->instances[k];
    is_scored[k] = scored(in) ? 1 : 0;
    if (in.evidence && !in.shared && is_scored[k] != 0) deviating_family[in.family] = 1;
  }
  // The families to judge, their scored instances in order, and the devices they ran on.
  std::vector<std::vector<uint32_t>> by_family(out->families.size());
  std::set<std::pair<uint32_t, uint32_t>> wanted;
  for (uint32_t k = 0; k < out->instances.size(); ++k) {
    const Instance& in = out->instances[k];
    if (deviating_family[in.family] == 0 || is_scored[k] == 0) continue;
    by_family[in.family].push_back(k);
    wanted.insert({n.process[in.node], trace.events.device[n.event[in.node]]});
  }
  if (wanted.empty()) return;
  // Per (process, device): per (stream, class), the union of its work's intervals.
  using Spans = std::vector<std::pair<int64_t, int64_t>>;
  std::map<std::pair<uint32_t, uint32_t>, std::map<std::pair<uint32_t, int>, Spans>> lanes;
  for (uint32_t node = 0; node < n.size(); ++node) {
    const int cls = class_of(node);
    if (cls < 0 || n.end_ns[node] <= n.start_ns[node]) continue;
    const uint32_t e = n.event[node];
    const std::pair<uint32_t, uint32_t> device{n.process[node], trace.events.device[e]};
    if (wanted.count(device) == 0) continue;
    lanes[device][{trace.events.stream[e], cls}].push_back({n.start_ns[node], n.end_ns[node]});
  }
  for (auto& [device, by_lane] : lanes) {
    for (auto& [key, v] : by_lane) {
      std::sort(v.begin(), v.end());
      size_t w = 0;
      for (size_t i = 1; i < v.size(); ++i) {
        if (v[i].first <= v[w].second) {
          v[w].second = std::max(v[w].second, v[i].second);
        } else {
          v[++w] = v[i];
        }
      }
      v.resize(v.empty() ? 0 : w + 1);
    }
  }
  auto covered = [](const std::vector<std::pair<int64_t, int64_t>>& spans, int64_t from,
                    int64_t to) {
    int64_t sum = 0;
    auto it = std::lower_bound(spans.begin(), spans.end(), from,
                               [](const auto& span, int64_t t) { return span.second <= t; });
    for (; it != spans.end() && it->first < to; ++it)
      sum += std::min(to, it->second) - std::max(from, it->first);
    return sum;
  };
  for (size_t f = 0; f < by_family.size(); ++f) {
    const std::vector<uint32_t>& members = by_family[f];
    if (deviating_family[f] == 0) continue;
    std::vector<ConcurrentCover> cover(members.size());
    // Per instance and class: the stream whose work of that class covered most of it.
    std::vector<std::array<uint32_t, kConcurrentClasses>> cover_stream(members.size());
    std::vector<uint8_t> deviating(members.size());
    for (size_t i = 0; i < members.size(); ++i) {
      const Instance& in = out->instances[members[i]];
      deviating[i] = in.evidence && !in.shared;
      const uint32_t e = n.event[in.node];
      const int64_t from = n.start_ns[in.node];
      const int64_t length = deviating[i] != 0
                                 ? std::min(in.time_ns, std::max<int64_t>(1, in.expected_ns))
                                 : std::max<int64_t>(1, in.time_ns);
      cover[i].fill(0.0f);
      const auto found = lanes.find({n.process[in.node], trace.events.device[e]});
      if (found == lanes.end()) continue;
      for (const auto& [key, spans] : found->second) {
        const auto [stream, cls] = key;
        if (stream == trace.events.stream[e]) continue;
        const float share =
            static_cast<float>(covered(spans, from, from + length)) / static_cast<float>(length);
        if (share > cover[i][cls]) {
          cover[i][cls] = share;
          cover_stream[i][cls] = stream;
        }
      }
    }
    const std::vector<uint8_t> contended = ContendedDeviations(cover, deviating);
    for (size_t i = 0; i < members.size(); ++i) {
      if (contended[i] == 0) continue;
      Instance& in = out->instances[members[i]];
      in.shared = true;
      in.contended_by = contended[i];
      in.contended_stream = cover_stream[i][contended[i] - 1];
    }
  }
}

// A slowed device (docs/localization.md, "Shared deviations"): clocks lowered by power or
// heat, a degraded GPU, another process on it slow every kernel of a step on that device by
// a similar factor. Where kernels are short against the trace's resolution or their peers
// vary, few of them clear the evidence margins one by one, yet together they leave no doubt.
// Per unit and device, each kernel name's median time / expected is one vote (a fault of
// one kernel, however many its instances, is one name); the device is slowed when the
// median of its names' ratios is at least the minimum effect, at least that far above the
// other devices that ran the same engine step (else above the other units' devices, by
// min_z of their spread), and a sign test over its names says they are slower than their
// peers more often than faster by chance. Each of its kernels slower than its peers by at
// least the square root of that median ratio is then evidence shared with the operators
// around it: part of a slow time (SlowTimes), not a fault of its operator.
// With `host`, the same for the process's host (kHostDevice, InHostCell): CPU contention
// (other processes or threads on its cores, a throttled CPU) slows every operator's own
// time and every runtime call a little.
void MarkSlowDevices(const Trace& trace, const Reconstruction& r, const Options& o, bool host,
                     Result* out) {
  struct Cell {
    std::vector<double> log_ratios;
    std::vector<uint32_t> instances;
    std::map<std::string_view, std::vector<double>> by_name;
    double median = 0;  // of its names' medians
    uint64_t up = 0, down = 0;
  };
  std::map<std::pair<uint32_t, uint32_t>, Cell> cells;  // (unit, device)
  for (uint32_t k = 0; k < out->instances.size(); ++k) {
    const Instance& in = out->instances[k];
    const Family& f = out->families[in.family];
    // Kernels: lowered clocks slow the SMs; copies move at the link's pace. Only kernels
    // whose launch configuration the trace records: without it, a kernel of a larger step
    // (more tokens, another rank's larger batch) has the smaller ones as peers, and a
    // larger step looks like a slower device.
    const uint32_t event = r.nodes.event[in.node];
    if (host ? !InHostCell(f)
             : f.measure != Measure::kGpuTime || f.layer != Layer::kGpu ||
                   trace.events.type[event] != EventType::kKernel ||
                   trace.events.signature[event] == 0)
      continue;
    if (in.source == PeerSource::kNone || in.warmup || in.consequence || in.expected_ns <= 0 ||
        in.time_ns <= 0)
      continue;
    Cell& c = cells[{in.unit, host ? kHostDevice : trace.events.device[event]}];
    c.log_ratios.push_back(std::log(static_cast<double>(in.time_ns) / in.expected_ns));
    c.instances.push_back(k);
    c.by_name[f.pattern].push_back(c.log_ratios.back());
  }
  // The cells with enough kernels to judge, per engine step.
  std::map<uint32_t, std::vector<Cell*>> by_group;
  std::vector<std::pair<std::pair<uint32_t, uint32_t>, Cell*>> judged;  // in (unit, device) order
  std::vector<double> medians;
  for (auto& [where, c] : cells) {
    if (c.instances.size() < kSlowDeviceInstances || c.by_name.size() < kSlowTimeFamilies) continue;
    judged.push_back({where, &c});
    std::vector<double> names;
    for (auto& [name, v] : c.by_name) {
      const double m = MedianInPlace(v);
      names.push_back(m);
      c.up += m > 0;
      c.down += m < 0;
    }
    c.median = MedianInPlace(names);
    medians.push_back(c.median);
    by_group[out->group_of_unit[where.first]].push_back(&c);
  }
  // Steps of one device: judged against the other units' devices; too few of those to say
  // what a healthy one looks like, against its peers' expectation alone (a ratio of 1).
  double center = 0, spread = 0;
  if (medians.size() >= o.min_position_units) {
    const Spread s = RobustSpread(medians);
    center = s.median;
    spread = 1.4826 * s.mad;
  }
  const double noise = std::max(spread, std::log1p(o.noise_rel_floor));
  const double effect = std::log(o.min_ratio);
  const double sign_bar =
      kSlowDeviceSignLog10 + std::log10(static_cast<double>(std::max<size_t>(1, judged.size())));
  for (auto& [where, cell] : judged) {
    Cell& c = *cell;
    if (c.median < effect) continue;
    // A step whose every device is slower than its peers is a larger step (more tokens, a
    // longer sequence), not a slower device: compared with the devices that ran it.
    std::vector<double> others;
    for (const Cell* d : by_group[out->group_of_unit[where.first]]) {
      if (d != &c) others.push_back(d->median);
    }
    if (!others.empty() ? c.median - MedianInPlace(others) < effect
                        : c.median - center < o.min_z * noise)
      continue;
    // Every judged cell is one more chance of a healthy one passing by luck (a run of
    // hundreds of steps on several ranks): the bar rises with their count (Bonferroni).
    if (-BinomialTailLog10(c.up + c.down, c.up, 0.5) < sign_bar) continue;
    out->slow_devices.push_back(
        {where.first, where.second, std::exp(c.median), static_cast<uint32_t>(c.by_name.size())});
    for (size_t i = 0; i < c.instances.size(); ++i) {
      Instance& in = out->instances[c.instances[i]];
      // Evidence on its own margins is part of the slowdown too, unless it is slower than
      // the square of the device's ratio: then it is a fault of its own on a slow device.
      if (c.log_ratios[i] < 0.5 * c.median || (in.evidence && c.log_ratios[i] > 2 * c.median))
        continue;
      in.evidence = true;
      in.shared = true;
      in.excess_ns = in.time_ns - in.expected_ns;
    }
  }
}

// Operators the baseline never ran (docs/localization.md, "Operators the baseline never
// ran") have no peers there. Their work in a unit stands in for what the unit did not do:
// per layer, their time is compared with what the instances missing from the unit, of the
// operators the baseline's units of its kind ran, took there (each missing instance at its
// operator's median time per instance). A kernel run in place of another as long takes no
// extra time; run twice as long, the difference is its excess; with nothing missing, all
// of its time is. Instances of work that clears the evidence margins become evidence
// (PeerSource::kReplaced), each with its share of the expectation. `fresh` marks the new
// instances; `usual_work` is the baseline's work, which the expectation comes from;
// `op_key` is each family's NameLayerKey. Returns per unit the largest excess of such work
// on one layer.
std::vector<int64_t> ChargeNewWork(const WorkByKind& usual_work, const std::vector<uint8_t>& fresh,
                                   const std::vector<std::string>& op_key, const Options& o,
                                   Result* out) {
  std::vector<int64_t> unit_excess(out->units.size(), 0);
  std::map<std::pair<uint32_t, Layer>, std::vector<uint32_t>> work;  // (unit, layer) -> instances
  for (uint32_t k = 0; k < out->instances.size(); ++k) {
    const Instance& in = out->instances[k];
    const Family& family = out->families[in.family];
    if (fresh[k] != 0 && family.layer != Layer::kStep && family.measure != Measure::kSyncCost &&
        !in.warmup && !in.consequence)
      work[{in.unit, family.layer}].push_back(k);
  }
  if (work.empty()) return unit_excess;
  // Instances per (unit, operator), in the units with new work.
  std::vector<uint8_t> with_work(out->units.size(), 0);
  for (const auto& [where, list] : work) with_work[where.first] = 1;
  std::map<std::pair<uint32_t, std::string_view>, uint32_t> count;
  for (const Instance& in : out->instances) {
    if (with_work[in.unit] != 0 && out->families[in.family].measure != Measure::kSyncCost)
      ++count[{in.unit, op_key[in.family]}];
  }
  // Per (kind, layer), found once: each operator's usual instances per unit (the median
  // over the kind's units, those that did not run it counting none) and its time per
  // instance.
  struct Usual {
    std::string_view key;
    double instances = 0;
    Spread per_instance;
  };
  std::map<std::pair<const KindWork*, Layer>, std::vector<Usual>> usual_of;
  auto usual_in = [&](const KindWork& kind, Layer layer) -> const std::vector<Usual>& {
    const auto [it, added] = usual_of.try_emplace({&kind, layer});
    if (!added) return it->second;
    for (const auto& [key, ran] : kind.ran) {
      if (ran.op.layer != layer || ran.count.empty()) continue;
      std::vector<double> counts = ran.count;
      counts.resize(std::max<size_t>(counts.size(), kind.units), 0.0);
      std::vector<double> per_instance(ran.count.size());
      for (size_t i = 0; i < per_instance.size(); ++i)
        per_instance[i] = ran.time_ns[i] / ran.count[i];
      it->second.push_back({key, MedianInPlace(counts), RobustSpread(per_instance)});
    }
    return it->second;
  };
  for (const auto& [where, list] : work) {
    const auto& [unit, layer] = where;
    // A step of a kind the baseline has none of: it cannot say what the step should run.
    const auto kind = usual_work.find(out->group_kind[out->group_of_unit[unit]]);
    if (kind == usual_work.end() || kind->second.units == 0) continue;
    double expected = 0, variance = 0;
    uint32_t missing_operators = 0;
    for (const Usual& op : usual_in(kind->second, layer)) {
      const auto here = count.find({unit, op.key});
      const double missing =
          op.instances - (here == count.end() ? 0.0 : static_cast<double>(here->second));
      if (missing < 1) continue;
      expected += missing * op.per_instance.median;
      variance += std::pow(missing * op.per_instance.mad, 2);
      ++missing_operators;
    }
    int64_t time = 0;
    for (const uint32_t k : list) time += out->instances[k].time_ns;
    const double noise = Noise(Spread{expected, std::sqrt(variance)}, o);
    const double excess = static_cast<double>(time) - expected;
    if (excess < static_cast<double>(o.min_excess_ns) ||
        static_cast<double>(time) < o.min_ratio * expected || excess < o.min_z * noise)
      continue;
    for (const uint32_t k : list) {
      Instance& in = out->instances[k];
      const double share =
          time > 0 ? static_cast<double>(in.time_ns) / static_cast<double>(time) : 0;
      in.source = PeerSource::kReplaced;
      in.peers = missing_operators;
      in.expected_ns = static_cast<int64_t>(std::llround(expected * share));
      in.noise_ns = static_cast<int64_t>(std::llround(noise * share));
      in.z = static_cast<float>(excess / noise);
      in.evidence = true;
      in.excess_ns = in.time_ns - in.expected_ns;
    }
    unit_excess[unit] = std::max(unit_excess[unit], static_cast<int64_t>(excess));
  }
  return unit_excess;
}

Result Score(Prepared p, const Trace& trace, const Reconstruction& r, const Options& options,
             const Model* baseline, bool fitting) {
  Result& out = p.res;
  out.tick_ns = TraceTick(p.raw);
  out.group_kind = p.group_kind;
  const Options& o = options;
  // Families of this trace, in order of first appearance.
  std::vector<int32_t> family_of(p.keys.size(), -1);
  std::vector<const FamilyPeers*> base_peers(p.keys.size(), nullptr);
  std::vector<uint32_t> fam(p.raw.size());
  for (size_t i = 0; i < p.raw.size(); ++i) {
    int32_t& f = family_of[p.key[i]];
    if (f < 0) {
      f = static_cast<int32_t>(out.families.size());
      Family family;
      family.key = p.keys.KeyText(trace, p.key[i]);
      const uint32_t node = p.raw[i].node;
      family.name = std::string(trace.strings.Get(trace.events.name[r.nodes.event[node]]));
      family.pattern = family.key.substr(0, family.key.find('\x1f'));
      family.layer = r.nodes.layer[node];
      family.measure = p.raw[i].measure;
      const uint32_t within = p.keys.WithinOf(p.key[i]);
      if (within != Keys::kNone) family.within = p.keys.PatternText(within);
      family.bytes_class = p.keys.BytesClassOf(p.key[i]);
      if (family.bytes_class != 0) family.bytes = trace.events.bytes[r.nodes.event[node]];
      if (baseline != nullptr) {
        const auto it = baseline->impl().families.find(family.key);
        if (it != baseline->impl().families.end()) {
          base_peers[p.key[i]] = &it->second;
          family.from_baseline = true;
        }
      }
      std::vector<double> v = p.peers[p.key[i]].all;
      family.median_ns = RobustSpread(v).median;
      out.families.push_back(std::move(family));
    }
    fam[i] = static_cast<uint32_t>(f);
    ++out.families[static_cast<uint32_t>(f)].count;
  }
  // Expected time and noise of every instance from its peers, cached per (family,
  // occurrence) and per family.
  struct Reference {
    double median = 0, mad = 0, q90 = 0;
    uint32_t count = 0;
    PeerSource source = PeerSource::kNone;
    bool positions = false;   // from positions or layer phases, not the whole family
    bool same_place = false;  // the baseline's one instance at the very position
  };
  std::unordered_map<uint64_t, Reference> position_cache;
  std::unordered_map<uint64_t, Reference> family_cache;  // key * 2 + (baseline ? 1 : 0)
  std::unordered_map<uint64_t, Reference> phase_cache;   // that << 8 | phase
  auto summarize = [](const std::vector<double>& values, PeerSource source) {
    std::vector<double> v = values;
    const double q90 = Quantile90InPlace(v);
    const Spread s = RobustSpread(v);
    return Reference{s.median, s.mad, q90, static_cast<uint32_t>(values.size()), source};
  };
  // The phase of this trace's instances in a baseline family's repeating structure: this
  // trace's sequence of the family aligned to the baseline's phases.
  std::unordered_map<uint32_t, std::vector<uint32_t>> base_phase;  // by key
  auto phase_of = [&](size_t i, const FamilyPeers& peers, bool from_base) -> uint32_t {
    const uint32_t key = p.key[i];
    if (!from_base) return peers.phase[p.pos[i]];
    auto it = base_phase.find(key);
    if (it == base_phase.end()) {
      const std::vector<double> typical = PhaseTypical(peers.all, peers.phase, peers.period);
      it = base_phase.emplace(key, AlignPhases(p.peers[key].all, typical)).first;
    }
    return it->second[p.pos[i]];
  };
  // With a baseline that has an instance's position but too few units to give it
  // min_peers peers there (a trace of two iterations, a profiler window of three steps),
  // the baseline's time at the very position is still the best expectation: the same
  // kernel, the same layer, the same iteration. Its noise is how far this trace's times
  // stray from the baseline's at their positions, measured over every instance of the same
  // measure that has its position in an identity laid out alike in both (the same number
  // of occurrences per unit): a robust spread of the log ratios, which a few slowed
  // instances do not move.
  auto position_median = [](const std::vector<double>& values) {
    if (values.size() == 1) return values[0];
    std::vector<double> v = values;
    return RobustSpread(v).median;
  };
  // The baseline's median at each of its positions, found once: every instance at a
  // position asks for it, and a position of a long baseline holds one time per unit.
  std::unordered_map<const std::vector<double>*, double> paired_medians;
  auto paired_median = [&](const std::vector<double>& at) {
    const auto [it, fresh] = paired_medians.try_emplace(&at, 0.0);
    if (fresh) it->second = position_median(at);
    return it->second;
  };
  auto paired = [&](uint32_t key, uint32_t occ) -> const std::vector<double>* {
    const FamilyPeers* bp = base_peers[key];
    if (bp == nullptr || bp->by_occ.size() != p.peers[key].by_occ.size() ||
        occ >= bp->by_occ.size() || bp->by_occ[occ].empty())
      return nullptr;
    return &bp->by_occ[occ];
  };
  std::unordered_map<uint8_t, double> paired_noise;  // by measure: relative
  if (baseline != nullptr) {
    std::unordered_map<uint8_t, std::vector<double>> log_ratios;
    for (size_t i = 0; i < p.raw.size(); ++i) {
      const std::vector<double>* at = paired(p.key[i], p.occ[i]);
      if (at == nullptr) continue;
      log_ratios[static_cast<uint8_t>(p.raw[i].measure)].push_back(
          std::log(std::max(1.0, static_cast<double>(p.raw[i].time_ns)) /
                   std::max(1.0, paired_median(*at))));
    }
    for (auto& [measure, v] : log_ratios) {
      if (v.size() >= o.min_peers) paired_noise[measure] = 1.4826 * RobustSpread(v).mad;
    }
  }
  // Self-fit, a trace of two or three iterations (a profiler window of a few steps, a few
  // ranks of one step): an instance's position is held by too few units for positions to
  // be peers, and its whole family mixes positions that cost different times (a layer's
  // first GEMM, the head). The same position in the other units is still the best
  // expectation, and its noise is how far the units stray from each other at their
  // positions, from log(time / the other units' median there) over every instance of the
  // measure whose position two or more units hold: the larger of the robust spread and the
  // upper tail (the 90th percentile as a normal's 1.2816 sigma), since some healthy
  // iterations differ far more than most (data-dependent kernels, host pauses), and a few
  // slowed instances move neither.
  auto others_at = [&](size_t i, std::vector<double>* v) {
    const std::vector<double>& at = p.peers[p.key[i]].by_occ[p.occ[i]];
    *v = at;
    if (p.res.units[p.raw[i].unit].OutsideIterations()) return;  // not among them
    const auto self = std::find(v->begin(), v->end(), static_cast<double>(p.raw[i].time_ns));
    if (self != v->end()) v->erase(self);
  };
  // Only for an identity laid out alike in the units that hold it (as many occurrences in
  // each: the units holding its last occurrence are those holding its first): the k-th
  // call of an allocator that runs when its cache misses, or of anything else done a
  // varying number of times, is not the k-th of another unit.
  auto few_units = [&](size_t i) {
    const FamilyPeers& f = p.peers[p.key[i]];
    return p.occ[i] < f.by_occ.size() && f.by_occ[p.occ[i]].size() >= 2 &&
           f.by_occ[p.occ[i]].size() < o.min_position_units &&
           f.by_occ.front().size() == f.by_occ.back().size();
  };
  std::unordered_map<uint8_t, double> few_units_noise;  // by measure: relative
  if (baseline == nullptr) {
    std::unordered_map<uint8_t, std::vector<double>> log_ratios;
    std::vector<double> v;
    for (size_t i = 0; i < p.raw.size(); ++i) {
      if (!few_units(i)) continue;
      others_at(i, &v);
      if (v.empty()) continue;
      log_ratios[static_cast<uint8_t>(p.raw[i].measure)].push_back(
          std::log(std::max(1.0, static_cast<double>(p.raw[i].time_ns)) /
                   std::max(1.0, position_median(v))));
    }
    for (auto& [measure, lr] : log_ratios) {
      if (lr.size() < o.min_peers) continue;
      const double q90 = Quantile90InPlace(lr);
      const Spread s = RobustSpread(lr);
      few_units_noise[measure] = std::max(1.4826 * s.mad, (q90 - s.median) / 1.2816);
    }
  }
  auto reference = [&](size_t i) -> Reference {
    const uint32_t key = p.key[i], occ = p.occ[i];
    const uint64_t pk = (static_cast<uint64_t>(key) << 32) | occ;
    const auto hit = position_cache.find(pk);
    if (hit != position_cache.end()) return hit->second;
    Reference ref;
    bool cacheable = true;  // position and family references hold for every instance of
                            // (key, occurrence); a phase depends on the instance
    for (int pass = 0; pass < 2 && ref.source == PeerSource::kNone; ++pass) {
      const bool from_base = pass == 0;
      const FamilyPeers* peers = from_base ? base_peers[key] : &p.peers[key];
      if (peers == nullptr) continue;
      const uint32_t phase = peers->period > 1 ? phase_of(i, *peers, from_base) : 0;
      if (occ < peers->by_occ.size() && peers->by_occ[occ].size() >= o.min_peers &&
          peers->by_occ[occ].size() >= o.min_position_units) {
        ref = summarize(peers->by_occ[occ],
                        from_base ? PeerSource::kBaseline : PeerSource::kPositions);
        ref.positions = true;
      } else if (peers->period > 1 && peers->by_phase[phase].size() >= o.min_peers) {
        cacheable = false;
        const uint64_t lk = ((static_cast<uint64_t>(key) * 2 + (from_base ? 1 : 0)) << 8) | phase;
        const auto known = phase_cache.find(lk);
        if (known != phase_cache.end()) {
          ref = known->second;
        } else {
          ref = summarize(peers->by_phase[phase],
                          from_base ? PeerSource::kBaseline : PeerSource::kLayers);
          ref.positions = true;
          phase_cache.emplace(lk, ref);
        }
      } else if (from_base && paired(key, occ) != nullptr &&
                 paired_noise.count(static_cast<uint8_t>(p.raw[i].measure)) != 0) {
        // The baseline has this very position, in too few units to give it peers there:
        // its time at the position (below) is a better expectation than its whole family,
        // which mixes the positions (the layers' differently sized pools of one kernel).
        break;
      } else if (peers->all.size() >= o.min_peers) {
        const uint64_t fk = static_cast<uint64_t>(key) * 2 + (from_base ? 1 : 0);
        const auto known = family_cache.find(fk);
        if (known != family_cache.end()) {
          ref = known->second;
        } else {
          ref = summarize(peers->all, from_base ? PeerSource::kBaseline : PeerSource::kFamily);
          family_cache.emplace(fk, ref);
        }
      }
    }
    if (ref.source == PeerSource::kNone) {
      const auto noise = paired_noise.find(static_cast<uint8_t>(p.raw[i].measure));
      const std::vector<double>* at = paired(key, occ);
      if (at != nullptr && noise != paired_noise.end()) {
        ref.median = paired_median(*at);
        ref.mad = noise->second * ref.median / 1.4826;
        ref.q90 = ref.median;
        ref.count = static_cast<uint32_t>(at->size());
        ref.source = PeerSource::kBaseline;
        ref.positions = true;
        ref.same_place = at->size() == 1;
      }
    }
    if (baseline == nullptr &&
        (ref.source == PeerSource::kNone || ref.source == PeerSource::kFamily) && few_units(i)) {
      const auto noise = few_units_noise.find(static_cast<uint8_t>(p.raw[i].measure));
      std::vector<double> v;
      others_at(i, &v);
      if (noise != few_units_noise.end() && !v.empty()) {
        ref.median = position_median(v);
        ref.mad = noise->second * ref.median / 1.4826;
        ref.q90 = ref.median;
        ref.count = static_cast<uint32_t>(v.size());
        ref.source = PeerSource::kPositions;
        ref.positions = true;
        cacheable = false;  // the other units' times differ for each unit's instance
      }
    }
    // The baseline's own time at this position, when it has the position but too few
    // steps to use positions as peers: a deviation the baseline shows at the same place
    // (a slow first GEMM of a layer, a GC pause in the same op) is not news.
    const FamilyPeers* bp = base_peers[key];
    if (ref.source == PeerSource::kBaseline && bp != nullptr && occ < bp->by_occ.size() &&
        !bp->by_occ[occ].empty() && bp->by_occ[occ].size() < o.min_position_units) {
      std::vector<double> v = bp->by_occ[occ];
      ref.median = std::max(ref.median, RobustSpread(v).median);
    }
    if (cacheable) position_cache.emplace(pk, ref);
    return ref;
  };
  // The first instance of a family on a process pays one-time costs (module loading on a
  // kernel's first launch, autotuning, allocator growth, lazy initialization): warm-up,
  // not a fault; except a launch of kernels already loaded (Relaunches).
  // Only where the program may be warming up: in a process's first unit, unless that unit
  // is a step the trace numbers above 0 (a profiler window that starts at ProfilerStep#12
  // was recorded after the program's first iterations). A `teller run` trace (it has the
  // run's manifest) records every process from its start, whatever its steps' numbers (the
  // Python hooks count from 1).
  std::vector<uint8_t> warmup(p.raw.size(), 0);
  {
    const std::vector<uint8_t> relaunch = Relaunches(trace, r);
    std::unordered_map<uint32_t, uint32_t> first_unit = FirstUnits(out.units);
    std::unordered_map<uint64_t, bool> seen;
    const bool from_start = trace.run.known;
    for (size_t i = 0; i < p.raw.size(); ++i) {
      const Unit& unit = out.units[p.raw[i].unit];
      const uint64_t k = (static_cast<uint64_t>(unit.process) << 32) | fam[i];
      const bool first = seen.emplace(k, true).second;
      const bool late_window = !from_start && unit.step >= 0 && r.steps[unit.step].number > 0;
      // The first iteration counts as the first unit after a prologue (set-up work).
      const bool first_unit_here = first_unit[unit.process] == p.raw[i].unit || unit.iteration == 0;
      // A script without step markers whose work repeats: its first iteration is its
      // warm-up pass (benchmarks run one; PyTorch's first pass grows the allocator and
      // autotunes convolutions), and its host side is slower throughout, not only at each
      // operator's first call. Its GPU work is not: a kernel takes its time in every pass.
      // The host work before the iterations and after them (allocating and freeing buffers
      // of every size, loading modules) happens once and has no peers that cost the same.
      // So is a process's first step in a trace recorded from its start: its first pass.
      const bool once = unit.iteration == 0 || unit.OutsideIterations() ||
                        (from_start && first_unit[unit.process] == p.raw[i].unit);
      const bool warmup_pass = once && p.raw[i].measure != Measure::kGpuTime &&
                               p.raw[i].measure != Measure::kTransferTime;
      warmup[i] =
          (first_unit_here && !late_window && first && relaunch[p.raw[i].node] == 0) || warmup_pass;
    }
  }
  out.instances.reserve(p.raw.size());
  ProgressTask progress("scoring", p.raw.size(), ProgressUnit::kItems, "operator instances");
  for (size_t i = 0; i < p.raw.size(); ++i) {
    if (i % 65536 == 0) progress.Set(i);
    Instance in;
    in.node = p.raw[i].node;
    in.family = fam[i];
    in.unit = p.raw[i].unit;
    in.occurrence = p.occ[i];
    in.time_ns = p.raw[i].time_ns;
    in.wait_ns = p.waits.wait_ns[in.node];
    in.waited_for_process = p.waits.late_process[in.node];
    Reference ref = reference(i);
    // A first instance against the baseline's instances at its very position: the
    // baseline's first unit paid the same one-time costs there, so it is the expectation
    // (a first pass compared with the baseline's first pass), and not warm-up.
    if (warmup[i] != 0 && ref.source == PeerSource::kBaseline && ref.positions && !ref.same_place) {
      const std::vector<double>* at = paired(p.key[i], p.occ[i]);
      if (at != nullptr && at->size() < o.min_position_units &&
          paired_noise.count(static_cast<uint8_t>(p.raw[i].measure)) != 0) {
        const double rel = ref.median > 0 ? ref.mad / ref.median : 0.0;
        ref.median = std::max(1.0, at->front());
        ref.mad = rel * ref.median;
        ref.q90 = ref.median;
        ref.same_place = true;
      }
    }
    in.source = ref.source;
    in.peers = ref.count;
    in.expected_ns = static_cast<int64_t>(std::llround(ref.median));
    // Host framework time compared only with its whole family (no repeating steps, layers
    // or baseline positions to pin it down) is heavy-tailed: the op's work depends on sizes
    // the trace may not record, and the host pauses. There the family's own upper tail
    // (its 90th percentile, as a normal's 1.2816 sigma) is part of the noise.
    const bool loose = out.families[fam[i]].measure == Measure::kOwnTime &&
                       (ref.source == PeerSource::kFamily ||
                        (ref.source == PeerSource::kBaseline && !ref.positions));
    const double tail = loose ? (ref.q90 - ref.median) / 1.2816 : 0.0;
    const double noise = std::max(Noise(Spread{ref.median, ref.mad}, o), tail);
    in.noise_ns = static_cast<int64_t>(std::llround(noise));
    const double excess = static_cast<double>(in.time_ns) - ref.median;
    in.z = static_cast<float>(excess / noise);
    // Against the baseline's one instance at the very position, a first instance meets a
    // first instance: the one-time costs are on both sides.
    in.warmup = warmup[i] != 0 && !ref.same_place;
    in.evidence = ref.source != PeerSource::kNone && !in.warmup && excess >= o.min_excess_ns &&
                  static_cast<double>(in.time_ns) >= o.min_ratio * ref.median &&
                  excess >= o.min_z * noise;
    // In whole ns, so that excess = time - expected holds exactly in the report.
    in.excess_ns = in.evidence ? in.time_ns - in.expected_ns : 0;
    // A collective whose partners are not in the trace mostly waits for them: slower than
    // its peers is then a consequence of something on a rank the trace does not have.
    in.consequence = in.evidence && p.raw[i].unpaired_collective;
    out.instances.push_back(in);
  }
  // Sustained slowdowns of a small family: when a fault lasts for most of a family's
  // instances, their median is the slowed time and no instance stands out from it. A
  // contiguous run of instances (in time, on one process) that is slower than the rest of
  // the family by the evidence margins is then the deviation, the rest its peers.
  if (baseline == nullptr) {
    FindSlowSegments(r, o, &out);
    FindSlowCallers(o, &out);
  }
  std::vector<int64_t> new_work(out.units.size(), 0);
  if (baseline != nullptr && !fitting) {
    std::vector<std::string> op_key(out.families.size());
    std::vector<uint8_t> never_ran(out.families.size()), fresh(out.instances.size());
    for (size_t f = 0; f < never_ran.size(); ++f) {
      op_key[f] = NameLayerKey(out.families[f]);
      never_ran[f] = !baseline->RanKey(op_key[f]);
    }
    for (size_t k = 0; k < fresh.size(); ++k) fresh[k] = never_ran[out.instances[k].family];
    new_work = ChargeNewWork(baseline->impl().by_kind, fresh, op_key, o, &out);
  }
  MarkShared(r, &out);
  MarkContended(trace, r, &out);
  MarkSlowDevices(trace, r, o, /*host=*/false, &out);
  MarkSlowDevices(trace, r, o, /*host=*/true, &out);
  // Engine steps: evidence, root excess, healthy spread and score.
  const size_t groups = out.group_units.size();
  out.suspicious.assign(groups, {});
  out.waits.assign(groups, {});
  out.unseen_waits.assign(groups, {});
  out.group_excess_ns.assign(groups, 0);
  out.group_spread_ns.assign(groups, 0);
  out.group_duration_ns = p.group_duration;
  out.group_score.assign(groups, 0.0f);
  // A step's root excess is what its most costly evidence family explains on one rank:
  // a fault concentrates in a family (one kernel, one call, one collective), while the
  // natural tails of a healthy trace are spread thinly over many families and would
  // add up to a large sum in a long step.
  std::unordered_map<uint64_t, int64_t> family_excess;  // (unit, family) -> excess
  for (uint32_t k = 0; k < out.instances.size(); ++k) {
    const Instance& in = out.instances[k];
    const uint32_t g = out.group_of_unit[in.unit];
    if (in.consequence) {
      out.unseen_waits[g].push_back(k);
    } else if (in.evidence) {
      out.suspicious[g].push_back(k);
      family_excess[(static_cast<uint64_t>(in.unit) << 32) | in.family] += in.excess_ns;
    }
    if (in.wait_ns > 0 && in.waited_for_process >= 0) out.waits[g].push_back(k);
  }
  std::vector<int64_t> unit_excess(out.units.size(), 0), unit_total_excess(out.units.size(), 0);
  for (const auto& [key, x] : family_excess) {
    int64_t& e = unit_excess[static_cast<uint32_t>(key >> 32)];
    e = std::max(e, x);
    unit_total_excess[static_cast<uint32_t>(key >> 32)] += x;
  }
  // A slow time on one device is a root of its own: its kernels together explain its
  // summed excess, though no family alone stands out.
  out.slow_times = SlowTimes(trace, r, out);
  for (const SlowTime& s : out.slow_times)
    unit_excess[s.unit] = std::max(unit_excess[s.unit], s.excess_ns);
  // New work on one layer is one root, whichever families (contexts) its instances fall in.
  for (size_t u = 0; u < unit_excess.size(); ++u)
    unit_excess[u] = std::max(unit_excess[u], new_work[u]);
  // Healthy step durations per kind: the baseline's when given, else this trace's.
  std::unordered_map<std::string, Spread> step_spread;
  std::unordered_map<std::string, size_t> step_count;
  for (uint32_t g = 0; g < groups; ++g) {
    const std::string& kind = p.group_kind[g];
    if (step_spread.count(kind)) continue;
    const StepPeers& table = baseline != nullptr && baseline->impl().steps.durations.count(kind)
                                 ? baseline->impl().steps
                                 : p.steps;
    std::vector<double> d = table.durations.at(kind);
    step_count[kind] = d.size();
    step_spread[kind] = RobustSpread(d);
  }
  for (uint32_t g = 0; g < groups; ++g) {
    int64_t excess = 0;
    for (uint32_t u : out.group_units[g]) excess = std::max(excess, unit_excess[u]);
    const Spread& s = step_spread[p.group_kind[g]];
    const double typical = std::max(s.median, static_cast<double>(p.group_duration[g]));
    // Many peer steps measure their spread well; with few (a trace of one or two
    // profiler steps, a whole timeline) only the conservative floor is trusted.
    const double floor = step_count[p.group_kind[g]] >= o.min_steps_for_spread
                             ? o.step_rel_floor_measured
                             : o.step_rel_floor;
    const double spread = std::max(1.4826 * s.mad, floor * typical);
    out.group_excess_ns[g] = excess;
    out.group_spread_ns[g] = static_cast<int64_t>(spread);
    const double x = spread > 0 ? static_cast<double>(excess) / spread : 0;
    out.group_score[g] = static_cast<float>(x / (x + o.step_scale));
  }
  // Stragglers: a collective whose other ranks waited for one late rank alone far longer
  // than such gaps are in this trace (arrival jitter is normal).
  std::vector<Straggler> candidates;
  std::unordered_map<uint32_t, uint32_t> unit_of_node;  // collective kernels -> unit
  for (const Instance& in : out.instances) {
    if (in.wait_ns > 0 || p.waits.transfer_ns[in.node] >= 0) unit_of_node.emplace(in.node, in.unit);
  }
  // A straggler holds up every other rank alone: the gap between its start and the
  // second-latest rank's is what all the others waited for it. Ranks that are late
  // together (one slow node) or arrive spread out (their work differs) have small gaps.
  std::vector<double> gaps;
  for (const auto& nodes : p.waits.groups) {
    std::vector<double> waits;
    uint32_t late = nodes.front();
    for (uint32_t x : nodes) {
      if (p.waits.wait_ns[x] == 0) late = x;
    }
    int64_t second = INT64_MIN;
    for (uint32_t x : nodes) {
      if (x == late) continue;
      waits.push_back(static_cast<double>(p.waits.wait_ns[x]));
      second = std::max(second, r.nodes.start_ns[x]);
    }
    if (waits.empty()) continue;
    const double gap = static_cast<double>(r.nodes.start_ns[late] - second);
    gaps.push_back(gap);
    std::vector<double> w = waits;
    const double median_wait = RobustSpread(w).median;
    if (gap < static_cast<double>(o.min_excess_ns)) continue;
    Straggler s;
    s.process = r.nodes.process[late];
    s.node = late;
    s.late_ns = static_cast<int64_t>(median_wait);
    s.gap_ns = static_cast<int64_t>(gap);
    s.waiting = static_cast<uint32_t>(waits.size());
    // The engine step of the late rank's kernel.
    const auto at = unit_of_node.find(late);
    s.group = at == unit_of_node.end() ? UINT32_MAX : out.group_of_unit[at->second];
    if (s.group != UINT32_MAX) candidates.push_back(s);
  }
  std::vector<double> sorted_gaps = gaps;
  const double usual = RobustSpread(sorted_gaps).median;
  std::sort(gaps.begin(), gaps.end());
  double gap_sum = 0;
  for (double g : gaps) gap_sum += g;
  for (Straggler& s : candidates) {
    const double gap = static_cast<double>(s.gap_ns);
    if (gap < o.min_z * std::max(usual, static_cast<double>(o.noise_abs_floor_ns))) continue;
    // How unlikely a gap this large is among the other collectives' gaps: their own
    // frequency of gaps as large (with half a collective of prior), and beyond the largest
    // of them an exponential tail of their mean gap. Natural pauses that hold up a rank now
    // and then make each other unsurprising; a gap beyond all of them does not.
    const size_t others = gaps.size() - 1;
    const size_t at_least =
        static_cast<size_t>(gaps.end() - std::lower_bound(gaps.begin(), gaps.end(), gap)) - 1;
    // The largest other gap: the second largest when this one is the largest.
    const double top =
        at_least > 0 ? gaps.back() : (gaps.size() >= 2 ? gaps[gaps.size() - 2] : 0.0);
    const double mean = std::max(others > 0 ? (gap_sum - gap) / static_cast<double>(others) : 0.0,
                                 static_cast<double>(o.noise_abs_floor_ns));
    const double tail = 0.5 * std::exp(-std::max(0.0, gap - top) / mean);
    s.suspicion =
        -std::log10((static_cast<double>(at_least) + tail) / static_cast<double>(others + 1));
    // A late rank whose own work in the step does not account for its lateness started
    // late or idled: what the others waited for it is the step's root excess (else its
    // slow work is, and scores the step already). Judged against the step's healthy spread
    // like any excess.
    const auto at = unit_of_node.find(s.node);
    if (at != unit_of_node.end() && 2 * unit_total_excess[at->second] < s.gap_ns) {
      s.unexplained = true;
      const Unit& late = out.units[at->second];
      std::vector<double> starts;
      for (uint32_t u : out.group_units[s.group]) {
        if (u != at->second && out.units[u].process != late.process)
          starts.push_back(static_cast<double>(out.units[u].start_ns));
      }
      if (!starts.empty()) {
        s.late_start_ns =
            std::max<int64_t>(0, late.start_ns - static_cast<int64_t>(RobustSpread(starts).median));
      }
      int64_t& excess = out.group_excess_ns[s.group];
      if (s.gap_ns > excess) {
        excess = s.gap_ns;
        const double spread = static_cast<double>(out.group_spread_ns[s.group]);
        const double x = spread > 0 ? static_cast<double>(excess) / spread : 0;
        out.group_score[s.group] = static_cast<float>(x / (x + o.step_scale));
      }
    }
    out.stragglers.push_back(s);
  }
  std::sort(out.stragglers.begin(), out.stragglers.end(),
            [](const Straggler& a, const Straggler& b) {
              return a.gap_ns != b.gap_ns ? a.gap_ns > b.gap_ns : a.late_ns > b.late_ns;
            });
  return std::move(out);
}
}  // namespace

}  // namespace teller::localize
