// What both tokenizer models share: the vocabulary accessors and the outer encode loop
// (BOS, special-token split, EOS). A model supplies how raw text fragments become ids and how
// one token renders.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/special_split.hpp"
#include "tokenizer/tokenizer.hpp"
#include "tokenizer/vocab.hpp"

namespace graft {

class VocabTokenizer : public Tokenizer {
 public:
  explicit VocabTokenizer(Vocab vocab) : vocab_(std::move(vocab)) {}

  Expected<std::vector<TokenId>> encode(std::string_view text, const TokenizeOptions& opt) const override;
  std::string token_bytes(TokenId id) const override { return vocab_.valid(id) ? piece(id, true) : std::string(); }
  std::string decode(const std::vector<TokenId>& ids, bool render_special) const override;

  std::size_t n_vocab() const override { return vocab_.size(); }
  const std::string& token_text(TokenId id) const override;
  TokenType token_type(TokenId id) const override {
    return vocab_.valid(id) ? vocab_.type(id) : TokenType::undefined;
  }
  TokenId bos() const override { return vocab_.bos(); }
  TokenId eos() const override { return vocab_.eos(); }
  bool is_eog(TokenId id) const override { return vocab_.is_eog(id); }
  TokenId eot() const override { return vocab_.eot(); }
  TokenId eom() const override { return vocab_.eom(); }
  TokenId pad() const override { return vocab_.pad(); }
  TokenId unk() const override { return vocab_.unk(); }
  bool add_bos() const override { return vocab_.add_bos(); }
  bool add_eos() const override { return vocab_.add_eos(); }
  TokenId find(std::string_view text) const override { return vocab_.find(text); }
  bool is_special(TokenId id) const override;

 protected:
  // Appends the ids of one raw-text fragment. `after_special` is true at the start of the input
  // and right after a special token (SPM adds its space prefix there).
  virtual Status encode_fragment(std::string_view text, bool after_special, std::vector<TokenId>& out) const = 0;
  // The bytes one valid token renders as; control/unknown tokens render only when asked.
  virtual std::string piece(TokenId id, bool render_special) const = 0;

  Vocab vocab_;
};

}  // namespace graft
