// The merge rule of docs/method.md §5 on hand-made trees (side channels, parent remapping,
// spans), serialization, and the fast encoder against the literal rule.
#include "teller/tpe/sequence.h"

#include <gtest/gtest.h>

#include <random>
#include <utility>
#include <vector>

#include "teller/tpe/model.h"

namespace teller::tpe {
namespace {

using Span = std::pair<uint32_t, uint32_t>;

// A base sequence from columns (spans and node map the identity).
Sequence Make(std::vector<TokenId> ids, std::vector<int32_t> parent, std::vector<int64_t> duration,
              std::vector<uint16_t> depth) {
  Sequence s;
  s.ids = std::move(ids);
  s.parent = std::move(parent);
  s.duration = std::move(duration);
  s.depth = std::move(depth);
  for (uint32_t i = 0; i < s.ids.size(); ++i) {
    s.span.emplace_back(i, i);
    s.node.push_back(i);
  }
  return s;
}

// STEP(0) > A(1) > {B(2), C(3)};  STEP > A(4) > B(5);  STEP > D(6)
//   ids:      9  1  2  3  1  2  4
//   parent:  -1  0  1  1  0  4  0
//   duration:100 10 5  3  20 6  7
//   depth:    0  1  2  2  1  2  1
Sequence Tree() {
  return Make({9, 1, 2, 3, 1, 2, 4}, {-1, 0, 1, 1, 0, 4, 0}, {100, 10, 5, 3, 20, 6, 7},
              {0, 1, 2, 2, 1, 2, 1});
}

TEST(ApplyMergeAt, ParentAndChildBecomeOneToken) {
  Sequence s = Tree();
  ApplyMergeAt(s, 1, 50);  // (A, B) at positions 1, 2
  EXPECT_EQ(s.ids, (std::vector<TokenId>{9, 50, 3, 1, 2, 4}));
  // P_i stays (A's parent 0); C pointed to 1 and still does; later indices shift down.
  EXPECT_EQ(s.parent, (std::vector<int32_t>{-1, 0, 1, 0, 3, 0}));
  EXPECT_EQ(s.duration, (std::vector<int64_t>{100, 15, 3, 20, 6, 7}));
  EXPECT_EQ(s.depth, (std::vector<uint16_t>{0, 1, 2, 1, 2, 1}));  // H_i stays (A's depth)
  EXPECT_EQ(s.span, (std::vector<Span>{{0, 0}, {1, 2}, {3, 3}, {4, 4}, {5, 5}, {6, 6}}));
}

TEST(ApplyMergeAt, PointersIntoTheDeletedPositionMoveToTheMergedOne) {
  Sequence s = Tree();
  ApplyMergeAt(s, 3, 51);  // (C, A) at 3, 4: siblings under different parents
  EXPECT_EQ(s.ids, (std::vector<TokenId>{9, 1, 2, 51, 2, 4}));
  // C's parent (1) stays; B(5) pointed to 4 (deleted) and now points to 3; D shifts.
  EXPECT_EQ(s.parent, (std::vector<int32_t>{-1, 0, 1, 1, 3, 0}));
  EXPECT_EQ(s.duration, (std::vector<int64_t>{100, 10, 5, 23, 6, 7}));
  EXPECT_EQ(s.depth, (std::vector<uint16_t>{0, 1, 2, 2, 2, 1}));
  EXPECT_EQ(s.span, (std::vector<Span>{{0, 0}, {1, 1}, {2, 2}, {3, 4}, {5, 5}, {6, 6}}));
}

TEST(ApplyMergeAt, RootWithItsFirstChildAndThenEverything) {
  Sequence s = Tree();
  ApplyMergeAt(s, 0, 60);  // (STEP, A): every child of A now hangs on the root token
  EXPECT_EQ(s.parent, (std::vector<int32_t>{-1, 0, 0, 0, 3, 0}));
  EXPECT_EQ(s.duration[0], 110);
  EXPECT_EQ(s.depth[0], 0);
  // Merge the rest pairwise from the left until one token remains.
  for (TokenId x = 61; s.size() > 1; ++x) ApplyMergeAt(s, 0, x);
  EXPECT_EQ(s.ids, (std::vector<TokenId>{65}));
  EXPECT_EQ(s.parent, (std::vector<int32_t>{-1}));
  EXPECT_EQ(s.duration, (std::vector<int64_t>{151}));
  EXPECT_EQ(s.span, (std::vector<Span>{{0, 6}}));
}

TEST(ApplyMergeAt, LastPairAndMultipleRoots) {
  // Two roots (two ranks' STEP subtrees): R(0) > X(1); R(2) > X(3) > Y(4).
  Sequence s = Make({1, 2, 1, 2, 3}, {-1, 0, -1, 2, 3}, {5, 1, 6, 2, 1}, {0, 1, 0, 1, 2});
  ApplyMergeAt(s, 3, 9);  // (X, Y) at the end: Y pointed to 3, which is the merged token
  EXPECT_EQ(s.parent, (std::vector<int32_t>{-1, 0, -1, 2}));
  EXPECT_EQ(s.duration, (std::vector<int64_t>{5, 1, 6, 3}));
  ApplyMergeAt(s, 1, 8);  // (X, R) across the two trees: P_i stays 0, the root is absorbed
  EXPECT_EQ(s.ids, (std::vector<TokenId>{1, 8, 9}));
  EXPECT_EQ(s.parent, (std::vector<int32_t>{-1, 0, 1}));  // the second tree now hangs on 1
  EXPECT_EQ(s.span, (std::vector<Span>{{0, 0}, {1, 2}, {3, 4}}));
}

TEST(Serialize, DepthFirstInputIsKeptAsIs) {
  const Sequence t = Tree();
  Result<Sequence> s = Serialize(TreeView{t.ids, t.parent, t.duration, t.depth});
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->ids, t.ids);
  EXPECT_EQ(s->parent, t.parent);
  EXPECT_EQ(s->node, t.node);
  EXPECT_TRUE(IsDepthFirstOrder(t.parent));
}

TEST(Serialize, OtherOrdersAreTraversedDepthFirst) {
  // Stored breadth-first: R(0); A(1), D(2) under R; B(3), C(4) under A.
  const std::vector<TokenId> ids{9, 1, 4, 2, 3};
  const std::vector<int32_t> parent{-1, 0, 0, 1, 1};
  const std::vector<int64_t> duration{100, 10, 7, 5, 3};
  const std::vector<uint16_t> depth{0, 1, 1, 2, 2};
  EXPECT_FALSE(IsDepthFirstOrder(parent));
  Result<Sequence> s = Serialize(TreeView{ids, parent, duration, depth});
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->ids, (std::vector<TokenId>{9, 1, 2, 3, 4}));
  EXPECT_EQ(s->parent, (std::vector<int32_t>{-1, 0, 1, 1, 0}));
  EXPECT_EQ(s->duration, (std::vector<int64_t>{100, 10, 5, 3, 7}));
  EXPECT_EQ(s->node, (std::vector<uint32_t>{0, 1, 3, 4, 2}));
  EXPECT_TRUE(IsDepthFirstOrder(s->parent));
}

