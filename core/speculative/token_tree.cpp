#include "speculative/token_tree.hpp"

#include <algorithm>
#include <functional>
#include <numeric>

namespace graft {

void TokenTree::build(std::span<const DraftTree* const> trees, const TreeBudget& budget, std::uint32_t n_vocab,
                      const std::function<float(std::size_t, std::uint32_t, float)>& conditional) {
  // 1. The union of all trees as a trie over (parent, token), parents before children. Few
  // nodes per round: a linear search over a parent's children beats a map.
  cand_.clear();
  cand_of_.assign(trees.size(), {});
  std::vector<float> path;
  for (std::size_t d = 0; d < trees.size(); ++d) {
    const DraftTree& t = *trees[d];
    path.assign(t.size(), 0.0f);
    cand_of_[d].assign(t.size(), -1);
    for (std::size_t j = 0; j < t.size(); ++j) {
      const std::int32_t tp = t.parents[j];
      const std::int32_t parent = tp < 0 ? -1 : cand_of_[d][static_cast<std::size_t>(tp)];
      const std::uint32_t depth = parent < 0 ? 1 : cand_[static_cast<std::size_t>(parent)].depth + 1;
      path[j] = (tp < 0 ? 1.0f : path[static_cast<std::size_t>(tp)]) * (conditional ? conditional(d, depth, t.q[j]) : t.q[j]);
      std::int32_t c = -1;
      for (std::size_t k = 0; k < cand_.size(); ++k)
        if (cand_[k].parent == parent && cand_[k].token == t.tokens[j]) {
          c = static_cast<std::int32_t>(k);
          break;
        }
      if (c < 0) {
        c = static_cast<std::int32_t>(cand_.size());
        cand_.push_back(Cand{t.tokens[j], parent, depth, 0.0f, nullptr, true, 0, 0});
      }
      Cand& x = cand_[static_cast<std::size_t>(c)];
      x.score = std::max(x.score, path[j]);
      x.proposers |= std::uint64_t{1} << (d % 64);
      ++x.n_proposers;
      if (t.dist[j] >= 0)
        x.dist = t.distributions.data() + static_cast<std::size_t>(t.dist[j]) * n_vocab;
      else
        x.only_drawn = false;
      cand_of_[d][j] = c;
    }
  }

  // 2. The best max_nodes by score (ties: shallower, then earlier), within max_depth. A child's
  // score never exceeds its parent's and ties go to the shallower, so parents come first.
  std::vector<std::int32_t> order(cand_.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::int32_t a, std::int32_t b) {
    const Cand &x = cand_[static_cast<std::size_t>(a)], &y = cand_[static_cast<std::size_t>(b)];
    if (x.score != y.score) return x.score > y.score;
    return x.depth < y.depth;
  });
  std::vector<char> keep(cand_.size(), 0);
  selected_.clear();
  selected_scores_.clear();
  for (std::int32_t c : order) {
    if (selected_.size() >= budget.max_nodes) break;
    const Cand& x = cand_[static_cast<std::size_t>(c)];
    if (x.depth > budget.max_depth || (x.parent >= 0 && !keep[static_cast<std::size_t>(x.parent)])) continue;
    keep[static_cast<std::size_t>(c)] = 1;
    selected_.push_back(c);
    selected_scores_.push_back(x.score);
  }
  layout(selected_.size());
}

void TokenTree::cut(std::size_t n) { layout(std::min(n, selected_.size())); }

void TokenTree::layout(std::size_t n_keep) {
  // 3. Kept nodes renumbered in candidate order (parents first), children lists, and the first
  // drawn child of each node keeps its distribution.
  std::vector<char> keep(cand_.size(), 0);
  for (std::size_t i = 0; i < n_keep; ++i) keep[static_cast<std::size_t>(selected_[i])] = 1;
  tokens_.clear();
  parents_.clear();
  depth_.clear();
  score_.clear();
  dist_.clear();
  proposers_.clear();
  std::vector<std::int32_t> new_index(cand_.size(), -1);
  for (std::size_t c = 0; c < cand_.size(); ++c) {
    if (!keep[c]) continue;
    const Cand& x = cand_[c];
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
  from_drafter_.assign(cand_of_.size(), {});
  for (std::size_t d = 0; d < cand_of_.size(); ++d) {
    from_drafter_[d].resize(cand_of_[d].size());
    for (std::size_t j = 0; j < cand_of_[d].size(); ++j)
      from_drafter_[d][j] = new_index[static_cast<std::size_t>(cand_of_[d][j])];
  }
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
