// AVX-512 form of the Q1_0/Q2_0 kernels (bonsai_gemm.hpp): VNNI produces the 16 lanes of the
// definition directly, with no horizontal adds, by feeding vpdpbusd transposed data.
//
// A pass covers 4 weight blocks (72 bytes, both formats) = 16 lanes. One vpermt2b gathers the 64
// code bytes of the 4 blocks into a register Z whose 64-bit word i holds sub-block i's codes
// (Q2_0) or sub-blocks 2i and 2i+1 (Q1_0); another gathers the 4 fp16 scales, 4 copies each. Then
// step q (Q1_0: 8 steps, Q2_0: 4) takes, with one vpmultishiftqb + and, 4 codes for each of the 16
// lanes as bytes (word i of the result comes from word i of Z, which is what multishift can do),
// and one vpdpbusd per activation column adds those 4 products into each lane. The activations
// are rearranged once per call to match (step q, lane L): 64 bytes per step, then the lanes'
// -sum(x) (the start value, turning the unsigned codes u = code + 1 back into code) and the lanes'
// activation scales. Per (row, column) and pass: 8 (Q1_0) or 4 (Q2_0) vpdpbusd, a convert, a
// multiply and an FMA; the weight work is shared by the tile's columns.
//
// Tiles: 4 rows for decode; 2 rows x 4 columns for batches, whose rows are swept in blocks of
// ~256 KiB of weights per column tile (activations stay in L1, weights in L2).
//
// Needs AVX512-VBMI (vpermt2b, vpmultishiftqb: Ice Lake and later); callers check
// bonsai_has_vbmi() and run the AVX2 kernel on CPUs without it (same bits, see bonsai_gemm.hpp).
// The weight policy W adds: kSteps, ctrl_byte(step, byte of word) for multishift, and
// codes(ctrl, Z) -> the step's 64 unsigned codes.
// Include in an x86 translation unit only.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "activations/q8_activations.hpp"
#include "cpu_features.hpp"
#include "driver/gemm.hpp"
#include "families/bonsai/bonsai_gemm.hpp"
#include "simd/x86_simd.hpp"

#define GRAFT_TARGET_AVX512_VBMI \
  __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni,avx512vbmi")))

namespace graft::quant {
namespace {

inline bool bonsai_has_vbmi() noexcept { return cpu_features().avx512vbmi; }

// The 16-lane fold of bonsai_gemm.hpp (l + (l + 8), then 4, 2, 1 apart) for n <= 16 outputs at
// once: acc holds n rows of 16 lanes, out gets n sums. The same additions as folding each output
// alone, arranged so that every instruction serves several outputs.
GRAFT_TARGET_AVX512_VBMI inline void bonsai_fold_many(const float* acc, int n, float* out) {
  __m512 t[8], u[4], v[2];
  for (int p = 0; p < 8; ++p) {  // lanes l and l + 8 of outputs 2p, 2p + 1
    const __m512 a = 2 * p < n ? _mm512_load_ps(acc + 32 * p) : _mm512_setzero_ps();
    const __m512 b = 2 * p + 1 < n ? _mm512_load_ps(acc + 32 * p + 16) : _mm512_setzero_ps();
    t[p] = _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0x44), _mm512_shuffle_f32x4(a, b, 0xEE));
    if (2 * p + 2 >= n) {
      for (int q = p + 1; q < 8; ++q) t[q] = _mm512_setzero_ps();
      break;
    }
  }
  for (int p = 0; p < 4; ++p)  // 4 apart: [o0 | o1 | o2 | o3] x 4 lanes
    u[p] = _mm512_add_ps(_mm512_shuffle_f32x4(t[2 * p], t[2 * p + 1], 0x88), _mm512_shuffle_f32x4(t[2 * p], t[2 * p + 1], 0xDD));
  for (int p = 0; p < 2; ++p)  // 2 apart: chunk k = [o_k: 2 lanes, o_{k+4}: 2 lanes]
    v[p] = _mm512_add_ps(_mm512_shuffle_ps(u[2 * p], u[2 * p + 1], 0x44), _mm512_shuffle_ps(u[2 * p], u[2 * p + 1], 0xEE));
  // 1 apart: chunk k = [o_k, o_{k+4}, o_{k+8}, o_{k+12}]
  const __m512 w = _mm512_add_ps(_mm512_shuffle_ps(v[0], v[1], 0x88), _mm512_shuffle_ps(v[0], v[1], 0xDD));
  alignas(64) float y[16];
  _mm512_store_ps(y, w);
  for (int o = 0; o < n; ++o) out[o] = y[4 * (o % 4) + o / 4];
}

