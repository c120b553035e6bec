// What one block pass offers the tree: for each depth d (block slot d), the slot's candidate
// tokens and, after each possible parent, the children worth proposing with their probabilities.
// Plain DFlash ranks a slot's candidates by its own softmax, the same after every parent. The
// DFlash2 selector (tools/zoo/dflash.py, selector_scores) re-scores the slot's top candidates b
// after the parent's token a:
//   score(a, b) = logit[b] + sum_r prev[a][r] * gate[r] * next[b][r],   gate = selector_hidden(slot's normed hidden)
// and a child's q is the candidates' share of the slot's softmax times the softmax of the scores
// over the candidates: the selector moves probability among the top candidates, not onto others.
#pragma once

#include <cstdint>
#include <vector>

#include "top_ids.hpp"

namespace graft::dflash2 {

// Children of one parent, best first: candidate indices into the slot's tokens, and their q.
struct Ranked {
  std::vector<std::uint32_t> index;
  std::vector<float> q;
};

struct BlockChoices {
  std::vector<std::vector<std::int32_t>> tokens;  // [depth - 1][candidate]
  // [depth - 1][parent]: the parent is the index of its candidate at depth - 1 (depth 1: the
  // anchor, parent 0); a single list is shared by every parent.
  std::vector<std::vector<Ranked>> children;

  std::uint32_t depth() const noexcept { return static_cast<std::uint32_t>(tokens.size()); }
  const Ranked& after(std::uint32_t depth, std::uint32_t parent) const {
    const auto& c = children[depth - 1];
    return c.size() == 1 ? c[0] : c[parent];
  }
};

using drafters::top_ids;  // plugins/drafters/common

// Plain DFlash: logits [n_slots][n_vocab]; each slot's top_k by probability.
BlockChoices plain_choices(const float* logits, std::uint32_t n_vocab, std::uint32_t n_slots, std::uint32_t top_k);

// The selector's rows for one block, host f32. With K = candidates per slot (`tokens` of each
// slot, from top_ids of its logits):
//   gate [n_slots][rank];
//   prev [1 + (n_slots - 1) K][rank]: the anchor's row, then slot 1's candidates', slot 2's, ...
//   next [n_slots K][rank]: slot 1's candidates', slot 2's, ...
struct SelectorRows {
  std::uint32_t rank = 0;
  const float* gate = nullptr;
  const float* prev = nullptr;
  const float* next = nullptr;
};

// DFlash2: candidates [n_slots][K] (top_ids of each slot's logits); each parent's top_k by score.
BlockChoices selector_choices(const float* logits, std::uint32_t n_vocab,
                              const std::vector<std::vector<std::int32_t>>& candidates, const SelectorRows& rows,
                              std::uint32_t top_k);

// The best-scoring chain (each slot's first child after the previous pick): the selector walk,
// or plain argmax; tokens of depth 1..n.
std::vector<std::int32_t> best_chain(const BlockChoices& choices);

}  // namespace graft::dflash2
