// Target attributes and small helpers for the x86 kernels. Kernels are compiled with per-function
// target attributes, not per-file flags, so no baseline code (inline functions from headers, the
// standard library) is ever compiled for a newer ISA and the plugins load on any x86-64.
// Every helper here has internal linkage and carries its own target attribute.
#pragma once

#include <cstddef>
#include <cstdint>

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

// The fixed lane tree of the quantized kernels: (l + l+4), then + 2 apart, then + 1 apart -- the
// shape of ggml's hsum_float_8.
GRAFT_TARGET_AVX2 static inline float hsum8(__m256 v) {
  const __m128 h = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 q = _mm_add_ps(h, _mm_movehl_ps(h, h));
  return _mm_cvtss_f32(_mm_add_ss(q, _mm_shuffle_ps(q, q, 1)));
}

// vpshufb control for 8 int16 scales duplicated in both 128-bit halves: every word of the low half
// takes scale 2t, every word of the high half scale 2t + 1 (the K-quants' AVX2 kernels, sub-blocks
// of 16 per half).
GRAFT_TARGET_AVX2 static inline __m256i scale_pair_shuffle(int t) {
  const char lo0 = static_cast<char>(4 * t), lo1 = static_cast<char>(4 * t + 1);
  const char hi0 = static_cast<char>(4 * t + 2), hi1 = static_cast<char>(4 * t + 3);
  return _mm256_setr_epi8(lo0, lo1, lo0, lo1, lo0, lo1, lo0, lo1, lo0, lo1, lo0, lo1, lo0, lo1, lo0, lo1,
                          hi0, hi1, hi0, hi1, hi0, hi1, hi0, hi1, hi0, hi1, hi0, hi1, hi0, hi1, hi0, hi1);
}

// The file-layout kernels read a tile's R rows side by side: R short streams, which the hardware
// prefetchers of an AVX2 core (Zen 3) follow too late to stream at memory speed. The R rows are
// one stretch of memory, though: at block b, row i of a tile at row r, tile_stream_ahead() is
// where the tile's bytes would be if read in order, kStreamAhead further on, so prefetching a row
// block's span there (into L2) asks for the stretch as one stream. (Plain arithmetic: no target.)
inline constexpr std::int64_t kStreamAhead = 8192;
static inline const char* tile_stream_ahead(const std::uint8_t* w, std::size_t w_stride, std::int64_t r, int rows,
                                            std::int64_t b, int i, std::int64_t block_bytes) {
  return reinterpret_cast<const char*>(w + static_cast<std::int64_t>(w_stride) * r + (b * rows + i) * block_bytes +
                                       kStreamAhead);
}

// The upper 256 bits with AVX-512F only (the f32x8 forms need AVX512DQ, not in our targets).
GRAFT_TARGET_AVX512 static inline __m256 high_half(__m512 v) {
  return _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
}

// [a's low + high 256 bits | b's low + high 256 bits] (int32 lanes): two rows' or columns' 16-lane
// sums folded to 8 lanes each in one register, lane l and 8 + l both adding to lane l.
GRAFT_TARGET_AVX512 static inline __m512i fold_pair(__m512i a, __m512i b) {
  return _mm512_add_epi32(_mm512_shuffle_i64x2(a, b, 0x44), _mm512_shuffle_i64x2(a, b, 0xEE));
}

// The two 8-lane halves of a 512-bit accumulator, each folded by hsum8: the low half into *lo, the
// high half into *hi (the two columns of a column-pair tile, or two rows).
GRAFT_TARGET_AVX512 static inline void store_hsum8_halves(__m512 v, float* lo, float* hi) {
  *lo = hsum8(_mm512_castps512_ps256(v));
  *hi = hsum8(high_half(v));
}

// 32 nibbles of a Q4_0 block as bytes 0..15 in element order: low nibbles are elements 0..15,
// high nibbles 16..31. A broadcast load and a per-half shift: no shuffle-port work.
GRAFT_TARGET_AVX2 static inline __m256i unpack_nibbles(const unsigned char* qs) {
  const __m256i both = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qs)));
  const __m256i shifted = _mm256_srlv_epi64(both, _mm256_setr_epi64x(0, 0, 4, 4));
  return _mm256_and_si256(shifted, _mm256_set1_epi8(0x0F));
}

}  // namespace graft::quant::x86
#endif
