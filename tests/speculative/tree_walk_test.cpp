// Acceptance is lossless. Greedy: the walk keeps exactly the argmax path. Sampling: over many
// seeds, the first two tokens a round (plus plain sampling after it) emits follow the target's
// exact joint distribution (chi-square, false-alarm rate 1e-4 per test), whatever the drafter
// proposes: drafts drawn from a distribution (rejection tested), deterministic picks (matched),
// garbage of either kind. The same test catches a drafter that lies about its distribution.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <random>

#include "speculative/tree_walk.hpp"

using namespace graft;

namespace {

constexpr std::uint32_t V = 6;
constexpr int kTrials = 20000;
// One-sided standard normal quantile for a false-alarm rate of 1e-4 (Wilson-Hilferty below).
constexpr double kZ = 3.719;

// The toy target: logits depend on the last two tokens and the length, as a model's would.
std::vector<float> target_logits(const std::vector<TokenId>& h) {
  std::vector<float> l(V);
  const int a = h.empty() ? 0 : h.back(), b = h.size() > 1 ? h[h.size() - 2] : 0;
  for (std::uint32_t v = 0; v < V; ++v)
    l[v] = static_cast<float>(1.4 * std::sin(1.3 * v + 0.7 * a + 0.45 * b + 0.3 * double(h.size())));
  return l;
}

std::vector<float> random_dist(std::mt19937& rng, double sharp) {
  std::vector<float> q(V);
  std::uniform_real_distribution<double> u(0, 1);
  double sum = 0;
  for (float& x : q) sum += x = static_cast<float>(std::pow(u(rng), sharp) + 1e-3);
  for (float& x : q) x = static_cast<float>(x / sum);
  return q;
}

TokenId draw(const std::vector<float>& q, std::mt19937& rng) {
  std::discrete_distribution<int> d(q.begin(), q.end());
  return d(rng);
}

enum class DraftKind { drawn, picked, garbage_picks, garbage_drawn, liar };

// A depth-3 tree as the kind of drafter would propose it.
DraftTree propose(DraftKind kind, std::mt19937& rng) {
  DraftTree t;
  std::uniform_int_distribution<int> tok(0, V - 1);
  auto drawn_node = [&](std::int32_t parent, double sharp) {
    const auto q = random_dist(rng, sharp);
    const auto idx = static_cast<std::int32_t>(t.distributions.size() / V);
    t.distributions.insert(t.distributions.end(), q.begin(), q.end());
    // The liar claims q but proposes a token from elsewhere (always the same one).
    const TokenId x = kind == DraftKind::liar ? 0 : draw(q, rng);
    t.add(x, parent, q[static_cast<std::size_t>(x)], idx);
  };
  auto picked_node = [&](std::int32_t parent) { t.add(tok(rng), parent, 0.5f); };
  switch (kind) {
    case DraftKind::drawn:
    case DraftKind::garbage_drawn:
    case DraftKind::liar: {
      const double sharp = kind == DraftKind::garbage_drawn ? 8.0 : 1.0;  // garbage: very peaked, unlike p
      drawn_node(-1, sharp);
      picked_node(-1);
      drawn_node(0, sharp);
      picked_node(0);
      drawn_node(2, sharp);
      break;
    }
    case DraftKind::picked:
    case DraftKind::garbage_picks:
      picked_node(-1);
      picked_node(-1);
      picked_node(0);
      picked_node(2);
      picked_node(1);
      break;
  }
  return t;
}

SamplingSettings settings_with(double temperature, std::int64_t top_k, double repeat_penalty) {
  SamplingSettings s;
  s.temperature = temperature;
  s.top_k = top_k;
  s.top_p = 1.0;
  s.min_p = 0.0;
  s.repeat_penalty = repeat_penalty;
  s.repeat_last_n = 4;
  s.presence_penalty = 0.2;
  return s;
}

// Chi-square of the first two emitted tokens against the exact joint distribution; returns
// {statistic, critical value}.
std::pair<double, double> chi_square(DraftKind kind, const SamplingSettings& settings) {
  const std::vector<TokenId> ctx = {1, 4, 2};
  std::map<std::pair<TokenId, TokenId>, int> counts;
  for (int trial = 0; trial < kTrials; ++trial) {
    SamplingSettings s = settings;
    s.seed = trial + 1;
    Sampler sampler(s);
    std::mt19937 rng(static_cast<unsigned>(trial * 7 + 3));
    const DraftTree draft = propose(kind, rng);
    TokenTree tree;
    const DraftTree* one = &draft;
    tree.build(std::span(&one, 1), TreeBudget{64, 64}, V);
    // Row 0: after the context; row 1 + i: after node i's path.
    std::vector<float> logits;
    for (std::int32_t r = -1; r < static_cast<std::int32_t>(tree.size()); ++r) {
      std::vector<TokenId> h = ctx, path;
      for (std::int32_t n = r; n >= 0; n = tree.parent(static_cast<std::size_t>(n)))
        path.insert(path.begin(), tree.token(static_cast<std::size_t>(n)));
      h.insert(h.end(), path.begin(), path.end());
      const auto l = target_logits(h);
      logits.insert(logits.end(), l.begin(), l.end());
    }
    std::vector<TokenId> history = ctx;
    const WalkResult w = walk_tree(tree, logits, V, sampler, history);
    std::vector<TokenId> emitted;
    for (std::int32_t n : w.path) emitted.push_back(tree.token(static_cast<std::size_t>(n)));
    emitted.push_back(w.next);
    if (emitted.size() < 2) {
      std::vector<TokenId> h = ctx;
      h.push_back(emitted[0]);
      emitted.push_back(sampler.sample(target_logits(h), h));
    }
    ++counts[{emitted[0], emitted[1]}];
  }
  // Expected counts from the exact distribution (the sampler's own, penalties included); cells
  // expecting fewer than 5 are pooled.
  const Sampler exact(settings);
  const auto p1 = exact.distribution(target_logits(ctx), ctx);
  double chi2 = 0, pooled_e = 0;
  int pooled_o = 0, bins = 0;
  for (TokenId a = 0; a < static_cast<TokenId>(V); ++a) {
    std::vector<TokenId> h = ctx;
    h.push_back(a);
    const auto p2 = exact.distribution(target_logits(h), h);
    for (TokenId b = 0; b < static_cast<TokenId>(V); ++b) {
      const double e = kTrials * double(p1[a]) * double(p2[b]);
      const int o = counts.count({a, b}) ? counts[{a, b}] : 0;
      if (e == 0) {
        EXPECT_EQ(o, 0) << "a token with probability 0 was emitted: " << a << " " << b;
        continue;
      }
      if (e < 5) {
        pooled_e += e;
        pooled_o += o;
        continue;
      }
      chi2 += (o - e) * (o - e) / e;
      ++bins;
    }
  }
  if (pooled_e > 0) chi2 += (pooled_o - pooled_e) * (pooled_o - pooled_e) / pooled_e, ++bins;
  const double k = bins - 1;
  const double crit = k * std::pow(1 - 2 / (9 * k) + kZ * std::sqrt(2 / (9 * k)), 3);
  return {chi2, crit};
}

struct Case {
  const char* name;
  DraftKind kind;
};

class WalkIsLossless : public ::testing::TestWithParam<Case> {};

}  // namespace

