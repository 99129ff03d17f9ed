// Tests of the input dispatch (src/ingest/ingest.cc): pipes, FIFOs and devices read once as
// streams, files that are no trace refused with an error naming them, and the text check
// that still lets every real log through. Expected values are the inputs' own: the events
// and log lines a regular file of the same bytes gives, counted by hand in the texts here.
#include "teller/ingest/ingest.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <future>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "real_data.h"
#include "temp_dir.h"
#include "zlib_gzip.h"

namespace teller::ingest {
namespace {

// Three kernels and two runtime calls, one event a line (5 events).
std::string SmallTrace() {
  std::string events;
  for (int i = 0; i < 3; ++i) {
    if (i > 0) events += ",\n";
    events += "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k" + std::to_string(i) +
              "\",\"pid\":0,\"tid\":7,\"ts\":" + std::to_string(100 + i) +
              ",\"dur\":1,\"args\":{\"correlation\":" + std::to_string(i + 1) + "}}";
  }
  for (int i = 0; i < 2; ++i) {
    events +=
        ",\n{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":5,"
        "\"tid\":6,\"ts\":" +
        std::to_string(90 + i) + ",\"dur\":1,\"args\":{\"correlation\":" + std::to_string(i + 1) +
        "}}";
  }
  return "{\"schemaVersion\": 1,\n\"traceEvents\": [\n" + events + "\n]}\n";
}

// Four vLLM-style lines.
constexpr const char* kLogText =
    "INFO 06-10 06:16:58 [api_server.py:1] vLLM API server version 0.9.0\n"
    "INFO 06-10 06:16:59 [engine.py:2] Received request cmpl-1\n"
    "WARNING 06-10 06:17:00 [engine.py:3] slow step\n"
    "INFO 06-10 06:17:01 [engine.py:4] Finished request cmpl-1\n";

// gzip of `data` by zlib (independent of the libdeflate decoder under test).
std::string Deflate(const std::string& data) { return zlib_gzip::Gzip(data); }

struct Outcome {
  Status status;
  size_t events = 0;
  size_t logs = 0;
};

Outcome Import(const std::string& path) {
  Trace t;
  Outcome o;
  o.status = ImportPath(path, t);
  o.events = t.events.size();
  o.logs = t.logs.size();
  return o;
}

// ImportPath on the read end of a pipe, named /dev/fd/N (what a shell's <(...) gives, and
// what /dev/stdin is when stdin is a pipe), that a thread fills with `bytes`.
Outcome ImportThroughPipe(const std::string& bytes) {
  std::signal(SIGPIPE, SIG_IGN);  // a reader that stops early must not kill the test
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  std::thread writer([&bytes, fd = fds[1]] {
    size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
    close(fd);
  });
  Outcome o = Import("/dev/fd/" + std::to_string(fds[0]));
  close(fds[0]);
  writer.join();
  return o;
}

TEST(ImportPathTest, PipeIsReadAsAStream) {
  TempDir dir;
  const Outcome file = Import(dir.Write("t.json", SmallTrace()));
  ASSERT_TRUE(file.status.ok()) << file.status.message();
  ASSERT_EQ(file.events, 5u);
  // The same bytes through a pipe: plain, and gzipped.
  Outcome piped = ImportThroughPipe(SmallTrace());
  ASSERT_TRUE(piped.status.ok()) << piped.status.message();
  EXPECT_EQ(piped.events, 5u);
  piped = ImportThroughPipe(Deflate(SmallTrace()));
  ASSERT_TRUE(piped.status.ok()) << piped.status.message();
  EXPECT_EQ(piped.events, 5u);
  // A log through a pipe: its four lines.
  piped = ImportThroughPipe(kLogText);
  ASSERT_TRUE(piped.status.ok()) << piped.status.message();
  EXPECT_EQ(piped.logs, 4u);
  EXPECT_EQ(Import(dir.Write("serve.log", kLogText)).logs, 4u);
  // Larger than a pipe's 64 KiB buffer and than the 4 KiB looked at first: 2000 lines.
  std::string many;
  for (int i = 0; i < 500; ++i) many += kLogText;
  piped = ImportThroughPipe(many);
  ASSERT_TRUE(piped.status.ok()) << piped.status.message();
  EXPECT_EQ(piped.logs, 2000u);
  // Binary bytes through a pipe are refused after the first 4 KiB.
  std::string binary(1 << 20, '\0');
  piped = ImportThroughPipe(binary);
  ASSERT_FALSE(piped.status.ok());
  EXPECT_NE(piped.status.message().find("not a trace Teller can read: binary data"),
            std::string::npos)
      << piped.status.message();
}

TEST(ImportPathTest, FifoIsOpenedOnceAndDoesNotHang) {
  std::signal(SIGPIPE, SIG_IGN);
  TempDir dir;
  const std::string fifo = dir.Path("trace.fifo");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const std::string trace = SmallTrace();
  std::thread writer([&] {
    const int fd = open(fifo.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return;
    size_t done = 0;
    while (done < trace.size()) {
      const ssize_t n = write(fd, trace.data() + done, trace.size() - done);
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
    close(fd);
  });
  auto result = std::async(std::launch::async, [&] { return Import(fifo); });
  if (result.wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
    // A reader blocked in open() waiting for a second writer: give it one, then EOF.
    const int fd = open(fifo.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd >= 0) close(fd);
    result.wait();
    writer.join();
    FAIL() << "ImportPath on a FIFO did not return within 20 s";
  }
  const Outcome o = result.get();
  writer.join();
  ASSERT_TRUE(o.status.ok()) << o.status.message();
  EXPECT_EQ(o.events, 5u);
}

TEST(ImportPathTest, EndlessDevicesAreRefusedAtOnce) {
  for (const char* device : {"/dev/urandom", "/dev/zero"}) {
    const Outcome o = Import(device);
    ASSERT_FALSE(o.status.ok()) << device;
    EXPECT_EQ(o.status.message().rfind(
                  std::string(device) + ": not a trace Teller can read: binary data", 0),
              0u)
        << o.status.message();
  }
}

std::string RandomBytes(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(gen() & 0xff);
  return s;
}

TEST(ImportPathTest, FilesThatAreNoTraceAreErrorsNamingThem) {
  TempDir dir;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {dir.Write("random.json", RandomBytes(4096, 1)),
       "named *.json but its content is not JSON (4096 bytes, starting "},
      {dir.Write("random.sqlite", RandomBytes(4096, 2)),
       "named *.sqlite but its content is not an SQLite database"},
      {dir.Write("random.tlr", RandomBytes(9000, 3)),
       "named *.tlr but its content is not a Teller raw trace (4096+ bytes"},
      {dir.Write("random.bin", RandomBytes(100, 4)), "binary data that is no format"},
      {dir.Write("blank.json", "  \n\t\n   \r\n"), "the file holds only whitespace"},
      {dir.Write("blank.log", std::string(100, '\n')), "the file holds only whitespace"},
      {dir.Write("one.gz", "\x1f"), "named *.gz but its content is not gzip data (1 byte, "},
      {dir.Write("empty.log", ""), "the file is empty"},
      {dir.Write("report.nsys-rep", RandomBytes(64, 5)),
       "an Nsight Systems report: export it first (nsys export --type sqlite)"},
  };
  for (const auto& [path, reason] : cases) {
    const Outcome o = Import(path);
    ASSERT_FALSE(o.status.ok()) << path << " was read as a trace";
    EXPECT_EQ(o.status.message().rfind(path + ": not a trace Teller can read: " + reason, 0), 0u)
        << o.status.message();
    EXPECT_EQ(o.events + o.logs, 0u);
  }
  // A gzip header with nothing after it is a truncated gzip file, said so.
  const std::string cut = dir.Write("cut.json.gz", std::string("\x1f\x8b\x08", 3));
  const Outcome o = Import(cut);
  ASSERT_FALSE(o.status.ok());
  EXPECT_NE(o.status.message().find(cut + ": "), std::string::npos) << o.status.message();
}

TEST(DetectFormatTest, TextIsALogAndJsonIsATrace) {
  const std::vector<std::pair<std::string, InputFormat>> cases = {
      {kLogText, InputFormat::kLog},
      // SGLang starts its lines with '[': a log, not the array form.
      {"[2025-01-01 12:00:00 TP0] Prefill batch. #new-seq: 1\n", InputFormat::kLog},
      {"\x1b[32mINFO\x1b[0m 06-10 06:16:58 colored\r\n", InputFormat::kLog},
      // Latin-1 bytes in a few words: still text.
      {"2024-01-01 00:00:00 caf\xe9 ouvert, d\xe9j\xe0 pr\xeat pour la journ\xe9"
       "e de travail\n",
       InputFormat::kLog},
      {"{\"traceEvents\": []}", InputFormat::kKineto},
      {"\xEF\xBB\xBF{\"traceEvents\": []}", InputFormat::kKineto},
      {"\n  [\n  {\"ph\": \"X\"}", InputFormat::kKineto},
      {"[]", InputFormat::kKineto},
      {"TLRC....", InputFormat::kTellerRaw},
      {std::string("SQLite format 3\0", 16), InputFormat::kNsysSqlite},
      {"\x1f\x8b\x08\x00", InputFormat::kKineto},
  };
  for (const auto& [bytes, format] : cases) {
    std::string why;
    EXPECT_EQ(DetectFormatOfBytes(bytes, "input", true, &why), format) << bytes << ": " << why;
  }
  EXPECT_EQ(DetectFormatOfBytes("\x1f\x8b\x08\x00", "serve.log.gz", true), InputFormat::kLog);
  // The name promises JSON: a log inside is refused rather than read as one.
  EXPECT_EQ(DetectFormatOfBytes(kLogText, "trace.json", true), InputFormat::kUnknown);
}

// An endless device read as a stream is refused on its first bytes only when random bytes
// that open with JSON's or gzip's first byte are not taken for either (one read in 250
// opened with '{' and was read until memory ran out).
TEST(DetectFormatTest, RandomBytesOpeningLikeJsonOrGzipAreBinary) {
  for (unsigned seed = 0; seed < 64; ++seed) {
    for (const std::string prefix : {"{", " [{", "\x1f\x8b\x07", "\x1f\x8b\x08\xe0"}) {
      const std::string bytes = prefix + RandomBytes(4096 - prefix.size(), seed);
      std::string why;
      EXPECT_EQ(DetectFormatOfBytes(bytes, "/dev/urandom", false, &why), InputFormat::kUnknown)
          << seed << " " << prefix;
      EXPECT_EQ(why.rfind("binary data", 0), 0u) << why;
    }
  }
  // Text that opens with '{' is still JSON, and gzip with deflate still gzip.
  EXPECT_EQ(DetectFormatOfBytes("{\"traceEvents\": [", "/dev/stdin", false), InputFormat::kKineto);
  EXPECT_EQ(DetectFormatOfBytes(std::string("\x1f\x8b\x08\x00\x00\x00", 6) + RandomBytes(64, 1),
                                "/dev/stdin", false),
            InputFormat::kKineto);
}

TEST(DetectFormatTest, EveryRealLogIsStillALog) {
  TELLER_REQUIRE_REAL_DATA("loghub_2k/HDFS_2k.log");
  TELLER_REQUIRE_REAL_DATA("vllm_logs/llm-compressor_vllm_eval.log");
  const std::vector<std::string> logs = {"vllm_logs/llm-compressor_vllm_eval.log",
                                         "vllm_logs/production-stack_router.log",
                                         "vllm_logs/production-stack_vllm_server.log"};
  std::vector<std::string> all = logs;
  for (const char* name :
       {"Android", "Apache", "BGL", "HDFS", "HPC", "Hadoop", "HealthApp", "Linux", "Mac", "OpenSSH",
        "OpenStack", "Proxifier", "Spark", "Thunderbird", "Windows", "Zookeeper"}) {
    all.push_back(std::string("loghub_2k/") + name + "_2k.log");
  }
  for (const std::string& rel : all) {
    std::string why;
    EXPECT_EQ(DetectFormat(real_data::Path(rel), &why), InputFormat::kLog) << rel << ": " << why;
  }
}

}  // namespace
}  // namespace teller::ingest
