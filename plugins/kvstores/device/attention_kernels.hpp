// The inner loops of the SIMD attention path, one table per instruction set. Each entry computes
// exactly the operations the portable kernel defines (docs/kvstores.md), only several slots or
// columns at a time, so every table gives the same bits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "formats/q4_0/block_q4_0.hpp"
#include "formats/q8_0/block_q8_0.hpp"
#include "query_q8.hpp"
#include "tq3_rows.hpp"

namespace graft::kv {

// Elements one T holds: 1 for f32 and f16 rows, 32 for blocks (ggml's q8_0 and q4_0, tq3).
template <class T>
constexpr std::uint32_t elems_per_unit() noexcept {
  return std::is_same_v<T, float> || std::is_same_v<T, std::uint16_t> ? 1u : 32u;
}
// Bytes of a row of d elements stored as T.
template <class T>
constexpr std::size_t row_bytes(std::uint32_t d) noexcept {
  return d / elems_per_unit<T>() * sizeof(T);
}

struct AttnKernels {
  // Scores of nh (1 or 2) query heads against n cached rows of d elements (d % 8 == 0):
  // out[h][j] = (fold(8 partial sums of q[h] . rows[j]) + 0) * scale, where partial sum l adds
  // q[8e + l] * row[8e + l] for e = 0, 1, ... in order with one rounding each (a fused multiply-add),
  // starting from +0, and fold(a) = ((a0 + a4) + (a1 + a5)) + ((a2 + a6) + (a3 + a7)).
  // Rows up to `listed` (>= n, or 0 for none) may be prefetched: while a batch runs, rows a few
  // batches ahead are requested from memory.
  void (*scores_f16)(const float* const* q, std::uint32_t nh, const std::uint16_t* const* rows, std::uint32_t n,
                     std::uint32_t d, float scale, float* const* out, std::uint32_t listed);
  void (*scores_f32)(const float* const* q, std::uint32_t nh, const float* const* rows, std::uint32_t n,
                     std::uint32_t d, float scale, float* const* out, std::uint32_t listed);
  // acc[h][c] = fma(p[h][j], rows[j][c], acc[h][c]) and sum[h] = sum[h] + p[h][j], for j = 0 .. n-1
  // in order, c < d (d % 8 == 0). The softmax denominator is summed here, where its serial adds
  // hide behind the row arithmetic. `listed` as for scores.
  void (*values_f16)(float* const* acc, float* sum, const float* const* p, std::uint32_t nh,
                     const std::uint16_t* const* rows, std::uint32_t n, std::uint32_t d, std::uint32_t listed);
  void (*values_f32)(float* const* acc, float* sum, const float* const* p, std::uint32_t nh,
                     const float* const* rows, std::uint32_t n, std::uint32_t d, std::uint32_t listed);
  // Integer scores against q8_0 rows (d % 32 == 0), the query rounded to q8_0 (query_q8.hpp):
  // out[h][j] = (fold(a) + 0) * scale, where for each block b in order and each lane l < 8,
  // P = the exact integer sum of q.qs[32b + 4l + i] * row[b].qs[4l + i] over i < 4 and
  // a[l] = fma(float(P), f16_to_f32(row[b].d) * q.d[b], a[l]) (the scales' product rounded once),
  // a[l] starting from +0; fold as above. `listed` as for scores.
  void (*scores_q8_0)(const QueryQ8* q, std::uint32_t nh, const quant::block_q8_0* const* rows, std::uint32_t n,
                      std::uint32_t d, float scale, float* const* out, std::uint32_t listed);
  // The V sums (and scores over q4_0 and tq3 K) over rows of blocks (d % 32 == 0), each element
  // decoded in registers to the value dequantize_row gives, then the f32 operations above.
  void (*values_q8_0)(float* const* acc, float* sum, const float* const* p, std::uint32_t nh,
                      const quant::block_q8_0* const* rows, std::uint32_t n, std::uint32_t d, std::uint32_t listed);
  void (*scores_q4_0)(const float* const* q, std::uint32_t nh, const quant::block_q4_0* const* rows, std::uint32_t n,
                      std::uint32_t d, float scale, float* const* out, std::uint32_t listed);
  void (*values_q4_0)(float* const* acc, float* sum, const float* const* p, std::uint32_t nh,
                      const quant::block_q4_0* const* rows, std::uint32_t n, std::uint32_t d, std::uint32_t listed);
  void (*scores_tq3)(const float* const* q, std::uint32_t nh, const block_tq3* const* rows, std::uint32_t n,
                     std::uint32_t d, float scale, float* const* out, std::uint32_t listed);
  void (*values_tq3)(float* const* acc, float* sum, const float* const* p, std::uint32_t nh,
                     const block_tq3* const* rows, std::uint32_t n, std::uint32_t d, std::uint32_t listed);
  // dst[i] = the f16 src[i] as f32 (exact).
  void (*widen)(const std::uint16_t* src, float* dst, std::uint32_t n);
  // dst = the n elements (n % 32 == 0) of ggml q8_0 / q4_0 blocks as f32: exactly ggml's
  // dequantize_row (each element's integer times the block's scale, one rounding).
  void (*decode_q8_0)(const void* src, float* dst, std::uint32_t n);
  void (*decode_q4_0)(const void* src, float* dst, std::uint32_t n);
  // The same for tq3 blocks: dequantize_row_tq3's values (level times scale, one rounding).
  void (*decode_tq3)(const void* src, float* dst, std::uint32_t n);
  // dst[i] = f32_to_f16(src[i]) (plugins/common/half.hpp: nearest, ties to even; NaN keeps its top payload bits),
  // any n: the cache writes.
  void (*narrow)(const float* src, std::uint16_t* dst, std::uint32_t n);
  // The largest of x[0..n) ignoring NaN (-inf when all are NaN); the sign of a zero maximum may
  // differ from a sequential std::max, which cannot change exp(x - max).
  float (*max)(const float* x, std::uint32_t n);
  // x[i] = softmax_exp(x[i] - m) (softmax_exp.hpp) for i < n.
  void (*exp_shifted)(float* x, std::uint32_t n, float m);
  // Units with at most this many (query, head) rows run query by query over all their rows, f16
  // read in place; larger ones go chunk by chunk, f16 rows widened once per chunk into an f32
  // buffer that every query of the block then reads from L1 (blocks decoded likewise).
  std::uint32_t direct_rows;
};

// nullptr where the instruction set cannot be compiled (not x86-64). A table's integer scores (a
// q8_0 K) use vpdpbusd where the CPU has it (AVX-VNNI for the AVX2 table, AVX512-VNNI for the
// AVX-512 one); the tables without it (maddubs) give the same bits and serve the CPUs that lack it.
const AttnKernels* attn_kernels_avx2() noexcept;
const AttnKernels* attn_kernels_avx2_without_vnni() noexcept;
const AttnKernels* attn_kernels_avx512() noexcept;
const AttnKernels* attn_kernels_avx512_without_vnni() noexcept;

}  // namespace graft::kv
