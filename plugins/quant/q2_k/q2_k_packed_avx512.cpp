// Q2_K on the packed layout (q2_k_packed.hpp), AVX-512 VNNI + VBMI + GFNI. Same bits as every other Q2_K
// kernel (q2_k_gemm.hpp: per block, S[l] = sum over the groups (j, l) of sc[2j + l / 4] times the
// exact sum of the group's 4 products, M[l] from the mins, then the two f32 steps per lane).
//
// Decode: the activations are put once per call in the codes' order (k_pack_order.hpp); per row
// and block one 64-byte load holds all 256 codes, an and and 3 GF(2) affine steps make the 4 fields, 4
// vpdpbusd give the groups' sums, 2 vpackssdw pair two groups of the same lane per dword and 2
// vpdpwssd apply both groups' sub-block scales (words picked by vpshufb from the row's scale bytes).
// Two rows share each 512-bit f32 register, and the 4 rows' fp16 factors convert in one
// instruction. The file-layout kernel spends 4 variable shifts, 4 vpmaddubsw, 4 vpdpwssd and 4
// vpermw per row and block, and its f32 steps run 8 lanes wide.
//
// Batches: the file-layout kernel's expansion (q2_k_batch_avx512.hpp) fed from this layout: two
// vpermt2b per 128 codes put them back in element order, then the same code * scale bytes and the
// same column-pair tile.
#include "q2_k_gemm.hpp"
#include "q2_k_packed.hpp"

#ifdef __x86_64__
#include <algorithm>
#include <cstring>

#include "k_pack_order.hpp"
#include "pair_batch.hpp"
#include "q2_k_batch_avx512.hpp"
#include "q2_k_block.hpp"
#include "q8k_activations.hpp"
#include "x86_simd.hpp"

#define GRAFT_Q2P_TARGET __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni,avx512vbmi,gfni")))

namespace graft::quant {

namespace {

struct Controls {
  alignas(64) std::uint8_t sc[2][64];      // vpshufb of a row's 16 scales: the words of vpdpwssd's pairs
  alignas(64) std::uint8_t unpack[2][64];  // vpermt2b: step 2p (+1) from fields 2p (bytes 0..63), 2p + 1
};
constexpr Controls make_controls() {
  Controls c{};
  // After vpackssdw of fields 2p and 2p + 1, dword q pairs the groups (j, l) with j = 4p + 2 (q / 8)
  // + w (word w) and l = q % 8; a group's scale is that of its sub-block of 16, 2j + l / 4.
  for (int p = 0; p < 2; ++p)
    for (int b = 0; b < 64; ++b) {
      const int q = b / 4, w = (b % 4) / 2;
      const int j = 4 * p + 2 * (q / 8) + w, l = q % 8;
      c.sc[p][b] = b % 2 ? 0x80 : static_cast<std::uint8_t>(2 * j + l / 4);
    }
  // k_pack_first inverted: element 128p + 64 odd + t is byte e of dword n of field 2p + h.
  for (int h = 0; h < 2; ++h)
    for (int n = 0; n < 16; ++n)
      for (int e = 0; e < 4; ++e) {
        const int rel = k_pack_first(0, h, n) + e;
        c.unpack[rel / 64][rel % 64] = static_cast<std::uint8_t>(64 * h + 4 * n + e);
      }
  return c;
}
constexpr Controls kCtrl = make_controls();
// 5.4 KiB ahead, into L2: 1.03x 8 blocks, quartiles 1.01-1.14 (quant_bench --against, two
// threads, streaming).
constexpr std::int64_t kPrefetchBlocks = 16;

// A row's 4 code fields (bytes 0..3) of one block.
struct Fields {
  __m512i f[4];
};
// (v >> s) & 3 per byte as one GF(2) affine step: bit i of a result byte is the parity of matrix
// byte 7 - i AND the input byte, so bytes 7 and 6 pick input bits s and s + 1. One operation
// instead of a shift and an and: decode 1.12x with the weights in L2 (one thread), 1.06-1.07x
// streamed (two threads, quant_bench --against, fresh pages every pair).
constexpr long long field_matrix(int s) { return static_cast<long long>((1ull << s) << 56 | (1ull << (s + 1)) << 48); }
GRAFT_Q2P_TARGET inline __attribute__((always_inline)) Fields load_fields(const std::uint8_t* codes) {
  const __m512i v = _mm512_loadu_si512(codes);
  return {{_mm512_and_si512(v, _mm512_set1_epi8(3)), _mm512_gf2p8affine_epi64_epi8(v, _mm512_set1_epi64(field_matrix(2)), 0),
           _mm512_gf2p8affine_epi64_epi8(v, _mm512_set1_epi64(field_matrix(4)), 0),
           _mm512_gf2p8affine_epi64_epi8(v, _mm512_set1_epi64(field_matrix(6)), 0)}};
}

struct RowCodes {
  Fields c;
  __m512i sc[2];
};
GRAFT_Q2P_TARGET inline __attribute__((always_inline)) void load_row(const std::uint8_t* blk, int i, RowCodes& rc) {
  const __m512i s = _mm512_and_si512(
      _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + kQ2GroupScalesAt + 16 * i))),
      _mm512_set1_epi8(0x0F));
  rc.sc[0] = _mm512_shuffle_epi8(s, _mm512_load_si512(kCtrl.sc[0]));
  rc.sc[1] = _mm512_shuffle_epi8(s, _mm512_load_si512(kCtrl.sc[1]));
  rc.c = load_fields(blk + kQ2GroupCodesAt + 64 * i);
}

