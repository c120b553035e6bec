// AMX form of the Q1_0/Q2_0 kernels (bonsai_gemm.hpp) for batches (prefill, speculative verify):
// the tile unit computes the exact integer sums P[g][h] for 16 weight rows x 16 activation columns
// per instruction (tdpbssd: signed codes x signed activations), and AVX-512 applies the f32 steps
// of the definition to 16 outputs at a time. Results are those of every other level, bit for bit.
//
// Operands, per sub-block g and part h:
//   A = 16 activation columns x the sub-block's 32 quant bytes, copied from the Q8_0 activations
//       once per call into 512 contiguous bytes per tile (the missing columns of a partial last
//       column tile zero);
//   B = 16 weight rows' 32 signed codes of part h (the other part's codes zero) in the tile unit's
//       layout (row k4 holds codes 4k4 .. 4k4+3 of each weight row), unpacked once per row tile.
// C row m then holds column m's sums for the 16 weight rows: one vector of 16 outputs that are
// adjacent in y. The lanes are walked one at a time (lane L: its (g, h) in ascending g), so a
// lane's 16 column accumulators stay in registers and each output sees exactly the definition's
// fma sequence. Two sets of tiles alternate, so one product runs while the last one's f32 steps do.
//
// The weight policy W adds unpack_tile(rows, stride, n_rows, blocks, codes, dw): codes[g][h] (512
// bytes each, the B layout) for the n_rows <= 16 rows at `rows` (missing rows: scale 0), and the
// block scales dw[16 * b + i].
// Include in an x86 translation unit only.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "activations/q8_activations.hpp"
#include "driver/gemm.hpp"
#include "families/bonsai/bonsai_gemm.hpp"
#include "half.hpp"
#include "simd/amx_tiles.hpp"

namespace graft::quant {
namespace {

template <class W>
struct BonsaiAmxGemm {
  static constexpr int kG = W::kSubPerBlock, kParts = W::kLanesPerSub, kStep = bonsai::kLanes / kParts;

  struct Scratch {
    AlignedVector<std::int8_t> codes;   // [g][h] 512-byte B tiles of the current row tile
    AlignedVector<float> dw;            // [block][16 rows]
    AlignedVector<float> pad_scales;    // a partial column tile's scales, [16][k / 32]
    AlignedVector<std::int8_t> a_tiles; // the A tiles of the call, [column tile][g][16 columns][32]
    AlignedVector<float> lanes;         // [lane][column][row]: 16 x 16 x 16
    AlignedVector<std::int32_t> c;      // two C tiles as stored: [2][16 columns][16 rows]
    AlignedVector<std::int32_t> items;  // (g, h, last in lane) per product, in lane order
    DerivedFrom from;  // what a_tiles and pad_scales were built from (the fill fixes k)
  };

