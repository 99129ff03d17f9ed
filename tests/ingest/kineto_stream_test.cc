// Tests of the streaming Kineto import (docs/ingest-kineto.md, "Streaming"): text read in
// pieces and dropped once parsed must give exactly what the parse of the whole text
// gives (ImportKinetoJson, the reference): the same rows, counters, processes and
// success, and the same error byte. Read boundaries are put everywhere with sources that
// yield a few bytes at a time; gzip input is made by zlib's deflate (tests/zlib_gzip.h)
// in members split at arbitrary bytes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "real_data.h"
#include "src/ingest/kineto_importer.h"
#include "teller/core/gunzip_stream.h"
#include "teller/ingest/ingest.h"
#include "zlib_gzip.h"

namespace teller::ingest {
namespace {

// Yields at most `piece` bytes per read, so that every read boundary falls somewhere new.
class TrickleSource : public ByteSource {
 public:
  TrickleSource(std::string_view bytes, size_t piece) : bytes_(bytes), piece_(piece) {}
  Status Read(char* dst, size_t capacity, size_t* got) override {
    *got = std::min({capacity, piece_, bytes_.size() - pos_});
    std::copy_n(bytes_.data() + pos_, *got, dst);
    pos_ += *got;
    return Status::Ok();
  }

 private:
  std::string_view bytes_;
  size_t piece_;
  size_t pos_ = 0;
};

// Restores the default window and read sizes when a test ends, also when it fails.
struct SizesGuard {
  ~SizesGuard() {
    SetKinetoWindowBytesForTesting(0);
    SetKinetoReadBytesForTesting(0);
    SetKinetoGunzipThreadForTesting(true);
  }
};

// The reference: the whole text in one buffer.
Status ImportWhole(const std::string& json, Trace& t, const std::string& name = "mem.json") {
  PaddedBuffer buf;
  if (!buf.Reserve(json.size())) return Status::Error("out of memory");
  std::copy(json.begin(), json.end(), buf.data());
  buf.Resize(json.size());
  return ImportKinetoJson(buf, name, t);
}

Status ImportStreamed(const std::string& json, size_t piece, Trace& t,
                      const std::string& name = "mem.json") {
  TrickleSource source(json, piece);
  return ImportKinetoStream(source, name, t, json.size());
}

// Every column of every row, the counters and the processes, by value (strings by text:
// the two traces intern in their own pools).
void ExpectSameTrace(const Trace& a, const Trace& b, const std::string& what) {
  const EventTable& x = a.events;
  const EventTable& y = b.events;
  ASSERT_EQ(x.size(), y.size()) << what;
  for (size_t i = 0; i < x.size(); ++i) {
    const auto str = [](const Trace& t, StringId id) { return std::string(t.strings.Get(id)); };
    ASSERT_EQ(x.type[i], y.type[i]) << what << " row " << i;
    ASSERT_EQ(str(a, x.name[i]), str(b, y.name[i])) << what << " row " << i;
    ASSERT_EQ(str(a, x.category[i]), str(b, y.category[i])) << what << " row " << i;
    ASSERT_EQ(str(a, x.signature[i]), str(b, y.signature[i])) << what << " row " << i;
    ASSERT_EQ(x.process[i], y.process[i]) << what << " row " << i;
    ASSERT_EQ(x.thread[i], y.thread[i]) << what << " row " << i;
    ASSERT_EQ(x.start_ns[i], y.start_ns[i]) << what << " row " << i;
    ASSERT_EQ(x.end_ns[i], y.end_ns[i]) << what << " row " << i;
    ASSERT_EQ(x.correlation[i], y.correlation[i]) << what << " row " << i;
    ASSERT_EQ(x.external_id[i], y.external_id[i]) << what << " row " << i;
    ASSERT_EQ(x.device[i], y.device[i]) << what << " row " << i;
    ASSERT_EQ(x.stream[i], y.stream[i]) << what << " row " << i;
    ASSERT_EQ(x.bytes[i], y.bytes[i]) << what << " row " << i;
    ASSERT_EQ(x.flags[i], y.flags[i]) << what << " row " << i;
  }
  EXPECT_EQ(a.counters.items(), b.counters.items()) << what;
  ASSERT_EQ(a.processes.size(), b.processes.size()) << what;
  for (size_t i = 0; i < a.processes.size(); ++i) {
    EXPECT_EQ(a.processes[i].pid, b.processes[i].pid) << what;
    EXPECT_EQ(a.processes[i].rank, b.processes[i].rank) << what;
    EXPECT_EQ(a.processes[i].world_size, b.processes[i].world_size) << what;
  }
  EXPECT_EQ(a.sources, b.sources) << what;
}

// A trace with what the window logic must get right: events one per line (cuts), an
// event whose args hold objects split over lines (cut candidates inside an event, which
// must be rolled back), GPU rows, instants, flows, an unknown category, and top-level
// keys after traceEvents (the base time). `n` events, op<i> at ts = 10 * i us.
std::string MixedTrace(int n) {
  std::string events;
  for (int i = 0; i < n; ++i) {
    if (i > 0) events += ",\n  ";
    const std::string ts = std::to_string(10 * i);
    switch (i % 5) {
      case 0:
        events += "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"op" + std::to_string(i) +
                  "\",\"pid\":7,\"tid\":3,\"ts\":" + ts +
                  ".125,\"dur\":4,\"args\":{\"l\":[{\"a\":1},\n"
                  "   {\"b\":\"},\\n{\"}]}}";
        break;
      case 1:
        events += "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k" + std::to_string(i % 7) +
                  "\",\"pid\":0,\"tid\":7,\"ts\":" + ts +
                  ",\"dur\":2,\"args\":{\"correlation\":" + std::to_string(i) +
                  ",\"device\":0,\"stream\":7,\"grid\":[1,2,3],\"block\":[64,1,1]}}";
        break;
      case 2:
        events +=
            "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":7,"
            "\"tid\":3,\"ts\":" +
            ts + ",\"dur\":1,\"args\":{\"correlation\":" + std::to_string(i - 1) + "}}";
        break;
      case 3:
        events += "{\"ph\":\"s\",\"id\":" + std::to_string(i) +
                  ",\"pid\":7,\"tid\":3,\"ts\":" + ts + ",\"cat\":\"ac2g\",\"name\":\"ac2g\"}";
        break;
      default:
        events +=
            "{\"ph\":\"i\",\"s\":\"t\",\"name\":\"[memory]\",\"pid\":8,\"tid\":\"PyTorch\","
            "\"ts\":" +
            ts +
            "},\n  {\"ph\":\"X\",\"cat\":\"Trace\",\"name\":\"t\",\"pid\":7,"
            "\"tid\":3,\"ts\":" +
            ts + ",\"dur\":1}";
        break;
    }
  }
  return "{\n  \"schemaVersion\": 1,\n  \"distributedInfo\": {\"rank\": 3, \"world_size\": 4},\n"
         "  \"traceEvents\": [\n  " +
         events + "\n  ],\n  \"baseTimeNanoseconds\": 1000000\n}\n";
}

TEST(KinetoStreamTest, TinyWindowsAndTinyReadsGiveTheWholeParse) {
  SizesGuard guard;
  const std::string object_form = MixedTrace(400);
  const std::string array_body = object_form.substr(
      object_form.find('[') + 1, object_form.rfind(']') - object_form.find('[') - 1);
  const std::vector<std::pair<std::string, std::string>> forms = {
      {"object", object_form},
      {"bom object", "\xEF\xBB\xBF" + object_form},
      {"array", "  [" + array_body + "]\n"},
      {"array without ]", "[" + array_body},
      {"array without ] after a comma", "\xEF\xBB\xBF[" + array_body + ",\n\n  "},
  };
  for (const size_t window : {size_t{256}, size_t{1000}, size_t{0}}) {
    SetKinetoWindowBytesForTesting(window);
    Trace whole_object;
    ASSERT_TRUE(ImportWhole(object_form, whole_object).ok());
    // Independently: 400 events of 5 kinds, 4 of them rows, one flow.
    // kinds 0, 1, 2 give a row each, kind 4 an instant (plus an unknown-category X).
    ASSERT_EQ(whole_object.events.size(), 80u * 4u) << "window " << window;
    EXPECT_EQ(whole_object.events.start_ns[0], 1000000 + 125);
    for (const auto& [what, text] : forms) {
      Trace whole;
      const Status ws = ImportWhole(text, whole);
      ASSERT_TRUE(ws.ok()) << what << ": " << ws.message();
      for (const size_t piece : {size_t{1}, size_t{7}, size_t{300}, size_t{1} << 20}) {
        SetKinetoReadBytesForTesting(piece);
        Trace streamed;
        const Status ss = ImportStreamed(text, piece, streamed);
        ASSERT_TRUE(ss.ok()) << what << ", window " << window << ", piece " << piece << ": "
                             << ss.message();
        ExpectSameTrace(
            streamed, whole,
            what + ", window " + std::to_string(window) + ", piece " + std::to_string(piece));
      }
    }
  }
}

// The opening quote of the string a text cut inside a string ends in, found here by
// following the quotes and escapes from the start (independently of the importer).
size_t OpenStringAt(const std::string& text) {
  bool in_string = false;
  size_t start = std::string::npos;
  for (size_t i = 0; i < text.size(); ++i) {
    if (in_string && text[i] == '\\') {
      ++i;
    } else if (text[i] == '"') {
      in_string = !in_string;
      if (in_string) start = i;
    }
  }
  return in_string ? start : std::string::npos;
}

// Cut the text every 13 bytes: the streaming parse fails exactly where the whole parse
// fails, with the same message (the same byte), and succeeds with the same rows where it
// succeeds (a cut after the traceEvents' `]` and before the final `}` is still an error;
// an array form cut after an event is closed and reads).
TEST(KinetoStreamTest, TruncationEvery13BytesGivesTheSameErrorByte) {
  SizesGuard guard;
  const std::string object_form = MixedTrace(60);
  const std::string array_form =
      object_form.substr(object_form.find('['), object_form.rfind(']') - object_form.find('[') + 1);
  for (const std::string* text : {&object_form, &array_form}) {
    for (const size_t window : {size_t{256}, size_t{0}}) {
      SetKinetoWindowBytesForTesting(window);
      SetKinetoReadBytesForTesting(5);
      size_t errors = 0;
      size_t in_string = 0;
      for (size_t n = 0; n <= text->size(); n += 13) {
        const std::string cut = text->substr(0, n);
        Trace whole;
        Trace streamed;
        const Status ws = ImportWhole(cut, whole);
        const Status ss = ImportStreamed(cut, 5, streamed);
        ASSERT_EQ(ss.ok(), ws.ok())
            << "cut at " << n << ": " << ws.message() << " | " << ss.message();
        EXPECT_EQ(ss.message(), ws.message()) << "cut at " << n << ", window " << window;
        if (ws.ok()) {
          ExpectSameTrace(streamed, whole, "cut at " + std::to_string(n));
        } else {
          EXPECT_EQ(streamed.events.size(), 0u) << "cut at " << n;
        }
        // Cut inside a string: the error names its opening quote (true in both paths, also
        // after windows were cut before it); any other cut: the end of the input.
        const size_t open = OpenStringAt(cut);
        if (open != std::string::npos) {
          ++in_string;
          EXPECT_EQ(ss.message().rfind("mem.json: invalid JSON at byte " + std::to_string(open) +
                                           ": A string is opened, but never closed.",
                                       0),
                    0u)
              << "cut at " << n << ": " << ss.message();
        } else if (!ws.ok() && ws.message().find("the file ends inside") != std::string::npos) {
          EXPECT_NE(ss.message().find("at byte " + std::to_string(n) + " (the end of the input)"),
                    std::string::npos)
              << ss.message();
        }
        // What users get (ImportKinetoBytes: streamed, the one-shot path on error) is the
        // same.
        Trace pub;
        EXPECT_EQ(ImportKinetoBytes(cut, "mem.json", pub).message(), ws.message());
        errors += !ws.ok();
      }
      EXPECT_GT(errors, text->size() / 13 / 2) << "most cuts must be errors";
      EXPECT_GT(in_string, text->size() / 13 / 4) << "many cuts fall inside strings";
    }
  }
}

// gzip members split at arbitrary bytes (across windows, across JSON tokens), zero
// padding after the last member, compressed input read a few bytes at a time.
TEST(KinetoStreamTest, GzipMembersAcrossWindows) {
  SizesGuard guard;
  const std::string json = MixedTrace(500);
  SetKinetoWindowBytesForTesting(700);
  Trace whole;
  ASSERT_TRUE(ImportWhole(json, whole).ok());
  for (const size_t member : {size_t{97}, size_t{333}, size_t{4096}, json.size()}) {
    std::string gz;
    size_t members = 0;
    for (size_t at = 0; at < json.size(); at += member, ++members) {
      gz += zlib_gzip::Gzip(json.substr(at, member));
    }
    gz += std::string(37, '\0');
    for (const size_t piece : {size_t{3}, size_t{1} << 16}) {
      SetKinetoReadBytesForTesting(piece == 3 ? 11 : 0);
      TrickleSource compressed(gz, piece);
      GunzipOptions options;
      GunzipStream gunzip(compressed, "m.json.gz", options);
      Trace streamed;
      const Status s = ImportKinetoStream(gunzip, "mem.json", streamed, 0);
      ASSERT_TRUE(s.ok()) << "members of " << member << ": " << s.message();
      EXPECT_EQ(gunzip.info().members, members);
      EXPECT_EQ(gunzip.info().trailing_bytes, 37u);
      EXPECT_EQ(gunzip.info().output_bytes, json.size());
      ExpectSameTrace(streamed, whole, "members of " + std::to_string(member));
    }
  }
}

// Text with no newline between events (JSON written on one line, as json.dump does): the
// newline cuts find nothing, so the streaming path follows the structure to cut it, and
// every document handed to simdjson stays near the window size however long the text is
// (what lets a one-line document beyond simdjson's 4 GiB limit be read). Strings hold
// `},{` and escaped quotes, args hold arrays of objects: commas that are no cut.
TEST(KinetoStreamTest, OneLineTextIsParsedInWindows) {
  SizesGuard guard;
  std::string events;
  for (int i = 0; i < 600; ++i) {
    if (i > 0) events += i % 3 == 0 ? ", " : ",";
    events += "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"op" + std::to_string(i) +
              (i % 4 == 0 ? "},{\\\"},{\\\\" : "") +
              "\",\"pid\":1,\"tid\":2,\"ts\":" + std::to_string(10 * i) +
              ",\"dur\":3,\"args\":{\"l\":[{\"a\":1},{\"b\":[{},{}]}]}}";
  }
  const std::string object_form =
      "{\"schemaVersion\":1,\"deviceProperties\":[{\"id\":0},{\"id\":1}],\"traceEvents\":[" +
      events + "],\"baseTimeNanoseconds\":5000}";
  const std::string array_form = "[" + events + "]";
  ASSERT_EQ(object_form.find('\n'), std::string::npos);
  const size_t window = 2000;
  const size_t event_bytes = 200;  // longer than any one event above
  for (const std::string* text : {&object_form, &array_form}) {
    SetKinetoWindowBytesForTesting(window);
    (void)TakeKinetoLargestWindowForTesting();
    Trace whole;
    ASSERT_TRUE(ImportWhole(*text, whole).ok());
    // The whole-text path has no cut to use: one document of the whole text.
    EXPECT_EQ(TakeKinetoLargestWindowForTesting(), text->size());
    ASSERT_EQ(whole.events.size(), 600u);
    EXPECT_EQ(whole.strings.Get(whole.events.name[4]), "op4},{\"},{\\");  // unescaped
    EXPECT_EQ(whole.events.start_ns[599], (text == &object_form ? 5000 : 0) + 5990000);
    for (const size_t piece : {size_t{1}, size_t{4096}}) {
      SetKinetoReadBytesForTesting(piece);
      Trace streamed;
      const Status s = ImportStreamed(*text, piece, streamed);
      ASSERT_TRUE(s.ok()) << s.message();
      // At most the window, the search for a newline cut (a window more), and an event.
      EXPECT_LE(TakeKinetoLargestWindowForTesting(), 2 * window + event_bytes + 64);
      ExpectSameTrace(streamed, whole, "one line, pieces of " + std::to_string(piece));
    }
  }
  // With newlines, windows end at the first cut after the window size.
  SetKinetoWindowBytesForTesting(window);
  SetKinetoReadBytesForTesting(0);
  const std::string lines = MixedTrace(800);
  Trace streamed;
  ASSERT_TRUE(ImportStreamed(lines, 1 << 16, streamed).ok());
  EXPECT_LE(TakeKinetoLargestWindowForTesting(), window + 2 * event_bytes);
}

class TempFile {
 public:
  explicit TempFile(const std::string& bytes, const std::string& suffix) {
    char tmpl[] = "/tmp/kineto_stream_test_XXXXXX";
    const int fd = mkstemp(tmpl);
    path_ = std::string(tmpl) + suffix;
    close(fd);
    std::rename(tmpl, path_.c_str());
    std::ofstream(path_, std::ios::binary) << bytes;
  }
  ~TempFile() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The message of the one-shot path, independently: the file read whole (ReadMaybeGzip,
// libdeflate) and parsed whole.
std::string WholeFileError(const std::string& path) {
  PaddedBuffer json;
  GunzipInfo info;
  Status s = ReadMaybeGzip(path, json, &info);
  if (s.ok()) {
    Trace t;
    s = ImportKinetoJson(json, path, t, info.members);
  }
  return s.message();
}

// Errors of gzip data found while windows are being parsed (a damaged second member, a
// file cut inside a member, junk after the last member, the gzip-bomb guard) and of JSON
// split over members: ImportKineto reports them as the whole-file path does, and leaves
// the trace unchanged.
TEST(KinetoStreamTest, GzipErrorsAcrossWindowsReadAsBefore) {
  SizesGuard guard;
  SetKinetoWindowBytesForTesting(600);
  SetKinetoReadBytesForTesting(100);
  const std::string json = MixedTrace(300);
  const size_t half = json.size() / 2;
  const std::string first = zlib_gzip::Gzip(json.substr(0, half));
  const std::string second = zlib_gzip::Gzip(json.substr(half));
  std::string damaged = first + second;
  damaged[first.size() + second.size() / 2] ^= 0x55;
  const std::string cut = (first + second).substr(0, first.size() + second.size() / 2);
  const std::string junk = first + second + "junk";
  const std::string two_docs = zlib_gzip::Gzip(json) + zlib_gzip::Gzip(json);
  std::string bad_json = json;
  bad_json[json.size() * 3 / 4] = '#';
  const std::string bad_json_gz =
      zlib_gzip::Gzip(bad_json.substr(0, half)) + zlib_gzip::Gzip(bad_json.substr(half));
  struct Case {
    std::string what, bytes, expected_start;
  };
  const std::vector<Case> cases = {
      {"damaged", damaged, "corrupt gzip data at byte "},
      {"cut", cut,
       "truncated gzip stream (input ends at byte " + std::to_string(cut.size()) +
           " inside a member starting at byte " + std::to_string(first.size())},
      {"junk", junk,
       "corrupt gzip data at byte " + std::to_string(first.size() + second.size()) +
           " (trailing bytes after the last member)"},
      {"two documents", two_docs,
       "invalid JSON at byte " + std::to_string(json.size()) +
           ": a second JSON document follows the trace (concatenated documents; the file has 2 "
           "gzip members)"},
      {"bad json", bad_json_gz, "invalid JSON at byte "},
  };
  for (const Case& c : cases) {
    const TempFile file(c.bytes, ".json.gz");
    Trace t;
    const Status s = ImportKineto(file.path(), t);
    ASSERT_FALSE(s.ok()) << c.what;
    EXPECT_EQ(s.message(), WholeFileError(file.path())) << c.what;
    EXPECT_EQ(s.message().rfind(file.path() + ": " + c.expected_start, 0), 0u)
        << c.what << ": " << s.message();
    EXPECT_EQ(t.events.size(), 0u) << c.what;
    EXPECT_TRUE(t.sources.empty()) << c.what;
    // The streaming path fails on its own too (it never reads a bad file as good).
    TrickleSource compressed(c.bytes, 1000);
    GunzipOptions options;
    GunzipStream gunzip(compressed, "x.json.gz", options);
    Trace u;
    EXPECT_FALSE(ImportKinetoStream(gunzip, "x.json.gz", u, 0).ok()) << c.what;
  }
  // The guard: a limit below the text's size stops the stream.
  const TempFile file(first + second, ".json.gz");
  setenv("TELLER_MAX_GUNZIP_BYTES", "4K", 1);
  Trace t;
  const Status s = ImportKineto(file.path(), t);
  unsetenv("TELLER_MAX_GUNZIP_BYTES");
  EXPECT_EQ(s.message(), file.path() +
                             ": gunzipped data larger than 4096 bytes (the limit set by "
                             "TELLER_MAX_GUNZIP_BYTES)");
  Trace u;
  ASSERT_TRUE(ImportKineto(file.path(), u).ok());
  Trace whole;
  ASSERT_TRUE(ImportWhole(json, whole, file.path()).ok());
  ExpectSameTrace(u, whole, "two members");
}

// Real Kineto traces of the reference set, plain and gzip: the streamed import (the file
// read in 4 KiB pieces, 64 KiB windows, so hundreds of windows per file, gunzip inline;
// then the defaults, gunzip on its own thread where there is a second core) gives the
// rows of the whole-file import.
TEST(KinetoStreamTest, RealTracesStreamAsTheyParseWhole) {
  TELLER_REQUIRE_REAL_DATA("hta");
  SizesGuard guard;
  const std::vector<std::string> files = {
      "hta/df_index_resolver__df_index_resolver.json.gz",
      "hta/call_stack__backward_thread.json",
      "hta/nccl_parser_config__nccl_data.json.gz",
      "hta/mtia_inference_trace__mtia_inference_rank_0.json.gz",
      "hta/trace_filter__sampled_rank-0.json.gz",
      "kineto/before_fix_trace.json",
      "kineto/resnet50_nw0_worker0.1623143089861.pt.trace.json.gz",
  };
  for (const std::string& rel : files) {
    const std::string path = real_data::Path(rel);
    for (const size_t window : {size_t{64} << 10, size_t{0}}) {
      SetKinetoWindowBytesForTesting(window);
      SetKinetoReadBytesForTesting(window == 0 ? 0 : 4096);
      SetKinetoGunzipThreadForTesting(window == 0);  // gunzip beside the parse, and inline
      PaddedBuffer json;
      GunzipInfo info;
      ASSERT_TRUE(ReadMaybeGzip(path, json, &info).ok()) << rel;
      Trace whole;
      ASSERT_TRUE(ImportKinetoJson(json, path, whole, info.members).ok()) << rel;
      Trace streamed;
      const Status s = ImportKineto(path, streamed);
      ASSERT_TRUE(s.ok()) << rel << ": " << s.message();
      ExpectSameTrace(streamed, whole, rel + ", window " + std::to_string(window));
    }
  }
}

// Texts that end before their form is known are closed as the whole parse closes them: an
// array form of no event with a trailing comma ("[,") is an empty trace both ways (found by
// the stream fuzzer).
TEST(KinetoStreamTest, ATextShorterThanAByteOrderMarkIsClosedAsWhole) {
  for (const std::string text : {std::string("[,"), std::string("["), std::string(" [,"),
                                 std::string("{"), std::string("[}"), std::string("x[,")}) {
    for (size_t piece : {size_t{1}, size_t{2}, size_t{100}}) {
      Trace a, b;
      const Status whole = ImportWhole(text, a);
      const Status stream = ImportStreamed(text, piece, b);
      EXPECT_EQ(whole.ok(), stream.ok())
          << "'" << text << "' piece " << piece << ": whole '" << whole.message() << "', streamed '"
          << stream.message() << "'";
      if (!whole.ok()) {
        EXPECT_EQ(whole.message(), stream.message()) << text;
      }
    }
  }
}
}  // namespace
}  // namespace teller::ingest
