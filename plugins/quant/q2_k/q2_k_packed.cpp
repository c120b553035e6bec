#include "q2_k_packed.hpp"

#include <algorithm>
#include <cstring>

#include "k_pack_order.hpp"
#include "q2_k_block.hpp"

namespace graft::quant {

static_assert(kQ2GroupBlockBytes == kQ2GroupRows * static_cast<std::int64_t>(sizeof(BlockQ2K)));
static_assert(kQ2GroupCodesAt + kQ2GroupRows * 64 == kQ2GroupBlockBytes);

bool q2_k_packed_used_at(SimdLevel level) noexcept {
#ifdef __x86_64__
  static const bool vbmi = __builtin_cpu_supports("avx512vbmi");
  return (level == SimdLevel::avx512 || level == SimdLevel::amx) && vbmi;
#else
  (void)level;
  return false;
#endif
}

std::uint64_t q2_k_packed_bytes(std::int64_t k, std::int64_t m) noexcept {
  const auto groups = static_cast<std::uint64_t>((m + kQ2GroupRows - 1) / kQ2GroupRows);
  return groups * static_cast<std::uint64_t>(kQ2GroupBlockBytes) * static_cast<std::uint64_t>(k / kQ2KBlockElems);
}

void q2_k_pack_groups(const std::uint8_t* w, std::size_t stride, std::int64_t k, std::int64_t m, std::int64_t g0,
                      std::int64_t g1, std::uint8_t* out) noexcept {
  const std::int64_t nb = k / kQ2KBlockElems;
  const auto group_bytes = static_cast<std::size_t>(nb * kQ2GroupBlockBytes);
  for (std::int64_t g = g0; g < g1; ++g) {
    std::uint8_t* dst = out + static_cast<std::size_t>(g) * group_bytes;
    std::memset(dst, 0, group_bytes);
    const std::int64_t rows = std::min<std::int64_t>(kQ2GroupRows, m - g * kQ2GroupRows);
    for (std::int64_t i = 0; i < rows; ++i) {
      const auto* row = reinterpret_cast<const BlockQ2K*>(w + static_cast<std::size_t>(g * kQ2GroupRows + i) * stride);
      for (std::int64_t b = 0; b < nb; ++b) {
        BlockQ2K blk;
        std::memcpy(&blk, row + b, sizeof blk);
        std::uint8_t* o = dst + b * kQ2GroupBlockBytes;
        const auto neg_dmin = static_cast<std::uint16_t>(blk.dmin ^ 0x8000u);
        std::memcpy(o + 2 * i, &blk.d, 2);
        std::memcpy(o + kQ2GroupNegDminAt + 2 * i, &neg_dmin, 2);
        std::memcpy(o + kQ2GroupScalesAt + 16 * i, blk.scales, 16);
        std::uint8_t* codes = o + kQ2GroupCodesAt + 64 * i;
        for (int f = 0; f < 4; ++f)
          for (int n = 0; n < 16; ++n)
            for (int e = 0; e < 4; ++e)
              codes[4 * n + e] |= static_cast<std::uint8_t>(q2k_code(blk, k_pack_first(f / 2, f % 2, n) + e) << (2 * f));
      }
    }
  }
}

}  // namespace graft::quant
