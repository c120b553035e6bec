// A block quantizer written for W float lanes, compiled once per x86 level at the width it has
// (4: the SSE2 baseline, 8: AVX2, 16: AVX-512; target attributes, see x86_simd.hpp), and the row
// entry point that runs the level the formats run ($GRAFT_CPU_SIMD, else the best the CPU has).
// Creating a format has already refused a level the CPU lacks, so the baseline answer for a bad
// level is never taken silently. Every lane does the same IEEE operations at every width, so the
// bytes do not depend on the level (Q2_K and Q3_K test this).
//
// Q: using Block; kElems (elements per block); template <int W> static void block(const float* x,
// Block& out), always inlined so that it is compiled for the calling level.
#pragma once

#include <cstdint>

#include "graft/config.hpp"
#include "simd/simd_level.hpp"
#include "simd/x86_simd.hpp"

namespace graft::quant {

template <class Q>
struct LevelQuantizer {
  using Block = typename Q::Block;
  using BlocksFn = void (*)(const float*, Block*, std::int64_t);

  template <int W>
  [[gnu::always_inline]] static inline void blocks(const float* x, Block* y, std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) Q::template block<W>(x + i * Q::kElems, y[i]);
  }
  static void blocks_baseline(const float* x, Block* y, std::int64_t n) { blocks<4>(x, y, n); }
#ifdef GRAFT_QUANT_X86
  GRAFT_TARGET_AVX2 static void blocks_avx2(const float* x, Block* y, std::int64_t n) { blocks<8>(x, y, n); }
  GRAFT_TARGET_AVX512 static void blocks_avx512(const float* x, Block* y, std::int64_t n) { blocks<16>(x, y, n); }
#endif

  static BlocksFn blocks_for_cpu() {
    const auto level = resolve_simd_level(Config{});
#ifdef GRAFT_QUANT_X86
    if (level) return for_level(*level, &blocks_baseline, &blocks_avx2, &blocks_avx512);
#endif
    return &blocks_baseline;
  }

  // FormatSpec::quantize_row: k a multiple of kElems.
  static void quantize_row(const float* x, void* dst, std::int64_t k) noexcept {
    static const BlocksFn fn = blocks_for_cpu();
    fn(x, static_cast<Block*>(dst), k / Q::kElems);
  }
};

}  // namespace graft::quant
