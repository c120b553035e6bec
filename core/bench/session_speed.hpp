// What `graft bench` times: a prompt prefilled into a fresh sequence, then greedy decoding one
// token per forward pass (end of text ignored), repeated.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/session.hpp"

namespace graft {

struct SpeedSample {
  double prefill_tps = 0;  // prompt tokens / prefill seconds
  double decode_tps = 0;   // (gen_tokens - 1) / seconds of the decode steps after the first token
};

// One sample per repetition. gen_tokens >= 2: the first token comes from the prefill's logits.
Expected<std::vector<SpeedSample>> measure_speed(Session& session, std::span<const TokenId> prompt,
                                                 std::int64_t gen_tokens, std::int64_t reps);

}  // namespace graft
