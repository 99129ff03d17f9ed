#include "teller/format/raw_reader.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <unordered_map>

#include "teller/core/crc32c.h"

namespace teller::raw {
namespace {

// Strings ids are dense per file; a huge id in an intact chunk is nonsense, not a
// reason to allocate gigabytes.
constexpr uint32_t kMaxStringId = 1u << 26;
// String ids count up from 0 per process, and every string record takes at least 8 bytes
// of the file: an id far beyond what the file could hold is damage, and must not make the
// reader allocate a string table of that size (a damaged id of 2^26 costs 2 GiB).
uint32_t MaxStringId(size_t file_bytes) {
  return static_cast<uint32_t>(
      std::min<uint64_t>(kMaxStringId, static_cast<uint64_t>(file_bytes) / 8 + 65536));
}

uint32_t LoadU32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// Parses (u32 len, bytes) pairs; returns false when the payload is inconsistent.
bool ParseKeyValues(std::string_view payload, uint32_t count,
                    std::vector<std::pair<std::string, std::string>>& out) {
  size_t pos = 0;
  for (uint32_t i = 0; i < count; ++i) {
    std::string_view parts[2];
    for (auto& part : parts) {
      if (pos + 4 > payload.size()) return false;
      const uint32_t len = LoadU32(payload.data() + pos);
      pos += 4;
      if (len > payload.size() - pos) return false;
      part = payload.substr(pos, len);
      pos += len;
    }
    out.emplace_back(std::string(parts[0]), std::string(parts[1]));
  }
  return pos == payload.size();
}

class ChunkParser {
 public:
  ChunkParser(std::string_view bytes, RawProcessTrace& trace) : bytes_(bytes), trace_(trace) {}

  // Validates the chunk header at `pos`; returns the whole chunk size or 0.
  size_t ValidChunkAt(size_t pos, std::string* why) const {
    if (bytes_.size() - pos < sizeof(ChunkHeader)) {
      if (why) *why = "truncated chunk header";
      return 0;
    }
    ChunkHeader h;
    std::memcpy(&h, bytes_.data() + pos, sizeof(h));
    if (h.magic != kChunkMagic) {
      if (why) *why = "bad chunk magic";
      return 0;
    }
    if (Crc32c(&h, offsetof(ChunkHeader, header_crc)) != h.header_crc) {
      if (why) *why = "chunk header checksum mismatch";
      return 0;
    }
    if (h.payload_bytes > kMaxPayloadBytes) {
      if (why) *why = "chunk payload size out of range";
      return 0;
    }
    if (bytes_.size() - pos - sizeof(ChunkHeader) < h.payload_bytes) {
      if (why) *why = "truncated chunk payload (file ends inside a chunk)";
      return 0;
    }
    if (Crc32c(bytes_.data() + pos + sizeof(ChunkHeader), h.payload_bytes) != h.payload_crc) {
      if (why) *why = "chunk payload checksum mismatch";
      return 0;
    }
    return sizeof(ChunkHeader) + h.payload_bytes;
  }

  void Damage(size_t offset, const std::string& why) {
    ++trace_.stats.damaged_regions;
    if (trace_.stats.first_damage.empty()) {
      trace_.stats.first_damage = "offset " + std::to_string(offset) + ": " + why;
    }
  }

