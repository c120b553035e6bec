// A query row rounded to q8_0, for integer scores against a q8_0 K cache (docs/kvstores.md,
// "Attention kernel"): the int8 products of a block are exact in int32, so every SIMD level can
// add them in its own order and still give the same bits, and the two scales meet once per block
// instead of once per element. ggml rounds a query the same way against a q8_0 K (its
// vec_dot_type); graft keeps the query's scale in f32 rather than f16.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

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

// The query rows of one unit of work rounded once, row i at [i]: scratch that keeps its storage
// from unit to unit.
class QueryQ8Rows {
 public:
  // Room for n rows of d elements (d % 32 == 0); the rows' contents are set by round().
  void prepare(std::size_t n, std::uint32_t d) {
    d_ = d;
    levels_.resize(n * d);
    scales_.resize(n * (d / 32));
  }
  // Row i = x[0..d) rounded (quantize_query_q8).
  void round(std::size_t i, const float* x) noexcept {
    quantize_query_q8(x, d_, levels_.data() + i * d_, scales_.data() + i * (d_ / 32));
  }
  QueryQ8 operator[](std::size_t i) const noexcept {
    return {levels_.data() + i * d_, scales_.data() + i * (d_ / 32)};
  }

 private:
  std::uint32_t d_ = 0;
  std::vector<std::int8_t> levels_;
  std::vector<float> scales_;
};

}  // namespace graft::kv
