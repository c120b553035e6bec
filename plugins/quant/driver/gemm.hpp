// The contract between the matmul driver and a format's kernels, and the tile walker they share.
//
// A kernel computes y[c][r] = dot(w row r, activation row c) for a rectangle of rows r (output
// features) and columns c (activation rows). Every kernel of every SIMD level computes each y[c][r]
// with the same sequence of f32 operations (docs/formats.md, "Determinism"), so the value does not
// depend on the tile it falls in, on n, on the thread split, or on the SIMD level.
#pragma once

#include <cstddef>
#include <cstdint>

#include "activations/q8_activations.hpp"
#include "activations/q8k_activations.hpp"

namespace graft::quant {

struct GemmArgs {
  const std::uint8_t* w = nullptr;  // weight rows, w_stride bytes apart
  std::size_t w_stride = 0;
  std::int64_t k = 0;               // row length in elements
  const float* xf = nullptr;        // dense formats: activation rows, k floats apart
  const Q8Activations* xq = nullptr;  // q8_0 activation form: quantized activation rows
  const Q8KActivations* xk = nullptr; // q8_k activation form
  const float* fp16 = nullptr;      // fp16_table(), for the block scales
  float* y = nullptr;               // y[c * y_stride + r]
  std::size_t y_stride = 0;
};

// Computes rows [r0, r1) x columns [c0, c1).
using GemmFn = void (*)(const GemmArgs& args, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1);

// Walks the rectangle in R x C tiles; leftover columns go to C/2-wide tiles (while C/2 > 1) and
// then 1-wide ones, leftover rows to 1-row tiles. A kernel only writes the fixed-size microkernel
// K::tile<Rt, Ct>(args, r, c).
template <class K, int R, int C>
inline void walk_columns(const GemmArgs& a, std::int64_t r, std::int64_t c0, std::int64_t c1) {
  std::int64_t c = c0;
  for (; c + C <= c1; c += C) K::template tile<R, C>(a, r, c);
  if constexpr (C / 2 > 1) {
    if (c < c1) walk_columns<K, R, C / 2>(a, r, c, c1);
  } else {
    for (; c < c1; ++c) K::template tile<R, 1>(a, r, c);
  }
}

template <class K, int R, int C>
inline void walk_tiles(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1) {
  std::int64_t r = r0;
  for (; r + R <= r1; r += R) walk_columns<K, R, C>(a, r, c0, c1);
  for (; r < r1; ++r) walk_columns<K, 1, C>(a, r, c0, c1);
}

}  // namespace graft::quant
