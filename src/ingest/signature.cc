#include "src/ingest/signature.h"

#include <charconv>

namespace teller::ingest {
namespace {

void AppendUint(uint64_t v, std::string& out) {
  char buf[24];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  (void)ec;  // 24 bytes hold any uint64
  out.append(buf, static_cast<size_t>(end - buf));
}

void AppendHexEscape(unsigned char c, std::string& out) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += "\\x";
  out += kHex[c >> 4];
  out += kHex[c & 15];
}

// NAME of the grammar: a byte that separates fields or lists is escaped with a
// backslash, a control byte is written as \xHH, so that the text splits back exactly.
void AppendName(std::string_view text, std::string& out) {
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7f) {
      AppendHexEscape(c, out);
    } else {
      if (ch == '\\' || ch == ' ' || ch == ',' || ch == '[' || ch == ']' || ch == '=') out += '\\';
      out += ch;
    }
  }
}

void AppendTriple(const uint64_t (&v)[3], std::string& out) {
  AppendUint(v[0], out);
  out += ',';
  AppendUint(v[1], out);
  out += ',';
  AppendUint(v[2], out);
}

}  // namespace

void AppendTypeElement(std::string_view text, std::string& out) {
  // Spaces stay ("long int", "unsigned char"): inside brackets they do not end a field.
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7f) {
      AppendHexEscape(c, out);
    } else {
      if (ch == '\\' || ch == ',' || ch == '[' || ch == ']') out += '\\';
      out += ch;
    }
  }
}

void AppendCompactJson(std::string_view json, std::string& out) {
  bool in_string = false;
  for (size_t i = 0; i < json.size(); ++i) {
    const char c = json[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < json.size()) {
        out += json[++i];
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == ' ' || c == '\n' || c == '\r' || c == '\t') {
      continue;
    } else {
      if (c == '"') in_string = true;
      out += c;
    }
  }
}

namespace {

bool IsSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Four hex digits at json[i..i+3].
bool ReadHex4(std::string_view json, size_t i, uint32_t* v) {
  if (i + 4 > json.size()) return false;
  *v = 0;
  for (size_t k = 0; k < 4; ++k) {
    const int h = HexValue(json[i + k]);
    if (h < 0) return false;
    *v = *v * 16 + static_cast<uint32_t>(h);
  }
  return true;
}

void AppendUtf8(uint32_t cp, std::string& out) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xc0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xe0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else {
    out += static_cast<char>(0xf0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  }
}

// Reads the JSON string starting at json[*i] (a '"') into `text`, unescaped; *i ends
// after the closing quote.
bool ReadJsonString(std::string_view json, size_t* i, std::string& text) {
  size_t p = *i + 1;
  while (p < json.size()) {
    const char c = json[p++];
    if (c == '"') {
      *i = p;
      return true;
    }
    if (c != '\\') {
      text += c;
      continue;
    }
    if (p >= json.size()) return false;
    const char e = json[p++];
    switch (e) {
      case '"':
      case '\\':
      case '/':
        text += e;
        break;
      case 'b':
        text += '\b';
        break;
      case 'f':
        text += '\f';
        break;
      case 'n':
        text += '\n';
        break;
      case 'r':
        text += '\r';
        break;
      case 't':
        text += '\t';
        break;
      case 'u': {
        uint32_t cp = 0;
        if (!ReadHex4(json, p, &cp)) return false;
        p += 4;
        if (cp >= 0xd800 && cp < 0xdc00) {
          uint32_t low = 0;
          if (p + 6 > json.size() || json[p] != '\\' || json[p + 1] != 'u' ||
              !ReadHex4(json, p + 2, &low) || low < 0xdc00 || low >= 0xe000) {
            return false;
          }
          p += 6;
          cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
        }
        AppendUtf8(cp, text);
        break;
      }
      default:
        return false;
    }
  }
  return false;
}

}  // namespace

bool AppendTypeList(std::string_view json, std::string& out) {
  const size_t begin = out.size();
  size_t i = 0;
  auto skip = [&]() {
    while (i < json.size() && IsSpace(json[i])) ++i;
  };
  skip();
  if (i >= json.size() || json[i] != '[') return false;
  ++i;
  out += '[';
  std::string text;
  skip();
  if (i < json.size() && json[i] == ']') {
    out += ']';
    return true;
  }
  while (true) {
    skip();
    text.clear();
    if (i >= json.size() || json[i] != '"' || !ReadJsonString(json, &i, text)) {
      out.resize(begin);
      return false;
    }
    AppendTypeElement(text, out);
    skip();
    if (i < json.size() && json[i] == ',') {
      out += ',';
      ++i;
      continue;
    }
    if (i < json.size() && json[i] == ']') {
      out += ']';
      return true;
    }
    out.resize(begin);
    return false;
  }
}

void AppendSignature(const SignatureFields& f, std::string& out) {
  const size_t begin = out.size();
  auto sep = [&]() {
    if (out.size() > begin) out += ' ';
  };
  if (!f.coll.empty()) {
    sep();
    out += "coll=";
    AppendName(f.coll, out);
  }
  if (f.has_in) {
    sep();
    out += "in=";
    AppendUint(f.in, out);
  }
  if (f.has_out) {
    sep();
    out += "out=";
    AppendUint(f.out, out);
  }
  if (f.has_group) {
    sep();
    out += "group=";
    AppendUint(f.group, out);
  }
  // A dtype alone (no collective field) says nothing of a size.
  if (!f.dtype.empty() && out.size() > begin) {
    sep();
    out += "dtype=";
    AppendName(f.dtype, out);
  }
  if (!f.dims.empty()) {
    sep();
    out += "dims=";
    AppendCompactJson(f.dims, out);
  }
  if (!f.types.empty()) {
    sep();
    out += "types=";
    out += f.types;
  }
  if (f.has_grid) {
    sep();
    out += "grid=";
    AppendTriple(f.grid, out);
    out += " block=";
    AppendTriple(f.block, out);
    if (f.smem > 0) {
      out += " smem=";
      AppendUint(f.smem, out);
    }
  }
  if (!f.copy.empty()) {
    sep();
    out += "copy=";
    AppendName(f.copy, out);
  }
}

std::string_view CopyKindToken(uint32_t kind) {
  // CUpti_ActivityMemcpyKind 1..10; 0 is CUPTI_ACTIVITY_MEMCPY_KIND_UNKNOWN.
  static constexpr std::string_view kTokens[] = {"",     "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
                                                 "AtoD", "DtoA", "DtoD", "HtoH", "PtoP"};
  return kind < std::size(kTokens) ? kTokens[kind] : std::string_view();
}

bool NameCarriesCopyKind(std::string_view name, std::string_view token) {
  return !token.empty() && name.find(token) != std::string_view::npos;
}

}  // namespace teller::ingest
