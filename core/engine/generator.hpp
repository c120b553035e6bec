// Plain autoregressive generation: prefill the prompt in batches, then one token per forward
// pass. (Speculative rounds will replace the decode loop, with this as the reference it must
// reproduce token for token under greedy sampling.)
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "engine/pipeline.hpp"
#include "sampling/sampler.hpp"

namespace graft {

enum class FinishReason { length, eog, context_full, stop };
const char* finish_reason_name(FinishReason r);

struct GenerationStats {
  std::uint32_t prompt_tokens = 0;
  std::uint32_t generated_tokens = 0;
  double prefill_seconds = 0;  // prompt forward passes, up to the first sampled token
  double decode_seconds = 0;   // every later forward pass and sampling step
  FinishReason stop = FinishReason::length;
  double prefill_tps() const { return prefill_seconds > 0 ? prompt_tokens / prefill_seconds : 0; }
  // As the field reports it: the first token comes from prefill, so (generated - 1) / decode time.
  double decode_tps() const {
    return decode_seconds > 0 && generated_tokens > 1 ? (generated_tokens - 1) / decode_seconds : 0;
  }
};

// Called with each generated token; return false to stop.
using TokenCallback = std::function<bool(TokenId)>;

class Generator {
 public:
  explicit Generator(Pipeline& pipeline) : p_(pipeline) {}

  // Starts a fresh sequence. max_tokens < 0: until end of generation or a full context.
  Status generate(std::span<const TokenId> prompt, std::int64_t max_tokens, Sampler& sampler,
                  const TokenCallback& on_token, GenerationStats& stats);

  // Evaluates tokens from a fresh sequence and returns the logits after every token
  // (n_tokens x n_vocab), for perplexity.
  Status evaluate(std::span<const TokenId> tokens, std::vector<float>& logits);

 private:
  Status prefill(std::span<const TokenId> tokens, bool all_logits, std::vector<float>& logits);

  Pipeline& p_;
};

}  // namespace graft
