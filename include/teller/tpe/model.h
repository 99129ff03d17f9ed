// A trained TPE model: the vocabulary (special tokens, base symbols, merged tokens) and
// the ordered merges, with their files and the encoder (docs/method.md §5).
//
// Token ids: 0 [PAD], 1 [UNK], 2..12 the bare type tags ([STEP] ... [GANN], in TypeTag
// order: the token of a name the model has never seen), then the observed symbols in
// byte order of their text (so ids do not depend on file order), then merge r as
// base_size + r.
//
// Files in the model directory (docs/tpe.md):
//   vocab.json     {"format":"teller-tpe-vocab","version":1,"size","base_size","special",
//                   "tokens":[{"id","symbol","count"} | {"id","merge":[a,b],"nodes","count"}]}
//   merges.json    {"format":"teller-tpe-merges","version":1,"base_size","merges":[[a,b],...]}
//   metadata.json  vocabulary size, corpus description (data, settings, steps, symbols,
//                  tokens after), normalization version, teller TPE version
#ifndef TELLER_TPE_MODEL_H_
#define TELLER_TPE_MODEL_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "teller/core/status.h"
#include "teller/tpe/sequence.h"
#include "teller/tpe/symbols.h"

namespace teller::tpe {

inline constexpr TokenId kPadToken = 0;
inline constexpr TokenId kUnkToken = 1;
inline constexpr TokenId kFirstTagToken = 2;
inline constexpr uint32_t kNumSpecialTokens = 2 + kNumTypeTags;
// Version of the model files; Load() refuses other versions.
inline constexpr int kModelFormatVersion = 1;

// What metadata.json records besides the vocabulary itself.
struct ModelMetadata {
  uint32_t requested_vocab_size = 0;
  uint64_t min_frequency = 0;
  std::string data;                   // the --data argument
  std::vector<std::string> settings;  // settings read
  uint64_t steps = 0, distinct_steps = 0, symbols = 0, tokens = 0;
  std::string stop_reason;  // why fewer merges than requested, or empty
  double train_seconds = 0;
  // Occurrences in the training corpus per token id (base: symbol count; merge: the
  // pair's count when merged); empty or one per token.
  std::vector<uint64_t> token_count;
};

class Model {
 public:
  Model() = default;
  // `base` must start with the special tokens (as BaseAlphabet returns it); merges must
  // refer to earlier ids. Use Load() for untrusted input.
  Model(std::vector<std::string> base, std::vector<std::pair<TokenId, TokenId>> merges);

  // The base alphabet for a corpus: the special tokens, then the observed symbol texts,
  // deduplicated and sorted by bytes (a symbol equal to a bare tag is that tag's token).
  static std::vector<std::string> BaseAlphabet(const std::vector<std::string>& observed);
  static std::string_view SpecialText(TokenId id);

  uint32_t base_size() const { return static_cast<uint32_t>(base_.size()); }
  uint32_t size() const { return base_size() + static_cast<uint32_t>(merges_.size()); }
  const std::vector<std::string>& base_symbols() const { return base_; }
  const std::vector<std::pair<TokenId, TokenId>>& merges() const { return merges_; }
  // Base symbols a token covers (1 for base tokens).
  uint32_t TokenNodes(TokenId id) const { return nodes_[id]; }
  // The base symbols of a token, in order.
  std::vector<TokenId> Expand(TokenId id) const;

  // The token of a symbol text, or the bare tag token of `tag` when the text is unseen.
  TokenId SymbolId(std::string_view text, TypeTag tag) const;

  // Applies the merges to a serialized, unmerged sequence (Serialize's output): merges in
  // rank order, each left to right without overlap, exactly as in training. The side
  // channels follow the merge rule of sequence.h; spans are over `base`'s positions and
  // `node` is carried over unchanged. Linear-logarithmic in the sequence length.
  Sequence Encode(const Sequence& base) const;

  Status Save(const std::string& dir, const ModelMetadata& metadata) const;
  static Result<Model> Load(const std::string& dir);

 private:
  static uint64_t Key(TokenId a, TokenId b) { return (static_cast<uint64_t>(a) << 32) | b; }
  void Index();

  std::vector<std::string> base_;
  std::vector<std::pair<TokenId, TokenId>> merges_;
  std::vector<uint32_t> nodes_;
  std::unordered_map<uint64_t, uint32_t> rank_;  // pair key -> merge rank
  std::unordered_map<std::string, TokenId> symbol_id_;
};

}  // namespace teller::tpe

#endif  // TELLER_TPE_MODEL_H_
