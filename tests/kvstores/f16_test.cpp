// The plugins' f16 <-> f32 conversion (plugins/common/half.hpp), checked against independent definitions: ldexp for decoding,
// the nearest representable value (ties to even) for encoding, and the compiler's _Float16; and
// the SIMD conversions of the cache writes against it.
#include "half.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "kv_test_util.hpp"

using graft::f16_to_f32;
using graft::f32_to_f16;

namespace {

bool is_nan16(std::uint16_t h) { return (h & 0x7C00u) == 0x7C00u && (h & 0x3FFu) != 0; }

// The value an f16 bit pattern denotes, from the IEEE definition.
double f16_value(std::uint16_t h) {
  const int sign = h >> 15, e = (h >> 10) & 0x1F, m = h & 0x3FF;
  double v;
  if (e == 0x1F)
    v = m ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  else if (e == 0)
    v = std::ldexp(m, -24);
  else
    v = std::ldexp(1024 + m, e - 25);
  return sign ? -v : v;
}

}  // namespace

TEST(kvF16, DecodesEveryPatternExactly) {
  for (std::uint32_t h = 0; h < 65536; ++h) {
    const float f = f16_to_f32(static_cast<std::uint16_t>(h));
    const double want = f16_value(static_cast<std::uint16_t>(h));
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(f)) << std::hex << h;
      ASSERT_EQ(std::signbit(f), (h & 0x8000u) != 0) << std::hex << h;
    } else {
      ASSERT_EQ(static_cast<double>(f), want) << std::hex << h;
      ASSERT_EQ(std::signbit(f), (h & 0x8000u) != 0) << std::hex << h;  // -0 stays -0
    }
  }
}

TEST(kvF16, EveryPatternRoundTripsExceptNanPayloads) {
  int nans = 0;
  for (std::uint32_t h = 0; h < 65536; ++h) {
    const auto x = static_cast<std::uint16_t>(h);
    const std::uint16_t back = f32_to_f16(f16_to_f32(x));
    if (is_nan16(x)) {
      ++nans;
      ASSERT_TRUE(is_nan16(back)) << std::hex << h;
      ASSERT_EQ(back & 0x8000u, x & 0x8000u) << std::hex << h;
      if (x & 0x200u)
        ASSERT_EQ(back, x) << "a quiet NaN keeps its payload: " << std::hex << h;
      else
        ASSERT_EQ(back, x | 0x200u) << "a signalling NaN comes back quiet: " << std::hex << h;
    } else {
      ASSERT_EQ(back, x) << std::hex << h;
    }
  }
  EXPECT_EQ(nans, 2 * 1023);
}

// Between two neighbouring f16 values the midpoint rounds to the even one, and the f32 values
// just below and above it to the nearer one. This covers every rounding boundary, subnormals and
// the carry into the next binade included.
TEST(kvF16, RoundsToNearestEvenAtEveryBoundary) {
  for (std::uint32_t h = 0; h < 0x7BFF; ++h) {
    for (std::uint16_t sign : {std::uint16_t{0}, std::uint16_t{0x8000}}) {
      const auto lo = static_cast<std::uint16_t>(h | sign), hi = static_cast<std::uint16_t>((h + 1) | sign);
      const float a = f16_to_f32(lo), b = f16_to_f32(hi);
      const float mid = static_cast<float>((static_cast<double>(a) + b) / 2);  // exact in f32
      ASSERT_EQ(static_cast<double>(mid), (static_cast<double>(a) + b) / 2);
      ASSERT_EQ(f32_to_f16(mid), (h & 1) ? hi : lo) << std::hex << h;
      ASSERT_EQ(f32_to_f16(std::nextafter(mid, a)), lo) << std::hex << h;
      ASSERT_EQ(f32_to_f16(std::nextafter(mid, b)), hi) << std::hex << h;
    }
  }
}

