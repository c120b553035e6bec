#include "tokenizer/vocab.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>

namespace graft {
namespace {

// Token texts llama.cpp recognises when the vocabulary does not name these ids (facts from
// llama_vocab::impl::load). They are how chat models mark the end of a turn.
constexpr std::array kEotTexts = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>",
    "<EOT>", "_<EOT>", "[EOT]", "<\xEF\xBD\x9C" "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>", "<end_of_utterance>"};
constexpr std::array kEomTexts = {"<|eom_id|>"};
constexpr std::array kFimPadTexts = {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"};
constexpr std::array kFimRepTexts = {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"};
constexpr std::array kFimSepTexts = {"<|file_sep|>"};
constexpr std::array kEogTexts = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
    "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]",
    "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
    "<\xEF\xBD\x9C" "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>", "[e~["};
// gpt-oss chat markers that must always render (llama.cpp makes them user-defined).
constexpr std::array kAlwaysRendered = {"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"};

template <std::size_t N>
bool one_of(const std::string& s, const std::array<const char*, N>& list) {
  return std::any_of(list.begin(), list.end(), [&](const char* t) { return s == t; });
}

TokenType to_type(std::int32_t v) {
  return v >= 0 && v <= static_cast<std::int32_t>(TokenType::byte) ? static_cast<TokenType>(v) : TokenType::undefined;
}

}  // namespace

TokenId Vocab::find(std::string_view text) const { return ids_.find(text, text_); }

Expected<Vocab> Vocab::build(VocabData data, Model model, Defaults defaults) {
  Vocab v;
  const std::size_t n = data.tokens.size();
  if (n == 0) return Status(Errc::corrupt, "tokenizer.ggml.tokens is missing or empty");
  if (n > static_cast<std::size_t>(INT32_MAX)) return Status(Errc::corrupt, "tokenizer.ggml.tokens: too many tokens");
  if (!data.scores.empty() && data.scores.size() < n) {
    return Status(Errc::corrupt, "tokenizer.ggml.scores has " + std::to_string(data.scores.size()) +
                                     " entries for " + std::to_string(n) + " tokens");
  }
  if (!data.token_types.empty() && data.token_types.size() < n) {
    return Status(Errc::corrupt, "tokenizer.ggml.token_type has " + std::to_string(data.token_types.size()) +
                                     " entries for " + std::to_string(n) + " tokens");
  }

  v.text_ = std::move(data.tokens);
  v.scores_ = std::move(data.scores);
  v.merges_ = std::move(data.merges);
  v.type_.resize(n, TokenType::normal);
  for (std::size_t i = 0; i < n; ++i) {
    auto& text = v.text_[i];
    if (text.empty()) text = "[EMPTY_" + std::to_string(i) + "]";  // as llama.cpp: keeps ids unique
    if (!data.token_types.empty()) v.type_[i] = to_type(data.token_types[i]);
  }
  // The first id wins; older converters wrote a few duplicates that llama.cpp used to accept.
  const std::size_t duplicates = v.ids_.build(v.text_);
  if (duplicates) spdlog::warn("vocabulary: {} duplicate token texts; the lowest id is used", duplicates);

  // Special ids: the stored value when in range, else the model's default (llama.cpp's defaults
  // for SPM; none for BPE, where llama.cpp's default of 11 only fits Falcon).
  const bool spm = model == Model::spm;
  auto pick = [&](const std::optional<std::int64_t>& stored, TokenId fallback, const char* key) -> TokenId {
    if (fallback >= static_cast<TokenId>(n)) fallback = -1;
    if (!stored) return fallback;
    if (*stored < 0 || static_cast<std::uint64_t>(*stored) >= n) {
      spdlog::warn("vocabulary: tokenizer.ggml.{} = {} is out of range (n_vocab {}); ignored", key, *stored, n);
      return fallback;
    }
    return static_cast<TokenId>(*stored);
  };
  v.bos_ = pick(data.bos_id, spm ? 1 : -1, "bos_token_id");
  v.eos_ = pick(data.eos_id, spm ? 2 : -1, "eos_token_id");
  v.unk_ = pick(data.unk_id, spm ? 0 : -1, "unknown_token_id");
  v.eot_ = pick(data.eot_id, -1, "eot_token_id");
  v.eom_ = pick(data.eom_id, -1, "eom_token_id");
  v.pad_ = pick(data.pad_id, -1, "padding_token_id");
  v.fim_pad_ = pick(data.fim_pad_id, -1, "fim_pad_token_id");
  v.fim_rep_ = pick(data.fim_rep_id, -1, "fim_rep_token_id");
  v.fim_sep_ = pick(data.fim_sep_id, -1, "fim_sep_token_id");

  v.add_bos_ = data.add_bos.value_or(defaults.add_bos);
  v.add_eos_ = data.add_eos.value_or(false);
  v.add_space_prefix_ = spm && data.add_space_prefix.value_or(defaults.add_space_prefix);
  if (v.add_bos_ && v.bos_ < 0) {
    if (data.add_bos) return Status(Errc::corrupt, "tokenizer.ggml.add_bos_token is true, but there is no valid bos_token_id");
    v.add_bos_ = false;
  }
  if (v.add_eos_ && v.eos_ < 0) {
    return Status(Errc::corrupt, "tokenizer.ggml.add_eos_token is true, but there is no valid eos_token_id");
  }

  v.detect_special_tokens();
  return v;
}

void Vocab::detect_special_tokens() {
  const auto n = static_cast<TokenId>(text_.size());
  // A token found by its text is used as control even when the converter typed it normal.
  auto mark_control = [&](TokenId id) {
    if (type_[id] != TokenType::control) type_[id] = TokenType::control;
  };
  auto detect = [&](TokenId& slot, const auto& texts) {
    if (slot >= 0) return;
    for (TokenId id = 0; id < n; ++id) {
      if (one_of(text_[id], texts)) {
        slot = id;
        mark_control(id);
        return;
      }
    }
  };
  detect(eot_, kEotTexts);
  detect(eom_, kEomTexts);
  detect(fim_pad_, kFimPadTexts);
  detect(fim_rep_, kFimRepTexts);
  detect(fim_sep_, kFimSepTexts);

  for (TokenId id : {fim_pad_, fim_rep_, fim_sep_}) {
    if (id >= 0) eog_.insert(id);
  }
  for (TokenId id = 0; id < n; ++id) {
    if (one_of(text_[id], kEogTexts)) {
      eog_.insert(id);
      mark_control(id);
    }
  }
  for (TokenId id = 0; id < n; ++id) {
    if (one_of(text_[id], kAlwaysRendered)) type_[id] = TokenType::user_defined;
  }
  for (TokenId id : {eos_, eot_, eom_}) {
    if (id >= 0) eog_.insert(id);
  }

  // gpt-oss (o200k_harmony) and solar-open end a message with <|end|> but keep generating; their
  // true ends are <|return|> / <|call|> (<|calls|> / <|flush|>).
  auto eog_with = [&](const char* t) -> TokenId {
    for (TokenId id : eog_) {
      if (text_[id] == t) return id;
    }
    return -1;
  };
  const TokenId end = eog_with("<|end|>");
  if (end >= 0 && ((eog_with("<|return|>") >= 0 && eog_with("<|call|>") >= 0) ||
                   (eog_with("<|calls|>") >= 0 && eog_with("<|flush|>") >= 0))) {
    eog_.erase(end);
    type_[end] = TokenType::user_defined;
  }
  // Gemma 4 and PaddleOCR use </s> as an ordinary token.
  const TokenId s_end = eog_with("</s>");
  if (s_end >= 0 && eog_with("<|tool_response>") >= 0) {
    eog_.erase(s_end);
    type_[s_end] = TokenType::normal;
  }

  for (TokenId id = 0; id < n; ++id) {
    const TokenType t = type_[id];
    if (t == TokenType::control || t == TokenType::user_defined || t == TokenType::unknown) special_.push_back(id);
  }
  std::stable_sort(special_.begin(), special_.end(),
                   [&](TokenId a, TokenId b) { return text_[a].size() > text_[b].size(); });
}

}  // namespace graft
