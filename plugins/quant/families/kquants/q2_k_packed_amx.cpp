// AMX Q2_K kernel for batches (prefill, speculative verify) on the packed layout (q2_k_packed.hpp).
// Same bits as every other Q2_K kernel (q2_k_gemm.hpp): per block and definition lane l (the
// quants 32v + 4l .. 32v + 4l + 3, v = 0..7), S[l] = sum over v of sc[2v + l / 4] times the exact
// sum of 4 products = sum of (sc * q) * x over the lane's 32 quants, exact integers either way.
//
// So the tile unit computes S[l] for 16 activation columns x 16 weight rows in one tdpbssd (K = 32):
//   A = 16 columns x lane l's 32 quants (row m: dwords 8v + l of the column's block), made once
//       per call for every column tile;
//   B = 8 rows (v) x 16 weight rows x 4 bytes of code * scale (0..45, the batch expansion's), made
//       once per row tile.
// C row m then holds column m's S[l] for the 16 rows: a vector of 16 outputs adjacent in y.
// AVX-512 applies the definition's steps to it: M[l] by vpmaddwd of the rows' min pairs (m[2l],
// m[2l + 1]) against the column's bsum pair, then fma(d_x * -dmin, M) and fma(d_x * d, S), the
// lanes walked one at a time over all blocks so a lane's 16 column accumulators stay in registers;
// last the definition's fold ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)). Two tile sets
// alternate, so one product runs while the last one's f32 steps do.
#include "families/kquants/q2_k_gemm.hpp"
#include "families/kquants/q2_k_packed.hpp"

#ifdef __x86_64__
#include <algorithm>
#include <cstring>

#include "activations/q8k_activations.hpp"
#include "families/kquants/q2_k_batch_avx512.hpp"
#include "formats/q2_k/block_q2_k.hpp"
#include "simd/amx_tiles.hpp"

namespace graft::quant {

namespace {

constexpr int kLanes = 8;           // the definition's lanes per output
constexpr std::int64_t kTile = 512;  // bytes of an A or B tile

struct Scratch {
  AlignedVector<std::uint8_t> expanded;    // [row 16][block] kQ2KExpandedBytes
  AlignedVector<std::int8_t> b_tiles;      // [block][lane] B tile
  AlignedVector<std::int32_t> min_pairs;   // [block][lane][row 16]: words m[2l], m[2l + 1]
  AlignedVector<float> dw, ndw;            // [block][row 16]: d, -dmin
  AlignedVector<float> ddx, nddx;          // [block][column 16][row 16]: d_x * d, d_x * -dmin
  AlignedVector<std::int8_t> a_tiles;      // [column tile][block][lane] A tile
  AlignedVector<std::int32_t> bsum_pairs;  // [column tile][block][lane][column 16]
  AlignedVector<float> dx;                 // [column tile][block][column 16]
  AlignedVector<float> lanes;              // [lane][column 16][row 16]
  AlignedVector<std::int32_t> c;           // two C tiles as stored
  AlignedVector<std::int32_t> items;       // the products in order, as block * 8 + lane
  DerivedFrom from;                        // what a_tiles, bsum_pairs and dx were made from
};

// The call's A tiles, bsum pairs and scales, for columns [c0, c1) (missing columns of a partial
// last tile: zero).
void build_columns(const Q8KActivations& xk, std::int64_t c0, std::int64_t c1, Scratch& s) {
  const std::int64_t nb = xk.nb, tiles = (c1 - c0 + 15) / 16;
  s.a_tiles.resize(static_cast<std::size_t>(tiles * nb * kLanes * kTile));
  s.bsum_pairs.assign(static_cast<std::size_t>(tiles * nb * kLanes * 16), 0);
  s.dx.assign(static_cast<std::size_t>(tiles * nb * 16), 0.0f);
  // Only the missing columns' A rows need zeros: every other byte is written below.
  for (std::int64_t c = c1; c < c0 + tiles * 16; ++c) {
    const std::int64_t t = (c - c0) / 16, m = (c - c0) % 16;
    for (std::int64_t tbl = t * nb * kLanes; tbl < (t + 1) * nb * kLanes; ++tbl)
      std::memset(s.a_tiles.data() + tbl * kTile + m * 32, 0, 32);
  }
  for (std::int64_t c = c0; c < c1; ++c) {
    const std::int64_t t = (c - c0) / 16, m = (c - c0) % 16;
    for (std::int64_t b = 0; b < nb; ++b) {
      const std::int8_t* q = xk.block_qs(c, b);
      const std::int16_t* bs = xk.block_bsums(c, b);
      const std::int64_t tb = t * nb + b;
      for (int l = 0; l < kLanes; ++l) {
        std::int8_t* row = s.a_tiles.data() + (tb * kLanes + l) * kTile + m * 32;
        for (int v = 0; v < 8; ++v) std::memcpy(row + 4 * v, q + 32 * v + 4 * l, 4);
        std::memcpy(&s.bsum_pairs[static_cast<std::size_t>((tb * kLanes + l) * 16 + m)], bs + 2 * l, 4);
      }
      s.dx[static_cast<std::size_t>(tb * 16 + m)] = xk.scale(c, b);
    }
  }
}

// Dword i: the 4 bytes at p + offset[i]. (With a zero source, not _mm512_undefined: GCC 12 warns
// inside that, bug 105593.)
GRAFT_TARGET_AMX inline __m512i gather(__m512i offset, const void* p) {
  return _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), 0xFFFF, offset, p, 1);
}

