// The raw trace format: round trip, and the reader's tolerance of every kind of
// damage a killed process or a bad disk leaves behind.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include "teller/core/crc32c.h"
#include "teller/format/raw_reader.h"
#include "teller/format/raw_writer.h"

namespace teller::raw {
namespace {

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

EventRecord MakeEvent(int i) {
  EventRecord e{};
  e.kind = static_cast<uint8_t>(i % 2 == 0 ? EventKind::kNvtxPush : EventKind::kNvtxPop);
  e.name = 1 + i % 3;
  e.tid = 100 + i % 4;
  e.start_ns = 1000 + i;
  e.correlation = static_cast<uint64_t>(i) * 7;
  return e;
}

class RawFormatTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/teller-raw-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/p.tlr";
    auto w = RawFileWriter::Create(path_);
    ASSERT_TRUE(w.ok()) << w.status().message();
    PayloadBuilder info;
    info.AddKeyValue("pid", "4242");
    info.AddKeyValue("host", "node-1");
    ASSERT_TRUE(w.value()->WritePayload(ChunkType::kProcessInfo, info).ok());
    ASSERT_TRUE(w.value()->WriteClockAnchor({1'700'000'000'000'000'000, 5'000, 30}).ok());
    PayloadBuilder strings;
    strings.AddString(1, "alpha");
    strings.AddString(2, "beta");
    strings.AddString(3, "gamma \xce\xb3");
    ASSERT_TRUE(w.value()->WritePayload(ChunkType::kStrings, strings).ok());
    // Ten event chunks of 100 events, the second run split across two parts as a ring
    // wrap would write it.
    for (int c = 0; c < 10; ++c) {
      std::vector<EventRecord> events;
      for (int i = 0; i < 100; ++i) events.push_back(MakeEvent(c * 100 + i));
      ASSERT_TRUE(w.value()->WriteEvents(events.data(), 60, events.data() + 60, 40).ok());
    }
    PayloadBuilder end;
    end.AddKeyValue("events_dropped", "3");
    ASSERT_TRUE(w.value()->WritePayload(ChunkType::kEnd, end).ok());
    bytes_ = Slurp(path_);
  }
  void TearDown() override { std::system(("rm -rf '" + dir_ + "'").c_str()); }

  std::string dir_, path_, bytes_;
};

TEST(Crc32cTest, MatchesTheStandardCheckValue) {
  // The CRC-32C check value of "123456789" (RFC 3720, appendix B.4).
  EXPECT_EQ(Crc32c("123456789", 9), 0xE3069283u);
  // Incremental extension equals one pass.
  EXPECT_EQ(Crc32c("6789", 4, Crc32c("12345", 5)), 0xE3069283u);
  EXPECT_EQ(Crc32c("", 0), 0u);
}

TEST_F(RawFormatTest, RoundTripsEveryChunkType) {
  auto t = ReadRawFile(path_);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->pid(), 4242);
  EXPECT_EQ(t->Info("host"), "node-1");
  ASSERT_EQ(t->anchors.size(), 1u);
  EXPECT_EQ(t->anchors[0].realtime_ns, 1'700'000'000'000'000'000);
  EXPECT_EQ(t->anchors[0].monotonic_ns, 5'000);
  EXPECT_EQ(t->String(3), "gamma \xce\xb3");
  EXPECT_EQ(t->String(99), "");
  ASSERT_EQ(t->events.size(), 1000u);
  for (int i = 0; i < 1000; ++i) {
    EXPECT_EQ(t->events[i].start_ns, 1000 + i);
    EXPECT_EQ(t->events[i].correlation, static_cast<uint64_t>(i) * 7);
  }
  EXPECT_EQ(t->Counter("events_dropped"), 3u);
  EXPECT_TRUE(t->stats.clean_end);
  EXPECT_EQ(DescribeDamage(t.value()), "");
}

TEST_F(RawFormatTest, EveryTruncationReadsTheIntactPrefix) {
  // A process killed at any byte: the reader never fails after the header and returns
  // exactly the events of the chunks that were complete.
  size_t previous_events = 0;
  for (size_t cut = 0; cut <= bytes_.size(); ++cut) {
    auto t = ReadRawBytes(std::string_view(bytes_.data(), cut), "cut");
    if (cut == 0) {
      EXPECT_TRUE(t.ok());
      continue;
    }
    ASSERT_TRUE(t.ok()) << "cut at " << cut << ": " << t.status().message();
    EXPECT_EQ(t->events.size() % 100, 0u);
    EXPECT_GE(t->events.size(), previous_events) << "monotone in the prefix length";
    previous_events = t->events.size();
    if (cut < bytes_.size()) {
      EXPECT_FALSE(t->stats.clean_end);
    }
    // What was not read is reported, never silently lost.
    if (t->stats.dropped_bytes > 0) {
      EXPECT_GT(t->stats.damaged_regions, 0u);
    }
    EXPECT_LE(t->stats.dropped_bytes, cut);
  }
  EXPECT_EQ(previous_events, 1000u);
}

TEST_F(RawFormatTest, FlippedBytesDropOnlyTheDamagedChunk) {
  // Flip one byte inside the payload of the fifth event chunk; the reader must skip
  // that chunk, resynchronise, and keep the other nine.
  const size_t chunk_bytes = sizeof(ChunkHeader) + 100 * sizeof(EventRecord);
  const size_t first_events =
      bytes_.size() - 10 * chunk_bytes - (sizeof(ChunkHeader) + 4 + 14 + 4 + 1);  // end chunk
  std::string damaged = bytes_;
  damaged[first_events + 4 * chunk_bytes + sizeof(ChunkHeader) + 500] ^= 0x40;
  auto t = ReadRawBytes(damaged, "flipped");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->events.size(), 900u);
  EXPECT_EQ(t->stats.damaged_regions, 1u);
  EXPECT_EQ(t->stats.dropped_bytes, chunk_bytes);
  EXPECT_NE(t->stats.first_damage.find("payload checksum mismatch"), std::string::npos)
      << t->stats.first_damage;
  EXPECT_TRUE(t->stats.clean_end) << "chunks after the damage are still read";
  EXPECT_NE(DescribeDamage(t.value()).find("1 damaged region"), std::string::npos);
}

TEST_F(RawFormatTest, RandomCorruptionNeverCrashes) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 300; ++trial) {  // NOLINT
    std::string damaged = bytes_;
    const int flips = 1 + static_cast<int>(rng() % 20);
    for (int f = 0; f < flips; ++f) damaged[rng() % damaged.size()] = static_cast<char>(rng());
    auto t = ReadRawBytes(damaged, "random");
    if (!t.ok()) {  // only a destroyed file header may make the file unreadable
      EXPECT_NE(t.status().message().find("offset 0"), std::string::npos);
      continue;
    }
    EXPECT_LE(t->events.size(), 1000u);
    EXPECT_LE(t->stats.dropped_bytes, damaged.size());
  }
}

