// Q4_K and Q5_K on their packed layouts (k4_packed.hpp), AVX-512 VNNI + VBMI. Same bits as every
// other Q4_K / Q5_K kernel (q4_k_gemm.hpp, q5_k_gemm.hpp: per block, S[l] = sum_j sc[j] * D_j[l] with D_j[l] the exact sum of the
// 4 products of elements 4l..4l+3 of sub-block j, then the f32 steps of the definition).
//
// The activations are put once per call in the order of the packed codes (k_pack_order.hpp).
// Then per row and block, each code vector's low and high nibbles go through vpdpbusd against
// their 64 activations, giving D for 16 (j, l) groups each; vpackssdw pairs them so that every
// dword holds the D of two sub-blocks with the same lane l (|D| <= 7680 fits a word), and one
// vpdpwssd applies both scales (words picked by vpshufb from the row's unpacked scales) and adds
// into lane l or 8 + l. Per row and block that is 2 shifts, 4 vpdpbusd, 2 vpackssdw and 2
// vpdpwssd against the file-layout kernel's 4 shifts, 4 vpmaddubsw and 4 vpdpwssd plus scalar code
// for the scales: here the 4 rows' scales and mins come out of one vpermb + vpmultishiftqb and
// their fp16 factors out of one conversion per block. Q5_K adds each code's fifth bit with one
// masked byte add per vector (the masks stored in the layout); |D| <= 4 * 31 * 128 still fits a word.
#include "families/kquants/k4_packed.hpp"
#include "families/kquants/q4_k_gemm.hpp"

#ifdef __x86_64__
#include <algorithm>
#include <cstring>

#include "activations/q8k_activations.hpp"
#include "families/kquants/k4_rows_x86.hpp"
#include "families/kquants/k_pack_order.hpp"
#include "simd/x86_simd.hpp"

#define GRAFT_Q4P_TARGET __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni,avx512vbmi")))

