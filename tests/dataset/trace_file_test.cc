// The dataset's compressed trace files (docs/dataset-format.md, "trace.json.gz"): what a
// gzip FileSink writes, ReadTraceText reads back byte for byte; a damaged file is an
// error naming the file and the byte; a build refuses to add to a dataset of format 1.
#include "teller/dataset/trace_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "src/dataset/json_out.h"
#include "teller/core/gzip.h"
#include "teller/dataset/build.h"
#include "teller/dataset/stats.h"

namespace teller::dataset {
namespace {

using internal::FileSink;

class TraceFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/teller_trace_file_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::system(("rm -rf '" + dir_ + "'").c_str()); }

  static std::string Read(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  static void Write(const std::string& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary) << bytes;
  }
  static void MakeDir(const std::string& path) {
    ASSERT_EQ(std::system(("mkdir -p '" + path + "'").c_str()), 0);
  }

  // A hand-built trace of two steps, the second sharing a record too large for the
  // buffer (what the requests of a batch repeat); written through a gzip sink in the
  // pieces the build writes, the shared record compressed once for both files. Returns
  // the plain text every file must read back as.
  std::string WriteTwoTraces(const std::string& a, const std::string& b) {
    std::string nodes = "[";
    for (int i = 0; i < 6000; ++i) {
      if (i) nodes += ',';
      nodes += "{\"id\":" + std::to_string(i) + ",\"parent\":" + std::to_string(i - 1) +
               ",\"depth\":" + std::to_string(i % 7) +
               ",\"layer\":\"GPU\",\"type\":\"kernel\",\"name\":\"gemm_" + std::to_string(i % 13) +
               "\",\"start_ns\":" + std::to_string(1000 + 37 * i) +
               ",\"dur_ns\":" + std::to_string(i * i % 977) + "}";
    }
    nodes += "]";
    EXPECT_GT(nodes.size(), size_t{256} << 10) << "large enough to be shared as a member";
    const std::string head =
        "{\"format\":\"teller-dataset-trace\",\"version\":2,\"request\":\"r\",\"steps\":[";
    const std::string step0 = "{\"step\":0,\"seq\":4,\"nodes\":[{\"id\":0,\"parent\":-1}]}";
    std::string member;  // the shared record's member, built by the first sink
    for (const std::string& path : {a, b}) {
      FileSink sink(path, FileSink::Compression::kGzip);
      sink.buffer() += head + step0;
      EXPECT_TRUE(sink.MaybeFlush(16).ok());  // a member of its own
      sink.buffer() += ",{\"step\":1,\"seq\":5,\"nodes\":";
      EXPECT_TRUE(sink.AppendShared(nodes, &member).ok());
      sink.buffer() += "}]}\n";
      EXPECT_TRUE(sink.Close().ok());
      EXPECT_FALSE(member.empty());
    }
    return head + step0 + ",{\"step\":1,\"seq\":5,\"nodes\":" + nodes + "}]}\n";
  }

  std::string dir_;
};

TEST_F(TraceFileTest, WhatTheGzipSinkWritesReadsBackAsTheText) {
  const std::string a = dir_ + "/a.json.gz", b = dir_ + "/b.json.gz";
  const std::string plain = WriteTwoTraces(a, b);
  for (const std::string& path : {a, b}) {
    const std::string bytes = Read(path);
    EXPECT_TRUE(IsGzip(bytes)) << path;
    EXPECT_LT(bytes.size() * 5, plain.size()) << "compressed";
    Result<std::string> text = ReadTraceText(path);
    ASSERT_TRUE(text.ok()) << text.status().message();
    EXPECT_EQ(text.value(), plain) << path;
    // A run of members (header and first step, opening of step 1, the shared record, the
    // end): any gzip reader takes it as one stream.
    std::string again;
    GunzipInfo info;
    ASSERT_TRUE(GunzipToString(bytes, path, GunzipOptions(), &again, &info).ok());
    EXPECT_EQ(again, plain);
    EXPECT_EQ(info.members, 4u);
  }
  EXPECT_EQ(Read(a), Read(b)) << "the shared member is written to both files as is";

  // A plain file reads as it is; a sink with nothing written still makes a valid gzip file.
  Write(dir_ + "/plain.json", "{\"steps\":[]}");
  EXPECT_EQ(ReadTraceText(dir_ + "/plain.json").value(), "{\"steps\":[]}");
  FileSink empty(dir_ + "/empty.json.gz", FileSink::Compression::kGzip);
  ASSERT_TRUE(empty.Close().ok());
  Result<std::string> none = ReadTraceText(dir_ + "/empty.json.gz");
  ASSERT_TRUE(none.ok()) << none.status().message();
  EXPECT_EQ(none.value(), "");
}

