#include "teller/logs/template_miner.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <unordered_map>
#include <utility>

#include "teller/core/file_util.h"

namespace teller::logs {
namespace {

constexpr uint32_t kNone = UINT32_MAX;
// Token ids of Match for tokens never interned: they equal no template token and route
// down wildcard branches; kUnknownName marks those that are names (IsName).
constexpr StringId kUnknownName = StringPool::kNotFound - 1;
constexpr std::string_view kFileMagic = "teller-log-templates 1";

// Character classes, one table lookup each: masking looks at every byte of every line.
enum : uint8_t {
  kDigitClass = 1,
  kLetterClass = 2,
  kHexClass = 4,     // digits and a-f, A-F
  kBlankClass = 8,   // space, tab
  kJoinerClass = 16  // '.', ':', '-': join masked runs into one wildcard (decimal points,
                     // IP dots, ports, times, dates, uuid dashes)
};
constexpr auto kClass = [] {
  std::array<uint8_t, 256> c{};
  for (int i = '0'; i <= '9'; ++i) c[i] = kDigitClass | kHexClass;
  for (int i = 'a'; i <= 'z'; ++i) c[i] = kLetterClass | (i <= 'f' ? kHexClass : 0);
  for (int i = 'A'; i <= 'Z'; ++i) c[i] = kLetterClass | (i <= 'F' ? kHexClass : 0);
  c[' '] = c['\t'] = kBlankClass;
  c['.'] = c[':'] = c['-'] = kJoinerClass;
  return c;
}();
uint8_t ClassOf(char c) { return kClass[static_cast<unsigned char>(c)]; }
bool IsBlank(char c) { return ClassOf(c) & kBlankClass; }
bool IsDigit(char c) { return ClassOf(c) & kDigitClass; }
bool IsAlnum(char c) { return ClassOf(c) & (kDigitClass | kLetterClass); }
bool IsJoiner(char c) { return ClassOf(c) & kJoinerClass; }

// `colon`: the token holds a ':' (looked up once per token).
bool IsPath(std::string_view t, bool colon) {
  if (t.size() > 1 && t[0] == '/') return true;
  if (t.size() > 2 && (t[0] == '.' || t[0] == '~') && t[1] == '/') return true;
  return colon && t.find("://") != std::string_view::npos;
}

// Starts with a capital letter, then letters, digits or masks, maybe one closing mark:
// "HTTPS", "SOCKS<*>", "SCHEDULED", "WindowsUpdateAgent.".
bool IsName(std::string_view t) {
  if (!t.empty() && (t.back() == ':' || t.back() == ',' || t.back() == '.' || t.back() == ';')) {
    t.remove_suffix(1);
  }
  if (t.empty() || !(t[0] >= 'A' && t[0] <= 'Z')) return false;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t.substr(i, 3) == kWildcard) {
      i += 2;
      continue;
    }
    if (!IsAlnum(t[i])) return false;
  }
  return true;
}

bool IsNameChar(char c) { return IsAlnum(c) || c == '.' || c == '-' || c == '_'; }

// Where a "host:port" starting at `i` ends (a dotted name, ':', digits), or `i` when there
// is none there: "proxy.example.com:5070", "node-3.cluster.local:8080".
size_t HostPortEnd(std::string_view t, size_t i) {
  size_t j = i;
  bool dot = false;
  while (j < t.size() && IsNameChar(t[j])) dot |= t[j] == '.', ++j;
  if (!dot || j + 1 >= t.size() || t[j] != ':' || !IsDigit(t[j + 1])) return i;
  j += 1;
  while (j < t.size() && IsDigit(t[j])) ++j;
  return j < t.size() && IsAlnum(t[j]) ? i : j;
}

// A run of letters and digits from `i`: where it ends, whether it is masked (holds a
// digit, or is 8 or more hex letters) and whether it may be part of a variable (masked,
// or hex letters alone).
struct Run {
  size_t end;
  bool masked;
  bool variable;
  size_t letters;  // masked runs: leading letters kept ("SOCKS5" -> "SOCKS<*>"), else 0
};
Run ScanRun(std::string_view t, size_t i) {
  size_t k = i, first_digit = std::string_view::npos;
  uint8_t all = kHexClass, any = 0;
  while (k < t.size()) {
    const uint8_t c = ClassOf(t[k]);
    if (!(c & (kDigitClass | kLetterClass))) break;
    if ((c & kDigitClass) && !(any & kDigitClass)) first_digit = k;
    any |= c;
    all &= c;
    ++k;
  }
  const bool digit = any & kDigitClass, hex = all & kHexClass;
  const bool masked = digit || (hex && k - i >= 8);
  // A name with a number after it ("SOCKS5", "node129", "wl0") keeps the name; a run that
  // could be hex ("e820", "a3f9c2") is a number whole.
  const size_t letters = masked && digit && !hex ? first_digit - i : 0;
  return {k, masked, (masked && letters == 0) || hex, letters};
}

