// A query row rounded to q8_0, for integer scores against a q8_0 K cache (docs/kvstores.md,
// "Attention kernel"): the int8 products of a block are exact in int32, so every SIMD level can
// add them in its own order and still give the same bits, and the two scales meet once per block
// instead of once per element. ggml rounds a query the same way against a q8_0 K (its
// vec_dot_type); graft keeps the query's scale in f32 rather than f16.
#pragma once

#include <cstdint>

namespace graft::kv {

// n / 32 blocks: qs[32 b + i] the levels, d[b] the scale.
struct QueryQ8 {
  const std::int8_t* qs;
  const float* d;
};

// Rounds x[0..n) (n % 32 == 0) into qs[0..n) and d[0..n/32): per block of 32, d = amax / 127 and
// each level the integer nearest x * (1 / d) (halfway cases away from zero, as ggml's roundf), all
// levels 0 for a block of zeros. A block with an infinite or NaN element gets d = NaN and levels
// 0: its scores come out NaN rather than an arbitrary integer.
void quantize_query_q8(const float* x, std::uint32_t n, std::int8_t* qs, float* d) noexcept;

}  // namespace graft::kv
