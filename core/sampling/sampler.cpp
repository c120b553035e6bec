// The sampling chain. Candidates are (id, logit) pairs; every filter keeps a best-first prefix of
// the total order "higher logit first, lower id on ties", so the kept set does not depend on how
// a standard library implements nth_element or partition; top_p sums integer masses (exact in
// any order) and the softmax and the draw sum in double in increasing id order (docs/sampling.md).
#include "sampling/sampler.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace graft {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// A logit as the chain reads it: NaN can never win (-inf), +inf would make every softmax term NaN
// (the largest float).
inline float chain_logit(float x) {
  return std::isnan(x) ? kNegInf : x == std::numeric_limits<float>::infinity() ? std::numeric_limits<float>::max() : x;
}

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

namespace {

using Candidate = Sampler::Candidate;

// The total order every filter uses: higher logit first, lower id on ties.
inline bool better(const Candidate& a, const Candidate& b) {
  return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
}

// top_p's mass unit: exp(logit - max) in float, times 2^40, truncated. Integer sums are exact, so
// the kept set does not depend on the order candidates are visited in (any partition scheme,
// any standard library). Weights below 2^-40 of the best count as nothing.
inline std::uint64_t mass(float logit, float max) {
  return static_cast<std::uint64_t>(std::exp(logit - max) * 0x1.0p40f);
}

// Reorders c so its first r entries are the r best, for the smallest r >= 1 whose mass reaches
// ceil(top_p * total mass); returns r. Quickselect on mass (each candidate's mass computed once):
// expected linear time, no sort.
std::size_t best_prefix_by_mass(std::vector<Candidate>& c, float max, double top_p) {
  struct Weighted {
    Candidate c;
    std::uint64_t mass;
  };
  std::vector<Weighted> w(c.size());
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < c.size(); ++i) total += (w[i] = {c[i], mass(c[i].logit, max)}).mass;
  const auto target = std::min(total, static_cast<std::uint64_t>(std::ceil(top_p * static_cast<double>(total))));
  auto is_better = [](const Weighted& a, const Weighted& b) { return better(a.c, b.c); };
  std::size_t r = 0;
  if (target == 0) {  // the best alone
    std::iter_swap(w.begin(), std::min_element(w.begin(), w.end(), is_better));
    r = 1;
  } else {
    std::size_t lo = 0, hi = w.size();  // the answer r is in (lo, hi]; [0, lo) is kept
    std::uint64_t need = target;         // mass still missing after [0, lo)
    while (hi - lo > 1) {
      const Weighted pivot = w[lo + (hi - lo) / 2];
      const auto first = w.begin() + static_cast<std::ptrdiff_t>(lo), last = w.begin() + static_cast<std::ptrdiff_t>(hi);
      const auto mid = std::partition(first, last, [&](const Weighted& x) { return is_better(x, pivot); });
      std::uint64_t above = 0;
      for (auto it = first; it != mid; ++it) above += it->mass;
      const auto a = static_cast<std::size_t>(mid - first);
      if (above >= need) {  // the answer lies among the candidates better than the pivot
        hi = lo + a;
        continue;
      }
      need -= above;
      // The pivot is the best of the rest: move it next, so the prefix stays "better first".
      std::iter_swap(mid, std::find_if(mid, last, [&](const Weighted& x) { return x.c.id == pivot.c.id; }));
      lo += a + 1;
      if (pivot.mass >= need) {
        hi = lo;
        break;
      }
      need -= pivot.mass;
    }
    r = hi;  // when one candidate is left undecided, it is needed
  }
  for (std::size_t i = 0; i < r; ++i) c[i] = w[i].c;
  return r;
}

