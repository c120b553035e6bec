// Compiled for the baseline ISA only (plain float operations, one rounding each), so every level's
// caller gets the same levels and scales.
#include "query_q8.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace graft::kv {

void quantize_query_q8(const float* x, std::uint32_t n, std::int8_t* qs, float* d) noexcept {
  for (std::uint32_t b = 0; b < n / 32; ++b, x += 32, qs += 32) {
    float amax = 0.0f;
    bool finite = true;
    for (int i = 0; i < 32; ++i) {
      finite = finite && std::isfinite(x[i]);
      amax = std::max(amax, std::fabs(x[i]));
    }
    if (!finite) {
      d[b] = std::numeric_limits<float>::quiet_NaN();
      for (int i = 0; i < 32; ++i) qs[i] = 0;
      continue;
    }
    d[b] = amax / 127.0f;
    const float id = d[b] != 0.0f ? 1.0f / d[b] : 0.0f;
    // |x * id| is 127 at most up to a rounding; a subnormal d can make id infinite (0 * inf is NaN),
    // which the clamp and the NaN test keep inside int8
    for (int i = 0; i < 32; ++i) {
      const float v = std::round(x[i] * id);
      qs[i] = v != v ? 0 : static_cast<std::int8_t>(std::clamp(v, -127.0f, 127.0f));
    }
  }
}

}  // namespace graft::kv
