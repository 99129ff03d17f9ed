#include "teller/diagnose/failures.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "teller/core/json_writer.h"
#include "teller/logs/signatures.h"

namespace teller::diagnose {
namespace {

constexpr const char* kError = "error";
constexpr const char* kWarning = "warning";
// A log message quoted in a finding is cut here: enough to search for it, short enough
// for one terminal line.
constexpr size_t kMaxExcerptBytes = 240;
// Host calls and GPU operations listed as "the last ones before the end" of a process.
constexpr size_t kLastOps = 3;
// Groups of unmatched ERROR/CRITICAL lines reported one by one; the rest become one
// summary finding, so that a noisy log gives a few findings, not hundreds.
constexpr size_t kMaxTemplateFindings = 8;
// A Python traceback whose exception line has not come after this many lines of the same
// file and process is closed without one (it was cut, or its lines were not a traceback).
constexpr size_t kMaxTracebackLines = 400;
// Frames of a traceback quoted in a finding (the innermost ones, where it was raised).
constexpr size_t kTracebackFrames = 3;

// ---- Error lines of logs --------------------------------------------------------------
// What a line reports comes from the log signatures (share/teller/log_signatures.rules,
// logs::SignatureSet): the first rule a line matches names its signature; lines of one
// signature form one finding per trace.
constexpr int kNoPattern = logs::SignatureSet::kNoSignature;

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && s.substr(0, prefix.size()) == prefix;
}
bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}
bool IsIdentStart(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; }
bool IsIdentChar(char c) { return IsIdentStart(c) || (c >= '0' && c <= '9'); }

// The exception line that ends a Python traceback: "Name" or "Name: text", Name a dotted
// identifier whose last part ends like an exception class ("RuntimeError",
// "torch.OutOfMemoryError", "KeyboardInterrupt", "SystemExit"). Source lines of the frames
// ("raise RuntimeError(...)", "else:") never have that shape. Returns the name or "".
std::string_view ExceptionName(std::string_view m) {
  if (m.empty() || !IsIdentStart(m[0])) return {};
  size_t i = 0;
  while (i < m.size() && (IsIdentChar(m[i]) || m[i] == '.')) ++i;
  if (i < m.size() && !(m[i] == ':' && (i + 1 == m.size() || m[i + 1] == ' '))) return {};
  const std::string_view name = m.substr(0, i);
  const size_t dot = name.rfind('.');
  const std::string_view last = dot == std::string_view::npos ? name : name.substr(dot + 1);
  for (std::string_view end : {"Error", "Exception", "Exit", "Interrupt", "Warning", "Failure"}) {
    if (EndsWith(last, end)) return name;
  }
  return {};
}

// Cut to kMaxExcerptBytes on a UTF-8 character boundary.
std::string Excerpt(std::string_view s) {
  if (s.size() <= kMaxExcerptBytes) return std::string(s);
  size_t n = kMaxExcerptBytes;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return std::string(s.substr(0, n)) + "...";
}

