// The n-gram index: a bounded-depth suffix trie over one sequence, grown and cut back one token at
// a time. Every change of a token is undone in the reverse order of the changes, so the nodes a
// token created are always the newest ones: truncate pops them off the end of nodes_.
#include "ngram_index.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace graft::ngram {

namespace {

constexpr std::size_t kMinTableBits = 10;

}  // namespace

NgramIndex::NgramIndex(std::uint32_t max_match) : depth_(max_match + 1) {
  if (max_match < 1 || max_match > kMaxMatchLimit)
    throw std::invalid_argument("n-gram index: max_match = " + std::to_string(max_match) + " is outside 1.." +
                                std::to_string(kMaxMatchLimit));
  clear();
}

void NgramIndex::clear() {
  tokens_.clear();
  ends_.clear();
  nodes_.assign(1, Node{kNone, 0, 0, kNone, kNone, kNone});
  // Keep the table's size: a sequence that restarts tends to grow as large again.
  if (table_.empty()) {
    table_bits_ = kMinTableBits;
    table_.assign(std::size_t{1} << table_bits_, kNone);
  } else {
    std::fill(table_.begin(), table_.end(), kNone);
  }
}

std::size_t NgramIndex::home(std::uint32_t parent, std::int32_t token) const noexcept {
  // Fibonacci hashing of the 64-bit key; the high bits are the well-mixed ones.
  const std::uint64_t key = (std::uint64_t{parent} << 32) | static_cast<std::uint32_t>(token);
  return static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ull) >> (64 - table_bits_));
}

std::uint32_t NgramIndex::find(std::uint32_t parent, std::int32_t token) const noexcept {
  const std::size_t mask = table_.size() - 1;
  for (std::size_t s = home(parent, token);; s = (s + 1) & mask) {
    const std::uint32_t id = table_[s];
    if (id == kNone) return kNone;
    if (nodes_[id].parent == parent && nodes_[id].token == token) return id;
  }
}

void NgramIndex::grow_table() {
  ++table_bits_;
  table_.assign(std::size_t{1} << table_bits_, kNone);
  const std::size_t mask = table_.size() - 1;
  for (std::uint32_t id = 1; id < nodes_.size(); ++id) {
    std::size_t s = home(nodes_[id].parent, nodes_[id].token);
    while (table_[s] != kNone) s = (s + 1) & mask;
    table_[s] = id;
  }
}

std::uint32_t NgramIndex::find_or_add(std::uint32_t parent, std::int32_t token) {
  if (const std::uint32_t id = find(parent, token); id != kNone) return id;
  if (nodes_.size() >= kNone - 1) throw std::length_error("n-gram index: too many n-grams");
  // Load factor at most 1/2: short probe runs keep both lookups and deletions cheap.
  if (2 * nodes_.size() > table_.size()) grow_table();
  const auto id = static_cast<std::uint32_t>(nodes_.size());
  nodes_.push_back(Node{parent, token, 0, kNone, kNone, nodes_[parent].first_child});
  nodes_[parent].first_child = id;
  const std::size_t mask = table_.size() - 1;
  std::size_t s = home(parent, token);
  while (table_[s] != kNone) s = (s + 1) & mask;
  table_[s] = id;
  return id;
}

void NgramIndex::push_back(std::int32_t token) {
  const std::size_t j = tokens_.size();
  if (j >= kNone - 1) throw std::length_error("n-gram index: sequence too long");
  tokens_.push_back(token);
  ends_.resize(ends_.size() + depth_, End{kNone, kNone});
  End* row = &ends_[j * depth_];
  const std::uint32_t n_lengths = static_cast<std::uint32_t>(std::min<std::size_t>(depth_, j + 1));
  // The L-gram ending at j extends the (L-1)-gram ending at j - 1 by this token.
  for (std::uint32_t len = 1; len <= n_lengths; ++len) {
    const std::uint32_t parent = len == 1 ? 0 : node_at(j - 1, len - 1);
    const std::uint32_t id = find_or_add(parent, token);
    Node& n = nodes_[id];
    row[len - 1] = End{id, n.last};
    ++n.count;
    n.last = static_cast<std::uint32_t>(j);
  }
}

