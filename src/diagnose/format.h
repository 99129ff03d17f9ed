// Text formatting shared by the diagnosis and its reports (private to src/diagnose).
#ifndef TELLER_SRC_DIAGNOSE_FORMAT_H_
#define TELLER_SRC_DIAGNOSE_FORMAT_H_

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace teller::diagnose {

// A duration for people: "850 ns", "12.3 us", "4.56 ms", "1.23 s".
inline std::string Duration(int64_t ns) {
  char buf[32];
  const double v = static_cast<double>(ns);
  const int64_t a = std::llabs(ns);
  if (a < 1000) {
    std::snprintf(buf, sizeof buf, "%lld ns", static_cast<long long>(ns));
  } else if (a < 1'000'000) {
    std::snprintf(buf, sizeof buf, "%.1f us", v / 1e3);
  } else if (a < 1'000'000'000) {
    std::snprintf(buf, sizeof buf, "%.2f ms", v / 1e6);
  } else {
    std::snprintf(buf, sizeof buf, "%.2f s", v / 1e9);
  }
  return buf;
}

// A size for people, exact to the byte with thousands separated: "589,824 B" (a copy's
// identity is its size, so the terminal shows the figure the trace has).
inline std::string Bytes(uint64_t bytes) {
  std::string digits = std::to_string(bytes), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out + " B";
}

inline std::string Fixed(double v, int digits) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

// The terminal shortens the middle of a long name, so that its start (the function) and
// its end (the last template arguments or the file and line) both stay readable; the
// JSON report always has the full name.
inline std::string ShortName(std::string_view name, size_t max = 96) {
  if (name.size() <= max) return std::string(name);
  const size_t head = (max - 3) * 2 / 3, tail = max - 3 - head;
  return std::string(name.substr(0, head)) + "..." + std::string(name.substr(name.size() - tail));
}

}  // namespace teller::diagnose

#endif  // TELLER_SRC_DIAGNOSE_FORMAT_H_
