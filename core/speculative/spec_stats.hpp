// What speculation did: rounds, drafted and accepted tokens overall, per drafter and per depth,
// and where the time went. Tokens per round counts the target's own token (1 + accepted / rounds,
// as the field reports it); a round is one verify pass, with or without drafts.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace graft {

struct DepthCounts {
  std::vector<std::uint64_t> proposed, accepted;  // [depth - 1], both as long
  // One verified node at this depth.
  void count(std::uint32_t depth, bool was_accepted) {
    if (proposed.size() < depth) proposed.resize(depth, 0), accepted.resize(depth, 0);
    ++proposed[depth - 1];
    accepted[depth - 1] += was_accepted ? 1 : 0;
  }
};

struct DrafterStats {
  std::string name;
  std::uint64_t rounds = 0;    // rounds it proposed at least one verified node in
  std::uint64_t proposed = 0;  // its nodes in the verified trees (shared ones count for each proposer)
  std::uint64_t accepted = 0;  // of those, on the accepted path
  std::uint64_t failures = 0;  // calls that failed (warned; proposal skipped or drafter disabled)
  std::uint64_t skipped = 0;   // rounds it was not asked to propose: its expected gain was below its cost
  double accepted_share = 0;   // accepted tokens credited to it (a token several proposed: in equal parts)
  double seconds = 0;          // in its calls (propose, begin, accept)
  std::uint64_t proposals = 0;  // propose() calls
  double propose_seconds = 0;   // in them
  // The round policy's view at the end (round_policy.hpp): a proposal's cost in decode steps
  // (one-row passes) at the depth it was last asked for, and the tokens per round it is expected
  // to add beyond the drafters asked before it, by how much those promised (RoundPolicy::kBuckets).
  double propose_steps = 0;
  std::vector<double> gain{};
  DepthCounts depth{};
  double acceptance() const { return proposed ? double(accepted) / double(proposed) : 0; }
  double mean_accepted_length() const { return rounds ? double(accepted) / double(rounds) : 0; }
};

struct SpeculativeStats {
  std::uint64_t rounds = 0;
  std::uint64_t drafted = 0;   // nodes verified
  std::uint64_t accepted = 0;  // nodes accepted
  std::uint64_t emitted = 0;   // tokens the rounds returned (accepted + the target's own)
  double draft_seconds = 0, verify_seconds = 0, accept_seconds = 0, rollback_seconds = 0;
  // The host's own work per round (merge, the policy's choices, the walk, metrics, learning): on a
  // GPU a whole decode step is a few milliseconds, so this must stay microseconds.
  double host_seconds = 0;
  // The policy's estimate of the speed over plain decoding (round_policy.hpp; 0: not known yet).
  double estimated_speedup = 0;
  DepthCounts depth{};
  std::vector<DrafterStats> drafters;

  double tokens_per_round() const { return rounds ? double(emitted) / double(rounds) : 0; }
  double acceptance() const { return drafted ? double(accepted) / double(drafted) : 0; }
  double host_us_per_round() const { return rounds ? 1e6 * host_seconds / double(rounds) : 0; }
  void clear_counts();
};

// stats.speculative of `graft run --json` and `graft bench --json`.
nlohmann::json to_json(const SpeculativeStats& s);
// The lines `graft run` prints at the end.
std::string format_stats(const SpeculativeStats& s);

}  // namespace graft
