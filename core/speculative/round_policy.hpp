// The drafting policy of a speculative round (docs/speculative.md, "The round policy"): which
// drafters propose, how deep, and how many nodes of the merged tree the target verifies. Every
// choice maximises expected tokens per second, from what the policy measures itself:
//
// - the verify pass's cost curve, t(rows) (verify_cost.hpp);
// - each drafter's proposal cost by depth, c_d(k) (the same kind of curve, steady rounds only);
// - the chance each drafted node is accepted, and each drafter's chain by depth (fusion_model.hpp,
//   full information: every proposal is scored against the one verified continuation);
// - each drafter's GAIN: the tokens per round its proposal adds beyond the drafters asked before it
//   in the same round, by how much those already promised (five buckets of their expected accepted
//   length). Drafters are asked cheapest first, so an expensive drafter is asked only where the
//   cheap ones leave room: a long confident n-gram copy leaves an MTP head nothing to add, an
//   n-gram miss leaves it everything;
// - the host's own work per round (merge, walk, learning), which on a GPU is not negligible.
//
// Drafter d is asked when (E + G_d + bonus) / (T + c_d + extra verify rows) >= E / T, E and T
// being the expected tokens and time of the round without it; G_d is a mean with a prior (its own
// accepted length less what the others promise, or its gain over all buckets), and the bonus, half
// a token shrinking as 1 / (1 + its rounds in the bucket), keeps one unlucky round from ruling it
// out, while one measured round already rules out a drafter that costs several decode steps. A
// skipped drafter is asked again after 16 rounds or more (longer the further it is from paying
// and the dearer a probe), doubling up to 128, so its gain stays measured. The first round asks
// every drafter, at most 3 deep, to time it. The mechanism (speculative_decoder.hpp) calls, per round:
// begin_round(), then for each d in order(): draft_depth(d) and, if it proposed, proposed(d, ...);
// verify_count(); after the pass verified() and learn().
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "graft/drafter.hpp"
#include "speculative/fusion_model.hpp"
#include "speculative/verify_cost.hpp"

namespace graft {

struct RoundPolicyOptions {
  // Off: every drafter proposes every round, as deep as the budget allows, and every node the
  // budget keeps is verified.
  bool adaptive = true;
  // Tokens asked of every drafter per round: 0 = chosen per drafter (adaptive), N = pinned.
  std::uint32_t draft_length = 0;
};

class RoundPolicy {
 public:
  RoundPolicy(std::size_t n_drafters, const RoundPolicyOptions& options);

  // A new round: max_nodes is the round's node budget.
  void begin_round(std::uint32_t max_nodes);
  // The drafters in the order to ask them this round: cheapest measured proposal first.
  std::span<const std::size_t> order() const { return order_; }
  // How deep to ask drafter d (0: skip it this round), the round's depth budget given.
  std::uint32_t draft_depth(std::size_t d, std::uint32_t max_depth);
  // Drafter d proposed `tree` (asked for `depth`) in `seconds`.
  void proposed(std::size_t d, std::uint32_t depth, double seconds, const DraftTree& tree);
  // How many nodes of the merged tree to verify, given their chances of acceptance best first.
  std::uint32_t verify_count(std::span<const float> chances_best_first);
  // P(node accepted | parent accepted) for drafter d's node at `depth` with probability q.
  float conditional(std::size_t d, std::uint32_t depth, float q) const { return fusion_.conditional(d, depth, q); }

  // After the pass: it verified `rows` rows in `seconds`.
  void verified(std::uint32_t rows, double seconds);
  // The round's outcome: trees[d] every drafter's proposal (empty: none), truth the verified
  // continuation, own_nodes[d] the verified nodes only d proposed, host_seconds the host's work
  // this round (merge, choices, walk, learning), rest_seconds the rest outside the pass and the
  // proposals (committing the rows, the drafters told): all of it counts in the round's cost.
  void learn(std::span<const DraftTree* const> trees, std::span<const TokenId> truth,
             std::span<const std::uint32_t> own_nodes, double host_seconds, double rest_seconds);

