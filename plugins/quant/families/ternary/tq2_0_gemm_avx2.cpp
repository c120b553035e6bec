// AVX2 TQ2_0 kernel: each row's block expanded once to codes (0..2: 2-bit fields, field s of the
// 32 bytes at 32h holds elements 128h + 32s ..), then per column _mm256_maddubs_epi16 against the
// Q8_K quants, pairs widened to 8 int32 lanes by _mm256_madd_epi16, and the lanes start from
// -(bsum[2l] + bsum[2l+1]), which turns sum(c * x) into sum((c - 1) * x) lane by lane as ggml's
// (ternary_gemm_x86.hpp).
#include "families/ternary/tq2_0_gemm.hpp"

#ifdef __x86_64__
#include <cstddef>

#include "formats/tq2_0/block_tq2_0.hpp"
#define GRAFT_TERNARY_TARGET GRAFT_TARGET_AVX2
#include "families/ternary/ternary_gemm_x86.hpp"

namespace graft::quant {

namespace {

struct TQ2Codes {
  static constexpr std::int64_t kBlockBytes = sizeof(block_tq2_0), kScaleOffset = offsetof(block_tq2_0, d);
  GRAFT_TARGET_AVX2 static void codes(const std::uint8_t* blk, __m256i q[8]) {
    _Pragma("GCC unroll 2")
    for (int h = 0; h < 2; ++h) {
      const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 32 * h));
      _Pragma("GCC unroll 4")
      for (int s = 0; s < 4; ++s) q[4 * h + s] = _mm256_and_si256(_mm256_srli_epi16(bits, 2 * s), _mm256_set1_epi8(3));
    }
  }
};

}  // namespace

void tq2_0_gemm_avx2(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1) {
  walk_tiles<TernaryX86Gemm<TQ2Codes, TernaryMaddubsSums>, 4, 2>(a, r0, r1, c0, c1);
}

}  // namespace graft::quant
#endif
