#include "teller/core/json_writer.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace teller {
namespace {

// Length of the valid UTF-8 sequence starting at s[i], or 0 when it is invalid.
size_t Utf8SequenceLength(std::string_view s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  size_t len = 0;
  uint32_t min = 0;
  if (c < 0x80) return 1;
  if ((c & 0xE0) == 0xC0) {
    len = 2;
    min = 0x80;
  } else if ((c & 0xF0) == 0xE0) {
    len = 3;
    min = 0x800;
  } else if ((c & 0xF8) == 0xF0) {
    len = 4;
    min = 0x10000;
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  uint32_t cp = c & (0x7F >> len);
  for (size_t k = 1; k < len; ++k) {
    const auto cc = static_cast<unsigned char>(s[i + k]);
    if ((cc & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (cc & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return len;
}

}  // namespace

void AppendJsonString(std::string& out, std::string_view text) {
  out += '"';
  for (size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
      ++i;
    } else if (c < 0x20) {
      switch (c) {
        case '\n':
          out += "\\n";
          break;
        case '\r':
          out += "\\r";
          break;
        case '\t':
          out += "\\t";
          break;
        default: {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        }
      }
      ++i;
    } else if (c < 0x80) {
      out += static_cast<char>(c);
      ++i;
    } else {
      const size_t len = Utf8SequenceLength(text, i);
      if (len == 0) {
        out += "\xEF\xBF\xBD";  // U+FFFD
        ++i;
      } else {
        out.append(text.substr(i, len));
        i += len;
      }
    }
  }
  out += '"';
}

void AppendJsonInt(std::string& out, int64_t value) {
  char buf[24];
  out.append(buf, std::to_chars(buf, buf + sizeof(buf), value).ptr);
}

void AppendJsonUint(std::string& out, uint64_t value) {
  char buf[24];
  out.append(buf, std::to_chars(buf, buf + sizeof(buf), value).ptr);
}

void AppendJsonDouble(std::string& out, double value, JsonDoubles format) {
  if (!std::isfinite(value)) {
    out += "null";  // JSON has no NaN or infinity
    return;
  }
  char buf[40];
  switch (format) {
    case JsonDoubles::kShortest:
      out.append(buf, std::to_chars(buf, buf + sizeof(buf), value).ptr);
      return;
    case JsonDoubles::kDigits6:
      std::snprintf(buf, sizeof(buf), "%.6g", value);
      break;
    case JsonDoubles::kDigits17:
      std::snprintf(buf, sizeof(buf), "%.17g", value);
      break;
    case JsonDoubles::kFixed4:
      std::snprintf(buf, sizeof(buf), "%.4f", value);
      break;
  }
  out += buf;
}

JsonObjectWriter& JsonObjectWriter::Key(std::string_view key) {
  if (!first_) out_ += ',';
  if (new_line_) {
    out_ += '\n';
    out_ += indent_;
    new_line_ = false;
  }
  first_ = false;
  AppendJsonString(out_, key);
  out_ += ':';
  return *this;
}

JsonObjectWriter& JsonObjectWriter::NewLine(std::string_view indent) {
  new_line_ = true;
  indent_ = indent;
  return *this;
}

JsonObjectWriter& JsonObjectWriter::Field(std::string_view key, std::string_view value) {
  Key(key);
  AppendJsonString(out_, value);
  return *this;
}

JsonObjectWriter& JsonObjectWriter::Field(std::string_view key, int64_t value) {
  Key(key);
  AppendJsonInt(out_, value);
  return *this;
}

JsonObjectWriter& JsonObjectWriter::Field(std::string_view key, uint64_t value) {
  Key(key);
  AppendJsonUint(out_, value);
  return *this;
}

JsonObjectWriter& JsonObjectWriter::Field(std::string_view key, double value) {
  Key(key);
  AppendJsonDouble(out_, value, doubles_);
  return *this;
}

JsonObjectWriter& JsonObjectWriter::FieldBool(std::string_view key, bool value) {
  Key(key);
  out_ += value ? "true" : "false";
  return *this;
}

JsonObjectWriter& JsonObjectWriter::FieldNull(std::string_view key) {
  Key(key);
  out_ += "null";
  return *this;
}

JsonObjectWriter& JsonObjectWriter::FieldRaw(std::string_view key, std::string_view json) {
  Key(key);
  out_ += json;
  return *this;
}

JsonObjectWriter& JsonObjectWriter::RawFields(std::string_view fields) {
  if (fields.empty()) return *this;
  if (!first_) out_ += ',';
  first_ = false;
  out_ += fields;
  return *this;
}

JsonObjectWriter& JsonObjectWriter::FieldsFollow() {
  if (!first_) out_ += ',';
  first_ = false;
  return *this;
}

JsonArrayWriter& JsonArrayWriter::Next() {
  if (!first_) out_ += ',';
  if (new_line_) {
    out_ += '\n';
    out_ += indent_;
    new_line_ = false;
  }
  first_ = false;
  return *this;
}

JsonArrayWriter& JsonArrayWriter::NewLine(std::string_view indent) {
  new_line_ = true;
  indent_ = indent;
  return *this;
}

JsonArrayWriter& JsonArrayWriter::Element(std::string_view value) {
  Next();
  AppendJsonString(out_, value);
  return *this;
}

JsonArrayWriter& JsonArrayWriter::Element(int64_t value) {
  Next();
  AppendJsonInt(out_, value);
  return *this;
}

JsonArrayWriter& JsonArrayWriter::Element(uint64_t value) {
  Next();
  AppendJsonUint(out_, value);
  return *this;
}

JsonArrayWriter& JsonArrayWriter::Element(double value) {
  Next();
  AppendJsonDouble(out_, value, doubles_);
  return *this;
}

JsonArrayWriter& JsonArrayWriter::ElementBool(bool value) {
  Next();
  out_ += value ? "true" : "false";
  return *this;
}

JsonArrayWriter& JsonArrayWriter::ElementRaw(std::string_view json) {
  Next();
  out_ += json;
  return *this;
}

}  // namespace teller
