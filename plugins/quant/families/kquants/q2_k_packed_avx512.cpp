// Q2_K on the packed layout (q2_k_packed.hpp), AVX-512 VNNI + VBMI + GFNI. Same bits as every other Q2_K
// kernel (q2_k_gemm.hpp: per block, S[l] = sum over the groups (j, l) of sc[2j + l / 4] times the
// exact sum of the group's 4 products, M[l] from the mins, then the two f32 steps per lane).
//
// Decode: the activations are put once per call in the layout's element order, each 128-bit lane
// twice (for the two rows of a code vector: q2k_pair_activations); per row pair and block two
// 64-byte loads hold both rows' 256 codes, an and and 3 GF(2) affine steps per load make the 4
// fields, 8 vpdpbusd give the groups' sums, 4 vpackssdw pair two groups of the same lane per dword
// and 4 vpdpwssd apply their sub-block scales (words picked by vpermb from the two rows' scale
// bytes), leaving both rows' S[l] whole in one register: [row 2h l 0..3 | row 2h + 1 l 0..3 | row
// 2h l 4..7 | row 2h + 1 l 4..7]. The mins come the same way, the 4 rows' fp16 factors convert in
// one instruction. The file-layout kernel spends 4 variable shifts, 4 vpmaddubsw, 4 vpdpwssd and 4
// vpermw per row and block, and its f32 steps run 8 lanes wide.
//
// Batches: the file-layout kernel's expansion (q2_k_batch_avx512.hpp) fed from this layout: one
// vpermt2b per 64 codes puts a row's codes back in element order, then the same code * scale bytes
// and the same column-pair tile.
#include "families/kquants/q2_k_gemm.hpp"
#include "families/kquants/q2_k_packed.hpp"

#ifdef __x86_64__
#include <algorithm>
#include <cstring>

#include "activations/q8k_activations.hpp"
#include "families/kquants/pair_batch.hpp"
#include "families/kquants/q2_k_batch_avx512.hpp"
#include "formats/q2_k/block_q2_k.hpp"
#include "simd/x86_simd.hpp"

#define GRAFT_Q2P_TARGET __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni,avx512vbmi,gfni")))

namespace graft::quant {

namespace {

struct Controls {
  alignas(64) std::uint8_t sc[2][2][64];   // [V][P] vpermb of two rows' scale bytes: vpdpwssd's words
  alignas(64) std::uint8_t mins[64];       // vpermb of two rows' scale bytes: M's words (min << 4)
  alignas(64) std::uint8_t unpack[2][64];  // [row of the pair] vpermt2b: elements 64 (2V + P) + t from fields 2P, 2P + 1
};
constexpr Controls make_controls() {
  Controls c{};
  // Dword 4k + m of the result holds lane l = 4 (k / 2) + m of row k % 2 of the pair; its word w
  // pairs the groups with j = 4V + 2P + w, sub-block 2j + l / 4 = 8V + 4P + 2w + k / 2. Odd bytes
  // are zeroed by the mask of the vpermb (words of one byte).
  for (int v = 0; v < 2; ++v)
    for (int p = 0; p < 2; ++p)
      for (int b = 0; b < 64; b += 2) {
        const int k = b / 16, w = (b % 4) / 2;
        c.sc[v][p][b] = static_cast<std::uint8_t>(16 * (k % 2) + 8 * v + 4 * p + 2 * w + k / 2);
      }
  // M[l] = m[2l] bsum[2l] + m[2l + 1] bsum[2l + 1] in the same dword as S[l].
  for (int b = 0; b < 64; b += 2) {
    const int k = b / 16, m = (b % 16) / 4, t = (b % 4) / 2;
    c.mins[b] = static_cast<std::uint8_t>(16 * (k % 2) + 2 * (4 * (k / 2) + m) + t);
  }
  // The inverse of kQ2PairOrder over one row's 128-bit lanes of fields 2P (bytes 0..63) and 2P + 1.
  for (int r = 0; r < 2; ++r)
    for (int q = 0; q < 16; ++q)
      if ((q / 4) % 2 == r)
        for (int e = 0; e < 4; ++e)
          for (int odd = 0; odd < 2; ++odd)
            c.unpack[r][kQ2PairOrder.field[odd][4 * q + e]] = static_cast<std::uint8_t>(64 * odd + 4 * q + e);
  return c;
}
constexpr Controls kCtrl = make_controls();
// Per block of the arranged activations: field f of vector V at 64 (4V + f), then the bsums as
// words [0..7 | 0..7 | 8..15 | 8..15] (the pair of M's lanes l in dword 4k + m).
constexpr std::int64_t kQ2ActBsumsAt = 512, kQ2ActBytes = 576;

// The activations of column c in that arrangement, in a per-thread buffer valid until the next
// call on this thread for other activations or columns.
GRAFT_Q2P_TARGET const std::int8_t* q2k_pair_activations(const Q8KActivations& xk, std::int64_t c) {
  struct Arranged {
    DerivedFrom from;
    AlignedVector<std::int8_t> bytes;
  };
  thread_local Arranged buf;
  if (buf.from.holds(xk.generation, c, c + 1)) return buf.bytes.data();
  const std::int64_t nb = xk.nb;
  const auto bytes = static_cast<std::size_t>(nb * kQ2ActBytes);
  if (buf.bytes.size() < bytes) buf.bytes.resize(bytes);
  buf.from.set(xk.generation, c, c + 1);
  const __m512i odd0 = _mm512_load_si512(kQ2PairOrder.field[0]), odd1 = _mm512_load_si512(kQ2PairOrder.field[1]);
  std::int8_t* out = buf.bytes.data();
  for (std::int64_t b = 0; b < nb; ++b, out += kQ2ActBytes) {
    const std::int8_t* x = xk.block_qs(c, b);
    for (int v = 0; v < 2; ++v)
      for (int f = 0; f < 4; ++f) {
        const __m512i chunk = _mm512_loadu_si512(x + 64 * (2 * v + f / 2));
        _mm512_store_si512(out + 64 * (4 * v + f), _mm512_permutexvar_epi8(f % 2 ? odd1 : odd0, chunk));
      }
    const __m512i bs = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(xk.block_bsums(c, b))));
    _mm512_store_si512(out + kQ2ActBsumsAt, _mm512_shuffle_i64x2(bs, bs, 0x50));
  }
  return buf.bytes.data();
}
// 5.4 KiB ahead, into L2: a little faster than 8 blocks (docs/benchmarks.md).
constexpr std::int64_t kPrefetchBlocks = 16;

