#include "q2_k_packed.hpp"

#include <algorithm>
#include <cstring>

#include "k_pack_order.hpp"
#include "packed_groups.hpp"
#include "q2_k_block.hpp"
#ifdef __x86_64__
#include "q2_k_batch_avx512.hpp"
#endif

namespace graft::quant {

static_assert(kQ2GroupBlockBytes == kQ2GroupRows * static_cast<std::int64_t>(sizeof(BlockQ2K)));
static_assert(kQ2GroupCodesAt + kQ2GroupRows * 64 == kQ2GroupBlockBytes);

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
  return packed_groups_bytes(k / kQ2KBlockElems, m, kQ2GroupRows, sizeof(BlockQ2K));
}

void q2_k_pack_groups(const std::uint8_t* w, std::size_t stride, std::int64_t k, std::int64_t m, std::int64_t g0,
                      std::int64_t g1, std::uint8_t* out) noexcept {
  pack_row_groups(w, stride, k / kQ2KBlockElems, m, kQ2GroupRows, sizeof(BlockQ2K), g0, g1, out,
                  [](int i, const std::uint8_t* src, std::uint8_t* o) {
                    BlockQ2K blk;
                    std::memcpy(&blk, src, sizeof blk);
                    const auto neg_dmin = static_cast<std::uint16_t>(blk.dmin ^ 0x8000u);
                    std::memcpy(o + 2 * i, &blk.d, 2);
                    std::memcpy(o + kQ2GroupNegDminAt + 2 * i, &neg_dmin, 2);
                    std::memcpy(o + kQ2GroupScalesAt + 16 * i, blk.scales, 16);
                    pack_codes(src, o + kQ2GroupCodesAt + 64 * i);
                  });
}

}  // namespace graft::quant