void NgramIndex::append(std::span<const std::int32_t> tokens) {
  // Geometric, never exact: exact reserves would copy the whole index on every small append.
  auto reserve_more = [](auto& v, std::size_t extra) {
    if (v.size() + extra > v.capacity()) v.reserve(std::max(v.size() + extra, 2 * v.capacity()));
  };
  reserve_more(tokens_, tokens.size());
  reserve_more(ends_, tokens.size() * depth_);
  for (std::int32_t t : tokens) push_back(t);
}

void NgramIndex::pop_back() {
  const std::size_t j = tokens_.size() - 1;
  const End* row = &ends_[j * depth_];
  const std::uint32_t n_lengths = static_cast<std::uint32_t>(std::min<std::size_t>(depth_, j + 1));
  // Longest first: the reverse of push_back, so a node that dies is the newest node and its
  // parent's newest child.
  for (std::uint32_t len = n_lengths; len >= 1; --len) {
    const std::uint32_t id = row[len - 1].node;
    Node& n = nodes_[id];
    if (--n.count > 0) {
      n.last = row[len - 1].prev_last;
      continue;
    }
    if (id != nodes_.size() - 1) throw std::logic_error("n-gram index: nodes removed out of order");
    // Removals run in the reverse order of insertions (and grow_table re-inserts in creation
    // order), so the table minus the newest node is exactly the table before it was added: its
    // slot is simply emptied, nothing after it in the probe run needs to move.
    const std::size_t mask = table_.size() - 1;
    std::size_t s = home(n.parent, n.token);
    while (table_[s] != id) s = (s + 1) & mask;
    table_[s] = kNone;
    nodes_[n.parent].first_child = n.next_sibling;
    nodes_.pop_back();
  }
  tokens_.pop_back();
  ends_.resize(j * depth_);
}

void NgramIndex::truncate(std::size_t n) {
  if (n >= tokens_.size()) return;
  if (n < tokens_.size() - n) {
    // Fewer tokens kept than removed: rebuilding from the kept ones is the cheaper way.
    std::vector<std::int32_t> kept(tokens_.begin(), tokens_.begin() + static_cast<std::ptrdiff_t>(n));
    clear();
    append(kept);
    return;
  }
  while (tokens_.size() > n) pop_back();
}

std::uint32_t NgramIndex::longest_match(std::uint32_t min_match) const noexcept {
  const std::size_t n = tokens_.size();
  if (n < 2) return 0;
  min_match = std::max<std::uint32_t>(min_match, 1);
  // An L-token suffix with an earlier occurrence needs L <= n - 1; count >= 2 means the suffix
  // occurs somewhere besides at the end.
  const std::uint32_t top = static_cast<std::uint32_t>(std::min<std::size_t>(max_match(), n - 1));
  for (std::uint32_t len = top; len >= min_match && len >= 1; --len)
    if (nodes_[node_at(n - 1, len)].count >= 2) return len;
  return 0;
}

std::uint32_t NgramIndex::followers(std::uint32_t length, std::vector<Follower>& out) const {
  out.clear();
  const std::size_t n = tokens_.size();
  if (length < 1 || length > max_match() || length > n) return 0;
  const std::uint32_t id = node_at(n - 1, length);
  std::uint32_t total = 0;
  // Each child is the suffix followed by one token; its count is how often that happened, since
  // the one occurrence of the suffix without a follower is the one at the end.
  for (std::uint32_t c = nodes_[id].first_child; c != kNone; c = nodes_[c].next_sibling) {
    out.push_back(Follower{nodes_[c].token, nodes_[c].count, nodes_[c].last});
    total += nodes_[c].count;
  }
  return total;
}

std::size_t NgramIndex::bytes_per_token_at_most(std::uint32_t max_match) noexcept {
  const std::size_t depth = std::size_t{max_match} + 1;
  return 2 * sizeof(std::int32_t) + 2 * depth * sizeof(End) + 2 * depth * sizeof(Node) + 4 * depth * sizeof(std::uint32_t);
}

std::size_t NgramIndex::memory_bytes() const noexcept {
  return tokens_.capacity() * sizeof(std::int32_t) + ends_.capacity() * sizeof(End) +
         nodes_.capacity() * sizeof(Node) + table_.capacity() * sizeof(std::uint32_t);
}

}  // namespace graft::ngram
