#include "src/ingest/log_parser.h"

#include <cstring>

#include "teller/core/request_id.h"

namespace teller::ingest::logs {
namespace {

constexpr size_t kNpos = std::string_view::npos;

inline bool IsDigit(char c) { return c >= '0' && c <= '9'; }
inline bool IsUpper(char c) { return c >= 'A' && c <= 'Z'; }
inline bool IsSpace(char c) { return c == ' ' || c == '\t'; }
inline bool IsIdChar(char c) {
  return IsDigit(c) || (c >= 'a' && c <= 'z') || IsUpper(c) || c == '-' || c == '_';
}

size_t SkipSpaces(std::string_view s, size_t p) {
  while (p < s.size() && IsSpace(s[p])) ++p;
  return p;
}

// Exactly `n` digits at s[p..]; false when any is missing.
bool ReadDigits(std::string_view s, size_t p, int n, int* value) {
  if (p + static_cast<size_t>(n) > s.size()) return false;
  int v = 0;
  for (int i = 0; i < n; ++i) {
    const char c = s[p + static_cast<size_t>(i)];
    if (!IsDigit(c)) return false;
    v = v * 10 + (c - '0');
  }
  *value = v;
  return true;
}

// "HH:MM:SS" with an optional fraction ('.' or ',' as the router and loguru print it, up
// to 9 digits kept, more skipped). Returns the end position or kNpos.
size_t ParseClock(std::string_view s, size_t p, PrintedTime* t) {
  if (!ReadDigits(s, p, 2, &t->hour) || p + 2 >= s.size() || s[p + 2] != ':' ||
      !ReadDigits(s, p + 3, 2, &t->minute) || p + 5 >= s.size() || s[p + 5] != ':' ||
      !ReadDigits(s, p + 6, 2, &t->second)) {
    return kNpos;
  }
  p += 8;
  t->nanos = 0;
  if (p + 1 < s.size() && (s[p] == '.' || s[p] == ',') && IsDigit(s[p + 1])) {
    ++p;
    int64_t frac = 0;
    int digits = 0;
    while (p < s.size() && IsDigit(s[p])) {
      if (digits < 9) {
        frac = frac * 10 + (s[p] - '0');
        ++digits;
      }
      ++p;
    }
    for (; digits < 9; ++digits) frac *= 10;
    t->nanos = frac;
  }
  return p;
}

// Zone right after the time: 'Z', or +HH[:MM] / -HHMM. A '-' or '+' not followed by two
// digits is left alone (loguru's " - " separator has a space first anyway).
size_t ParseZone(std::string_view s, size_t p, PrintedTime* t) {
  if (p >= s.size()) return p;
  if (s[p] == 'Z' || s[p] == 'z') {
    t->has_zone = true;
    t->zone_offset_s = 0;
    return p + 1;
  }
  if (s[p] != '+' && s[p] != '-') return p;
  int hh = 0, mm = 0;
  if (!ReadDigits(s, p + 1, 2, &hh) || hh > 23) return p;
  size_t q = p + 3;
  if (q < s.size() && s[q] == ':' && ReadDigits(s, q + 1, 2, &mm)) {
    q += 3;
  } else if (ReadDigits(s, q, 2, &mm)) {
    q += 2;
  }
  if (mm > 59) return p;
  t->has_zone = true;
  t->zone_offset_s = (s[p] == '-' ? -1 : 1) * (hh * 3600 + mm * 60);
  return q;
}

// "YYYY-MM-DD" then 'T' or ' ' then the clock, then an optional zone.
size_t ParseFullTimestamp(std::string_view s, size_t p, PrintedTime* t) {
  if (p + 19 > s.size() || s[p + 4] != '-' || s[p + 7] != '-') return kNpos;
  PrintedTime r;
  if (!ReadDigits(s, p, 4, &r.year) || !ReadDigits(s, p + 5, 2, &r.month) ||
      !ReadDigits(s, p + 8, 2, &r.day)) {
    return kNpos;
  }
  r.has_year = true;
  const char sep = s[p + 10];
  if (sep != 'T' && sep != ' ') return kNpos;
  size_t q = ParseClock(s, p + 11, &r);
  if (q == kNpos) return kNpos;
  q = ParseZone(s, q, &r);
  *t = r;
  return q;
}

// "MM-DD HH:MM:SS" (vLLM: no year, local time).
size_t ParseMonthDayClock(std::string_view s, size_t p, PrintedTime* t) {
  PrintedTime r;
  if (p + 14 > s.size() || s[p + 2] != '-' || s[p + 5] != ' ' || !ReadDigits(s, p, 2, &r.month) ||
      !ReadDigits(s, p + 3, 2, &r.day)) {
    return kNpos;
  }
  const size_t q = ParseClock(s, p + 6, &r);
  if (q == kNpos) return kNpos;
  *t = r;
  return q;
}

// After a source location "[file.py:LINE]" or "file.py:LINE]": the message start, or kNpos
// when no such token follows within a short window (the location never holds spaces).
size_t SkipSourceLocation(std::string_view s, size_t p) {
  size_t q = p;
  if (q < s.size() && s[q] == '[') ++q;
  const size_t limit = q + 160 < s.size() ? q + 160 : s.size();
  bool colon = false;
  for (; q < limit; ++q) {
    const char c = s[q];
    if (c == ']') return colon ? SkipSpaces(s, q + 1) : kNpos;
    if (c == ':') colon = true;
    if (IsSpace(c)) return kNpos;
  }
  return kNpos;
}

// Level words after a timestamp: loguru "| INFO     |", "2026-..+0000 | evaluate | INFO -",
// Hadoop "INFO [main]", Zookeeper "- INFO  [", OpenStack "25746 INFO nova". Looks at the
// first few tokens only, so a level word deep inside the message does not count.
size_t ScanLevelTokens(std::string_view s, size_t p, ParsedLine* out) {
  auto is_delim = [](char c) { return IsSpace(c) || c == '|' || c == '[' || c == ']' || c == ':'; };
  size_t q = p;
  const size_t limit = p + 96 < s.size() ? p + 96 : s.size();
  for (int token = 0; token < 5 && q < limit; ++token) {
    while (q < limit && is_delim(s[q])) ++q;
    const size_t start = q;
    while (q < s.size() && !is_delim(s[q])) ++q;
    const LogLevel level = LevelFromWord(s.substr(start, q - start));
    if (level != LogLevel::kUnknown) {
      out->level = level;
      // The message starts after the level and its separators (" | ", " - ", ": ").
      while (q < s.size() && (IsSpace(s[q]) || s[q] == '|' || s[q] == ':')) ++q;
      if (q + 1 < s.size() && s[q] == '-' && IsSpace(s[q + 1])) q = SkipSpaces(s, q + 1);
      return q;
    }
  }
  q = p;
  while (q < s.size() && (IsSpace(s[q]) || s[q] == '|')) ++q;
  return q;
}

// "LEVEL ..." at p: vLLM "LEVEL MM-DD HH:MM:SS [file:LINE] msg" (and the older
// "file:LINE] msg"), "LEVEL: msg" (uvicorn, Python logging), or "LEVEL msg".
size_t ParseLevelHeader(std::string_view s, size_t p, bool have_time, ParsedLine* out) {
  size_t q = p;
  while (q < s.size() && IsUpper(s[q])) ++q;
  const LogLevel level = LevelFromWord(s.substr(p, q - p));
  if (level == LogLevel::kUnknown || q >= s.size()) {
    if (level != LogLevel::kUnknown) out->level = level;  // the line is just "ERROR"
    return level == LogLevel::kUnknown ? kNpos : q;
  }
  if (s[q] == ':') {
    out->level = level;
    return SkipSpaces(s, q + 1);
  }
  if (!IsSpace(s[q])) return kNpos;
  out->level = level;
  q = SkipSpaces(s, q);
  PrintedTime t;
  const size_t after_time = ParseMonthDayClock(s, q, &t);
  if (after_time == kNpos) return q;
  if (!have_time) {
    out->has_time = true;
    out->time = t;
  }
  const size_t loc = SkipSpaces(s, after_time);
  const size_t msg = SkipSourceLocation(s, loc);
  return msg == kNpos ? loc : msg;
}

// Tags after an SGLang time: "TP13", "PP0 ATTN_CP0 TP0", "DP1 TP3".
void ParseRankTags(std::string_view tags, ParsedLine* out) {
  size_t i = 0;
  while (i < tags.size()) {
    while (i < tags.size() && IsSpace(tags[i])) ++i;
    const size_t start = i;
    while (i < tags.size() && !IsSpace(tags[i])) ++i;
    const std::string_view tok = tags.substr(start, i - start);
    if (tok.size() < 3 || tok.size() > 9) continue;
    int32_t v = 0;
    bool digits = true;
    for (size_t k = 2; k < tok.size(); ++k) {
      if (!IsDigit(tok[k])) {
        digits = false;
        break;
      }
      v = v * 10 + (tok[k] - '0');
    }
    if (!digits) continue;
    if (tok[0] == 'T' && tok[1] == 'P') out->tp_rank = v;
    if (tok[0] == 'P' && tok[1] == 'P') out->pp_rank = v;
    if (tok[0] == 'D' && tok[1] == 'P') out->dp_rank = v;
  }
}

// torch c10d / glog: "[E ProcessGroupNCCL.cpp:563] msg" or
// "[E321 02:07:08.408271257 ProcessGroupNCCL.cpp:607] msg" (month not zero-padded: "E321"
// is March 21, "W610" June 10). `p` is at '['.
size_t ParseGlogHeader(std::string_view s, size_t p, bool have_time, ParsedLine* out) {
  if (p + 3 >= s.size()) return kNpos;
  LogLevel level;
  switch (s[p + 1]) {
    case 'I':
      level = LogLevel::kInfo;
      break;
    case 'W':
      level = LogLevel::kWarning;
      break;
    case 'E':
      level = LogLevel::kError;
      break;
    case 'F':
      level = LogLevel::kCritical;
      break;
    default:
      return kNpos;
  }
  size_t q = p + 2;
  PrintedTime t;
  bool timed = false;
  if (IsDigit(s[q])) {
    size_t e = q;
    int v = 0;
    while (e < s.size() && IsDigit(s[e]) && e - q < 4) v = v * 10 + (s[e++] - '0');
    if (e - q < 3 || e >= s.size() || s[e] != ' ') return kNpos;
    t.month = v / 100;
    t.day = v % 100;
    const size_t c = ParseClock(s, e + 1, &t);
    if (c == kNpos) return kNpos;
    timed = true;
    q = c;
  }
  if (q >= s.size() || s[q] != ' ') return kNpos;
  const size_t msg = SkipSourceLocation(s, q + 1);
  if (msg == kNpos) return kNpos;
  out->level = level;
  if (timed && !have_time) {
    out->has_time = true;
    out->time = t;
  }
  return msg;
}

// '[' at p: SGLang / lm-eval / router "[YYYY-MM-DD HH:MM:SS(,mmm)( tags)] (LEVEL:) msg",
// torch "[rankN]:..." and glog "[E...] msg".
size_t ParseBracketHeader(std::string_view s, size_t p, bool have_time, ParsedLine* out) {
  if (p + 1 >= s.size()) return kNpos;
  const char c = s[p + 1];
  if (IsDigit(c)) {
    PrintedTime t;
    size_t q = ParseFullTimestamp(s, p + 1, &t);
    if (q == kNpos) return kNpos;
    const size_t limit = q + 64 < s.size() ? q + 64 : s.size();
    size_t close = q;
    while (close < limit && s[close] != ']') ++close;
    if (close >= limit) return kNpos;
    ParseRankTags(s.substr(q, close - q), out);
    if (!have_time) {
      out->has_time = true;
      out->time = t;
    }
    q = SkipSpaces(s, close + 1);
    // Router "INFO:" and lm-eval "INFO evaluator.py:202:" put the level right after.
    size_t w = q;
    while (w < s.size() && IsUpper(s[w])) ++w;
    if (w > q && (w == s.size() || s[w] == ':' || IsSpace(s[w]))) {
      const LogLevel level = LevelFromWord(s.substr(q, w - q));
      if (level != LogLevel::kUnknown) {
        out->level = level;
        if (w < s.size() && s[w] == ':') ++w;
        q = SkipSpaces(s, w);
      }
    }
    return q;
  }
  if (s.compare(p, 5, "[rank") == 0) {
    size_t q = p + 5;
    int32_t rank = 0;
    const size_t start = q;
    while (q < s.size() && IsDigit(s[q]) && q - start < 9) rank = rank * 10 + (s[q++] - '0');
    if (q == start || q + 1 >= s.size() || s[q] != ']' || s[q + 1] != ':') return kNpos;
    out->global_rank = rank;
    q += 2;
    if (q < s.size() && s[q] == '[') {
      const size_t msg = ParseGlogHeader(s, q, have_time, out);
      if (msg != kNpos) return msg;
    }
    return SkipSpaces(s, q);
  }
  return ParseGlogHeader(s, p, have_time, out);
}

// Process prefixes "(Role ... pid=N)" / "(RayWorkerWrapper pid=N, ip=A.B.C.D)", any
// number, separated by spaces.
size_t ParsePrefixes(std::string_view s, size_t p, ParsedLine* out) {
  while (p < s.size() && s[p] == '(') {
    const size_t window = s.size() - p < 160 ? s.size() - p : 160;
    const void* hit = std::memchr(s.data() + p, ')', window);
    if (hit == nullptr) break;
    const size_t close = static_cast<size_t>(static_cast<const char*>(hit) - s.data());
    const std::string_view inner = s.substr(p + 1, close - p - 1);
    const size_t at = inner.find("pid=");
    if (at == kNpos || (at > 0 && !IsSpace(inner[at - 1]) && inner[at - 1] != ',')) break;
    size_t d = at + 4;
    int64_t pid = 0;
    const size_t start = d;
    while (d < inner.size() && IsDigit(inner[d]) && d - start < 12)
      pid = pid * 10 + (inner[d++] - '0');
    if (d == start || (d < inner.size() && inner[d] != ',' && !IsSpace(inner[d]))) break;
    std::string_view role = inner.substr(0, at);
    while (!role.empty() && (IsSpace(role.back()) || role.back() == ',')) role.remove_suffix(1);
    if (out->num_prefixes < ParsedLine::kMaxPrefixes) {
      out->prefixes[out->num_prefixes++] = ProcessPrefix{role, pid};
    } else {
      out->prefixes[ParsedLine::kMaxPrefixes - 1] = ProcessPrefix{role, pid};
    }
    p = SkipSpaces(s, close + 1);
  }
  return p;
}

// A full timestamp somewhere in the first bytes at a token boundary (OpenStack puts the
// file name first). Only tried when nothing else matched.
size_t FindLateTimestamp(std::string_view s, size_t p, PrintedTime* t, size_t* start) {
  const size_t limit = p + 64 < s.size() ? p + 64 : s.size();
  for (size_t i = p + 1; i + 19 <= s.size() && i < limit; ++i) {
    if (s[i + 4] != '-' || !IsDigit(s[i])) continue;
    const char prev = s[i - 1];
    if (!IsSpace(prev) && prev != '[' && prev != '(') continue;
    const size_t e = ParseFullTimestamp(s, i, t);
    if (e != kNpos) {
      *start = i;
      return e;
    }
  }
  return kNpos;
}

// An id token at s[p..]: quoted ('...' or "...") verbatim, else the run of id characters,
// which leaves out trailing '.', ':' and ',' by construction.
std::string_view ReadIdToken(std::string_view s, size_t p) {
  if (p >= s.size()) return {};
  if (s[p] == '\'' || s[p] == '"') {
    const char quote = s[p];
    const size_t end = s.find(quote, p + 1);
    if (end == kNpos || end - p - 1 > 256) return {};
    return s.substr(p + 1, end - p - 1);
  }
  size_t q = p;
  while (q < s.size() && IsIdChar(s[q]) && q - p < 256) ++q;
  return s.substr(p, q - p);
}

bool HasDigit(std::string_view s) {
  for (char c : s) {
    if (IsDigit(c)) return true;
  }
  return false;
}

bool IsHex(std::string_view s) {
  for (char c : s) {
    if (!IsDigit(c) && !(c >= 'a' && c <= 'f') && !(c >= 'A' && c <= 'F')) return false;
  }
  return !s.empty();
}

// vLLM ≥2026 logs the engine-internal id "chatcmpl-<16hex>-<8hex>" next to the external
// "chatcmpl-<16hex>" the API server received (vllm#34503); the join key is the external one.
std::string_view Normalize(std::string_view id) { return ExternalRequestId(id); }

// SGLang "rids=['a', 'b']": the first id, and how many the list holds.
std::string_view ReadIdList(std::string_view s, size_t p, int* count) {
  std::string_view first;
  int n = 0;
  while (p < s.size() && s[p] != ']') {
    while (p < s.size() && (IsSpace(s[p]) || s[p] == ',')) ++p;
    if (p >= s.size() || s[p] == ']') break;
    std::string_view tok = ReadIdToken(s, p);
    if (tok.empty()) break;
    const bool quoted = s[p] == '\'' || s[p] == '"';
    p += tok.size() + (quoted ? 2 : 0);
    if (n++ == 0) first = tok;
    while (p < s.size() && s[p] != ',' && s[p] != ']') ++p;  // skip junk to the separator
  }
  *count = n;
  return first;
}

}  // namespace

LogLevel LevelFromWord(std::string_view w) {
  switch (w.size()) {
    case 4:
      if (w == "INFO") return LogLevel::kInfo;
      if (w == "WARN") return LogLevel::kWarning;
      break;
    case 5:
      if (w == "DEBUG" || w == "TRACE") return LogLevel::kDebug;
      if (w == "ERROR") return LogLevel::kError;
      if (w == "FATAL") return LogLevel::kCritical;
      break;
    case 7:
      if (w == "WARNING") return LogLevel::kWarning;
      break;
    case 8:
      if (w == "CRITICAL") return LogLevel::kCritical;
      break;
    default:
      break;
  }
  return LogLevel::kUnknown;
}

int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

bool IsValidTime(const PrintedTime& t) {
  if (t.month < 1 || t.month > 12 || t.day < 1 || t.hour > 23 || t.minute > 59 || t.second > 60) {
    return false;
  }
  static constexpr int kDays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (t.day > kDays[t.month - 1]) return false;
  if (t.month == 2 && t.day == 29 && t.has_year) {
    const bool leap = (t.year % 4 == 0 && t.year % 100 != 0) || t.year % 400 == 0;
    if (!leap) return false;
  }
  return true;
}

int32_t RankFromRole(std::string_view role) {
  const size_t r = role.find("rank=");
  if (r != kNpos) {
    int32_t v = 0;
    size_t q = r + 5;
    const size_t start = q;
    while (q < role.size() && IsDigit(role[q]) && q - start < 9) v = v * 10 + (role[q++] - '0');
    return q > start ? v : -1;
  }
  // "Worker_TP3", "VllmWorker TP0", "Worker_PP1_TP0", "Worker_PP1".
  auto index_after = [&](std::string_view tag) -> int32_t {
    for (size_t at = role.find(tag); at != kNpos; at = role.find(tag, at + 1)) {
      if (at > 0 && role[at - 1] != '_' && !IsSpace(role[at - 1])) continue;
      size_t q = at + 2;
      int32_t v = 0;
      const size_t start = q;
      while (q < role.size() && IsDigit(role[q]) && q - start < 9) v = v * 10 + (role[q++] - '0');
      if (q > start) return v;
    }
    return -1;
  };
  const int32_t tp = index_after("TP");
  const int32_t pp = index_after("PP");
  // The rank is dp * pp_size * tp_size + pp * tp_size + tp with sizes the name does not
  // give, so an index above 0 in a coarser dimension leaves the rank unknown. vLLM names
  // only the dimensions larger than one ("Worker_PP1" has TP=1).
  if (index_after("DP") > 0) return -1;
  if (tp >= 0) return pp <= 0 ? tp : -1;
  return pp;
}

void ParseLogLine(std::string_view s, ParsedLine* out) {
  *out = ParsedLine{};
  size_t p = 0;
  // A full date first: the RFC3339 collector prefix, loguru, generic "YYYY-MM-DD ...". It
  // wins over a time printed after it (it has a year, often a zone and more digits).
  bool have_time = false;
  size_t e = ParseFullTimestamp(s, 0, &out->time);
  if (e != kNpos) {
    have_time = out->has_time = true;
    p = e;
    if (p < s.size() && s[p] == ']') ++p;
  }
  p = SkipSpaces(s, p);
  p = ParsePrefixes(s, p, out);
  size_t msg = kNpos;
  if (p < s.size()) {
    if (IsUpper(s[p])) {
      msg = ParseLevelHeader(s, p, have_time, out);
    } else if (s[p] == '[') {
      msg = ParseBracketHeader(s, p, have_time, out);
    }
  }
  if (msg == kNpos) {
    if (have_time) {
      msg = ScanLevelTokens(s, p, out);
    } else {
      size_t start = 0;
      const size_t late = FindLateTimestamp(s, p, &out->time, &start);
      if (late != kNpos) {
        out->has_time = true;
        msg = ScanLevelTokens(s, late < s.size() && s[late] == ']' ? late + 1 : late, out);
      } else {
        msg = p;
      }
    }
  }
  if (msg > s.size()) msg = s.size();
  std::string_view m = s.substr(msg);
  while (!m.empty() && (IsSpace(m.back()))) m.remove_suffix(1);
  out->message = m;
}

std::string_view FindRequestId(std::string_view s, int* count) {
  *count = 0;
  // SGLang: "rids=[...]" (request trace), "rid='...'" (request log).
  for (size_t at = s.find("rid"); at != kNpos; at = s.find("rid", at + 3)) {
    if (at > 0 && IsIdChar(s[at - 1])) continue;  // "grid=", "req_rid"
    if (s.compare(at, 6, "rids=[") == 0) {
      int n = 0;
      const std::string_view first = ReadIdList(s, at + 6, &n);
      if (!first.empty()) {
        *count = n;
        return Normalize(first);
      }
    } else if (s.compare(at, 4, "rid=") == 0) {
      const std::string_view id = ReadIdToken(s, at + 4);
      if (!id.empty()) {
        *count = 1;
        return Normalize(id);
      }
    }
  }
  // vLLM "Received/Added/Finished/Aborted request <id>", router "Routing request <id>",
  // "request_id=<id>". The token must hold a digit so that "request for model" is no id.
  for (size_t at = s.find("equest"); at != kNpos; at = s.find("equest", at + 6)) {
    if (at == 0 || (s[at - 1] != 'r' && s[at - 1] != 'R')) continue;
    size_t q = at + 6;
    if (s.compare(q, 4, "_id=") == 0) {
      q += 4;
    } else if (s.compare(q, 5, "_id: ") == 0) {
      q += 5;
    } else if (q < s.size() && s[q] == ' ') {
      q += 1;
    } else {
      continue;
    }
    const std::string_view id = ReadIdToken(s, q);
    if (!id.empty() && HasDigit(id)) {
      *count = 1;
      return Normalize(id);
    }
  }
  // vLLM v0 preemption: "Sequence group <id> is preempted" (<id> may be a bare counter).
  const size_t group = s.find("Sequence group ");
  if (group != kNpos) {
    const std::string_view id = ReadIdToken(s, group + 15);
    if (!id.empty() && HasDigit(id)) {
      *count = 1;
      return Normalize(id);
    }
  }
  // Anywhere: "chatcmpl-<hex>", "cmpl-<hex>-<n>", "chat-<32hex>".
  for (size_t at = s.find("cmpl-"); at != kNpos; at = s.find("cmpl-", at + 5)) {
    size_t start = at;
    if (at >= 4 && s.compare(at - 4, 4, "chat") == 0) start = at - 4;
    if (start > 0 && IsIdChar(s[start - 1])) continue;
    const std::string_view id = ReadIdToken(s, start);
    if (id.size() >= (at - start) + 9 && HasDigit(id)) {  // 4+ characters after "cmpl-"
      *count = 1;
      return Normalize(id);
    }
  }
  for (size_t at = s.find("chat-"); at != kNpos; at = s.find("chat-", at + 5)) {
    if (at > 0 && IsIdChar(s[at - 1])) continue;
    const std::string_view id = ReadIdToken(s, at);
    if (id.size() == 37 && IsHex(id.substr(5))) {
      *count = 1;
      return id;
    }
  }
  return {};
}

}  // namespace teller::ingest::logs
