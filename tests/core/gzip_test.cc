// Gunzip: members made by zlib's deflate (an implementation independent of the
// libdeflate decoder under test), then concatenated, cut and damaged.
#include "teller/core/gzip.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

namespace teller {
namespace {

std::string GzipMember(const std::string& data, int level = 6) {
  z_stream zs{};
  EXPECT_EQ(deflateInit2(&zs, level, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
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

// Text that compresses but not to nothing: numbered lines.
std::string Lines(int n, const std::string& tag) {
  std::string s;
  for (int i = 0; i < n; ++i) s += tag + " line " + std::to_string(i * 7919 % 100003) + "\n";
  return s;
}

TEST(GunzipTest, AllMembersInOrder) {
  const std::string a = Lines(1000, "first"), b = Lines(10, "second"), c;  // c: empty member
  const std::string gz = GzipMember(a) + GzipMember(b) + GzipMember(c);
  std::string out = "stale";
  GunzipInfo info;
  ASSERT_TRUE(GunzipToString(gz, "x.json.gz", {}, &out, &info).ok());
  EXPECT_EQ(out, a + b);
  EXPECT_EQ(info.members, 3u);
  EXPECT_EQ(info.output_bytes, a.size() + b.size());
  EXPECT_EQ(info.trailing_bytes, 0u);
}

TEST(GunzipTest, GrowsPastTheSizeHint) {
  // The hint (the last member's ISIZE, or 4x the input) is far below the output: one
  // highly compressible 30 MB member, then a small last member.
  const std::string big(size_t{30} << 20, 'z');
  const std::string tail = "end\n";
  std::string out;
  ASSERT_TRUE(GunzipToString(GzipMember(big, 9) + GzipMember(tail), "big.gz", {}, &out).ok());
  ASSERT_EQ(out.size(), big.size() + tail.size());
  EXPECT_EQ(out.substr(big.size()), tail);
  EXPECT_EQ(out.find_first_not_of('z'), big.size());
}

TEST(GunzipTest, TrailingZerosPassGarbageDependsOnTheOption) {
  const std::string text = Lines(50, "t");
  const std::string member = GzipMember(text);
  std::string out;
  GunzipInfo info;
  ASSERT_TRUE(GunzipToString(member + std::string(512, '\0'), "z.gz", {}, &out, &info).ok());
  EXPECT_EQ(out, text);
  EXPECT_EQ(info.trailing_bytes, 512u);

  const std::string junk = member + "JUNK";
  const Status s = GunzipToString(junk, "j.gz", {}, &out);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "j.gz: corrupt gzip data at byte " + std::to_string(member.size()) +
                             " (trailing bytes after the last member)");
  EXPECT_TRUE(out.empty());

  GunzipOptions lenient;
  lenient.allow_trailing_garbage = true;
  ASSERT_TRUE(GunzipToString(junk, "j.gz", lenient, &out, &info).ok());
  EXPECT_EQ(out, text);
  EXPECT_EQ(info.trailing_bytes, 4u);
}

TEST(GunzipTest, TruncatedNamesTheEndAndTheMember) {
  const std::string first = GzipMember(Lines(300, "a"));
  const std::string second = GzipMember(Lines(300, "b"));
  const std::string cut = first + second.substr(0, second.size() / 2);
  std::string out;
  const Status s = GunzipToString(cut, "half.json.gz", {}, &out);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "half.json.gz: truncated gzip stream (input ends at byte " +
                             std::to_string(cut.size()) + " inside a member starting at byte " +
                             std::to_string(first.size()) + ")");
  // Cut inside the 8-byte trailer (CRC32, ISIZE): still a truncation, not corruption.
  const std::string no_trailer = first.substr(0, first.size() - 3);
  const Status t = GunzipToString(no_trailer, "t.gz", {}, &out);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(
      t.message().find("t.gz: truncated gzip stream (input ends at byte " +
                       std::to_string(no_trailer.size()) + " inside a member starting at byte 0"),
      std::string::npos)
      << t.message();
}

TEST(GunzipTest, CorruptDataNamesAByteInsideTheBadMember) {
  const std::string first = GzipMember(Lines(300, "a"));
  std::string second = GzipMember(Lines(300, "b"));
  second[second.size() - 6] ^= 0x01;  // a bit of the second member's CRC32
  const std::string gz = first + second;
  std::string out;
  const Status s = GunzipToString(gz, "bad.gz", {}, &out);
  ASSERT_FALSE(s.ok());
  const std::string prefix = "bad.gz: corrupt gzip data at byte ";
  ASSERT_EQ(s.message().rfind(prefix, 0), 0u) << s.message();
  const size_t at = std::stoul(s.message().substr(prefix.size()));
  EXPECT_GE(at, first.size()) << s.message();
  EXPECT_LE(at, gz.size()) << s.message();
  EXPECT_NE(s.message().find("incorrect data check"), std::string::npos) << s.message();

  // A bad block type in the first byte after the 10-byte header: the offset is the input
  // consumed when the error was seen, the header and that byte: 11.
  std::string header_bad = first;
  header_bad[10] = static_cast<char>(0x07);  // BFINAL=1, BTYPE=11 (reserved)
  const Status h = GunzipToString(header_bad, "h.gz", {}, &out);
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.message(), "h.gz: corrupt gzip data at byte 11 (invalid block type)") << h.message();
}

TEST(GunzipTest, NotGzipAndSizeLimit) {
  std::string out;
  const Status s = GunzipToString("{\"plain\":1}", "p.json", {}, &out);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "p.json: not a gzip stream");
  EXPECT_FALSE(IsGzip("\x1f"));
  EXPECT_TRUE(IsGzip("\x1f\x8b"));

