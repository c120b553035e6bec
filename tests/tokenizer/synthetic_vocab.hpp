// Small hand-made vocabularies for unit tests: every rule can be exercised with a few tokens.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "tokenizer/byte_map.hpp"
#include "tokenizer/tokenizer.hpp"
#include "tokenizer/vocab_data.hpp"

namespace graft::test {

// Byte-level BPE: ids 0..255 spell bytes 0..255 (GPT-2 byte map), then `extra` in order.
inline VocabData bpe_vocab(const std::vector<std::string>& extra, const std::vector<std::string>& merges,
                           const std::string& pre = "gpt-2") {
  VocabData d;
  d.model = "gpt2";
  d.pre = pre;
  for (int b = 0; b < 256; ++b) d.tokens.emplace_back(byte_map::byte_to_utf8(static_cast<std::uint8_t>(b)));
  d.tokens.insert(d.tokens.end(), extra.begin(), extra.end());
  d.token_types.assign(d.tokens.size(), static_cast<std::int32_t>(TokenType::normal));
  d.merges = merges;
  return d;
}

inline TokenId bpe_id(const VocabData& d, const std::string& text) {
  for (std::size_t i = 0; i < d.tokens.size(); ++i) {
    if (d.tokens[i] == text) return static_cast<TokenId>(i);
  }
  return -1;
}

// SentencePiece: 0 <unk>, 1 <s>, 2 </s>, 3..258 <0x00>..<0xFF>, then `pieces` with their scores.
inline VocabData spm_vocab(const std::vector<std::pair<std::string, float>>& pieces) {
  VocabData d;
  d.model = "llama";
  d.pre = "default";
  d.tokens = {"<unk>", "<s>", "</s>"};
  d.token_types = {2, 3, 3};
  d.scores = {0, 0, 0};
  for (int b = 0; b < 256; ++b) {
    char hex[8];
    std::snprintf(hex, sizeof hex, "<0x%02X>", b);
    d.tokens.emplace_back(hex);
    d.token_types.push_back(static_cast<std::int32_t>(TokenType::byte));
    d.scores.push_back(0);
  }
  for (const auto& [text, score] : pieces) {
    d.tokens.push_back(text);
    d.token_types.push_back(static_cast<std::int32_t>(TokenType::normal));
    d.scores.push_back(score);
  }
  return d;
}

inline constexpr TokenId kSpmFirstPiece = 259;

}  // namespace graft::test
