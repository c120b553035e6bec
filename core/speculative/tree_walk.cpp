#include "speculative/tree_walk.hpp"

#include <algorithm>

namespace graft {

namespace {

// The target drew y at `node`: the walk moves to the child with token y (never `skip`, a child
// already tested by rejection) and returns true, or ends with y as the target's own token.
bool descend(const TokenTree& tree, std::int32_t& node, TokenId y, std::int32_t skip, WalkResult& r,
             std::vector<TokenId>& history) {
  const auto kids = tree.children(node);
  const auto hit = std::find_if(kids.begin(), kids.end(), [&](std::int32_t c) {
    return c != skip && tree.token(static_cast<std::size_t>(c)) == y;
  });
  if (hit == kids.end()) {
    r.next = y;
    return false;
  }
  r.path.push_back(*hit);
  history.push_back(y);
  node = *hit;
  return true;
}

}  // namespace

namespace {

// The walk over the target's rows as `distribution(node)` (the chain's distribution after node:
// what rejection tests a drawn child against) and `sample(node)` (what plain decoding draws there).
template <class Distribution, class Sample>
WalkResult walk(const TokenTree& tree, Sampler& sampler, std::vector<TokenId>& history, Distribution distribution,
                Sample sample) {
  WalkResult r;
  std::vector<float> residual;
  for (std::int32_t node = -1;;) {
    const auto kids = tree.children(node);
    // The child to test by rejection: one drawn at random (token_tree keeps at most one per node).
    std::int32_t drawn = -1;
    if (!sampler.greedy())
      for (std::int32_t c : kids)
        if (tree.distribution(static_cast<std::size_t>(c))) drawn = c;
    TokenId y;
    if (drawn >= 0) {
      const auto d = static_cast<std::size_t>(drawn);
      const float* q = tree.distribution(d);
      const SparseDistribution p = distribution(node);
      const TokenId x = tree.token(d);
      // Accept x with probability min(1, p(x) / q(x)).
      if (sampler.next_uniform() * q[x] < p.at(x)) {
        r.path.push_back(drawn);
        history.push_back(x);
        node = drawn;
        continue;
      }
      // Rejected: the target's token comes from the residual max(0, p - q) (x has none of it),
      // which is zero wherever p is: its entries in p's id order, summed and drawn as a whole
      // vocabulary's would be.
      residual.resize(p.ids.size());
      double mass = 0;
      for (std::size_t i = 0; i < p.ids.size(); ++i) mass += residual[i] = std::max(0.0f, p.p[i] - q[p.ids[i]]);
      // p == q up to rounding leaves no residual (and rejection had probability ~0): draw from p.
      const TokenId i = draw_token(mass > 0 ? std::span<const float>(residual) : std::span<const float>(p.p),
                                   sampler.next_bits());
      y = p.ids[static_cast<std::size_t>(i)];
    } else {
      y = sample(node);  // what plain decoding draws here, bit for bit
    }
    if (!descend(tree, node, y, drawn, r, history)) return r;
  }
}

// A whole row's distribution as its non-zero entries, in id order.
SparseDistribution non_zero(const std::vector<float>& dense) {
  SparseDistribution s;
  for (std::size_t v = 0; v < dense.size(); ++v)
    if (dense[v] > 0) {
      s.ids.push_back(static_cast<TokenId>(v));
      s.p.push_back(dense[v]);
    }
  return s;
}

}  // namespace

WalkResult walk_tree(const TokenTree& tree, std::span<const float> logits, std::uint32_t n_vocab, Sampler& sampler,
                     std::vector<TokenId>& history) {
  const auto row = [&](std::int32_t node) {
    return logits.subspan(static_cast<std::size_t>(node + 1) * n_vocab, n_vocab);
  };
  return walk(
      tree, sampler, history, [&](std::int32_t node) { return non_zero(sampler.distribution(row(node), history)); },
      [&](std::int32_t node) { return sampler.sample(row(node), history); });
}

WalkResult walk_tree_candidates(const TokenTree& tree, std::span<const TokenId> ids, std::span<const float> logits,
                                std::uint32_t stride, std::uint32_t k, Sampler& sampler,
                                std::vector<TokenId>& history) {
  // Row node + 1's first k candidates.
  const auto row_ids = [&](std::int32_t node) { return ids.subspan(static_cast<std::size_t>(node + 1) * stride, k); };
  const auto row_logits = [&](std::int32_t node) {
    return logits.subspan(static_cast<std::size_t>(node + 1) * stride, k);
  };
  return walk(
      tree, sampler, history,
      [&](std::int32_t node) { return sampler.candidate_distribution(row_ids(node), row_logits(node)); },
      [&](std::int32_t node) { return sampler.sample_candidates(row_ids(node), row_logits(node)); });
}

WalkResult walk_tree_argmax(const TokenTree& tree, std::span<const TokenId> ids, std::vector<TokenId>& history) {
  WalkResult r;
  std::int32_t node = -1;
  while (descend(tree, node, ids[static_cast<std::size_t>(node + 1)], -1, r, history)) {
  }
  return r;
}

}  // namespace graft
