// What `graft bench` times: a prompt prefilled into a fresh sequence, then greedy or sampled
// decoding (end of text ignored), repeated: one token per forward pass, or speculative rounds with a
// decoder.
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

// Greedy, nothing added to the logits: what `graft bench` decodes with unless sampling is asked for.
SamplingSettings greedy_sampling();

// One sample per repetition, each with a fresh sampler of these settings. gen_tokens >= 2: the
// first token comes from the prefill's logits.
Expected<std::vector<SpeedSample>> measure_speed(Session& session, std::span<const TokenId> prompt,
                                                 std::int64_t gen_tokens, std::int64_t reps,
                                                 TokenDecoder* decoder = nullptr,
                                                 const SamplingSettings& sampling = greedy_sampling());

// What a speculative verify pass of n rows costs against one decode step: after the prompt, a
// pass over n rows laid out as a verify pass lays them out (positions, ancestor mask, every row's
// logits), then cut back. Entry n - 1 is the median seconds of n rows over `reps` passes.
Expected<std::vector<double>> measure_verify_cost(Session& session, std::span<const TokenId> prompt,
                                                  std::uint32_t max_rows, std::int64_t reps);

// What a hybrid model's recurrent state costs a speculative round, against one decode step (a
// one-row pass that moves the state on in place; median seconds over `reps`):
// - keep: a one-row pass over a token tree (the state left alone, what moves it on by the row
//   kept) minus the decode step;
// - restore: Session::commit_rows of a path of n rows of such a pass, plus the next one-row tree
//   pass (which applies the path to each layer before reading it), minus the same pass with
//   nothing to apply (the median of the differences of pairs run one after the other); entry
//   n - 1 for n = 1..max_rows;
// - settle: the commit of n rows applied at once on its own (Session::settle_state), as when the
//   state is copied before the next pass.
struct StateCost {
  double decode_seconds = 0;
  double tree_row_seconds = 0;
  std::vector<double> restore_seconds, settle_seconds;
};
Expected<StateCost> measure_state_cost(Session& session, std::span<const TokenId> prompt, std::uint32_t max_rows,
                                       std::int64_t reps);

}  // namespace graft
