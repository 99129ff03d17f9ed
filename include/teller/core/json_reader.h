// Reading JSON files with simdjson's On Demand API, with errors in one form:
//   "<where>: byte <offset>: <what> (<simdjson's message>)"
// where <where> is the file (or "file:line" for JSON lines) and <offset> counts bytes of
// the parsed text from its start to where the parser stopped. Typed field access returns
// such an error naming the field and the type it should have had.
#ifndef TELLER_CORE_JSON_READER_H_
#define TELLER_CORE_JSON_READER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "simdjson.h"
#include "teller/core/status.h"

namespace teller {

// The byte offset of the first problem of `doc` that simdjson's first stage reports without
// a position: the opening quote of an unclosed string (code UNCLOSED_STRING), the first
// byte of invalid UTF-8 (UTF8_ERROR), the first control character inside a string
// (UNESCAPED_CHARS); doc.size() otherwise.
size_t LocateStage1Error(std::string_view doc, simdjson::error_code code);

// The whole file, padded for simdjson. Error: "<path>: cannot read (<why>)", <why> being
// the system's reason or "not a regular file".
Result<simdjson::padded_string> LoadJsonFile(const std::string& path);

namespace json_internal {

namespace od = simdjson::ondemand;

inline simdjson::error_code GetAs(od::value& v, bool* out) { return v.get_bool().get(*out); }
inline simdjson::error_code GetAs(od::value& v, int64_t* out) { return v.get_int64().get(*out); }
inline simdjson::error_code GetAs(od::value& v, uint64_t* out) { return v.get_uint64().get(*out); }
inline simdjson::error_code GetAs(od::value& v, double* out) { return v.get_double().get(*out); }
inline simdjson::error_code GetAs(od::value& v, std::string_view* out) {
  return v.get_string().get(*out);
}
inline simdjson::error_code GetAs(od::value& v, std::string* out) {
  std::string_view s;
  if (const simdjson::error_code e = v.get_string().get(s)) return e;
  out->assign(s);
  return simdjson::SUCCESS;
}
inline simdjson::error_code GetAs(od::value& v, uint32_t* out) {
  uint64_t x = 0;
  if (const simdjson::error_code e = v.get_uint64().get(x)) return e;
  if (x > UINT32_MAX) return simdjson::NUMBER_OUT_OF_RANGE;
  *out = static_cast<uint32_t>(x);
  return simdjson::SUCCESS;
}
inline simdjson::error_code GetAs(od::value& v, od::array* out) { return v.get_array().get(*out); }
inline simdjson::error_code GetAs(od::value& v, od::object* out) {
  return v.get_object().get(*out);
}
inline simdjson::error_code GetAs(od::value& v, od::value* out) {
  *out = v;
  return simdjson::SUCCESS;
}

inline const char* TypeName(const bool*) { return "a boolean"; }
inline const char* TypeName(const int64_t*) { return "an integer"; }
inline const char* TypeName(const uint64_t*) { return "an unsigned integer"; }
inline const char* TypeName(const uint32_t*) { return "an unsigned 32-bit integer"; }
inline const char* TypeName(const double*) { return "a number"; }
inline const char* TypeName(const std::string_view*) { return "a string"; }
inline const char* TypeName(const std::string*) { return "a string"; }
inline const char* TypeName(const od::array*) { return "an array"; }
inline const char* TypeName(const od::object*) { return "an object"; }
inline const char* TypeName(const od::value*) { return "a value"; }

}  // namespace json_internal

// The parse of one document, for error messages and typed field access. Holds references:
// `text` and `doc` must outlive it.
class JsonContext {
 public:
  JsonContext(std::string where, std::string_view text, simdjson::ondemand::document& doc)
      : where_(std::move(where)), text_(text), doc_(doc) {}

  // Bytes from the start of the text to where the parser stands (the text's size when
  // it has run off the end).
  size_t Offset() const;
  // Where error `e` lies: for the errors simdjson's first stage reports without a position
  // (an unclosed string, invalid UTF-8) the offset a scan of the text finds (the string's
  // opening quote, the first bad byte), else Offset().
  size_t Offset(simdjson::error_code e) const;
  // "<where>: byte <offset>: <what> (<simdjson's message>)"
  Status Error(simdjson::error_code e, std::string_view what) const;
  // "<where>: byte <offset>: <what>"
  Status Error(std::string_view what) const;
  const std::string& where() const { return where_; }

  // Field `name` of `object` (an ondemand object or document) as T: bool, int64_t,
  // uint64_t, uint32_t, double, std::string_view, std::string, or an ondemand array,
  // object or value. Errors: "... missing field \"<label>\"" or "... \"<label>\": expected
  // <type>", <label> being "<prefix>.<name>" (or <name> without a prefix).
  template <typename T, typename Object>
  Status Field(Object& object, std::string_view name, T* out, std::string_view prefix = {}) const {
    simdjson::ondemand::value v;
    if (const simdjson::error_code e = object.find_field_unordered(name).get(v)) {
      return e == simdjson::NO_SUCH_FIELD ? Error("missing field \"" + Label(prefix, name) + "\"")
                                          : Error(e, "\"" + Label(prefix, name) + "\"");
    }
    return Get(v, Label(prefix, name), out);
  }

  // The same for a field that may be absent or null: then *present is false and *out is
  // left alone.
  template <typename T, typename Object>
  Status OptionalField(Object& object, std::string_view name, T* out, bool* present,
                       std::string_view prefix = {}) const {
    *present = false;
    simdjson::ondemand::value v;
    const simdjson::error_code e = object.find_field_unordered(name).get(v);
    if (e == simdjson::NO_SUCH_FIELD) return Status::Ok();
    if (e) return Error(e, "\"" + Label(prefix, name) + "\"");
    bool is_null = false;
    if (const simdjson::error_code n = v.is_null().get(is_null)) {
      return Error(n, "\"" + Label(prefix, name) + "\"");
    }
    if (is_null) return Status::Ok();
    TELLER_RETURN_IF_ERROR(Get(v, Label(prefix, name), out));
    *present = true;
    return Status::Ok();
  }

  // A value as T; `what` names it in the error ("\"<what>\": expected <type>").
  template <typename T>
  Status Get(simdjson::ondemand::value& v, std::string_view what, T* out) const {
    if (const simdjson::error_code e = json_internal::GetAs(v, out)) {
      return Error(e, "\"" + std::string(what) + "\": expected " + json_internal::TypeName(out));
    }
    return Status::Ok();
  }

 private:
  static std::string Label(std::string_view prefix, std::string_view name) {
    std::string label(prefix);
    if (!label.empty()) label += '.';
    label += name;
    return label;
  }
  std::string where_;
  std::string_view text_;
  simdjson::ondemand::document& doc_;
};

}  // namespace teller

#endif  // TELLER_CORE_JSON_READER_H_
