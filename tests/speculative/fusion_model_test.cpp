// The mix's learner (fusion_model.hpp): full-information scoring of every proposal against the
// verified continuation, the chances by depth and q, the value of each drafter beyond the others,
// and that two drafters each right in a context of its own each get the budget in theirs.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "speculative/fusion_model.hpp"
#include "speculative/token_tree.hpp"

using namespace graft;

namespace {

DraftTree chain(const std::vector<TokenId>& tokens, float q = 1.0f) {
  DraftTree t;
  for (std::size_t i = 0; i < tokens.size(); ++i) t.add(tokens[i], static_cast<std::int32_t>(i) - 1, q);
  return t;
}

void learn(FusionModel& m, const std::vector<const DraftTree*>& trees, const std::vector<TokenId>& truth) {
  m.learn(trees, truth);
}

TEST(FusionModel, ScoresNodesTheBudgetCutAgainstTheVerifiedContinuation) {
  // A chain of 4 whose first 3 tokens are the truth: depths 1-3 count as accepted, depth 4
  // (the 4th token differs from the target's own token) as rejected; a node under a rejected one
  // teaches nothing.
  FusionModel m(1);
  const float before = m.conditional(0, 4, 0.5f);
  const DraftTree t = chain({1, 2, 3, 9, 5}, 0.5f);
  for (int i = 0; i < 50; ++i) learn(m, {&t}, {1, 2, 3, 4});
  EXPECT_GT(m.conditional(0, 1, 0.5f), 0.9f);
  EXPECT_GT(m.conditional(0, 3, 0.5f), 0.9f);
  EXPECT_LT(m.conditional(0, 4, 0.5f), 0.2f);
  EXPECT_NE(m.conditional(0, 4, 0.5f), before);
  // Depth 5 was never scored: its cell is the backoff to the q bin alone, which learnt from
  // depths 1-4 (three hits, one miss per round), so it differs from a fresh model's.
  const float backoff = m.conditional(0, 5, 0.5f);
  EXPECT_NEAR(backoff, 0.75f, 0.05f);
  EXPECT_GT(backoff, FusionModel(1).conditional(0, 5, 0.5f) + 0.1f);
  EXPECT_GT(m.depth_chance(0, 2), 0.9f);
  EXPECT_LT(m.depth_chance(0, 4), 0.2f);
}

TEST(FusionModel, EachDrafterIsScoredAloneAgainstTheVerifiedContinuation) {
  // Full information: each proposal's own accepted length, whichever one the tree verified.
  FusionModel m(3);
  const DraftTree longer = chain({1, 2, 3}), shorter = chain({1, 7}), none;
  learn(m, {&longer, &shorter, &none}, {1, 2, 3, 4});
  ASSERT_EQ(m.accepted_lengths().size(), 3u);
  EXPECT_EQ(m.accepted_lengths()[0], 3u);
  EXPECT_EQ(m.accepted_lengths()[1], 1u);
  EXPECT_EQ(m.accepted_lengths()[2], 0u);
  // A chain longer than the verified continuation is scored as far as it goes.
  learn(m, {&longer, &shorter, &none}, {1, 2});
  EXPECT_EQ(m.accepted_lengths()[0], 2u);
}

TEST(FusionModel, EachDrafterGetsTheBudgetInTheContextItIsRightIn) {
  // Stretches of 20 rounds of two kinds of text: drafter 0 copies the right continuation in kind
  // X and a wrong one in kind Y, drafter 1 the other way round; both claim q = 1. A budget of one
  // chain must go to the drafter that is right in the current stretch.
  std::mt19937 rng(5);
  std::uniform_int_distribution<TokenId> tok(0, 15);
  FusionModel m(2);
  int right = 0, judged = 0;
  for (int stretch = 0; stretch < 30; ++stretch) {
    const int good = stretch % 2;  // the drafter that is right in this stretch
    for (int r = 0; r < 20; ++r) {
      std::vector<TokenId> truth(5), wrong(4);
      for (auto& t : truth) t = tok(rng);
      for (std::size_t i = 0; i < wrong.size(); ++i) wrong[i] = static_cast<TokenId>((truth[i] + 1 + tok(rng) % 15) % 16);
      const DraftTree a = chain(good == 0 ? std::vector<TokenId>(truth.begin(), truth.end() - 1) : wrong);
      const DraftTree b = chain(good == 1 ? std::vector<TokenId>(truth.begin(), truth.end() - 1) : wrong);
      const std::vector<const DraftTree*> trees{&a, &b};
      if (stretch >= 10 && r >= 10) {  // judged once the model has seen both kinds and the stretch began
        TokenTree t;
        t.build(trees, TreeBudget{4, 4}, 16,
                [&](std::size_t d, std::uint32_t depth, float q) { return m.conditional(d, depth, q); });
        ++judged;
        right += t.size() > 0 && t.node_of(static_cast<std::size_t>(good), 0) == 0 &&
                 t.node_of(static_cast<std::size_t>(1 - good), 0) < 0;
      }
      learn(m, trees, truth);
    }
  }
  EXPECT_GE(right, judged * 95 / 100) << right << " of " << judged;
  // Without the learner (q alone) the two tie and the budget is split: neither chain is whole.
  const DraftTree a = chain({1, 2, 3, 4}), b = chain({5, 6, 7, 8});
  TokenTree t;
  t.build(std::vector<const DraftTree*>{&a, &b}, TreeBudget{4, 4}, 16);
  EXPECT_GE(t.node_of(0, 0), 0);
  EXPECT_GE(t.node_of(1, 0), 0);
  EXPECT_LT(t.node_of(0, 3), 0);
}

}  // namespace