  // Parses an intact chunk's payload into the trace.
  void Consume(size_t pos) {
    ChunkHeader h;
    std::memcpy(&h, bytes_.data() + pos, sizeof(h));
    const std::string_view payload = bytes_.substr(pos + sizeof(h), h.payload_bytes);
    ++trace_.stats.chunks;
    switch (static_cast<ChunkType>(h.type)) {
      case ChunkType::kFileHeader:
        break;
      case ChunkType::kProcessInfo:
        if (!ParseKeyValues(payload, h.record_count, trace_.process_info)) {
          ++trace_.stats.bad_records;
        }
        break;
      case ChunkType::kClockAnchor:
        ConsumeFixed<ClockAnchor>(h, payload, trace_.anchors);
        break;
      case ChunkType::kEvents:
        ConsumeFixed<EventRecord>(h, payload, trace_.events);
        break;
      case ChunkType::kStrings:
        ConsumeStrings(h, payload);
        break;
      case ChunkType::kCounters:
      case ChunkType::kEnd: {
        std::vector<std::pair<std::string, std::string>> kv;
        if (!ParseKeyValues(payload, h.record_count, kv)) ++trace_.stats.bad_records;
        for (auto& [key, text] : kv) SetCounter(key, text);
        if (static_cast<ChunkType>(h.type) == ChunkType::kEnd) trace_.stats.clean_end = true;
        break;
      }
      default:
        ++trace_.stats.unknown_chunks;  // a newer writer: skip, do not fail
    }
  }

 private:
  // Fixed-size records: a record size larger than ours (a newer writer appended fields)
  // is read by its prefix; a smaller or inconsistent one is counted as bad.
  template <typename T>
  void ConsumeFixed(const ChunkHeader& h, std::string_view payload, std::vector<T>& out) {
    const size_t size = h.record_bytes;
    if (size < sizeof(T) || static_cast<uint64_t>(size) * h.record_count != payload.size()) {
      ++trace_.stats.bad_records;
      return;
    }
    const size_t first = out.size();
    out.resize(first + h.record_count);
    if (size == sizeof(T)) {
      std::memcpy(out.data() + first, payload.data(), payload.size());
    } else {
      for (uint32_t i = 0; i < h.record_count; ++i) {
        std::memcpy(&out[first + i], payload.data() + i * size, sizeof(T));
      }
    }
  }

  void ConsumeStrings(const ChunkHeader& h, std::string_view payload) {
    size_t pos = 0;
    for (uint32_t i = 0; i < h.record_count; ++i) {
      if (pos + 8 > payload.size()) {
        ++trace_.stats.bad_records;
        return;
      }
      const uint32_t id = LoadU32(payload.data() + pos);
      const uint32_t len = LoadU32(payload.data() + pos + 4);
      pos += 8;
      if (len > payload.size() - pos || id >= MaxStringId(bytes_.size())) {
        ++trace_.stats.bad_records;
        return;
      }
      if (id >= trace_.strings.size()) trace_.strings.resize(id + 1);
      trace_.strings[id].assign(payload.data() + pos, len);
      pos += len;
    }
  }

  void SetCounter(const std::string& key, const std::string& text) {
    uint64_t value = 0;
    const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || ptr != text.data() + text.size()) {
      ++trace_.stats.bad_records;
      return;
    }
    for (auto& [name, v] : trace_.counters) {
      if (name == key) {
        v = value;
        return;
      }
    }
    trace_.counters.emplace_back(key, value);
  }

