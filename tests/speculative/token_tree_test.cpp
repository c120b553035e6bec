// Merging drafters' trees into the one verified tree: shared nodes once, the budget spent by
// path probability with parents always kept, the rejection-sampling distribution kept only where
// it stays exact, and the verify pass's layout (positions, ancestor mask).
#include <gtest/gtest.h>

#include "speculative/token_tree.hpp"

using namespace graft;

namespace {

constexpr std::uint32_t kVocab = 16;

TokenTree merged(std::vector<const DraftTree*> trees, std::uint32_t max_nodes = 64, std::uint32_t max_depth = 64) {
  TokenTree t;
  t.build(trees, TreeBudget{max_nodes, max_depth}, kVocab);
  return t;
}

}  // namespace

TEST(TokenTree, SharedPrefixesMergeAndProposersAreRecorded) {
  DraftTree a, b;
  a.add(1, -1);  // chain 1 2 3
  a.add(2, 0);
  a.add(3, 1);
  b.add(1, -1);  // 1 2 4, and 5 at the root
  b.add(2, 0);
  b.add(4, 1);
  b.add(5, -1, 0.5f);
  const TokenTree t = merged({&a, &b});
  ASSERT_EQ(t.size(), 5u);
  EXPECT_EQ(t.token(0), 1);
  EXPECT_EQ(t.token(1), 2);
  EXPECT_EQ(t.parent(1), 0);
  EXPECT_EQ(t.proposers(0), 3u) << "both drafters proposed 1";
  EXPECT_EQ(t.proposers(1), 3u);
  // a's node 2 (token 3) and b's node 2 (token 4) are siblings under the shared 2.
  const std::int32_t a3 = t.node_of(0, 2), b4 = t.node_of(1, 2);
  EXPECT_EQ(t.token(static_cast<std::size_t>(a3)), 3);
  EXPECT_EQ(t.token(static_cast<std::size_t>(b4)), 4);
  EXPECT_EQ(t.parent(static_cast<std::size_t>(a3)), 1);
  EXPECT_EQ(t.parent(static_cast<std::size_t>(b4)), 1);
  EXPECT_EQ(t.proposers(static_cast<std::size_t>(a3)), 1u);
  EXPECT_EQ(t.proposers(static_cast<std::size_t>(b4)), 2u);
  const auto root_kids = t.children(-1);
  ASSERT_EQ(root_kids.size(), 2u);
  EXPECT_EQ(t.token(static_cast<std::size_t>(root_kids[1])), 5);
  EXPECT_EQ(t.depth(static_cast<std::size_t>(a3)), 3u);
}

TEST(TokenTree, BudgetKeepsTheMostProbablePathsAndEveryParent) {
  DraftTree a;
  a.add(1, -1, 0.9f);  // path probabilities: 0.9, 0.9*0.9=0.81, 0.81*0.5=0.405
  a.add(2, 0, 0.9f);
  a.add(3, 1, 0.5f);
  a.add(4, -1, 0.6f);  // 0.6
  a.add(5, 3, 1.0f);   // 0.6 (deeper than its parent: after it)
  const TokenTree t = merged({&a}, 4);
  ASSERT_EQ(t.size(), 4u);
  std::vector<TokenId> kept;
  for (std::size_t i = 0; i < t.size(); ++i) kept.push_back(t.token(i));
  EXPECT_EQ(kept, (std::vector<TokenId>{1, 2, 4, 5})) << "0.405 is the one left out";
  for (std::size_t i = 0; i < t.size(); ++i)
    if (t.parent(i) >= 0) EXPECT_LT(t.parent(i), static_cast<std::int32_t>(i));
  EXPECT_FLOAT_EQ(t.score(1), 0.9f * 0.9f);

  const TokenTree shallow = merged({&a}, 64, 1);
  EXPECT_EQ(shallow.size(), 2u) << "max_depth 1 keeps only the root's children";
  const TokenTree none = merged({&a}, 0);
  EXPECT_TRUE(none.empty());
}

TEST(TokenTree, DrawnDistributionKeptOnlyWhereRejectionStaysExact) {
  DraftTree a, b;
  a.distributions.assign(2 * kVocab, 1.0f / kVocab);
  a.add(3, -1, 1.0f / kVocab, 0);  // drawn, alone: keeps its distribution
  a.add(4, -1, 1.0f / kVocab, 1);  // a second drawn sibling: matched instead
  a.add(6, 0, 1.0f / kVocab, 0);   // drawn, but b proposes it too: matched
  b.add(3, -1);
  b.add(6, 0);
  const TokenTree t = merged({&a, &b});
  ASSERT_EQ(t.size(), 3u);
  const auto n3 = static_cast<std::size_t>(t.node_of(0, 0)), n4 = static_cast<std::size_t>(t.node_of(0, 1)),
             n6 = static_cast<std::size_t>(t.node_of(0, 2));
  EXPECT_EQ(t.distribution(n3), nullptr) << "b proposed 3 deterministically";
  EXPECT_NE(t.distribution(n4), nullptr) << "the only drawn child left under the root";
  EXPECT_EQ(t.distribution(n4), a.distributions.data() + kVocab);
  EXPECT_EQ(t.distribution(n6), nullptr);

  DraftTree c;
  c.distributions.assign(kVocab, 1.0f / kVocab);
  c.add(3, -1, 1.0f / kVocab, 0);
  c.add(4, -1, 1.0f / kVocab, 0);
  const TokenTree u = merged({&c});
  EXPECT_NE(u.distribution(0), nullptr);
  EXPECT_EQ(u.distribution(1), nullptr) << "one rejection-tested child per node";
}

TEST(TokenTree, VerifyLayoutHasDepthPositionsAndAncestorMask) {
  DraftTree a;
  a.add(10, -1);
  a.add(11, 0);
  a.add(12, -1, 0.5f);
  a.add(13, 1);
  const TokenTree t = merged({&a});
  std::vector<TokenId> toks;
  t.verify_tokens(99, toks);
  EXPECT_EQ(toks, (std::vector<TokenId>{99, 10, 11, 12, 13}));
  std::vector<std::int32_t> pos;
  t.verify_positions(40, pos);
  EXPECT_EQ(pos, (std::vector<std::int32_t>{40, 41, 42, 41, 43}));
  std::vector<std::uint8_t> mask;
  t.ancestor_mask(mask);
  const std::vector<std::uint8_t> want = {
      1, 0, 0, 0, 0,  // pending
      1, 1, 0, 0, 0,  // 10
      1, 1, 1, 0, 0,  // 11
      1, 0, 0, 1, 0,  // 12
      1, 1, 1, 0, 1,  // 13
  };
  EXPECT_EQ(mask, want);
}
