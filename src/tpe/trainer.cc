// The incremental TPE trainer (include/teller/tpe/trainer.h has the algorithm).
//
// Invariants the merge loop relies on:
//  - Every adjacent pair of live positions (i, next[i]) is counted, with the weight of its
//    sequence, in pairs_[index of (sym[i], sym[next[i]])].count, and i is in that pair's
//    position list (lists may also hold stale positions; they are checked on use).
//  - A pair that exists when merge r starts only loses occurrences from then on; all pairs
//    that gain occurrences during merge r contain the new symbol X_r, so they are created
//    during merge r and their position lists are filled in increasing position order.
//    Hence every list is sorted, and visiting it in order replaces occurrences left to
//    right, as the encoder does.
//  - The heap holds, for every pair with a positive count, at least one entry whose count
//    is >= the pair's count. An entry whose count equals its pair's count is therefore the
//    true maximum (ties broken by the entry order), and stale entries are refreshed when
//    they surface.
#include "teller/tpe/trainer.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstring>
#include <string>
#include <unordered_map>

namespace teller::tpe {
namespace {

constexpr uint32_t kNil = UINT32_MAX;
constexpr TokenId kDead = UINT32_MAX;

uint64_t PairKey(TokenId a, TokenId b) { return (static_cast<uint64_t>(a) << 32) | b; }

// Open-addressing map from a pair key to its index in pairs_; linear probing, power-of-two
// capacity, at most half full. Keys are never removed (a merged pair keeps count 0).
class PairIndex {
 public:
  PairIndex() { Rehash(1024); }

  // The index stored for `key`, or kNil.
  uint32_t Find(uint64_t key) const {
    for (size_t s = Slot(key);; s = (s + 1) & mask_) {
      if (values_[s] == kNil) return kNil;
      if (keys_[s] == key) return values_[s];
    }
  }
  // The index for `key`; when absent, stores `value_if_new` and sets *inserted.
  uint32_t FindOrInsert(uint64_t key, uint32_t value_if_new, bool* inserted) {
    size_t s = Slot(key);
    for (;; s = (s + 1) & mask_) {
      if (values_[s] == kNil) break;
      if (keys_[s] == key) {
        *inserted = false;
        return values_[s];
      }
    }
    *inserted = true;
    keys_[s] = key;
    values_[s] = value_if_new;
    if (++size_ * 2 > keys_.size()) Rehash(keys_.size() * 2);
    return value_if_new;
  }

 private:
  size_t Slot(uint64_t key) const {
    return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> shift_);
  }
  void Rehash(size_t capacity) {
    std::vector<uint64_t> old_keys = std::move(keys_);
    std::vector<uint32_t> old_values = std::move(values_);
    keys_.assign(capacity, 0);
    values_.assign(capacity, kNil);
    mask_ = capacity - 1;
    shift_ = 64 - std::countr_zero(capacity);
    for (size_t s = 0; s < old_keys.size(); ++s) {
      if (old_values[s] == kNil) continue;
      size_t t = Slot(old_keys[s]);
      while (values_[t] != kNil) t = (t + 1) & mask_;
      keys_[t] = old_keys[s];
      values_[t] = old_values[s];
    }
  }

  std::vector<uint64_t> keys_;
  std::vector<uint32_t> values_;
  size_t mask_ = 0;
  int shift_ = 0;
  size_t size_ = 0;
};

struct Pair {
  TokenId a, b;
  int64_t count = 0;
  std::vector<uint32_t> positions;
};

struct HeapEntry {
  int64_t count;
  TokenId a, b;
  uint32_t pair;
};

// std::push_heap keeps the largest on top: higher count first, then smaller (a, b).
bool HeapLess(const HeapEntry& x, const HeapEntry& y) {
  if (x.count != y.count) return x.count < y.count;
  if (x.a != y.a) return x.a > y.a;
  return x.b > y.b;
}

uint64_t HashSequence(std::span<const TokenId> s) {
  uint64_t h = 0xcbf29ce484222325ull ^ s.size();
  for (TokenId t : s) h = (h ^ t) * 0x100000001b3ull;
  return h;
}

class Trainer {
 public:
  Trainer(uint32_t base_size, const TrainOptions& options)
      : base_size_(base_size), options_(options) {}

  Result<TrainResult> Run(const SymbolCorpusView& corpus);

 private:
  void Load(const SymbolCorpusView& corpus);
  void CountInitialPairs();
  uint64_t Weight(uint32_t pos) const { return weight_.empty() ? 1 : weight_[pos]; }
  void Decrement(TokenId a, TokenId b, uint64_t w) {
    const uint32_t p = index_.Find(PairKey(a, b));
    pairs_[p].count -= static_cast<int64_t>(w);
  }
  void Increment(TokenId a, TokenId b, uint64_t w, uint32_t pos) {
    bool inserted = false;
    const uint32_t p =
        index_.FindOrInsert(PairKey(a, b), static_cast<uint32_t>(pairs_.size()), &inserted);
    if (inserted) {
      pairs_.push_back(Pair{a, b, 0, {}});
      fresh_.push_back(p);
    }
    pairs_[p].count += static_cast<int64_t>(w);
    pairs_[p].positions.push_back(pos);
  }
  void Push(uint32_t p) {
    heap_.push_back(HeapEntry{pairs_[p].count, pairs_[p].a, pairs_[p].b, p});
    std::push_heap(heap_.begin(), heap_.end(), HeapLess);
  }
  // Replaces every occurrence of pairs_[p] by `x`; returns the weighted number replaced.
  uint64_t Merge(uint32_t p, TokenId x);

