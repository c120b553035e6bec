// Builds the n-gram drafter's tree: rank the followers of the longest matched suffix, one branch
// per follower kept, each branch a copy of what followed that follower's latest occurrence.
#include "ngram_draft.hpp"

#include <algorithm>

namespace graft::ngram {

DraftSummary draft(const NgramIndex& index, const DraftParams& params, std::uint32_t max_nodes,
                   std::uint32_t max_depth, DraftTree& out, std::vector<Follower>& followers) {
  DraftSummary summary;
  const std::uint32_t depth = std::min(params.max_draft, max_depth);
  if (depth == 0 || max_nodes == 0 || params.max_branches == 0) return summary;
  const std::uint32_t length = index.longest_match(params.min_match);
  if (length == 0) return summary;
  const std::uint32_t total = index.followers(length, followers);
  if (total == 0 || followers.empty()) return summary;
  summary.match_length = length;
  summary.occurrences = total;

  const auto n_branches = static_cast<std::uint32_t>(
      std::min<std::size_t>({params.max_branches, followers.size(), max_nodes}));
  std::partial_sort(followers.begin(), followers.begin() + n_branches, followers.end(), ranks_before);
  summary.branches = n_branches;

  // Every branch gets its first token; the nodes left over deepen the branches in rank order, so
  // the likeliest continuation is the longest.
  std::uint32_t spare = max_nodes - n_branches;
  const auto tokens = index.tokens();
  const std::size_t n = tokens.size();
  for (std::uint32_t b = 0; b < n_branches; ++b) {
    const Follower& f = followers[b];
    const std::uint32_t extra = std::min(depth - 1, spare);
    spare -= extra;
    const std::size_t base = out.size();
    // The root's q is the share of earlier occurrences this follower continued; deeper nodes
    // copy a single occurrence, so their q (given the parent) is 1 and every node of the branch
    // has path probability q_root.
    out.add(f.token, -1, static_cast<float>(f.count) / static_cast<float>(total));
    for (std::uint32_t k = 1; k <= extra; ++k) {
      // The copy may run past the end of the sequence (the source is at most n - 1 tokens back):
      // it then continues with this branch's own tokens, as an LZ77 copy with overlap does.
      const std::size_t pos = f.last + k;
      const std::int32_t t = pos < n ? tokens[pos] : out.tokens[base + (pos - n)];
      out.add(t, static_cast<std::int32_t>(out.size() - 1), 1.0f);
    }
  }
  return summary;
}

}  // namespace graft::ngram