template <class W>
struct BonsaiAvx512Gemm {
  static constexpr int kG = W::kSubPerBlock, kParts = W::kLanesPerSub, kSteps = W::kSteps;
  static constexpr int kSubsPerPass = bonsai::kLanes / kParts;
  static constexpr std::int64_t kPassBytes = bonsai::kSpanBlocks * W::kBlockBytes;  // 72
  // Per column and pass: kSteps x 64 activation bytes, 16 int32 start values, 16 f32 scales.
  static constexpr std::size_t kPassActBytes = kSteps * 64 + 128;
  static_assert(kSubsPerPass == bonsai::kSpanBlocks * kG && kSteps * 4 * kParts == 32);

  struct Tables {
    alignas(64) std::uint8_t codes[64];         // vpermt2b: block b's code byte j -> byte 16b + j
    alignas(64) std::uint8_t scales[64];        // vpermt2b: block L/4's fp16 scale -> half L
    alignas(64) std::uint8_t ctrl[kSteps][64];  // vpmultishiftqb per step
  };
  static constexpr Tables make_tables() {
    Tables t{};
    for (int b = 0; b < bonsai::kSpanBlocks; ++b)
      for (int j = 0; j < 16; ++j) t.codes[16 * b + j] = static_cast<std::uint8_t>(W::kBlockBytes * b + 2 + j);
    for (int l = 0; l < bonsai::kLanes; ++l)
      for (int t2 = 0; t2 < 2; ++t2) t.scales[2 * l + t2] = static_cast<std::uint8_t>(W::kBlockBytes * (l / 4) + t2);
    for (int q = 0; q < kSteps; ++q)
      for (int n = 0; n < 64; ++n) t.ctrl[q][n] = W::ctrl_byte(q, n % 8);
    return t;
  }
  static constexpr Tables kTables = make_tables();

  // The activations of columns [c0, c1) in (pass, step, lane) order.
  static void arrange(const Q8Activations& xq, std::int64_t k, std::int64_t c0, std::int64_t c1,
                      AlignedVector<std::uint8_t>& out) {
    const std::int64_t nsub = k / 32, passes = (nsub + kSubsPerPass - 1) / kSubsPerPass;
    const std::size_t col_bytes = static_cast<std::size_t>(passes) * kPassActBytes;
    if (out.size() < col_bytes * static_cast<std::size_t>(c1 - c0)) out.resize(col_bytes * static_cast<std::size_t>(c1 - c0));
    for (std::int64_t c = c0; c < c1; ++c) {
      const std::int8_t* q = xq.block_qs(c, 0);
      const float* d = xq.scales(c);
      std::uint8_t* col = out.data() + static_cast<std::size_t>(c - c0) * col_bytes;
      for (std::int64_t p = 0; p < passes; ++p) {
        std::uint8_t* pass = col + static_cast<std::size_t>(p) * kPassActBytes;
        std::int32_t start[bonsai::kLanes];
        float scale[bonsai::kLanes];
        for (int l = 0; l < bonsai::kLanes; ++l) {
          const std::int64_t g = p * kSubsPerPass + l / kParts;
          std::int32_t sum = 0;
          for (int s = 0; s < kSteps; ++s) {
            std::uint8_t* dst = pass + s * 64 + 4 * l;
            if (g < nsub) {
              const std::int8_t* src = q + g * 32 + 4 * (kParts * s + l % kParts);
              std::memcpy(dst, src, 4);
              sum += src[0] + src[1] + src[2] + src[3];
            } else {
              std::memset(dst, 0, 4);
            }
          }
          start[l] = -sum;
          scale[l] = g < nsub ? d[g] : 0.0f;
        }
        std::memcpy(pass + kSteps * 64, start, 64);
        std::memcpy(pass + kSteps * 64 + 64, scale, 64);
      }
    }
  }

  struct Ctx {
    const GemmArgs* a;
    const std::uint8_t* act;  // arrange() output for columns from c0
    std::int64_t c0;
    std::size_t col_bytes;
    std::int64_t blocks;
    float* scratch;  // 64-byte aligned, kScratchFloats
    // kTables through a pointer the compiler cannot see is constant: it then reloads the
    // permutation and shift controls where they are used instead of pinning 7 registers for them.
    const Tables* tables;
  };
  static constexpr int kMaxAcc = 16;  // accumulators the scratch holds, then 4 rows of scales
  static constexpr std::size_t kScratchFloats = (kMaxAcc + 4) * bonsai::kLanes;

