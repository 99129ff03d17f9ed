// GunzipStream: members made by zlib's deflate, read back in pieces of every size, against
// the data they were made from and against the one-shot Gunzip (libdeflate).
#include "teller/core/gunzip_stream.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <string>
#include <vector>

#include "teller/core/gzip.h"

namespace teller {
namespace {

std::string GzipMember(const std::string& data) {
  z_stream zs{};
  EXPECT_EQ(deflateInit2(&zs, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&zs, data.size()) + 64, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&zs, Z_FINISH), Z_STREAM_END);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

std::string Lines(int n, const std::string& tag) {
  std::string s;
  for (int i = 0; i < n; ++i) s += tag + " line " + std::to_string(i * 7919 % 100003) + "\n";
  return s;
}

// Yields at most `piece` bytes per read.
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

// Everything the stream yields, read `out_piece` bytes at a time; the error, if any.
std::string ReadAll(GunzipStream& g, size_t out_piece, Status* status) {
  std::string out;
  std::vector<char> buf(out_piece);
  while (true) {
    size_t got = 0;
    *status = g.Read(buf.data(), buf.size(), &got);
    if (!status->ok() || got == 0) return out;
    out.append(buf.data(), got);
  }
}

Status OneShot(const std::string& gz, const GunzipOptions& options = {}) {
  std::string out;
  return GunzipToString(gz, "f.gz", options, &out);
}

TEST(GunzipStreamTest, AllMembersInAnyPieces) {
  const std::string a = Lines(3000, "first"), b = Lines(10, "second"), c;  // c: empty member
  const std::string gz = GzipMember(a) + GzipMember(b) + GzipMember(c) + std::string(9, '\0');
  for (const size_t in_piece : {size_t{1}, size_t{5}, size_t{4096}, gz.size()}) {
    for (const size_t out_piece : {size_t{1}, size_t{13}, size_t{1} << 20}) {
      TrickleSource in(gz, in_piece);
      GunzipStream g(in, "f.gz", GunzipOptions());
      Status s;
      const std::string out = ReadAll(g, out_piece, &s);
      ASSERT_TRUE(s.ok()) << s.message();
      EXPECT_EQ(out, a + b + c) << in_piece << "/" << out_piece;
      EXPECT_EQ(g.info().members, 3u);
      EXPECT_EQ(g.info().trailing_bytes, 9u);
      EXPECT_EQ(g.info().output_bytes, a.size() + b.size());
    }
  }
}

// The error messages of the one-shot Gunzip, word for word, where both can know the same.
TEST(GunzipStreamTest, ErrorsReadAsTheOneShotGunzip) {
  const std::string m1 = GzipMember(Lines(2000, "one")), m2 = GzipMember(Lines(2000, "two"));
  std::string damaged = m1 + m2;
  damaged[m1.size() + 40] ^= 0x7f;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"not gzip", "{\"traceEvents\": []}"},
      {"empty", ""},
      {"cut in the second member", (m1 + m2).substr(0, m1.size() + m2.size() / 3)},
      {"cut in the first header", m1.substr(0, 5)},
      {"junk after the members", m1 + m2 + std::string(3, '\0') + "x"},
      {"damaged second member", damaged},
  };
  for (const auto& [what, gz] : cases) {
    const Status expected = OneShot(gz);
    ASSERT_FALSE(expected.ok()) << what;
    for (const size_t in_piece : {size_t{1}, size_t{1} << 20}) {
      TrickleSource in(gz, in_piece);
      GunzipStream g(in, "f.gz", GunzipOptions());
      Status s;
      (void)ReadAll(g, 1000, &s);
      ASSERT_FALSE(s.ok()) << what;
      if (what == "damaged second member") {
        // Both name the corrupt member's bytes; zlib reports where it stopped inside it.
        EXPECT_EQ(s.message().rfind("f.gz: corrupt gzip data at byte ", 0), 0u) << s.message();
        const size_t at = std::stoul(s.message().substr(32));
        EXPECT_GE(at, m1.size()) << s.message();
        EXPECT_LE(at, m1.size() + m2.size()) << s.message();
      } else {
        EXPECT_EQ(s.message(), expected.message()) << what << ", pieces of " << in_piece;
      }
      size_t got = 7;
      char byte;
      EXPECT_EQ(g.Read(&byte, 1, &got).message(), s.message()) << "the error is sticky";
      EXPECT_EQ(got, 0u);
    }
  }
}

