#include "tokenizer/token_index.hpp"

#include <cstring>

namespace graft {

std::uint64_t TokenIndex::hash(std::string_view s) {
  // FNV-1a with a final avalanche: tokens are a few bytes long, so per-byte hashing is cheap
  // and the mix spreads them over the low bits the table indexes with.
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (const char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  return h;
}

std::size_t TokenIndex::build(const std::vector<std::string>& texts) {
  std::size_t cap = 16;
  while (cap < texts.size() * 2) cap <<= 1;
  slots_.assign(cap, Slot{});
  mask_ = cap - 1;
  std::size_t duplicates = 0;
  for (std::size_t id = 0; id < texts.size(); ++id) {
    const std::uint64_t h = hash(texts[id]);
    const auto fp = static_cast<std::uint32_t>(h >> 32);
    for (std::size_t i = h & mask_;; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (s.id < 0) {
        s = {static_cast<TokenId>(id), fp};
        break;
      }
      if (s.fingerprint == fp && texts[static_cast<std::size_t>(s.id)] == texts[id]) {
        ++duplicates;
        break;
      }
    }
  }
  return duplicates;
}

TokenId TokenIndex::find(std::string_view text, const std::vector<std::string>& texts) const {
  if (slots_.empty()) return -1;
  const std::uint64_t h = hash(text);
  const auto fp = static_cast<std::uint32_t>(h >> 32);
  for (std::size_t i = h & mask_;; i = (i + 1) & mask_) {
    const Slot& s = slots_[i];
    if (s.id < 0) return -1;
    if (s.fingerprint == fp) {
      const std::string& t = texts[static_cast<std::size_t>(s.id)];
      if (t.size() == text.size() && std::memcmp(t.data(), text.data(), text.size()) == 0) return s.id;
    }
  }
}

}  // namespace graft
