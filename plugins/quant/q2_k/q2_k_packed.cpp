#include "q2_k_packed.hpp"

#include <algorithm>
#include <cstring>

#include "k_pack_order.hpp"
#include "q2_k_block.hpp"
#ifdef __x86_64__
#include "q2_k_batch_avx512.hpp"
#endif

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

#ifdef GRAFT_QUANT_X86
namespace {
// The file block's codes into the packed order: field f = 2p + h of each byte from the element-order
// codes of 128p .. 128p + 127. (Only called where the packed layout is used: AVX512-VBMI.)
__attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni,avx512vbmi")))
void pack_codes(const std::uint8_t* blk, std::uint8_t* out) {
  const StepCodes z = file_step_codes(blk);
  __m512i v = _mm512_setzero_si512();
  for (int f = 0; f < 4; ++f) {
    const __m512i field = k_pack_gather(z.z[2 * (f / 2)], z.z[2 * (f / 2) + 1], f % 2);
    v = _mm512_or_si512(v, _mm512_slli_epi16(field, 2 * f));  // codes <= 3: no bit crosses a byte
  }
  _mm512_storeu_si512(out, v);
}
}  // namespace
#else
void pack_codes(const std::uint8_t*, std::uint8_t*) {}  // never called: nothing is packed off x86
#endif

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
    const std::int64_t rows = std::min<std::int64_t>(kQ2GroupRows, m - g * kQ2GroupRows);
    if (rows < kQ2GroupRows) std::memset(dst, 0, group_bytes);  // full groups are written whole below
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
        pack_codes(reinterpret_cast<const std::uint8_t*>(row + b), o + kQ2GroupCodesAt + 64 * i);
      }
    }
  }
}

}  // namespace graft::quant
