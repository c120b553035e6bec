#include "q1_0_packed.hpp"

#include <algorithm>
#include <cstring>

#include "bonsai_blocks.hpp"

namespace graft::quant {

static_assert(kQ1GroupBlockBytes == kQ1GroupRows * static_cast<std::int64_t>(sizeof(BlockQ1_0)));

std::uint64_t q1_0_packed_bytes(std::int64_t k, std::int64_t m) noexcept {
  const auto groups = static_cast<std::uint64_t>((m + kQ1GroupRows - 1) / kQ1GroupRows);
  return groups * kQ1GroupRows * static_cast<std::uint64_t>(k / kQK1_0) * sizeof(BlockQ1_0);
}

void q1_0_pack_groups(const std::uint8_t* w, std::size_t stride, std::int64_t k, std::int64_t m, std::int64_t g0,
                      std::int64_t g1, std::uint8_t* out) noexcept {
  const std::int64_t nb = k / kQK1_0;
  constexpr std::size_t kBlockBytes = sizeof(BlockQ1_0);
  const auto group_bytes = static_cast<std::size_t>(nb * kQ1GroupBlockBytes);
  for (std::int64_t g = g0; g < g1; ++g) {
    std::uint8_t* dst = out + static_cast<std::size_t>(g) * group_bytes;
    std::memset(dst, 0, group_bytes);
    const std::int64_t rows = std::min<std::int64_t>(kQ1GroupRows, m - g * kQ1GroupRows);
    for (std::int64_t i = 0; i < rows; ++i) {
      const std::uint8_t* row = w + static_cast<std::size_t>(g * kQ1GroupRows + i) * stride;
      for (std::int64_t b = 0; b < nb; ++b) {
        const std::uint8_t* blk = row + b * static_cast<std::int64_t>(kBlockBytes);
        std::uint8_t* o = dst + b * kQ1GroupBlockBytes;
        std::memcpy(o + 2 * i, blk, 2);
        for (int s = 0; s < 4; ++s) std::memcpy(o + kQ1GroupSignsAt + 64 * s + 4 * i, blk + 2 + 4 * s, 4);
      }
    }
  }
}

}  // namespace graft::quant
