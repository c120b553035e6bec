// How Session::generate advances. The plain decoder commits the pending token (emitted, not yet
// run) and samples one more; a speculative decoder (core/speculative) also verifies drafted tokens
// in the same forward pass and may return several. Either way generate() emits what step() returns
// with the same checks (end of generation, stop strings, max_tokens, a full context), so output is
// the same tokens whichever decoder runs.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "graft/status.hpp"
#include "model/forward_batch.hpp"

namespace graft {

class Session;
class Sampler;

class TokenDecoder {
 public:
  virtual ~TokenDecoder() = default;
  // Commits the prompt to a fresh session, leaving the last token's logits in session.logits().
  virtual Status prefill(Session& session, std::span<const TokenId> prompt) = 0;
  // Commits `pending`, then appends to `out` between 1 and max_new tokens that follow it, each
  // drawn with `sampler` exactly as plain decoding would, and commits all but the last of them
  // (which becomes the next pending token). max_new >= 1; the session has room for max_new more.
  virtual Status step(Session& session, Sampler& sampler, TokenId pending, std::uint32_t max_new,
                      std::vector<TokenId>& out) = 0;
};

// One token per forward pass.
class PlainDecoder final : public TokenDecoder {
 public:
  Status prefill(Session& session, std::span<const TokenId> prompt) override;
  Status step(Session& session, Sampler& sampler, TokenId pending, std::uint32_t max_new,
              std::vector<TokenId>& out) override;
};

}  // namespace graft
