#include "best_first_tree.hpp"

#include <algorithm>
#include <queue>
#include <vector>

namespace graft::dflash2 {

namespace {

// A node not yet taken: the rank-th child of `parent_node` (whose candidate at depth - 1 is
// parent_index), and the probability of the path through it.
struct Offer {
  double path = 0;
  double parent_path = 0;
  std::int32_t parent_node = -1;
  std::uint32_t parent_index = 0;
  std::uint32_t depth = 0;
  std::uint32_t rank = 0;
  std::uint64_t order = 0;  // offered order, for ties
};

struct Worse {
  bool operator()(const Offer& a, const Offer& b) const {
    return a.path != b.path ? a.path < b.path : a.order > b.order;
  }
};

}  // namespace

void best_first_tree(const BlockChoices& choices, std::uint32_t max_nodes, std::uint32_t max_depth, DraftTree& out) {
  const std::uint32_t depth = std::min(max_depth, choices.depth());
  if (depth == 0 || max_nodes == 0) return;
  std::priority_queue<Offer, std::vector<Offer>, Worse> heap;
  std::uint64_t order = 0;
  // The rank-th child after (parent_node, parent_index) at `d`, if it exists.
  auto offer = [&](std::int32_t parent_node, std::uint32_t parent_index, double parent_path, std::uint32_t d,
                   std::uint32_t rank) {
    if (d > depth) return;
    const Ranked& r = choices.after(d, parent_index);
    if (rank >= r.index.size()) return;
    heap.push(Offer{parent_path * r.q[rank], parent_path, parent_node, parent_index, d, rank, order++});
  };
  offer(-1, 0, 1.0, 1, 0);
  const std::size_t start = out.size();
  while (!heap.empty() && out.size() - start < max_nodes) {
    const Offer o = heap.top();
    heap.pop();
    const Ranked& r = choices.after(o.depth, o.parent_index);
    const std::uint32_t index = r.index[o.rank];
    const auto node = static_cast<std::int32_t>(out.size());
    out.add(choices.tokens[o.depth - 1][index], o.parent_node, r.q[o.rank]);
    offer(node, index, o.path, o.depth + 1, 0);
    offer(o.parent_node, o.parent_index, o.parent_path, o.depth, o.rank + 1);
  }
}

}  // namespace graft::dflash2
