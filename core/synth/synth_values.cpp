#include "synth/synth_values.hpp"

#include <cmath>

namespace graft::synth {
namespace {

constexpr std::uint64_t kGolden = 0x9E3779B97F4A7C15ull;
// Standard deviation of the sum of four independent uniform 16-bit integers:
// sqrt(4 * (65536^2 - 1) / 12).
const double kSumSd = std::sqrt(4.0 * (65536.0 * 65536.0 - 1.0) / 12.0);

inline std::int32_t centred_sum(std::uint64_t r) {
  const auto s = static_cast<std::int32_t>((r & 0xffff) + ((r >> 16) & 0xffff) + ((r >> 32) & 0xffff) + (r >> 48));
  return s - 131070;
}

}  // namespace

std::uint64_t fnv1a64(std::string_view s) noexcept {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (const char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}

std::uint64_t splitmix64_mix(std::uint64_t z) noexcept {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

ValueStream::ValueStream(std::uint64_t seed, std::string_view tensor_name, TensorRole role, std::uint64_t ne0)
    : key_(splitmix64_mix(seed ^ fnv1a64(tensor_name))),
      role_(role),
      scale_(role == TensorRole::norm    ? 0x1.0p-20f
             : role == TensorRole::decay ? 0x1.0p-14f
             : role == TensorRole::bias  ? 0x1.0p-18f
                                         : static_cast<float>(1.0 / std::sqrt(static_cast<double>(ne0)) / kSumSd)) {}

float ValueStream::at(std::uint64_t i) const {
  const float s = static_cast<float>(centred_sum(splitmix64_mix(key_ + (i + 1) * kGolden)));  // exact: |s| < 2^18
  // For norms s * 2^-20 is exact, so a fused multiply-add would round the same way (and the
  // decay's s * 2^-14).
  switch (role_) {
    case TensorRole::norm: return 1.0f + s * scale_;
    case TensorRole::decay: return -1.0f - std::abs(s) * scale_;  // ssm_a = -exp(A_log) <= -1
    default: return s * scale_;
  }
}

void ValueStream::fill(std::uint64_t first, std::span<float> out) const {
  for (std::size_t k = 0; k < out.size(); ++k) out[k] = at(first + k);
}

}  // namespace graft::synth