// A row's 4 code fields (bytes 0..3) of one block.
struct Fields {
  __m512i f[4];
};
// (v >> s) & 3 per byte as one GF(2) affine step: bit i of a result byte is the parity of matrix
// byte 7 - i AND the input byte, so bytes 7 and 6 pick input bits s and s + 1. One operation
// instead of a shift and an and, faster in L2 and streamed (docs/benchmarks.md, "GFNI Q2_K fields").
constexpr long long field_matrix(int s) { return static_cast<long long>((1ull << s) << 56 | (1ull << (s + 1)) << 48); }
GRAFT_Q2P_TARGET inline __attribute__((always_inline)) Fields load_fields(const std::uint8_t* codes) {
  const __m512i v = _mm512_loadu_si512(codes);
  return {{_mm512_and_si512(v, _mm512_set1_epi8(3)), _mm512_gf2p8affine_epi64_epi8(v, _mm512_set1_epi64(field_matrix(2)), 0),
           _mm512_gf2p8affine_epi64_epi8(v, _mm512_set1_epi64(field_matrix(4)), 0),
           _mm512_gf2p8affine_epi64_epi8(v, _mm512_set1_epi64(field_matrix(6)), 0)}};
}

// S of rows 2h, 2h + 1 (dword 4k + m: lane 4 (k / 2) + m of row 2h + k % 2) for one block; x: the
// block's arranged activations, scl: the two rows' scale bytes masked to the scales.
GRAFT_Q2P_TARGET inline __attribute__((always_inline)) __m512i pair_dot(const std::uint8_t* codes, const std::int8_t* x,
                                                                       __m512i scl) {
  __m512i s[2];
  _Pragma("GCC unroll 2")
  for (int v = 0; v < 2; ++v) {
    const Fields f = load_fields(codes + 64 * v);
    s[v] = _mm512_setzero_si512();
    _Pragma("GCC unroll 2")
    for (int p = 0; p < 2; ++p) {
      const __m512i da = _mm512_dpbusd_epi32(_mm512_setzero_si512(), f.f[2 * p], _mm512_load_si512(x + 64 * (4 * v + 2 * p)));
      const __m512i db =
          _mm512_dpbusd_epi32(_mm512_setzero_si512(), f.f[2 * p + 1], _mm512_load_si512(x + 64 * (4 * v + 2 * p + 1)));
      const __m512i sw = _mm512_maskz_permutexvar_epi8(0x5555555555555555ull, _mm512_load_si512(kCtrl.sc[v][p]), scl);
      s[v] = _mm512_dpwssd_epi32(s[v], _mm512_packs_epi32(da, db), sw);
    }
  }
  return _mm512_add_epi32(s[0], s[1]);
}

