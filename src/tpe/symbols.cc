// Symbol normalization, rule v1 (include/teller/tpe/symbols.h has the rule; docs/tpe.md
// the reasons). Names are short and normalized once per distinct (tag, name) of a
// dataset, so clarity wins over speed here.
#include "teller/tpe/symbols.h"

namespace teller::tpe {
namespace {

bool IsAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsAlnum(char c) { return IsAlpha(c) || IsDigit(c); }
bool IsIdentChar(char c) { return IsAlnum(c) || c == '_'; }
bool IsHex(char c) { return IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

// Rule 1: "void ns::k<T, 4>(float*, int)" -> "ns::k<T, 4>".
std::string_view StripKernelSignature(std::string_view name) {
  if (name.starts_with("void ")) name.remove_prefix(5);
  while (!name.empty() && name.back() == ' ') name.remove_suffix(1);
  if (name.empty() || name.back() != ')') return name;
  int depth = 0;
  for (size_t i = name.size(); i-- > 0;) {
    if (name[i] == ')') {
      ++depth;
    } else if (name[i] == '(' && --depth == 0) {
      // A parameter list follows the function's name or its template arguments; a group
      // that opens the name, e.g. "(anonymous namespace)", is not one.
      if (i == 0 || !(IsIdentChar(name[i - 1]) || name[i - 1] == '>')) return name;
      std::string_view head = name.substr(0, i);
      while (!head.empty() && head.back() == ' ') head.remove_suffix(1);
      return head;
    }
  }
  return name;  // unbalanced: leave it alone
}

// Rule 2 predicate: a value kept verbatim.
bool IsIdentifierValue(std::string_view v) {
  if (v.empty() || !(IsAlpha(v[0]) || v[0] == '_')) return false;
  for (char c : v) {
    if (!(IsIdentChar(c) || c == '.' || c == ':')) return false;
  }
  return true;
}

std::string ReplaceNumbers(std::string_view s);

// Keys whose value names requests: always replaced, even by a one-word id ("reqs=a").
bool IsRequestKey(std::string_view key) {
  for (std::string_view k :
       {"req", "reqs", "request", "requests", "rid", "rids", "request_id", "request_ids"}) {
    if (key == k) return true;
  }
  return false;
}

// Rule 2 on one whitespace-delimited word.
void AppendWord(std::string& out, std::string_view word) {
  const size_t eq = word.find('=');
  if (eq != std::string_view::npos && eq > 0 && eq + 1 < word.size()) {
    const std::string_view key = word.substr(0, eq);
    bool key_ok = IsAlpha(key[0]) || key[0] == '_';
    for (char c : key) key_ok = key_ok && (IsIdentChar(c) || c == '.');
    const std::string_view value = word.substr(eq + 1);
    // A hex id that happens to start with a letter is an id, not an identifier.
    if (key_ok &&
        (IsRequestKey(key) || !IsIdentifierValue(value) || ReplaceNumbers(value) == "#")) {
      out.append(key);
      out += "=*";
      return;
    }
  }
  out.append(word);
}

// Rules 3-5 on the output of rule 2.
std::string ReplaceNumbers(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const char c = s[i];
    const char prev = i > 0 ? s[i - 1] : ' ';
    if (!IsAlnum(c) || IsAlnum(prev)) {
      out += c;
      ++i;
      continue;
    }
    // Start of a run of [A-Za-z0-9].
    size_t j = i;
    while (j < s.size() && IsAlnum(s[j])) ++j;
    const std::string_view run = s.substr(i, j - i);
    const char next = j < s.size() ? s[j] : ' ';
    // Rule 3: 0x... addresses.
    if (run.size() > 2 && run[0] == '0' && (run[1] == 'x' || run[1] == 'X') && prev != '_' &&
        next != '_') {
      bool hex = true;
      for (size_t k = 2; k < run.size(); ++k) hex = hex && IsHex(run[k]);
      if (hex) {
        out += '#';
        i = j;
        continue;
      }
    }
    // Rule 4: id-like hex words, a '-'-joined chain of them counted as one (UUIDs).
    if (prev != '_') {
      size_t end = i, digits = 0, k = i;
      while (true) {
        size_t e = k;
        bool hex = true, digit = false;
        while (e < s.size() && IsAlnum(s[e])) {
          hex = hex && IsHex(s[e]);
          digit = digit || IsDigit(s[e]);
          ++e;
        }
        if (!hex || !digit) break;
        digits += e - k;
        end = e;
        if (e + 1 < s.size() && s[e] == '-' && IsAlnum(s[e + 1])) {
          k = e + 1;
        } else {
          break;
        }
      }
      if (digits >= 8 && (end >= s.size() || s[end] != '_')) {
        out += '#';
        i = end;
        continue;
      }
    }
    // Rule 5: standalone numbers.
    const bool lambda_ordinal = prev == '#' && i >= 2 && s[i - 2] == ')';
    if (IsDigit(c) && prev != '_' && prev != ')' && !lambda_ordinal) {
      size_t k = i;
      while (k < s.size() && IsDigit(s[k])) ++k;
      if (k + 1 < s.size() && s[k] == '.' && IsDigit(s[k + 1])) {
        ++k;
        while (k < s.size() && IsDigit(s[k])) ++k;
      }
      while (k < s.size() && (s[k] == 'u' || s[k] == 'U' || s[k] == 'l' || s[k] == 'L')) ++k;
      if (k >= s.size() || !IsIdentChar(s[k])) {
        out += '#';
        i = k;
        continue;
      }
    }
    out.append(run);
    i = j;
  }
  return out;
}

}  // namespace

std::string_view TypeTagText(TypeTag tag) {
  switch (tag) {
    case TypeTag::kStep:
      return "[STEP]";
    case TypeTag::kFrontend:
      return "[FE]";
    case TypeTag::kBackend:
      return "[BE]";
    case TypeTag::kComm:
      return "[COMM]";
    case TypeTag::kRuntime:
      return "[RT]";
    case TypeTag::kDriver:
      return "[DRV]";
    case TypeTag::kKernel:
      return "[K]";
    case TypeTag::kMemory:
      return "[MEM]";
    case TypeTag::kSync:
      return "[SYNC]";
    case TypeTag::kMark:
      return "[MARK]";
    case TypeTag::kGpuAnnotation:
      return "[GANN]";
  }
  return "[UNK]";
}

std::string NormalizeName(TypeTag tag, std::string_view name) {
  if (tag == TypeTag::kKernel) name = StripKernelSignature(name);
  std::string words;
  words.reserve(name.size());
  size_t i = 0;
  while (i < name.size()) {
    if (name[i] == ' ') {
      words += ' ';
      ++i;
      continue;
    }
    size_t j = i;
    while (j < name.size() && name[j] != ' ') ++j;
    AppendWord(words, name.substr(i, j - i));
    i = j;
  }
  return ReplaceNumbers(words);
}

std::string SymbolText(TypeTag tag, std::string_view normalized_name) {
  std::string text(TypeTagText(tag));
  if (!normalized_name.empty()) {
    text += ' ';
    text.append(normalized_name);
  }
  return text;
}

}  // namespace teller::tpe