// Lanes l and 8 + l: the row's S[l] in two parts; xp: the block's activations in code order.
GRAFT_Q2P_TARGET inline __attribute__((always_inline)) __m512i row_dot(const RowCodes& rc, const std::int8_t* xp) {
  __m512i s = _mm512_setzero_si512();
  _Pragma("GCC unroll 2")
  for (int p = 0; p < 2; ++p) {
    const __m512i da = _mm512_dpbusd_epi32(_mm512_setzero_si512(), rc.c.f[2 * p], _mm512_load_si512(xp + 128 * p));
    const __m512i db = _mm512_dpbusd_epi32(_mm512_setzero_si512(), rc.c.f[2 * p + 1], _mm512_load_si512(xp + 128 * p + 64));
    s = _mm512_dpwssd_epi32(s, _mm512_packs_epi32(da, db), rc.sc[p]);
  }
  return s;
}

// The group starting at row r against column c (xp: its activations in code order); stores rows
// [s0, s1) of it.
GRAFT_Q2P_TARGET void group_column(const GemmArgs& a, const std::int8_t* xp, std::int64_t r, std::int64_t s0,
                                   std::int64_t s1, std::int64_t c) {
  const std::int64_t nb = a.k / kQ2KBlockElems;
  const std::uint8_t* group = a.w + r * static_cast<std::int64_t>(a.w_stride);
  __m512 acc[2] = {_mm512_setzero_ps(), _mm512_setzero_ps()};  // rows 2h (low half) and 2h + 1 (high half)
  const __m512i pair_lo = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
  for (std::int64_t b = 0; b < nb; ++b) {
    const std::uint8_t* blk = group + b * kQ2GroupBlockBytes;
    _Pragma("GCC unroll 6")
    for (int l = 0; l < 6; ++l)
      _mm_prefetch(reinterpret_cast<const char*>(blk + kPrefetchBlocks * kQ2GroupBlockBytes) + 64 * l, _MM_HINT_T1);
    const __m512 d = _mm512_castps128_ps512(_mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(blk))));
    const __m512 nd =
        _mm512_castps128_ps512(_mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(blk + kQ2GroupNegDminAt))));
    const std::int8_t* x = xp + b * kQK_K;
    // d * dx and -dmin * dx of the 4 rows at once (a lane permute below moves them, unchanged).
    const __m512 dx = _mm512_set1_ps(a.xk->scale(c, b));
    const __m512 ddx = _mm512_mul_ps(d, dx), nddx = _mm512_mul_ps(nd, dx);
    const __m512i bsums = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.xk->block_bsums(c, b))));
    _Pragma("GCC unroll 2")
    for (int h = 0; h < 2; ++h) {
      RowCodes rc;
      load_row(blk, 2 * h, rc);
      const __m512i sa = row_dot(rc, x);
      load_row(blk, 2 * h + 1, rc);
      const __m512i sb = row_dot(rc, x);
      // [S of row 2h | S of row 2h + 1]: low halves plus high halves.
      const __m512i folded = x86::fold_pair(sa, sb);
      // The mins of both rows as words: (scale | min << 4) >> 4.
      const __m512i mins = _mm512_srli_epi16(
          _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + kQ2GroupScalesAt + 32 * h))), 4);
      const __m512i idx = _mm512_add_epi32(pair_lo, _mm512_set1_epi32(2 * h));
      acc[h] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_madd_epi16(mins, bsums)), _mm512_permutexvar_ps(idx, nddx),
                               acc[h]);
      acc[h] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(folded), _mm512_permutexvar_ps(idx, ddx), acc[h]);
    }
  }
  const __m256 part[4] = {_mm512_castps512_ps256(acc[0]), x86::high_half(acc[0]), _mm512_castps512_ps256(acc[1]),
                          x86::high_half(acc[1])};
  float* y = a.y + c * static_cast<std::int64_t>(a.y_stride);
  for (std::int64_t i = s0; i < s1; ++i) y[i] = x86::hsum8(part[i - r]);
}

