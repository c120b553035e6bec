// The dflash2 drafter's host-side parts, without a model: the DFlash2 causal convolution, the
// selector's re-scoring, the best-first tree and the adaptive block policy. The block pass itself
// is checked against the PyTorch fixtures in tests/speculative/zoo_dflash2_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "best_first_tree.hpp"
#include "block_choices.hpp"
#include "block_policy.hpp"
#include "causal_conv.hpp"

using namespace graft;
using namespace graft::dflash2;

TEST(Dflash2Conv, EachRowMixesItselfAndTheRowsBeforeItWithBasePlusGroupCoefficients) {
  // 4 channels in groups of 2, kernel 2, 3 rows.
  const ConvShape s{4, 2, 2};
  ASSERT_EQ(s.dyn_width(), 8u);  // [side 2][tap 2][group 2]
  const float in[3][4] = {{1, 2, 3, 4}, {0.5f, -1, 2, 0}, {-2, 1, 0.25f, 1}};
  // base[side][tap][channel]
  float base[2][2][4] = {{{1, 1, 1, 1}, {0.5f, 0.5f, 0, 0}}, {{2, 0, 1, 0}, {0, 0, 0, 1}}};
  // dyn[row][side][tap][group]
  float dyn[3][2][2][2] = {};
  dyn[1][0][0][1] = 0.5f;   // row 1, side 0, tap 0, group 1 (channels 2, 3)
  dyn[2][0][1][0] = -1.0f;  // row 2, side 0, tap 1, group 0 (channels 0, 1)
  dyn[2][1][0][0] = 1.0f;   // side 1 only
  float out[3][4];
  causal_conv(s, 0, 3, &in[0][0], &dyn[0][0][0][0], &base[0][0][0], &out[0][0]);
  // Row 0 has no row before it: base tap 0 only.
  EXPECT_EQ(out[0][0], 1.0f);
  EXPECT_EQ(out[0][3], 4.0f);
  // Row 1: channel 0 = 1 * 0.5 + 0.5 * 1; channel 2 = (1 + 0.5) * 2 + 0 * 3.
  EXPECT_FLOAT_EQ(out[1][0], 1.0f);
  EXPECT_FLOAT_EQ(out[1][2], 3.0f);
  EXPECT_FLOAT_EQ(out[1][3], 0.0f);
  // Row 2: channel 1 = 1 * 1 + (0.5 - 1) * (-1) = 1.5; channel 3 = 1 * 1 + 0 * 0.
  EXPECT_FLOAT_EQ(out[2][0], -2.0f + (0.5f - 1.0f) * 0.5f);
  EXPECT_FLOAT_EQ(out[2][1], 1.5f);
  EXPECT_FLOAT_EQ(out[2][3], 1.0f);
  // Side 1 reads its own half of dyn and base.
  causal_conv(s, 1, 3, &in[0][0], &dyn[0][0][0][0], &base[0][0][0], &out[0][0]);
  EXPECT_FLOAT_EQ(out[0][0], 2.0f);
  EXPECT_FLOAT_EQ(out[0][1], 0.0f);
  EXPECT_FLOAT_EQ(out[1][3], 4.0f);        // tap 1 of channel 3 reads row 0
  EXPECT_FLOAT_EQ(out[2][0], (2 + 1) * -2.0f);  // row 2, group 0: base 2 + dyn 1
}

namespace {

// Logits for 2 slots over a 6-token vocabulary.
std::vector<float> two_slots() {
  return {/* slot 1 */ 3.0f, 2.9f, 0.0f, -1.0f, 1.0f, -5.0f,
          /* slot 2 */ 0.0f, 0.5f, 2.0f, 1.9f, -3.0f, 1.0f};
}

}  // namespace

TEST(Dflash2Choices, PlainChoicesAreEachSlotsTopTokensByProbability) {
  const auto logits = two_slots();
  const BlockChoices c = plain_choices(logits.data(), 6, 2, 3);
  ASSERT_EQ(c.depth(), 2u);
  EXPECT_EQ(c.tokens[0], (std::vector<std::int32_t>{0, 1, 4}));
  EXPECT_EQ(c.tokens[1], (std::vector<std::int32_t>{2, 3, 5}));
  // The same children after any parent, probabilities from the whole row's softmax.
  double z = 0;
  for (int v = 0; v < 6; ++v) z += std::exp(double(logits[v]));
  EXPECT_NEAR(c.after(1, 0).q[0], std::exp(3.0) / z, 1e-6);
  EXPECT_EQ(&c.after(2, 0), &c.after(2, 2));
  EXPECT_EQ(best_chain(c), (std::vector<std::int32_t>{0, 2}));
}

