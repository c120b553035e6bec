// How long a verify pass of n rows takes, learnt from the passes the decoder runs, and how many
// drafted nodes a round should verify: on a CPU a pass of 16 rows can cost several decode steps
// (docs/speculative.md has measured curves), so verifying nodes that will likely be rejected
// makes decoding slower. The time is modelled as t(n) = a + b (n - 1), fitted by least squares
// over recent passes (older ones weigh less: the machine's speed drifts); a size measured lately
// is priced by its own recent passes instead: the kernels' tiles make the cost a staircase (on the
// zoo model 4 rows cost about as much as 3, 5 notably more), which a line alone smooths away. The
// round keeps the n best nodes that maximise expected tokens per second, (1 + their acceptance
// chances) / t(n + 1).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <span>
#include <vector>

namespace graft {

class VerifyCost {
 public:
  // A pass of `rows` rows took `seconds`.
  void record(std::uint32_t rows, double seconds);
  // The model's time for `rows` rows; 0 before any measurement. With passes of one size only, the
  // slope is the prior's: 10% of a one-row pass per extra row (an optimistic start that the
  // measurements then correct). A size measured twice within the last 256 passes: their decayed mean.
  double estimate(std::uint32_t rows) const;
  // How many of the nodes (acceptance chances, best first) to verify.
  std::uint32_t best_count(std::span<const float> chances) const;
  // What it learnt, to keep across runs (round_policy.hpp); from_json throws nlohmann's errors on a
  // wrong shape and rejects negative or non-finite numbers (std::invalid_argument).
  nlohmann::json to_json() const;
  void from_json(const nlohmann::json& j);

 private:
  double line(std::uint32_t rows) const;

  // Decayed sums over (x = rows - 1, y = seconds).
  double w_ = 0, x_ = 0, y_ = 0, xx_ = 0, xy_ = 0;
  // Per size: decayed weight and sum of its times, and the pass that last measured it.
  struct Size {
    double w = 0, seconds = 0;
    std::uint64_t last_pass = 0;
  };
  std::vector<Size> sizes_;
  std::uint64_t passes_ = 0;
};

}  // namespace graft