// Day and month names: parts of dates, so values ("Fri Jun 17 07:07:00 2005").
bool IsDateName(std::string_view t) {
  if (!t.empty() && (t.back() == ',' || t.back() == '.')) t.remove_suffix(1);
  if (t.size() != 3) return false;
  static constexpr std::string_view kNames[] = {"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun",
                                                "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul",
                                                "Aug", "Sep", "Oct", "Nov", "Dec"};
  for (std::string_view n : kNames) {
    if (t == n) return true;
  }
  return false;
}

// Appends token `t`, masked, to `out`.
void MaskToken(std::string_view t, std::string* out) {
  const bool colon = std::memchr(t.data(), ':', t.size()) != nullptr;
  if (IsPath(t, colon)) {
    out->append(kWildcard);
    return;
  }
  if ((t.size() == 3 || t.size() == 4) && IsDateName(t)) {
    out->append(kWildcard);
    if (t.size() == 4) out->push_back(t.back());
    return;
  }
  const size_t n = t.size();
  size_t i = 0;
  while (i < n) {
    if (!IsAlnum(t[i])) {
      size_t j = i + 1;
      while (j < n && !IsAlnum(t[j])) ++j;
      out->append(t.data() + i, j - i);
      i = j;
      continue;
    }
    if (colon && (i == 0 || !IsNameChar(t[i - 1]))) {
      if (const size_t e = HostPortEnd(t, i); e > i) {
        out->append(kWildcard);
        i = e;
        continue;
      }
    }
    // A span of letter-and-digit runs joined by '.', ':' or '-' (a number, an IP, a time,
    // a uuid) is one wildcard when one of its runs holds a digit and every run is a
    // variable (holds a digit, or is hex letters alone: the "bdcc" of a uuid), or when a
    // run alone is 8 or more hex letters. Otherwise each run holding a digit is masked
    // alone ("BIOS-e820" -> "BIOS-<*>").
    const Run first = ScanRun(t, i);
    if (!(first.end + 1 < n && IsJoiner(t[first.end]) && IsAlnum(t[first.end + 1]))) {
      // One run alone, the common case.
      if (first.masked) {
        out->append(t.data() + i, first.letters);
        out->append(kWildcard);
      } else {
        out->append(t.data() + i, first.end - i);
      }
      i = first.end;
      continue;
    }
    // Two passes over the span: classify it, then write it.
    size_t end = i;
    bool any_digit = false, all_variable = true;
    for (size_t j = i;;) {
      const Run r = ScanRun(t, j);
      any_digit |= r.masked;
      all_variable &= r.variable;
      end = r.end;
      if (r.end + 1 < n && IsJoiner(t[r.end]) && IsAlnum(t[r.end + 1])) {
        j = r.end + 1;
        continue;
      }
      break;
    }
    if (any_digit && all_variable) {
      out->append(kWildcard);
    } else {
      bool last_masked = false;
      for (size_t j = i; j < end;) {
        const Run r = ScanRun(t, j);
        if (r.masked && r.letters == 0 && last_masked) {
          out->pop_back();  // "<*>." + "<*>" -> "<*>"
        } else if (r.masked) {
          out->append(t.substr(j, r.letters));
          out->append(kWildcard);
        } else {
          out->append(t.substr(j, r.end - j));
        }
        last_masked = r.masked;
        if (r.end < end) out->push_back(t[r.end]);  // the joiner
        j = r.end + 1;
      }
    }
    i = end;
  }
}

}  // namespace

void MaskMessage(std::string_view message, std::string* out) {
  out->clear();
  const size_t n = message.size();
  size_t i = 0;
  while (i < n) {
    while (i < n && IsBlank(message[i])) ++i;
    if (i == n) break;
    size_t j = i;
    while (j < n && !IsBlank(message[j])) ++j;
    if (!out->empty()) out->push_back(' ');
    MaskToken(message.substr(i, j - i), out);
    i = j;
  }
}

