// The n-gram drafter's proposal: from the index's longest matched suffix to a DraftTree (a chain,
// or one branch per distinct follower when the earlier occurrences disagree). README.md has the
// rules.
#pragma once

#include <cstdint>
#include <vector>

#include "graft/drafter.hpp"
#include "ngram_index.hpp"

namespace graft::ngram {

struct DraftParams {
  std::uint32_t min_match = 2;     // shortest suffix worth copying after
  std::uint32_t max_draft = 16;    // most tokens in one branch (its depth)
  std::uint32_t max_branches = 3;  // most sibling continuations at the branch point
};

struct DraftSummary {
  std::uint32_t match_length = 0;  // 0: nothing matched, the tree is empty
  std::uint32_t occurrences = 0;   // earlier occurrences of the matched suffix
  std::uint32_t branches = 0;
};

// Rank of followers: more occurrences first, then the more recent latest occurrence.
inline bool ranks_before(const Follower& a, const Follower& b) noexcept {
  return a.count != b.count ? a.count > b.count : a.last > b.last;
}

// Appends the proposal for the index's whole sequence to `out`, at most max_nodes nodes and none
// deeper than max_depth. `followers` is scratch space (kept by the caller to avoid allocations).
DraftSummary draft(const NgramIndex& index, const DraftParams& params, std::uint32_t max_nodes,
                   std::uint32_t max_depth, DraftTree& out, std::vector<Follower>& followers);

}  // namespace graft::ngram
