// Pre-tokenization for byte-level BPE: the text is cut into words by the regex list of the
// vocabulary's tokenizer.ggml.pre, before BPE runs inside each word. Each regex splits every piece
// the previous one produced; matches and the text between them both become pieces (what
// HuggingFace's Split(behavior=Isolated) and llama.cpp's unicode_regex_split do).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "graft/status.hpp"
#include "tokenizer/regex.hpp"

namespace graft {

// One pre-tokenizer type: the names tokenizer.ggml.pre uses for it and its regexes (facts of the
// format; see pre_tokenizer_rules.cpp for the sources).
struct PreTokenizerRule {
  std::vector<std::string_view> names;     // names[0] is the canonical one
  std::vector<std::string_view> patterns;  // applied in order
  bool ignore_merges = false;  // a word that is itself a token skips BPE (HF BPE ignore_merges)
  bool add_bos = false;        // default of add_bos_token when the vocabulary does not say
};

const std::vector<PreTokenizerRule>& pre_tokenizer_rules();

class PreTokenizer {
 public:
  // `name` as stored in tokenizer.ggml.pre; empty means absent ("default"). An unknown name is an
  // error that names it and lists the supported ones.
  static Expected<PreTokenizer> create(std::string_view name);
  // Every accepted name, canonical names and aliases, in table order.
  static std::vector<std::string_view> supported_names();

  const std::string& name() const { return name_; }
  const PreTokenizerRule& rule() const { return *rule_; }

  // Pieces in order; they concatenate back to `text`. Empty input gives no pieces.
  Expected<std::vector<std::string_view>> split(std::string_view text) const;

 private:
  std::string name_;
  const PreTokenizerRule* rule_ = nullptr;
  std::vector<Regex> regexes_;
};

}  // namespace graft