Status ValidateOptions(const MinerOptions& o) {
  if (o.depth < 3 || o.depth > 64) {
    return Status::Error("template mining: depth " + std::to_string(o.depth) +
                         " is out of range (3..64)");
  }
  if (!(o.similarity >= 0.0 && o.similarity <= 1.0)) {
    return Status::Error("template mining: similarity " + std::to_string(o.similarity) +
                         " is out of range (0..1)");
  }
  if (o.max_children < 1) {
    return Status::Error("template mining: max_children " + std::to_string(o.max_children) +
                         " must be at least 1");
  }
  return Status::Ok();
}

// ---- The miner's state ---------------------------------------------------------------
struct Template {
  std::vector<StringId> tokens;
  uint64_t count = 0;
  uint32_t wildcards = 0;
};

// A node of the tree: the root (node 0, children by token count), prefix-token nodes
// (children by token id) and leaves (templates). Children live in one hash map keyed by
// (node, token), which keeps a node to a few words.
struct Node {
  uint32_t named_children = 0;  // children other than the wildcard branch
  uint32_t wildcard_child = kNone;
  std::vector<TemplateId> templates;  // leaves only
};

struct TemplateMiner::State {
  MinerOptions options;
  StringPool pool;
  StringId wildcard = 0;
  std::vector<Template> templates;
  std::vector<Node> nodes;
  std::unordered_map<uint64_t, uint32_t> edges;
  std::vector<uint8_t> name;  // by token id: IsName
  struct Slot {
    uint64_t hash;
    StringId id;
  };
  std::vector<Slot> slots;  // open addressing over the pool's ids (InternToken)
  size_t slot_count = 0;
  std::string masked;          // scratch of Add
  std::vector<StringId> line;  // scratch of Add

  explicit State(const MinerOptions& o) : options(o) {
    options.depth = std::clamp(options.depth, 3, 64);
    if (!(options.similarity == options.similarity)) {  // NaN
      options.similarity = MinerOptions{}.similarity;
    }
    options.similarity = std::clamp(options.similarity, 0.0, 1.0);
    options.max_children = std::max(options.max_children, 1);
    wildcard = pool.Intern(kWildcard);
    nodes.emplace_back();  // the root
  }

  static uint64_t Key(uint32_t node, uint32_t token) {
    return static_cast<uint64_t>(node) << 32 | token;
  }

  uint32_t Child(uint32_t node, uint32_t token) const {
    auto it = edges.find(Key(node, token));
    return it == edges.end() ? kNone : it->second;
  }

  uint32_t Prefix(size_t tokens) const {
    return static_cast<uint32_t>(std::min<size_t>(tokens, options.depth - 2));
  }

  // The leaf a line of tokens `t` is looked up in, or kNone. A token with no branch of its
  // own goes down the wildcard branch.
  uint32_t FindLeaf(const std::vector<StringId>& t) const {
    uint32_t node = Child(0, static_cast<uint32_t>(t.size()));
    for (uint32_t i = 0, n = Prefix(t.size()); i < n && node != kNone; ++i) {
      uint32_t next = t[i] == wildcard ? kNone : Child(node, t[i]);
      node = next != kNone ? next : nodes[node].wildcard_child;
    }
    return node;
  }

  uint32_t NewNode() {
    nodes.emplace_back();
    return static_cast<uint32_t>(nodes.size() - 1);
  }

  // Files template `id` under the path of its tokens, making the nodes it needs. A node
  // with max_children named children sends further tokens down its wildcard branch.
  void Insert(TemplateId id) {
    const std::vector<StringId>& t = templates[id].tokens;
    uint32_t node = Child(0, static_cast<uint32_t>(t.size()));
    if (node == kNone) {
      node = NewNode();
      edges.emplace(Key(0, static_cast<uint32_t>(t.size())), node);
    }
    for (uint32_t i = 0, n = Prefix(t.size()); i < n; ++i) {
      uint32_t next = t[i] == wildcard ? kNone : Child(node, t[i]);
      if (next == kNone) {
        if (t[i] != wildcard &&
            nodes[node].named_children < static_cast<uint32_t>(options.max_children)) {
          next = NewNode();
          edges.emplace(Key(node, t[i]), next);
          ++nodes[node].named_children;
        } else {
          next = nodes[node].wildcard_child;
          if (next == kNone) {
            next = NewNode();
            nodes[node].wildcard_child = next;
          }
        }
      }
      node = next;
    }
    nodes[node].templates.push_back(id);
  }

