// The sampling chain. Candidates are (id, logit) pairs; every ordering uses the total order
// "higher logit first, lower id on ties", so nth_element/sort give the same result with any
// standard library, and every sum runs in double in increasing id order (docs/sampling.md).
#include "sampling/sampler.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace graft {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Index of the drawn entry (see draw_token); p.size() must be > 0.
std::size_t draw_index(std::span<const float> p, double u) {
  double total = 0;
  for (const float x : p) total += x;
  const double target = u * total;
  double cum = 0;
  std::size_t last_nonzero = 0;
  for (std::size_t i = 0; i < p.size(); ++i) {
    if (p[i] <= 0) continue;
    cum += p[i];
    last_nonzero = i;
    if (cum > target) return i;
  }
  return last_nonzero;  // rounding left the target just past the running sum
}

}  // namespace

TokenId draw_token(std::span<const float> probs, std::uint64_t bits) {
  if (probs.empty()) return -1;
  return static_cast<TokenId>(draw_index(probs, uniform_from_bits(bits)));
}

Sampler::Sampler(const SamplingSettings& settings) : settings_(settings) {
  if (settings.seed >= 0) {
    seed_ = static_cast<std::uint64_t>(settings.seed);
  } else {
    std::random_device rd;
    // Kept below 2^63 so the reported seed can be passed back through --seed (an int64 flag).
    seed_ = ((static_cast<std::uint64_t>(rd()) << 32) | rd()) & 0x7fffffffffffffffull;
  }
  rng_.seed(seed_);
}

void apply_penalties(std::span<float> logits, std::span<const TokenId> history, const SamplingSettings& settings) {
  const float repeat = static_cast<float>(settings.repeat_penalty);
  const float presence = static_cast<float>(settings.presence_penalty);
  if ((repeat == 1.0f && presence == 0.0f) || settings.repeat_last_n == 0 || history.empty()) return;
  std::size_t window = history.size();
  if (settings.repeat_last_n > 0) window = std::min(window, static_cast<std::size_t>(settings.repeat_last_n));
  // Each distinct token once, however often it occurs (llama.cpp's presence/repeat semantics).
  std::vector<TokenId> seen(history.end() - static_cast<std::ptrdiff_t>(window), history.end());
  std::sort(seen.begin(), seen.end());
  seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
  for (const TokenId id : seen) {
    if (id < 0 || static_cast<std::size_t>(id) >= logits.size()) continue;
    float& x = logits[static_cast<std::size_t>(id)];
    x = x <= 0 ? x * repeat : x / repeat;
    x -= presence;
  }
}

