#include "rotation.hpp"

#include <cmath>

namespace graft::kv {

namespace {

// S's entry i: a fixed pseudo-random sign from the bits of a multiplicative hash of i (the same
// for every head and layer; any fixed choice keeps R orthonormal).
inline bool flipped(std::uint32_t i) noexcept { return ((i * 0x9E3779B1u) >> 17) & 1u; }

void apply_signs(float* x, std::uint32_t d) noexcept {
  for (std::uint32_t i = 0; i < d; ++i)
    if (flipped(i)) x[i] = -x[i];
}

// x = H x / sqrt(d): the fast transform's butterflies, then one scaling.
void hadamard(float* x, std::uint32_t d) noexcept {
  for (std::uint32_t h = 1; h < d; h *= 2)
    for (std::uint32_t i = 0; i < d; i += 2 * h)
      for (std::uint32_t j = i; j < i + h; ++j) {
        const float a = x[j], b = x[j + h];
        x[j] = a + b;
        x[j + h] = a - b;
      }
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  for (std::uint32_t i = 0; i < d; ++i) x[i] *= scale;
}

}  // namespace

void rotate_row(float* x, std::uint32_t d) noexcept {
  apply_signs(x, d);
  hadamard(x, d);
}

void unrotate_row(float* x, std::uint32_t d) noexcept {
  hadamard(x, d);
  apply_signs(x, d);
}

}  // namespace graft::kv