TEST(Dflash2Choices, ProbabilitiesHoldOnWideRowsAndOddLengths) {
  // 37 logits (not a multiple of the 8 summing lanes), spread over 60 and then over 200 nats.
  for (const float spread : {60.0f, 200.0f}) {
    std::vector<float> row(37);
    for (std::size_t i = 0; i < row.size(); ++i) row[i] = 3.0f - spread * float(i % 5) / 4 + 0.01f * float(i);
    double z = 0;
    const float mx = *std::max_element(row.begin(), row.end());
    for (float v : row) z += std::exp(double(v) - mx);
    const BlockChoices c = plain_choices(row.data(), 37, 1, 3);
    ASSERT_EQ(c.after(1, 0).q.size(), 3u) << spread;
    for (std::size_t k = 0; k < 3; ++k) {
      const double want = std::exp(double(row[c.tokens[0][k]]) - mx) / z;
      EXPECT_NEAR(c.after(1, 0).q[k], want, 1e-6 * want) << "spread " << spread << " rank " << k;
    }
  }
}

TEST(Dflash2Choices, TheSelectorReordersCandidatesByTheirPredecessor) {
  const auto logits = two_slots();
  const std::vector<std::vector<std::int32_t>> cand = {top_ids(logits.data(), 6, 3), top_ids(logits.data() + 6, 6, 3)};
  ASSERT_EQ(cand[1], (std::vector<std::int32_t>{2, 3, 5}));
  // Rank 1: score(a, b) = logit[b] + prev[a] * gate * next[b].
  const float gate[2] = {1.0f, 2.0f};
  // prev rows: the anchor, then slot 1's candidates 0, 1, 4.
  const float prev[4] = {1.0f, 0.0f, 1.0f, 0.0f};
  // next rows: slot 1's candidates, then slot 2's 2, 3, 5. After the anchor token 1 gains
  // 1 * 1 * 0.2 and passes token 0; after token 1 (prev 1, gate 2), token 3 gains 2 * 0.5 = 1 and
  // passes token 2.
  const float next[6] = {0, 0.2f, 0, 0.0f, 0.5f, 0.0f};
  const SelectorRows rows{1, gate, prev, next};
  const BlockChoices c = selector_choices(logits.data(), 6, cand, rows, 2);
  // After the anchor: candidate 1 (token 1) first, cut to top_k.
  EXPECT_EQ(c.after(1, 0).index, (std::vector<std::uint32_t>{1, 0}));
  // After token 0 (candidate 0): plain order; after token 1 (candidate 1): 3 before 2.
  EXPECT_EQ(c.after(2, 0).index, (std::vector<std::uint32_t>{0, 1}));
  EXPECT_EQ(c.after(2, 1).index, (std::vector<std::uint32_t>{1, 0}));
  // q: the candidates' softmax mass, shared by the selector's softmax over their scores.
  double z = 0, mass = 0;
  for (int v = 0; v < 6; ++v) z += std::exp(double(logits[6 + v]));
  for (int v : {2, 3, 5}) mass += std::exp(double(logits[6 + v])) / z;
  const double s3 = 1.9 + 1.0, s2 = 2.0, s5 = 1.0;
  const double zs = std::exp(s3) + std::exp(s2) + std::exp(s5);
  EXPECT_NEAR(c.after(2, 1).q[0], mass * std::exp(s3) / zs, 1e-6);
  EXPECT_NEAR(c.after(2, 1).q[1], mass * std::exp(s2) / zs, 1e-6);
  // The walk: slot 1's best after the anchor (token 1), then slot 2's best after it (token 3),
  // where plain argmax drafts 0, 2.
  EXPECT_EQ(best_chain(c), (std::vector<std::int32_t>{1, 3}));
}

namespace {

// Choices with the given q per depth (one shared list each), tokens 10 * depth + rank.
BlockChoices shared_choices(const std::vector<std::vector<float>>& q) {
  BlockChoices c;
  for (std::size_t d = 0; d < q.size(); ++d) {
    Ranked r;
    std::vector<std::int32_t> tokens;
    for (std::size_t i = 0; i < q[d].size(); ++i) {
      r.index.push_back(static_cast<std::uint32_t>(i));
      r.q.push_back(q[d][i]);
      tokens.push_back(static_cast<std::int32_t>(10 * (d + 1) + i));
    }
    c.tokens.push_back(tokens);
    c.children.push_back({r});
  }
  return c;
}

}  // namespace

