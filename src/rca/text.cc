// The MoT's word tokenizer (src/rca/text.h).
#include "src/rca/text.h"

#include <algorithm>
#include <map>

#include "simdjson.h"
#include "teller/core/json_reader.h"
#include "teller/core/json_writer.h"

namespace teller::rca::internal {
namespace {

bool Space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

// Calls `f` on every whitespace-separated word of `text` (the split of eval's BLEU).
template <typename F>
void ForEachWord(std::string_view text, F&& f) {
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && Space(text[i])) ++i;
    const size_t b = i;
    while (i < text.size() && !Space(text[i])) ++i;
    if (i > b) f(text.substr(b, i - b));
  }
}

int Severity(std::string_view line) {
  std::string_view first;
  ForEachWord(line, [&](std::string_view w) {
    if (first.empty()) first = w;
  });
  if (first == "CRITICAL") return 3;
  if (first == "ERROR") return 2;
  if (first == "WARNING") return 1;
  return 0;
}

}  // namespace

void TextVocabulary::Index() {
  ids_.clear();
  for (size_t i = 0; i < words_.size(); ++i)
    ids_.emplace(words_[i], static_cast<int64_t>(i) + kSpecials);
}

TextVocabulary TextVocabulary::Train(const std::vector<std::string_view>& texts, uint32_t size) {
  std::map<std::string_view, uint64_t> count;
  for (std::string_view t : texts) ForEachWord(t, [&](std::string_view w) { ++count[w]; });
  std::vector<std::pair<uint64_t, std::string_view>> ranked;
  for (const auto& [w, n] : count) {
    if (n >= 2) ranked.emplace_back(n, w);
  }
  // More frequent first; equal counts in byte order (the map's order, kept by stable_sort).
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  const size_t room = size > kSpecials ? size - kSpecials : 0;
  if (ranked.size() > room) ranked.resize(room);
  TextVocabulary v;
  for (const auto& [n, w] : ranked) v.words_.emplace_back(w);
  v.Index();
  return v;
}

std::vector<int64_t> TextVocabulary::Words(std::string_view text) const {
  std::vector<int64_t> out;
  ForEachWord(text, [&](std::string_view w) {
    const auto it = ids_.find(std::string(w));
    out.push_back(it == ids_.end() ? kUnk : it->second);
  });
  return out;
}

std::string TextVocabulary::Join(const std::vector<int64_t>& ids) const {
  std::string out;
  for (int64_t id : ids) {
    if (id < kSpecials || id >= static_cast<int64_t>(size())) continue;
    if (!out.empty()) out += ' ';
    out += words_[static_cast<size_t>(id - kSpecials)];
  }
  return out;
}

std::string TextVocabulary::Serialize() const {
  std::string out;
  JsonObjectWriter w(out);
  w.Field("format", "teller-rca-text").Field("version", 1);
  w.Key("words");
  JsonArrayWriter a(out);
  for (const std::string& word : words_) a.Element(word);
  a.Close();
  w.Close();
  out += '\n';
  return out;
}

Result<TextVocabulary> TextVocabulary::Parse(std::string_view json, const std::string& source) {
  const simdjson::padded_string text(json);
  simdjson::ondemand::parser parser;
  simdjson::ondemand::document doc;
  if (const auto e = parser.iterate(text).get(doc)) {
    return Status::Error(source + ": not JSON (" + simdjson::error_message(e) + ")");
  }
  JsonContext ctx(source, json, doc);
  std::string format;
  TELLER_RETURN_IF_ERROR(ctx.Field(doc, "format", &format));
  if (format != "teller-rca-text") {
    return Status::Error(source + ": format \"" + format + "\", expected \"teller-rca-text\"");
  }
  int64_t version = 0;
  TELLER_RETURN_IF_ERROR(ctx.Field(doc, "version", &version));
  if (version != 1) {
    return Status::Error(source + ": text vocabulary version " + std::to_string(version) +
                         "; this Teller reads version 1");
  }
  simdjson::ondemand::array words;
  TELLER_RETURN_IF_ERROR(ctx.Field(doc, "words", &words));
  TextVocabulary v;
  for (auto item : words) {
    std::string_view w;
    if (item.get_string().get(w) || w.empty())
      return ctx.Error("\"words\": expected non-empty strings");
    bool blank = false;
    for (char c : w) blank |= Space(c);
    if (blank) return ctx.Error("\"words\": a word holds whitespace");
    v.words_.emplace_back(w);
  }
  v.Index();
  if (v.ids_.size() != v.words_.size()) return ctx.Error("\"words\": a word appears twice");
  return v;
}

std::vector<int64_t> LogTokens(const TextVocabulary& vocab, const std::vector<std::string>& lines,
                               int max) {
  std::vector<std::vector<int64_t>> words;
  size_t total = 0;
  for (const std::string& line : lines) {
    words.push_back(vocab.Words(line));
    words.back().push_back(TextVocabulary::kLine);
    total += words.back().size();
  }
  const auto budget = static_cast<size_t>(std::max(0, max));
  std::vector<uint8_t> keep(lines.size(), 1);
  if (total > budget) {
    std::vector<size_t> order(lines.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return Severity(lines[a]) > Severity(lines[b]); });
    std::fill(keep.begin(), keep.end(), 0);
    size_t used = 0;
    for (size_t i : order) {
      if (used + words[i].size() > budget) continue;
      keep[i] = 1;
      used += words[i].size();
    }
  }
  std::vector<int64_t> out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (keep[i]) out.insert(out.end(), words[i].begin(), words[i].end());
  }
  return out;
}

}  // namespace teller::rca::internal
