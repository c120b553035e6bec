#include "q4_k_packed.hpp"

#include <algorithm>
#include <cstring>

#include "k4_blocks.hpp"
#include "k_pack_order.hpp"

namespace graft::quant {

static_assert(kQ4GroupBlockBytes == kQ4GroupRows * static_cast<std::int64_t>(sizeof(BlockQ4_K)));
static_assert(kQ4GroupFieldsAt + kQ4GroupRows * 16 * 6 / 8 == kQ4GroupCodesAt);

bool q4_k_packed_used_at(SimdLevel level) noexcept {
#ifdef __x86_64__
  // The kernel needs AVX512-VBMI (vpermb, vpmultishiftqb); without it the avx512 level reads the
  // file's layout.
  static const bool vbmi = __builtin_cpu_supports("avx512vbmi");
  return (level == SimdLevel::avx512 || level == SimdLevel::amx) && vbmi;
#else
  (void)level;
  return false;
#endif
}

std::uint64_t q4_k_packed_bytes(std::int64_t k, std::int64_t m) noexcept {
  const auto groups = static_cast<std::uint64_t>((m + kQ4GroupRows - 1) / kQ4GroupRows);
  return groups * static_cast<std::uint64_t>(kQ4GroupBlockBytes) * static_cast<std::uint64_t>(k / kQK_K);
}

void q4_k_pack_groups(const std::uint8_t* w, std::size_t stride, std::int64_t k, std::int64_t m, std::int64_t g0,
                      std::int64_t g1, std::uint8_t* out) noexcept {
  const std::int64_t nb = k / kQK_K;
  const auto group_bytes = static_cast<std::size_t>(nb * kQ4GroupBlockBytes);
  for (std::int64_t g = g0; g < g1; ++g) {
    std::uint8_t* dst = out + static_cast<std::size_t>(g) * group_bytes;
    std::memset(dst, 0, group_bytes);
    const std::int64_t rows = std::min<std::int64_t>(kQ4GroupRows, m - g * kQ4GroupRows);
    for (std::int64_t i = 0; i < rows; ++i) {
      const auto* row = reinterpret_cast<const BlockQ4_K*>(w + static_cast<std::size_t>(g * kQ4GroupRows + i) * stride);
      for (std::int64_t b = 0; b < nb; ++b) {
        BlockQ4_K blk;
        std::memcpy(&blk, row + b, sizeof blk);
        std::uint8_t* o = dst + b * kQ4GroupBlockBytes;
        const auto neg_dmin = static_cast<std::uint16_t>(blk.dmin ^ 0x8000u);
        std::memcpy(o + 2 * i, &blk.d, 2);
        std::memcpy(o + kQ4GroupNegDminAt + 2 * i, &neg_dmin, 2);
        std::uint8_t fields[16];
        unpack_scales_k4(blk.scales, fields, fields + 8);
        for (int j = 0; j < 16; ++j) {
          const int bit = 6 * (16 * static_cast<int>(i) + j);
          const unsigned v = static_cast<unsigned>(fields[j]) << (bit % 8);  // at most 14 bits
          o[kQ4GroupFieldsAt + bit / 8] |= static_cast<std::uint8_t>(v);
          o[kQ4GroupFieldsAt + bit / 8 + 1] |= static_cast<std::uint8_t>(v >> 8);
        }
        std::uint8_t q[kQK_K];
        for (int j = 0; j < 4; ++j)
          for (int l = 0; l < 32; ++l) {
            q[64 * j + l] = blk.qs[32 * j + l] & 0x0F;
            q[64 * j + 32 + l] = blk.qs[32 * j + l] >> 4;
          }
        std::uint8_t* codes = o + kQ4GroupCodesAt + 128 * i;
        for (int p = 0; p < 2; ++p)
          for (int n = 0; n < 16; ++n)
            for (int e = 0; e < 4; ++e)
              codes[64 * p + 4 * n + e] = static_cast<std::uint8_t>(q[k_pack_first(p, 0, n) + e] |
                                                                    (q[k_pack_first(p, 1, n) + e] << 4));
      }
    }
  }
}

}  // namespace graft::quant
