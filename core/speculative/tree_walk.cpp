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

WalkResult walk_tree(const TokenTree& tree, std::span<const float> logits, std::uint32_t n_vocab, Sampler& sampler,
                     std::vector<TokenId>& history) {
  WalkResult r;
  std::vector<float> residual;
  for (std::int32_t node = -1;;) {
    const auto row = logits.subspan(static_cast<std::size_t>(node + 1) * n_vocab, n_vocab);
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
      std::vector<float> p = sampler.distribution(row, history);
      const TokenId x = tree.token(d);
      // Accept x with probability min(1, p(x) / q(x)).
      if (sampler.next_uniform() * q[x] < p[x]) {
        r.path.push_back(drawn);
        history.push_back(x);
        node = drawn;
        continue;
      }
      // Rejected: the target's token comes from the residual max(0, p - q) (x has none of it).
      residual.resize(n_vocab);
      double mass = 0;
      for (std::uint32_t v = 0; v < n_vocab; ++v) mass += residual[v] = std::max(0.0f, p[v] - q[v]);
      // p == q up to rounding leaves no residual (and rejection had probability ~0): draw from p.
      y = draw_token(mass > 0 ? std::span<const float>(residual) : std::span<const float>(p), sampler.next_bits());
    } else {
      y = sampler.sample(row, history);  // what plain decoding draws here, bit for bit
    }
    if (!descend(tree, node, y, drawn, r, history)) return r;
  }
}

WalkResult walk_tree_candidates(const TokenTree& tree, std::span<const TokenId> ids, std::span<const float> logits,
                                std::uint32_t stride, std::uint32_t k, Sampler& sampler,
                                std::vector<TokenId>& history) {
  WalkResult r;
  std::vector<float> residual;
  for (std::int32_t node = -1;;) {
    const auto at = static_cast<std::size_t>(node + 1) * stride;
    const auto row_ids = ids.subspan(at, k);
    const auto row_logits = logits.subspan(at, k);
    const auto kids = tree.children(node);
    std::int32_t drawn = -1;
    if (!sampler.greedy())
      for (std::int32_t c : kids)
        if (tree.distribution(static_cast<std::size_t>(c))) drawn = c;
    TokenId y;
    if (drawn >= 0) {
      // As walk_tree, with p held as its non-zero entries (increasing ids, like the dense walk's
      // order, so the sums and the draw are the same).
      const auto d = static_cast<std::size_t>(drawn);
      const float* q = tree.distribution(d);
      const SparseDistribution p = sampler.candidate_distribution(row_ids, row_logits);
      const TokenId x = tree.token(d);
      if (sampler.next_uniform() * q[x] < p.at(x)) {
        r.path.push_back(drawn);
        history.push_back(x);
        node = drawn;
        continue;
      }
      // The residual max(0, p - q) is zero wherever p is.
      residual.resize(p.ids.size());
      double mass = 0;
      for (std::size_t i = 0; i < p.ids.size(); ++i)
        mass += residual[i] = std::max(0.0f, p.p[i] - q[p.ids[i]]);
      const TokenId i = draw_token(mass > 0 ? std::span<const float>(residual) : std::span<const float>(p.p),
                                   sampler.next_bits());
      y = p.ids[static_cast<std::size_t>(i)];
    } else {
      y = sampler.sample_candidates(row_ids, row_logits);
    }
    if (!descend(tree, node, y, drawn, r, history)) return r;
  }
}

WalkResult walk_tree_argmax(const TokenTree& tree, std::span<const TokenId> ids, std::vector<TokenId>& history) {
  WalkResult r;
  std::int32_t node = -1;
  while (descend(tree, node, ids[static_cast<std::size_t>(node + 1)], -1, r, history)) {
  }
  return r;
}

}  // namespace graft