bool Sampler::run_chain(std::span<const float> logits, std::span<const TokenId> history, std::vector<Candidate>& c,
                        std::vector<float>& p, std::vector<float>& work) const {
  // 1. Penalties, on a copy of the logits.
  work.assign(logits.begin(), logits.end());
  apply_penalties(work, history, settings_);
  const auto n = static_cast<TokenId>(work.size());
  c.resize(work.size());
  for (TokenId i = 0; i < n; ++i) {
    float x = work[static_cast<std::size_t>(i)];
    // NaN can never win; +inf would make every softmax term NaN.
    if (std::isnan(x)) x = kNegInf;
    if (x == std::numeric_limits<float>::infinity()) x = std::numeric_limits<float>::max();
    c[static_cast<std::size_t>(i)] = {i, x};
  }

  auto better = [](const Candidate& a, const Candidate& b) {
    return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
  };

  // 2. Greedy: argmax, lowest id on ties (c is in id order here).
  if (settings_.temperature <= 0) {
    std::size_t best = 0;
    for (std::size_t i = 1; i < c.size(); ++i)
      if (c[i].logit > c[best].logit) best = i;
    c = {c[best]};
    p.assign(1, 1.0f);
    return false;
  }

  // c[0, sorted) is the best `sorted` candidates in order; the rest are worse and unordered.
  std::size_t sorted = 0;
  bool id_order = true;
  auto ensure_sorted = [&](std::size_t want) {
    want = std::min(want, c.size());
    if (want <= sorted) return;
    const auto first = c.begin() + static_cast<std::ptrdiff_t>(sorted);
    const auto mid = c.begin() + static_cast<std::ptrdiff_t>(want);
    std::nth_element(first, mid - 1, c.end(), better);
    std::sort(first, mid, better);
    sorted = want;
    id_order = false;
  };
  auto max_logit = [&] {
    if (sorted > 0) return c[0].logit;
    float m = kNegInf;
    for (const auto& x : c) m = std::max(m, x.logit);
    return m;
  };

  // 3. top_k: a partial selection, never a full sort of the vocabulary.
  if (settings_.top_k > 0 && static_cast<std::size_t>(settings_.top_k) < c.size()) {
    const auto k = static_cast<std::size_t>(settings_.top_k);
    ensure_sorted(k);
    c.resize(k);
  }

  // 4. top_p: the shortest prefix (best first) whose softmax mass reaches top_p. Sorts only as
  //    far as it has to, doubling the sorted prefix.
  if (settings_.top_p < 1.0 && c.size() > 1) {
    const double m = max_logit();
    double total = 0;
    for (const auto& x : c) total += std::exp(static_cast<double>(x.logit) - m);
    const double target = settings_.top_p * total;
    double cum = 0;
    std::size_t keep = c.size();
    for (std::size_t i = 0; i < c.size(); ++i) {
      if (i >= sorted) ensure_sorted(std::max<std::size_t>(64, 2 * sorted));
      cum += std::exp(static_cast<double>(c[i].logit) - m);
      if (cum >= target) {
        keep = i + 1;
        break;
      }
    }
    c.resize(keep);
    sorted = std::min(sorted, keep);
  }

  // 5. min_p: drop tokens with p < min_p * p_max, i.e. logit < max + log(min_p). Order kept.
  if (settings_.min_p > 0.0 && c.size() > 1) {
    const double threshold = static_cast<double>(max_logit()) + std::log(settings_.min_p);
    const auto kept_end = std::stable_partition(
        c.begin(), c.end(), [&](const Candidate& x) { return static_cast<double>(x.logit) >= threshold; });
    c.erase(kept_end, c.end());
    sorted = std::min(sorted, c.size());
  }

  // 6. Temperature and softmax, in increasing id order (the draw order).
  if (!id_order) std::sort(c.begin(), c.end(), [](const Candidate& a, const Candidate& b) { return a.id < b.id; });
  sorted = 0;
  const double m = max_logit();
  if (m == static_cast<double>(kNegInf)) {  // every logit -inf or NaN: nothing to prefer
    c = {c[0]};
    p.assign(1, 1.0f);
    return true;
  }
  const double inv_t = 1.0 / settings_.temperature;
  std::vector<double> w(c.size());
  double total = 0;
  for (std::size_t i = 0; i < c.size(); ++i) total += w[i] = std::exp((static_cast<double>(c[i].logit) - m) * inv_t);
  p.resize(c.size());
  for (std::size_t i = 0; i < c.size(); ++i) p[i] = static_cast<float>(w[i] / total);
  return true;
}

TokenId Sampler::sample(std::span<const float> logits, std::span<const TokenId> history) {
  if (logits.empty()) return -1;
  if (!run_chain(logits, history, scratch_, probs_, work_)) {
    last_probability_ = 1.0f;
    return scratch_[0].id;
  }
  const std::size_t i = draw_index(probs_, uniform_from_bits(rng_()));
  last_probability_ = probs_[i];
  return scratch_[i].id;
}

std::vector<float> Sampler::distribution(std::span<const float> logits, std::span<const TokenId> history) const {
  std::vector<float> out(logits.size(), 0.0f);
  if (logits.empty()) return out;
  std::vector<Candidate> c;
  std::vector<float> p, work;
  run_chain(logits, history, c, p, work);
  for (std::size_t i = 0; i < c.size(); ++i) out[static_cast<std::size_t>(c[i].id)] = p[i];
  return out;
}

}  // namespace graft