TEST_F(TraceFileTest, TheTraceFileOfARequestPrefersTheCompressedOne) {
  EXPECT_EQ(TraceFileIn(dir_), "");
  Write(dir_ + "/trace.json", "{}");
  EXPECT_EQ(TraceFileIn(dir_), dir_ + "/trace.json");
  Write(dir_ + "/trace.json.gz", "");
  EXPECT_EQ(TraceFileIn(dir_), dir_ + "/trace.json.gz");
}

TEST_F(TraceFileTest, ADamagedFileIsAnErrorNamingTheFileAndTheByte) {
  const std::string a = dir_ + "/a.json.gz", b = dir_ + "/b.json.gz";
  WriteTwoTraces(a, b);
  const std::string bytes = Read(a);

  // Cut in the middle: the error says where the input ends and where its member began.
  Write(a, bytes.substr(0, bytes.size() / 2));
  Result<std::string> cut = ReadTraceText(a);
  ASSERT_FALSE(cut.ok());
  EXPECT_EQ(cut.status().message().rfind(a + ": truncated gzip stream (input ends at byte " +
                                             std::to_string(bytes.size() / 2) +
                                             " inside a member starting at byte ",
                                         0),
            0u)
      << cut.status().message();

  // A flipped byte in the deflate data of the large member.
  std::string flipped = bytes;
  for (size_t i = bytes.size() / 2; i < bytes.size() / 2 + 64; ++i) flipped[i] ^= 0x5a;
  Write(a, flipped);
  Result<std::string> corrupt = ReadTraceText(a);
  ASSERT_FALSE(corrupt.ok());
  EXPECT_EQ(corrupt.status().message().rfind(a + ": corrupt gzip data at byte ", 0), 0u)
      << corrupt.status().message();

  // Not gzip at all, though named .gz (a plain trace renamed, an empty file).
  Write(a, "");
  Result<std::string> empty = ReadTraceText(a);
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.status().message(), a + ": not a gzip stream");

  // `teller dataset stats` recounting a dataset (no index.json) names the damaged file.
  const std::string request = dir_ + "/ds/s/r";
  MakeDir(request);
  Write(request + "/annotation.json",
        "{\"format\":\"teller-dataset-annotation\",\"version\":2,\"request\":\"r\","
        "\"is_fault\":false,\"fault_type\":null,\"steps\":[]}");
  Write(request + "/trace.json.gz", bytes.substr(0, 100));
  Result<DatasetStats> stats = ReadDatasetStats(dir_ + "/ds");
  ASSERT_FALSE(stats.ok());
  EXPECT_NE(stats.status().message().find(request + "/trace.json.gz: truncated gzip stream"),
            std::string::npos)
      << stats.status().message();
  Write(request + "/trace.json.gz", bytes);
  stats = ReadDatasetStats(dir_ + "/ds");
  ASSERT_TRUE(stats.ok()) << stats.status().message();
  EXPECT_EQ(stats->total.nodes, 6001u);
}

TEST_F(TraceFileTest, ABuildRefusesToAddToADatasetOfAnOlderFormat) {
  // index.json of a format 1 dataset (plain trace.json files): a build into it would mix
  // formats in one dataset, so it is refused before any work, saying what to do.
  MakeDir(dir_ + "/ds");
  Write(dir_ + "/ds/index.json",
        "{\"format\":\"teller-dataset-index\",\"version\":1,\"settings\":[]}\n");
  BuildOptions options;
  Result<BuildSummary> built = BuildDataset({dir_ + "/no-such-input"}, dir_ + "/ds", options);
  ASSERT_FALSE(built.ok());
  const std::string& m = built.status().message();
  EXPECT_EQ(m.rfind(dir_ + "/ds/index.json: dataset format version 1", 0), 0u) << m;
  EXPECT_NE(m.find("rebuild"), std::string::npos) << m;

  // One written by a newer teller is refused by the readers too.
  Write(dir_ + "/ds/index.json",
        "{\"format\":\"teller-dataset-index\",\"version\":99,\"settings\":[]}\n");
  Result<DatasetStats> stats = ReadDatasetStats(dir_ + "/ds");
  ASSERT_FALSE(stats.ok());
  EXPECT_NE(stats.status().message().find("dataset format version 99"), std::string::npos)
      << stats.status().message();
}

}  // namespace
}  // namespace teller::dataset
