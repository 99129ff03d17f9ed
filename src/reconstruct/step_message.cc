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

// Calls `fn(key, value)` for every key=value word after the message's name.
template <typename Fn>
void ForEachKeyValue(std::string_view message, Fn&& fn) {
  size_t pos = message.find(' ');  // skip the name
  while (pos != std::string_view::npos && pos < message.size()) {
    const size_t begin = pos + 1;
    size_t end = message.find(' ', begin);
    if (end == std::string_view::npos) end = message.size();
    const std::string_view token = message.substr(begin, end - begin);
    const size_t eq = token.find('=');
    if (eq != std::string_view::npos) fn(token.substr(0, eq), token.substr(eq + 1));
    pos = end;
  }
}

// The decoded elements of a list value ("a,b,c").
void AppendList(std::string_view value, std::vector<std::string>* out) {
  size_t start = 0;
  while (start <= value.size()) {
    size_t comma = value.find(',', start);
    if (comma == std::string_view::npos) comma = value.size();
    if (comma > start) out->push_back(Decode(value.substr(start, comma - start)));
    start = comma + 1;
  }
}

}  // namespace

bool ParseStepMessage(std::string_view message, std::vector<std::string>* requests,
                      std::string* kind, std::string* seq) {
  bool has_reqs = false;
  ForEachKeyValue(message, [&](std::string_view key, std::string_view value) {
    if (key == "reqs") {
      has_reqs = true;
      if (requests != nullptr) AppendList(value, requests);
    } else if (key == "kind" && kind != nullptr) {
      *kind = Decode(value);
    } else if (key == "seq" && seq != nullptr) {
      *seq = Decode(value);
    }
  });
  return has_reqs;
}

bool ParseStepPrefill(std::string_view message, std::vector<std::string>* prefilled) {
  std::vector<std::string> requests, listed;
  std::string kind;
  bool has_list = false;
  ForEachKeyValue(message, [&](std::string_view key, std::string_view value) {
    if (key == "prefill") {
      has_list = true;
      AppendList(value, &listed);
    }
  });
  if (!ParseStepMessage(message, &requests, &kind, nullptr)) return false;
  if (kind == "prefill") {
    prefilled->insert(prefilled->end(), requests.begin(), requests.end());
    return true;
  }
  if (kind == "decode") return true;
  // A mixed batch names its prefilling requests, unless the list would not fit; any
  // other kind (idle, unknown) does not say.
  if (kind != "mixed" || !has_list) return false;
  prefilled->insert(prefilled->end(), listed.begin(), listed.end());
  return true;
}

namespace {

// Leading decimal number of `text` at `pos` (advancing it), or -1.
long ReadNumber(std::string_view text, size_t& pos) {
  if (pos >= text.size() || text[pos] < '0' || text[pos] > '9') return -1;
  long v = 0;
  while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9' && v < 100000000) {
    v = v * 10 + (text[pos++] - '0');
  }
  return v;
}

std::string KindFromCounts(long prefill, long decode) {
  if (prefill > 0 && decode > 0) return "mixed";
  if (prefill > 0) return "prefill";
  if (decode > 0) return "decode";
  return "idle";
}

// vLLM's step markers and the requests they count:
// "execute_new_<N>_cached_<M>" (v1): N requests scheduled for the first time (prefill), M
// already running (decode, or a later prefill chunk);
// "execute_[<T>_]context_<P>(...)_generation_<D>(...)": P prefill and D decode requests.
bool VllmMarkerCounts(std::string_view name, long* prefill, long* decode) {
  if (name.rfind("execute_new_", 0) == 0) {
    size_t pos = 12;
    *prefill = ReadNumber(name, pos);
    if (*prefill < 0 || name.substr(pos, 8) != "_cached_") return false;
    pos += 8;
    *decode = ReadNumber(name, pos);
    return *decode >= 0;
  }
  if (name.rfind("execute_", 0) == 0) {
    const size_t c = name.find("context_");
    const size_t g = name.find("_generation_");
    if (c == std::string_view::npos || g == std::string_view::npos) return false;
    size_t pc = c + 8, pg = g + 12;
    *prefill = ReadNumber(name, pc);
    *decode = ReadNumber(name, pg);
    return *prefill >= 0 && *decode >= 0;
  }
  return false;
}

}  // namespace

std::string StepKindFromEngineMarker(std::string_view name) {
  // SGLang: "step[DECODE bs=32]", "step[EXTEND bs=15 toks=15360]", "step[MIXED ...]".
  if (name.rfind("step[", 0) == 0) {
    if (name.rfind("step[DECODE", 0) == 0) return "decode";
    if (name.rfind("step[EXTEND", 0) == 0 || name.rfind("step[PREFILL", 0) == 0) return "prefill";
    if (name.rfind("step[MIXED", 0) == 0) return "mixed";
    if (name.rfind("step[IDLE", 0) == 0) return "idle";
    return "";
  }
  long prefill = 0, decode = 0;
  return VllmMarkerCounts(name, &prefill, &decode) ? KindFromCounts(prefill, decode) : "";
}

std::string StepKind(std::string_view name) {
  std::string kind;
  ParseStepMessage(name, nullptr, &kind, nullptr);
  return kind.empty() ? StepKindFromEngineMarker(name) : kind;
}

int64_t StepNumber(std::string_view name, std::string_view seq) {
  auto number = [](std::string_view digits) -> int64_t {
    if (digits.empty() || digits.size() > 18) return -1;
    int64_t v = 0;
    for (char c : digits) {
      if (c < '0' || c > '9') return -1;
      v = v * 10 + (c - '0');
    }
    return v;
  };
  if (const int64_t v = number(seq); v >= 0) return v;
  const size_t hash = name.rfind('#');
  if (hash == std::string_view::npos) return -1;
  return number(name.substr(hash + 1));
}

int64_t StepSize(std::string_view name) {
  // "key=N" with the key at a token start.
  auto keyed = [&](std::string_view key) -> int64_t {
    for (size_t at = name.find(key); at != std::string_view::npos; at = name.find(key, at + 1)) {
      if (at > 0 && name[at - 1] != ' ' && name[at - 1] != '[') continue;
      size_t pos = at + key.size();
      const long v = ReadNumber(name, pos);
      if (v >= 0) return v;
    }
    return -1;
  };
  if (name.rfind("teller.step", 0) == 0) return keyed("n=");
  if (name.rfind("step[", 0) == 0) return keyed("bs=");
  long prefill = 0, decode = 0;
  if (VllmMarkerCounts(name, &prefill, &decode)) return prefill + decode;
  return -1;
}

}  // namespace teller::reconstruct