  // The policy's estimate of this decoding's speed over plain decoding: recent tokens per second
  // of the rounds (proposals, pass, host work) against one decode step, t(1). 0 before it knows.
  double estimated_speedup() const;
  // Its current estimates, for reports and tests.
  double verify_seconds(std::uint32_t rows) const { return verify_.estimate(rows); }
  double propose_seconds(std::size_t d, std::uint32_t depth) const;
  // The depth d was last asked for (0: never).
  std::uint32_t last_depth(std::size_t d) const { return drafters_[d].last_depth; }
  // This round (after learn(): the round just learnt): whether d was asked, under which bucket,
  // and its own accepted length.
  bool asked(std::size_t d) const { return drafters_[d].asked; }
  int asked_bucket(std::size_t d) const { return drafters_[d].bucket; }
  std::span<const std::uint32_t> accepted_lengths() const { return fusion_.accepted_lengths(); }
  double gain(std::size_t d, int bucket) const;
  std::uint64_t rounds() const { return rounds_; }
  // The rounds what it knows was learnt from: its own and those of a policy it took over
  // (from_json), so a policy passed from one server slot to another, or through a file, keeps
  // counting.
  std::uint64_t learnt_rounds() const { return learnt_rounds_; }
  // Whether a policy that learnt from `mine` rounds should take over one that learnt from
  // `theirs`: a fresh or little-used one should (its next request starts with the other's
  // choices instead of learning them again); one with experience of its own keeps it.
  static bool should_adopt(std::uint64_t mine, std::uint64_t theirs);

  // What it learnt (costs, chances, gains; not this sequence's context or the speed estimate), to
  // keep across runs (`[speculative] policy_file`); from_json throws on a file of another shape
  // (nlohmann's errors, std::invalid_argument) and then changes nothing. A loaded policy makes
  // its choices from the first round.
  nlohmann::json to_json() const;
  void from_json(const nlohmann::json& j);

  static constexpr int kBuckets = 5;  // what the drafters before promise: < 0.25, < 1, < 2, < 4, more tokens
  static int bucket(double expected_tokens);

 private:
  struct Mean {
    double w = 0, sum = 0;
    void add(double x, double decay) { w = decay * w + 1, sum = decay * sum + x; }
  };
  struct PerDrafter {
    VerifyCost cost;  // proposal seconds by depth (as "rows" = depth)
    std::array<Mean, kBuckets> gain{};
    std::array<std::uint64_t, kBuckets> rounds_in{};  // rounds it was asked in under each bucket
    Mean gain_all;     // over every bucket
    Mean alone;        // its own accepted length, whatever the others had
    Mean added_nodes;  // verified nodes it alone added
    Mean mean_cost;    // its steady proposals' seconds, whatever their depth
    bool cost_seen = false, asked_last = false;
    std::uint64_t probe_interval = 0, next_probe = 0;  // skipped: when it is asked again (0: not scheduled)
    std::uint32_t last_depth = 0;
    // This round:
    bool asked = false;
    int bucket = 0;
    std::uint32_t depth = 0;
  };
  // Expected tokens of verifying the best n of the round's chances so far (1 + their sum), and n.
  std::pair<double, std::uint32_t> round_value() const;
  // value: round_value() before d, as draft_depth computed it.
  bool worth_asking(std::size_t d, std::uint32_t depth, std::pair<double, std::uint32_t> value);
  std::uint32_t best_depth(std::size_t d, std::uint32_t max_depth) const;
  bool warm() const;

  RoundPolicyOptions options_;
  VerifyCost verify_;
  FusionModel fusion_;
  std::vector<PerDrafter> drafters_;
  std::vector<std::size_t> order_;
  // This round: the chances of every node proposed so far (path products), time spent proposing.
  std::vector<float> chances_;
  double spent_ = 0;
  std::uint32_t max_nodes_ = 0;
  // Over rounds.
  std::uint64_t rounds_ = 0;
  std::uint64_t learnt_rounds_ = 0;
  std::uint32_t explore_ = 0, starved_ = 0;
  Mean host_, rest_, round_tokens_, round_seconds_;
  double round_propose_ = 0, round_verify_ = 0;
};

}  // namespace graft