  std::string_view bytes_;
  RawProcessTrace& trace_;
};

// ---- Version 2: the block layout (raw_format.h) ----

// Damaged or hostile anchors can put a time far outside int64: clamp, never overflow.
int64_t ClampNs(double ns) {
  constexpr double kLimit = 9.0e18;
  if (!(ns > -kLimit)) return static_cast<int64_t>(-kLimit);
  if (!(ns < kLimit)) return static_cast<int64_t>(kLimit);
  return static_cast<int64_t>(ns);
}

// Maps raw TSC ticks to event-clock ns with the file's anchors: linear between
// neighbouring anchors, and beyond them with the slope over all anchors (or the rate the
// collector measured at start, when there is only one).
class TscClock {
 public:
  TscClock(std::vector<raw::TscAnchor> anchors, double ns_per_tick) {
    std::sort(anchors.begin(), anchors.end(),
              [](const auto& a, const auto& b) { return a.tsc < b.tsc; });
    for (const auto& a : anchors) {
      if (!points_.empty() &&
          (a.tsc <= points_.back().first || a.monotonic_ns <= points_.back().second)) {
        continue;  // not increasing in both clocks: a torn or duplicate entry
      }
      points_.emplace_back(a.tsc, a.monotonic_ns);
    }
    slope_ = ns_per_tick;
    if (points_.size() >= 2) {
      const auto& f = points_.front();
      const auto& l = points_.back();
      if (static_cast<double>(l.second) - static_cast<double>(f.second) >= 1e6 || !(slope_ > 0)) {
        slope_ = (static_cast<double>(l.second) - static_cast<double>(f.second)) /
                 (static_cast<double>(l.first) - static_cast<double>(f.first));
      }
    }
  }
  bool usable() const { return !points_.empty() && slope_ > 0; }
  int64_t ToNs(int64_t tsc) const {
    auto it = std::upper_bound(points_.begin(), points_.end(), tsc,
                               [](int64_t t, const auto& p) { return t < p.first; });
    if (it == points_.begin() || it == points_.end()) {
      const auto& p = it == points_.begin() ? points_.front() : points_.back();
      return ClampNs(static_cast<double>(p.second) +
                     (static_cast<double>(tsc) - static_cast<double>(p.first)) * slope_);
    }
    const auto& hi = *it;
    const auto& lo = *(it - 1);
    const double f = (static_cast<double>(tsc) - static_cast<double>(lo.first)) /
                     (static_cast<double>(hi.first) - static_cast<double>(lo.first));
    return ClampNs(static_cast<double>(lo.second) +
                   f * (static_cast<double>(hi.second) - static_cast<double>(lo.second)));
  }

 private:
  std::vector<std::pair<int64_t, int64_t>> points_;
  double slope_ = 0;
};

bool AllZero(const char* p, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (p[i] != 0) return false;
  }
  return true;
}

class BlockParser {
 public:
  BlockParser(std::string_view bytes, RawProcessTrace& trace) : bytes_(bytes), trace_(trace) {}

  void Damage(size_t offset, const std::string& why) {
    ++trace_.stats.damaged_regions;
    if (trace_.stats.first_damage.empty()) {
      trace_.stats.first_damage = "offset " + std::to_string(offset) + ": " + why;
    }
  }

  void Run(const raw::FileHeaderBlock& fh) {
    trace_.stats.clean_end = fh.clean_end == 1;
    ReadCounters(fh);
    std::vector<raw::TscAnchor> anchors;
    const uint32_t n = std::min(fh.anchor_count, raw::kMaxTscAnchors);
    for (uint32_t i = 0; i < n; ++i) {
      const raw::TscAnchor& a = fh.anchors[i];
      if (a.crc != raw::TscAnchorCrc(a)) {
        ++trace_.stats.bad_records;
        continue;
      }
      anchors.push_back(a);
      trace_.anchors.push_back({a.realtime_ns, a.monotonic_ns, a.uncertainty_ns, 0});
    }
    std::sort(trace_.anchors.begin(), trace_.anchors.end(),
              [](const auto& a, const auto& b) { return a.monotonic_ns < b.monotonic_ns; });
    ++trace_.stats.chunks;

    size_t pos = raw::kFileHeaderBlockBytes;
    while (pos + raw::kBlockHeaderBytes <= bytes_.size()) {
      raw::BlockHeader h;
      std::memcpy(&h, bytes_.data() + pos, sizeof(h));
      const size_t page = std::min<size_t>(raw::kBlockAlign, bytes_.size() - pos);
      if (h.magic == 0) {
        // Allocated ahead and never claimed, or claimed by a process killed before it
        // finished the header (the magic is written last; nothing was recorded there).
        trace_.stats.unused_bytes += page;
        pos += page;
        continue;
      }
      std::string why;
      if (h.magic != raw::kBlockMagic) {
        why = "bad block magic";
      } else if (h.header_crc != raw::BlockHeaderCrc(h)) {
        why = "block header checksum mismatch";
      } else if (h.block_bytes < raw::kBlockAlign || h.block_bytes % raw::kBlockAlign != 0) {
        why = "block size out of range";
      }
      if (!why.empty()) {
        Damage(pos, why);
        trace_.stats.dropped_bytes += page;
        pos += page;
        continue;
      }
      size_t avail = h.block_bytes;
      if (bytes_.size() - pos < avail) {
        Damage(pos, "truncated block (file ends inside a block)");
        avail = bytes_.size() - pos;
      }
      ++trace_.stats.chunks;
      switch (static_cast<raw::BlockType>(h.type)) {
        case raw::BlockType::kProcessInfo:
          ReadInfo(h, pos, avail);
          break;
        case raw::BlockType::kEvents:
          ReadEvents(h, pos, avail);
          break;
        default:
          ++trace_.stats.unknown_chunks;
      }
      pos += avail;
    }
    Finish(TscClock(std::move(anchors), fh.ns_per_tick));
  }

