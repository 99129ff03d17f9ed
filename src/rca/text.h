// The MoT's text tokenizer (docs/rca.md, "Text"): whitespace-separated words, a vocabulary
// of the most frequent words of the training logs and explanations, five special tokens.
// Words are what BLEU counts (eval/metrics.h tokenizes on whitespace), so a generated word
// is either right or wrong as a whole; the log lines are template text (numbers and ids
// already wildcards), so a word vocabulary covers them with few unknowns. Torch-free.
// Private to src/rca.
#ifndef TELLER_SRC_RCA_TEXT_H_
#define TELLER_SRC_RCA_TEXT_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "teller/core/status.h"

namespace teller::rca::internal {

class TextVocabulary {
 public:
  static constexpr int64_t kPad = 0;   // padding (never a target)
  static constexpr int64_t kUnk = 1;   // a word outside the vocabulary
  static constexpr int64_t kBos = 2;   // starts the explanation
  static constexpr int64_t kEos = 3;   // ends it
  static constexpr int64_t kLine = 4;  // ends a log line
  static constexpr int64_t kSpecials = 5;

  // The `size` - kSpecials most frequent words of `texts` that occur at least twice (a word
  // seen once, such as a measured number, would teach the model to guess numbers); ties by
  // byte order, so the vocabulary depends on the texts only. `size` >= kSpecials.
  static TextVocabulary Train(const std::vector<std::string_view>& texts, uint32_t size);

  // Word ids of `text` (unknown words: kUnk).
  std::vector<int64_t> Words(std::string_view text) const;
  // Ids back to text: words joined by one space; special tokens and kUnk are left out.
  std::string Join(const std::vector<int64_t>& ids) const;
  size_t size() const { return words_.size() + kSpecials; }

  // {"format":"teller-rca-text","version":1,"words":[..]} (ids from kSpecials in order).
  std::string Serialize() const;
  // The inverse; errors name `source`.
  static Result<TextVocabulary> Parse(std::string_view json, const std::string& source);

 private:
  void Index();
  std::vector<std::string> words_;  // id - kSpecials -> word
  std::unordered_map<std::string, int64_t> ids_;
};

// A unit's log stream: the words of each line followed by kLine, at most `max` tokens.
// When the lines do not fit, whole lines are kept by severity (the level, the first word:
// CRITICAL, ERROR, WARNING, then the rest), earlier first within a level, and written in
// their original order: one warning says more than the hundredth routine line.
std::vector<int64_t> LogTokens(const TextVocabulary& vocab, const std::vector<std::string>& lines,
                               int max);

}  // namespace teller::rca::internal

#endif  // TELLER_SRC_RCA_TEXT_H_
