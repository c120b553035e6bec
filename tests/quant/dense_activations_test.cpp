// The f16 round trip of activations for f16 weights (dense_activations.hpp): the F16C path of the
// avx2 and avx512 levels gives the portable path's bits for every kind of f32: a sweep of bit
// patterns across the whole range (both signs, subnormals, infinities, NaNs with payloads), the
// f16 rounding ties and their neighbours, and the overflow boundary.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <cstring>
#include <vector>

#include "activations/dense_activations.hpp"
#include "quant_test_util.hpp"
#include "simd/simd_level.hpp"

namespace graft::quant {
namespace {

std::vector<float> hard_values() {
  std::vector<std::uint32_t> bits;
  for (std::uint64_t b = 0; b < (std::uint64_t{1} << 32); b += 65521) bits.push_back(static_cast<std::uint32_t>(b));
  // Ties between neighbouring normal f16 values (13 dropped bits exactly half) at many exponents,
  // one below and one above, with even and odd kept mantissas.
  for (std::uint32_t e = 100; e < 145; ++e)
    for (std::uint32_t m : {0x000000u, 0x001000u, 0x003000u, 0x7FF000u, 0x123000u})
      for (std::int32_t d : {-1, 0, 1}) bits.push_back((e << 23 | m) + static_cast<std::uint32_t>(d));
  for (std::uint32_t b : {0x477FEFFFu, 0x477FF000u, 0x477FF001u, 0x7F800000u, 0x7F800001u, 0x7FC00000u,
                          0x7FFFFFFFu, 0x33000000u, 0x33000001u, 0x387FFFFFu, 0x38800000u, 0x00000001u})
    bits.push_back(b);
  const std::size_t n = bits.size();
  for (std::size_t i = 0; i < n; ++i) bits.push_back(bits[i] ^ 0x80000000u);  // both signs
  std::vector<float> x(bits.size());
  std::memcpy(x.data(), bits.data(), bits.size() * sizeof(float));
  return x;
}

TEST(DenseActivations, F16RoundTripOfEverySimdLevelIsThePortableOne) {
  const std::vector<float> x = hard_values();
  auto backend = quant_test::cpu(2);
  std::vector<float> want_storage, got_storage;
  const float* want = prepare_dense_activations(*backend, SimdLevel::scalar, DenseRounding::f16, x.data(),
                                                static_cast<std::int64_t>(x.size()), want_storage);
  ASSERT_EQ(want, want_storage.data());
  for (SimdLevel level : {SimdLevel::avx2, SimdLevel::avx512}) {
    if (!cpu_supports(level)) {
      std::printf("[ SKIPPED  ] level %d: not supported by this CPU\n", static_cast<int>(level));
      continue;
    }
    const float* got = prepare_dense_activations(*backend, level, DenseRounding::f16, x.data(),
                                                 static_cast<std::int64_t>(x.size()), got_storage);
    std::size_t differ = 0, first = 0;
    for (std::size_t i = 0; i < x.size(); ++i)
      if (std::bit_cast<std::uint32_t>(got[i]) != std::bit_cast<std::uint32_t>(want[i]) && differ++ == 0) first = i;
    EXPECT_EQ(differ, 0u) << "level " << static_cast<int>(level) << ": first at input bits 0x" << std::hex
                          << std::bit_cast<std::uint32_t>(x[first]);
  }
  // A short call (below the parallel split, with an 8-lane tail of 5) agrees too.
  for (SimdLevel level : {SimdLevel::avx2, SimdLevel::avx512}) {
    if (!cpu_supports(level)) continue;
    std::vector<float> a, b;
    const float* pa = prepare_dense_activations(*backend, SimdLevel::scalar, DenseRounding::f16, x.data() + 3, 13, a);
    const float* pb = prepare_dense_activations(*backend, level, DenseRounding::f16, x.data() + 3, 13, b);
    EXPECT_EQ(std::memcmp(pa, pb, 13 * sizeof(float)), 0);
  }
}

TEST(DenseActivations, F16RoundTripSpotValues) {
  auto backend = quant_test::cpu(1);
  for (SimdLevel level : {SimdLevel::scalar, SimdLevel::avx2, SimdLevel::avx512}) {
    if (!cpu_supports(level)) continue;
    // 1 + 2^-11 is a tie between 1 and 1 + 2^-10: to even (1); 1 + 3 * 2^-11: to 1 + 2^-9 (even).
    const std::vector<float> x = {1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f, 65519.0f, 65520.0f, -0.0f, 0x1p-25f,
                                  std::bit_cast<float>(0x7F812345u), std::bit_cast<float>(0xFF812345u), 1.5f};
    std::vector<float> s;
    const float* y = prepare_dense_activations(*backend, level, DenseRounding::f16, x.data(), 9, s);
    EXPECT_EQ(y[0], 1.0f);
    EXPECT_EQ(y[1], 1.0f + 0x1p-9f);
    EXPECT_EQ(y[2], 65504.0f);
    EXPECT_EQ(std::bit_cast<std::uint32_t>(y[3]), 0x7F800000u);
    EXPECT_EQ(std::bit_cast<std::uint32_t>(y[4]), 0x80000000u);
    EXPECT_EQ(std::bit_cast<std::uint32_t>(y[5]), 0u);  // 2^-25 ties to even zero
    EXPECT_EQ(std::bit_cast<std::uint32_t>(y[6]), 0x7FC00000u);
    EXPECT_EQ(std::bit_cast<std::uint32_t>(y[7]), 0xFFC00000u);
    EXPECT_EQ(y[8], 1.5f);
  }
}

}  // namespace
}  // namespace graft::quant
