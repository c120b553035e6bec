// Brute-force n-gram matching with plain loops (every suffix length, every earlier position), the
// reference the index and the tree builder are checked against, and the token streams they run on.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <vector>

#include "graft/drafter.hpp"

namespace ngramtest {

using Tokens = std::vector<std::int32_t>;

struct RefFollower {
  std::uint32_t count = 0;
  std::uint32_t last = 0;
  bool operator==(const RefFollower&) const = default;
};
using RefFollowers = std::map<std::int32_t, RefFollower>;  // by token

// Whether t[a - len + 1 .. a] == t[b - len + 1 .. b].
inline bool same_ending(const Tokens& t, std::size_t a, std::size_t b, std::size_t len) {
  for (std::size_t i = 0; i < len; ++i)
    if (t[a - i] != t[b - i]) return false;
  return true;
}

// Earlier occurrences (ending before the last token) of the `len`-token suffix and what followed.
inline RefFollowers ref_followers(const Tokens& t, std::size_t len) {
  RefFollowers out;
  const std::size_t n = t.size();
  if (len == 0 || len + 1 > n) return out;
  for (std::size_t e = len - 1; e + 1 < n; ++e) {
    if (!same_ending(t, e, n - 1, len)) continue;
    RefFollower& f = out[t[e + 1]];
    ++f.count;
    f.last = static_cast<std::uint32_t>(e + 1);
  }
  return out;
}

inline std::uint32_t ref_longest(const Tokens& t, std::uint32_t min_match, std::uint32_t max_match) {
  for (std::uint32_t len = max_match; len >= std::max<std::uint32_t>(min_match, 1); --len)
    if (!ref_followers(t, len).empty()) return len;
  return 0;
}

// The tree the README specifies, built from the brute-force followers.
inline graft::DraftTree ref_tree(const Tokens& t, std::uint32_t min_match, std::uint32_t max_match,
                                 std::uint32_t max_draft, std::uint32_t max_branches, std::uint32_t max_nodes,
                                 std::uint32_t max_depth) {
  graft::DraftTree tree;
  const std::uint32_t depth = std::min(max_draft, max_depth);
  const std::uint32_t len = ref_longest(t, min_match, max_match);
  if (len == 0 || depth == 0 || max_nodes == 0) return tree;
  struct F {
    std::int32_t token;
    RefFollower f;
  };
  std::vector<F> fs;
  std::uint32_t total = 0;
  for (const auto& [token, f] : ref_followers(t, len)) {
    fs.push_back({token, f});
    total += f.count;
  }
  std::sort(fs.begin(), fs.end(), [](const F& a, const F& b) {
    if (a.f.count != b.f.count) return a.f.count > b.f.count;
    return a.f.last > b.f.last;
  });
  const std::uint32_t branches =
      std::min<std::uint32_t>({max_branches, static_cast<std::uint32_t>(fs.size()), max_nodes});
  std::uint32_t spare = max_nodes - branches;
  for (std::uint32_t b = 0; b < branches; ++b) {
    const std::uint32_t n_nodes = 1 + std::min(depth - 1, spare);
    spare -= n_nodes - 1;
    // The sequence as it would continue if it repeated what followed the latest occurrence.
    Tokens ext = t;
    for (std::uint32_t k = 0; k < n_nodes; ++k) {
      const std::int32_t token = ext[fs[b].f.last + k];
      ext.push_back(token);
      const auto parent = k == 0 ? -1 : static_cast<std::int32_t>(tree.size() - 1);
      tree.add(token, parent, k == 0 ? static_cast<float>(fs[b].f.count) / static_cast<float>(total) : 1.0f);
    }
  }
  return tree;
}

// Uniform tokens from a small vocabulary: short n-grams repeat often, long ones rarely.
inline Tokens random_stream(std::mt19937& rng, std::size_t n, std::int32_t vocab) {
  std::uniform_int_distribution<std::int32_t> tok(0, vocab - 1);
  Tokens t(n);
  for (auto& x : t) x = tok(rng);
  return t;
}

// A motif repeated with mutations (substitutions, insertions, deletions) and occasional fresh
// motifs: long matches whose earlier occurrences continue differently.
inline Tokens repetitive_stream(std::mt19937& rng, std::size_t n, std::int32_t vocab, std::size_t motif_len,
                                double mutation) {
  std::uniform_int_distribution<std::int32_t> tok(0, vocab - 1);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  Tokens motif(motif_len);
  for (auto& x : motif) x = tok(rng);
  Tokens t;
  while (t.size() < n) {
    if (u(rng) < 0.05)
      for (auto& x : motif) x = tok(rng);
    for (std::size_t i = 0; i < motif.size() && t.size() < n; ++i) {
      const double r = u(rng);
      if (r < mutation / 3) continue;  // deletion
      if (r < 2 * mutation / 3) {      // insertion
        t.push_back(tok(rng));
        t.push_back(motif[i]);
        continue;
      }
      t.push_back(r < mutation ? tok(rng) : motif[i]);  // substitution, or the motif's token
    }
  }
  t.resize(n);
  return t;
}

}  // namespace ngramtest
