// gzip by zlib, for tests of Teller's own decoder (libdeflate): a second implementation
// makes the test data, so a decoder bug cannot hide in a matching encoder bug.
#ifndef TELLER_TESTS_ZLIB_GZIP_H_
#define TELLER_TESTS_ZLIB_GZIP_H_

#include <zlib.h>

#include <string>

namespace teller::zlib_gzip {

inline std::string Gzip(const std::string& data) {
  z_stream zs{};
  deflateInit2(&zs, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&zs, data.size()) + 64, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

}  // namespace teller::zlib_gzip

#endif  // TELLER_TESTS_ZLIB_GZIP_H_
