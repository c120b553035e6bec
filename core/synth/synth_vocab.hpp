// A synthetic byte-level BPE vocabulary ("gpt2" model) of any size >= 260, built without any
// external data: ids 0..255 are the 256 bytes (id = byte value, GPT-2 byte map spelling), then
// merges learned by BPE from a small built-in English/Python text, then, when more tokens are
// asked for than that text yields, filler merges that extend existing tokens one lowercase letter
// at a time (breadth first). The last three ids are <|endoftext|>, <|im_start|>, <|im_end|>
// (control). Every merge "a b" has both parts and "ab" in the vocabulary, each token but the
// bytes comes from exactly one merge, and the result is the same on every run.
#pragma once

#include <cstdint>
#include <string_view>

#include "graft/status.hpp"
#include "tokenizer/vocab_data.hpp"

namespace graft::synth {

// The built-in training text (also handy as a prompt for tests and benchmarks).
std::string_view builtin_text();

// pre: the tokenizer.ggml.pre to store and train with ("qwen2", "llama-bpe"); add_bos as stored.
// Fills tokens, token types, merges, bos/eos/pad ids.
Expected<VocabData> build_vocab(std::int64_t n_vocab, std::string_view pre, bool add_bos);

}  // namespace graft::synth