// A message with its variable parts masked, so that lines differing only in numbers, ids
// or addresses group together: every whitespace-separated token holding a digit becomes
// "<*>" (the usual first step of log template mining).
std::string Template(std::string_view m) {
  std::string out;
  size_t i = 0;
  while (i < m.size()) {
    if (m[i] == ' ' || m[i] == '\t') {
      if (!out.empty() && out.back() != ' ') out += ' ';
      ++i;
      continue;
    }
    size_t j = i;
    bool digit = false;
    while (j < m.size() && m[j] != ' ' && m[j] != '\t') digit |= (m[j] >= '0' && m[j] <= '9'), ++j;
    if (digit) {
      out += "<*>";
    } else {
      out.append(m.substr(i, j - i));
    }
    i = j;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

std::string BaseName(std::string_view path) {
  const size_t slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

std::string FormatNs(int64_t ns) {
  char buf[48];
  const double v = static_cast<double>(ns);
  if (ns < 1000) {
    std::snprintf(buf, sizeof(buf), "%" PRId64 " ns", ns);
  } else if (ns < 1'000'000) {
    std::snprintf(buf, sizeof(buf), "%.1f us", v / 1e3);
  } else if (ns < 1'000'000'000) {
    std::snprintf(buf, sizeof(buf), "%.2f ms", v / 1e6);
  } else {
    std::snprintf(buf, sizeof(buf), "%.2f s", v / 1e9);
  }
  return buf;
}

std::string Who(int rank, int64_t pid) {
  std::string s = "process " + std::to_string(pid);
  if (rank >= 0) s += " (rank " + std::to_string(rank) + ")";
  return s;
}

const char* SignalName(int sig) {
  switch (sig) {
    case 1:
      return "SIGHUP";
    case 2:
      return "SIGINT";
    case 3:
      return "SIGQUIT";
    case 4:
      return "SIGILL";
    case 5:
      return "SIGTRAP";
    case 6:
      return "SIGABRT";
    case 7:
      return "SIGBUS";
    case 8:
      return "SIGFPE";
    case 9:
      return "SIGKILL";
    case 11:
      return "SIGSEGV";
    case 13:
      return "SIGPIPE";
    case 14:
      return "SIGALRM";
    case 15:
      return "SIGTERM";
    case 24:
      return "SIGXCPU";
    case 25:
      return "SIGXFSZ";
    default:
      return nullptr;
  }
}

// Signals by which someone asked the process to stop: the run did not fail by itself, so
// the finding is a warning. Every other fatal signal is an error.
bool IsStopRequest(int sig) { return sig == 1 || sig == 2 || sig == 13 || sig == 15; }

std::string SignalMeaning(int sig) {
  switch (sig) {
    case 11:
      return "SIGSEGV: the process touched memory it does not own, a bug in native code (an "
             "extension, a library, the CUDA driver) or a stack overflow.";
    case 7:
      return "SIGBUS: a memory access the hardware could not complete (a truncated "
             "memory-mapped file, a misaligned access, exhausted /dev/shm).";
    case 4:
      return "SIGILL: the CPU met an instruction it cannot run (a binary built for another "
             "CPU, or corrupted code).";
    case 8:
      return "SIGFPE: an arithmetic fault in native code (an integer division by zero).";
    case 6:
      return "SIGABRT: the process aborted itself: a failed assertion, std::terminate after "
             "an uncaught C++ exception, or a fatal-error handler (PyTorch's NCCL watchdog "
             "takes a process down this way).";
    case 9:
      return "SIGKILL: killed from outside without a chance to clean up: the kernel's "
             "out-of-memory killer (host memory; dmesg says so), a job scheduler or a user.";
    case 1:
    case 2:
    case 15:
      return std::string(SignalName(sig)) +
             ": asked to stop from outside (a user, a job scheduler's time limit, a "
             "supervisor); the program did not fail by itself, unless it hung first.";
    default:
      return "a fatal signal ended the process.";
  }
}

// ---- What each process was doing at the end of its trace -------------------------------
struct ProcessEnd {
  bool any = false;
  int64_t end_ns = std::numeric_limits<int64_t>::min();
  std::vector<uint32_t> open;  // nodes of pushes closed at the end (kEventSynthetic)
  std::vector<uint32_t> last_calls, last_gpu;  // newest first, at most kLastOps
};

void KeepNewest(std::vector<uint32_t>& list, uint32_t node, const reconstruct::Nodes& nodes) {
  auto newer = [&](uint32_t a, uint32_t b) {
    return nodes.end_ns[a] != nodes.end_ns[b] ? nodes.end_ns[a] > nodes.end_ns[b] : a > b;
  };
  if (list.size() == kLastOps && !newer(node, list.back())) return;
  list.insert(std::upper_bound(list.begin(), list.end(), node, newer), node);
  if (list.size() > kLastOps) list.pop_back();
}

std::vector<ProcessEnd> ProcessEnds(const Trace& trace, const reconstruct::Reconstruction& r) {
  std::vector<ProcessEnd> ends(trace.processes.size());
  const reconstruct::Nodes& nodes = r.nodes;
  const EventTable& ev = trace.events;
  for (uint32_t n = 0; n < nodes.size(); ++n) {
    const uint32_t p = nodes.process[n];
    if (p >= ends.size()) continue;
    ProcessEnd& pe = ends[p];
    pe.any = true;
    pe.end_ns = std::max(pe.end_ns, nodes.end_ns[n]);
    const uint32_t e = nodes.event[n];
    const EventType t = ev.type[e];
    if (t == EventType::kPush && (ev.flags[e] & kEventSynthetic)) pe.open.push_back(n);
    if (IsHostCall(t)) KeepNewest(pe.last_calls, n, nodes);
    if (IsGpuWork(t)) KeepNewest(pe.last_gpu, n, nodes);
  }
  for (ProcessEnd& pe : ends) {
    std::sort(pe.open.begin(), pe.open.end(), [&](uint32_t a, uint32_t b) {
      const uint32_t ta = ev.thread[nodes.event[a]], tb = ev.thread[nodes.event[b]];
      if (ta != tb) return ta < tb;
      return nodes.depth[a] != nodes.depth[b] ? nodes.depth[a] < nodes.depth[b] : a < b;
    });
  }
  return ends;
}

std::string NodeName(const Trace& trace, const reconstruct::Nodes& nodes, uint32_t n) {
  const std::string_view name = trace.strings.Get(trace.events.name[nodes.event[n]]);
  return name.empty() ? std::string("[empty name]") : std::string(name);
}

// The deepest open range and the chain of open ranges of its thread, outermost first:
// "step 3 > forward > attention".
uint32_t InnermostOpen(const reconstruct::Nodes& nodes, const ProcessEnd& pe) {
  uint32_t best = pe.open.front();
  for (uint32_t n : pe.open) {
    if (nodes.depth[n] > nodes.depth[best] ||
        (nodes.depth[n] == nodes.depth[best] && nodes.start_ns[n] > nodes.start_ns[best])) {
      best = n;
    }
  }
  return best;
}

std::string OpenChain(const Trace& trace, const reconstruct::Nodes& nodes, const ProcessEnd& pe) {
  const uint32_t inner = InnermostOpen(nodes, pe);
  const uint32_t thread = trace.events.thread[nodes.event[inner]];
  std::string chain;
  for (uint32_t n : pe.open) {
    if (trace.events.thread[nodes.event[n]] != thread) continue;
    if (!chain.empty()) chain += " > ";
    chain += NodeName(trace, nodes, n);
  }
  return chain;
}

std::vector<std::string> EndDetails(const Trace& trace, const reconstruct::Nodes& nodes,
                                    const ProcessEnd& pe) {
  std::vector<std::string> d;
  const EventTable& ev = trace.events;
  for (uint32_t n : pe.open) {
    d.push_back("open range: " + NodeName(trace, nodes, n) + " (thread " +
                std::to_string(ev.thread[nodes.event[n]]) + ", opened " +
                FormatNs(pe.end_ns - nodes.start_ns[n]) + " before the end, never closed)");
  }
  for (uint32_t n : pe.last_calls) {
    d.push_back("last host call: " + NodeName(trace, nodes, n) + " (thread " +
                std::to_string(ev.thread[nodes.event[n]]) + ", ended " +
                FormatNs(pe.end_ns - nodes.end_ns[n]) + " before the end)");
  }
  for (uint32_t n : pe.last_gpu) {
    const uint32_t e = nodes.event[n];
    d.push_back("last GPU work: " + std::string(EventTypeName(ev.type[e])) + " " +
                NodeName(trace, nodes, n) + " (device " + std::to_string(ev.device[e]) +
                ", stream " + std::to_string(ev.stream[e]) + ", ended " +
                FormatNs(pe.end_ns - nodes.end_ns[n]) + " before the end)");
  }
  return d;
}

// ---- Log findings ------------------------------------------------------------------------
struct Group {
  int pattern = kNoPattern;
  std::string what;
  std::string why;
  FaultCategory category = FaultCategory::kSchedulingSoftware;
  bool error = false;
  bool is_template = false;  // unmatched ERROR/CRITICAL lines of one template
  uint32_t count = 0;
  uint32_t first = 0, last = 0;  // log rows
  std::vector<int> ranks;
  std::vector<std::string> traceback;  // frames and exception of the first traceback
};

class LogScan {
 public:
  LogScan(const Trace& trace, const logs::SignatureSet& signatures)
      : trace_(trace), logs_(trace.logs), signatures_(signatures) {}

  std::vector<Finding> Run() {
    consumed_.assign(logs_.size(), false);
    FindTracebacks();
    for (uint32_t row = 0; row < logs_.size(); ++row) {
      if (consumed_[row]) continue;
      const std::string_view m = trace_.strings.Get(logs_.message[row]);
      const int p = signatures_.Match(m);
      if (p != kNoPattern) {
        AddPattern(p, row, PatternSeverityIsError(row));
      } else if (logs_.level[row] == LogLevel::kError || logs_.level[row] == LogLevel::kCritical) {
        Group& g = GroupFor("t:" + Template(m));
        if (g.count == 0) {
          g.what = std::string(LogLevelName(logs_.level[row])) + " line";
          g.why =
              "The program logged this at ERROR or CRITICAL level. No rule of Teller's names "
              "its cause, so it is a warning: read it when the errors above do not explain "
              "the failure.";
          g.is_template = true;
        }
        Add(g, row);
      }
    }
    return Findings();
  }

 private:
  // Lines at DEBUG or INFO level that match a pattern are what the program chose to call
  // information (advice text, an error it handled): warnings, not errors.
  bool PatternSeverityIsError(uint32_t row) const {
    const LogLevel l = logs_.level[row];
    return !(l == LogLevel::kDebug || l == LogLevel::kInfo);
  }

  Group& GroupFor(const std::string& key) {
    auto [it, inserted] = index_.emplace(key, groups_.size());
    if (inserted) {
      groups_.emplace_back();
      keys_.push_back(key);
    }
    return groups_[it->second];
  }

  int RankOf(uint32_t row) const {
    const uint32_t p = logs_.process[row];
    return p < trace_.processes.size() ? trace_.processes[p].rank : -1;
  }

  void Add(Group& g, uint32_t row) {
    if (g.count == 0) g.first = row;
    g.last = row;
    ++g.count;
    const int rank = RankOf(row);
    if (rank >= 0 && std::find(g.ranks.begin(), g.ranks.end(), rank) == g.ranks.end()) {
      g.ranks.push_back(rank);
    }
  }

  Group& AddPattern(int p, uint32_t row, bool error) {
    const logs::Signature& sig = signatures_.at(static_cast<size_t>(p));
    Group& g = GroupFor("p:" + sig.id);
    if (g.count == 0) {
      g.pattern = p;
      g.what = sig.title;
      g.why = sig.why;
      g.category = sig.category;
    }
    g.error |= error && !sig.warning_only;
    Add(g, row);
    return g;
  }

  // Python tracebacks: "Traceback (most recent call last):", frames, then the exception
  // line. Lines of one traceback come from one file and one process; other processes may
  // interleave their lines (vLLM prints every process into one log), so each (file,
  // process) has its own open traceback. Every line of a traceback is consumed by it: a
  // frame's source line ("raise RuntimeError(\"Engine core initialization failed\")") is
  // no finding of its own.
  void FindTracebacks() {
    struct Open {
      std::vector<uint32_t> rows;
    };
    std::map<std::pair<StringId, uint32_t>, Open> open;
    for (uint32_t row = 0; row < logs_.size(); ++row) {
      const std::string_view m = trace_.strings.Get(logs_.message[row]);
      const auto key = std::make_pair(logs_.file[row], logs_.process[row]);
      if (StartsWith(m, "Traceback (most recent call last)")) {
        if (auto it = open.find(key); it != open.end()) Close(it->second.rows, kNoRow);
        open[key].rows = {row};
        continue;
      }
      // Lines that only link or continue an exception already reported: the chaining
      // sentences between two tracebacks and c10's C++ backtrace after the exception line.
      if (StartsWith(m, "During handling of the above exception") ||
          StartsWith(m, "The above exception was the direct cause") ||
          StartsWith(m, "Exception raised from ") || StartsWith(m, "frame #")) {
        consumed_[row] = true;
      }
      auto it = open.find(key);
      if (it == open.end()) continue;
      it->second.rows.push_back(row);
      if (!ExceptionName(m).empty()) {
        Close(it->second.rows, row);
        open.erase(it);
      } else if (it->second.rows.size() >= kMaxTracebackLines) {
        // Too long to be a traceback still: give the lines back to the line rules.
        open.erase(it);
      }
    }
    for (auto& [key, o] : open) Close(o.rows, kNoRow);
  }

  static constexpr uint32_t kNoRow = std::numeric_limits<uint32_t>::max();

  void Close(const std::vector<uint32_t>& rows, uint32_t exception_row) {
    for (uint32_t r : rows) consumed_[r] = true;
    // The innermost frames, where it was raised: "File ..." lines and the source line after
    // each.
    std::vector<std::string> excerpt;
    std::vector<size_t> frame_at;
    for (size_t i = 1; i < rows.size(); ++i) {
      if (StartsWith(trace_.strings.Get(logs_.message[rows[i]]), "File \"")) frame_at.push_back(i);
    }
    const size_t from =
        frame_at.size() > kTracebackFrames ? frame_at[frame_at.size() - kTracebackFrames] : 1;
    for (size_t i = from; i < rows.size(); ++i) {
      if (rows[i] == exception_row) break;
      const std::string_view m = trace_.strings.Get(logs_.message[rows[i]]);
      if (m.find_first_not_of("^~ ") == std::string_view::npos) continue;  // caret markers
      excerpt.push_back("  " + Excerpt(m));
      if (excerpt.size() >= 2 * kTracebackFrames) break;
    }
    if (exception_row == kNoRow) {
      Group& g = GroupFor("py:<cut>");
      if (g.count == 0) {
        g.what = "Python traceback without its exception line";
        g.why =
            "A Python traceback started but its exception line never came: the process died "
            "or its output was cut while it was printing the error.";
        g.error = true;
        g.traceback = std::move(excerpt);
      }
      Add(g, rows.front());
      return;
    }
    const std::string_view m = trace_.strings.Get(logs_.message[exception_row]);
    excerpt.push_back(Excerpt(m));
    const int p = signatures_.Match(m);
    Group* g = nullptr;
    if (p != kNoPattern) {
      // The exception names a known failure (torch.OutOfMemoryError, "RuntimeError: CUDA
      // error: an illegal memory access was encountered"): the finding is that failure.
      g = &AddPattern(p, exception_row, true);
    } else {
      const std::string name(ExceptionName(m));
      g = &GroupFor("py:" + name);
      if (g->count == 0) {
        g->what = "Python exception " + name;
        g->why =
            "An exception ended a Python call stack (the frames where it was raised are "
            "below). Uncaught, it stops the thread or the process; caught and logged, the "
            "request or task that raised it failed.";
        g->error = true;
      }
      Add(*g, exception_row);
    }
    if (g->traceback.empty()) g->traceback = std::move(excerpt);
  }

  std::string Where(uint32_t row) const {
    return BaseName(trace_.strings.Get(logs_.file[row])) + ":" + std::to_string(logs_.line[row]);
  }

  Finding ToFinding(const Group& g) const {
    Finding f;
    f.category = g.category;
    f.kind = "log_error";
    f.severity = g.error ? kError : kWarning;
    const uint32_t row = g.first;
    f.rank = RankOf(row);
    const uint32_t p = logs_.process[row];
    f.pid = p < trace_.processes.size() ? trace_.processes[p].pid : 0;
    f.ts_ns = logs_.ts_ns[row];
    f.source = std::string(trace_.strings.Get(logs_.file[row]));
    f.line = logs_.line[row];
    const std::string_view first = trace_.strings.Get(logs_.message[row]);
    f.title = g.what;
    if (g.is_template) f.title += ": " + Excerpt(Template(first));  // the template says what
    if (g.pattern >= 0 && signatures_.at(static_cast<size_t>(g.pattern)).id == "xid") {
      // "NVRM: Xid (PCI:0000:3b:00): 79, ..." -> the code, which says what failed.
      const size_t at = first.find("): ");
      if (at != std::string_view::npos) {
        size_t e = at + 3;
        while (e < first.size() && first[e] >= '0' && first[e] <= '9') ++e;
        if (e > at + 3) f.title += " " + std::string(first.substr(at + 3, e - at - 3));
      }
    }
    if (f.rank >= 0) f.title += " on rank " + std::to_string(f.rank);
    if (g.count > 1) f.title += " (" + std::to_string(g.count) + " lines)";
    f.explanation = g.why;
    f.details.push_back("first at " + Where(row) + ": " + Excerpt(first));
    if (g.count > 1) {
      f.details.push_back("last at " + Where(g.last) + ": " +
                          Excerpt(trace_.strings.Get(logs_.message[g.last])));
    }
    if (g.ranks.size() > 1) {
      std::vector<int> ranks = g.ranks;
      std::sort(ranks.begin(), ranks.end());
      std::string s = "ranks:";
      for (int r : ranks) s += " " + std::to_string(r);
      f.details.push_back(s);
    }
    if (!g.traceback.empty()) {
      f.details.push_back("traceback (innermost frames):");
      for (const std::string& l : g.traceback) f.details.push_back(l);
    }
    return f;
  }

  std::vector<Finding> Findings() const {
    std::vector<Finding> out;
    std::vector<size_t> template_groups;
    for (size_t i = 0; i < groups_.size(); ++i) {
      if (groups_[i].is_template) {
        template_groups.push_back(i);
      } else {
        out.push_back(ToFinding(groups_[i]));
      }
    }
    // The most frequent templates one by one, the rest in one summary.
    std::stable_sort(template_groups.begin(), template_groups.end(),
                     [&](size_t a, size_t b) { return groups_[a].count > groups_[b].count; });
    for (size_t k = 0; k < template_groups.size() && k < kMaxTemplateFindings; ++k) {
      out.push_back(ToFinding(groups_[template_groups[k]]));
    }
    if (template_groups.size() > kMaxTemplateFindings) {
      Finding f;
      f.kind = "log_error";
      f.severity = kWarning;
      uint64_t lines = 0;
      uint32_t first = std::numeric_limits<uint32_t>::max();
      for (size_t k = kMaxTemplateFindings; k < template_groups.size(); ++k) {
        const Group& g = groups_[template_groups[k]];
        lines += g.count;
        first = std::min(first, g.first);
        if (f.details.size() < 5) {
          f.details.push_back(std::to_string(g.count) + " x " +
                              Excerpt(Template(trace_.strings.Get(logs_.message[g.first]))));
        }
      }
      f.title = std::to_string(lines) + " more ERROR/CRITICAL lines of " +
                std::to_string(template_groups.size() - kMaxTemplateFindings) + " other kinds";
      f.explanation =
          "Further error lines that no rule names, grouped by template; the most frequent "
          "are listed.";
      f.ts_ns = logs_.ts_ns[first];
      f.source = std::string(trace_.strings.Get(logs_.file[first]));
      f.line = logs_.line[first];
      out.push_back(std::move(f));
    }
    return out;
  }

  const Trace& trace_;
  const LogTable& logs_;
  const logs::SignatureSet& signatures_;
  std::vector<bool> consumed_;
  std::vector<Group> groups_;
  std::vector<std::string> keys_;
  std::unordered_map<std::string, size_t> index_;
};

// The log finding that most likely caused a run's failure: errors only; a specific cause
// (memory, kernel, communication, driver) before the generic software ones (engine errors
// and Python exceptions usually report the specific cause's consequence); then the
// earliest.
const Finding* LikelyCause(const std::vector<Finding>& logs) {
  const Finding* best = nullptr;
  auto rank = [](const Finding& f) {
    return f.category == FaultCategory::kSchedulingSoftware ? 1 : 0;
  };
  auto time = [](const Finding& f) {
    return f.ts_ns == LogTable::kNoTime ? std::numeric_limits<int64_t>::max() : f.ts_ns;
  };
  for (const Finding& f : logs) {
    if (f.severity != kError) continue;
    if (best == nullptr || rank(f) < rank(*best) ||
        (rank(f) == rank(*best) && time(f) < time(*best))) {
      best = &f;
    }
  }
  return best;
}

int OrderGroup(const Finding& f) {
  if (f.kind == "signal" || f.kind == "exit_status" || f.kind == "unfinished") return 0;
  if (f.kind == "log_error") return 1;
  return 2;
}

}  // namespace

std::vector<Finding> FindFailures(const Trace& trace, const reconstruct::Reconstruction* r) {
  return FindFailures(trace, r, *logs::SignatureSet::BuiltIn());
}

std::vector<Finding> FindFailures(const Trace& trace, const reconstruct::Reconstruction* r,
                                  const logs::SignatureSet& signatures) {
  std::vector<Finding> logs = LogScan(trace, signatures).Run();
  std::vector<Finding> out;
  std::vector<ProcessEnd> ends;
  if (r != nullptr) ends = ProcessEnds(trace, *r);

  // The run: how the recorded command ended.
  const Trace::RunInfo& run = trace.run;
  const bool died = run.known && run.finished && run.signal != 0;
  const bool failed_exit = run.known && run.finished && run.signal == 0 && run.exit_code != 0;
  const bool unfinished = run.known && !run.finished;
  const bool run_failed = (died && !IsStopRequest(run.signal)) || failed_exit || unfinished;
  uint32_t dead = std::numeric_limits<uint32_t>::max();  // the command's process
  if (died || failed_exit || unfinished) {
    for (uint32_t p = 0; p < trace.processes.size(); ++p) {
      if (run.pid != 0 && trace.processes[p].pid == run.pid) dead = p;
    }
    if (dead == std::numeric_limits<uint32_t>::max()) {
      // The launcher's child wrote no trace of its own (a shell that forked the program):
      // with a single traced process, that process is the program.
      uint32_t traced = 0, only = 0;
      for (uint32_t p = 0; p < ends.size(); ++p) {
        if (ends[p].any) ++traced, only = p;
      }
      if (traced == 1) dead = only;
    }
    Finding f;
    f.pid = run.pid;
    if (dead < trace.processes.size()) {
      f.pid = trace.processes[dead].pid;
      f.rank = trace.processes[dead].rank;
    }
    const std::string who = f.pid != 0 ? Who(f.rank, f.pid) : std::string("the command");
    const std::string cmd = run.command.empty() ? "" : " (`" + run.command + "`)";
    if (died) {
      f.kind = "signal";
      f.severity = IsStopRequest(run.signal) ? kWarning : kError;
      const char* name = SignalName(run.signal);
      f.title = who + " died of signal " + std::to_string(run.signal) +
                (name ? std::string(" (") + name + ")" : std::string());
      f.explanation = "The command" + cmd + " was ended by " + SignalMeaning(run.signal);
    } else if (failed_exit) {
      f.kind = "exit_status";
      f.severity = kError;
      f.title = who + " exited with status " + std::to_string(run.exit_code);
      if (run.exit_code == 126 || run.exit_code == 127) {
        f.explanation =
            "The command" + cmd + " could not be started (126: not executable, 127: not found).";
      } else {
        f.explanation =
            "The command" + cmd + " reported a failure through its exit status (0 means success).";
      }
    } else {
      f.kind = "unfinished";
      f.severity = kError;
      f.title = "the run of " + who + " never finished";
      f.explanation =
          "The run manifest has no end: `teller run` itself was stopped (killed, "
          "or the machine went down) before the command" +
          cmd + " ended, so how it ended is unknown.";
    }
    if (dead < ends.size()) {
      const ProcessEnd& pe = ends[dead];
      if (pe.any) f.ts_ns = pe.end_ns;
      if (!pe.open.empty()) {
        f.explanation += " Its trace ends inside " + OpenChain(trace, r->nodes, pe) +
                         ": the ranges it was in when it stopped.";
        if (r->nodes.layer[InnermostOpen(r->nodes, pe)] == Layer::kComm) {
          f.category = FaultCategory::kCommunication;
          f.explanation += " The innermost is communication: it was in a collective.";
        }
      }
      if (pe.any) f.details = EndDetails(trace, r->nodes, pe);
      if (pe.any && run.end_ns > pe.end_ns && (died || failed_exit)) {
        f.details.push_back("its last traced event is " + FormatNs(run.end_ns - pe.end_ns) +
                            " before the command ended: it ran untraced code, waited or hung "
                            "there, or the events of its last flush interval were lost");
      }
    }
    if ((died || failed_exit) && run.end_ns != 0) f.ts_ns = run.end_ns;
    if (const Finding* cause = LikelyCause(logs)) {
      f.category = cause->category;
      f.explanation += " The logs name a likely cause: " + cause->title + " (" +
                       BaseName(cause->source) + ":" + std::to_string(cause->line) + ").";
    }
    if (died || unfinished) {
      f.explanation +=
          " Events of the last flush interval before the end may be missing from the trace.";
    }
    out.push_back(std::move(f));
  }

  for (Finding& f : logs) out.push_back(std::move(f));

  // Ranges still open at the end of the other processes' traces.
  for (uint32_t p = 0; p < ends.size(); ++p) {
    const ProcessEnd& pe = ends[p];
    if (pe.open.empty() || p == dead) continue;
    Finding f;
    f.kind = "in_flight";
    f.severity = run_failed ? kError : kWarning;
    f.pid = trace.processes[p].pid;
    f.rank = trace.processes[p].rank;
    f.ts_ns = pe.end_ns;
    f.title = Who(f.rank, f.pid) + " ended with " + std::to_string(pe.open.size()) +
              (pe.open.size() == 1 ? " range" : " ranges") +
              " open: " + OpenChain(trace, r->nodes, pe);
    const bool comm = r->nodes.layer[InnermostOpen(r->nodes, pe)] == Layer::kComm;
    if (comm) f.category = FaultCategory::kCommunication;
    if (run_failed) {
      f.explanation =
          "Its trace ends inside these ranges: what it was doing when the run "
          "failed.";
    } else {
      f.explanation =
          "Its trace ends inside these ranges. After a normal exit this is usually a range "
          "that a thread still running at exit left open, or a profiling window that cut a "
          "step; if the program hung or was stopped, it is where.";
    }
    if (comm) {
      f.explanation +=
          " The innermost is communication: the process was waiting in a "
          "collective, for a peer that had not arrived.";
    }
    f.details = EndDetails(trace, r->nodes, pe);
    out.push_back(std::move(f));
  }

  std::stable_sort(out.begin(), out.end(), [](const Finding& a, const Finding& b) {
    const bool ea = a.severity == kError, eb = b.severity == kError;
    if (ea != eb) return ea;
    if (OrderGroup(a) != OrderGroup(b)) return OrderGroup(a) < OrderGroup(b);
    const int64_t ta = a.ts_ns == LogTable::kNoTime ? std::numeric_limits<int64_t>::max() : a.ts_ns;
    const int64_t tb = b.ts_ns == LogTable::kNoTime ? std::numeric_limits<int64_t>::max() : b.ts_ns;
    if (ta != tb) return ta < tb;
    if (a.source != b.source) return a.source < b.source;
    return a.line < b.line;
  });
  return out;
}

void AppendFindingsJson(std::string& out, const std::vector<Finding>& findings) {
  JsonArrayWriter arr(out);
  for (const Finding& f : findings) {
    arr.Next();
    JsonObjectWriter w(out);
    w.Field("category", FaultCategoryName(f.category))
        .Field("kind", f.kind)
        .Field("severity", f.severity)
        .Field("title", f.title)
        .Field("explanation", f.explanation);
    if (f.rank >= 0) {
      w.Field("rank", f.rank);
    } else {
      w.FieldNull("rank");
    }
    if (f.pid != 0) {
      w.Field("pid", f.pid);
    } else {
      w.FieldNull("pid");
    }
    if (f.ts_ns != LogTable::kNoTime) {
      w.Field("ts_ns", f.ts_ns);
    } else {
      w.FieldNull("ts_ns");
    }
    if (!f.source.empty()) {
      w.Field("source", f.source).Field("line", f.line);
    } else {
      w.FieldNull("source").FieldNull("line");
    }
    w.Key("details");
    JsonArrayWriter d(out);
    for (const std::string& s : f.details) d.Element(s);
    d.Close();
    w.Close();
  }
  arr.Close();
}

std::string FindingsText(const std::vector<Finding>& findings) {
  if (findings.empty()) return "";
  size_t errors = 0;
  for (const Finding& f : findings) errors += f.severity == kError;
  std::string o = "failures: " + std::to_string(errors) + (errors == 1 ? " error, " : " errors, ") +
                  std::to_string(findings.size() - errors) +
                  (findings.size() - errors == 1 ? " warning\n" : " warnings\n");
  for (const Finding& f : findings) {
    char head[64];
    std::snprintf(head, sizeof(head), "  %-7s %-19s ", f.severity == kError ? "ERROR" : "warning",
                  std::string(FaultCategoryName(f.category)).c_str());
    o += head;
    o += f.title;
    o += '\n';
    if (!f.source.empty()) {
      o += "      at " + f.source + ":" + std::to_string(f.line) + "\n";
    }
    o += "      " + f.explanation + "\n";
    for (const std::string& d : f.details) o += "      - " + d + "\n";
  }
  return o;
}

bool HasErrorFinding(const std::vector<Finding>& findings) {
  for (const Finding& f : findings) {
    if (f.severity == kError) return true;
  }
  return false;
}

}  // namespace teller::diagnose