  GunzipOptions small;
  small.max_output_bytes = 1000;
  const Status l = GunzipToString(GzipMember(std::string(5000, 'q')), "l.gz", small, &out);
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.message(), "l.gz: gunzipped data larger than 1000 bytes");
  ASSERT_TRUE(GunzipToString(GzipMember(std::string(1000, 'q')), "l.gz", small, &out).ok());
  EXPECT_EQ(out, std::string(1000, 'q'));
}

// The guard every importer of a .gz applies (docs/ingest-kineto.md, "Errors"): 200x the
// compressed size, at least 256 MiB; TELLER_MAX_GUNZIP_BYTES replaces it.
TEST(GunzipGuardTest, DefaultLimitAndTheVariable) {
  unsetenv("TELLER_MAX_GUNZIP_BYTES");
  GunzipOptions o;
  ASSERT_TRUE(GuardedGunzipOptions(1000, &o).ok());
  EXPECT_EQ(o.max_output_bytes, size_t{256} << 20);  // 200 x 1000 is below the floor
  ASSERT_TRUE(GuardedGunzipOptions(size_t{10} << 20, &o).ok());
  EXPECT_EQ(o.max_output_bytes, size_t{2000} << 20);  // 200 x 10 MiB
  const std::vector<std::pair<const char*, size_t>> values = {
      {"65536", 65536},        {"64K", 65536},          {"3m", size_t{3} << 20},
      {"2G", size_t{2} << 30}, {"1T", size_t{1} << 40}, {"0", SIZE_MAX}};
  for (const auto& [text, bytes] : values) {
    setenv("TELLER_MAX_GUNZIP_BYTES", text, 1);
    ASSERT_TRUE(GuardedGunzipOptions(1000, &o).ok()) << text;
    EXPECT_EQ(o.max_output_bytes, bytes) << text;
    EXPECT_EQ(o.limit_reason, "the limit set by TELLER_MAX_GUNZIP_BYTES");
  }
  for (const char* bad : {"lots", "12Q", "-5", "1.5G", "99999999999999T"}) {
    setenv("TELLER_MAX_GUNZIP_BYTES", bad, 1);
    const Status s = GuardedGunzipOptions(1000, &o);
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_EQ(s.message(), std::string("TELLER_MAX_GUNZIP_BYTES=") + bad +
                               ": expected a number of bytes (suffix K, M, G or T allowed) or 0 "
                               "for no limit");
  }
  unsetenv("TELLER_MAX_GUNZIP_BYTES");
}

TEST(GunzipGuardTest, BombIsRefusedWithAClearError) {
  unsetenv("TELLER_MAX_GUNZIP_BYTES");
  // 300 members of 1 MiB of zeros: 300 MiB from about 300 KB (1000:1), over the 256 MiB
  // floor of the guard; a real trace's 256 MiB would take 9 MB or more of gzip (<= 30:1).
  const std::string member = GzipMember(std::string(size_t{1} << 20, '\0'), 9);
  std::string bomb;
  for (int i = 0; i < 300; ++i) bomb += member;
  ASSERT_LT(bomb.size(), size_t{400} << 10);
  GunzipOptions o;
  ASSERT_TRUE(GuardedGunzipOptions(bomb.size(), &o).ok());
  std::string out;
  const Status s = GunzipToString(bomb, "bomb.json.gz", o, &out);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(),
            "bomb.json.gz: gunzipped data larger than 268435456 bytes (a guard against gzip "
            "bombs: at most 200x the compressed size, at least 256 MiB; "
            "TELLER_MAX_GUNZIP_BYTES=BYTES (K/M/G/T suffix, 0 = none) sets another limit)");
  EXPECT_TRUE(out.empty());
  // Within the limit the same members gunzip whole.
  std::string small;
  for (int i = 0; i < 3; ++i) small += member;
  ASSERT_TRUE(GuardedGunzipOptions(small.size(), &o).ok());
  ASSERT_TRUE(GunzipToString(small, "ok.gz", o, &out).ok());
  EXPECT_EQ(out, std::string(size_t{3} << 20, '\0'));
}

}  // namespace
}  // namespace teller