  // The tile's R x C accumulators (16 lanes each) into acc_out, unfolded.
  template <int R, int C>
  GRAFT_TARGET_AVX512_VBMI static void tile_lanes(const Ctx& x, std::int64_t r, std::int64_t c, float* acc_out) {
    const GemmArgs& a = *x.a;
    const std::uint8_t* w[R];
    for (int i = 0; i < R; ++i) w[i] = a.w + (r + i) * a.w_stride;
    const std::uint8_t* act[C];
    for (int j = 0; j < C; ++j) act[j] = x.act + static_cast<std::size_t>(c + j - x.c0) * x.col_bytes;
    // The f32 accumulators and weight scales are touched once per pass: kept in memory (L1) so the
    // registers hold the integer sums, which vpdpbusd updates every step.
    // (A per-thread buffer, not a local array: GCC would promote a local one to registers and spill
    // the sums instead.)
    const std::int64_t stride = static_cast<std::int64_t>(a.w_stride);
    const std::int64_t ahead = std::max<std::int64_t>(R, (4096 + stride - 1) / std::max<std::int64_t>(1, stride)) * stride;
    auto* acc = reinterpret_cast<float (*)[C][bonsai::kLanes]>(acc_out);
    auto* dw = reinterpret_cast<float (*)[bonsai::kLanes]>(x.scratch + kMaxAcc * bonsai::kLanes);
    for (int i = 0; i < R; ++i)
      for (int j = 0; j < C; ++j) _mm512_store_ps(acc[i][j], _mm512_setzero_ps());
    for (std::int64_t b0 = 0, pass = 0; b0 < x.blocks; b0 += bonsai::kSpanBlocks, ++pass) {
      const std::int64_t nblk = std::min<std::int64_t>(bonsai::kSpanBlocks, x.blocks - b0);
      // Masked loads: a short last pass reads nothing past the row, and its missing blocks are zeros.
      const __mmask64 mlo = nblk == bonsai::kSpanBlocks ? ~__mmask64{0} : (__mmask64{1} << (nblk * W::kBlockBytes)) - 1;
      const __mmask64 mhi = nblk == bonsai::kSpanBlocks ? __mmask64{0xFF} : 0;
      __m512i z[R];
      for (int i = 0; i < R; ++i) {
        const std::uint8_t* p = w[i] + pass * kPassBytes;
        // Rows ahead, at least 4 KiB: enough misses in flight for one core to stream at memory
        // speed (1-bit rows are short: the next tile alone is only 576 bytes at k = 1024).
        _mm_prefetch(reinterpret_cast<const char*>(p + ahead), _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(p + ahead + 64), _MM_HINT_T0);
        const __m512i lo = _mm512_maskz_loadu_epi8(mlo, p), hi = _mm512_maskz_loadu_epi8(mhi, p + 64);
        z[i] = _mm512_permutex2var_epi8(lo, _mm512_load_si512(x.tables->codes), hi);
        _mm512_store_ps(dw[i], _mm512_cvtph_ps(_mm512_castsi512_si256(
                                   _mm512_permutex2var_epi8(lo, _mm512_load_si512(x.tables->scales), hi))));
      }
      const std::size_t at = static_cast<std::size_t>(pass) * kPassActBytes;
      __m512i sum[R][C];
      for (int j = 0; j < C; ++j) {
        const __m512i start = _mm512_load_si512(act[j] + at + kSteps * 64);
        for (int i = 0; i < R; ++i) sum[i][j] = start;
      }
      for (int s = 0; s < kSteps; ++s) {
        const __m512i ctrl = _mm512_load_si512(x.tables->ctrl[s]);
        __m512i u[R];
        for (int i = 0; i < R; ++i) u[i] = W::codes(ctrl, z[i]);
        for (int j = 0; j < C; ++j) {
          const __m512i xv = _mm512_load_si512(act[j] + at + s * 64);
          for (int i = 0; i < R; ++i) sum[i][j] = _mm512_dpbusd_epi32(sum[i][j], u[i], xv);
        }
      }
      for (int j = 0; j < C; ++j) {
        const __m512 dx = _mm512_load_ps(reinterpret_cast<const float*>(act[j] + at + kSteps * 64 + 64));
        for (int i = 0; i < R; ++i) {
          const __m512 s = _mm512_mul_ps(_mm512_load_ps(dw[i]), dx);
          _mm512_store_ps(acc[i][j], _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum[i][j]), s, _mm512_load_ps(acc[i][j])));
        }
      }
    }
  }

  template <int R, int C>
  GRAFT_TARGET_AVX512_VBMI static void tile(const Ctx& x, std::int64_t r, std::int64_t c) {
    tile_lanes<R, C>(x, r, c, x.scratch);
    float sums[R * C];
    bonsai_fold_many(x.scratch, R * C, sums);
    for (int i = 0; i < R; ++i)
      for (int j = 0; j < C; ++j) x.a->y[(c + j) * x.a->y_stride + r + i] = sums[i * C + j];
  }

  // Decode: four R-row tiles, then one fold for their 4R <= 16 outputs (a fold of 4 outputs
  // costs nearly as much as one of 16, and 1024-wide rows take only two passes).
  template <int R>
  GRAFT_TARGET_AVX512_VBMI static void rows_x4(const Ctx& x, std::int64_t r, std::int64_t c) {
    static_assert(4 * R <= kMaxAcc);
    for (int q = 0; q < 4; ++q) tile_lanes<R, 1>(x, r + q * R, c, x.scratch + q * R * bonsai::kLanes);
    float sums[4 * R];
    bonsai_fold_many(x.scratch, 4 * R, sums);
    float* y = x.a->y + c * x.a->y_stride + r;
    for (int i = 0; i < 4 * R; ++i) y[i] = sums[i];
  }

  template <int R, int C>
  static void walk_columns(const Ctx& x, std::int64_t r, std::int64_t c0, std::int64_t c1) {
    std::int64_t c = c0;
    for (; c + C <= c1; c += C) tile<R, C>(x, r, c);
    if constexpr (C > 1) {
      if (c < c1) walk_columns<R, C / 2>(x, r, c, c1);
    }
  }
};