 private:
  struct Segment {
    uint64_t sequence;
    std::vector<EventRecord> events;
  };

  void ReadCounters(const raw::FileHeaderBlock& fh) {
    for (const raw::CounterSlot& c : fh.counters) {
      if (c.name[0] == '\0') continue;
      const std::string name(c.name, strnlen(c.name, sizeof(c.name)));
      // Zero values are left out, as version-1 writers did, except the two that tell
      // "nothing dropped" from "not counted".
      if (c.value == 0 && name != "events_dropped" && name != "strings_dropped") continue;
      trace_.counters.emplace_back(name, c.value);
    }
  }

  void ReadInfo(const raw::BlockHeader& h, size_t pos, size_t avail) {
    const std::string_view body =
        bytes_.substr(pos + raw::kBlockHeaderBytes, avail - raw::kBlockHeaderBytes);
    if (h.committed < 4 || h.committed > body.size()) {
      ++trace_.stats.bad_records;
      return;
    }
    const uint32_t count = LoadU32(body.data());
    if (!ParseKeyValues(body.substr(4, h.committed - 4), count, trace_.process_info)) {
      ++trace_.stats.bad_records;
    }
  }

  void NoteDrops(uint64_t serial, uint32_t tid, uint64_t events, uint64_t ranges) {
    if (serial == 0 || (events == 0 && ranges == 0)) return;
    raw::ThreadDrops& d = drops_[serial];
    d.serial = serial;
    d.tid = tid;
    d.events = std::max(d.events, events);
    d.ranges = std::max(d.ranges, ranges);
  }

  void ReadEvents(const raw::BlockHeader& h, size_t pos, size_t avail) {
    const char* slots = bytes_.data() + pos + raw::kBlockHeaderBytes;
    const uint32_t capacity =
        static_cast<uint32_t>((avail - raw::kBlockHeaderBytes) / sizeof(EventRecord));
    const uint32_t full = (h.block_bytes - raw::kBlockHeaderBytes) / sizeof(EventRecord);
    uint32_t committed = h.committed;
    if (committed > full) {
      ++trace_.stats.bad_records;
      committed = full;
    }
    committed = std::min(committed, capacity);
    NoteDrops(h.owner_serial, h.owner_tid, h.dropped_events, h.dropped_ranges);
    // A record written after the last commit (the process died between the two stores).
    if (committed < capacity) {
      EventRecord next;
      std::memcpy(&next, slots + committed * sizeof(EventRecord), sizeof(next));
      if (next.kind != 0) ++trace_.stats.uncommitted_records;
    }
    segments_.push_back({h.sequence, {}});
    uint32_t i = 0;
    while (i < committed) {
      EventRecord e;
      std::memcpy(&e, slots + i * sizeof(EventRecord), sizeof(e));
      ++i;
      if (e.kind == raw::kSlotString) {
        const uint64_t len = e.value;
        const uint64_t room = static_cast<uint64_t>(committed - i) * sizeof(EventRecord);
        const uint64_t n = len > room ? 0 : (len + sizeof(EventRecord) - 1) / sizeof(EventRecord);
        if (e.name >= MaxStringId(bytes_.size()) || len > room) {
          ++trace_.stats.bad_records;
          break;
        }
        if (e.name >= trace_.strings.size()) trace_.strings.resize(e.name + 1);
        trace_.strings[e.name].assign(slots + i * sizeof(EventRecord), len);
        i += static_cast<uint32_t>(n);
      } else if (e.kind == raw::kSlotSegment) {
        segments_.push_back({e.value, {}});  // the block changed owner here
      } else if (e.kind == raw::kSlotGap) {
        segments_.back().events.push_back(e);
      } else if (e.kind == 0 || e.kind >= raw::kSlotString) {
        ++trace_.stats.bad_records;
      } else {
        segments_.back().events.push_back(e);
      }
    }
  }

