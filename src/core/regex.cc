#include "teller/core/regex.h"

#include <utility>

namespace teller {

Result<Regex> Regex::Compile(std::string_view pattern, Flags flags) {
  Regex r;
  r.pattern_.assign(pattern);
  const int cflags = REG_EXTENDED | REG_NOSUB | (flags.icase ? REG_ICASE : 0);
  if (const int rc = regcomp(&r.re_, r.pattern_.c_str(), cflags); rc != 0) {
    char why[256];
    regerror(rc, &r.re_, why, sizeof(why));
    return Status::Error("invalid regular expression '" + r.pattern_ + "': " + why);
  }
  r.compiled_ = true;
  return r;
}

Regex::Regex(Regex&& other) noexcept
    : re_(other.re_), compiled_(other.compiled_), pattern_(std::move(other.pattern_)) {
  // regex_t holds pointers only (no pointer into itself), so a bitwise move is sound.
  other.compiled_ = false;
}

Regex& Regex::operator=(Regex&& other) noexcept {
  if (this != &other) {
    if (compiled_) regfree(&re_);
    re_ = other.re_;
    compiled_ = other.compiled_;
    pattern_ = std::move(other.pattern_);
    other.compiled_ = false;
  }
  return *this;
}

Regex::~Regex() {
  if (compiled_) regfree(&re_);
}

bool Regex::Matches(std::string_view text) const {
  if (!compiled_) return false;
  // REG_STARTEND: the subject is [rm_so, rm_eo) of the pointer, NUL or not.
  regmatch_t range[1];
  range[0].rm_so = 0;
  range[0].rm_eo = static_cast<regoff_t>(text.size());
  static const char kEmpty[] = "";
  const char* data = text.data() != nullptr ? text.data() : kEmpty;
  return regexec(&re_, data, 1, range, REG_STARTEND) == 0;
}

}  // namespace teller
