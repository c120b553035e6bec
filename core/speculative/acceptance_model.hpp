// How likely the target is to accept a drafted node, learnt from this sequence's rounds: for each
// drafter, the rate at which its nodes were accepted when their parent was (the conditional
// acceptance), by the probability q the drafter gave the node, in ten bins. A node's chance is
// then its parent's chance times that rate, which tells a copied chain (ngram, q = 1, accepted
// almost always on repetitive text) from its runner-up siblings, and a confident MTP step from a
// doubtful one. Before any evidence a bin's rate is q itself.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "graft/drafter.hpp"
#include "speculative/token_tree.hpp"

namespace graft {

class AcceptanceModel {
 public:
  explicit AcceptanceModel(std::size_t n_drafters) : bins_(n_drafters) {}

  // P(accepted | parent accepted) for a node drafter d proposed with probability q.
  float conditional(std::size_t d, float q) const;
  // Learns from a verified tree: trees[d] is what drafter d proposed, on_path[i] whether merged
  // node i was accepted.
  void learn(const TokenTree& tree, std::span<const DraftTree* const> trees, std::span<const char> on_path);

 private:
  static constexpr int kBins = 10;
  static int bin(float q) { return q >= 1.0f ? kBins - 1 : static_cast<int>(q * kBins); }
  struct Bin {
    double trials = 0, accepted = 0;
  };
  std::vector<std::array<Bin, kBins>> bins_;
};

}  // namespace graft
