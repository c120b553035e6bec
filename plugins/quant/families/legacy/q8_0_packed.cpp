#include "families/legacy/q8_0_packed.hpp"

#include <algorithm>
#include <cstring>

#include "driver/packed_groups.hpp"
#include "formats/q8_0/block_q8_0.hpp"

namespace graft::quant {

static_assert(sizeof(block_q8_0) == 34);

std::uint64_t q8_0_rows4_bytes(std::int64_t k, std::int64_t m) noexcept {
  return packed_groups_bytes(k / kQK8_0, m, kQ8GroupRows, sizeof(block_q8_0));
}

void q8_0_pack_rows4(const std::uint8_t* w, std::size_t stride, std::int64_t k, std::int64_t m, std::int64_t g0,
                     std::int64_t g1, std::uint8_t* out) noexcept {
  const std::int64_t nb = k / kQK8_0;
  const std::size_t group_bytes = static_cast<std::size_t>(nb) * kQ8GroupRows * sizeof(block_q8_0);
  for_each_group_row(w, stride, m, kQ8GroupRows, group_bytes, g0, g1, out,
                     [nb](int i, const std::uint8_t* row, std::uint8_t* dst) {
                       for (std::int64_t b = 0; b < nb; ++b) {
                         const std::int64_t c = b / kQ8ChunkBlocks, j = b % kQ8ChunkBlocks;
                         const std::int64_t nc = std::min<std::int64_t>(kQ8ChunkBlocks, nb - kQ8ChunkBlocks * c);
                         std::uint8_t* chunk =
                             dst + static_cast<std::size_t>(c * kQ8ChunkBlocks * kQ8GroupRows) * sizeof(block_q8_0);
                         const std::uint8_t* blk = row + static_cast<std::size_t>(b) * sizeof(block_q8_0);
                         std::memcpy(chunk + 2 * (nc * i + j), blk, 2);
                         std::memcpy(chunk + 8 * nc + 32 * (kQ8GroupRows * j + i), blk + 2, 32);
                       }
                     });
}

bool q8_0_rows4_level(SimdLevel level) noexcept {
#ifdef __x86_64__
  return level == SimdLevel::avx2;
#else
  (void)level;
  return false;
#endif
}

bool q8_0_rows4_row_length(std::int64_t k) noexcept { return k <= kQ8Rows4MaxK; }

constinit const PackedLayout kQ8_0Rows4{
    .name = "q8_0_rows4",
    .row_group = kQ8GroupRows,
    .used_at = &q8_0_rows4_level,
    .bytes = &q8_0_rows4_bytes,
    .pack = &q8_0_pack_rows4,
    .gemm = {.avx2 = GRAFT_X86_KERNEL(&q8_0_rows4_gemm_avx2)},
    .used_for = &q8_0_rows4_row_length,
};

}  // namespace graft::quant
