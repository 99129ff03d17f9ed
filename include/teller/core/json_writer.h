// Minimal streaming JSON output for JSON-lines and small documents: appends to a
// std::string with correct escaping (control characters, quotes, invalid UTF-8 replaced
// by U+FFFD, so the output always parses).
#ifndef TELLER_CORE_JSON_WRITER_H_
#define TELLER_CORE_JSON_WRITER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace teller {

// How doubles are written. Both write "null" for NaN and infinities (JSON has neither).
enum class JsonDoubles {
  kDigits17,  // printf's %.17g: "0.10000000000000001"
  kShortest,  // the shortest text that reads back as the same double: "0.1"
  kDigits6,   // printf's %.6g, for figures whose further digits are noise: "3.14159"
  kFixed4,    // printf's %.4f, for scores reported to four decimals: "0.9142", "1.0000"
};

// Appends `text` as a quoted JSON string.
void AppendJsonString(std::string& out, std::string_view text);
// Appends a number.
void AppendJsonInt(std::string& out, int64_t value);
void AppendJsonUint(std::string& out, uint64_t value);
void AppendJsonDouble(std::string& out, double value, JsonDoubles format);

// Builds one JSON object field by field: {"a":1,"b":"x"}.
class JsonObjectWriter {
 public:
  explicit JsonObjectWriter(std::string& out, JsonDoubles doubles = JsonDoubles::kDigits17)
      : out_(out), doubles_(doubles) {
    out_ += '{';
  }
  // Fields without the braces ("a":1,"b":"x"): a part that many objects share, written
  // once and spliced into each with RawFields. Close() writes nothing.
  struct FieldsOnly {};
  JsonObjectWriter(std::string& out, FieldsOnly, JsonDoubles doubles = JsonDoubles::kDigits17)
      : out_(out), doubles_(doubles), braces_(false) {}
  JsonObjectWriter& Field(std::string_view key, std::string_view value);
  JsonObjectWriter& Field(std::string_view key, const char* value) {
    return Field(key, std::string_view(value));
  }
  JsonObjectWriter& Field(std::string_view key, int64_t value);
  JsonObjectWriter& Field(std::string_view key, uint64_t value);
  JsonObjectWriter& Field(std::string_view key, int value) {
    return Field(key, static_cast<int64_t>(value));
  }
  JsonObjectWriter& Field(std::string_view key, unsigned value) {
    return Field(key, static_cast<uint64_t>(value));
  }
  JsonObjectWriter& Field(std::string_view key, double value);
  JsonObjectWriter& FieldBool(std::string_view key, bool value);
  JsonObjectWriter& FieldNull(std::string_view key);
  // Inserts already-serialised JSON (an array or object) as the field's value.
  JsonObjectWriter& FieldRaw(std::string_view key, std::string_view json);
  // Inserts already-serialised fields (from a FieldsOnly writer); nothing when empty.
  JsonObjectWriter& RawFields(std::string_view fields);
  // Writes the separator before serialised fields that the caller appends next itself
  // (when they go elsewhere first, such as straight to a file after this buffer).
  JsonObjectWriter& FieldsFollow();
  // Writes the key of a field whose value the caller appends next, e.g. with a nested
  // JsonObjectWriter or JsonArrayWriter on the same string.
  JsonObjectWriter& Key(std::string_view key);
  // The next field starts a new line, indented by `indent` (for files people read).
  JsonObjectWriter& NewLine(std::string_view indent = {});
  void Close() {
    if (braces_) out_ += '}';
  }

 private:
  std::string& out_;
  JsonDoubles doubles_;
  bool braces_ = true;
  bool first_ = true;
  bool new_line_ = false;
  std::string_view indent_;
};

// Builds one JSON array element by element: [1,"x",{...}].
class JsonArrayWriter {
 public:
  explicit JsonArrayWriter(std::string& out, JsonDoubles doubles = JsonDoubles::kDigits17)
      : out_(out), doubles_(doubles) {
    out_ += '[';
  }
  JsonArrayWriter& Element(std::string_view value);
  JsonArrayWriter& Element(const char* value) { return Element(std::string_view(value)); }
  JsonArrayWriter& Element(int64_t value);
  JsonArrayWriter& Element(uint64_t value);
  JsonArrayWriter& Element(int value) { return Element(static_cast<int64_t>(value)); }
  JsonArrayWriter& Element(unsigned value) { return Element(static_cast<uint64_t>(value)); }
  JsonArrayWriter& Element(double value);
  JsonArrayWriter& ElementBool(bool value);
  // Every integer of `values`, in order.
  template <typename T>
  JsonArrayWriter& Integers(const std::vector<T>& values) {
    static_assert(std::is_integral_v<T>);
    for (const T v : values) {
      if constexpr (std::is_signed_v<T>) {
        Element(static_cast<int64_t>(v));
      } else {
        Element(static_cast<uint64_t>(v));
      }
    }
    return *this;
  }
  JsonArrayWriter& ElementRaw(std::string_view json);
  // Starts the next element, whose value the caller appends (a nested writer).
  JsonArrayWriter& Next();
  // The next element starts a new line, indented by `indent`.
  JsonArrayWriter& NewLine(std::string_view indent = {});
  void Close() { out_ += ']'; }

 private:
  std::string& out_;
  JsonDoubles doubles_;
  bool first_ = true;
  bool new_line_ = false;
  std::string_view indent_;
};

}  // namespace teller

#endif  // TELLER_CORE_JSON_WRITER_H_
