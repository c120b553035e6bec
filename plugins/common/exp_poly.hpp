// Constants of the Cephes expf polynomial, shared by the CPU backend's SIMD softmax and silu and
// the attention's softmax: exp(x) = 2^n * e^r with n = round(x * log2(e)), r = x - n * ln2 (ln2
// split in two for exactness), and e^r a degree-7 polynomial on |r| <= ln2/2. Within ~2 ulp of
// expf over the range it does not clamp.
#pragma once

namespace graft::exp_poly {

inline constexpr float kLog2e = 1.44269504088896341f;
inline constexpr float kLn2Hi = 0.693359375f;     // exact in 9 bits, so n * kLn2Hi is exact
inline constexpr float kLn2Lo = -2.12194440e-4f;  // ln2 - kLn2Hi
inline constexpr float kP0 = 1.9875691500e-4f;
inline constexpr float kP1 = 1.3981999507e-3f;
inline constexpr float kP2 = 8.3334519073e-3f;
inline constexpr float kP3 = 4.1665795894e-2f;
inline constexpr float kP4 = 1.6666665459e-1f;
inline constexpr float kP5 = 5.0000001201e-1f;
// exp overflows float above this and is below the smallest normal under kMinNormalArg.
inline constexpr float kMaxArg = 88.3762626647949f;
inline constexpr float kMinNormalArg = -87.3365447504f;

}  // namespace graft::exp_poly