TEST_P(WalkIsLossless, FirstTwoTokensFollowTheTargetAtTemperatureOne) {
  const auto [chi2, crit] = chi_square(GetParam().kind, settings_with(1.0, 0, 1.5));
  EXPECT_LT(chi2, crit) << GetParam().name;
}

TEST_P(WalkIsLossless, FirstTwoTokensFollowTheTargetWithTopKAndLowTemperature) {
  const auto [chi2, crit] = chi_square(GetParam().kind, settings_with(0.7, 4, 1.2));
  EXPECT_LT(chi2, crit) << GetParam().name;
}

INSTANTIATE_TEST_SUITE_P(speculative, WalkIsLossless,
                         ::testing::Values(Case{"drawn", DraftKind::drawn}, Case{"picked", DraftKind::picked},
                                           Case{"garbage_picks", DraftKind::garbage_picks},
                                           Case{"garbage_drawn", DraftKind::garbage_drawn}),
                         [](const auto& info) { return std::string(info.param.name); });

// The statistic has the power to see a drafter that lies about where its token came from.
TEST(WalkIsLossless, ChiSquareCatchesADrafterThatLiesAboutItsDistribution) {
  const auto [chi2, crit] = chi_square(DraftKind::liar, settings_with(1.0, 0, 1.0));
  EXPECT_GT(chi2, crit);
}

