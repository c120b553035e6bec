#include "speculative/acceptance_model.hpp"

#include <algorithm>

namespace graft {

namespace {
constexpr double kPriorWeight = 2.0;  // pseudo-trials at rate q before any evidence
}

float AcceptanceModel::conditional(std::size_t d, float q) const {
  q = std::clamp(q, 0.0f, 1.0f);
  if (d >= bins_.size()) return q;
  const Bin& b = bins_[d][static_cast<std::size_t>(bin(q))];
  return static_cast<float>((b.accepted + kPriorWeight * q) / (b.trials + kPriorWeight));
}

void AcceptanceModel::learn(const TokenTree& tree, std::span<const DraftTree* const> trees,
                            std::span<const char> on_path) {
  for (std::size_t d = 0; d < trees.size() && d < bins_.size(); ++d)
    for (std::size_t j = 0; j < trees[d]->size(); ++j) {
      const std::int32_t i = tree.node_of(d, j);
      if (i < 0) continue;  // cut by the budget: never verified
      const std::int32_t parent = tree.parent(static_cast<std::size_t>(i));
      if (parent >= 0 && !on_path[static_cast<std::size_t>(parent)]) continue;  // its parent was rejected
      Bin& b = bins_[d][static_cast<std::size_t>(bin(trees[d]->q[j]))];
      b.trials += 1;
      b.accepted += on_path[static_cast<std::size_t>(i)] ? 1 : 0;
    }
}

}  // namespace graft
