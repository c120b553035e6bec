#include "engine/generator.hpp"

#include <fmt/format.h>

#include <chrono>

namespace graft {

namespace {
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::length: return "length";
    case FinishReason::eog: return "end of generation";
    case FinishReason::context_full: return "context full";
    case FinishReason::stop: return "stop string";
  }
  return "?";
}

Status Generator::prefill(std::span<const TokenId> tokens, bool all_logits, std::vector<float>& logits) {
  GRAFT_TRY(p_.kv().truncate(0));
  if (tokens.size() > p_.context())
    return Status(Errc::out_of_range,
                  fmt::format("the prompt has {} tokens but the context holds {}: raise [context] size ({}) or --ctx",
                              tokens.size(), p_.context(), p_.profile().where("context.size")));
  const std::uint32_t B = p_.model().max_batch();
  const std::size_t n_vocab = p_.model().params().n_vocab;
  std::vector<float> chunk_logits;
  logits.clear();
  for (std::size_t pos = 0; pos < tokens.size(); pos += B) {
    const std::size_t n = std::min<std::size_t>(B, tokens.size() - pos);
    ForwardBatch batch;
    batch.tokens = tokens.subspan(pos, n);
    batch.n_past = static_cast<std::uint32_t>(pos);
    batch.all_logits = all_logits;
    GRAFT_TRY(p_.model().forward(batch, p_.kv(), chunk_logits));
    if (all_logits || pos + n == tokens.size()) logits.insert(logits.end(), chunk_logits.begin(), chunk_logits.end());
  }
  if (logits.size() != (all_logits ? tokens.size() : 1) * n_vocab)
    return Status(Errc::internal, "prefill produced the wrong number of logits");
  return Status::success();
}

Status Generator::evaluate(std::span<const TokenId> tokens, std::vector<float>& logits) {
  if (tokens.empty()) return Status(Errc::invalid_argument, "evaluate: no tokens");
  return prefill(tokens, true, logits);
}

Status Generator::generate(std::span<const TokenId> prompt, std::int64_t max_tokens, Sampler& sampler,
                           const TokenCallback& on_token, GenerationStats& stats) {
  stats = GenerationStats{};
  stats.prompt_tokens = static_cast<std::uint32_t>(prompt.size());
  if (prompt.empty()) return Status(Errc::invalid_argument, "the prompt is empty: nothing to continue from");
  std::vector<TokenId> history(prompt.begin(), prompt.end());
  std::vector<float> logits;

  auto t0 = std::chrono::steady_clock::now();
  GRAFT_TRY(prefill(prompt, false, logits));
  stats.prefill_seconds = seconds_since(t0);

  const std::size_t n_vocab = p_.model().params().n_vocab;
  t0 = std::chrono::steady_clock::now();
  for (;;) {
    if (max_tokens >= 0 && stats.generated_tokens >= max_tokens) {
      stats.stop = FinishReason::length;
      break;
    }
    const TokenId next = sampler.sample(std::span<const float>(logits.data(), n_vocab), history);
    history.push_back(next);
    ++stats.generated_tokens;
    if (p_.tokenizer().is_eog(next)) {
      stats.stop = FinishReason::eog;
      break;
    }
    if (!on_token(next)) {
      stats.stop = FinishReason::stop;
      break;
    }
    if (max_tokens >= 0 && stats.generated_tokens >= max_tokens) {
      stats.stop = FinishReason::length;
      break;
    }
    if (history.size() >= p_.context()) {
      stats.stop = FinishReason::context_full;
      break;
    }
    ForwardBatch batch;
    batch.tokens = std::span<const TokenId>(&history.back(), 1);
    batch.n_past = static_cast<std::uint32_t>(history.size() - 1);
    GRAFT_TRY(p_.model().forward(batch, p_.kv(), logits));
  }
  stats.decode_seconds = stats.generated_tokens > 1 ? seconds_since(t0) : 0;
  return Status::success();
}

}  // namespace graft
