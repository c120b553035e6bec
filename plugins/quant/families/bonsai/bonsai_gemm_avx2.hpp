// AVX2 form of the Q1_0/Q2_0 kernels (bonsai_gemm.hpp), one activation column at a time. Each
// sub-block's 32 products become 8 exact lane sums with maddubs + madd (weights as unsigned codes
// u = code + 1, corrected by the activation's precomputed -sum(x) per 4 elements, activation
// offset 1); horizontal integer adds then gather them into the 16 lanes of the definition, 8 or 16
// sub-blocks at a time. The weight policy W adds, with the AVX2 target attribute:
//   W::unpack(qs, sb) -> the 32 unsigned codes of sub-block sb of a block's code bytes.
// Include in an x86 translation unit only.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "driver/gemm.hpp"
#include "families/bonsai/bonsai_gemm.hpp"
#include "simd/x86_simd.hpp"

namespace graft::quant {
namespace {

// [sum v0, ..., sum v7]: each vector's 8 lanes added up.
GRAFT_TARGET_AVX2 inline __m256i bonsai_sum8(const __m256i* v) {
  const __m256i a01 = _mm256_hadd_epi32(v[0], v[1]), a23 = _mm256_hadd_epi32(v[2], v[3]);
  const __m256i a45 = _mm256_hadd_epi32(v[4], v[5]), a67 = _mm256_hadd_epi32(v[6], v[7]);
  const __m256i b0 = _mm256_hadd_epi32(a01, a23), b1 = _mm256_hadd_epi32(a45, a67);
  return _mm256_add_epi32(_mm256_permute2x128_si256(b0, b1, 0x20), _mm256_permute2x128_si256(b0, b1, 0x31));
}

// [v0 even lanes, v0 odd lanes, v1 even, v1 odd, ..., v3 odd]: the two-part split of 4 sub-blocks.
GRAFT_TARGET_AVX2 inline __m256i bonsai_sum_parts4(const __m256i* v) {
  const __m256i w01 = _mm256_add_epi32(_mm256_permute2x128_si256(v[0], v[1], 0x20), _mm256_permute2x128_si256(v[0], v[1], 0x31));
  const __m256i w23 = _mm256_add_epi32(_mm256_permute2x128_si256(v[2], v[3], 0x20), _mm256_permute2x128_si256(v[2], v[3], 0x31));
  const __m256i s = _mm256_add_epi32(_mm256_unpacklo_epi64(w01, w23), _mm256_unpackhi_epi64(w01, w23));
  return _mm256_permute4x64_epi64(s, _MM_SHUFFLE(3, 1, 2, 0));
}

template <class W>
struct BonsaiAvx2Gemm {
  static constexpr int kG = W::kSubPerBlock, kParts = W::kLanesPerSub;
  static constexpr int kSubsPerPass = bonsai::kLanes / kParts;  // sub-blocks filling the 16 lanes

  template <int R, int C>
  GRAFT_TARGET_AVX2 static void tile(const GemmArgs& a, std::int64_t r, std::int64_t c) {
    static_assert(C == 1, "one column per tile");
    const std::int64_t nsub = a.k / 32;
    const std::int8_t* xq = a.xq->block_qs(c, 0);
    const std::int32_t* off = a.xq->offsets(c, 0);
    const float* dx = a.xq->scales(c);
    const __m256i ones = _mm256_set1_epi16(1);
    __m256 lo[R], hi[R];
    for (int i = 0; i < R; ++i) lo[i] = hi[i] = _mm256_setzero_ps();
    static_assert(kSubsPerPass / kG == 4, "a pass is 4 weight blocks: lane L belongs to block L / 4");
    for (std::int64_t g0 = 0; g0 < nsub; g0 += kSubsPerPass) {
      const int here = static_cast<int>(std::min<std::int64_t>(kSubsPerPass, nsub - g0));
      // The lanes' activation scales, shared by the tile's rows (a short last pass: per lane below).
      __m256 dx_lo = _mm256_setzero_ps(), dx_hi = _mm256_setzero_ps();
      if (here == kSubsPerPass) {
        if constexpr (kParts == 1) {
          dx_lo = _mm256_loadu_ps(dx + g0);
          dx_hi = _mm256_loadu_ps(dx + g0 + 8);
        } else {
          const __m256i pairs = _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3);
          dx_lo = _mm256_permutevar8x32_ps(_mm256_castps128_ps256(_mm_loadu_ps(dx + g0)), pairs);
          dx_hi = _mm256_permutevar8x32_ps(_mm256_castps128_ps256(_mm_loadu_ps(dx + g0 + 4)), pairs);
        }
      }
      for (int i = 0; i < R; ++i) {
        const std::uint8_t* row = a.w + (r + i) * a.w_stride;
        const std::uint8_t* pass = row + g0 / kG * W::kBlockBytes;
        _mm_prefetch(reinterpret_cast<const char*>(pass + R * a.w_stride), _MM_HINT_T0);
        __m256i v[kSubsPerPass];
        for (int q = 0; q < kSubsPerPass; ++q) {
          const std::int64_t g = g0 + q;
          if (q >= here) {
            v[q] = _mm256_setzero_si256();
            continue;
          }
          const std::uint8_t* blk = row + g / kG * W::kBlockBytes;
          const __m256i u = W::unpack(blk + 2, static_cast<int>(g % kG));
          const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq + g * 32));
          const __m256i o = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(off + g * 8));
          v[q] = _mm256_add_epi32(_mm256_madd_epi16(_mm256_maddubs_epi16(u, x), ones), o);
        }
        __m256i p_lo, p_hi;
        if constexpr (kParts == 1) {
          p_lo = bonsai_sum8(v);
          p_hi = bonsai_sum8(v + 8);
        } else {
          p_lo = bonsai_sum_parts4(v);
          p_hi = bonsai_sum_parts4(v + 4);
        }
        // s = d_w * d_x per lane; lane L's weight block is the pass's block L / 4.
        __m256 s_lo, s_hi;
        if (here == kSubsPerPass) {
          __m128 dw[4];
          for (int b = 0; b < 4; ++b) {
            std::uint16_t h;
            std::memcpy(&h, pass + b * W::kBlockBytes, 2);
            dw[b] = _mm_broadcast_ss(a.fp16 + h);
          }
          s_lo = _mm256_mul_ps(_mm256_insertf128_ps(_mm256_castps128_ps256(dw[0]), dw[1], 1), dx_lo);
          s_hi = _mm256_mul_ps(_mm256_insertf128_ps(_mm256_castps128_ps256(dw[2]), dw[3], 1), dx_hi);
        } else {
          alignas(32) float sl[bonsai::kLanes] = {};
          for (int l = 0; l < bonsai::kLanes && l / kParts < here; ++l) {
            const std::int64_t g = g0 + l / kParts;
            std::uint16_t h;
            std::memcpy(&h, row + g / kG * W::kBlockBytes, 2);
            sl[l] = a.fp16[h] * dx[g];
          }
          s_lo = _mm256_load_ps(sl);
          s_hi = _mm256_load_ps(sl + 8);
        }
        lo[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p_lo), s_lo, lo[i]);
        hi[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p_hi), s_hi, hi[i]);
      }
    }
    for (int i = 0; i < R; ++i) a.y[c * a.y_stride + r + i] = x86::hsum8(_mm256_add_ps(lo[i], hi[i]));
  }
};

template <class W>
void bonsai_avx2_gemm(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1) {
  walk_tiles<BonsaiAvx2Gemm<W>, 4, 1>(a, r0, r1, c0, c1);
}

}  // namespace
}  // namespace graft::quant
