#include "teller/core/json_reader.h"

namespace teller {

Result<simdjson::padded_string> LoadJsonFile(const std::string& path) {
  simdjson::padded_string text;
  if (const simdjson::error_code e = simdjson::padded_string::load(path).get(text)) {
    return Status::Error(path + ": cannot read (" + simdjson::error_message(e) + ")");
  }
  return text;
}

size_t JsonContext::Offset() const {
  const char* p = nullptr;
  if (doc_.current_location().get(p) == simdjson::SUCCESS && p >= text_.data() &&
      p <= text_.data() + text_.size()) {
    return static_cast<size_t>(p - text_.data());
  }
  return text_.size();
}

Status JsonContext::Error(simdjson::error_code e, std::string_view what) const {
  return Status::Error(where_ + ": byte " + std::to_string(Offset()) + ": " + std::string(what) +
                       " (" + simdjson::error_message(e) + ")");
}

Status JsonContext::Error(std::string_view what) const {
  return Status::Error(where_ + ": byte " + std::to_string(Offset()) + ": " + std::string(what));
}

}  // namespace teller