  // The template of `candidates` (a leaf's) most similar to `t` when its similarity
  // reaches the threshold, else kNoTemplate. Similarity: the share of positions where the
  // template holds the line's token (a wildcard of the template counts for positions
  // where the line has a wildcard too: both are variables); ties go to the template with
  // more wildcards (the more general one), then to the older. A template whose name
  // (IsName) differs from the line's name at some position is never taken, however
  // similar: "Transitioned from NEW to SCHEDULED" and "... from SCHEDULED to RUNNING",
  // "via HTTPS" and "via SOCKS5", "Begin" and "End" are different events, while values in
  // lower case (user and host names) and masked ones merge.
  TemplateId Best(const std::vector<TemplateId>* candidates, const std::vector<StringId>& t) const {
    if (candidates == nullptr) return kNoTemplate;
    TemplateId best = kNoTemplate;
    size_t best_equal = 0;
    uint32_t best_wild = 0;
    const size_t n = t.size();
    for (TemplateId id : *candidates) {
      const Template& tp = templates[id];
      size_t equal = 0;
      bool names_differ = false;
      for (size_t i = 0; i < n; ++i) {
        const bool eq = tp.tokens[i] == t[i];
        equal += eq;
        names_differ |= !eq && IsNameId(tp.tokens[i]) && IsNameId(t[i]);
      }
      if (names_differ) continue;
      if (best == kNoTemplate || equal > best_equal ||
          (equal == best_equal && tp.wildcards > best_wild)) {
        best = id;
        best_equal = equal;
        best_wild = tp.wildcards;
      }
    }
    if (best == kNoTemplate) return kNoTemplate;
    if (n > 0 && static_cast<double>(best_equal) < options.similarity * static_cast<double>(n)) {
      return kNoTemplate;
    }
    return best;
  }

  // The template a line of tokens `t` joins, or kNoTemplate.
  TemplateId Lookup(const std::vector<StringId>& t) const {
    const uint32_t leaf = FindLeaf(t);
    return Best(leaf == kNone ? nullptr : &nodes[leaf].templates, t);
  }

  bool IsNameId(StringId id) const { return id == kUnknownName || (id < name.size() && name[id]); }

  // The masked tokens of `message` as ids of the pool, interned as they are masked (one
  // pass over the line). The pool's own map is only asked for tokens the table below has
  // not seen: its hash costs more than this one, which reads 8 bytes at a time.
  void TokensOf(std::string_view message, std::vector<StringId>* out) {
    out->clear();
    masked.clear();
    const size_t n = message.size();
    size_t i = 0;
    while (i < n) {
      while (i < n && IsBlank(message[i])) ++i;
      if (i == n) break;
      size_t j = i;
      while (j < n && !IsBlank(message[j])) ++j;
      const size_t start = masked.size();
      MaskToken(message.substr(i, j - i), &masked);
      out->push_back(InternToken(std::string_view(masked).substr(start)));
      i = j;
    }
  }

  static uint64_t Hash(std::string_view s) {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ s.size();
    size_t i = 0;
    for (; i + 8 <= s.size(); i += 8) {
      uint64_t w;
      std::memcpy(&w, s.data() + i, 8);
      h = (h ^ w) * 0xFF51AFD7ED558CCDull;
      h ^= h >> 29;
    }
    uint64_t w = 0;
    std::memcpy(&w, s.data() + i, s.size() - i);
    h = (h ^ w) * 0xC4CEB9FE1A85EC53ull;
    return h ^ (h >> 32);
  }

  StringId InternToken(std::string_view tok) {
    if (tok == kWildcard) return wildcard;  // the most frequent token by far
    if (slots.empty()) slots.assign(256, {0, kNone});
    const uint64_t h = Hash(tok);
    size_t mask = slots.size() - 1, k = h & mask;
    while (slots[k].id != kNone) {
      if (slots[k].hash == h && pool.Get(slots[k].id) == tok) return slots[k].id;
      k = (k + 1) & mask;
    }
    const StringId id = pool.Intern(tok);
    if (id >= name.size()) {
      name.resize(id + 1, 0);
      name[id] = IsName(tok);
    }
    slots[k] = {h, id};
    if (++slot_count * 2 > slots.size()) {
      // Grow: re-file every entry in a table twice the size.
      std::vector<Slot> old(slots.size() * 2, Slot{0, kNone});
      old.swap(slots);
      mask = slots.size() - 1;
      for (const Slot& e : old) {
        if (e.id == kNone) continue;
        size_t x = e.hash & mask;
        while (slots[x].id != kNone) x = (x + 1) & mask;
        slots[x] = e;
      }
    }
    return id;
  }

