// Splits input text on the texts of special tokens before BPE/SPM sees it, so a special token
// is never merged with its neighbours. Control and unknown tokens are recognised only when the
// caller asks (parse_special); user-defined tokens always are, as in llama.cpp and HF tokenizers.
#pragma once

#include <string_view>
#include <vector>

#include "tokenizer/vocab.hpp"

namespace graft {

struct Fragment {
  std::string_view text;  // raw text (token < 0) or the special token's text
  TokenId token = -1;     // >= 0: this fragment is that special token
};

// Longest special tokens are matched first over the whole text, then shorter ones in what is
// left (llama.cpp's tokenizer_st_partition order).
std::vector<Fragment> split_special(std::string_view text, const Vocab& vocab, bool parse_special);

}  // namespace graft