// Weight bytes of a row of k elements.
template <class W>
constexpr std::int64_t weight_row_bytes(std::int64_t k) {
  return k / (32 * W::kSubPerBlock) * W::kBlockBytes;
}

template <class T>
inline const T* opaque(const T* p) {
  asm("" : "+r"(p));
  return p;
}

// Decode (one column): RD-row tiles. Batches: R x C tiles, leftover columns in C/2, ..., 1-wide
// tiles. Leftover rows one at a time.
template <class W, int RD, int R, int C>
void bonsai_avx512_gemm(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1) {
  using K = BonsaiAvx512Gemm<W>;
  static_assert(R * C <= 16 && RD <= 4 && R <= 4, "scratch holds 16 accumulators and 4 rows of scales");
  // One arrangement per thread and call, reused across calls (its pages stay mapped).
  thread_local AlignedVector<std::uint8_t> act;
  thread_local AlignedVector<float> scratch(K::kScratchFloats);
  K::arrange(*a.xq, a.k, c0, c1, act);
  const std::int64_t passes = (a.k / 32 + K::kSubsPerPass - 1) / K::kSubsPerPass;
  const typename K::Ctx ctx{&a, act.data(), c0, static_cast<std::size_t>(passes) * K::kPassActBytes,
                            a.k / (32 * K::kG), scratch.data(), opaque(&K::kTables)};
  if (c1 - c0 == 1) {
    std::int64_t r = r0;
    for (; r + 4 * RD <= r1; r += 4 * RD) K::template rows_x4<RD>(ctx, r, c0);
    for (; r + RD <= r1; r += RD) K::template tile<RD, 1>(ctx, r, c0);
    for (; r < r1; ++r) K::template tile<1, 1>(ctx, r, c0);
    return;
  }
  // Batches: rows in blocks of ~256 KiB of weights, each block swept once per column tile, so the
  // tile's activations (C columns x 1.25 bytes per element) stay in L1 and the block's weights in
  // L2; the other order re-reads activations from L2 for every row tile, which bounds prefill.
  const std::int64_t row_bytes = weight_row_bytes<W>(a.k);
  const std::int64_t block = std::max<std::int64_t>(R, (std::int64_t{256} << 10) / std::max<std::int64_t>(1, row_bytes) / R * R);
  for (std::int64_t rb = r0; rb < r1; rb += block) {
    const std::int64_t re = std::min(r1, rb + block);
    std::int64_t c = c0;
    for (; c + C <= c1; c += C) {
      std::int64_t r = rb;
      for (; r + R <= re; r += R) K::template tile<R, C>(ctx, r, c);
      for (; r < re; ++r) K::template tile<1, C>(ctx, r, c);
    }
    if constexpr (C > 1)
      if (c < c1) {
        std::int64_t r = rb;
        for (; r + R <= re; r += R) K::template walk_columns<R, C / 2>(ctx, r, c, c1);
        for (; r < re; ++r) K::template walk_columns<1, C / 2>(ctx, r, c, c1);
      }
  }
}

}  // namespace
}  // namespace graft::quant
