// libFuzzer harness for what graft reads out of a GGUF's metadata before any weight: the model's
// hyperparameters and the tokenizer (tokenizer.ggml.*). Any byte string must either fail with one
// non-empty error line at one of these steps, or give a tokenizer whose every output stays in its
// vocabulary; ASan/UBSan catch the rest, libFuzzer's -timeout a loop that never ends.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>
#include <string_view>

#include <spdlog/spdlog.h>

#include "gguf/gguf_file.hpp"
#include "model/model_params.hpp"
#include "tokenizer/tokenizer.hpp"

volatile std::size_t g_sink = 0;

namespace {

void check_error(const graft::Status& st) {
  if (st.message().empty() || st.message().find('\n') != std::string::npos) std::abort();
}

// Texts that reach the pre-tokenizers' rules, byte fallback, special-token splitting and
// invalid UTF-8.
constexpr std::string_view kTexts[] = {
    "Hello world, it's 2026!  New\nlines\t\ttabs 12345 x=y+z;",
    "caf\xc3\xa9 \xe4\xb8\xad\xe6\x96\x87 \xf0\x9f\x98\x80 \xd0\x9f\xd1\x80\xd0\xb8",
    "<s></s><|im_start|>user\n<unk><|endoftext|>",
    "\xff\xfe bad \xc3 utf8 \xe2\x82",
    "",
};

}  // namespace

// Vocabulary warnings (duplicate texts) would print for most inputs.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  spdlog::set_level(spdlog::level::off);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace graft;
  auto file = gguf::File::parse(std::span<const std::uint8_t>(data, size));
  if (!file) return 0;  // the parser's own harness (gguf_fuzz.cpp) checks these errors
  const gguf::File& f = **file;
  std::size_t sink = 0;

  if (auto params = ModelParams::from_gguf(f); !params) {
    check_error(params.status());
  } else {
    sink += params->n_main_layers();
  }

  auto tok = Tokenizer::from_gguf(f);
  if (!tok) {
    check_error(tok.status());
    g_sink = sink;
    return 0;
  }
  const Tokenizer& t = **tok;
  const std::size_t n = t.n_vocab();
  for (std::string_view text : kTexts) {
    for (int mode = 0; mode < 4; ++mode) {
      TokenizeOptions opt;
      opt.add_special = mode & 1;
      opt.parse_special = mode & 2;
      auto ids = t.encode(text, opt);
      if (!ids) {
        check_error(ids.status());
        continue;
      }
      for (TokenId id : *ids)
        if (id < 0 || static_cast<std::size_t>(id) >= n) std::abort();
      sink += t.decode(*ids, mode & 1).size();
      Utf8Stream stream;
      for (TokenId id : *ids) sink += stream.push(t.token_bytes(id)).size();
      sink += stream.flush().size();
    }
  }
  // Every token's accessors, for the first ids (vocabularies can be large).
  for (std::size_t id = 0; id < n && id < 1024; ++id) {
    const auto i = static_cast<TokenId>(id);
    sink += t.token_bytes(i).size() + t.token_text(i).size() + static_cast<std::size_t>(t.token_type(i));
    sink += t.is_eog(i) + t.is_special(i);
    if (t.find(t.token_text(i)) < 0) std::abort();  // an exact text is always found (maybe at a lower id)
  }
  for (TokenId special : {t.bos(), t.eos(), t.eot(), t.eom(), t.pad(), t.unk()})
    if (special < -1 || special >= static_cast<TokenId>(n)) std::abort();
  g_sink = sink;
  return 0;
}
