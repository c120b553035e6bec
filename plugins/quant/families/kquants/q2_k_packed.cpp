#include "families/kquants/q2_k_packed.hpp"

#include <algorithm>
#include <cstring>

#include "driver/packed_groups.hpp"
#include "formats/q2_k/block_q2_k.hpp"
#ifdef __x86_64__
#include "families/kquants/q2_k_batch_avx512.hpp"
#endif

namespace graft::quant {

static_assert(kQ2GroupBlockBytes == kQ2GroupRows * static_cast<std::int64_t>(sizeof(block_q2_k)));
static_assert(kQ2GroupCodesAt + kQ2GroupRows * 64 == kQ2GroupBlockBytes);

#ifdef GRAFT_QUANT_X86
namespace {
// Row i's codes into its pair's two vectors (its 128-bit lanes only; the other row fills the rest).
// (Only called where the packed layout is used: AVX512-VBMI.)
__attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni,avx512vbmi")))
void pack_codes(const std::uint8_t* blk, int i, std::uint8_t* out) {
  const StepCodes z = file_step_codes(blk);  // z[s]: the codes of elements 64s .. 64s + 63
  const __mmask64 lanes = i % 2 ? 0xFFFF0000FFFF0000ull : 0x0000FFFF0000FFFFull;
  for (int v = 0; v < 2; ++v) {
    __m512i codes = _mm512_setzero_si512();
    for (int f = 0; f < 4; ++f) {
      const __m512i field = _mm512_permutexvar_epi8(_mm512_load_si512(kQ2PairOrder.field[f % 2]), z.z[2 * v + f / 2]);
      codes = _mm512_or_si512(codes, _mm512_slli_epi16(field, 2 * f));  // codes <= 3: no bit crosses a byte
    }
    _mm512_mask_storeu_epi8(out + 128 * (i / 2) + 64 * v, lanes, codes);
  }
}
}  // namespace
#else
void pack_codes(const std::uint8_t*, int, std::uint8_t*) {}  // never called: nothing is packed off x86
#endif

std::uint64_t q2_k_packed_bytes(std::int64_t k, std::int64_t m) noexcept {
  return packed_groups_bytes(k / kQK_K, m, kQ2GroupRows, sizeof(block_q2_k));
}

void q2_k_pack_groups(const std::uint8_t* w, std::size_t stride, std::int64_t k, std::int64_t m, std::int64_t g0,
                      std::int64_t g1, std::uint8_t* out) noexcept {
  pack_row_groups(w, stride, k / kQK_K, m, kQ2GroupRows, sizeof(block_q2_k), g0, g1, out,
                  [](int i, const std::uint8_t* src, std::uint8_t* o) {
                    block_q2_k blk;
                    std::memcpy(&blk, src, sizeof blk);
                    const auto neg_dmin = static_cast<std::uint16_t>(blk.dmin ^ 0x8000u);
                    std::memcpy(o + 2 * i, &blk.d, 2);
                    std::memcpy(o + kQ2GroupNegDminAt + 2 * i, &neg_dmin, 2);
                    std::memcpy(o + kQ2GroupScalesAt + 16 * i, blk.scales, 16);
                    pack_codes(src, i, o + kQ2GroupCodesAt);
                  });
}

constinit const PackedLayout kQ2_KRows4{
    .name = "q2_k_rows4",
    .row_group = kQ2GroupRows,
    .used_at = &packed_layout_level,
    .bytes = &q2_k_packed_bytes,
    .pack = &q2_k_pack_groups,
    .gemm = {.avx512 = GRAFT_X86_KERNEL(&q2_k_packed_gemm_avx512), .amx = GRAFT_X86_KERNEL(&q2_k_packed_gemm_amx)},
};

}  // namespace graft::quant
