#include "tokenizer/vocab_tokenizer.hpp"

namespace graft {

Expected<std::vector<TokenId>> VocabTokenizer::encode(std::string_view text, const TokenizeOptions& opt) const {
  std::vector<TokenId> out;
  out.reserve(text.size() / 3 + 4);
  if (opt.add_special && vocab_.add_bos()) out.push_back(vocab_.bos());
  bool after_special = true;
  for (const auto& frag : split_special(text, vocab_, opt.parse_special)) {
    if (frag.token >= 0) {
      out.push_back(frag.token);
      after_special = true;
      continue;
    }
    GRAFT_TRY(encode_fragment(frag.text, after_special, out));
    after_special = false;
  }
  if (opt.add_special && vocab_.add_eos()) out.push_back(vocab_.eos());
  return out;
}

std::string VocabTokenizer::decode(const std::vector<TokenId>& ids, bool render_special) const {
  std::string out;
  for (const TokenId id : ids) {
    if (vocab_.valid(id)) out += piece(id, render_special);
  }
  return out;
}

const std::string& VocabTokenizer::token_text(TokenId id) const {
  static const std::string empty;
  return vocab_.valid(id) ? vocab_.text(id) : empty;
}

bool VocabTokenizer::is_special(TokenId id) const {
  if (!vocab_.valid(id)) return false;
  const TokenType t = vocab_.type(id);
  return t == TokenType::control || t == TokenType::user_defined || t == TokenType::unknown;
}

}  // namespace graft