// The k best of `logits` (k < size): a buffer of up to 2k candidates is cut back to its k best
// whenever it fills, and anything not better than the k-th best so far is skipped with one
// comparison, so typical cost is one pass over the vocabulary.
void top_k_of(std::span<const float> logits, std::size_t k, std::vector<Candidate>& c) {
  const std::size_t cap = std::max<std::size_t>(2 * k, 64);
  c.clear();
  c.reserve(cap + 1);
  bool full = false;
  Candidate kth{};
  auto shrink = [&] {
    std::nth_element(c.begin(), c.begin() + static_cast<std::ptrdiff_t>(k) - 1, c.end(), better);
    c.resize(k);
    kth = c[k - 1];
    full = true;
  };
  for (std::size_t i = 0; i < logits.size(); ++i) {
    const Candidate x{static_cast<TokenId>(i), logits[i]};
    if (full && !better(x, kth)) continue;
    c.push_back(x);
    if (c.size() >= cap) shrink();
  }
  if (c.size() > k) shrink();
}

}  // namespace

bool Sampler::run_chain(std::span<const float> logits, std::span<const TokenId> history, std::vector<Candidate>& c,
                        std::vector<float>& p, std::vector<float>& work) const {
  // Greedy with nothing to add to the logits: the argmax of the row as it is, without the copy (a
  // speculative round draws at every row of its path, so this runs several times per round).
  const bool penalties = penalizes() && !history.empty();
  if (settings_.temperature <= 0 && settings_.logit_bias.empty() && !penalties) {
    // The same choice as below: chain_logit's values, lowest id on ties.
    std::size_t best = 0;
    float best_v = chain_logit(logits[0]);
    for (std::size_t i = 1; i < logits.size(); ++i)
      if (logits[i] > best_v) {  // false for NaN, as chain_logit(NaN) would be
        const float v = chain_logit(logits[i]);
        if (v > best_v) best_v = v, best = i;
      }
    c.assign(1, {static_cast<TokenId>(best), best_v});
    p.assign(1, 1.0f);
    return false;
  }
  // 1. Logit biases and penalties, on a copy of the logits, read as chain_logit reads them.
  work.assign(logits.begin(), logits.end());
  for (const auto& [id, bias] : settings_.logit_bias)
    if (id >= 0 && static_cast<std::size_t>(id) < work.size()) work[static_cast<std::size_t>(id)] += bias;
  apply_penalties(work, history, settings_);
  for (float& x : work) x = chain_logit(x);
  const auto n = static_cast<TokenId>(work.size());

  // 2. Greedy: argmax, lowest id on ties.
  if (settings_.temperature <= 0) {
    TokenId best = 0;
    for (TokenId i = 1; i < n; ++i)
      if (work[static_cast<std::size_t>(i)] > work[static_cast<std::size_t>(best)]) best = i;
    c.assign(1, {best, work[static_cast<std::size_t>(best)]});
    p.assign(1, 1.0f);
    return false;
  }

  // top_k, top_p and min_p each keep a best-first prefix of the same total order, so the kept
  // set is "every candidate at least as good as the worst one kept". c holds the kept set in any
  // order; `filtered` says some filter removed something.
  bool filtered = false;

  // 3. top_k: a partial selection, never a sort of the vocabulary.
  if (settings_.top_k > 0 && static_cast<std::size_t>(settings_.top_k) < work.size()) {
    top_k_of(work, static_cast<std::size_t>(settings_.top_k), c);
    filtered = true;
  } else {
    c.resize(work.size());
    for (TokenId i = 0; i < n; ++i) c[static_cast<std::size_t>(i)] = {i, work[static_cast<std::size_t>(i)]};
  }

  return finish_chain(c, filtered, work, p);
}

