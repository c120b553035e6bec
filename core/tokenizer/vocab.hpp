// The interpreted vocabulary shared by both tokenizer models: id <-> text, token types (as
// llama.cpp adjusts them), special ids with their defaults, the end-of-generation set and the
// special tokens that pre-empt BPE/SPM when they appear in the input.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "graft/status.hpp"
#include "tokenizer/token_index.hpp"
#include "tokenizer/tokenizer.hpp"
#include "tokenizer/vocab_data.hpp"

namespace graft {

class Vocab {
 public:
  enum class Model { bpe, spm };

  struct Defaults {
    bool add_bos = false;
    bool add_space_prefix = false;
  };

  // Validates sizes and ids; errors are one line naming the key at fault.

  static Expected<Vocab> build(VocabData data, Model model, Defaults defaults);

  std::size_t size() const { return text_.size(); }
  bool valid(TokenId id) const { return id >= 0 && static_cast<std::size_t>(id) < text_.size(); }
  const std::string& text(TokenId id) const { return text_[static_cast<std::size_t>(id)]; }
  TokenType type(TokenId id) const { return type_[static_cast<std::size_t>(id)]; }
  float score(TokenId id) const { return scores_.empty() ? 0.0f : scores_[static_cast<std::size_t>(id)]; }
  TokenId find(std::string_view text) const;  // -1 when absent

  TokenId bos() const { return bos_; }
  TokenId eos() const { return eos_; }
  TokenId eot() const { return eot_; }
  TokenId eom() const { return eom_; }
  TokenId unk() const { return unk_; }
  TokenId pad() const { return pad_; }
  bool add_bos() const { return add_bos_; }
  bool add_eos() const { return add_eos_; }
  bool add_space_prefix() const { return add_space_prefix_; }
  bool is_eog(TokenId id) const { return eog_.count(id) != 0; }

  // Control, user-defined and unknown tokens, longest text first (ties: lower id first).
  const std::vector<TokenId>& special_tokens() const { return special_; }

  std::vector<std::string> take_merges() { return std::move(merges_); }

 private:
  void detect_special_tokens();

  std::vector<std::string> text_;
  std::vector<TokenType> type_;
  std::vector<float> scores_;
  std::vector<std::string> merges_;
  TokenIndex ids_;  // over text_
  TokenId bos_ = -1, eos_ = -1, eot_ = -1, eom_ = -1, unk_ = -1, pad_ = -1;
  TokenId fim_pad_ = -1, fim_rep_ = -1, fim_sep_ = -1;
  bool add_bos_ = false, add_eos_ = false, add_space_prefix_ = false;
  std::unordered_set<TokenId> eog_;
  std::vector<TokenId> special_;
};

}  // namespace graft
