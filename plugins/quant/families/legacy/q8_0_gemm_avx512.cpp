// AVX-512 VNNI Q8_0 kernel: w + 128 (w xor 0x80) is an unsigned byte, and one dpbusd accumulates
// sum((w + 128) * x) per lane onto the activation's precomputed -128 * sum(x), leaving exactly
// sum(w * x). 256-bit vectors for single columns (as ggml uses VNNI), 512-bit column pairs for
// batches (qgemm_avx512.hpp).
#include "families/legacy/q8_0_gemm.hpp"

#ifdef __x86_64__
#include "simd/x86_simd.hpp"
#define GRAFT_QGEMM_TARGET GRAFT_TARGET_AVX512
#include "families/legacy/qgemm_avx512.hpp"

namespace graft::quant {

namespace {

struct Q8Avx512 {
  static constexpr std::int64_t kBlockBytes = 34;
  using Prep = __m256i;
  GRAFT_TARGET_AVX512 static Prep load(const std::uint8_t* qs) {
    return _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs)),
                            _mm256_set1_epi8(static_cast<char>(0x80)));
  }
  GRAFT_TARGET_AVX512 static __m256i dot(Prep u, __m256i x, __m256i offsets) { return _mm256_dpbusd_epi32(offsets, u, x); }

  using Prep512 = __m512i;
  GRAFT_TARGET_AVX512 static Prep512 load512(const std::uint8_t* qs) {
    return _mm512_xor_si512(_mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs))),
                            _mm512_set1_epi8(static_cast<char>(0x80)));
  }
  GRAFT_TARGET_AVX512 static __m512i dot512(Prep512 u, __m512i x, __m512i offsets) {
    return _mm512_dpbusd_epi32(offsets, u, x);
  }
};

}  // namespace

void q8_0_gemm_avx512(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1) {
  avx512_qgemm<Q8Avx512>(a, r0, r1, c0, c1);
}

}  // namespace graft::quant
#endif
