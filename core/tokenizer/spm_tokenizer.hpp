// SentencePiece BPE as llama.cpp runs it (tokenizer.ggml.model = "llama"): spaces become U+2581,
// a space is prefixed at the start and after each special token (add_space_prefix), adjacent
// symbols are merged highest score first while the merge is a token, and symbols left without
// a token fall back to <0xXX> byte tokens.
#pragma once

#include <array>
#include <memory>

#include "tokenizer/vocab_tokenizer.hpp"

namespace graft {

class SpmTokenizer final : public VocabTokenizer {
 public:
  static Expected<std::unique_ptr<Tokenizer>> create(Vocab vocab);

  std::string_view model() const override { return "llama"; }
  std::string_view pre() const override { return "default"; }

  // Strips the space the prefix added from the first rendered text (see docs/tokenizers.md).
  std::string decode(const std::vector<TokenId>& ids, bool render_special) const override;

 protected:
  Status encode_fragment(std::string_view text, bool after_special, std::vector<TokenId>& out) const override;
  std::string piece(TokenId id, bool render_special) const override;

 private:
  explicit SpmTokenizer(Vocab vocab) : VocabTokenizer(std::move(vocab)) {}
  void push_byte(std::uint8_t b, std::vector<TokenId>& out) const;

  std::array<TokenId, 256> byte_token_{};
  bool split_at_space_ = false;
};

}  // namespace graft
