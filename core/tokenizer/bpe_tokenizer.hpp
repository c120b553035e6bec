// Byte-level BPE (tokenizer.ggml.model = "gpt2"): the pre-tokenizer cuts the text into words,
// each word's bytes are spelled with GPT-2's byte map, then merges are applied lowest rank first
// (ties: leftmost), and the final symbols are looked up in the vocabulary.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include "tokenizer/merge_table.hpp"
#include "tokenizer/pre_tokenizer.hpp"
#include "tokenizer/vocab_tokenizer.hpp"

namespace graft {

class BpeTokenizer final : public VocabTokenizer {
 public:
  static Expected<std::unique_ptr<Tokenizer>> create(Vocab vocab, PreTokenizer pre);

  std::string_view model() const override { return "gpt2"; }
  std::string_view pre() const override { return pre_.name(); }

  std::size_t n_merges() const { return merges_.size(); }

 protected:
  Status encode_fragment(std::string_view text, bool after_special, std::vector<TokenId>& out) const override;
  std::string piece(TokenId id, bool render_special) const override;

 private:
  BpeTokenizer(Vocab vocab, PreTokenizer pre) : VocabTokenizer(std::move(vocab)), pre_(std::move(pre)) {}

  struct Symbol {
    TokenId id;        // -1: the byte's spelling is not in the vocabulary (never merges)
    std::int32_t prev;
    std::int32_t next;
    std::uint8_t byte;  // first raw byte, for the byte fallback of an unknown symbol
    bool alive;
  };
  struct Candidate {
    std::int32_t rank;
    std::int32_t left;
    TokenId left_id;
    TokenId right_id;
    TokenId result;
  };
  struct Scratch {
    std::vector<Symbol> symbols;
    std::vector<Candidate> heap;
    std::string spelled;
  };

  void encode_word(std::string_view word, std::vector<TokenId>& out, Scratch& s) const;
  void push_candidate(Scratch& s, std::int32_t left) const;

  PreTokenizer pre_;
  std::array<TokenId, 256> byte_token_{};
  MergeTable merges_;
};

}  // namespace graft
