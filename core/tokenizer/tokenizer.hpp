// Tokenizers read from a GGUF vocabulary (tokenizer.ggml.*): byte-level BPE ("gpt2") and
// SentencePiece ("llama"), with the pre-tokenizer named by tokenizer.ggml.pre.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "graft/status.hpp"
#include "gguf/gguf_file.hpp"

namespace graft {

using TokenId = std::int32_t;

// llama.cpp's token attribute values as stored in tokenizer.ggml.token_type.
enum class TokenType : std::int32_t {
  undefined = 0, normal = 1, unknown = 2, control = 3, user_defined = 4, unused = 5, byte = 6,
};

struct TokenizeOptions {
  bool add_special = false;    // BOS/EOS as the vocabulary's add_bos_token/add_eos_token say
  bool parse_special = false;  // recognise special-token text like "<|im_start|>" in the input
};

struct VocabData;

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Fails with a one-line error for an unknown tokenizer.ggml.model or .pre.
  static Expected<std::unique_ptr<Tokenizer>> from_gguf(const gguf::File& file);
  // Same from a vocabulary already in memory (tests, converters).
  static Expected<std::unique_ptr<Tokenizer>> create(VocabData data);
  // Every tokenizer.ggml.pre value accepted for "gpt2" vocabularies.
  static std::vector<std::string_view> supported_pre_tokenizers();

  virtual std::string_view model() const = 0;  // "gpt2" | "llama"
  virtual std::string_view pre() const = 0;    // pre-tokenizer name ("default" when absent)

  virtual Expected<std::vector<TokenId>> encode(std::string_view text, const TokenizeOptions& opt) const = 0;

  // The raw bytes a token stands for (byte-level decoding applied; may be a partial UTF-8 char).
  virtual std::string token_bytes(TokenId id) const = 0;
  // Detokenize a whole sequence; special tokens are rendered only when render_special is true.
  virtual std::string decode(const std::vector<TokenId>& ids, bool render_special = false) const = 0;

  virtual std::size_t n_vocab() const = 0;
  virtual const std::string& token_text(TokenId id) const = 0;  // as stored in the vocabulary
  virtual TokenType token_type(TokenId id) const = 0;
  virtual TokenId bos() const = 0;  // -1 when none
  virtual TokenId eos() const = 0;
  virtual bool is_eog(TokenId id) const = 0;  // end of generation (eos, eot, im_end, ...)

  virtual TokenId eot() const = 0;           // -1 when none (found by text when not stored)
  virtual TokenId eom() const = 0;           // -1 when none
  virtual TokenId pad() const = 0;           // -1 when none
  virtual TokenId unk() const = 0;           // -1 when none
  virtual bool add_bos() const = 0;          // what add_special adds
  virtual bool add_eos() const = 0;
  virtual TokenId find(std::string_view text) const = 0;  // id of an exact token text, or -1
  // Control, user-defined and unknown tokens: the ones parse_special / render_special concern.
  virtual bool is_special(TokenId id) const = 0;
};

// Streams token bytes and releases only complete UTF-8 sequences, so text printed token by token
// never splits a character across tokens.
class Utf8Stream {
 public:
  // Returns the completed text so far (possibly empty). Bytes that can never form a character
  // are released as U+FFFD at once; a valid but unfinished sequence waits for the next push.
  std::string push(std::string_view bytes);
  // Returns what is left (invalid trailing bytes become U+FFFD).
  std::string flush();

 private:
  std::string pending_;
};

}  // namespace graft
