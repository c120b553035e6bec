// The n-gram drafter's index: an exact, bounded-depth suffix trie of one sequence's tokens (every
// n-gram of length 1..max_match+1, with its occurrence count and latest position), grown one token
// at a time and cut back by truncate(). README.md has the design and its costs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

namespace graft::ngram {

// A token that followed earlier occurrences of the matched suffix.
struct Follower {
  std::int32_t token = 0;
  std::uint32_t count = 0;  // occurrences of the suffix that this token followed
  std::uint32_t last = 0;   // index of this token in its latest such occurrence
};

class NgramIndex {
 public:
  static constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();
  // The longest suffix that can be matched; 1..kMaxMatchLimit.
  static constexpr std::uint32_t kMaxMatchLimit = 255;

  explicit NgramIndex(std::uint32_t max_match);

  std::uint32_t max_match() const noexcept { return depth_ - 1; }
  std::size_t size() const noexcept { return tokens_.size(); }
  std::span<const std::int32_t> tokens() const noexcept { return tokens_; }

  // O(max_match) expected per token. After an exception (out of memory) the index is unusable
  // until clear().
  void push_back(std::int32_t token);
  void append(std::span<const std::int32_t> tokens);
  // Forgets every token at index >= n (n >= size() changes nothing). O(max_match * min(removed,
  // kept)): undoes the removed tokens, or rebuilds from the kept ones when that is cheaper.
  void truncate(std::size_t n);
  void clear();

  // The longest L in [min_match, max_match] whose L-token suffix of the sequence also ends at an
  // earlier index, or 0 when there is none. O(max_match - min_match).
  std::uint32_t longest_match(std::uint32_t min_match) const noexcept;
  // Appends to `out` (cleared first) the tokens that followed earlier occurrences of the
  // `length`-token suffix (1 <= length <= max_match), in no particular order, and returns how many
  // earlier occurrences there are (the sum of the counts). O(distinct followers).
  std::uint32_t followers(std::uint32_t length, std::vector<Follower>& out) const;

  // Live trie nodes, the root included (tests check that truncate releases them).
  std::size_t node_count() const noexcept { return nodes_.size(); }
  // Bytes held by the index's arrays (capacity, not size).
  std::size_t memory_bytes() const noexcept;
  // memory_bytes() / size() can be at most this (a bound for memory plans): every array at twice
  // its need after a doubling, each token adding max_match + 1 ends and at most as many nodes,
  // the hash table at load factor 1/4.
  static std::size_t bytes_per_token_at_most(std::uint32_t max_match) noexcept;

 private:
  // One n-gram: the path root -> node spells it. Children are its one-token-longer extensions,
  // that is, the tokens that followed it; they form a stack (newest first) so truncate can unlink
  // the newest with O(1) work.
  struct Node {
    std::uint32_t parent;
    std::int32_t token;
    std::uint32_t count;         // occurrences in the sequence
    std::uint32_t last;          // index of the last token of its latest occurrence
    std::uint32_t first_child;   // newest child, or kNone
    std::uint32_t next_sibling;  // the parent's next older child, or kNone
  };

  std::uint32_t find(std::uint32_t parent, std::int32_t token) const noexcept;
  std::uint32_t find_or_add(std::uint32_t parent, std::int32_t token);
  void grow_table();
  std::size_t home(std::uint32_t parent, std::int32_t token) const noexcept;
  void pop_back();
  // Node of the `length`-token n-gram ending at index `end` (length <= min(depth_, end + 1)).
  std::uint32_t node_at(std::size_t end, std::uint32_t length) const noexcept {
    return ends_[end * depth_ + (length - 1)].node;
  }

  // Per token index and n-gram length: the n-gram ending there, and the `last` its node had
  // before this occurrence (what truncate restores).
  struct End {
    std::uint32_t node;
    std::uint32_t prev_last;
  };

  std::uint32_t depth_;  // trie depth: max_match + 1 (a match of max_match tokens and its follower)
  std::vector<std::int32_t> tokens_;
  std::vector<End> ends_;    // [index][length - 1], depth_ per index; kNone beyond index + 1
  std::vector<Node> nodes_;  // nodes_[0] is the root (the empty n-gram); creation order
  // Open addressing with linear probing: node ids keyed by (parent, token); kNone is empty.
  std::vector<std::uint32_t> table_;
  std::size_t table_bits_ = 0;
};

}  // namespace graft::ngram