TEST(WalkGreedy, FollowsTheArgmaxPathAndEmitsTheTargetsNextToken) {
  // Rows: after the pending token argmax 3; after node "3" argmax 5; after "3 5" argmax 1.
  auto row = [](TokenId best) {
    std::vector<float> l(V, 0.0f);
    l[static_cast<std::size_t>(best)] = 2.0f;
    return l;
  };
  DraftTree d;
  d.add(2, -1);  // 0: wrong sibling
  d.add(3, -1);  // 1: right
  d.add(5, 1);   // 2: right
  d.add(4, 2);   // 3: wrong (target says 1)
  TokenTree tree;
  const DraftTree* one = &d;
  tree.build(std::span(&one, 1), TreeBudget{64, 64}, V);
  std::vector<float> logits;
  for (TokenId best : {3, 0, 5, 1, 0}) {  // rows: pending, node 0..3
    const auto l = row(best);
    logits.insert(logits.end(), l.begin(), l.end());
  }
  Sampler greedy(settings_with(0.0, 0, 1.0));
  std::vector<TokenId> history = {0};
  const WalkResult w = walk_tree(tree, logits, V, greedy, history);
  EXPECT_EQ(w.path, (std::vector<std::int32_t>{1, 2}));
  EXPECT_EQ(w.next, 1);
  EXPECT_EQ(history, (std::vector<TokenId>{0, 3, 5}));
}

// A sampler with nothing added to the logits reads each row's argmax alone: the walk over the
// backend's greedy ids (walk_tree_argmax) keeps the same path and next token as the walk over the
// rows they came from, ties included (the lowest id wins on both sides).
TEST(WalkGreedy, ArgmaxIdsGiveTheWalkOfTheirLogits) {
  SamplingSettings plain = settings_with(0.0, 0, 1.0);
  plain.presence_penalty = 0.0;
  Sampler greedy(plain);
  ASSERT_TRUE(greedy.plain_argmax());
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> tok(0, V - 1), level(0, 2);
  int descended = 0;
  for (int trial = 0; trial < 500; ++trial) {
    DraftTree d;
    for (int i = 0; i < 8; ++i) d.add(tok(rng), i == 0 ? -1 : std::uniform_int_distribution<int>(-1, i - 1)(rng));
    TokenTree tree;
    const DraftTree* one = &d;
    tree.build(std::span(&one, 1), TreeBudget{64, 64}, V);
    // Coarse logits (three levels): ties are common.
    std::vector<float> logits((tree.size() + 1) * V);
    for (float& x : logits) x = static_cast<float>(level(rng));
    std::vector<TokenId> ids(tree.size() + 1);
    for (std::size_t r = 0; r < ids.size(); ++r)
      ids[r] = static_cast<TokenId>(std::max_element(logits.begin() + r * V, logits.begin() + (r + 1) * V) -
                                    (logits.begin() + r * V));  // the first largest: the lowest id
    std::vector<TokenId> h1 = {0}, h2 = {0};
    const WalkResult a = walk_tree(tree, logits, V, greedy, h1);
    const WalkResult b = walk_tree_argmax(tree, ids, h2);
    EXPECT_EQ(a.path, b.path) << trial;
    EXPECT_EQ(a.next, b.next) << trial;
    EXPECT_EQ(h1, h2) << trial;
    descended += !a.path.empty();
  }
  EXPECT_GT(descended, 50) << "too few walks went into the tree to test anything";
}

