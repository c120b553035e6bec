// How long a verify pass of n rows takes, learnt from the passes the decoder runs, and how many
// drafted nodes a round should verify: on a CPU a pass of 16 rows costs several decode steps
// (docs/speculative.md has the measured curve), so verifying nodes that will likely be rejected
// makes decoding slower. The round keeps the n best nodes that maximise expected tokens per
// second, (1 + sum of their acceptance estimates) / cost(n + 1).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace graft {

class VerifyCost {
 public:
  explicit VerifyCost(std::uint32_t max_rows) : seconds_(max_rows + 1, 0.0), seen_(max_rows + 1, 0) {}

  // A pass of `rows` rows took `seconds`.
  void record(std::uint32_t rows, double seconds);
  // The estimate for `rows` rows: what was measured there, else interpolated between measured row
  // counts, else the prior shape t(n) = t(1) (1 + 0.1 (n - 1)) scaled to the nearest measurement.
  // 0 before any measurement.
  double estimate(std::uint32_t rows) const;
  // How many of the nodes (acceptance estimates, best first) to verify.
  std::uint32_t best_count(std::span<const float> estimates) const;

 private:
  std::vector<double> seconds_;  // [rows]: moving average
  std::vector<std::uint32_t> seen_;
};

}  // namespace graft