  void Finish(const TscClock& clock) {
    // Segments in claim order put every thread's events in the order it recorded them.
    std::stable_sort(segments_.begin(), segments_.end(),
                     [](const Segment& a, const Segment& b) { return a.sequence < b.sequence; });
    size_t total = 0;
    for (const Segment& s : segments_) total += s.events.size();
    trace_.events.reserve(trace_.events.size() + total);
    std::unordered_map<uint32_t, int64_t> last_ns;        // per thread: times never go back
    std::unordered_map<uint64_t, raw::ThreadDrops> seen;  // per thread serial: gap tallies
    for (Segment& s : segments_) {
      for (EventRecord& e : s.events) {
        if (e.flags & raw::kFlagRawTsc) {
          if (!clock.usable()) {
            ++trace_.stats.bad_records;
            continue;
          }
          int64_t ns = clock.ToNs(e.start_ns);
          int64_t& last = last_ns[e.tid];
          if (ns < last) ns = last;
          last = ns;
          e.start_ns = ns;
          e.flags &= static_cast<uint8_t>(~raw::kFlagRawTsc);
        }
        if (e.kind == raw::kSlotGap) {
          const uint64_t serial = static_cast<uint64_t>(e.end_ns);
          raw::ThreadDrops& prev = seen[serial];
          const uint64_t events = e.value, ranges = e.correlation;
          NoteDrops(serial, e.tid, events, ranges);
          e.kind = static_cast<uint8_t>(EventKind::kCollectorGap);
          e.value = events >= prev.events ? events - prev.events : 0;
          e.correlation = ranges >= prev.ranges ? ranges - prev.ranges : 0;
          e.end_ns = 0;
          prev.events = std::max(prev.events, events);
          prev.ranges = std::max(prev.ranges, ranges);
        }
        trace_.events.push_back(e);
      }
    }
    for (auto& [serial, d] : drops_) trace_.thread_drops.push_back(d);
    std::sort(trace_.thread_drops.begin(), trace_.thread_drops.end(),
              [](const auto& a, const auto& b) { return a.serial < b.serial; });
  }

  std::string_view bytes_;
  RawProcessTrace& trace_;
  std::vector<Segment> segments_;
  std::unordered_map<uint64_t, raw::ThreadDrops> drops_;
};

Result<RawProcessTrace> ReadBlockLayout(std::string_view bytes, const std::string& name) {
  RawProcessTrace trace;
  trace.path = name;
  trace.format_version = raw::kBlockFormatVersion;
  trace.stats.file_bytes = bytes.size();
  BlockParser parser(bytes, trace);
  if (bytes.size() < sizeof(raw::FileHeaderBlock)) {
    // A file cut inside its header: a valid but empty trace.
    trace.stats.dropped_bytes = bytes.size();
    parser.Damage(0, "truncated file header");
    return trace;
  }
  raw::FileHeaderBlock fh;
  std::memcpy(&fh, bytes.data(), sizeof(fh));
  if (fh.header.header_crc != raw::BlockHeaderCrc(fh.header) ||
      fh.header.type != static_cast<uint16_t>(raw::BlockType::kFileHeader) ||
      std::string_view(fh.signature, sizeof(fh.signature)) != kFileSignature) {
    return Status::Error(name + ": offset 0: not a Teller raw trace (bad file header block)");
  }
  if (fh.header.version > raw::kBlockFormatVersion) {
    trace.process_info.emplace_back("format_version", std::to_string(fh.header.version));
  }
  parser.Run(fh);
  return trace;
}
}  // namespace

