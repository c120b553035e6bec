#include "causal_conv.hpp"

namespace graft::dflash2 {

void causal_conv(const ConvShape& s, std::uint32_t side, std::uint32_t rows, const float* in, const float* dyn,
                 const float* base, float* out) {
  const std::uint32_t E = s.n_embd, G = s.groups();
  for (std::uint32_t j = 0; j < rows; ++j) {
    float* o = out + std::size_t(j) * E;
    const float* coef = dyn + std::size_t(j) * s.dyn_width() + std::size_t(side) * s.kernel * G;
    for (std::uint32_t c = 0; c < E; ++c) o[c] = 0.0f;
    // Taps in the reference's order (tap 0 first), so the sums round as its float code would.
    for (std::uint32_t tap = 0; tap < s.kernel && tap <= j; ++tap) {
      const float* x = in + std::size_t(j - tap) * E;
      const float* b = base + (std::size_t(side) * s.kernel + tap) * E;
      const float* d = coef + std::size_t(tap) * G;
      // A group's channels share one coefficient: no division per channel, and a loop to vectorize.
      for (std::uint32_t g = 0; g < G; ++g)
        for (std::uint32_t c = g * s.group; c < (g + 1) * s.group; ++c) o[c] += (b[c] + d[g]) * x[c];
    }
  }
}

}  // namespace graft::dflash2