// One column at a time (pair_batch's columns off the pair layout).
struct PackedColumn {
  template <int R, int C>
  static void tile(const GemmArgs& a, std::int64_t r, std::int64_t c) {
    static_assert(C == 1);
    group_column(a, k_pack_activations(*a.xk, c, c + 1), r / kQ2GroupRows * kQ2GroupRows, r, r + R, c);
  }
};

// The batch tile on expansions of this layout's blocks.
struct PackedBatch : Q2KAvx512Batch {
  GRAFT_Q2P_TARGET static void expand(const GemmArgs& a, std::int64_t row, std::int64_t b, std::uint8_t* out) {
    const std::int64_t i = row % kQ2GroupRows;
    const std::uint8_t* blk = a.w + (row - i) * static_cast<std::int64_t>(a.w_stride) + b * kQ2GroupBlockBytes;
    const Fields f = load_fields(blk + kQ2GroupCodesAt + 64 * i);
    const __m512i even = _mm512_load_si512(kCtrl.unpack[0]), odd = _mm512_load_si512(kCtrl.unpack[1]);
    StepCodes steps;
    steps.z[0] = _mm512_permutex2var_epi8(f.f[0], even, f.f[1]);
    steps.z[1] = _mm512_permutex2var_epi8(f.f[0], odd, f.f[1]);
    steps.z[2] = _mm512_permutex2var_epi8(f.f[2], even, f.f[3]);
    steps.z[3] = _mm512_permutex2var_epi8(f.f[2], odd, f.f[3]);
    std::uint16_t d, nd;
    std::memcpy(&d, blk + 2 * i, 2);
    std::memcpy(&nd, blk + kQ2GroupNegDminAt + 2 * i, 2);
    expand_block(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + kQ2GroupScalesAt + 16 * i)), steps, a.fp16[d],
                 -a.fp16[nd], out);
  }
};

}  // namespace

void q2_k_packed_gemm_avx512(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1) {
  if (c1 - c0 > 1) {
    pair_batch<PackedBatch, PackedColumn>(a, r0, r1, c0, c1);
    return;
  }
  const std::int8_t* xp = k_pack_activations(*a.xk, c0, c1);
  for (std::int64_t r = r0; r < r1; r += kQ2GroupRows) group_column(a, xp, r, r, std::min(r1, r + kQ2GroupRows), c0);
}

}  // namespace graft::quant
#endif
