#include "speculative/token_tree.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <numeric>

namespace graft {

void TokenTree::build(std::span<const DraftTree* const> trees, const TreeBudget& budget, std::uint32_t n_vocab,
                      const std::function<float(std::size_t, std::uint32_t, float)>& conditional) {
  // 1. The union of all trees as a trie over (parent, token), parents before children.
  struct Cand {
    TokenId token;
    std::int32_t parent;
    std::uint32_t depth;
    float score;
    const float* dist;
    bool only_drawn;  // every proposer drew it from a distribution, and exactly one proposed it
    std::uint64_t proposers;
    int n_proposers;
  };
  std::vector<Cand> cand;
  std::map<std::pair<std::int32_t, TokenId>, std::int32_t> index;
  std::vector<std::vector<std::int32_t>> cand_of(trees.size());
  for (std::size_t d = 0; d < trees.size(); ++d) {
    const DraftTree& t = *trees[d];
    std::vector<float> path(t.size());
    cand_of[d].assign(t.size(), -1);
    for (std::size_t j = 0; j < t.size(); ++j) {
      const std::int32_t tp = t.parents[j];
      const std::int32_t parent = tp < 0 ? -1 : cand_of[d][static_cast<std::size_t>(tp)];
      const std::uint32_t depth = parent < 0 ? 1 : cand[static_cast<std::size_t>(parent)].depth + 1;
      path[j] = (tp < 0 ? 1.0f : path[static_cast<std::size_t>(tp)]) * (conditional ? conditional(d, depth, t.q[j]) : t.q[j]);
      auto [it, fresh] = index.try_emplace({parent, t.tokens[j]}, static_cast<std::int32_t>(cand.size()));
      if (fresh) cand.push_back(Cand{t.tokens[j], parent, depth, 0.0f, nullptr, true, 0, 0});
      Cand& c = cand[static_cast<std::size_t>(it->second)];
      c.score = std::max(c.score, path[j]);
      c.proposers |= std::uint64_t{1} << (d % 64);
      ++c.n_proposers;
      if (t.dist[j] >= 0)
        c.dist = t.distributions.data() + static_cast<std::size_t>(t.dist[j]) * n_vocab;
      else
        c.only_drawn = false;
      cand_of[d][j] = it->second;
    }
  }

  // 2. The best max_nodes by score (ties: shallower, then earlier), within max_depth. A child's
  // score never exceeds its parent's and ties go to the shallower, so parents come first.
  std::vector<std::int32_t> order(cand.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::int32_t a, std::int32_t b) {
    const Cand &x = cand[static_cast<std::size_t>(a)], &y = cand[static_cast<std::size_t>(b)];
    if (x.score != y.score) return x.score > y.score;
    return x.depth < y.depth;
  });
  std::vector<char> keep(cand.size(), 0);
  std::uint32_t kept = 0;
  for (std::int32_t c : order) {
    if (kept >= budget.max_nodes) break;
    const Cand& x = cand[static_cast<std::size_t>(c)];
    if (x.depth > budget.max_depth || (x.parent >= 0 && !keep[static_cast<std::size_t>(x.parent)])) continue;
    keep[static_cast<std::size_t>(c)] = 1;
    ++kept;
  }

  // 3. Kept nodes renumbered in candidate order (parents first), children lists, and the first
  // drawn child of each node keeps its distribution.
  tokens_.clear();
  parents_.clear();
  depth_.clear();
  score_.clear();
  dist_.clear();
  proposers_.clear();
  std::vector<std::int32_t> new_index(cand.size(), -1);
  for (std::size_t c = 0; c < cand.size(); ++c) {
    if (!keep[c]) continue;
    const Cand& x = cand[c];
    new_index[c] = static_cast<std::int32_t>(tokens_.size());
    tokens_.push_back(x.token);
    parents_.push_back(x.parent < 0 ? -1 : new_index[static_cast<std::size_t>(x.parent)]);
    depth_.push_back(x.depth);
    score_.push_back(x.score);
    dist_.push_back(x.only_drawn && x.n_proposers == 1 ? x.dist : nullptr);
    proposers_.push_back(x.proposers);
  }
  const std::size_t n = tokens_.size();
  child_begin_.assign(n + 2, 0);
  for (std::size_t i = 0; i < n; ++i) ++child_begin_[static_cast<std::size_t>(parents_[i] + 1) + 1];
  std::partial_sum(child_begin_.begin(), child_begin_.end(), child_begin_.begin());
  child_list_.assign(n, 0);
  std::vector<std::int32_t> fill(child_begin_.begin(), child_begin_.end() - 1);
  for (std::size_t i = 0; i < n; ++i)
    child_list_[static_cast<std::size_t>(fill[static_cast<std::size_t>(parents_[i] + 1)]++)] = static_cast<std::int32_t>(i);
  for (std::size_t p = 0; p + 1 < child_begin_.size(); ++p) {
    bool drawn_seen = false;
    for (std::int32_t k = child_begin_[p]; k < child_begin_[p + 1]; ++k) {
      const auto i = static_cast<std::size_t>(child_list_[static_cast<std::size_t>(k)]);
      if (dist_[i] && drawn_seen) dist_[i] = nullptr;
      drawn_seen = drawn_seen || dist_[i];
    }
  }
  from_drafter_.assign(trees.size(), {});
  for (std::size_t d = 0; d < trees.size(); ++d) {
    from_drafter_[d].resize(cand_of[d].size());
    for (std::size_t j = 0; j < cand_of[d].size(); ++j)
      from_drafter_[d][j] = new_index[static_cast<std::size_t>(cand_of[d][j])];
  }
}

std::vector<float> TokenTree::scores_best_first() const {
  std::vector<float> s = score_;
  std::sort(s.begin(), s.end(), std::greater<>());
  return s;
}

std::span<const std::int32_t> TokenTree::children(std::int32_t i) const {
  const auto p = static_cast<std::size_t>(i + 1);
  return std::span<const std::int32_t>(child_list_.data() + child_begin_[p],
                                       static_cast<std::size_t>(child_begin_[p + 1] - child_begin_[p]));
}

void TokenTree::verify_tokens(TokenId pending, std::vector<TokenId>& out) const {
  out.assign(1, pending);
  out.insert(out.end(), tokens_.begin(), tokens_.end());
}

void TokenTree::verify_positions(std::uint32_t n_past, std::vector<std::int32_t>& out) const {
  out.resize(tokens_.size() + 1);
  out[0] = static_cast<std::int32_t>(n_past);
  for (std::size_t i = 0; i < tokens_.size(); ++i) out[i + 1] = static_cast<std::int32_t>(n_past + depth_[i]);
}

void TokenTree::ancestor_mask(std::vector<std::uint8_t>& out) const {
  const std::size_t n = tokens_.size() + 1;
  out.assign(n * n, 0);
  for (std::size_t r = 0; r < n; ++r) {
    out[r * n] = 1;  // the pending token
    for (std::int32_t a = static_cast<std::int32_t>(r) - 1; a >= 0; a = parents_[static_cast<std::size_t>(a)])
      out[r * n + static_cast<std::size_t>(a) + 1] = 1;
  }
}

}  // namespace graft
