#include "teller/format/raw_writer.h"

#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "teller/core/crc32c.h"

namespace teller::raw {

void PayloadBuilder::AppendU32(uint32_t v) {
  char buf[4];
  std::memcpy(buf, &v, 4);
  bytes_.append(buf, 4);
}

void PayloadBuilder::AddKeyValue(std::string_view key, std::string_view value) {
  AppendU32(static_cast<uint32_t>(key.size()));
  bytes_.append(key);
  AppendU32(static_cast<uint32_t>(value.size()));
  bytes_.append(value);
  ++count_;
}

void PayloadBuilder::AddString(uint32_t id, std::string_view text) {
  AppendU32(id);
  AppendU32(static_cast<uint32_t>(text.size()));
  bytes_.append(text);
  ++count_;
}

Result<std::unique_ptr<RawFileWriter>> RawFileWriter::Create(const std::string& path) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    return Status::Error("cannot create trace file " + path + ": " + std::strerror(errno));
  }
  std::unique_ptr<RawFileWriter> writer(new RawFileWriter(fd, path));
  // File header payload: signature, format version, record size.
  std::string header(kFileSignature);
  const uint16_t version = kFormatVersion;
  const uint16_t record_bytes = sizeof(EventRecord);
  header.append(reinterpret_cast<const char*>(&version), 2);
  header.append(reinterpret_cast<const char*>(&record_bytes), 2);
  const PayloadPart part{header.data(), header.size()};
  TELLER_RETURN_IF_ERROR(writer->WriteChunk(ChunkType::kFileHeader, 0, 1, &part, 1));
  return writer;
}

RawFileWriter::~RawFileWriter() {
  if (fd_ >= 0) close(fd_);
}

void RawFileWriter::Abandon() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

Status RawFileWriter::WriteChunk(ChunkType type, uint16_t record_bytes, uint32_t record_count,
                                 const PayloadPart* parts, size_t part_count) {
  if (fd_ < 0) return Status::Error("trace file " + path_ + " is closed");
  ChunkHeader header{};
  header.magic = kChunkMagic;
  header.type = static_cast<uint16_t>(type);
  header.record_bytes = record_bytes;
  header.record_count = record_count;
  header.sequence = sequence_;
  size_t total = 0;
  uint32_t crc = 0;
  for (size_t i = 0; i < part_count; ++i) {
    total += parts[i].size;
    crc = Crc32c(parts[i].data, parts[i].size, crc);
  }
  if (total > kMaxPayloadBytes) {
    return Status::Error("chunk payload of " + std::to_string(total) + " bytes exceeds the limit");
  }
  header.payload_bytes = static_cast<uint32_t>(total);
  header.payload_crc = crc;
  header.header_crc = Crc32c(&header, offsetof(ChunkHeader, header_crc));

  // One writev per chunk: with O_APPEND the chunk lands contiguously, and a crash
  // leaves at worst a torn tail that the reader detects by its checksums.
  iovec iov[8];
  size_t n = 0;
  iov[n++] = {&header, sizeof(header)};
  for (size_t i = 0; i < part_count && n < 8; ++i) {
    if (parts[i].size > 0) iov[n++] = {const_cast<void*>(parts[i].data), parts[i].size};
  }
  size_t remaining = sizeof(header) + total;
  size_t first = 0;
  while (remaining > 0) {
    const ssize_t w = writev(fd_, iov + first, static_cast<int>(n - first));
    if (w < 0) {
      if (errno == EINTR) continue;
      return Status::Error("cannot write trace file " + path_ + ": " + std::strerror(errno));
    }
    remaining -= static_cast<size_t>(w);
    bytes_written_ += static_cast<uint64_t>(w);
    // Advance past fully written vectors and into a partially written one.
    size_t done = static_cast<size_t>(w);
    while (first < n && done >= iov[first].iov_len) {
      done -= iov[first].iov_len;
      ++first;
    }
    if (first < n && done > 0) {
      iov[first].iov_base = static_cast<char*>(iov[first].iov_base) + done;
      iov[first].iov_len -= done;
    }
  }
  ++sequence_;
  return Status::Ok();
}

Status RawFileWriter::WritePayload(ChunkType type, const PayloadBuilder& payload) {
  const PayloadPart part{payload.bytes().data(), payload.bytes().size()};
  return WriteChunk(type, 0, payload.count(), &part, 1);
}

Status RawFileWriter::WriteEvents(const EventRecord* first, size_t first_count,
                                  const EventRecord* second, size_t second_count) {
  constexpr size_t kMaxRecords = kMaxPayloadBytes / sizeof(EventRecord);
  while (first_count + second_count > 0) {
    PayloadPart parts[2];
    size_t part_count = 0;
    size_t budget = kMaxRecords;
    const size_t take_first = std::min(first_count, budget);
    if (take_first > 0) parts[part_count++] = {first, take_first * sizeof(EventRecord)};
    budget -= take_first;
    const size_t take_second = std::min(second_count, budget);
    if (take_second > 0) parts[part_count++] = {second, take_second * sizeof(EventRecord)};
    TELLER_RETURN_IF_ERROR(WriteChunk(ChunkType::kEvents, sizeof(EventRecord),
                                      static_cast<uint32_t>(take_first + take_second), parts,
                                      part_count));
    first += take_first;
    first_count -= take_first;
    second += take_second;
    second_count -= take_second;
  }
  return Status::Ok();
}

Status RawFileWriter::WriteClockAnchor(const ClockPair& pair) {
  ClockAnchor anchor{pair.realtime_ns, pair.monotonic_ns, pair.uncertainty_ns, 0};
  const PayloadPart part{&anchor, sizeof(anchor)};
  return WriteChunk(ChunkType::kClockAnchor, sizeof(ClockAnchor), 1, &part, 1);
}

}  // namespace teller::raw