  TemplateId AddTokens(const std::vector<StringId>& t, uint64_t count) {
    TemplateId id = Lookup(t);
    if (id == kNoTemplate) {
      id = static_cast<TemplateId>(templates.size());
      Template tp;
      tp.tokens = t;
      for (StringId s : t) tp.wildcards += s == wildcard;
      templates.push_back(std::move(tp));
      Insert(id);
    } else {
      Template& tp = templates[id];
      for (size_t i = 0; i < t.size(); ++i) {
        if (tp.tokens[i] != t[i] && tp.tokens[i] != wildcard) {
          tp.tokens[i] = wildcard;
          ++tp.wildcards;
        }
      }
    }
    templates[id].count += count;
    return id;
  }
};

TemplateMiner::TemplateMiner(const MinerOptions& options) : s_(std::make_unique<State>(options)) {}
TemplateMiner::~TemplateMiner() = default;
TemplateMiner::TemplateMiner(TemplateMiner&&) noexcept = default;
TemplateMiner& TemplateMiner::operator=(TemplateMiner&&) noexcept = default;

TemplateId TemplateMiner::Add(std::string_view message) {
  s_->TokensOf(message, &s_->line);
  return s_->AddTokens(s_->line, 1);
}

TemplateId TemplateMiner::Match(std::string_view message) const {
  std::string masked;
  MaskMessage(message, &masked);
  std::vector<StringId> t;
  size_t i = 0;
  while (i < masked.size()) {
    size_t j = masked.find(' ', i);
    if (j == std::string::npos) j = masked.size();
    // A token never seen cannot equal a template's token: kNotFound (or kUnknownName)
    // routes it down the wildcard branch and compares unequal.
    const std::string_view tok = std::string_view(masked).substr(i, j - i);
    const StringId id = s_->pool.Find(tok);
    t.push_back(id != StringPool::kNotFound ? id : IsName(tok) ? kUnknownName : id);
    i = j + 1;
  }
  return s_->Lookup(t);
}

size_t TemplateMiner::size() const { return s_->templates.size(); }

std::string TemplateMiner::Text(TemplateId id) const {
  std::string out;
  for (StringId t : s_->templates[id].tokens) {
    if (!out.empty()) out.push_back(' ');
    out.append(s_->pool.Get(t));
  }
  return out;
}

uint64_t TemplateMiner::Count(TemplateId id) const { return s_->templates[id].count; }

const MinerOptions& TemplateMiner::options() const { return s_->options; }

std::string TemplateMiner::Serialize() const {
  std::string out(kFileMagic);
  char buf[128];
  std::snprintf(buf, sizeof(buf), " depth=%d similarity=%.17g max_children=%d\n", s_->options.depth,
                s_->options.similarity, s_->options.max_children);
  out += buf;
  for (TemplateId id = 0; id < s_->templates.size(); ++id) {
    out += std::to_string(id);
    out.push_back(' ');
    out += std::to_string(s_->templates[id].count);
    out.push_back(' ');
    out += Text(id);
    out.push_back('\n');
  }
  return out;
}

namespace {

// "name=value" of the header; false when the field is not that option.
bool OptionValue(std::string_view field, std::string_view name, std::string* value) {
  if (field.size() <= name.size() + 1 || field.substr(0, name.size()) != name ||
      field[name.size()] != '=') {
    return false;
  }
  *value = std::string(field.substr(name.size() + 1));
  return true;
}

bool ParseUnsigned(std::string_view s, uint64_t* v) {
  if (s.empty() || s.size() > 19) return false;
  uint64_t x = 0;
  for (char c : s) {
    if (!IsDigit(c)) return false;
    x = x * 10 + static_cast<uint64_t>(c - '0');
  }
  *v = x;
  return true;
}

}  // namespace

