#include "bench/session_speed.hpp"

#include <algorithm>
#include <chrono>
#include <vector>

namespace graft {

namespace {
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double median(std::vector<double>& t) {
  std::nth_element(t.begin(), t.begin() + t.size() / 2, t.end());
  return t[t.size() / 2];
}

// n rows after n_past laid out as a verify pass lays out a chain: row i at n_past + i (its token
// from the prompt), seeing rows 0..i through the ancestor mask, every row's logits asked for.
struct VerifyChain {
  std::vector<TokenId> tokens;
  std::vector<std::int32_t> positions;
  std::vector<std::uint8_t> mask;
  std::vector<std::uint32_t> rows;
  void build(std::span<const TokenId> prompt, std::uint32_t n_past, std::uint32_t n, std::uint32_t n_vocab) {
    tokens.resize(n), positions.resize(n), rows.resize(n);
    mask.assign(std::size_t(n) * n, 0);
    for (std::uint32_t i = 0; i < n; ++i) {
      tokens[i] = static_cast<TokenId>((prompt[i % prompt.size()] + i) % n_vocab);
      positions[i] = static_cast<std::int32_t>(n_past + i);
      rows[i] = i;
      for (std::uint32_t j = 0; j <= i; ++j) mask[std::size_t(i) * n + j] = 1;
    }
  }
};
}  // namespace

SamplingSettings greedy_sampling() {
  SamplingSettings greedy;
  greedy.temperature = 0;
  greedy.repeat_penalty = 1.0;
  greedy.presence_penalty = 0.0;
  return greedy;
}

Expected<std::vector<SpeedSample>> measure_speed(Session& s, std::span<const TokenId> prompt, std::int64_t gen_tokens,
                                                 std::int64_t reps, TokenDecoder* decoder,
                                                 const SamplingSettings& sampling) {
  if (prompt.empty() || gen_tokens < 2 || reps < 1)
    return Status(Errc::invalid_argument, "measure_speed: needs a prompt, gen_tokens >= 2 and reps >= 1");
  PlainDecoder plain;
  if (!decoder) decoder = &plain;
  std::vector<SpeedSample> samples;
  std::vector<TokenId> out;
  for (std::int64_t r = 0; r < reps; ++r) {
    Sampler sampler(sampling);
    GRAFT_TRY(s.reset());
    auto t0 = std::chrono::steady_clock::now();
    GRAFT_TRY(decoder->prefill(s, prompt));
    const double t_prefill = seconds_since(t0);
    t0 = std::chrono::steady_clock::now();
    TokenId pending = sampler.sample(s.logits(), s.tokens());
    for (std::int64_t produced = 1; produced < gen_tokens; produced += static_cast<std::int64_t>(out.size())) {
      const std::int64_t room = s.room();
      if (room < 1) return Status(Errc::out_of_range, "measure_speed: the context is too small for the tokens asked");
      out.clear();
      const auto max_new = static_cast<std::uint32_t>(std::min(room, gen_tokens - produced));
      GRAFT_TRY(decoder->step(s, sampler, pending, max_new, out));
      pending = out.back();
    }
    const double t_decode = seconds_since(t0);
    samples.push_back({double(prompt.size()) / t_prefill, double(gen_tokens - 1) / t_decode});
  }
  return samples;
}

Expected<std::vector<double>> measure_verify_cost(Session& s, std::span<const TokenId> prompt, std::uint32_t max_rows,
                                                  std::int64_t reps) {
  if (prompt.empty() || max_rows < 1 || reps < 1 || max_rows > s.max_batch())
    return Status(Errc::invalid_argument, "measure_verify_cost: needs a prompt, 1 <= rows <= the batch and reps >= 1");
  GRAFT_TRY(s.reset());
  GRAFT_TRY(s.append(prompt));
  const auto n_past = static_cast<std::uint32_t>(s.tokens().size());
  const std::uint32_t V = s.model().params().n_vocab;
  std::vector<double> medians;
  VerifyChain chain;
  ForwardOutput out;
  for (std::uint32_t n = 1; n <= max_rows; ++n) {
    chain.build(prompt, n_past, n, V);
    // (A hybrid model's one row through the mask too: a tree pass leaves its recurrent state as it is.)
    const SequenceRows seq{&s.kv(), n, n_past, n > 1 || s.model().hybrid() ? chain.mask.data() : nullptr};
    ForwardBatch batch;
    batch.tokens = chain.tokens;
    batch.positions = chain.positions;
    batch.sequences = std::span(&seq, 1);
    batch.logit_rows = chain.rows;
    std::vector<double> times;
    for (std::int64_t r = 0; r < reps; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      GRAFT_TRY(s.forward(batch, out));
      times.push_back(seconds_since(t0));
      GRAFT_TRY(s.kv().truncate(n_past));
    }
    medians.push_back(median(times));
  }
  return medians;
}

Expected<StateCost> measure_state_cost(Session& s, std::span<const TokenId> prompt, std::uint32_t max_rows,
                                       std::int64_t reps) {
  if (!s.recurrent()) return Status(Errc::invalid_argument, "measure_state_cost: the model has no recurrent state");
  if (prompt.empty() || max_rows < 1 || reps < 1 || max_rows > s.recurrent()->max_pending())
    return Status(Errc::invalid_argument, "measure_state_cost: needs a prompt, 1 <= rows <= the tree rows the state keeps");
  GRAFT_TRY(s.reset());
  GRAFT_TRY(s.append(prompt));  // a checkpoint at its end: every cut below goes back to it
  const auto n_past = static_cast<std::uint32_t>(s.tokens().size());
  const std::uint32_t V = s.model().params().n_vocab;
  StateCost cost;
  std::vector<double> decode, tree;
  std::vector<float> logits;
  const TokenId next = static_cast<TokenId>((prompt.back() + 1) % V);
  // One row `next` over a token tree after `at` committed tokens: the state left as it is.
  const std::uint8_t one = 1;
  auto tree_row = [&](std::uint32_t at) {
    SequenceBatch b;
    b.tokens = std::span<const TokenId>(&next, 1);
    b.n_past = at;
    b.ancestor = &one;
    return b;
  };
  const SequenceBatch first = tree_row(n_past);
  for (std::int64_t r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    GRAFT_TRY(s.append(std::span<const TokenId>(&next, 1)));
    decode.push_back(seconds_since(t0));
    GRAFT_TRY(s.truncate(n_past));
    t0 = std::chrono::steady_clock::now();
    GRAFT_TRY(s.forward(first, logits));
    tree.push_back(seconds_since(t0));
    GRAFT_TRY(s.kv().truncate(n_past));
  }
  cost.decode_seconds = median(decode);
  cost.tree_row_seconds = median(tree);
  VerifyChain chain;
  for (std::uint32_t n = 1; n <= max_rows; ++n) {
    chain.build(prompt, n_past, n, V);
    const auto& tokens = chain.tokens;
    const auto& rows = chain.rows;
    SequenceBatch b;
    b.tokens = tokens;
    b.positions = chain.positions;
    b.n_past = n_past;
    b.ancestor = chain.mask.data();
    b.all_logits = true;
    const SequenceBatch after = tree_row(n_past + n);  // the next round's pass, after the n committed
    auto last_logits = [&] { return std::span<const float>(logits).subspan(std::size_t(n - 1) * V, V); };
    std::vector<double> restore, settle;
    for (std::int64_t r = 0; r < reps; ++r) {
      // commit + the next pass applying the path, then the same pass with nothing to apply.
      GRAFT_TRY(s.forward(b, logits));
      auto t0 = std::chrono::steady_clock::now();
      GRAFT_TRY(s.commit_rows(tokens, rows, last_logits()));
      GRAFT_TRY(s.forward(after, logits));
      const double with_path = seconds_since(t0);
      GRAFT_TRY(s.kv().truncate(n_past + n));
      t0 = std::chrono::steady_clock::now();
      GRAFT_TRY(s.forward(after, logits));
      restore.push_back(with_path - seconds_since(t0));  // per pair: the machine's drift cancels
      GRAFT_TRY(s.kv().truncate(n_past + n));
      GRAFT_TRY(s.truncate(n_past));
      // commit + applying the path alone.
      GRAFT_TRY(s.forward(b, logits));
      t0 = std::chrono::steady_clock::now();
      GRAFT_TRY(s.commit_rows(tokens, rows, last_logits()));
      GRAFT_TRY(s.settle_state());
      settle.push_back(seconds_since(t0));
      GRAFT_TRY(s.truncate(n_past));
    }
    cost.restore_seconds.push_back(median(restore));
    cost.settle_seconds.push_back(median(settle));
  }
  return cost;
}

}  // namespace graft