TEST_F(RawFormatTest, InsertedGarbageIsSkipped) {
  const size_t header_end = bytes_.find("TLRC", 1);  // start of the second chunk
  ASSERT_NE(header_end, std::string::npos);
  std::string damaged =
      bytes_.substr(0, header_end) + "garbage TLRC garbage" + bytes_.substr(header_end);
  auto t = ReadRawBytes(damaged, "garbage");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->events.size(), 1000u);
  EXPECT_EQ(t->stats.dropped_bytes, 20u);
  EXPECT_EQ(t->pid(), 4242);
}

TEST(RawReaderTest, NonTraceFilesAreClearErrors) {
  auto t = ReadRawBytes("{\"traceEvents\": []}", "trace.json");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("trace.json: offset 0: not a Teller raw trace"),
            std::string::npos)
      << t.status().message();
  auto missing = ReadRawFile("/nonexistent/file.tlr");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("/nonexistent/file.tlr"), std::string::npos);
  auto dir = ListRawFiles("/tmp");
  // /tmp holds no *.tlr directly (tests write into subdirectories).
  if (!dir.ok()) {
    EXPECT_NE(dir.status().message().find("no raw trace files"), std::string::npos);
  }
}

TEST(RawReaderTest, NewerWritersStayReadable) {
  // A future writer: a chunk type we do not know and 104-byte event records.
  char tmpl[] = "/tmp/teller-raw-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string path = std::string(tmpl) + "/n.tlr";
  {
    auto w = RawFileWriter::Create(path);
    ASSERT_TRUE(w.ok());
    const char unknown[] = "future";
    PayloadPart part{unknown, sizeof(unknown)};
    ASSERT_TRUE(w.value()->WriteChunk(static_cast<ChunkType>(99), 0, 1, &part, 1).ok());
    struct Bigger {
      EventRecord base;
      uint64_t extra;
    } big[2] = {};
    big[0].base = MakeEvent(0);
    big[1].base = MakeEvent(1);
    big[1].extra = 77;
    PayloadPart events{big, sizeof(big)};
    ASSERT_TRUE(w.value()->WriteChunk(ChunkType::kEvents, sizeof(Bigger), 2, &events, 1).ok());
    // And a chunk whose declared record size does not match its payload.
    PayloadPart bad{big, sizeof(big) - 8};
    ASSERT_TRUE(w.value()->WriteChunk(ChunkType::kEvents, sizeof(Bigger), 2, &bad, 1).ok());
  }
  auto t = ReadRawFile(path);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->stats.unknown_chunks, 1u);
  EXPECT_EQ(t->stats.bad_records, 1u);
  ASSERT_EQ(t->events.size(), 2u);
  EXPECT_EQ(t->events[1].start_ns, MakeEvent(1).start_ns);
  EXPECT_NE(DescribeDamage(t.value()).find("unknown type"), std::string::npos);
  std::system(("rm -rf '" + std::string(tmpl) + "'").c_str());
}

