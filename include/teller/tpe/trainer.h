// The TPE trainer (docs/method.md §5): byte-pair-encoding-style merges over symbol sequences.
//
// Start from the base alphabet (special tags plus observed symbols, ids [0, base_size)),
// then repeatedly merge the most frequent adjacent pair (a, b) into a new symbol
// base_size + r (r = merge rank) until the target vocabulary size is reached, or no pair
// occurs at least `min_frequency` times. Occurrences of the chosen pair are replaced in
// every sequence left to right, without overlap ("a a a" with (a, a) becomes "X a"),
// which is also how the encoder applies merges, so encoding the training data with the
// learned merges reproduces the trainer's final corpus.
//
// Ties: among pairs with the same count, the smallest (a, b) wins (a first, then b).
// Counting overlapping adjacent positions: "a a a" holds (a, a) twice.
//
// Algorithm (never rescans the corpus per merge): identical sequences are stored once
// with a weight; positions form a doubly linked list per sequence; every pair keeps its
// weighted count and the list of positions where it started (sorted, possibly stale:
// checked on use); a max-heap of (count, pair) holds a stale-or-exact entry per pair
// (counts of existing pairs only ever decrease, so an entry whose count still matches is
// the maximum). A merge visits only the positions of its pair and updates the counts of
// the four neighbouring pairs of each occurrence. Cost: O(corpus) to set up, then
// O(occurrences merged * log pairs) in total.
#ifndef TELLER_TPE_TRAINER_H_
#define TELLER_TPE_TRAINER_H_

#include <cstdint>
#include <functional>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "teller/core/status.h"
#include "teller/tpe/sequence.h"

namespace teller::tpe {

// Sequences of base symbols, concatenated: sequence k is symbols[offsets[k], offsets[k+1]).
struct SymbolCorpusView {
  std::span<const TokenId> symbols;
  std::span<const uint64_t> offsets;  // size = sequences + 1, offsets[0] == 0
};

struct TrainOptions {
  uint32_t vocab_size = 256;   // base alphabet + merges
  uint64_t min_frequency = 2;  // a pair seen fewer times is not merged
  // Progress lines, at most about one a second; may be empty.
  std::function<void(std::string_view)> progress;
};

struct TrainResult {
  uint32_t base_size = 0;
  std::vector<std::pair<TokenId, TokenId>> merges;  // merge r creates id base_size + r
  std::vector<uint64_t> merge_count;                // the pair's count when it was merged
  // tokens_after[k]: tokens in the corpus after the first k merges (k = 0..merges.size()),
  // so tokens_after[0] is the number of symbols. A prefix of the merges is what training
  // to a smaller vocabulary gives, so one run answers every smaller size.
  std::vector<uint64_t> tokens_after;
  uint64_t sequences = 0;
  uint64_t distinct_sequences = 0;
  // Why training stopped before vocab_size: empty when it reached it.
  std::string stop_reason;
};

// Errors: vocab_size below base_size (the message says the base size), symbols out of
// range, malformed offsets.
Result<TrainResult> TrainMerges(const SymbolCorpusView& corpus, uint32_t base_size,
                                const TrainOptions& options);

}  // namespace teller::tpe

#endif  // TELLER_TPE_TRAINER_H_