std::string_view RawProcessTrace::Info(std::string_view key) const {
  for (const auto& [k, v] : process_info) {
    if (k == key) return v;
  }
  return {};
}

uint64_t RawProcessTrace::Counter(std::string_view name) const {
  for (const auto& [k, v] : counters) {
    if (k == name) return v;
  }
  return 0;
}

int64_t RawProcessTrace::pid() const {
  const std::string_view text = Info("pid");
  int64_t pid = 0;
  std::from_chars(text.data(), text.data() + text.size(), pid);
  return pid;
}

Result<RawProcessTrace> ReadRawBytes(std::string_view bytes, const std::string& name) {
  if (bytes.size() >= 4 && LoadU32(bytes.data()) == kBlockMagic) {
    return ReadBlockLayout(bytes, name);
  }
  if (bytes.size() >= kFileHeaderBlockBytes && LoadU32(bytes.data()) == 0 &&
      (bytes.substr(offsetof(FileHeaderBlock, signature), kFileSignature.size()) ==
           kFileSignature ||
       AllZero(bytes.data(), sizeof(BlockHeader) + kFileSignature.size()))) {
    // The collector allocates the file, then writes its header, the magic last: a process
    // killed in between leaves no magic and nothing recorded, a valid empty trace.
    RawProcessTrace trace;
    trace.path = name;
    trace.format_version = kBlockFormatVersion;
    trace.stats.file_bytes = bytes.size();
    trace.stats.unused_bytes = bytes.size();
    return trace;
  }
  RawProcessTrace trace;
  trace.path = name;
  trace.format_version = 1;
  trace.stats.file_bytes = bytes.size();
  ChunkParser parser(bytes, trace);

  // The first chunk must be an intact file header: otherwise this is not our file.
  std::string why;
  const size_t first = parser.ValidChunkAt(0, &why);
  ChunkHeader h{};
  if (first > 0) std::memcpy(&h, bytes.data(), sizeof(h));
  const std::string_view payload =
      first > 0 ? bytes.substr(sizeof(ChunkHeader), h.payload_bytes) : std::string_view();
  if (first == 0 || h.type != static_cast<uint16_t>(ChunkType::kFileHeader) ||
      payload.substr(0, kFileSignature.size()) != kFileSignature) {
    const bool has_magic =
        bytes.substr(0, 4) == std::string_view("TLRC", std::min<size_t>(4, bytes.size()));
    if (first == 0 && has_magic && why.rfind("truncated", 0) == 0) {
      // A file cut inside its header: a valid but empty trace (a process killed at once).
      trace.stats.dropped_bytes = bytes.size();
      if (!bytes.empty()) parser.Damage(0, "truncated file header");
      return trace;
    }
    return Status::Error(name + ": offset 0: not a Teller raw trace (" +
                         (first == 0 ? why : std::string("missing file signature")) + ")");
  }
  if (payload.size() >= kFileSignature.size() + 2) {
    uint16_t version;
    std::memcpy(&version, payload.data() + kFileSignature.size(), 2);
    if (version > kFormatVersion) {
      // Newer files stay readable: unknown chunk types are skipped and larger records
      // are read by their prefix.
      trace.process_info.emplace_back("format_version", std::to_string(version));
    }
  }
  parser.Consume(0);

  size_t pos = first;
  while (pos < bytes.size()) {
    const size_t size = parser.ValidChunkAt(pos, &why);
    if (size > 0) {
      parser.Consume(pos);
      pos += size;
      continue;
    }
    // Damage: look for the next intact chunk (its magic and both checksums must match).
    parser.Damage(pos, why);
    size_t next = pos + 1;
    while (next < bytes.size()) {
      const void* hit = memmem(bytes.data() + next, bytes.size() - next, "TLRC", 4);
      if (hit == nullptr) {
        next = bytes.size();
        break;
      }
      next = static_cast<size_t>(static_cast<const char*>(hit) - bytes.data());
      if (parser.ValidChunkAt(next, nullptr) > 0) break;
      ++next;
    }
    trace.stats.dropped_bytes += next - pos;
    pos = next;
  }
  return trace;
}

