#include "speculative/verify_cost.hpp"

#include <algorithm>

namespace graft {

namespace {
constexpr double kAlpha = 0.1;       // weight of a new measurement once a few are in
constexpr double kPriorSlope = 0.1;  // t(n) / t(1) grows by this per row before anything is known
double prior(std::uint32_t n) { return 1.0 + kPriorSlope * (double(n) - 1.0); }
}  // namespace

void VerifyCost::record(std::uint32_t rows, double seconds) {
  if (rows == 0 || rows >= seconds_.size() || !(seconds > 0)) return;
  // A plain mean for the first few, then a moving average (the machine's speed drifts).
  const double w = seen_[rows] < 8 ? 1.0 / (seen_[rows] + 1) : kAlpha;
  seconds_[rows] += w * (seconds - seconds_[rows]);
  ++seen_[rows];
}

double VerifyCost::estimate(std::uint32_t n) const {
  if (n >= seconds_.size()) n = static_cast<std::uint32_t>(seconds_.size() - 1);
  if (seen_[n]) return seconds_[n];
  std::uint32_t lo = 0, hi = 0;
  for (std::uint32_t m = n; m-- > 1;)
    if (seen_[m]) { lo = m; break; }
  for (std::uint32_t m = n + 1; m < seconds_.size(); ++m)
    if (seen_[m]) { hi = m; break; }
  if (lo && hi) return seconds_[lo] + (seconds_[hi] - seconds_[lo]) * double(n - lo) / double(hi - lo);
  const std::uint32_t near = lo ? lo : hi;
  if (!near) return 0;
  return seconds_[near] * prior(n) / prior(near);
}

std::uint32_t VerifyCost::best_count(std::span<const float> estimates) const {
  if (estimate(1) <= 0) return static_cast<std::uint32_t>(estimates.size());  // nothing known yet: try it all
  double expected = 1.0, best_rate = expected / estimate(1);
  std::uint32_t best = 0;
  for (std::uint32_t n = 1; n <= estimates.size(); ++n) {
    expected += estimates[n - 1];
    const double rate = expected / estimate(n + 1);
    if (rate > best_rate) best_rate = rate, best = n;
  }
  return best;
}

}  // namespace graft
