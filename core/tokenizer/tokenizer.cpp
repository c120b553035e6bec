// Entry points: which model a vocabulary asks for, and reading it out of a GGUF file.
#include "tokenizer/tokenizer.hpp"

#include "tokenizer/bpe_tokenizer.hpp"
#include "tokenizer/pre_tokenizer.hpp"
#include "tokenizer/spm_tokenizer.hpp"
#include "tokenizer/vocab.hpp"
#include "tokenizer/vocab_data.hpp"

namespace graft {
namespace {

// Reads one optional key; a present key of the wrong type is an error, not "absent".
template <class T, class Get>
Status read_optional(const gguf::File& file, const std::string& key, Get get, std::optional<T>& out) {
  if (!file.find(key)) return Status::success();
  auto v = (file.*get)(key);
  if (!v) return Status(Errc::corrupt, key + " has the wrong type");
  out = std::move(*v);
  return Status::success();
}

Status read_vocab(const gguf::File& file, VocabData& d) {
  std::optional<std::string> model, pre;
  GRAFT_TRY(read_optional(file, "tokenizer.ggml.model", &gguf::File::get_string, model));
  if (!model) return Status(Errc::not_found, "no tokenizer in this file (tokenizer.ggml.model is missing)");
  d.model = *model;
  GRAFT_TRY(read_optional(file, "tokenizer.ggml.pre", &gguf::File::get_string, pre));
  d.pre = pre.value_or("");

  std::optional<std::vector<std::string>> tokens, merges;
  GRAFT_TRY(read_optional(file, "tokenizer.ggml.tokens", &gguf::File::get_string_array, tokens));
  if (!tokens) return Status(Errc::not_found, "tokenizer.ggml.tokens is missing");
  d.tokens = std::move(*tokens);
  GRAFT_TRY(read_optional(file, "tokenizer.ggml.merges", &gguf::File::get_string_array, merges));
  if (merges) d.merges = std::move(*merges);

  std::optional<std::vector<double>> scores;
  GRAFT_TRY(read_optional(file, "tokenizer.ggml.scores", &gguf::File::get_real_array, scores));
  if (scores) d.scores.assign(scores->begin(), scores->end());
  std::optional<std::vector<std::int64_t>> types;
  GRAFT_TRY(read_optional(file, "tokenizer.ggml.token_type", &gguf::File::get_int_array, types));
  if (types) {
    d.token_types.reserve(types->size());
    for (const auto t : *types) d.token_types.push_back(static_cast<std::int32_t>(t));
  }

  const std::pair<const char*, std::optional<std::int64_t>*> ids[] = {
      {"bos", &d.bos_id},         {"eos", &d.eos_id},         {"eot", &d.eot_id},
      {"eom", &d.eom_id},         {"unknown", &d.unk_id},     {"seperator", &d.sep_id},  // sic, as in GGUF
      {"padding", &d.pad_id},     {"mask", &d.mask_id},       {"fim_pre", &d.fim_pre_id},
      {"fim_suf", &d.fim_suf_id}, {"fim_mid", &d.fim_mid_id}, {"fim_pad", &d.fim_pad_id},
      {"fim_rep", &d.fim_rep_id}, {"fim_sep", &d.fim_sep_id},
      // older names of the FIM ids
      {"prefix", &d.fim_pre_id},  {"suffix", &d.fim_suf_id},  {"middle", &d.fim_mid_id},
  };
  for (const auto& [name, slot] : ids) {
    std::optional<std::int64_t> v;
    GRAFT_TRY(read_optional(file, std::string("tokenizer.ggml.") + name + "_token_id", &gguf::File::get_int, v));
    if (v) *slot = v;
  }
  GRAFT_TRY(read_optional(file, "tokenizer.ggml.add_bos_token", &gguf::File::get_bool, d.add_bos));
  GRAFT_TRY(read_optional(file, "tokenizer.ggml.add_eos_token", &gguf::File::get_bool, d.add_eos));
  GRAFT_TRY(read_optional(file, "tokenizer.ggml.add_space_prefix", &gguf::File::get_bool, d.add_space_prefix));
  return Status::success();
}

}  // namespace

std::vector<std::string_view> Tokenizer::supported_pre_tokenizers() { return PreTokenizer::supported_names(); }

Expected<std::unique_ptr<Tokenizer>> Tokenizer::create(VocabData data) {
  if (data.model == "gpt2") {
    auto pre = PreTokenizer::create(data.pre);
    if (!pre) return pre.status();
    auto vocab = Vocab::build(std::move(data), Vocab::Model::bpe, {pre->rule().add_bos, false});
    if (!vocab) return vocab.status();
    return BpeTokenizer::create(std::move(*vocab), std::move(*pre));
  }
  if (data.model == "llama") {
    // SentencePiece has no pre-tokenizer: tokenizer.ggml.pre (often "default") is not consulted.
    auto vocab = Vocab::build(std::move(data), Vocab::Model::spm, {true, true});
    if (!vocab) return vocab.status();
    return SpmTokenizer::create(std::move(*vocab));
  }
  return Status(Errc::unsupported,
                "unsupported tokenizer.ggml.model '" + data.model + "' (supported: gpt2, llama)");
}

Expected<std::unique_ptr<Tokenizer>> Tokenizer::from_gguf(const gguf::File& file) {
  VocabData data;
  if (Status st = read_vocab(file, data); !st.ok()) return Status(st.code(), file.name() + ": " + st.message());
  auto tok = create(std::move(data));
  if (!tok) return Status(tok.status().code(), file.name() + ": " + tok.status().message());
  return tok;
}

}  // namespace graft