// The row tile at r (its first `rows` rows real, the others zero): B tiles, min pairs, d, -dmin.
GRAFT_TARGET_AMX void build_rows(const GemmArgs& a, std::int64_t r, std::int64_t rows, Scratch& s) {
  const std::int64_t nb = a.k / kQK_K, row_bytes = nb * kQ2KExpandedBytes;
  std::uint8_t* ex = s.expanded.data();
  for (std::int64_t i = 0; i < 16; ++i)
    for (std::int64_t b = 0; b < nb; ++b) {
      std::uint8_t* out = ex + i * row_bytes + b * kQ2KExpandedBytes;
      if (i < rows)
        q2_k_packed_expand(a, r + i, b, out);
      else
        std::memset(out, 0, kQ2KExpandedBytes);
    }
  const __m512i row_at = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                            _mm512_set1_epi32(static_cast<int>(row_bytes)));
  for (std::int64_t b = 0; b < nb; ++b) {
    const std::uint8_t* blk = ex + b * kQ2KExpandedBytes;
    for (int l = 0; l < kLanes; ++l) {
      std::int8_t* tile = s.b_tiles.data() + (b * kLanes + l) * kTile;
      for (int v = 0; v < 8; ++v)
        _mm512_store_si512(tile + 64 * v, gather(row_at, blk + 4 * (8 * v + l)));
      _mm512_store_si512(s.min_pairs.data() + (b * kLanes + l) * 16,
                         gather(row_at, blk + kQ2KExpandedMinsAt + 4 * l));
    }
    _mm512_store_ps(s.dw.data() + b * 16, _mm512_castsi512_ps(gather(row_at, blk + kQ2KExpandedDAt)));
    _mm512_store_ps(s.ndw.data() + b * 16, _mm512_castsi512_ps(gather(row_at, blk + kQ2KExpandedNegDminAt)));
  }
}

