#include "families/bonsai/q1_0_packed.hpp"

#include <algorithm>
#include <cstring>

#include "driver/packed_groups.hpp"
#include "formats/q1_0/block_q1_0.hpp"

namespace graft::quant {

static_assert(kQ1GroupBlockBytes == kQ1GroupRows * static_cast<std::int64_t>(sizeof(block_q1_0)));

std::uint64_t q1_0_packed_bytes(std::int64_t k, std::int64_t m) noexcept {
  return packed_groups_bytes(k / kQK1_0, m, kQ1GroupRows, sizeof(block_q1_0));
}

void q1_0_pack_groups(const std::uint8_t* w, std::size_t stride, std::int64_t k, std::int64_t m, std::int64_t g0,
                      std::int64_t g1, std::uint8_t* out) noexcept {
  pack_row_groups(w, stride, k / kQK1_0, m, kQ1GroupRows, sizeof(block_q1_0), g0, g1, out,
                  [](int i, const std::uint8_t* blk, std::uint8_t* o) {
                    std::memcpy(o + 2 * i, blk, 2);
                    for (int s = 0; s < 4; ++s) std::memcpy(o + kQ1GroupSignsAt + 64 * s + 4 * i, blk + 2 + 4 * s, 4);
                  });
}

static_assert(kQ1PlaneBlockBytes == kQ1PlaneRows * static_cast<std::int64_t>(sizeof(block_q1_0)));

std::uint64_t q1_0_planes_bytes(std::int64_t k, std::int64_t m) noexcept {
  return packed_groups_bytes(k / kQK1_0, m, kQ1PlaneRows, sizeof(block_q1_0));
}

void q1_0_pack_planes(const std::uint8_t* w, std::size_t stride, std::int64_t k, std::int64_t m, std::int64_t g0,
                      std::int64_t g1, std::uint8_t* out) noexcept {
  pack_row_groups(w, stride, k / kQK1_0, m, kQ1PlaneRows, sizeof(block_q1_0), g0, g1, out,
                  [](int i, const std::uint8_t* blk, std::uint8_t* o) {
                    std::memcpy(o + 2 * i, blk, 2);
                    for (int j = 0; j < 16; ++j) o[kQ1PlaneSignsAt + 32 * j + kQ1PlanePos(i)] = blk[2 + j];
                  });
}

bool q1_0_planes_level(SimdLevel level) noexcept {
#ifdef __x86_64__
  return level != SimdLevel::scalar;
#else
  (void)level;
  return false;
#endif
}

constinit const PackedLayout kQ1_0Rows16{
    .name = "q1_0_rows16",
    .row_group = kQ1GroupRows,
    .used_at = &packed_layout_level,
    .bytes = &q1_0_packed_bytes,
    .pack = &q1_0_pack_groups,
    .gemm = {.avx512 = GRAFT_X86_KERNEL(&q1_0_packed_gemm_avx512), .amx = GRAFT_X86_KERNEL(&q1_0_packed_gemm_amx)},
};

constinit const PackedLayout kQ1_0Rows32{
    .name = "q1_0_rows32",
    .row_group = kQ1PlaneRows,
    .used_at = &q1_0_planes_level,
    .bytes = &q1_0_planes_bytes,
    .pack = &q1_0_pack_planes,
    .gemm = {.avx2 = GRAFT_X86_KERNEL(&q1_0_planes_gemm_avx2),
             .avx512 = GRAFT_X86_KERNEL(&q1_0_planes_gemm_avx2),
             .amx = GRAFT_X86_KERNEL(&q1_0_planes_gemm_avx2)},
    .batches_by_column = true,  // the lookup tables are per column
};

}  // namespace graft::quant