Result<RawProcessTrace> ReadRawFile(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::Error("cannot open " + path + ": " + std::strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return Status::Error(path + ": not a regular file");
  }
  const auto size = static_cast<size_t>(st.st_size);
  if (size == 0) {
    close(fd);
    return Status::Error(path + ": offset 0: empty file, not a Teller raw trace");
  }
  void* map = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (map == MAP_FAILED) return Status::Error("cannot map " + path + ": " + std::strerror(errno));
  madvise(map, size, MADV_SEQUENTIAL);
  auto result = ReadRawBytes(std::string_view(static_cast<const char*>(map), size), path);
  munmap(map, size);
  return result;
}

Result<std::vector<std::pair<std::string, uint64_t>>> ReadRawCounters(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::Error("cannot open " + path + ": " + std::strerror(errno));
  std::vector<char> buf(sizeof(FileHeaderBlock));
  const ssize_t n = pread(fd, buf.data(), buf.size(), 0);
  close(fd);
  std::vector<std::pair<std::string, uint64_t>> counters;
  if (n != static_cast<ssize_t>(buf.size()) || LoadU32(buf.data()) != kBlockMagic) return counters;
  FileHeaderBlock fh;
  std::memcpy(&fh, buf.data(), sizeof(fh));
  if (fh.header.header_crc != BlockHeaderCrc(fh.header)) return counters;
  for (const CounterSlot& c : fh.counters) {
    if (c.name[0] != '\0' && c.value != 0) {
      counters.emplace_back(std::string(c.name, strnlen(c.name, sizeof(c.name))), c.value);
    }
  }
  return counters;
}

Result<std::vector<std::string>> ListRawFiles(const std::string& file_or_dir) {
  struct stat st;
  if (stat(file_or_dir.c_str(), &st) != 0) {
    return Status::Error("cannot open " + file_or_dir + ": " + std::strerror(errno));
  }
  if (!S_ISDIR(st.st_mode)) return std::vector<std::string>{file_or_dir};
  DIR* dir = opendir(file_or_dir.c_str());
  if (dir == nullptr) {
    return Status::Error("cannot list " + file_or_dir + ": " + std::strerror(errno));
  }
  std::vector<std::string> files;
  const std::string_view ext = kFileExtension;
  while (dirent* entry = readdir(dir)) {
    const std::string_view name = entry->d_name;
    if (name.size() > ext.size() && name.substr(name.size() - ext.size()) == ext) {
      files.push_back(file_or_dir + "/" + std::string(name));
    }
  }
  closedir(dir);
  std::sort(files.begin(), files.end());
  if (files.empty()) {
    return Status::Error(file_or_dir + ": no raw trace files (*" + std::string(ext) +
                         ") in this directory");
  }
  return files;
}

std::string DescribeDamage(const RawProcessTrace& trace) {
  const RawReadStats& s = trace.stats;
  std::string text;
  if (s.damaged_regions > 0) {
    text += std::to_string(s.damaged_regions) + " damaged region(s), " +
            std::to_string(s.dropped_bytes) + " of " + std::to_string(s.file_bytes) +
            " bytes dropped (first at " + s.first_damage + ")";
  }
  if (s.bad_records > 0) {
    if (!text.empty()) text += "; ";
    text += std::to_string(s.bad_records) + " malformed record group(s) skipped";
  }
  if (s.unknown_chunks > 0) {
    if (!text.empty()) text += "; ";
    text += std::to_string(s.unknown_chunks) + " chunk(s) of unknown type skipped";
  }
  if (s.uncommitted_records > 0) {
    if (!text.empty()) text += "; ";
    text += std::to_string(s.uncommitted_records) + " uncommitted record(s) not used";
  }
  return text;
}

}  // namespace teller::raw
