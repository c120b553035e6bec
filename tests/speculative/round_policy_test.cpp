// The round policy (round_policy.hpp) fed synthetic rounds: drafters whose proposals, costs and
// acceptance the test sets, a verify pass whose cost curve it sets. No model runs: each round is
// what SpeculativeDecoder does with the policy (ask in order, merge, cut, verify, learn), with the
// times given instead of measured.
#include <gtest/gtest.h>

#include <bit>
#include <functional>
#include <random>
#include <vector>

#include "speculative/round_policy.hpp"
#include "speculative/token_tree.hpp"

using namespace graft;

namespace {

constexpr double kStep = 1e-3;  // a one-row verify pass: 1 ms

DraftTree chain(const std::vector<TokenId>& tokens, float q = 1.0f) {
  DraftTree t;
  for (std::size_t i = 0; i < tokens.size(); ++i) t.add(tokens[i], static_cast<std::int32_t>(i) - 1, q);
  return t;
}

struct Drafter {
  double cost_steps;  // a proposal's cost, in one-row passes
  // Its proposal for this round's truth, asked `depth` deep.
  std::function<DraftTree(const std::vector<TokenId>& truth, std::uint32_t depth)> propose;
};

struct RoundResult {
  std::vector<char> asked;
  std::uint32_t verified = 0;
  std::uint32_t accepted = 0;
};

// One round of the decoder's calls on the policy; `truth` is the target's continuation.
RoundResult round(RoundPolicy& p, const std::vector<Drafter>& drafters, const std::vector<TokenId>& truth,
                  const std::function<double(std::uint32_t)>& verify_seconds) {
  RoundResult r;
  r.asked.assign(drafters.size(), 0);
  std::vector<DraftTree> trees(drafters.size());
  p.begin_round(16);
  for (std::size_t d : p.order()) {
    const std::uint32_t depth = p.draft_depth(d, 8);
    if (depth == 0) continue;
    r.asked[d] = 1;
    trees[d] = drafters[d].propose(truth, depth);
    while (trees[d].size() > 0 && trees[d].depth(trees[d].size() - 1) > depth) {
      trees[d].tokens.pop_back(), trees[d].parents.pop_back(), trees[d].q.pop_back(), trees[d].dist.pop_back();
    }
    p.proposed(d, depth, drafters[d].cost_steps * kStep, trees[d]);
  }
  std::vector<const DraftTree*> proposals;
  for (const DraftTree& t : trees) proposals.push_back(&t);
  TokenTree tree;
  tree.build(proposals, TreeBudget{16, 8}, 64,
             [&](std::size_t d, std::uint32_t depth, float q) { return p.conditional(d, depth, q); });
  tree.cut(p.verify_count(tree.scores_best_first()));
  r.verified = static_cast<std::uint32_t>(tree.size());
  p.verified(r.verified + 1, verify_seconds(r.verified + 1));
  // The greedy walk: follow the truth while the tree has it.
  std::int32_t node = -1;
  for (TokenId want : truth) {
    std::int32_t next = -1;
    for (std::int32_t c : tree.children(node))
      if (tree.token(static_cast<std::size_t>(c)) == want) next = c;
    if (next < 0) break;
    node = next;
    ++r.accepted;
  }
  std::vector<TokenId> continuation(truth.begin(), truth.begin() + r.accepted + 1);
  std::vector<std::uint32_t> own(drafters.size(), 0);
  for (std::size_t i = 0; i < tree.size(); ++i)
    if (std::popcount(tree.proposers(i)) == 1) ++own[static_cast<std::size_t>(std::countr_zero(tree.proposers(i)))];
  p.learn(proposals, continuation, own, 0.0, 0.0);
  return r;
}

std::vector<TokenId> random_truth(std::mt19937& rng, std::size_t n = 9) {
  std::uniform_int_distribution<TokenId> tok(0, 63);
  std::vector<TokenId> t(n);
  for (auto& x : t) x = tok(rng);
  return t;
}

// The first `right` tokens of the truth, then wrong ones, `depth` in all.
DraftTree guess(const std::vector<TokenId>& truth, std::uint32_t depth, std::uint32_t right, float q = 1.0f) {
  std::vector<TokenId> t;
  for (std::uint32_t i = 0; i < depth && i < truth.size(); ++i) t.push_back(i < right ? truth[i] : (truth[i] + 1) % 64);
  return chain(t, q);
}

double linear_verify(std::uint32_t rows) { return kStep * (1.0 + 0.2 * (rows - 1)); }

TEST(RoundPolicy, AnExpensiveDrafterThatAddsNothingIsSkippedAfterItsFirstRounds) {
  // Drafter 0 is cheap and gets 3 tokens right; drafter 1 costs 2 decode steps and gets only the
  // first token right, which drafter 0 already has. Within 10 rounds the policy stops asking
  // drafter 1, except for its probes (after 16, 32, 64 rounds).
  std::mt19937 rng(1);
  const std::vector<Drafter> drafters{
      {0.05, [](const auto& truth, std::uint32_t depth) { return guess(truth, depth, 3); }},
      {2.0, [](const auto& truth, std::uint32_t depth) { return guess(truth, depth, 1); }}};
  RoundPolicy p(2, RoundPolicyOptions{});
  int asked_late = 0, cheap_late = 0;
  for (int r = 0; r < 130; ++r) {
    const RoundResult res = round(p, drafters, random_truth(rng), linear_verify);
    if (r >= 10) asked_late += res.asked[1], cheap_late += res.asked[0];
  }
  EXPECT_LE(asked_late, 4) << "probes only";
  EXPECT_EQ(cheap_late, 120);
  EXPECT_LT(p.gain(1, RoundPolicy::bucket(3.0)), 0.5);
}

TEST(RoundPolicy, ACheapDrafterThatNeverHitsIsSkippedAndTheExpensiveOneThatDoesIsAsked) {
  // The other way round: the cheap drafter (0.1 steps) guesses nothing right, the expensive one
  // (0.5 steps) gets 4 tokens right. The expensive one is asked every round from the first; the
  // cheap one is skipped after its first rounds.
  std::mt19937 rng(2);
  const std::vector<Drafter> drafters{
      {0.1, [](const auto& truth, std::uint32_t depth) { return guess(truth, depth, 0); }},
      {0.5, [](const auto& truth, std::uint32_t depth) { return guess(truth, depth, 4); }}};
  RoundPolicy p(2, RoundPolicyOptions{});
  int good = 0, useless = 0;
  double accepted = 0;
  for (int r = 0; r < 130; ++r) {
    const RoundResult res = round(p, drafters, random_truth(rng), linear_verify);
    if (r >= 10) good += res.asked[1], useless += res.asked[0], accepted += res.accepted;
  }
  EXPECT_EQ(good, 120);
  EXPECT_LE(useless, 4) << "probes only";
  EXPECT_GT(accepted / 120, 3.0);  // the good drafter's chain is verified, not cut
}

TEST(RoundPolicy, ComplementaryDraftersAreEachUsedInTheirOwnContext) {
  // Stretches of 25 rounds of two kinds of text. Kind X: drafter 0 (cheap, like an n-gram copy)
  // has the right 6 tokens; kind Y: it has no match at all and drafter 1 (0.3 steps, like an MTP
  // head) gets 3 right. In X drafter 1 adds nothing beyond drafter 0's long chain; in Y it adds
  // everything: the policy asks it in Y and not in X.
  std::mt19937 rng(3);
  bool kind_x = true;
  const std::vector<Drafter> drafters{
      {0.01, [&](const auto& truth, std::uint32_t depth) { return kind_x ? guess(truth, depth, 6) : DraftTree{}; }},
      {0.3, [&](const auto& truth, std::uint32_t depth) { return guess(truth, depth, kind_x ? 1 : 3, 0.8f); }}};
  RoundPolicy p(2, RoundPolicyOptions{});
  int x_rounds = 0, x_asked = 0, y_rounds = 0, y_asked = 0;
  double x_tokens = 0, y_tokens = 0;
  for (int stretch = 0; stretch < 12; ++stretch) {
    kind_x = stretch % 2 == 0;
    for (int r = 0; r < 25; ++r) {
      const RoundResult res = round(p, drafters, random_truth(rng), linear_verify);
      if (stretch < 4 || r < 3) continue;  // judged once both kinds were seen and the stretch began
      (kind_x ? x_rounds : y_rounds) += 1;
      (kind_x ? x_asked : y_asked) += res.asked[1];
      (kind_x ? x_tokens : y_tokens) += res.accepted;
    }
  }
  EXPECT_GE(y_asked, y_rounds * 9 / 10) << y_asked << " of " << y_rounds;
  EXPECT_LE(x_asked, x_rounds / 10) << x_asked << " of " << x_rounds;
  EXPECT_GT(x_tokens / x_rounds, 4.0);  // drafter 0's chain, verified deep
  EXPECT_GT(y_tokens / y_rounds, 2.0);  // drafter 1's
}

TEST(RoundPolicy, AFlatCostCurveVerifiesWideTreesAndASteepOneNarrowOnes) {
  // A GPU-like target: a pass of 17 rows costs what one does. Every node with any chance pays.
  std::vector<float> chances;
  for (int i = 0; i < 16; ++i) chances.push_back(0.9f - 0.05f * static_cast<float>(i));
  RoundPolicy flat(1, RoundPolicyOptions{}), steep(1, RoundPolicyOptions{});
  for (int pass = 0; pass < 40; ++pass) {
    const std::uint32_t rows = 1 + static_cast<std::uint32_t>(pass % 17);
    flat.verified(rows, kStep);
    steep.verified(rows, kStep * rows);  // each row costs a whole step: only a sure node pays
    flat.learn({}, std::vector<TokenId>{1}, {}, 0.0, 0.0);
    steep.learn({}, std::vector<TokenId>{1}, {}, 0.0, 0.0);
  }
  EXPECT_EQ(flat.verify_count(chances), 16u);
  EXPECT_LE(steep.verify_count(chances), 1u);
}

TEST(RoundPolicy, NotAdaptiveAsksEveryDrafterAtFullDepthAndVerifiesEverything) {
  RoundPolicyOptions o;
  o.adaptive = false;
  RoundPolicy p(2, o);
  std::mt19937 rng(4);
  const std::vector<Drafter> drafters{
      {0.1, [](const auto& truth, std::uint32_t depth) { return guess(truth, depth, 0); }},
      {5.0, [](const auto& truth, std::uint32_t depth) {
         std::vector<TokenId> t;
         for (std::uint32_t i = 0; i < depth; ++i) t.push_back((truth[i] + 2) % 64);
         return chain(t);
       }}};
  for (int r = 0; r < 30; ++r) {
    const RoundResult res = round(p, drafters, random_truth(rng), linear_verify);
    EXPECT_EQ(res.asked, (std::vector<char>{1, 1}));
    EXPECT_EQ(res.verified, 16u);  // two chains of 8
  }
}

TEST(RoundPolicy, EstimatesTheSpeedupFromTheRoundsItTimed) {
  // Three rounds in four give 4 tokens for a 5-row pass (1.8 steps) and a 0.2-step proposal; the
  // fourth proposes nothing: 1 token for a one-row pass and the proposal. 3.25 tokens per 1.8
  // steps: 1.81x plain decoding.
  std::mt19937 rng(5);
  const std::vector<Drafter> drafters{{0.2, [](const auto& truth, std::uint32_t) {
    return truth[0] % 4 == 0 ? DraftTree{} : guess(truth, 4, 3);
  }}};
  RoundPolicyOptions o;
  o.adaptive = false;
  RoundPolicy p(1, o);
  EXPECT_EQ(p.estimated_speedup(), 0.0);
  for (int r = 0; r < 300; ++r) round(p, drafters, random_truth(rng), linear_verify);
  EXPECT_NEAR(p.estimated_speedup(), 1.81, 0.25);
}

TEST(RoundPolicy, WhatItLearntSurvivesAJsonRoundTripAndDecidesFromTheFirstRound) {
  // Learnt as in the first test, then loaded into a fresh policy: it skips the expensive drafter
  // that adds nothing from its first round (a fresh one asks it in its learning rounds).
  std::mt19937 rng(6);
  const std::vector<Drafter> drafters{
      {0.05, [](const auto& truth, std::uint32_t depth) { return guess(truth, depth, 3); }},
      {2.0, [](const auto& truth, std::uint32_t depth) { return guess(truth, depth, 1); }}};
  RoundPolicy learnt(2, RoundPolicyOptions{});
  for (int r = 0; r < 60; ++r) round(learnt, drafters, random_truth(rng), linear_verify);
  const nlohmann::json j = nlohmann::json::parse(learnt.to_json().dump());
  RoundPolicy fresh(2, RoundPolicyOptions{}), loaded(2, RoundPolicyOptions{});
  loaded.from_json(j);
  EXPECT_EQ(loaded.to_json(), learnt.to_json());
  EXPECT_NEAR(loaded.verify_seconds(5), learnt.verify_seconds(5), 1e-12);
  EXPECT_EQ(round(fresh, drafters, random_truth(rng), linear_verify).asked[1], 1);
  int asked = 0;
  for (int r = 0; r < 10; ++r) asked += round(loaded, drafters, random_truth(rng), linear_verify).asked[1];
  EXPECT_EQ(asked, 0);
}

TEST(RoundPolicy, ExperienceCountsAcrossATakeOverAndOnlyMuchMoreOfItIsTakenOver) {
  std::mt19937 rng(8);
  const std::vector<Drafter> drafters{{0.05, [](const auto& truth, std::uint32_t d) { return guess(truth, d, 3); }}};
  RoundPolicy learnt(1, RoundPolicyOptions{}), fresh(1, RoundPolicyOptions{});
  for (int r = 0; r < 40; ++r) round(learnt, drafters, random_truth(rng), linear_verify);
  EXPECT_EQ(learnt.learnt_rounds(), 40u);
  fresh.from_json(learnt.to_json());
  EXPECT_EQ(fresh.learnt_rounds(), 40u);  // what it knows came from 40 rounds
  round(fresh, drafters, random_truth(rng), linear_verify);
  EXPECT_EQ(fresh.learnt_rounds(), 41u);
  // A fresh policy takes over any real experience; one with its own keeps it unless the other's is
  // at least twice as long and 16 rounds longer.
  EXPECT_TRUE(RoundPolicy::should_adopt(0, 16));
  EXPECT_FALSE(RoundPolicy::should_adopt(0, 15));
  EXPECT_FALSE(RoundPolicy::should_adopt(100, 200));
  EXPECT_TRUE(RoundPolicy::should_adopt(100, 216));
  EXPECT_FALSE(RoundPolicy::should_adopt(40, 40));
}

TEST(RoundPolicy, AFileOfAnotherShapeIsRefusedWholeAndChangesNothing) {
  RoundPolicy p(2, RoundPolicyOptions{});
  std::mt19937 rng(7);
  const std::vector<Drafter> drafters{{0.05, [](const auto& truth, std::uint32_t d) { return guess(truth, d, 2); }},
                                      {0.5, [](const auto& truth, std::uint32_t d) { return guess(truth, d, 1); }}};
  for (int r = 0; r < 20; ++r) round(p, drafters, random_truth(rng), linear_verify);
  const nlohmann::json before = p.to_json();
  nlohmann::json other = before;
  other["drafters"].erase(1);  // a file for one drafter
  EXPECT_THROW(p.from_json(other), std::exception);
  nlohmann::json negative = before;
  negative["verify"]["w"] = -1.0;
  EXPECT_THROW(p.from_json(negative), std::exception);
  nlohmann::json version = before;
  version["format"] = "graft round policy 0";
  EXPECT_THROW(p.from_json(version), std::exception);
  EXPECT_THROW(p.from_json(nlohmann::json::parse("[1, 2]")), std::exception);
  EXPECT_EQ(p.to_json(), before);
}

}  // namespace