GRAFT_TARGET_AMX void run(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1,
                          Scratch& s) {
  const Q8KActivations& xk = *a.xk;
  const std::int64_t nb = a.k / kQK_K, n_items = kLanes * nb;
  s.expanded.resize(static_cast<std::size_t>(16 * nb * kQ2KExpandedBytes));
  s.b_tiles.resize(static_cast<std::size_t>(nb * kLanes * kTile));
  s.min_pairs.resize(static_cast<std::size_t>(nb * kLanes * 16));
  s.dw.resize(static_cast<std::size_t>(nb * 16));
  s.ndw.resize(static_cast<std::size_t>(nb * 16));
  s.ddx.resize(static_cast<std::size_t>(nb * 256));
  s.nddx.resize(static_cast<std::size_t>(nb * 256));
  s.lanes.resize(kLanes * 256);
  s.c.resize(2 * 256);
  if (!s.from.holds(xk.generation, c0, c1)) {
    build_columns(xk, c0, c1, s);
    s.from.set(xk.generation, c0, c1);
  }
  // Plain pointers from here on: the scratch is thread_local, and every tile store's memory clobber
  // would otherwise send each access back through __tls_get_addr.
  const std::int8_t* const b_tiles = s.b_tiles.data();
  const std::int32_t* const min_pairs = s.min_pairs.data();
  const float* const dw = s.dw.data();
  const float* const ndw = s.ndw.data();
  float* const ddx = s.ddx.data();
  float* const nddx = s.nddx.data();
  float* const lanes = s.lanes.data();
  std::int32_t* const cbuf[2] = {s.c.data(), s.c.data() + 256};
  // The products in lane order (lane by lane, its blocks in order) as b * kLanes + l: no division
  // in the loop.
  s.items.resize(static_cast<std::size_t>(n_items));
  for (std::int64_t i = 0; i < n_items; ++i)
    s.items[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(i % nb * kLanes + i / nb);
  const std::int32_t* const items = s.items.data();

  load_k32_tile_config();

  for (std::int64_t r = r0; r < r1; r += 16) {
    const std::int64_t rows = std::min<std::int64_t>(16, r1 - r);
    const __mmask16 row_mask = static_cast<__mmask16>((1u << rows) - 1);
    build_rows(a, r, rows, s);
    for (std::int64_t first = c0; first < c1; first += 16) {
      const std::int64_t valid = std::min<std::int64_t>(16, c1 - first), t = (first - c0) / 16;
      const std::int8_t* const a_tiles = s.a_tiles.data() + t * nb * kLanes * kTile;
      const std::int32_t* const bsum_pairs = s.bsum_pairs.data() + t * nb * kLanes * 16;
      // d_x * d and d_x * -dmin of every (block, column, row), shared by the 8 lanes.
      for (std::int64_t b = 0; b < nb; ++b) {
        const __m512 d = _mm512_load_ps(dw + 16 * b), nd = _mm512_load_ps(ndw + 16 * b);
        const float* dxb = s.dx.data() + (t * nb + b) * 16;
        for (int m = 0; m < 16; ++m) {
          const __m512 dxm = _mm512_set1_ps(dxb[m]);
          _mm512_store_ps(ddx + (16 * b + m) * 16, _mm512_mul_ps(dxm, d));
          _mm512_store_ps(nddx + (16 * b + m) * 16, _mm512_mul_ps(dxm, nd));
        }
      }
      // The 16 output lines this tile writes at its end, owned early (bonsai_gemm_amx.hpp).
      for (std::int64_t m = 0; m < valid; ++m)
        _m_prefetchw(a.y + (first + m) * static_cast<std::int64_t>(a.y_stride) + r);
      asm volatile("" ::: "memory");  // the tile loads' asm does not tell the compiler it reads memory
      // Item i: lane i / nb, block i % nb; its A and B tiles at tile_of(i).
      auto tile_of = [&](std::int64_t i) { return static_cast<std::int64_t>(items[i]) * kTile; };
      __m512 acc[16];
#pragma GCC unroll 16
      for (auto& v : acc) v = _mm512_setzero_ps();
      // The f32 steps of item i (C stored at cp). A macro, not a lambda: a lambda capturing acc
      // made GCC keep the accumulators in memory (bonsai_gemm_amx.hpp).
#define GRAFT_Q2K_AMX_FINISH(item_expr, cp)                                                                       \
  do {                                                                                                          \
    const std::int64_t bl = items[item_expr], b = bl / kLanes, l = bl % kLanes;                               \
    const __m512i mins = _mm512_load_si512(min_pairs + bl * 16);                                                \
    const std::int32_t* bsp = bsum_pairs + bl * 16;                                                             \
    _Pragma("GCC unroll 16") for (int m = 0; m < 16; ++m) {                                                     \
      const __m512 msum = _mm512_maskz_cvtepi32_ps(0xFFFF, _mm512_madd_epi16(mins, _mm512_set1_epi32(bsp[m])));             \
      acc[m] = _mm512_fmadd_ps(_mm512_load_ps(nddx + (16 * b + m) * 16), msum, acc[m]);                        \
      acc[m] = _mm512_fmadd_ps(_mm512_load_ps(ddx + (16 * b + m) * 16),                                        \
                               _mm512_maskz_cvtepi32_ps(0xFFFF, _mm512_load_si512((cp) + 16 * m)), acc[m]);                   \
    }                                                                                                           \
    if (b == nb - 1) {                                                                                          \
      _Pragma("GCC unroll 16") for (int m = 0; m < 16; ++m) {                                                   \
        _mm512_store_ps(lanes + (16 * l + m) * 16, acc[m]);                                                     \
        acc[m] = _mm512_setzero_ps();                                                                           \
      }                                                                                                         \
    }                                                                                                           \
  } while (0)
      GRAFT_AMX_PRODUCT(0, 2, 4, a_tiles + tile_of(0), 32, b_tiles + tile_of(0));
      for (std::int64_t i = 0; i < n_items; i += 2) {
        GRAFT_AMX_PRODUCT(1, 3, 5, a_tiles + tile_of(i + 1), 32, b_tiles + tile_of(i + 1));
        _tile_stored(0, cbuf[0], 64);
        asm volatile("" : "+m"(*reinterpret_cast<std::int32_t(*)[256]>(cbuf[0])));
        GRAFT_Q2K_AMX_FINISH(i, cbuf[0]);
        if (i + 2 < n_items) GRAFT_AMX_PRODUCT(0, 2, 4, a_tiles + tile_of(i + 2), 32, b_tiles + tile_of(i + 2));
        _tile_stored(1, cbuf[1], 64);
        asm volatile("" : "+m"(*reinterpret_cast<std::int32_t(*)[256]>(cbuf[1])));
        GRAFT_Q2K_AMX_FINISH(i + 1, cbuf[1]);
      }
#undef GRAFT_Q2K_AMX_FINISH
      // The definition's fold of the 8 lanes, 16 rows per addition.
      for (std::int64_t m = 0; m < valid; ++m) {
        __m512 v[kLanes];
        for (int l = 0; l < kLanes; ++l) v[l] = _mm512_load_ps(lanes + (16 * l + m) * 16);
        const __m512 h0 = _mm512_add_ps(v[0], v[4]), h1 = _mm512_add_ps(v[1], v[5]);
        const __m512 h2 = _mm512_add_ps(v[2], v[6]), h3 = _mm512_add_ps(v[3], v[7]);
        _mm512_mask_storeu_ps(a.y + (first + m) * static_cast<std::int64_t>(a.y_stride) + r, row_mask,
                              _mm512_add_ps(_mm512_add_ps(h0, h2), _mm512_add_ps(h1, h3)));
      }
    }
  }
  _tile_release();
}

}  // namespace

void q2_k_packed_gemm_amx(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1) {
  if (!amx_pays(c1 - c0)) return q2_k_packed_gemm_avx512(a, r0, r1, c0, c1);
  thread_local Scratch scratch;
  run(a, r0, r1, c0, c1, scratch);
}

}  // namespace graft::quant
#endif
