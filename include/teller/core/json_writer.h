// Minimal streaming JSON output for JSON-lines and small documents: appends to a
// std::string with correct escaping (control characters, quotes, invalid UTF-8 replaced
// by U+FFFD, so the output always parses).
#ifndef TELLER_CORE_JSON_WRITER_H_
#define TELLER_CORE_JSON_WRITER_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace teller {

// Appends `text` as a quoted JSON string.
void AppendJsonString(std::string& out, std::string_view text);

// Builds one JSON object field by field: {"a":1,"b":"x"}.
class JsonObjectWriter {
 public:
  explicit JsonObjectWriter(std::string& out) : out_(out) { out_ += '{'; }
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
  // Inserts already-serialised JSON (an array or object) as the field's value.
  JsonObjectWriter& FieldRaw(std::string_view key, std::string_view json);
  void Close() { out_ += '}'; }

 private:
  void Key(std::string_view key);
  std::string& out_;
  bool first_ = true;
};

}  // namespace teller

#endif  // TELLER_CORE_JSON_WRITER_H_