TEST(GunzipStreamTest, LimitAndTrailingGarbageOptions) {
  const std::string text = Lines(5000, "x");
  const std::string gz = GzipMember(text) + "garbage";
  GunzipOptions options;
  options.allow_trailing_garbage = true;
  options.max_output_bytes = text.size();  // exactly the output: allowed
  TrickleSource in(gz, 777);
  GunzipStream g(in, "f.gz", options);
  Status s;
  EXPECT_EQ(ReadAll(g, 4096, &s), text);
  EXPECT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(g.info().trailing_bytes, 7u);

  options.max_output_bytes = text.size() - 1;
  options.limit_reason = "a test limit";
  const Status expected = OneShot(gz, options);
  TrickleSource in2(gz, 777);
  GunzipStream g2(in2, "f.gz", options);
  (void)ReadAll(g2, 4096, &s);
  EXPECT_EQ(s.message(), "f.gz: gunzipped data larger than " + std::to_string(text.size() - 1) +
                             " bytes (a test limit)");
  EXPECT_EQ(s.message(), expected.message());
}

// Read ahead on a thread: the same bytes in the same order, in any block and read size;
// an error of the inner source comes after the bytes produced before it, and stays.
TEST(GunzipStreamTest, ReadAheadYieldsTheSameBytesThenTheError) {
  const std::string a = Lines(4000, "ahead");
  const std::string gz = GzipMember(a) + GzipMember(a);
  for (const size_t block : {size_t{1}, size_t{1000}, size_t{1} << 20}) {
    for (const size_t out_piece : {size_t{7}, size_t{1} << 16}) {
      TrickleSource in(gz, 4096);
      GunzipStream g(in, "f.gz", GunzipOptions());
      ReadAheadSource ahead(g, block, 3);
      std::string out;
      std::vector<char> buf(out_piece);
      Status s;
      while (true) {
        size_t got = 0;
        s = ahead.Read(buf.data(), buf.size(), &got);
        if (!s.ok() || got == 0) break;
        out.append(buf.data(), got);
      }
      ASSERT_TRUE(s.ok()) << s.message();
      EXPECT_EQ(out, a + a) << block << "/" << out_piece;
    }
  }
  const std::string cut = gz.substr(0, gz.size() - 100);
  TrickleSource in(cut, 4096);
  GunzipStream g(in, "f.gz", GunzipOptions());
  ReadAheadSource ahead(g, 500, 2);
  std::string out;
  char buf[333];
  Status s;
  while (true) {
    size_t got = 0;
    s = ahead.Read(buf, sizeof(buf), &got);
    if (!s.ok() || got == 0) break;
    out.append(buf, got);
  }
  EXPECT_EQ(s.message(), OneShot(cut).message());
  EXPECT_GT(out.size(), a.size()) << "the bytes before the error come first";
  EXPECT_EQ(out, (a + a).substr(0, out.size()));
  size_t got = 1;
  EXPECT_EQ(ahead.Read(buf, sizeof(buf), &got).message(), s.message());
  EXPECT_EQ(got, 0u);
  // Destroyed before the end: the thread stops without reading the rest.
  TrickleSource in2(gz, 4096);
  GunzipStream g2(in2, "f.gz", GunzipOptions());
  ReadAheadSource early(g2, 100, 2);
  ASSERT_TRUE(early.Read(buf, 10, &got).ok());
  EXPECT_EQ(std::string(buf, got), a.substr(0, got));
}

}  // namespace
}  // namespace teller