TEST(Serialize, ASliceHangsOnItsNearestKeptAncestor) {
  const Sequence t = Tree();
  const std::vector<uint8_t> keep{1, 0, 1, 1, 1, 0, 1};  // drop A(1) and B(5)
  Result<Sequence> s = Serialize(TreeView{t.ids, t.parent, t.duration, t.depth}, keep);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->node, (std::vector<uint32_t>{0, 2, 3, 4, 6}));
  EXPECT_EQ(s->parent, (std::vector<int32_t>{-1, 0, 0, 0, 0}));
}

TEST(Serialize, RejectsBrokenTrees) {
  const std::vector<TokenId> ids{1, 2};
  const std::vector<int64_t> duration{1, 1};
  const std::vector<uint16_t> depth{0, 1};
  const std::vector<int32_t> out_of_range{-1, 5};
  EXPECT_FALSE(Serialize(TreeView{ids, out_of_range, duration, depth}).ok());
  const std::vector<int32_t> cycle{1, 0};
  EXPECT_FALSE(Serialize(TreeView{ids, cycle, duration, depth}).ok());
}

// A random tree in depth-first order: each node's parent is on the path to the previous
// node (or it starts a new root).
Sequence RandomTree(std::mt19937& rng, size_t n, TokenId alphabet) {
  Sequence s;
  std::vector<int32_t> path;
  for (uint32_t i = 0; i < n; ++i) {
    if (!path.empty()) path.resize(std::uniform_int_distribution<size_t>(0, path.size())(rng));
    const int32_t p = path.empty() ? -1 : path.back();
    s.ids.push_back(std::uniform_int_distribution<TokenId>(0, alphabet - 1)(rng));
    s.parent.push_back(p);
    s.duration.push_back(std::uniform_int_distribution<int64_t>(1, 1000)(rng));
    s.depth.push_back(static_cast<uint16_t>(path.size()));
    s.span.emplace_back(i, i);
    s.node.push_back(i);
    path.push_back(static_cast<int32_t>(i));
  }
  return s;
}

