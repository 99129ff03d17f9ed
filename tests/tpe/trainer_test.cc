// The incremental trainer against a naive reference that recounts every pair of the
// corpus before each merge, on small random corpora built to stress the hard cases (ties,
// overlapping runs "a a a", duplicated sequences, empty and one-symbol sequences).
#include "teller/tpe/trainer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <utility>
#include <vector>

namespace teller::tpe {
namespace {

using Merges = std::vector<std::pair<TokenId, TokenId>>;

struct Naive {
  Merges merges;
  std::vector<uint64_t> tokens_after;
  std::vector<std::vector<TokenId>> final_corpus;
};

// Straight from the definition: count all adjacent pairs, take the most frequent (ties:
// smallest a, then b), replace left to right without overlap, repeat.
Naive NaiveTrain(std::vector<std::vector<TokenId>> corpus, TokenId base, uint32_t vocab,
                 uint64_t min_frequency) {
  Naive out;
  auto total = [&] {
    uint64_t n = 0;
    for (const auto& s : corpus) n += s.size();
    return n;
  };
  out.tokens_after.push_back(total());
  while (base + out.merges.size() < vocab) {
    std::map<std::pair<TokenId, TokenId>, uint64_t> counts;
    for (const auto& s : corpus) {
      for (size_t i = 0; i + 1 < s.size(); ++i) ++counts[{s[i], s[i + 1]}];
    }
    std::pair<TokenId, TokenId> best{};
    uint64_t best_count = 0;
    for (const auto& [pair, count] : counts) {  // map order: (a, b) ascending
      if (count > best_count) {
        best = pair;
        best_count = count;
      }
    }
    if (best_count == 0 || best_count < min_frequency) break;
    const TokenId x = base + static_cast<TokenId>(out.merges.size());
    for (auto& s : corpus) {
      std::vector<TokenId> next;
      for (size_t i = 0; i < s.size();) {
        if (i + 1 < s.size() && s[i] == best.first && s[i + 1] == best.second) {
          next.push_back(x);
          i += 2;
        } else {
          next.push_back(s[i]);
          ++i;
        }
      }
      s = std::move(next);
    }
    out.merges.push_back(best);
    out.tokens_after.push_back(total());
  }
  out.final_corpus = std::move(corpus);
  return out;
}

struct Flat {
  std::vector<TokenId> symbols;
  std::vector<uint64_t> offsets{0};
  SymbolCorpusView View() const { return {symbols, offsets}; }
};

Flat Flatten(const std::vector<std::vector<TokenId>>& corpus) {
  Flat f;
  for (const auto& s : corpus) {
    f.symbols.insert(f.symbols.end(), s.begin(), s.end());
    f.offsets.push_back(f.symbols.size());
  }
  return f;
}

std::vector<std::vector<TokenId>> RandomCorpus(std::mt19937& rng, TokenId alphabet) {
  std::vector<std::vector<TokenId>> corpus;
  const int sequences = std::uniform_int_distribution<int>(1, 12)(rng);
  for (int k = 0; k < sequences; ++k) {
    if (!corpus.empty() && rng() % 4 == 0) {  // duplicates exercise the weights
      corpus.push_back(corpus[rng() % corpus.size()]);
      continue;
    }
    std::vector<TokenId> s;
    const int n = std::uniform_int_distribution<int>(0, 60)(rng);
    for (int i = 0; i < n; ++i) {
      if (!s.empty() && rng() % 3 == 0) {
        s.push_back(s.back());  // runs: a a a a
      } else {
        s.push_back(std::uniform_int_distribution<TokenId>(0, alphabet - 1)(rng));
      }
    }
    corpus.push_back(std::move(s));
  }
  return corpus;
}

TEST(TrainMerges, IncrementalCountsGiveTheNaiveMerges) {
  std::mt19937 rng(20261129);
  for (int trial = 0; trial < 400; ++trial) {
    const TokenId alphabet = 1 + trial % 6;
    const auto corpus = RandomCorpus(rng, alphabet);
    const uint32_t vocab = alphabet + 1 + trial % 40;
    const uint64_t min_frequency = 1 + trial % 3;
    const Naive want = NaiveTrain(corpus, alphabet, vocab, min_frequency);
    const Flat flat = Flatten(corpus);
    TrainOptions options;
    options.vocab_size = vocab;
    options.min_frequency = min_frequency;
    Result<TrainResult> got = TrainMerges(flat.View(), alphabet, options);
    ASSERT_TRUE(got.ok()) << got.status().message();
    ASSERT_EQ(got->merges, want.merges) << "trial " << trial;
    ASSERT_EQ(got->tokens_after, want.tokens_after) << "trial " << trial;
    EXPECT_EQ(got->stop_reason.empty(), alphabet + want.merges.size() == vocab)
        << "trial " << trial;
  }
}

TEST(TrainMerges, TiesGoToTheSmallestPair) {
  // (2,3), (0,1) and (1,0)... each occur twice; (0,1) is the smallest.
  const Flat flat = Flatten({{2, 3, 0, 1}, {2, 3, 0, 1}});
  TrainOptions options;
  options.vocab_size = 5;
  Result<TrainResult> r = TrainMerges(flat.View(), 4, options);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->merges, (Merges{{0, 1}}));
}

TEST(TrainMerges, OverlappingRunsMergeLeftToRight) {
  const Flat flat = Flatten({{7, 7, 7, 7, 7}});
  TrainOptions options;
  options.vocab_size = 10;
  options.min_frequency = 1;
  Result<TrainResult> r = TrainMerges(flat.View(), 8, options);
  ASSERT_TRUE(r.ok());
  // 7 7 7 7 7 -> X X 7 (X = 8); then (8, 8) and (8, 7) tie at one each and (8, 7) is the
  // smaller pair: X Y (Y = 9).
  EXPECT_EQ(r->merges, (Merges{{7, 7}, {8, 7}}));
  EXPECT_EQ(r->tokens_after, (std::vector<uint64_t>{5, 3, 2}));
}

TEST(TrainMerges, IsDeterministicAndIndependentOfSequenceOrder) {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 50; ++trial) {
    auto corpus = RandomCorpus(rng, 4);
    TrainOptions options;
    options.vocab_size = 30;
    const Flat a = Flatten(corpus);
    Result<TrainResult> first = TrainMerges(a.View(), 4, options);
    Result<TrainResult> again = TrainMerges(a.View(), 4, options);
    std::shuffle(corpus.begin(), corpus.end(), rng);
    const Flat b = Flatten(corpus);
    Result<TrainResult> shuffled = TrainMerges(b.View(), 4, options);
    ASSERT_TRUE(first.ok() && again.ok() && shuffled.ok());
    ASSERT_EQ(first->merges, again->merges);
    ASSERT_EQ(first->merge_count, again->merge_count);
    ASSERT_EQ(first->merges, shuffled->merges) << "trial " << trial;
    ASSERT_EQ(first->tokens_after, shuffled->tokens_after) << "trial " << trial;
  }
}