TEST(RawReaderTest, AStringIdBeyondWhatTheFileCouldHoldIsDamage) {
  // String ids count up from 0 and each string record takes at least 8 bytes, so a file of
  // a few hundred bytes holds no id near 2^26 - 1: reading it as an index would allocate a
  // 2 GiB string table (found by the raw-reader fuzzer). It is a bad record instead, and
  // the good strings around it stay.
  char tmpl[] = "/tmp/teller-raw-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string path = std::string(tmpl) + "/s.tlr";
  {
    auto w = RawFileWriter::Create(path);
    ASSERT_TRUE(w.ok());
    PayloadBuilder good;
    good.AddString(3, "kept");
    ASSERT_TRUE(w.value()->WritePayload(ChunkType::kStrings, good).ok());
    PayloadBuilder huge;
    huge.AddString((1u << 26) - 1, "far");
    ASSERT_TRUE(w.value()->WritePayload(ChunkType::kStrings, huge).ok());
  }
  auto t = ReadRawFile(path);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->stats.bad_records, 1u);
  ASSERT_EQ(t->strings.size(), 4u);
  EXPECT_EQ(t->strings[3], "kept");
  std::system(("rm -rf '" + std::string(tmpl) + "'").c_str());
}

TEST(RawWriterTest, RefusesToOverwriteAnExistingFile) {
  char tmpl[] = "/tmp/teller-raw-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string path = std::string(tmpl) + "/x.tlr";
  ASSERT_TRUE(RawFileWriter::Create(path).ok());
  auto again = RawFileWriter::Create(path);
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.status().message().find(path), std::string::npos);
  std::system(("rm -rf '" + std::string(tmpl) + "'").c_str());
}

}  // namespace
}  // namespace teller::raw