TEST(Dflash2Tree, NodesComeBestFirstByPathProbability) {
  const BlockChoices c = shared_choices({{0.6f, 0.3f}, {0.5f, 0.4f}, {0.9f}});
  DraftTree t;
  best_first_tree(c, 5, 8, t);
  ASSERT_EQ(t.size(), 5u);
  ASSERT_EQ(t.invalid(100), nullptr) << t.invalid(100);
  // Paths: 10 (.6), 10-20 (.3), 11 (.3), 10-20-30 (.27), 10-21 (.24), 11-20 (.15), ...
  EXPECT_EQ(t.tokens, (std::vector<std::int32_t>{10, 20, 11, 30, 21}));
  EXPECT_EQ(t.parents, (std::vector<std::int32_t>{-1, 0, -1, 1, 0}));
  EXPECT_FLOAT_EQ(t.q[3], 0.9f);  // q is the node's own probability, not the path's
  // The depth limit holds, and the budget is filled with shallower nodes instead.
  DraftTree shallow;
  best_first_tree(c, 5, 2, shallow);
  for (std::size_t i = 0; i < shallow.size(); ++i) EXPECT_LE(shallow.depth(i), 2u);
  EXPECT_EQ(shallow.size(), 5u);  // 10, 20, 11, 21, 11-20
  DraftTree none;
  best_first_tree(c, 0, 8, none);
  EXPECT_EQ(none.size(), 0u);
}

TEST(Dflash2Policy, LongBlockUntilItsLastSlotsStopPayingThenProbesAndKeepsItOnlyWhenFaster) {
  PolicyOptions o;
  o.long_rows = 8;
  o.short_rows = 4;
  o.window = 4;
  o.probe_every = 12;
  BlockPolicy p(o);
  EXPECT_EQ(p.rows(), 8u);
  // Rounds that accept 4 drafts (5 tokens) use the long block's extra slots: it stays.
  for (int i = 0; i < 8; ++i) p.round(5, 0.01);
  EXPECT_EQ(p.rows(), 8u);
  // A window in which no round accepted more than 3 drafts: short block.
  p.round(2, 0.01);
  p.round(2, 0.01);
  p.round(4, 0.01);
  p.round(1, 0.01);
  EXPECT_EQ(p.mode(), BlockPolicy::Mode::short_block);
  EXPECT_EQ(p.rows(), 4u);
  // probe_every short rounds (at 2 tokens per 10 ms: 200 tokens/s), then a probe window.
  for (int i = 0; i < 12; ++i) p.round(2, 0.01);
  EXPECT_EQ(p.mode(), BlockPolicy::Mode::probe);
  EXPECT_EQ(p.rows(), 8u);
  // The probe is slower (100 tokens/s): back to the short block.
  for (int i = 0; i < 4; ++i) p.round(2, 0.02);
  EXPECT_EQ(p.mode(), BlockPolicy::Mode::short_block);
  for (int i = 0; i < 12; ++i) p.round(2, 0.01);
  ASSERT_EQ(p.mode(), BlockPolicy::Mode::probe);
  // This probe is faster (300 tokens/s): the long block stays.
  for (int i = 0; i < 4; ++i) p.round(3, 0.01);
  EXPECT_EQ(p.mode(), BlockPolicy::Mode::long_block);
}

TEST(Dflash2Policy, ShortBlocksAcceptedWholeProbeEarlyAndNonAdaptiveNeverSwitches) {
  PolicyOptions o;
  o.long_rows = 8;
  o.short_rows = 4;
  o.window = 4;
  o.probe_every = 1000;
  BlockPolicy p(o);
  for (int i = 0; i < 4; ++i) p.round(1, 0.01);
  ASSERT_EQ(p.mode(), BlockPolicy::Mode::short_block);
  // Two windows in which every round accepted the whole short block (3 drafts + 1).
  for (int i = 0; i < 7; ++i) p.round(4, 0.01);
  EXPECT_EQ(p.mode(), BlockPolicy::Mode::short_block);
  p.round(4, 0.01);
  EXPECT_EQ(p.mode(), BlockPolicy::Mode::probe);

  o.adaptive = false;
  BlockPolicy fixed(o);
  for (int i = 0; i < 100; ++i) fixed.round(1, 0.01);
  EXPECT_EQ(fixed.rows(), 8u);
}