// The encoder's reference: each merge in rank order, left to right, by the literal rule.
Sequence EncodeByRule(Sequence s, TokenId base,
                      const std::vector<std::pair<TokenId, TokenId>>& merges) {
  for (size_t r = 0; r < merges.size(); ++r) {
    for (size_t i = 0; i + 1 < s.size(); ++i) {
      if (s.ids[i] == merges[r].first && s.ids[i + 1] == merges[r].second) {
        ApplyMergeAt(s, i, base + static_cast<TokenId>(r));
      }
    }
  }
  return s;
}

TEST(Encode, EqualsTheLiteralMergeRuleOnRandomTrees) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    const TokenId alphabet = 2 + trial % 5;
    // A model over symbols kNumSpecialTokens .. +alphabet with random merges of earlier ids
    // (some never apply; some repeat a symbol with itself, so occurrences overlap).
    std::vector<std::string> observed;
    for (TokenId a = 0; a < alphabet; ++a) observed.push_back("[K] s" + std::to_string(a));
    std::vector<std::string> base = Model::BaseAlphabet(observed);
    const auto b = static_cast<TokenId>(base.size());
    std::vector<std::pair<TokenId, TokenId>> merges;
    const int num_merges = 1 + trial % 12;
    for (int r = 0; r < num_merges; ++r) {
      std::uniform_int_distribution<TokenId> pick(kNumSpecialTokens, b + r - 1);
      merges.emplace_back(pick(rng), pick(rng));
    }
    const Model model(base, merges);
    Sequence s = RandomTree(rng, trial % 40, alphabet);
    for (TokenId& id : s.ids) id += kNumSpecialTokens;
    const Sequence want = EncodeByRule(s, b, merges);
    const Sequence got = model.Encode(s);
    ASSERT_EQ(got.ids, want.ids) << "trial " << trial;
    ASSERT_EQ(got.parent, want.parent) << "trial " << trial;
    ASSERT_EQ(got.duration, want.duration) << "trial " << trial;
    ASSERT_EQ(got.depth, want.depth) << "trial " << trial;
    ASSERT_EQ(got.span, want.span) << "trial " << trial;

    // Spans cover every original node exactly once, in order; each token's length is
    // the number of base symbols it stands for.
    uint32_t next = 0;
    for (size_t t = 0; t < got.size(); ++t) {
      ASSERT_EQ(got.span[t].first, next) << "trial " << trial;
      ASSERT_LE(got.span[t].first, got.span[t].second);
      ASSERT_EQ(got.span[t].second - got.span[t].first + 1, model.TokenNodes(got.ids[t]));
      next = got.span[t].second + 1;
    }
    ASSERT_EQ(next, s.size()) << "trial " << trial;
    int64_t total = 0, want_total = 0;
    for (int64_t d : got.duration) total += d;
    for (int64_t d : s.duration) want_total += d;
    ASSERT_EQ(total, want_total);
  }
}

TEST(Encode, UnseenSymbolsBecomeTheirTypeTag) {
  const Model model(Model::BaseAlphabet({"[K] gemm", "[RT] cudaLaunchKernel"}), {});
  EXPECT_EQ(model.SymbolId("[K] gemm", TypeTag::kKernel), kNumSpecialTokens);
  EXPECT_EQ(model.SymbolId("[K] never_seen", TypeTag::kKernel),
            kFirstTagToken + static_cast<TokenId>(TypeTag::kKernel));
  EXPECT_EQ(model.base_symbols()[model.SymbolId("[FE] x", TypeTag::kFrontend)], "[FE]");
}

}  // namespace
}  // namespace teller::tpe
