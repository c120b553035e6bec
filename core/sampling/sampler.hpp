// Token sampling with llama.cpp's default chain: penalties -> top_k -> top_p -> min_p ->
// temperature -> softmax -> one seeded draw. Every step is defined exactly (docs/sampling.md) so
// the same seed, logits and history give the same token on every run and machine.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "profile/profile.hpp"
#include "tokenizer/tokenizer.hpp"

namespace graft {

// Draws from a probability vector (not necessarily normalized; entries >= 0): u in [0, 1) from
// `bits`, target = u * sum, then the first id, in increasing id order, whose running sum
// (accumulated in double) exceeds the target; when rounding leaves none, the last id with a
// non-zero entry. Zero entries are never chosen. The sampler draws with exactly this function, so
// a rejection sampler that reuses distribution() and the same bits picks the same token.
TokenId draw_token(std::span<const float> probs, std::uint64_t bits);

// The uniform the draw uses: the top 53 bits of one 64-bit engine output, times 2^-53. Defined
// here rather than by std::uniform_real_distribution, whose output differs between libraries.
inline double uniform_from_bits(std::uint64_t bits) { return static_cast<double>(bits >> 11) * 0x1.0p-53; }

// The penalty step alone, in place (what sample() applies first): for each distinct token among
// the last repeat_last_n entries of history (-1: all of it, 0: none), a logit x becomes x * r when
// x <= 0 and x / r otherwise (r = repeat_penalty), then x - presence_penalty. In float, as
// llama.cpp. Ids outside the logits are ignored.
void apply_penalties(std::span<float> logits, std::span<const TokenId> history, const SamplingSettings& settings);

// A distribution over a few tokens: ids in increasing order, each with its probability (every
// other token has none). What the chain draws from when it reads a row's best candidates only.
struct SparseDistribution {
  std::vector<TokenId> ids;
  std::vector<float> p;
  float at(TokenId id) const;  // 0 for an id not listed
};

class Sampler {
 public:
  // settings.seed == -1 takes a seed from std::random_device; seed() reports it so a run can be
  // repeated with --seed. Settings are used as validated by the profile schema.
  explicit Sampler(const SamplingSettings& settings);

  const SamplingSettings& settings() const { return settings_; }
  std::uint64_t seed() const { return seed_; }
  bool greedy() const { return settings_.temperature <= 0; }
  // Greedy with nothing added to the logits (no logit bias, no penalties): sample() is then the
  // argmax of the row as it is, which the backend computes where the logits are (ForwardBatch::
  // argmax_rows, top_k with k = 1) so a GPU hands back ids, not rows of n_vocab floats. The same
  // choice for every row whose largest logit is finite (NaN or infinite logits order differently:
  // the sampler reads NaN as -inf and +inf as the largest float, top_k puts NaN last).
  bool plain_argmax() const { return greedy() && settings_.logit_bias.empty() && !penalizes(); }

  // How many of a row's best logits the chain reads, when that is all it reads: top_k, where the
  // chain keeps at most top_k tokens and adds nothing to the logits before choosing them
  // (temperature > 0, 0 < top_k < n_vocab, no logit bias, no penalties); 0 where it needs the whole
  // row. The caller has the backend pick that many (ForwardBatch::candidate_rows) and calls
  // sample_candidates / candidate_distribution: the same token, probability and randomness as
  // sample / distribution over the row (tested), unless more than top_k of the row's logits are
  // +inf or the largest float (the chain reads +inf as the largest float, top_k puts it first).
  std::uint32_t candidates_needed(std::uint32_t n_vocab) const;
  // ids, logits: a row's top_k best entries (ForwardOutput::candidate_ids / candidate_logits, any
  // order, distinct ids; NaN and infinities as the row had them). One engine output per call.
  TokenId sample_candidates(std::span<const TokenId> ids, std::span<const float> logits);
  SparseDistribution candidate_distribution(std::span<const TokenId> ids, std::span<const float> logits) const;

  // Picks the next token. logits: one per vocabulary entry (non-empty); history: the tokens of
  // the context so far, newest last (ids outside the vocabulary are ignored). Greedy sampling
  // applies the penalties, then takes the highest logit (lowest id on ties) and uses no
  // randomness; otherwise exactly one engine output is consumed per call.
  TokenId sample(std::span<const float> logits, std::span<const TokenId> history);

  // Probability of the token the last sample() returned in the distribution it was drawn from
  // (1 for greedy; 0 before the first call).
  float last_probability() const { return last_probability_; }

  // The final distribution of the chain, one entry per vocabulary id (zeros for filtered
  // tokens), summing to 1 up to rounding: what sample() draws from for the same arguments. For
  // greedy settings it is one-hot at the greedy choice. Consumes no randomness.
  std::vector<float> distribution(std::span<const float> logits, std::span<const TokenId> history) const;

  // The next uniform in [0, 1) of the sampler's stream (for a rejection sampler sharing it).
  double next_uniform() { return uniform_from_bits(rng_()); }
  // The next raw engine output (for draw_token on a residual distribution).
  std::uint64_t next_bits() { return rng_(); }

  struct Candidate {
    TokenId id;
    float logit;
  };

 private:
  // The settings ask for repeat or presence penalties (they change the logits once the history
  // has a token).
  bool penalizes() const {
    return (settings_.repeat_penalty != 1.0 || settings_.presence_penalty != 0.0) && settings_.repeat_last_n != 0;
  }
  // Runs the chain up to and including softmax; leaves the kept candidates in increasing id
  // order in `c` and their probabilities in `p`. Returns false for greedy (c holds the choice).
  bool run_chain(std::span<const float> logits, std::span<const TokenId> history, std::vector<Candidate>& c,
                 std::vector<float>& p, std::vector<float>& work) const;
  // The chain from top_p on (c: the candidates so far, in any order; filtered: an earlier step
  // dropped some; work: the whole row as the steps so far left it, or empty when c is all the
  // caller has). Returns as run_chain.
  bool finish_chain(std::vector<Candidate>& c, bool filtered, std::span<const float> work, std::vector<float>& p) const;
  // c = the candidates (ids, logits) as the chain reads them: NaN as -inf, +inf as the largest float.
  static void read_candidates(std::span<const TokenId> ids, std::span<const float> logits, std::vector<Candidate>& c);

  SamplingSettings settings_;
  std::uint64_t seed_ = 0;
  std::mt19937_64 rng_;
  float last_probability_ = 0;
  // Reused between calls: vocabularies reach 150k+ entries.
  std::vector<Candidate> scratch_;
  std::vector<float> probs_;
  std::vector<float> work_;
};

}  // namespace graft
