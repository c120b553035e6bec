// The n-gram drafter's trees: hand-built cases (ranking by count then recency, q values, copies
// that run past the end of the context, budgets) and, on random streams and budgets, the shape
// rules every proposal must keep and equality with the brute-force tree.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "ngram_draft.hpp"
#include "ngram_index.hpp"
#include "ngram_reference.hpp"

using graft::DraftTree;
using graft::ngram::DraftParams;
using graft::ngram::DraftSummary;
using graft::ngram::Follower;
using graft::ngram::NgramIndex;
using namespace ngramtest;

namespace {

struct Budget {
  std::uint32_t max_nodes = 64;
  std::uint32_t max_depth = 64;
};

DraftTree propose(const Tokens& t, const DraftParams& p, std::uint32_t max_match, Budget b,
                  DraftSummary* summary = nullptr) {
  NgramIndex idx(max_match);
  idx.append(t);
  DraftTree tree;
  std::vector<Follower> scratch;
  const DraftSummary s = draft(idx, p, b.max_nodes, b.max_depth, tree, scratch);
  if (summary) *summary = s;
  return tree;
}

using Parents = std::vector<std::int32_t>;
using Qs = std::vector<float>;

TEST(NgramTree, BranchesRankByCountBeforeRecency) {
  // "A B" occurred three times before the end: followed by c, c, d. c is ranked first although d
  // is more recent; each branch copies what followed its latest occurrence.
  const Tokens t = {1, 2, 3, 1, 2, 3, 1, 2, 4, 1, 2};
  DraftSummary s;
  const DraftTree tree = propose(t, DraftParams{2, 4, 3}, 8, {}, &s);
  EXPECT_EQ(s.match_length, 2u);
  EXPECT_EQ(s.occurrences, 3u);
  EXPECT_EQ(s.branches, 2u);
  EXPECT_EQ(tree.tokens, (Tokens{3, 1, 2, 4, 4, 1, 2, 4}));
  EXPECT_EQ(tree.parents, (Parents{-1, 0, 1, 2, -1, 4, 5, 6}));
  EXPECT_EQ(tree.q, (Qs{2.0f / 3.0f, 1, 1, 1, 1.0f / 3.0f, 1, 1, 1}));
  EXPECT_EQ(tree.dist, (std::vector<std::int32_t>(8, -1)));
  EXPECT_TRUE(tree.valid(5));
}

TEST(NgramTree, TiesGoToTheMostRecentOccurrence) {
  // "A x B" occurred twice, followed by y then z: equal counts, so z (the later) comes first.
  const Tokens t = {1, 2, 3, 4, 1, 2, 3, 5, 1, 2, 3};
  const DraftTree tree = propose(t, DraftParams{2, 5, 3}, 8, {});
  EXPECT_EQ(tree.tokens, (Tokens{5, 1, 2, 3, 5, 4, 1, 2, 3, 5}));
  EXPECT_EQ(tree.parents, (Parents{-1, 0, 1, 2, 3, -1, 5, 6, 7, 8}));
  EXPECT_EQ(tree.q, (Qs{0.5f, 1, 1, 1, 1, 0.5f, 1, 1, 1, 1}));
  // One branch allowed: the chain of the most recent.
  const DraftTree chain = propose(t, DraftParams{2, 5, 1}, 8, {});
  EXPECT_EQ(chain.tokens, (Tokens{5, 1, 2, 3, 5}));
  EXPECT_EQ(chain.q, (Qs{0.5f, 1, 1, 1, 1}));
}

TEST(NgramTree, BudgetsDeepenTheBestBranchFirst) {
  const Tokens t = {1, 2, 3, 4, 1, 2, 3, 5, 1, 2, 3};
  // 6 nodes for two branches: both roots, then the first branch takes the other 4.
  DraftTree tree = propose(t, DraftParams{2, 5, 3}, 8, {6, 64});
  EXPECT_EQ(tree.tokens, (Tokens{5, 1, 2, 3, 5, 4}));
  EXPECT_EQ(tree.parents, (Parents{-1, 0, 1, 2, 3, -1}));
  // 8 nodes: the second branch gets what the first (capped by max_draft) leaves.
  tree = propose(t, DraftParams{2, 5, 3}, 8, {8, 64});
  EXPECT_EQ(tree.tokens, (Tokens{5, 1, 2, 3, 5, 4, 1, 2}));
  // One node: the best root alone.
  tree = propose(t, DraftParams{2, 5, 3}, 8, {1, 64});
  EXPECT_EQ(tree.tokens, (Tokens{5}));
  // max_depth below max_draft caps every branch.
  tree = propose(t, DraftParams{2, 5, 3}, 8, {64, 2});
  EXPECT_EQ(tree.tokens, (Tokens{5, 1, 4, 1}));
  EXPECT_EQ(tree.parents, (Parents{-1, 0, -1, 2}));
  // No room at all.
  EXPECT_EQ(propose(t, DraftParams{2, 5, 3}, 8, {0, 64}).size(), 0u);
  EXPECT_EQ(propose(t, DraftParams{2, 5, 3}, 8, {64, 0}).size(), 0u);
}

TEST(NgramTree, CopyRunsPastTheEndOfTheContext) {
  // The match's latest occurrence is one period back, closer than max_draft: the copy continues
  // with its own tokens and repeats the period.
  const Tokens t = {1, 2, 3, 1, 2, 3, 1};
  DraftSummary s;
  const DraftTree tree = propose(t, DraftParams{1, 7, 3}, 8, {}, &s);
  EXPECT_EQ(s.match_length, 4u);
  EXPECT_EQ(tree.tokens, (Tokens{2, 3, 1, 2, 3, 1, 2}));
  EXPECT_EQ(tree.q, (Qs(7, 1.0f)));
  EXPECT_EQ(propose(Tokens(4, 5), DraftParams{2, 6, 3}, 8, {}).tokens, Tokens(6, 5));
}

TEST(NgramTree, ChainWithProbabilityOneWhenOccurrencesAgree) {
  const Tokens t = {9, 1, 2, 7, 1, 2, 7, 0, 1, 2};
  DraftSummary s;
  const DraftTree tree = propose(t, DraftParams{2, 3, 3}, 8, {}, &s);
  EXPECT_EQ(s.occurrences, 2u);
  EXPECT_EQ(tree.tokens, (Tokens{7, 0, 1}));
  EXPECT_EQ(tree.parents, (Parents{-1, 0, 1}));
  EXPECT_EQ(tree.q, (Qs{1, 1, 1}));
}

TEST(NgramTree, EmptyWhenNothingMatches) {
  DraftSummary s;
  EXPECT_EQ(propose({1, 2, 3, 4, 5}, DraftParams{1, 8, 3}, 8, {}, &s).size(), 0u);
  EXPECT_EQ(s.match_length, 0u);
  EXPECT_EQ(propose({1, 2, 3, 1}, DraftParams{2, 8, 3}, 8, {}).size(), 0u);  // only 1 token matches
  EXPECT_EQ(propose({1, 2, 3, 1}, DraftParams{1, 8, 3}, 8, {}).tokens, (Tokens{2, 3, 1, 2, 3, 1, 2, 3}));
  EXPECT_EQ(propose({}, DraftParams{1, 8, 3}, 8, {}).size(), 0u);
  EXPECT_EQ(propose({4}, DraftParams{1, 8, 3}, 8, {}).size(), 0u);
  // The longest match wins even when shorter suffixes have more occurrences.
  EXPECT_EQ(propose({5, 6, 8, 3, 6, 9, 3, 6, 9, 5, 6}, DraftParams{1, 2, 3}, 8, {}).tokens, (Tokens{8, 3}));
}

// The rules every proposal keeps, checked on the tree alone (plus brute-force followers).
void expect_well_formed(const DraftTree& tree, const Tokens& t, std::int32_t vocab, const DraftParams& p,
                        std::uint32_t max_match, Budget b) {
  ASSERT_EQ(tree.invalid(static_cast<std::uint32_t>(vocab)), nullptr);
  EXPECT_LE(tree.size(), b.max_nodes);
  EXPECT_TRUE(tree.distributions.empty());
  std::set<std::pair<std::int32_t, std::int32_t>> children;  // (parent, token)
  std::vector<std::size_t> roots;
  std::vector<std::uint32_t> n_children(tree.size(), 0);
  for (std::size_t i = 0; i < tree.size(); ++i) {
    EXPECT_LT(tree.parents[i], static_cast<std::int32_t>(i));
    EXPECT_LE(tree.depth(i), std::min(b.max_depth, p.max_draft));
    EXPECT_EQ(tree.dist[i], -1);
    EXPECT_TRUE(children.insert({tree.parents[i], tree.tokens[i]}).second) << "siblings repeat a token";
    if (tree.parents[i] < 0) {
      roots.push_back(i);
    } else {
      EXPECT_EQ(tree.q[i], 1.0f) << "node below a branch point";
      ++n_children[static_cast<std::size_t>(tree.parents[i])];
    }
  }
  for (std::uint32_t c : n_children) EXPECT_LE(c, 1u) << "branches only at the root";
  const std::uint32_t len = ref_longest(t, p.min_match, max_match);
  if (len == 0 || b.max_nodes == 0 || b.max_depth == 0) {
    EXPECT_EQ(tree.size(), 0u);
    return;
  }
  const RefFollowers fs = ref_followers(t, len);
  std::uint32_t total = 0;
  for (const auto& [token, f] : fs) total += f.count;
  EXPECT_EQ(roots.size(), std::min<std::size_t>({p.max_branches, fs.size(), b.max_nodes}));
  for (std::size_t r = 0; r < roots.size(); ++r) {
    const auto it = fs.find(tree.tokens[roots[r]]);
    ASSERT_NE(it, fs.end()) << "a root token never followed the match";
    EXPECT_EQ(tree.q[roots[r]], static_cast<float>(it->second.count) / static_cast<float>(total));
    if (r == 0) continue;
    const RefFollower& prev = fs.at(tree.tokens[roots[r - 1]]);
    EXPECT_TRUE(prev.count > it->second.count || (prev.count == it->second.count && prev.last > it->second.last))
        << "branches out of rank order";
  }
  // No follower left out ranks above one kept.
  for (const auto& [token, f] : fs) {
    bool kept = false;
    for (std::size_t r : roots) kept |= tree.tokens[r] == token;
    if (kept || roots.empty()) continue;
    const RefFollower& worst = fs.at(tree.tokens[roots.back()]);
    EXPECT_TRUE(worst.count > f.count || (worst.count == f.count && worst.last > f.last));
  }
}

TEST(NgramTree, RandomBudgetsKeepTheShapeRules) {
  std::mt19937 rng(2024);
  for (int trial = 0; trial < 400; ++trial) {
    const std::int32_t vocab = 2 + static_cast<std::int32_t>(rng() % 12);
    const std::size_t n = 1 + rng() % 400;
    const Tokens t = trial % 2 ? random_stream(rng, n, vocab) : repetitive_stream(rng, n, vocab, 3 + rng() % 10, 0.1);
    const std::uint32_t max_match = 1 + static_cast<std::uint32_t>(rng() % 12);
    const DraftParams p{1 + static_cast<std::uint32_t>(rng() % max_match), 1 + static_cast<std::uint32_t>(rng() % 20),
                        1 + static_cast<std::uint32_t>(rng() % 8)};
    const Budget b{static_cast<std::uint32_t>(rng() % 40), static_cast<std::uint32_t>(rng() % 24)};
    SCOPED_TRACE("trial " + std::to_string(trial));
    const DraftTree tree = propose(t, p, max_match, b);
    expect_well_formed(tree, t, vocab, p, max_match, b);
    const DraftTree want = ref_tree(t, p.min_match, max_match, p.max_draft, p.max_branches, b.max_nodes, b.max_depth);
    EXPECT_EQ(tree.tokens, want.tokens);
    EXPECT_EQ(tree.parents, want.parents);
    EXPECT_EQ(tree.q, want.q);
    if (HasFailure()) return;
  }
}

}  // namespace
