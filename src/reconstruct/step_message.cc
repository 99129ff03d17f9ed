#include <string>

#include "teller/reconstruct/reconstruct.h"

namespace teller::reconstruct {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// Percent-decoding of the grammar's values (docs/python-hooks.md).
std::string Decode(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] == '%' && i + 2 < v.size() && HexValue(v[i + 1]) >= 0 && HexValue(v[i + 2]) >= 0) {
      out += static_cast<char>(HexValue(v[i + 1]) * 16 + HexValue(v[i + 2]));
      i += 2;
    } else {
      out += v[i];
    }
  }
  return out;
}

}  // namespace

bool ParseStepMessage(std::string_view message, std::vector<std::string>* requests,
                      std::string* kind, std::string* seq) {
  bool has_reqs = false;
  size_t pos = message.find(' ');  // skip the name
  while (pos != std::string_view::npos && pos < message.size()) {
    const size_t begin = pos + 1;
    size_t end = message.find(' ', begin);
    if (end == std::string_view::npos) end = message.size();
    const std::string_view token = message.substr(begin, end - begin);
    const size_t eq = token.find('=');
    if (eq != std::string_view::npos) {
      const std::string_view key = token.substr(0, eq);
      const std::string_view value = token.substr(eq + 1);
      if (key == "reqs") {
        has_reqs = true;
        size_t start = 0;
        while (start <= value.size() && requests != nullptr) {
          size_t comma = value.find(',', start);
          if (comma == std::string_view::npos) comma = value.size();
          if (comma > start) requests->push_back(Decode(value.substr(start, comma - start)));
          start = comma + 1;
        }
      } else if (key == "kind" && kind != nullptr) {
        *kind = Decode(value);
      } else if (key == "seq" && seq != nullptr) {
        *seq = Decode(value);
      }
    }
    pos = end;
  }
  return has_reqs;
}

}  // namespace teller::reconstruct
