// A part's bytes (parts.h): a header, then the trace's strings, processes, event and log
// columns, counters, sources and run, each vector as its length and its elements. Both
// ends are the same build, so numbers travel in native byte order; the header's byte-order
// mark and version refuse anything else.
#include "teller/ingest/parts.h"

#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace teller::ingest {
namespace {

constexpr char kMagic[8] = {'T', 'L', 'R', 'P', 'A', 'R', 'T', '\0'};
constexpr uint32_t kVersion = 1;
constexpr uint32_t kByteOrder = 0x01020304;

class Writer {
 public:
  explicit Writer(std::string& out) : out_(out) {}
  template <typename T>
  void Put(T v) {
    static_assert(std::is_trivially_copyable_v<T>);
    out_.append(reinterpret_cast<const char*>(&v), sizeof(T));
  }
  void Text(std::string_view s) {
    Put<uint64_t>(s.size());
    out_.append(s);
  }
  template <typename T>
  void Column(const std::vector<T>& v) {
    Put<uint64_t>(v.size());
    out_.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
  }
  // A table: its row count, then each column.
  template <typename... C>
  void Table(uint64_t rows, const C&... columns) {
    Put(rows);
    (Column(columns), ...);
  }

 private:
  std::string& out_;
};

class Reader {
 public:
  Reader(std::string_view bytes, const std::string& what) : bytes_(bytes), what_(what) {}
  template <typename T>
  bool Get(T& v) {
    if (bytes_.size() - at_ < sizeof(T)) return Fail("ends inside a number");
    std::memcpy(&v, bytes_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return true;
  }
  bool Text(std::string_view& s) {
    uint64_t n = 0;
    if (!Get(n)) return false;
    if (n > bytes_.size() - at_) return Fail("a text runs past the end");
    s = bytes_.substr(at_, n);
    at_ += n;
    return true;
  }
  // A column of `expected` elements (the event count, for every event column).
  template <typename T>
  bool Column(std::vector<T>& v, uint64_t expected) {
    uint64_t n = 0;
    if (!Get(n)) return false;
    if (n != expected) return Fail("a column's length differs from its table's");
    if (n > (bytes_.size() - at_) / sizeof(T)) return Fail("a column runs past the end");
    v.resize(n);
    if (n > 0) std::memcpy(v.data(), bytes_.data() + at_, n * sizeof(T));
    at_ += n * sizeof(T);
    return true;
  }
  // A table: its row count (into `rows`), then each column of that many rows.
  template <typename... C>
  bool Table(uint64_t& rows, C&... columns) {
    return Get(rows) && (Column(columns, rows) && ...);
  }
  bool Fail(const std::string& why) {
    if (error_.empty()) {
      error_ = what_ + ": not a whole part at byte " + std::to_string(at_) + ": " + why;
    }
    return false;
  }
  bool AtEnd() const { return at_ == bytes_.size(); }
  const std::string& error() const { return error_; }

 private:
  std::string_view bytes_;
  const std::string& what_;
  size_t at_ = 0;
  std::string error_;
};

template <typename T>
bool AllBelow(const std::vector<T>& ids, uint64_t limit) {
  for (const T id : ids) {
    if (static_cast<uint64_t>(id) >= limit) return false;
  }
  return true;
}

bool DecodeInto(Reader& r, ImportedPart& part) {
  char magic[sizeof(kMagic)];
  for (char& c : magic) {
    if (!r.Get(c)) return false;
  }
  uint32_t order = 0, version = 0;
  if (std::memcmp(magic, kMagic, sizeof(kMagic)) != 0 || !r.Get(order) || order != kByteOrder ||
      !r.Get(version) || version != kVersion) {
    return r.Fail("not a part of this build (magic, byte order or version differ)");
  }
  Trace& t = part.trace;
  if (!r.Get(part.monotonic_to_utc_ns)) return false;

  uint64_t strings = 0;
  if (!r.Get(strings)) return false;
  if (strings == 0) return r.Fail("no string table (id 0, the empty string, is always there)");
  for (uint64_t i = 0; i < strings; ++i) {
    std::string_view s;
    if (!r.Text(s)) return false;
    if (i == 0 ? !s.empty() : t.strings.Intern(s) != i) {
      return r.Fail("string " + std::to_string(i) + " repeats an earlier one");
    }
  }

  uint64_t processes = 0;
  if (!r.Get(processes)) return false;
  for (uint64_t i = 0; i < processes; ++i) {
    ProcessInfo p;
    if (!r.Get(p.pid) || !r.Get(p.host) || !r.Get(p.label) || !r.Get(p.source) || !r.Get(p.rank) ||
        !r.Get(p.world_size) || !r.Get(p.local_rank) || !r.Get(p.clock_offset_ns)) {
      return false;
    }
    if (p.host >= strings || p.label >= strings || p.source >= strings) {
      return r.Fail("process " + std::to_string(i) + " names a string beyond the table");
    }
    t.processes.push_back(p);
  }

  uint64_t events = 0;
  if (!r.Get(events)) return false;
  EventTable& e = t.events;
  if (!r.Column(e.type, events) || !r.Column(e.name, events) || !r.Column(e.category, events) ||
      !r.Column(e.domain, events) || !r.Column(e.process, events) || !r.Column(e.thread, events) ||
      !r.Column(e.start_ns, events) || !r.Column(e.end_ns, events) ||
      !r.Column(e.correlation, events) || !r.Column(e.external_id, events) ||
      !r.Column(e.device, events) || !r.Column(e.stream, events) || !r.Column(e.bytes, events) ||
      !r.Column(e.flags, events) || !r.Column(e.signature, events)) {
    return false;
  }
  for (const EventType type : e.type) {
    const auto v = static_cast<uint8_t>(type);
    if (v < static_cast<uint8_t>(EventType::kPush) ||
        v > static_cast<uint8_t>(EventType::kGpuAnnotation)) {
      return r.Fail("an event of unknown type " + std::to_string(v));
    }
  }
  if (!AllBelow(e.name, strings) || !AllBelow(e.category, strings) ||
      !AllBelow(e.domain, strings) || !AllBelow(e.signature, strings)) {
    return r.Fail("an event names a string beyond the table");
  }
  if (!AllBelow(e.process, processes)) return r.Fail("an event names a process beyond the table");

  uint64_t lines = 0;
  LogTable& l = t.logs;
  if (!r.Table(lines, l.ts_ns, l.request, l.level, l.process, l.file, l.line, l.message)) {
    return false;
  }
  if (!AllBelow(l.request, strings) || !AllBelow(l.file, strings) ||
      !AllBelow(l.message, strings)) {
    return r.Fail("a log line names a string beyond the table");
  }
  for (const uint32_t p : l.process) {
    if (p != LogTable::kNoProcess && p >= processes) {
      return r.Fail("a log line names a process beyond the table");
    }
  }
  for (const LogLevel level : l.level) {
    if (static_cast<uint8_t>(level) > static_cast<uint8_t>(LogLevel::kCritical)) {
      return r.Fail("a log line of unknown level");
    }
  }

  uint64_t counters = 0;
  if (!r.Get(counters)) return false;
  for (uint64_t i = 0; i < counters; ++i) {
    std::string_view name;
    uint64_t value = 0;
    if (!r.Text(name) || !r.Get(value)) return false;
    t.counters.AddNamed(name, value);
  }

  uint64_t sources = 0;
  if (!r.Get(sources)) return false;
  for (uint64_t i = 0; i < sources; ++i) {
    std::string_view s;
    if (!r.Text(s)) return false;
    t.sources.emplace_back(s);
  }

  uint8_t known = 0, finished = 0;
  std::string_view command;
  if (!r.Get(known) || !r.Get(finished) || !r.Get(t.run.exit_code) || !r.Get(t.run.signal) ||
      !r.Text(command) || !r.Get(t.run.pid) || !r.Get(t.run.end_ns)) {
    return false;
  }
  t.run.known = known != 0;
  t.run.finished = finished != 0;
  t.run.command = std::string(command);
  if (!r.AtEnd()) return r.Fail("bytes after the part's end");
  return true;
}

}  // namespace

std::string EncodePart(const ImportedPart& part) {
  const Trace& t = part.trace;
  std::string out;
  out.reserve(64 + t.events.MemoryBytes());
  Writer w(out);
  for (const char c : kMagic) w.Put(c);
  w.Put(kByteOrder);
  w.Put(kVersion);
  w.Put(part.monotonic_to_utc_ns);

  w.Put<uint64_t>(t.strings.size());
  for (size_t s = 0; s < t.strings.size(); ++s) w.Text(t.strings.Get(static_cast<StringId>(s)));

  w.Put<uint64_t>(t.processes.size());
  for (const ProcessInfo& p : t.processes) {
    w.Put(p.pid);
    w.Put(p.host);
    w.Put(p.label);
    w.Put(p.source);
    w.Put(p.rank);
    w.Put(p.world_size);
    w.Put(p.local_rank);
    w.Put(p.clock_offset_ns);
  }

  // Every column of EventTable and LogTable (trace.h), in its declaration order.
  const EventTable& e = t.events;
  w.Table(e.size(), e.type, e.name, e.category, e.domain, e.process, e.thread, e.start_ns, e.end_ns,
          e.correlation, e.external_id, e.device, e.stream, e.bytes, e.flags, e.signature);
  const LogTable& l = t.logs;
  w.Table(l.size(), l.ts_ns, l.request, l.level, l.process, l.file, l.line, l.message);

  // In the order of their first Add, zeros included, so that reports list them alike.
  const auto counters = t.counters.items();
  w.Put<uint64_t>(counters.size());
  for (const auto& [name, value] : counters) {
    w.Text(name);
    w.Put(value);
  }

  w.Put<uint64_t>(t.sources.size());
  for (const std::string& s : t.sources) w.Text(s);

  w.Put<uint8_t>(t.run.known ? 1 : 0);
  w.Put<uint8_t>(t.run.finished ? 1 : 0);
  w.Put(t.run.exit_code);
  w.Put(t.run.signal);
  w.Text(t.run.command);
  w.Put(t.run.pid);
  w.Put(t.run.end_ns);
  return out;
}

Status DecodePart(std::string_view bytes, const std::string& what, ImportedPart& part) {
  Reader r(bytes, what);
  if (!DecodeInto(r, part)) return Status::Error(r.error());
  return Status::Ok();
}

}  // namespace teller::ingest
