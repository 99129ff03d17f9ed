// Request ids as engines print them. vLLM's engine-internal id of a chat request is the
// API id plus "-<8 hex>" (docs/serving-notes.md §3.3): logs print both forms, step ranges
// carry the internal one. Both stages that join on ids (log parsing, log alignment) use
// this one rule.
#ifndef TELLER_CORE_REQUEST_ID_H_
#define TELLER_CORE_REQUEST_ID_H_

#include <string_view>

namespace teller {

// "chatcmpl-<16 hex>-<8 hex>" -> "chatcmpl-<16 hex>"; any other id unchanged.
std::string_view ExternalRequestId(std::string_view id);

}  // namespace teller

#endif  // TELLER_CORE_REQUEST_ID_H_
