// Target attributes and small helpers for the x86 kernels. Kernels are compiled with per-function
// target attributes, not per-file flags, so no baseline code (inline functions from headers, the
// standard library) is ever compiled for a newer ISA and the plugins load on any x86-64.
// Every helper here has internal linkage and carries its own target attribute.
#pragma once

#if defined(__x86_64__)
#define GRAFT_QUANT_X86 1
// GCC 12 warns inside its own AVX-512 intrinsics (_mm512_undefined_* self-initialisation, GCC bug
// 105593, fixed in 13); the diagnostic's location is the header, so the suppression must cover it.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop

#define GRAFT_TARGET_AVX2 __attribute__((target("avx2,fma,f16c")))
#define GRAFT_TARGET_AVX512 __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")))

namespace graft::quant::x86 {

// [sum(v0), sum(v1), sum(v2), sum(v3)] of four vectors of 8 int32. Integer sums are exact, so the
// order of these additions cannot change any result.
GRAFT_TARGET_AVX2 static inline __m128i reduce4_epi32(__m256i v0, __m256i v1, __m256i v2, __m256i v3) {
  const __m256i a = _mm256_hadd_epi32(v0, v1);
  const __m256i b = _mm256_hadd_epi32(v2, v3);
  const __m256i c = _mm256_hadd_epi32(a, b);  // [v0 v1 v2 v3 (low halves) | v0 v1 v2 v3 (high halves)]
  return _mm_add_epi32(_mm256_castsi256_si128(c), _mm256_extracti128_si256(c, 1));
}

// Four fp16 scales (zero beyond n) widened to f32.
GRAFT_TARGET_AVX2 static inline __m128 load_fp16x4(const unsigned short* h) {
  return _mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(h)));
}

// 32 nibbles of a Q4_0 block as bytes 0..15 in element order: low nibbles are elements 0..15,
// high nibbles 16..31.
GRAFT_TARGET_AVX2 static inline __m256i unpack_nibbles(const unsigned char* qs) {
  const __m128i t = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  const __m256i both = _mm256_set_m128i(_mm_srli_epi16(t, 4), t);
  return _mm256_and_si256(both, _mm256_set1_epi8(0x0F));
}

}  // namespace graft::quant::x86
#endif