// A chain that keeps at most top_k tokens reads each row's k best candidates alone: the walk over
// them (walk_tree_candidates, k of each row's stride used) keeps the same path, next token and
// randomness as the walk over the rows, drafts tested by rejection and matched drafts alike.
TEST(WalkSampled, CandidatesGiveTheWalkOfTheirLogits) {
  std::mt19937 rng(12);
  std::uniform_int_distribution<int> level(0, 3);
  const DraftKind kinds[] = {DraftKind::drawn, DraftKind::picked, DraftKind::garbage_drawn};
  int descended = 0, rejected = 0;
  for (std::int64_t top_k : {1, 2, 3, 5})
    for (int trial = 0; trial < 300; ++trial) {
      SamplingSettings s = settings_with(trial % 3 == 0 ? 0.5 : 1.0, top_k, 1.0);
      s.presence_penalty = 0.0;
      s.top_p = trial % 2 ? 1.0 : 0.8;
      s.seed = trial + 100 * top_k;
      Sampler full(s), cand(s);
      const std::uint32_t k = cand.candidates_needed(V);
      ASSERT_EQ(k, static_cast<std::uint32_t>(top_k));
      const DraftTree draft = propose(kinds[trial % 3], rng);
      TokenTree tree;
      const DraftTree* one = &draft;
      tree.build(std::span(&one, 1), TreeBudget{64, 64}, V);
      // Coarse logits (four levels): ties across the cut are common.
      std::vector<float> logits((tree.size() + 1) * V);
      for (float& x : logits) x = static_cast<float>(level(rng));
      // Each row's k + 1 best (the pass's stride), best first, the lower id among equal ones.
      const std::uint32_t stride = k + 1;
      std::vector<TokenId> ids;
      std::vector<float> values;
      for (std::size_t r = 0; r <= tree.size(); ++r) {
        std::vector<TokenId> order(V);
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(),
                         [&](TokenId a, TokenId b) { return logits[r * V + a] > logits[r * V + b]; });
        for (std::uint32_t i = 0; i < stride; ++i) {
          ids.push_back(order[i]);
          values.push_back(logits[r * V + order[i]]);
        }
      }
      std::vector<TokenId> h1 = {0}, h2 = {0};
      const WalkResult a = walk_tree(tree, logits, V, full, h1);
      const WalkResult b = walk_tree_candidates(tree, ids, values, stride, k, cand, h2);
      ASSERT_EQ(a.path, b.path) << "top_k " << top_k << " trial " << trial;
      ASSERT_EQ(a.next, b.next) << "top_k " << top_k << " trial " << trial;
      ASSERT_EQ(h1, h2);
      ASSERT_EQ(full.next_bits(), cand.next_bits()) << "the same randomness consumed";
      descended += !a.path.empty();
      // A drawn first child that is not on the path was rejected (the residual drew the token).
      const auto kids = tree.children(-1);
      for (std::int32_t c : kids)
        if (tree.distribution(static_cast<std::size_t>(c)) && (a.path.empty() || a.path[0] != c)) ++rejected;
    }
  EXPECT_GT(descended, 200) << "too few walks went into the tree to test anything";
  EXPECT_GT(rejected, 100) << "too few rejections to test the residual draw";
}

TEST(WalkGreedy, OnlyGreedyWithNothingAddedToTheLogitsIsPlainArgmax) {
  SamplingSettings s = settings_with(0.0, 0, 1.0);
  s.presence_penalty = 0.0;
  EXPECT_TRUE(Sampler(s).plain_argmax());
  s.repeat_penalty = 1.1;
  EXPECT_FALSE(Sampler(s).plain_argmax()) << "a penalty changes the logits";
  s.repeat_last_n = 0;
  EXPECT_TRUE(Sampler(s).plain_argmax()) << "a penalty over no tokens changes nothing";
  s.repeat_last_n = 4;
  s.repeat_penalty = 1.0;
  s.presence_penalty = 0.5;
  EXPECT_FALSE(Sampler(s).plain_argmax());
  s.presence_penalty = 0.0;
  s.logit_bias = {{3, 1.0f}};
  EXPECT_FALSE(Sampler(s).plain_argmax()) << "a logit bias changes the logits";
  s.logit_bias.clear();
  s.temperature = 0.7;
  EXPECT_FALSE(Sampler(s).plain_argmax()) << "sampling draws from the whole row";
}
