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

#include "teller/core/crc32c.h"

namespace teller::raw {
namespace {

// Strings ids are dense per file; a huge id in an intact chunk is nonsense, not a
// reason to allocate gigabytes.
constexpr uint32_t kMaxStringId = 1u << 26;

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
      if (len > payload.size() - pos || id >= kMaxStringId) {
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
  RawProcessTrace trace;
  trace.path = name;
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
  return text;
}

}  // namespace teller::raw
