// Deterministic weight values: a counter-based generator, so element i of a tensor depends only
// on (seed, tensor name, i), never on the other tensors or the order they are written in.
//
//   key   = splitmix64_mix(seed ^ fnv1a64(name))
//   r(i)  = splitmix64_mix(key + (i + 1) * 0x9E3779B97F4A7C15)   (the i-th splitmix64 output)
//   s(i)  = sum of the four 16-bit fields of r(i) - 131070       (Irwin-Hall: bell-shaped,
//                                                                  mean 0, sd 37837.2)
//   matrix / embedding: w = s(i) * (float)(1 / sqrt(ne[0]) / 37837.2) (sd 1/sqrt(fan_in))
//   norm:               w = 1 + s(i) * 2^-20                           (1 +- 0.036)
//   decay (ssm_a):      w = -1 - |s(i)| * 2^-14                        (about -1 to -8)
//   bias (ssm_dt.bias): w = s(i) * 2^-18                               (0 +- 0.14)
//
// Integers until one float multiply (and, for norms, an exact product plus one add), so the
// values are bit-identical on every IEEE machine and compiler.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "synth/synth_config.hpp"

namespace graft::synth {

std::uint64_t fnv1a64(std::string_view s) noexcept;
std::uint64_t splitmix64_mix(std::uint64_t z) noexcept;

class ValueStream {
 public:
  ValueStream(std::uint64_t seed, std::string_view tensor_name, TensorRole role, std::uint64_t ne0);
  // Elements [first, first + out.size()) of the tensor.
  void fill(std::uint64_t first, std::span<float> out) const;
  float at(std::uint64_t i) const;

 private:
  std::uint64_t key_;
  TensorRole role_;
  float scale_;
};

}  // namespace graft::synth
