#include "teller/core/request_id.h"

namespace teller {
namespace {

bool IsHex(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) return false;
  }
  return true;
}

}  // namespace

std::string_view ExternalRequestId(std::string_view id) {
  if (id.size() == 34 && id.substr(0, 9) == "chatcmpl-" && id[25] == '-' &&
      IsHex(id.substr(9, 16)) && IsHex(id.substr(26, 8))) {
    return id.substr(0, 25);
  }
  return id;
}

}  // namespace teller
