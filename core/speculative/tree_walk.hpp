// Acceptance: which path of the verified token tree the target keeps, and its own next token.
// Lossless by construction (docs/speculative.md): at every node the next token is drawn from the
// target's distribution exactly as plain decoding draws it (the same Sampler call, penalties and
// all, over the history along the path), and the walk descends while that token is a child.
// Greedy decoding is the case where the draw is the argmax. A child the drafter drew at random
// from a distribution q is first tested by rejection (accept with min(1, p/q), else draw from the
// residual max(0, p - q)), which keeps more of such drafts; the rest are matched.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "sampling/sampler.hpp"
#include "speculative/token_tree.hpp"

namespace graft {

struct WalkResult {
  std::vector<std::int32_t> path;  // accepted nodes, root first
  TokenId next = 0;                // the target's own token after the path
};

// logits: (tree.size() + 1) rows of n_vocab (row 0 after the pending token, row 1 + i after node
// i). history: the committed tokens and the pending one; the walk appends the path to it.
WalkResult walk_tree(const TokenTree& tree, std::span<const float> logits, std::uint32_t n_vocab, Sampler& sampler,
                     std::vector<TokenId>& history);

// The same walk for a sampler with plain_argmax(): the target's token at each row is that row's
// greedy id, so ids (tree.size() + 1, row 0 after the pending token) is all it reads. Equal to
// walk_tree with such a sampler over the logits the ids came from.
WalkResult walk_tree_argmax(const TokenTree& tree, std::span<const TokenId> ids, std::vector<TokenId>& history);

// The same walk for a sampler with candidates_needed() == k: each row's k best (ids and logits,
// best first: ForwardOutput::candidate_ids / candidate_logits, (tree.size() + 1) x stride, a row's
// first k used) are all it reads. Equal to walk_tree with that sampler over the logits they came
// from, randomness included (the target gives no token outside a row's candidates any
// probability, so rejection and the residual need no other).
WalkResult walk_tree_candidates(const TokenTree& tree, std::span<const TokenId> ids, std::span<const float> logits,
                                std::uint32_t stride, std::uint32_t k, Sampler& sampler,
                                std::vector<TokenId>& history);

}  // namespace graft