namespace graft::quant {

namespace {

struct Controls {
  alignas(64) std::uint8_t spread[64];  // vpermb: qword t <- the 6 bytes holding fields 8t..8t+7
  alignas(64) std::uint8_t shifts[64];  // vpmultishiftqb: byte u of a qword <- bits 6u..6u+7
  alignas(64) std::uint8_t mins[64];    // vpermb (odd bytes zeroed): word j of lane i <- m[j] of row i
  alignas(64) std::uint8_t sc[2][64];   // vpshufb of a row's 8 scales: the words of vpdpwssd's pairs
};
constexpr Controls make_controls() {
  Controls c{};
  for (int t = 0; t < 8; ++t)
    for (int u = 0; u < 8; ++u) {
      c.spread[8 * t + u] = static_cast<std::uint8_t>(6 * t + std::min(u, 5));
      c.shifts[8 * t + u] = static_cast<std::uint8_t>(6 * u);
    }
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 8; ++j) c.mins[16 * i + 2 * j] = static_cast<std::uint8_t>(16 * i + 8 + j);
  // After vpackssdw, dword q of code vector p pairs sub-blocks 4p + 2e (low word) and 4p + 2e + 1
  // (high word), e = q / 8.
  for (int p = 0; p < 2; ++p)
    for (int b = 0; b < 64; ++b) {
      const int e = b / 32;
      c.sc[p][b] = b % 2 ? 0x80 : static_cast<std::uint8_t>(4 * p + 2 * e + (b % 4) / 2);
    }
  return c;
}
constexpr Controls kCtrl = make_controls();
constexpr std::int64_t kPrefetchBlocks = 8;  // 4.5 KiB; 9 KiB measured alike, 2.3 KiB worse

template <int Bits>
constexpr std::int64_t kGroupBlockBytes = Bits == 4 ? kQ4GroupBlockBytes : kQ5GroupBlockBytes;

struct RowCodes {
  __m512i lo[2], hi[2];  // code vector p: low nibbles, high nibbles
  __m512i sc[2];
};

template <int Bits>
GRAFT_Q4P_TARGET inline __attribute__((always_inline)) void load_row(const std::uint8_t* blk, const std::uint8_t* fields,
                                                                      int i, RowCodes& rc) {
  const __m512i scales = _mm512_set1_epi64(static_cast<long long>([&] {
    std::uint64_t v;
    std::memcpy(&v, fields + 16 * i, 8);
    return v;
  }()));
  rc.sc[0] = _mm512_shuffle_epi8(scales, _mm512_load_si512(kCtrl.sc[0]));
  rc.sc[1] = _mm512_shuffle_epi8(scales, _mm512_load_si512(kCtrl.sc[1]));
  const std::uint8_t* codes = blk + kQ4GroupCodesAt + 128 * i;
  _Pragma("GCC unroll 16")
  for (int p = 0; p < 2; ++p) {
    const __m512i v = _mm512_loadu_si512(codes + 64 * p);
    rc.lo[p] = _mm512_and_si512(v, _mm512_set1_epi8(0x0F));
    rc.hi[p] = _mm512_and_si512(_mm512_srli_epi16(v, 4), _mm512_set1_epi8(0x0F));
    if constexpr (Bits == 5) {
      const std::uint8_t* masks = blk + kQ5GroupHighBitsAt + 32 * i + 16 * p;
      std::uint64_t m[2];
      std::memcpy(m, masks, 16);
      rc.lo[p] = _mm512_mask_add_epi8(rc.lo[p], _cvtu64_mask64(m[0]), rc.lo[p], _mm512_set1_epi8(16));
      rc.hi[p] = _mm512_mask_add_epi8(rc.hi[p], _cvtu64_mask64(m[1]), rc.hi[p], _mm512_set1_epi8(16));
    }
  }
}

// Lanes l and 8 + l: the row's S[l] in two parts (sub-blocks 0, 1, 4, 5 and 2, 3, 6, 7); xp: the
// block's activations in code order.
GRAFT_Q4P_TARGET inline __attribute__((always_inline)) __m512i row_dot(const RowCodes& rc, const std::int8_t* xp) {
  __m512i s = _mm512_setzero_si512();
  _Pragma("GCC unroll 16")
  for (int p = 0; p < 2; ++p) {
    const __m512i da = _mm512_dpbusd_epi32(_mm512_setzero_si512(), rc.lo[p], _mm512_load_si512(xp + 128 * p));
    const __m512i db = _mm512_dpbusd_epi32(_mm512_setzero_si512(), rc.hi[p], _mm512_load_si512(xp + 128 * p + 64));
    s = _mm512_dpwssd_epi32(s, _mm512_packs_epi32(da, db), rc.sc[p]);
  }
  return s;
}

// Rows r .. r + 3 (one group; rows from r_end on are computed but not stored) x columns c .. c + C - 1;
// xp: the activations in code order, column c first, 256 bytes per block.
template <int Bits, int C>
GRAFT_Q4P_TARGET void group_tile(const GemmArgs& a, const std::int8_t* xp, std::int64_t r, std::int64_t r_end,
                                 std::int64_t c) {
  const std::int64_t nb = a.k / kQK_K;
  const std::uint8_t* group = a.w + r * static_cast<std::int64_t>(a.w_stride);
  __m512 acc[2][C];  // rows 2h (low half) and 2h + 1 (high half), lanes l
  __m512 accm[C];    // row i in 128-bit lane i, lanes M[0..3]
  _Pragma("GCC unroll 16")
  for (int j = 0; j < C; ++j) acc[0][j] = acc[1][j] = accm[j] = _mm512_setzero_ps();
  alignas(64) std::uint8_t fields[64];
  const __m512i row_of_lane = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
  const __m512i pair_lo = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
  for (std::int64_t b = 0; b < nb; ++b) {
    const std::uint8_t* blk = group + b * kGroupBlockBytes<Bits>;
    // Every line of the group's block kPrefetchBlocks ahead, into L2 (T1): with two threads the
    // kernel streamed at ~0.6 of the read bandwidth on the hardware prefetchers alone, ~0.7 with
    // this into L1 (T0: its fill buffers are too few for the misses in flight), ~0.8-0.9 into L2.
    _Pragma("GCC unroll 16")
    for (int l = 0; l < kGroupBlockBytes<Bits> / 64; ++l)
      _mm_prefetch(reinterpret_cast<const char*>(blk + kPrefetchBlocks * kGroupBlockBytes<Bits>) + 64 * l, _MM_HINT_T1);
    const __m512 d = _mm512_castps128_ps512(_mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(blk))));
    const __m512 ndmin = _mm512_permutexvar_ps(
        row_of_lane, _mm512_castps128_ps512(_mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(blk + kQ4GroupNegDminAt)))));
    const __m512i f = _mm512_and_si512(
        _mm512_multishift_epi64_epi8(_mm512_load_si512(kCtrl.shifts),
                                     _mm512_permutexvar_epi8(_mm512_load_si512(kCtrl.spread), _mm512_loadu_si512(blk + kQ4GroupFieldsAt))),
        _mm512_set1_epi8(0x3F));
    _mm512_store_si512(fields, f);
    const __m512i mins = _mm512_maskz_permutexvar_epi8(0x5555555555555555ull, _mm512_load_si512(kCtrl.mins), f);

    const std::int8_t* x[C];
    const float* dx[C];  // broadcast at each use: 4 columns' worth of registers would spill
    _Pragma("GCC unroll 16")
    for (int j = 0; j < C; ++j) {
      x[j] = xp + (j * nb + b) * kQK_K;
      dx[j] = &a.xk->d[static_cast<std::size_t>((c + j) * nb + b)];
    }
    _Pragma("GCC unroll 16")
    for (int h = 0; h < 2; ++h) {
      __m512i s0[C];
      RowCodes rc;
      load_row<Bits>(blk, fields, 2 * h, rc);
      _Pragma("GCC unroll 16")
      for (int j = 0; j < C; ++j) s0[j] = row_dot(rc, x[j]);
      load_row<Bits>(blk, fields, 2 * h + 1, rc);
      const __m512 dw = _mm512_permutexvar_ps(_mm512_add_epi32(pair_lo, _mm512_set1_epi32(2 * h)), d);
      _Pragma("GCC unroll 16")
      for (int j = 0; j < C; ++j) {
        const __m512i s1 = row_dot(rc, x[j]);
        acc[h][j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(x86::fold_pair(s0[j], s1)), _mm512_mul_ps(dw, _mm512_set1_ps(*dx[j])), acc[h][j]);
      }
    }
    _Pragma("GCC unroll 16")
    for (int j = 0; j < C; ++j) {
      const __m512i mm = four_row_min_terms<Bits>(mins, a.xk->block_bsums(c + j, b));
      accm[j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(mm), _mm512_mul_ps(ndmin, _mm512_set1_ps(*dx[j])), accm[j]);
    }
  }
  const int rows = static_cast<int>(std::min<std::int64_t>(kQ4GroupRows, r_end - r));
  _Pragma("GCC unroll 16")
  for (int j = 0; j < C; ++j) {
    const __m512 pair_acc[2] = {acc[0][j], acc[1][j]};
    store_four_rows<Bits>(pair_acc, accm[j], a.y + (c + j) * static_cast<std::int64_t>(a.y_stride) + r, rows);
  }
}

}  // namespace

namespace {
template <int Bits>
void packed_gemm(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1) {
  const std::int8_t* xp = k_pack_activations(*a.xk, c0, c1);
  const std::int64_t column_bytes = a.xk->nb * kQK_K;
  for (std::int64_t r = r0; r < r1; r += kQ4GroupRows) {
    std::int64_t c = c0;
    // 4 columns share each row's decoded codes (more would spill the accumulators).
    for (; c + 4 <= c1; c += 4) group_tile<Bits, 4>(a, xp + (c - c0) * column_bytes, r, r1, c);
    if (c + 2 <= c1) group_tile<Bits, 2>(a, xp + (c - c0) * column_bytes, r, r1, c), c += 2;
    if (c < c1) group_tile<Bits, 1>(a, xp + (c - c0) * column_bytes, r, r1, c);
  }
}
}  // namespace

void q4_k_packed_gemm_avx512(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1) {
  packed_gemm<4>(a, r0, r1, c0, c1);
}

void q5_k_packed_gemm_avx512(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1) {
  packed_gemm<5>(a, r0, r1, c0, c1);
}

}  // namespace graft::quant
#endif