  const uint32_t base_size_;
  const TrainOptions& options_;
  std::vector<TokenId> sym_;  // per position; kDead once merged into its left neighbour
  std::vector<uint32_t> next_, prev_;
  std::vector<uint32_t> weight_;  // per position; empty when every sequence is distinct
  std::vector<Pair> pairs_;
  PairIndex index_;
  std::vector<HeapEntry> heap_;
  std::vector<uint32_t> fresh_;  // pairs created by the current merge
  TrainResult result_;
};

// Stores every distinct sequence once, with its multiplicity as weight, in first-seen
// order (so positions, and with them tie-free behaviour, do not depend on hashing).
void Trainer::Load(const SymbolCorpusView& corpus) {
  const size_t sequences = corpus.offsets.size() - 1;
  std::unordered_map<uint64_t, std::vector<uint32_t>> by_hash;  // hash -> unique indices
  std::vector<std::span<const TokenId>> unique;
  std::vector<uint64_t> multiplicity;
  by_hash.reserve(sequences);
  for (size_t k = 0; k < sequences; ++k) {
    const auto s =
        corpus.symbols.subspan(corpus.offsets[k], corpus.offsets[k + 1] - corpus.offsets[k]);
    auto& bucket = by_hash[HashSequence(s)];
    bool found = false;
    for (uint32_t u : bucket) {
      // An empty sequence may have no storage at all: memcmp must not see its null pointer.
      if (unique[u].size() == s.size() &&
          (s.empty() || std::memcmp(unique[u].data(), s.data(), s.size() * sizeof(TokenId)) == 0)) {
        ++multiplicity[u];
        found = true;
        break;
      }
    }
    if (!found) {
      bucket.push_back(static_cast<uint32_t>(unique.size()));
      unique.push_back(s);
      multiplicity.push_back(1);
    }
  }
  result_.sequences = sequences;
  result_.distinct_sequences = unique.size();

  size_t n = 0;
  bool weighted = false;
  for (size_t u = 0; u < unique.size(); ++u) {
    n += unique[u].size();
    weighted = weighted || multiplicity[u] > 1;
  }
  sym_.resize(n);
  next_.resize(n);
  prev_.resize(n);
  if (weighted) weight_.resize(n);
  size_t at = 0;
  for (size_t u = 0; u < unique.size(); ++u) {
    const auto s = unique[u];
    // An empty sequence may have no storage (data() null), which memcpy must not get.
    if (!s.empty()) std::memcpy(sym_.data() + at, s.data(), s.size() * sizeof(TokenId));
    for (size_t i = 0; i < s.size(); ++i) {
      const size_t pos = at + i;
      prev_[pos] = i == 0 ? kNil : static_cast<uint32_t>(pos - 1);
      next_[pos] = i + 1 == s.size() ? kNil : static_cast<uint32_t>(pos + 1);
      if (weighted) weight_[pos] = static_cast<uint32_t>(multiplicity[u]);
    }
    at += s.size();
  }
}

void Trainer::CountInitialPairs() {
  // Two passes: the first finds each position's pair and the list sizes, so that the
  // second fills lists reserved to their exact size (no regrowth of ~n entries).
  const size_t n = sym_.size();
  std::vector<uint32_t> pair_of(n, kNil);
  std::vector<uint32_t> occurrences;
  for (size_t i = 0; i < n; ++i) {
    if (next_[i] == kNil) continue;
    bool inserted = false;
    const uint32_t p = index_.FindOrInsert(PairKey(sym_[i], sym_[i + 1]),
                                           static_cast<uint32_t>(pairs_.size()), &inserted);
    if (inserted) {
      pairs_.push_back(Pair{sym_[i], sym_[i + 1], 0, {}});
      occurrences.push_back(0);
    }
    pairs_[p].count += static_cast<int64_t>(Weight(static_cast<uint32_t>(i)));
    ++occurrences[p];
    pair_of[i] = p;
  }
  for (size_t p = 0; p < pairs_.size(); ++p) pairs_[p].positions.reserve(occurrences[p]);
  for (size_t i = 0; i < n; ++i) {
    if (pair_of[i] != kNil) pairs_[pair_of[i]].positions.push_back(static_cast<uint32_t>(i));
  }
  heap_.reserve(pairs_.size() * 2);
  for (uint32_t p = 0; p < pairs_.size(); ++p)
    heap_.push_back(HeapEntry{pairs_[p].count, pairs_[p].a, pairs_[p].b, p});
  std::make_heap(heap_.begin(), heap_.end(), HeapLess);
}

uint64_t Trainer::Merge(uint32_t p, TokenId x) {
  const TokenId a = pairs_[p].a, b = pairs_[p].b;
  std::vector<uint32_t> positions = std::move(pairs_[p].positions);
  pairs_[p].positions = {};
  fresh_.clear();
  uint64_t merged = 0;
  for (uint32_t i : positions) {
    // Stale entries: the position was merged away, rewritten, or its neighbour changed.
    if (sym_[i] != a) continue;
    const uint32_t j = next_[i];
    if (j == kNil || sym_[j] != b) continue;
    const uint64_t w = Weight(i);
    const uint32_t left = prev_[i], right = next_[j];
    // The occurrence itself and the two pairs it breaks. The left pair may already hold X
    // (an occurrence merged just before); the right one may be (a, b) itself (a == b).
    pairs_[p].count -= static_cast<int64_t>(w);
    if (left != kNil) Decrement(sym_[left], a, w);
    if (right != kNil) Decrement(b, sym_[right], w);
    sym_[i] = x;
    sym_[j] = kDead;
    next_[i] = right;
    if (right != kNil) prev_[right] = i;
    if (left != kNil) Increment(sym_[left], x, w, left);
    if (right != kNil) Increment(x, sym_[right], w, i);
    merged += w;
  }
  for (uint32_t q : fresh_) {
    if (pairs_[q].count > 0) Push(q);
  }
  return merged;
}

Result<TrainResult> Trainer::Run(const SymbolCorpusView& corpus) {
  Load(corpus);
  if (sym_.size() >= kNil) return Status::Error("corpus too large: over 4 G symbols");
  CountInitialPairs();
  result_.base_size = base_size_;
  uint64_t tokens = 0;
  for (size_t i = 0; i < sym_.size(); ++i) tokens += Weight(static_cast<uint32_t>(i));
  result_.tokens_after.push_back(tokens);

  using Clock = std::chrono::steady_clock;
  auto last_progress = Clock::now();
  const uint32_t target_merges = options_.vocab_size - base_size_;
  result_.merges.reserve(target_merges);
  while (result_.merges.size() < target_merges) {
    // The best pair: refresh stale heap entries until the top one is exact.
    while (!heap_.empty()) {
      const HeapEntry top = heap_.front();
      const int64_t now = pairs_[top.pair].count;
      if (now == top.count) break;
      std::pop_heap(heap_.begin(), heap_.end(), HeapLess);
      heap_.pop_back();
      if (now > 0) Push(top.pair);
    }
    if (heap_.empty() || heap_.front().count <= 0) {
      result_.stop_reason = "no adjacent pairs left";
      break;
    }
    const HeapEntry best = heap_.front();
    if (static_cast<uint64_t>(best.count) < options_.min_frequency) {
      result_.stop_reason = "the most frequent pair occurs " + std::to_string(best.count) +
                            " time(s), below the minimum frequency " +
                            std::to_string(options_.min_frequency);
      break;
    }
    std::pop_heap(heap_.begin(), heap_.end(), HeapLess);
    heap_.pop_back();
    const TokenId x = base_size_ + static_cast<TokenId>(result_.merges.size());
    result_.merges.emplace_back(best.a, best.b);
    result_.merge_count.push_back(static_cast<uint64_t>(best.count));
    tokens -= Merge(best.pair, x);
    result_.tokens_after.push_back(tokens);

    if (options_.progress && (result_.merges.size() & 63) == 0) {
      const auto now = Clock::now();
      if (now - last_progress >= std::chrono::seconds(1)) {
        last_progress = now;
        options_.progress("merge " + std::to_string(result_.merges.size()) + "/" +
                          std::to_string(target_merges) + ", " + std::to_string(tokens) +
                          " tokens");
      }
    }
  }
  return std::move(result_);
}

}  // namespace

Result<TrainResult> TrainMerges(const SymbolCorpusView& corpus, uint32_t base_size,
                                const TrainOptions& options) {
  if (corpus.offsets.empty() || corpus.offsets.front() != 0 ||
      corpus.offsets.back() != corpus.symbols.size()) {
    return Status::Error("malformed corpus offsets");
  }
  for (size_t k = 1; k < corpus.offsets.size(); ++k) {
    if (corpus.offsets[k] < corpus.offsets[k - 1]) return Status::Error("malformed corpus offsets");
  }
  for (TokenId t : corpus.symbols) {
    if (t >= base_size) {
      return Status::Error("symbol " + std::to_string(t) + " is outside the base alphabet of " +
                           std::to_string(base_size) + " symbols");
    }
  }
  if (options.vocab_size < base_size) {
    return Status::Error("vocabulary size " + std::to_string(options.vocab_size) +
                         " is smaller than the base alphabet (" + std::to_string(base_size) +
                         " symbols); use at least " + std::to_string(base_size));
  }
  if (base_size >= kDead - options.vocab_size) return Status::Error("vocabulary too large");
  return Trainer(base_size, options).Run(corpus);
}

}  // namespace teller::tpe
