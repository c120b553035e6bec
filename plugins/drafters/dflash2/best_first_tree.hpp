// A block's choices as a draft tree under the round's budget, best first by path probability
// (DDTree): the tree that holds the max_nodes most probable paths' nodes, where a path's
// probability is the product of its nodes' q. Lazy enumeration: popping a node offers its first
// child and its next sibling, so each node costs one heap operation and no subtree is scored
// before its parent is taken.
#pragma once

#include <cstdint>

#include "block_choices.hpp"
#include "graft/drafter.hpp"

namespace graft::dflash2 {

// Appends at most max_nodes nodes, none deeper than max_depth, to out (topological: a parent
// precedes its children). Equal path probabilities go to the node offered first.
void best_first_tree(const BlockChoices& choices, std::uint32_t max_nodes, std::uint32_t max_depth, DraftTree& out);

}  // namespace graft::dflash2
