#include "tokenizer/special_split.hpp"

namespace graft {

std::vector<Fragment> split_special(std::string_view text, const Vocab& vocab, bool parse_special) {
  std::vector<Fragment> frags;
  if (text.empty()) return frags;
  frags.push_back({text, -1});
  std::vector<Fragment> next;
  for (const TokenId id : vocab.special_tokens()) {
    const TokenType type = vocab.type(id);
    if (!parse_special && (type == TokenType::control || type == TokenType::unknown)) continue;
    const std::string_view needle = vocab.text(id);

    // Most special tokens never occur: check before rebuilding the fragment list.
    bool found = false;
    for (const auto& f : frags) {
      if (f.token < 0 && f.text.find(needle) != std::string_view::npos) {
        found = true;
        break;
      }
    }
    if (!found) continue;

    next.clear();
    for (const auto& f : frags) {
      if (f.token >= 0) {
        next.push_back(f);
        continue;
      }
      std::size_t pos = 0;
      for (std::size_t m; (m = f.text.find(needle, pos)) != std::string_view::npos; pos = m + needle.size()) {
        if (m > pos) next.push_back({f.text.substr(pos, m - pos), -1});
        next.push_back({f.text.substr(m, needle.size()), id});
      }
      if (pos < f.text.size()) next.push_back({f.text.substr(pos), -1});
    }
    frags.swap(next);
  }
  return frags;
}

}  // namespace graft
