#include "speculative/verify_cost.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace graft {

namespace {
constexpr double kDecay = 0.95;      // weight of a pass 1 pass older (about the last 20 count)
constexpr double kPriorSlope = 0.1;  // b / a before two sizes have been measured
constexpr double kSizeDecay = 0.9;      // per size: about the last 10 passes of that size
constexpr double kSizeMinWeight = 1.5;  // a size's own mean applies from its second pass
constexpr std::uint64_t kSizeMaxAge = 256;  // ... while it was measured within this many passes
// One pass hit by a preemption must not price a size out for long, nor tilt the line: a time is
// clipped to this multiple of the model's estimate.
constexpr double kRatioMax = 2.0;
constexpr std::uint32_t kMaxSizes = 512;  // sizes beyond get the line alone
}  // namespace

void VerifyCost::record(std::uint32_t rows, double seconds) {
  if (rows == 0 || !(seconds > 0)) return;
  // Only upwards: a preemption makes a pass slower, never faster, and a fast pass must be able
  // to correct an estimate that started high (cold caches).
  if (w_ >= kSizeMinWeight) seconds = std::min(seconds, kRatioMax * estimate(rows));
  ++passes_;
  if (rows < kMaxSizes) {
    if (sizes_.size() <= rows) sizes_.resize(rows + 1);
    Size& z = sizes_[rows];
    z.w = kSizeDecay * z.w + 1;
    z.seconds = kSizeDecay * z.seconds + seconds;
    z.last_pass = passes_;
  }
  const double x = double(rows) - 1;
  w_ = kDecay * w_ + 1;
  x_ = kDecay * x_ + x;
  y_ = kDecay * y_ + seconds;
  xx_ = kDecay * xx_ + x * x;
  xy_ = kDecay * xy_ + x * seconds;
}

double VerifyCost::estimate(std::uint32_t rows) const {
  if (w_ <= 0) return 0;
  if (rows < sizes_.size()) {
    const Size& z = sizes_[rows];
    if (z.w >= kSizeMinWeight && passes_ - z.last_pass < kSizeMaxAge) return z.seconds / z.w;
  }
  return line(rows);
}

double VerifyCost::line(std::uint32_t rows) const {
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

nlohmann::json VerifyCost::to_json() const {
  nlohmann::json sizes = nlohmann::json::array();
  for (const Size& z : sizes_) sizes.push_back({z.w, z.seconds});
  return {{"w", w_}, {"x", x_}, {"y", y_}, {"xx", xx_}, {"xy", xy_}, {"sizes", sizes}};
}

void VerifyCost::from_json(const nlohmann::json& j) {
  const auto num = [&](const nlohmann::json& v) {
    const double x = v.get<double>();
    if (!std::isfinite(x) || x < 0) throw std::invalid_argument("a negative or non-finite number");
    return x;
  };
  VerifyCost c;
  c.w_ = num(j.at("w")), c.x_ = num(j.at("x")), c.y_ = num(j.at("y")), c.xx_ = num(j.at("xx")), c.xy_ = num(j.at("xy"));
  const auto& sizes = j.at("sizes");
  if (sizes.size() > kMaxSizes) throw std::invalid_argument("too many sizes");
  // Loaded sizes count as measured just now: they price their size until newer passes replace them.
  c.passes_ = 1;
  for (const auto& z : sizes) c.sizes_.push_back(Size{num(z.at(0)), num(z.at(1)), c.passes_});
  *this = c;
}

}  // namespace graft
