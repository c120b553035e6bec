// Token text -> id, as a flat open-addressing table over the vocabulary's own strings. Lookups of
// short substrings are the inner loop of SentencePiece merging; a node-based map spends most of
// that time on cache misses.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer.hpp"

namespace graft {

class TokenIndex {
 public:
  // Indexes texts[0..n); on duplicate texts the lowest id wins. Returns how many were duplicates.
  std::size_t build(const std::vector<std::string>& texts);
  // `texts` must be the vector given to build (the table stores ids, not strings).
  TokenId find(std::string_view text, const std::vector<std::string>& texts) const;

 private:
  struct Slot {
    TokenId id = -1;
    std::uint32_t fingerprint = 0;  // high hash bits: most mismatches never touch the string
  };
  static std::uint64_t hash(std::string_view s);

  std::vector<Slot> slots_;
  std::size_t mask_ = 0;
};

}  // namespace graft