  GRAFT_TARGET_AMX static void run(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0,
                                   std::int64_t c1, Scratch& s) {
    const Q8Activations& xq = *a.xq;
    const std::int64_t k = a.k, nsub = k / 32, nblk = nsub / kG;
    s.codes.resize(static_cast<std::size_t>(nsub * kParts * 512));
    s.dw.resize(static_cast<std::size_t>(nblk * 16));
    s.lanes.resize(16 * 16 * 16);
    s.c.resize(2 * 256);
    // The products in lane order: lane L = kParts * (g % kStep) + h takes g = L / kParts, + kStep, ...
    s.items.clear();
    int lanes_used = 0;
    for (int L = 0; L < bonsai::kLanes; ++L) {
      lanes_used += L / kParts < nsub;
      for (std::int64_t g = L / kParts; g < nsub; g += kStep)
        s.items.push_back(static_cast<std::int32_t>(g * 32 + (L % kParts) * 2 + (g + kStep >= nsub)));
    }
    const auto n_items = static_cast<std::int64_t>(s.items.size());  // kParts * k / 32: even, >= 4
    // Lanes without products (k < 512) stay zero, so the tree below reads all 16 unconditionally.
    std::fill(s.lanes.begin() + 256 * lanes_used, s.lanes.end(), 0.0f);
    // Every A tile of the call laid out whole (512 contiguous bytes), once for all row tiles: loaded
    // straight from the activations, a tile touched 16 lines 2 KiB or more apart for 32 bytes each,
    // and the loads were the kernel's hot spot. A partial last column tile's missing columns are
    // zero, and so are their scales (a zero-padded copy).
    const std::int64_t last = c0 + (c1 - c0) / 16 * 16;
    const bool built = s.from.holds(xq.generation, c0, c1);
    if (!built && last < c1) {
      s.pad_scales.assign(static_cast<std::size_t>(16 * nsub), 0.0f);
      for (std::int64_t m = 0; m < c1 - last; ++m)
        std::memcpy(s.pad_scales.data() + m * nsub, xq.scales(last + m), static_cast<std::size_t>(nsub) * 4);
    }
    const std::int64_t column_tiles = (c1 - c0 + 15) / 16;
    if (!built) s.a_tiles.resize(static_cast<std::size_t>(column_tiles * nsub * 512));
    for (std::int64_t t = 0; t < (built ? 0 : column_tiles); ++t) {
      const std::int64_t first = c0 + 16 * t, valid = std::min<std::int64_t>(16, c1 - first);
      std::int8_t* out = s.a_tiles.data() + t * nsub * 512;
      for (std::int64_t g = 0; g < nsub; ++g)
        for (std::int64_t m = 0; m < 16; ++m) {
          std::int8_t* dst = out + (g * 16 + m) * 32;
          if (m < valid) std::memcpy(dst, xq.block_qs(first + m, g), 32);
          else std::memset(dst, 0, 32);
        }
    }
    s.from.set(xq.generation, c0, c1);
    // Plain pointers from here on: the scratch is thread_local, and every tile store's memory
    // clobber would otherwise send each access back through __tls_get_addr (a call, which also
    // flushes the accumulators out of the vector registers).
    std::int8_t* const codes = s.codes.data();
    float* const dw_all = s.dw.data();
    float* const lanes = s.lanes.data();
    const std::int32_t* const items = s.items.data();
    std::int32_t* const cbuf[2] = {s.c.data(), s.c.data() + 256};
    const float* const pad_scales = s.pad_scales.data();
    const std::int8_t* const a_tiles = s.a_tiles.data();

    load_k32_tile_config();

    for (std::int64_t r = r0; r < r1; r += 16) {
      const std::int64_t rows = std::min<std::int64_t>(16, r1 - r);
      const __mmask16 row_mask = static_cast<__mmask16>((1u << rows) - 1);
      W::unpack_tile(a.w + r * static_cast<std::int64_t>(a.w_stride), static_cast<std::int64_t>(a.w_stride), rows,
                     nblk, codes, dw_all);
      for (std::int64_t first = c0; first < c1; first += 16) {
        const std::int64_t valid = std::min<std::int64_t>(16, c1 - first);
        const bool partial = first == last;
        const std::int8_t* xa = a_tiles + (first - c0) / 16 * nsub * 512;
        const float* dx = partial ? pad_scales : xq.scales(first);
        const std::int64_t dx_stride = partial ? nsub : xq.nb;
        // The 16 output lines this tile writes at its end, owned early: stores commit in order, so
        // a store that misses holds up the tile stores behind it, and with them the f32 steps
        // (the column tiles' outputs are lines 4 x m bytes apart; without this the kernel ran
        // slower: docs/formats_bonsai.md).
        for (std::int64_t m = 0; m < valid; ++m)
          _m_prefetchw(a.y + (first + m) * static_cast<std::int64_t>(a.y_stride) + r);
        asm volatile("" ::: "memory");  // the tile loads' asm does not tell the compiler it reads memory
        auto a_at = [&](std::int32_t item) { return xa + 512 * (item >> 5); };
        auto b_at = [&](std::int32_t item) { return codes + ((item >> 5) * kParts + (item >> 1 & 1)) * 512; };
        __m512 acc[16];
#pragma GCC unroll 16
        for (auto& v : acc) v = _mm512_setzero_ps();
        int lane = 0;
        // The f32 steps of one product (C stored at cp), and the lane's hand-over at its end. A
        // macro, not a lambda: a lambda capturing acc made GCC keep the accumulators in memory, a
        // load and a store each per product (slower: docs/formats_bonsai.md).
#define GRAFT_BONSAI_AMX_FINISH(item_expr, cp)                                                                   \
  do {                                                                                                         \
    const std::int32_t item = (item_expr);                                                                     \
    const std::int64_t g = item >> 5;                                                                          \
    const __m512 dwv = _mm512_load_ps(dw_all + 16 * (g / kG));                                                 \
    _Pragma("GCC unroll 16") for (int m = 0; m < 16; ++m) acc[m] =                                             \
        _mm512_fmadd_ps(_mm512_maskz_cvtepi32_ps(0xFFFF, _mm512_load_si512((cp) + 16 * m)),                    \
                        _mm512_mul_ps(dwv, _mm512_set1_ps(dx[m * dx_stride + g])), acc[m]);                     \
    if (item & 1) {                                                                                            \
      float* out = lanes + 256 * lane;                                                                         \
      _Pragma("GCC unroll 16") for (int m = 0; m < 16; ++m) {                                                  \
        _mm512_store_ps(out + 16 * m, acc[m]);                                                                 \
        acc[m] = _mm512_setzero_ps();                                                                          \
      }                                                                                                        \
      ++lane;                                                                                                  \
    }                                                                                                          \
  } while (0)
        // Products in pairs (n_items is even: k / 32 is), tile set 0 then 1, each issued one
        // product ahead of the f32 steps that read it.
        GRAFT_AMX_PRODUCT(0, 2, 4, a_at(items[0]), 32, b_at(items[0]));
        for (std::int64_t idx = 0; idx < n_items; idx += 2) {
          GRAFT_AMX_PRODUCT(1, 3, 5, a_at(items[idx + 1]), 32, b_at(items[idx + 1]));
          _tile_stored(0, cbuf[0], 64);
          asm volatile("" : "+m"(*reinterpret_cast<std::int32_t(*)[256]>(cbuf[0])));
          GRAFT_BONSAI_AMX_FINISH(items[idx], cbuf[0]);
          if (idx + 2 < n_items) GRAFT_AMX_PRODUCT(0, 2, 4, a_at(items[idx + 2]), 32, b_at(items[idx + 2]));
          _tile_stored(1, cbuf[1], 64);
          asm volatile("" : "+m"(*reinterpret_cast<std::int32_t(*)[256]>(cbuf[1])));
          GRAFT_BONSAI_AMX_FINISH(items[idx + 1], cbuf[1]);
        }
#undef GRAFT_BONSAI_AMX_FINISH
        // The fixed 16-lane tree, 16 rows per addition. (Loads under a lanes_used condition made
        // GCC copy every lane through the stack, which was slower.)
        for (std::int64_t m = 0; m < valid; ++m) {
          __m512 v[16];
#pragma GCC unroll 16
          for (int L = 0; L < 16; ++L) v[L] = _mm512_load_ps(lanes + 256 * L + 16 * m);
#pragma GCC unroll 4
          for (int w = 8; w >= 1; w /= 2)
#pragma GCC unroll 8
            for (int l = 0; l < w; ++l) v[l] = _mm512_add_ps(v[l], v[l + w]);
          _mm512_mask_storeu_ps(a.y + (first + m) * static_cast<std::int64_t>(a.y_stride) + r, row_mask, v[0]);
        }
      }
    }
    _tile_release();
  }
};

template <class W>
void bonsai_amx_gemm(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1) {
  thread_local typename BonsaiAmxGemm<W>::Scratch scratch;
  BonsaiAmxGemm<W>::run(a, r0, r1, c0, c1, scratch);
}

}  // namespace
}  // namespace graft::quant
