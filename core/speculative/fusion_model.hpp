// What the mix of drafters learns, online, from full information (docs/speculative.md, "Fusion"):
// after each verify pass EVERY drafter's whole proposal is scored against the one verified
// continuation (the accepted path, then the target's own token), not only the nodes the budget
// kept, so a drafter that lost the budget, or was merged into another's branch, still learns.
//
// - Chance (`conditional`): P(a node is accepted | its parent was), per drafter, by depth bucket,
//   by the q the drafter gave the node (ten bins) and by a context signal: how well this drafter
//   has done lately (three buckets of its recent hit rate). Sparse cells back off to the
//   drafter's q bin, which backs off to q itself before any evidence.
// - Each drafter's own accepted length this round (`accepted_lengths`), from which the round
//   policy learns what each adds beyond the others (round_policy.hpp).
// - Chain chances by depth (`depth_chance`), for each drafter's adaptive draft length.
#pragma once

#include <nlohmann/json.hpp>

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "graft/drafter.hpp"
#include "model/forward_batch.hpp"

namespace graft {

class FusionModel {
 public:
  explicit FusionModel(std::size_t n_drafters);

  // P(accepted | parent accepted) for a node drafter d proposed at `depth` (1 = a child of the
  // pending token) with probability q, in d's current context.
  float conditional(std::size_t d, std::uint32_t depth, float q) const;
  // P(drafter d's proposal extends the accepted path to `depth` | it reached depth - 1), whatever
  // q and however many siblings it offered there: its chain as the round will likely see it.
  float depth_chance(std::size_t d, std::uint32_t depth) const;
  // The last round's accepted length of each drafter's own proposal (0: none, or it proposed nothing).
  std::span<const std::uint32_t> accepted_lengths() const { return alone_; }

  // One round: trees[d] is drafter d's proposal (empty: it did not propose; it learns nothing),
  // truth the verified continuation (accepted path tokens, then the target's token).
  void learn(std::span<const DraftTree* const> trees, std::span<const TokenId> truth);

  // The chances learnt (not the per-sequence context signal), to keep across runs; from_json
  // throws on a wrong shape.
  nlohmann::json to_json() const;
  void from_json(const nlohmann::json& j);

  static constexpr int kDepthBuckets = 6;  // depth 1, 2, 3, 4, 5-6, 7+
  static constexpr int kQBins = 10;
  static constexpr int kSignals = 3;  // recent hit rate below 1/3, below 2/3, above

 private:
  struct Cell {
    double trials = 0, accepted = 0;
  };
  struct Drafter {
    std::array<Cell, kDepthBuckets * kQBins * kSignals> fine{};
    std::array<Cell, kQBins> by_q{};
    std::array<Cell, kDepthBuckets * kSignals> by_depth{};
  };
  static int depth_bucket(std::uint32_t depth);
  static int q_bin(float q);
  static std::size_t fine_index(std::uint32_t depth, int q_bin, int signal);
  int signal(std::size_t d) const;

  std::vector<Drafter> cells_;
  std::vector<double> recent_hit_;  // decayed rate of d's first-depth guess being the target's token
  std::vector<std::uint32_t> alone_;
};

}  // namespace graft
