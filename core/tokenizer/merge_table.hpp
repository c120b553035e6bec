// BPE merge ranks keyed by the pair of token ids, in a flat open-addressing table: the lookup
// sits in the innermost loop of byte-level BPE, where a node-based map's cache misses dominate.
#pragma once

#include <cstdint>
#include <vector>

#include "tokenizer/tokenizer.hpp"

namespace graft {

class MergeTable {
 public:
  struct Entry {
    std::uint64_t key = kEmpty;
    std::int32_t rank = 0;
    TokenId result = -1;  // the merged token
  };

  static std::uint64_t key(TokenId left, TokenId right) {
    return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(left)) << 32) | static_cast<std::uint32_t>(right);
  }

  void reserve(std::size_t n) {
    std::size_t cap = 16;
    while (cap < n * 2) cap <<= 1;  // load factor <= 1/2 keeps probes short
    slots_.assign(cap, Entry{});
    mask_ = cap - 1;
    size_ = 0;
  }

  // Keeps the first rank given for a pair (as llama.cpp's emplace does); false for a repeat.
  bool insert(TokenId left, TokenId right, std::int32_t rank, TokenId result) {
    if ((size_ + 1) * 2 > slots_.size()) grow();
    const std::uint64_t k = key(left, right);
    for (std::size_t i = hash(k) & mask_;; i = (i + 1) & mask_) {
      if (slots_[i].key == k) return false;
      if (slots_[i].key == kEmpty) {
        slots_[i] = {k, rank, result};
        ++size_;
        return true;
      }
    }
  }

  const Entry* find(TokenId left, TokenId right) const {
    if (slots_.empty()) return nullptr;
    const std::uint64_t k = key(left, right);
    for (std::size_t i = hash(k) & mask_;; i = (i + 1) & mask_) {
      if (slots_[i].key == k) return &slots_[i];
      if (slots_[i].key == kEmpty) return nullptr;
    }
  }

  std::size_t size() const { return size_; }

 private:
  static constexpr std::uint64_t kEmpty = ~std::uint64_t{0};  // ids are non-negative, never all ones

  static std::size_t hash(std::uint64_t k) {
    k ^= k >> 33;  // murmur3 finalizer: ids are small and clustered
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return static_cast<std::size_t>(k);
  }

  void grow() {
    std::vector<Entry> old = std::move(slots_);
    reserve(old.empty() ? 8 : old.size());
    for (const auto& e : old) {
      if (e.key != kEmpty) {
        insert(static_cast<TokenId>(e.key >> 32), static_cast<TokenId>(e.key & 0xFFFFFFFFu), e.rank, e.result);
      }
    }
  }

  std::vector<Entry> slots_;
  std::size_t mask_ = 0;
  std::size_t size_ = 0;
};

}  // namespace graft
