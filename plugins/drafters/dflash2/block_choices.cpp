#include "block_choices.hpp"

#include <algorithm>
#include <cmath>
#include <bit>
#include <numeric>

namespace graft::dflash2 {

namespace {

// exp(x) for -80 <= x <= 0 within 2e-7 relative: 2^n p(r) with x = n ln 2 + r, |r| <= ln 2 / 2,
// p a degree-6 Taylor polynomial. Plain arithmetic without branches, so the loops below
// vectorize (std::exp is a call per value, and a softmax here covers a whole vocabulary per slot
// every round).
float exp_near(float x) {
  const auto ni = static_cast<std::int32_t>(x * 1.44269504f - 0.5f);  // nearest, for x <= 0
  const auto n = static_cast<float>(ni);
  const float r = x - n * 0.693145751953125f - n * 1.428606765330187e-06f;  // ln 2 in two parts
  const float p =
      ((((((1.0f / 720) * r + 1.0f / 120) * r + 1.0f / 24) * r + 1.0f / 6) * r + 0.5f) * r + 1.0f) * r + 1.0f;
  return p * std::bit_cast<float>((ni + 127) << 23);
}

// sum over the row of exp(row[i] - mx), mx the row's largest value.
double sum_exp(const float* row, std::uint32_t n, float mx) {
  double sum = 0;
  if (mx - *std::min_element(row, row + n) > 80.0f) {  // beyond exp_near's range: rare, exact
    for (std::uint32_t i = 0; i < n; ++i) sum += std::exp(double(row[i]) - mx);
    return sum;
  }
  float lanes[8] = {};  // eight running sums (a vector's lanes), added in double at the end
  std::uint32_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (std::uint32_t l = 0; l < 8; ++l) lanes[l] += exp_near(row[i + l] - mx);
  for (; i < n; ++i) sum += exp_near(row[i] - mx);
  for (float l : lanes) sum += l;
  return sum;
}

// Softmax probability of each of `ids` in the row.
std::vector<double> probabilities(const float* row, std::uint32_t n, const std::vector<std::int32_t>& ids) {
  const float mx = *std::max_element(row, row + n);
  const double sum = sum_exp(row, n, mx);
  std::vector<double> p(ids.size());
  for (std::size_t i = 0; i < ids.size(); ++i) p[i] = std::exp(double(row[ids[i]]) - mx) / sum;
  return p;
}

// A drafter's q must lie in (0, 1]: a candidate whose probability underflowed is not proposed.
void push(Ranked& r, std::uint32_t index, double q) {
  if (!(q > 0)) return;
  r.index.push_back(index);
  r.q.push_back(static_cast<float>(std::min(q, 1.0)));
  if (!(r.q.back() > 0.0f)) r.index.pop_back(), r.q.pop_back();
}

}  // namespace

BlockChoices plain_choices(const float* logits, std::uint32_t n_vocab, std::uint32_t n_slots, std::uint32_t top_k) {
  BlockChoices c;
  for (std::uint32_t s = 0; s < n_slots; ++s) {
    const float* row = logits + std::size_t(s) * n_vocab;
    c.tokens.push_back(top_ids(row, n_vocab, top_k));
    const std::vector<double> p = probabilities(row, n_vocab, c.tokens.back());
    Ranked r;
    for (std::uint32_t i = 0; i < p.size(); ++i) push(r, i, p[i]);
    c.children.push_back({std::move(r)});
  }
  return c;
}

BlockChoices selector_choices(const float* logits, std::uint32_t n_vocab,
                              const std::vector<std::vector<std::int32_t>>& candidates, const SelectorRows& rows,
                              std::uint32_t top_k) {
  BlockChoices c;
  const std::uint32_t R = rows.rank;
  const std::size_t K = candidates.empty() ? 0 : candidates[0].size();
  for (std::uint32_t s = 0; s < candidates.size(); ++s) {
    const float* row = logits + std::size_t(s) * n_vocab;
    const std::vector<std::int32_t>& cand = candidates[s];
    const std::vector<double> p = probabilities(row, n_vocab, cand);
    const double mass = std::accumulate(p.begin(), p.end(), 0.0);
    const float* gate = rows.gate + std::size_t(s) * R;
    const float* next = rows.next + std::size_t(s) * K * R;
    // Slot 1 follows the anchor; slot s + 1 follows each candidate of slot s.
    const std::size_t n_parents = s == 0 ? 1 : candidates[s - 1].size();
    const float* prev = rows.prev + (s == 0 ? 0 : 1 + (std::size_t(s) - 1) * K) * R;
    std::vector<Ranked> per_parent(n_parents);
    std::vector<double> score(cand.size());
    for (std::size_t a = 0; a < n_parents; ++a) {
      // pg[r] = prev[a][r] * gate[r], then the bigram term against each candidate's next row.
      std::vector<float> pg(R);
      for (std::uint32_t r = 0; r < R; ++r) pg[r] = prev[a * R + r] * gate[r];
      for (std::size_t b = 0; b < cand.size(); ++b) {
        float pair = 0.0f;
        for (std::uint32_t r = 0; r < R; ++r) pair += pg[r] * next[b * R + r];
        score[b] = double(row[cand[b]]) + double(pair);
      }
      std::vector<std::uint32_t> order(cand.size());
      std::iota(order.begin(), order.end(), 0u);
      std::stable_sort(order.begin(), order.end(), [&](std::uint32_t x, std::uint32_t y) { return score[x] > score[y]; });
      const double mx = score[order[0]];
      double z = 0;
      for (double v : score) z += std::exp(v - mx);
      for (std::size_t i = 0; i < order.size() && i < top_k; ++i)
        push(per_parent[a], order[i], mass * std::exp(score[order[i]] - mx) / z);
    }
    c.tokens.push_back(cand);
    c.children.push_back(std::move(per_parent));
  }
  return c;
}

std::vector<std::int32_t> best_chain(const BlockChoices& choices) {
  std::vector<std::int32_t> out;
  std::uint32_t parent = 0;
  for (std::uint32_t d = 1; d <= choices.depth(); ++d) {
    const Ranked& r = choices.after(d, parent);
    if (r.index.empty()) break;
    parent = r.index[0];
    out.push_back(choices.tokens[d - 1][parent]);
  }
  return out;
}

}  // namespace graft::dflash2