TEST(kvF16, OverflowUnderflowAndSpecials) {
  EXPECT_EQ(f32_to_f16(65504.0f), 0x7BFF);
  EXPECT_EQ(f32_to_f16(std::nextafter(65520.0f, 0.0f)), 0x7BFF);  // below the tie: max finite
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7C00);                        // the tie goes to even: inf
  EXPECT_EQ(f32_to_f16(-1e10f), 0xFC00);
  EXPECT_EQ(f32_to_f16(std::numeric_limits<float>::infinity()), 0x7C00);
  EXPECT_EQ(f32_to_f16(-std::numeric_limits<float>::infinity()), 0xFC00);
  EXPECT_TRUE(is_nan16(f32_to_f16(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(is_nan16(f32_to_f16(std::bit_cast<float>(0x7F800001u))));  // payload only in low bits
  EXPECT_EQ(f32_to_f16(0.0f), 0x0000);
  EXPECT_EQ(f32_to_f16(-0.0f), 0x8000);
  EXPECT_EQ(f32_to_f16(std::numeric_limits<float>::denorm_min()), 0x0000);
  EXPECT_EQ(f32_to_f16(-std::numeric_limits<float>::min()), 0x8000);
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -25)), 0x0000);  // half the smallest subnormal: tie to 0
  EXPECT_EQ(f32_to_f16(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), 0x0001);
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -14)), 0x0400);  // smallest normal
  EXPECT_EQ(f32_to_f16(1.0f), 0x3C00);
  EXPECT_EQ(f32_to_f16(-2.5f), 0xC100);
}

#if defined(__FLT16_MAX__)
// A sample of every f32 bit pattern (a stride coprime to 2^32 visits all binades and both signs)
// against the compiler's own correctly rounded conversion.
TEST(kvF16, MatchesCompilerFloat16OnSampledF32Patterns) {
  auto bits = [](float f) { return std::bit_cast<std::uint32_t>(f); };
  std::uint64_t checked = 0;
  for (std::uint64_t x = 0; x < (1ull << 32); x += 977) {
    const float f = std::bit_cast<float>(static_cast<std::uint32_t>(x));
    const _Float16 c = static_cast<_Float16>(f);
    const auto want = std::bit_cast<std::uint16_t>(c);
    const std::uint16_t got = f32_to_f16(f);
    if (std::isnan(f)) {
      ASSERT_TRUE(is_nan16(got)) << std::hex << bits(f);
    } else {
      ASSERT_EQ(got, want) << std::hex << bits(f);
    }
    ++checked;
  }
  EXPECT_GT(checked, 4'000'000u);
}
#endif

// The SIMD tables' narrow (the cache writes) against f32_to_f16, NaN payloads included: the same
// stride through every f32 pattern, every f16 value's neighbours and the halfway points between
// consecutive f16 values (the ties), at every length mod 16 (the tails).
TEST(kvF16, EverySimdNarrowGivesTheScalarBits) {
  std::vector<float> x;
  for (std::uint64_t b = 0; b < (1ull << 32); b += 977) x.push_back(std::bit_cast<float>(static_cast<std::uint32_t>(b)));
  for (std::uint32_t h = 0; h < 0x7C00u; ++h) {
    const float v = f16_to_f32(static_cast<std::uint16_t>(h)), next = f16_to_f32(static_cast<std::uint16_t>(h + 1));
    const float mid = static_cast<float>((static_cast<double>(v) + next) / 2);  // exact: f16 has 11 bits
    for (float f : {v, mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e9f)}) x.insert(x.end(), {f, -f});
  }
  const auto tables = kvtest::simd_tables();
  if (tables.empty()) GTEST_SKIP() << "no SIMD attention level on this CPU";
  for (const auto& t : tables) {
    std::vector<std::uint16_t> got(x.size());
    t.k->narrow(x.data(), got.data(), static_cast<std::uint32_t>(x.size()));
    for (std::size_t i = 0; i < x.size(); ++i)
      ASSERT_EQ(got[i], f32_to_f16(x[i])) << t.name << " x bits " << std::hex << std::bit_cast<std::uint32_t>(x[i]);
    for (std::uint32_t len = 1; len <= 33; ++len) {
      std::vector<std::uint16_t> part(len + 1, 0xBEEF);
      t.k->narrow(x.data() + 100, part.data(), len);
      for (std::uint32_t i = 0; i < len; ++i) ASSERT_EQ(part[i], f32_to_f16(x[100 + i])) << t.name << " len " << len;
      EXPECT_EQ(part[len], 0xBEEF) << t.name << ": wrote past n = " << len;
    }
  }
}
