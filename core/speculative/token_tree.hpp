// The one token tree a round verifies: every drafter's proposal merged (a node proposed by several
// drafters appears once), cut to the round's budget by path probability, and laid out as the
// verify pass wants it: row 0 the pending token, row 1 + i node i, positions n_past + depth and
// the ancestor mask (docs/speculative.md).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "graft/drafter.hpp"
#include "model/forward_batch.hpp"

namespace graft {

struct TreeBudget {
  std::uint32_t max_nodes = 0;
  std::uint32_t max_depth = 0;
};

class TokenTree {
 public:
  // Merges the drafters' trees (each valid for the vocabulary): nodes keyed by (parent, token);
  // a node's score is its best path probability (product of q along the path) over the drafters
  // that proposed it; the max_nodes best nodes are kept (ties: shallower, then earlier), which
  // always keeps a node's parent. A node keeps its drawn distribution only when one drafter alone
  // proposed it and no sibling before it carries one (rejection sampling tests one random child
  // per node; the others are matched).
  //
  // conditional (optional): conditional(d, depth, q) estimates how likely drafter d's node at that
  // depth with probability q is accepted when its parent is (fusion_model.hpp); given, a node's
  // score is the product of those along its path (its chance of acceptance) instead of the
  // product of q.
  void build(std::span<const DraftTree* const> trees, const TreeBudget& budget, std::uint32_t n_vocab,
             const std::function<float(std::size_t, std::uint32_t, float)>& conditional = {});
  // Keeps only the first n nodes the budget took (best first; parents always come before their
  // children there), without merging again: the round's policy chooses n from scores_best_first().
  void cut(std::size_t n);

  std::size_t size() const { return tokens_.size(); }
  bool empty() const { return tokens_.empty(); }
  TokenId token(std::size_t i) const { return tokens_[i]; }
  std::int32_t parent(std::size_t i) const { return parents_[i]; }
  std::uint32_t depth(std::size_t i) const { return depth_[i]; }
  float score(std::size_t i) const { return score_[i]; }
  // The scores of the nodes build() kept, best first: the order the budget took them in.
  std::span<const float> scores_best_first() const { return selected_scores_; }
  // The distribution node i's token was drawn from (n_vocab floats), or null.
  const float* distribution(std::size_t i) const { return dist_[i]; }
  // Children of node i (-1: of the pending token), in node order.
  std::span<const std::int32_t> children(std::int32_t i) const;
  // Node of drafter d's tree at index j, or -1 when the budget cut it.
  std::int32_t node_of(std::size_t d, std::size_t j) const { return from_drafter_[d][j]; }
  // Bit d set: drafter d proposed node i.
  std::uint64_t proposers(std::size_t i) const { return proposers_[i]; }

  // The verify pass's rows: [pending, node 0, node 1, ...].
  void verify_tokens(TokenId pending, std::vector<TokenId>& out) const;
  // RoPE positions of those rows: n_past, then n_past + depth.
  void verify_positions(std::uint32_t n_past, std::vector<std::int32_t>& out) const;
  // (n + 1) x (n + 1) ancestor mask over those rows: every row sees row 0, itself and its ancestors.
  void ancestor_mask(std::vector<std::uint8_t>& out) const;

 private:
  struct Cand {
    TokenId token;
    std::int32_t parent;
    std::uint32_t depth;
    float score;
    const float* dist;
    bool only_drawn;  // every proposer drew it from a distribution
    std::uint64_t proposers;
    int n_proposers;
  };
  // Lays out the first n selected candidates as the tree's nodes.
  void layout(std::size_t n);

  // The merge: every proposed node once, and the budget's choice in the order it chose them.
  std::vector<Cand> cand_;
  std::vector<std::vector<std::int32_t>> cand_of_;  // [drafter][its node] -> candidate
  std::vector<std::int32_t> selected_;
  std::vector<float> selected_scores_;
  // The laid-out tree.
  std::vector<TokenId> tokens_;
  std::vector<std::int32_t> parents_;
  std::vector<std::uint32_t> depth_;
  std::vector<float> score_;
  std::vector<const float*> dist_;
  std::vector<std::uint64_t> proposers_;
  std::vector<std::vector<std::int32_t>> from_drafter_;
  std::vector<std::int32_t> child_begin_, child_list_;  // CSR: children of node i-1 at [begin[i], begin[i+1])
};

}  // namespace graft