TEST(TrainMerges, CountsDistinctSequences) {
  const Flat flat = Flatten({{1, 2}, {1, 2}, {2, 1}, {}, {1, 2}});
  TrainOptions options;
  options.vocab_size = 3;
  Result<TrainResult> r = TrainMerges(flat.View(), 3, options);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->sequences, 5u);
  EXPECT_EQ(r->distinct_sequences, 3u);
}

TEST(TrainMerges, Errors) {
  const Flat flat = Flatten({{0, 1, 2}});
  TrainOptions options;
  options.vocab_size = 2;
  Result<TrainResult> small = TrainMerges(flat.View(), 3, options);
  ASSERT_FALSE(small.ok());
  EXPECT_NE(small.status().message().find("smaller than the base alphabet (3 symbols)"),
            std::string::npos)
      << small.status().message();
  options.vocab_size = 10;
  Result<TrainResult> outside = TrainMerges(flat.View(), 2, options);
  ASSERT_FALSE(outside.ok());
  EXPECT_NE(outside.status().message().find("outside the base alphabet"), std::string::npos);
  std::vector<uint64_t> bad_offsets{0, 5};
  EXPECT_FALSE(TrainMerges(SymbolCorpusView{flat.symbols, bad_offsets}, 3, options).ok());
}

TEST(TrainMerges, StopsWhenNoPairIsFrequentEnough) {
  const Flat flat = Flatten({{0, 1, 2, 3}});
  TrainOptions options;
  options.vocab_size = 100;
  Result<TrainResult> r = TrainMerges(flat.View(), 4, options);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->merges.empty());
  EXPECT_NE(r->stop_reason.find("below the minimum frequency 2"), std::string::npos)
      << r->stop_reason;
}

}  // namespace
}  // namespace teller::tpe
