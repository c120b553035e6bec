// What the AMX batch kernels share: their target attribute, the tile configuration's layout, and
// which batches they take (bonsai_gemm_amx.hpp, q2_k_packed_amx.cpp). Include in an x86
// translation unit only.
#pragma once

#include <immintrin.h>

#include <cstdint>

#define GRAFT_TARGET_AMX                                                                              \
  __attribute__((target("prfchw,avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx512bitalg,amx-tile,amx-int8")))

// One signed-byte tile product into C tile `c` from A in tile `ta` (rows a_stride bytes apart) and
// B in tile `tb` (64-byte rows). A macro: the tile numbers are part of each instruction, so they
// must be constants where it is spelled out. The kernels alternate two sets (C 0, A 2, B 4 and C 1,
// A 3, B 5) so one product runs while the last one's f32 steps do.
#define GRAFT_AMX_PRODUCT(c, ta, tb, a_at, a_stride, b_at) \
  do {                                                     \
    _tile_loadd(ta, a_at, a_stride);                       \
    _tile_loadd(tb, b_at, 64);                             \
    _tile_zero(c);                                         \
    _tile_dpbssd(c, ta, tb);                               \
  } while (0)

namespace graft::quant {
namespace {

// The tile configuration (palette 1): 64 bytes, loaded by ldtilecfg.
struct alignas(64) AmxTileConfig {
  std::uint8_t palette = 1, start_row = 0;
  std::uint8_t reserved[14] = {};
  std::uint16_t colsb[16] = {};
  std::uint8_t rows[16] = {};
};
static_assert(sizeof(AmxTileConfig) == 64);

// Loads the configuration of the kernels' two tile sets (GRAFT_AMX_PRODUCT): C tiles 0, 1 are 16
// columns x 16 rows' int32 sums, A tiles 2, 3 16 columns x 32 activation bytes, B tiles 4, 5
// 8 rows x (16 weight rows x 4 bytes): products with K = 32.
GRAFT_TARGET_AMX inline void load_k32_tile_config() {
  AmxTileConfig cfg;
  for (int t = 0; t < 2; ++t) {
    cfg.rows[t] = 16, cfg.colsb[t] = 64;
    cfg.rows[2 + t] = 16, cfg.colsb[2 + t] = 32;
    cfg.rows[4 + t] = 8, cfg.colsb[4 + t] = 64;
  }
  _tile_loadconfig(&cfg);
}

// Whether an n-column batch runs on an AMX kernel rather than the avx512 one: 16 columns or more,
// and the 16-column tiles padded by at most 25% (each 16-row tile is unpacked once per call, and a
// tile costs the same however many of its columns are real). Measured side by side for Q1_0 (one
// thread, k = m = 2048, GMAC/s avx512 / amx): n = 8: 68 / 28, 12: 88 / 54, 16: 107 / 119, 24: 104
// / 89, 32: 106 / 142, 40: 84 / 105, 48: 109 / 150, 256: 105 / 150.
constexpr bool amx_pays(std::int64_t n) {
  const std::int64_t padded = (n + 15) / 16 * 16;
  return n >= 16 && 4 * padded <= 5 * n;
}

}  // namespace
}  // namespace graft::quant
