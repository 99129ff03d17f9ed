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
