#include "speculative/verify_cost.hpp"

#include <algorithm>

namespace graft {

namespace {
constexpr double kDecay = 0.95;      // weight of a pass 1 pass older (about the last 20 count)
constexpr double kPriorSlope = 0.1;  // b / a before two sizes have been measured
}  // namespace

void VerifyCost::record(std::uint32_t rows, double seconds) {
  if (rows == 0 || !(seconds > 0)) return;
  const double x = double(rows) - 1;
  w_ = kDecay * w_ + 1;
  x_ = kDecay * x_ + x;
  y_ = kDecay * y_ + seconds;
  xx_ = kDecay * xx_ + x * x;
  xy_ = kDecay * xy_ + x * seconds;
}

double VerifyCost::estimate(std::uint32_t rows) const {
  if (w_ <= 0) return 0;
  const double mx = x_ / w_, my = y_ / w_, var = xx_ / w_ - mx * mx;
  double b = var > 0.25 ? (xy_ / w_ - mx * my) / var : 0;  // rows spread over at least ~1
  double a = my - b * mx;
  if (var <= 0.25 || b < 0 || a <= 0) {
    // One size only (or noise): the prior's shape through the mean.
    a = my / (1 + kPriorSlope * mx);
    b = kPriorSlope * a;
  }
  return a + b * (double(rows) - 1);
}

std::uint32_t VerifyCost::best_count(std::span<const float> chances) const {
  if (estimate(1) <= 0) return static_cast<std::uint32_t>(chances.size());  // nothing known yet: try it all
  double expected = 1.0, best_rate = expected / estimate(1);
  std::uint32_t best = 0;
  for (std::uint32_t n = 1; n <= chances.size(); ++n) {
    expected += chances[n - 1];
    const double rate = expected / estimate(n + 1);
    if (rate > best_rate) best_rate = rate, best = n;
  }
  return best;
}

}  // namespace graft
