#include "teller/logs/signatures.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>

#include "builtin_signatures.h"

namespace teller::logs {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

}  // namespace

Result<std::shared_ptr<const SignatureSet>> SignatureSet::FromText(std::string_view text,
                                                                   const std::string& source) {
  auto set = std::shared_ptr<SignatureSet>(new SignatureSet());
  size_t pos = 0;
  uint32_t line_no = 0;
  auto error = [&](const std::string& what) {
    return Status::Error(source + ":" + std::to_string(line_no) + ": " + what);
  };
  auto finish = [&]() -> Status {
    if (set->signatures_.empty()) return Status::Ok();
    const Signature& s = set->signatures_.back();
    if (s.title.empty()) return Status::Error("signature [" + s.id + "] has no title:");
    return Status::Ok();
  };
  while (pos < text.size()) {
    size_t e = text.find('\n', pos);
    if (e == std::string_view::npos) e = text.size();
    const std::string_view line = Trim(text.substr(pos, e - pos));
    pos = e + 1;
    ++line_no;
    if (line.empty() || line[0] == '#') continue;
    if (line[0] == '[') {
      if (Status st = finish(); !st.ok()) return error(st.message());
      const size_t close = line.find(']');
      if (close == std::string_view::npos || close == 1) {
        return error("expected '[ID] CATEGORY SEVERITY'");
      }
      Signature s;
      s.id = std::string(line.substr(1, close - 1));
      std::istringstream fields(std::string(line.substr(close + 1)));
      std::string category, severity, extra;
      fields >> category >> severity >> extra;
      if (!ParseFaultCategory(category, &s.category)) {
        return error("unknown category '" + category +
                     "' (expected memory_resource, cuda_kernel, runtime_driver, communication "
                     "or scheduling_software)");
      }
      if (severity == "warning") {
        s.warning_only = true;
      } else if (severity != "auto") {
        return error("unknown severity '" + severity + "' (expected auto or warning)");
      }
      if (!extra.empty()) return error("unexpected '" + extra + "' after the severity");
      for (const Signature& other : set->signatures_) {
        if (other.id == s.id) return error("signature [" + s.id + "] is defined twice");
      }
      set->signatures_.push_back(std::move(s));
      continue;
    }
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) {
      return error("expected 'KEY: value' (title, why, contains or starts) or '[ID] ...'");
    }
    const std::string_view key = line.substr(0, colon);
    const std::string_view value = Trim(line.substr(colon + 1));
    if (set->signatures_.empty()) return error("'" + std::string(key) + ":' before any [ID]");
    Signature& s = set->signatures_.back();
    if (key == "title") {
      s.title = std::string(value);
    } else if (key == "why") {
      if (!s.why.empty()) s.why.push_back(' ');
      s.why.append(value);
    } else if (key == "contains" || key == "starts") {
      Rule r;
      r.signature = static_cast<uint32_t>(set->signatures_.size() - 1);
      r.at_start = key == "starts";
      // " && " splits; so does a trailing " &&" (with nothing after it: an error below).
      size_t amp = value.find(" && ");
      if (amp == std::string_view::npos && value.size() >= 3 &&
          value.substr(value.size() - 3) == " &&") {
        amp = value.size() - 3;
      }
      r.needle = std::string(Trim(value.substr(0, amp)));
      if (amp != std::string_view::npos) {
        r.also = std::string(Trim(value.substr(std::min(value.size(), amp + 4))));
      }
      if (r.needle.size() < 2 || (amp != std::string_view::npos && r.also.empty())) {
        return error("a text to look for needs at least 2 bytes");
      }
      set->rules_.push_back(std::move(r));
    } else {
      return error("unknown key '" + std::string(key) + "' (expected title, why, contains or " +
                   "starts)");
    }
  }
  if (Status st = finish(); !st.ok()) return error(st.message());
  set->Index();
  return std::shared_ptr<const SignatureSet>(std::move(set));
}

Result<std::shared_ptr<const SignatureSet>> SignatureSet::FromFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::Error("cannot open log signatures " + path);
  std::stringstream text;
  text << in.rdbuf();
  return FromText(text.str(), path);
}

std::shared_ptr<const SignatureSet> SignatureSet::BuiltIn() {
  static const std::shared_ptr<const SignatureSet> kBuiltIn = [] {
    auto r = FromText(kBuiltInSignatures, "built-in log_signatures.rules");
    // The built-in text is tested; a failure here is a build defect.
    return r.ok() ? r.value() : std::shared_ptr<const SignatureSet>(new SignatureSet());
  }();
  return kBuiltIn;
}

void SignatureSet::Index() {
  begin_.assign((1 << 16) + 1, 0);
  for (const Rule& r : rules_) ++begin_[Pair(r.needle[0], r.needle[1]) + 1];
  for (size_t i = 1; i < begin_.size(); ++i) begin_[i] += begin_[i - 1];
  rows_.resize(rules_.size());
  std::vector<uint32_t> fill(begin_.begin(), begin_.end() - 1);
  for (uint32_t k = 0; k < rules_.size(); ++k) {
    rows_[fill[Pair(rules_[k].needle[0], rules_[k].needle[1])]++] = k;
  }
}

// Logs run to millions of lines and most match nothing, so one pass over the message looks
// up each byte pair in the index of the needles by their first two bytes and compares only
// the needles that start with it (a substring search per needle costs several times more).
int SignatureSet::Match(std::string_view m) const {
  if (rules_.empty()) return kNoSignature;
  constexpr uint32_t kNone = UINT32_MAX;
  uint32_t best = kNone;
  for (size_t i = 0; i + 1 < m.size(); ++i) {
    const size_t pair = Pair(m[i], m[i + 1]);
    for (uint32_t j = begin_[pair]; j < begin_[pair + 1]; ++j) {
      const uint32_t k = rows_[j];
      if (k >= best) break;  // rows are in file order: the rest come later
      const Rule& r = rules_[k];
      if ((r.at_start && i != 0) || m.size() - i < r.needle.size() ||
          std::memcmp(m.data() + i, r.needle.data(), r.needle.size()) != 0) {
        continue;
      }
      if (!r.also.empty() && m.find(r.also) == std::string_view::npos) continue;
      best = k;
      break;
    }
    if (best == 0) break;
  }
  return best == kNone ? kNoSignature : static_cast<int>(rules_[best].signature);
}

}  // namespace teller::logs