Result<TemplateMiner> TemplateMiner::Parse(std::string_view text, const std::string& source) {
  size_t pos = 0;
  uint32_t line_no = 0;
  auto next_line = [&](std::string_view* line) {
    if (pos >= text.size()) return false;
    size_t e = text.find('\n', pos);
    if (e == std::string_view::npos) e = text.size();
    *line = text.substr(pos, e - pos);
    if (!line->empty() && line->back() == '\r') line->remove_suffix(1);
    pos = e + 1;
    ++line_no;
    return true;
  };
  auto error = [&](const std::string& what) {
    return Status::Error(source + ":" + std::to_string(line_no) + ": " + what);
  };
  std::string_view line;
  if (!next_line(&line) || line.substr(0, kFileMagic.size()) != kFileMagic ||
      (line.size() > kFileMagic.size() && line[kFileMagic.size()] != ' ')) {
    if (line_no == 0) line_no = 1;
    return error("not a template file of this version (the first line must start with '" +
                 std::string(kFileMagic) + "')");
  }
  MinerOptions options;
  {
    std::istringstream fields(std::string(line.substr(kFileMagic.size())));
    std::string f, v;
    while (fields >> f) {
      char* end = nullptr;
      errno = 0;
      if (OptionValue(f, "depth", &v)) {
        options.depth = static_cast<int>(std::strtol(v.c_str(), &end, 10));
      } else if (OptionValue(f, "similarity", &v)) {
        options.similarity = std::strtod(v.c_str(), &end);
      } else if (OptionValue(f, "max_children", &v)) {
        options.max_children = static_cast<int>(std::strtol(v.c_str(), &end, 10));
      } else {
        return error("unknown field '" + f + "' (expected depth=, similarity=, max_children=)");
      }
      if (end == v.c_str() || *end != '\0' || errno != 0) {
        return error("bad value in '" + f + "'");
      }
    }
    if (Status st = ValidateOptions(options); !st.ok()) return error(st.message());
  }
  TemplateMiner miner(options);
  State& s = *miner.s_;
  std::string masked;
  std::vector<StringId> tokens;
  while (next_line(&line)) {
    // "<id> <count> <template>", the template possibly empty.
    const size_t a = line.find(' ');
    const size_t b = a == std::string_view::npos ? a : line.find(' ', a + 1);
    uint64_t id = 0, count = 0;
    if (a == std::string_view::npos || !ParseUnsigned(line.substr(0, a), &id) ||
        !ParseUnsigned(
            b == std::string_view::npos ? line.substr(a + 1) : line.substr(a + 1, b - a - 1),
            &count)) {
      return error("expected '<id> <count> <template>' (two decimal numbers, then the template)");
    }
    if (id != s.templates.size()) {
      return error("template id " + std::to_string(id) + " where " +
                   std::to_string(s.templates.size()) + " was expected (ids are 0, 1, 2, ... " +
                   "in order)");
    }
    // Masking again is a no-op on a saved template and makes a hand-written one
    // ("disk 3 failed") match the masked lines it is meant for.
    s.TokensOf(b == std::string_view::npos ? std::string_view() : line.substr(b + 1), &tokens);
    Template tp;
    tp.tokens = tokens;
    tp.count = count;
    for (StringId t : tokens) tp.wildcards += t == s.wildcard;
    s.templates.push_back(std::move(tp));
    s.Insert(static_cast<TemplateId>(id));
  }
  return miner;
}

Status TemplateMiner::Save(const std::string& path) const {
  return WriteFileAtomic(path, Serialize());
}

Result<TemplateMiner> TemplateMiner::Load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Status::Error("cannot open template file " + path + ": " + std::strerror(errno));
  }
  std::stringstream text;
  text << in.rdbuf();
  if (in.bad()) return Status::Error("cannot read template file " + path);
  return Parse(text.str(), path);
}

double GroupingAccuracy(const std::vector<uint32_t>& truth, const std::vector<uint32_t>& mined) {
  const size_t n = std::min(truth.size(), mined.size());
  if (n == 0) return 1.0;
  std::unordered_map<uint32_t, size_t> truth_size;
  for (size_t i = 0; i < n; ++i) ++truth_size[truth[i]];
  // A mined group is right as a whole, or wrong as a whole: right when all its lines have
  // one true label and that label has no other lines.
  struct Mined {
    uint32_t label = 0;
    size_t size = 0;
    bool one_label = true;
  };
  std::unordered_map<uint32_t, Mined> groups;
  for (size_t i = 0; i < n; ++i) {
    Mined& g = groups[mined[i]];
    if (g.size == 0) {
      g.label = truth[i];
    } else if (g.label != truth[i]) {
      g.one_label = false;
    }
    ++g.size;
  }
  size_t right = 0;
  for (const auto& [label, g] : groups) {
    if (g.one_label && truth_size[g.label] == g.size) right += g.size;
  }
  return static_cast<double>(right) / static_cast<double>(n);
}

}  // namespace teller::logs