// The group starting at row r against column c (xp: its arranged activations); stores rows
// [s0, s1) of it.
GRAFT_Q2P_TARGET void group_column(const GemmArgs& a, const std::int8_t* xp, std::int64_t r, std::int64_t s0,
                                   std::int64_t s1, std::int64_t c) {
  const std::int64_t nb = a.k / kQK_K;
  const std::uint8_t* group = a.w + r * static_cast<std::int64_t>(a.w_stride);
  __m512 acc[2] = {_mm512_setzero_ps(), _mm512_setzero_ps()};  // rows 2h, 2h + 1 as pair_dot leaves them
  const __m512i row_of_dword = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1);
  for (std::int64_t b = 0; b < nb; ++b) {
    const std::uint8_t* blk = group + b * kQ2GroupBlockBytes;
    _Pragma("GCC unroll 6")
    for (int l = 0; l < 6; ++l)
      _mm_prefetch(reinterpret_cast<const char*>(blk + kPrefetchBlocks * kQ2GroupBlockBytes) + 64 * l, _MM_HINT_T1);
    const __m512 d = _mm512_castps128_ps512(_mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(blk))));
    const __m512 nd =
        _mm512_castps128_ps512(_mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(blk + kQ2GroupNegDminAt))));
    const std::int8_t* x = xp + b * kQ2ActBytes;
    // d * dx and -dmin * dx of the 4 rows at once (a lane permute below moves them, unchanged).
    const __m512 dx = _mm512_set1_ps(a.xk->scale(c, b));
    const __m512 ddx = _mm512_mul_ps(d, dx), nddx = _mm512_mul_ps(nd, dx);
    const __m512i bsums = _mm512_load_si512(x + kQ2ActBsumsAt);
    _Pragma("GCC unroll 2")
    for (int h = 0; h < 2; ++h) {
      const __m512i raw =
          _mm512_zextsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + kQ2GroupScalesAt + 32 * h)));
      const __m512i sum = pair_dot(blk + kQ2GroupCodesAt + 128 * h, x, _mm512_and_si512(raw, _mm512_set1_epi8(0x0F)));
      // The mins as words: (scale | min << 4) >> 4.
      const __m512i mins =
          _mm512_srli_epi16(_mm512_maskz_permutexvar_epi8(0x5555555555555555ull, _mm512_load_si512(kCtrl.mins), raw), 4);
      const __m512i idx = _mm512_add_epi32(row_of_dword, _mm512_set1_epi32(2 * h));
      acc[h] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_madd_epi16(mins, bsums)), _mm512_permutexvar_ps(idx, nddx),
                               acc[h]);
      acc[h] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), _mm512_permutexvar_ps(idx, ddx), acc[h]);
    }
  }
  // 128-bit lanes 0, 2 are row 2h's l = 0..7, lanes 1, 3 row 2h + 1's.
  __m256 part[4];
  for (int h = 0; h < 2; ++h) {
    const __m512 rows = _mm512_shuffle_f32x4(acc[h], acc[h], 0xD8);  // lanes 0, 2, 1, 3
    part[2 * h] = _mm512_castps512_ps256(rows), part[2 * h + 1] = x86::high_half(rows);
  }
  float* y = a.y + c * static_cast<std::int64_t>(a.y_stride);
  for (std::int64_t i = s0; i < s1; ++i) y[i] = x86::hsum8(part[i - r]);
}

// One column at a time (pair_batch's columns off the pair layout).
struct PackedColumn {
  template <int R, int C>
  static void tile(const GemmArgs& a, std::int64_t r, std::int64_t c) {
    static_assert(C == 1);
    group_column(a, q2k_pair_activations(*a.xk, c), r / kQ2GroupRows * kQ2GroupRows, r, r + R, c);
  }
};

// The batch tile on expansions of this layout's blocks.
struct PackedBatch : Q2KAvx512Batch {
  GRAFT_Q2P_TARGET static void expand(const GemmArgs& a, std::int64_t row, std::int64_t b, std::uint8_t* out) {
    const std::int64_t i = row % kQ2GroupRows;
    const std::uint8_t* blk = a.w + (row - i) * static_cast<std::int64_t>(a.w_stride) + b * kQ2GroupBlockBytes;
    const __m512i unpack = _mm512_load_si512(kCtrl.unpack[i % 2]);
    StepCodes steps;
    for (int v = 0; v < 2; ++v) {
      const Fields f = load_fields(blk + kQ2GroupCodesAt + 128 * (i / 2) + 64 * v);
      steps.z[2 * v] = _mm512_permutex2var_epi8(f.f[0], unpack, f.f[1]);
      steps.z[2 * v + 1] = _mm512_permutex2var_epi8(f.f[2], unpack, f.f[3]);
    }
    std::uint16_t d, nd;
    std::memcpy(&d, blk + 2 * i, 2);
    std::memcpy(&nd, blk + kQ2GroupNegDminAt + 2 * i, 2);
    expand_block(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + kQ2GroupScalesAt + 16 * i)), steps, a.fp16[d],
                 -a.fp16[nd], out);
  }
};

}  // namespace

void q2_k_packed_expand(const GemmArgs& a, std::int64_t row, std::int64_t b, std::uint8_t* out) {
  PackedBatch::expand(a, row, b, out);
}

void q2_k_packed_gemm_avx512(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1) {
  if (c1 - c0 > 1) {
    pair_batch<PackedBatch, PackedColumn>(a, r0, r1, c0, c1);
    return;
  }
  const std::int8_t* xp = q2k_pair_activations(*a.xk, c0);
  for (std::int64_t r = r0; r < r1; r += kQ2GroupRows) group_column(a, xp, r, r, std::min(r1, r + kQ2GroupRows), c0);
}

}  // namespace graft::quant
#endif