bool Sampler::finish_chain(std::vector<Candidate>& c, bool filtered, std::span<const float> work,
                           std::vector<float>& p) const {
  auto max_logit = [&] {
    float m = kNegInf;
    for (const auto& x : c) m = std::max(m, x.logit);
    return m;
  };

  // 4. top_p: the shortest best-first prefix whose softmax mass (no temperature yet) reaches
  //    top_p of the total; the token that crosses the line is kept.
  if (settings_.top_p < 1.0 && c.size() > 1 && max_logit() > kNegInf) {
    const std::size_t r = best_prefix_by_mass(c, max_logit(), settings_.top_p);
    if (r < c.size()) {
      c.resize(r);
      filtered = true;
    }
  }

  // 5. min_p: drop tokens with p < min_p * p_max, i.e. logit < max + ln(min_p).
  if (settings_.min_p > 0.0 && c.size() > 1) {
    const double threshold = static_cast<double>(max_logit()) + std::log(settings_.min_p);
    const auto end = std::remove_if(c.begin(), c.end(), [&](const Candidate& x) { return static_cast<double>(x.logit) < threshold; });
    if (end != c.end()) {
      c.erase(end, c.end());
      filtered = true;
    }
  }

  // 6. Back to increasing id order (the draw order): a sort when few are kept (or the row is not
  //    at hand), else one pass over the vocabulary with the worst kept candidate as the cut. Both
  //    give the same list: the kept set is every candidate at least as good as the cut.
  if (filtered) {
    const auto n = static_cast<TokenId>(work.size());
    if (c.size() * 16 < work.size() || work.empty()) {
      std::sort(c.begin(), c.end(), [](const Candidate& a, const Candidate& b) { return a.id < b.id; });
    } else {
      const Candidate cut = *std::max_element(c.begin(), c.end(), better);  // the worst kept
      c.clear();
      for (TokenId i = 0; i < n; ++i) {
        const Candidate x{i, work[static_cast<std::size_t>(i)]};
        if (!better(cut, x)) c.push_back(x);
      }
    }
  }

  // 7. Temperature and softmax: w = exp((logit - max) / T) in float, summed in double.
  const float m = max_logit();
  if (m == kNegInf) {  // every logit -inf or NaN: nothing to prefer
    c.assign(1, {0, kNegInf});
    p.assign(1, 1.0f);
    return true;
  }
  const auto inv_t = static_cast<float>(1.0 / settings_.temperature);
  p.resize(c.size());
  double total = 0;
  for (std::size_t i = 0; i < c.size(); ++i) total += p[i] = std::exp((c[i].logit - m) * inv_t);
  for (auto& x : p) x = static_cast<float>(x / total);
  return true;
}

std::uint32_t Sampler::candidates_needed(std::uint32_t n_vocab) const {
  if (greedy() || penalizes() || !settings_.logit_bias.empty() || settings_.top_k <= 0 ||
      settings_.top_k >= static_cast<std::int64_t>(n_vocab))
    return 0;
  return static_cast<std::uint32_t>(settings_.top_k);
}

void Sampler::read_candidates(std::span<const TokenId> ids, std::span<const float> logits, std::vector<Candidate>& c) {
  c.resize(ids.size());
  for (std::size_t i = 0; i < ids.size(); ++i) c[i] = {ids[i], chain_logit(logits[i])};
}

TokenId Sampler::sample_candidates(std::span<const TokenId> ids, std::span<const float> logits) {
  if (ids.empty() || ids.size() != logits.size()) return -1;
  read_candidates(ids, logits, scratch_);
  // Step 3 (top_k) was the backend's; the row itself is not at hand.
  finish_chain(scratch_, true, {}, probs_);
  const std::size_t i = draw_index(probs_, uniform_from_bits(rng_()));
  last_probability_ = probs_[i];
  return scratch_[i].id;
}

SparseDistribution Sampler::candidate_distribution(std::span<const TokenId> ids, std::span<const float> logits) const {
  SparseDistribution d;
  if (ids.empty() || ids.size() != logits.size()) return d;
  std::vector<Candidate> c;
  read_candidates(ids, logits, c);
  finish_chain(c, true, {}, d.p);
  d.ids.resize(c.size());
  for (std::size_t i = 0; i < c.size(); ++i) d.ids[i] = c[i].id;
  return d;
}

float SparseDistribution::at(TokenId id) const {
  const auto it = std::lower_bound(ids.begin(), ids.end(), id);
  return it != ids.end() && *it == id ? p[static_cast<std::size_t>(it - ids.begin())] : 0.0f;
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
