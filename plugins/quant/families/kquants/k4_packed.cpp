#include "families/kquants/k4_packed.hpp"

#include <algorithm>
#include <cstring>

#include "driver/packed_groups.hpp"
#include "families/kquants/k4_layout.hpp"
#include "families/kquants/k_pack_order.hpp"

namespace graft::quant {

static_assert(kQ4GroupBlockBytes == kQ4GroupRows * static_cast<std::int64_t>(sizeof(block_q4_k)));
static_assert(kQ5GroupBlockBytes == kQ4GroupRows * static_cast<std::int64_t>(sizeof(block_q5_k)));
static_assert(kQ4GroupFieldsAt + kQ4GroupRows * 16 * 6 / 8 == kQ4GroupCodesAt);
static_assert(kQ5GroupHighBitsAt + kQ4GroupRows * 32 == kQ5GroupBlockBytes);

#ifdef __x86_64__
namespace {
// The file block's 128 code bytes into the packed order: vector p = A | B << 4 from the
// element-order codes of 128p .. 128p + 127. (Only called where the packed layout is used:
// AVX512-VBMI.)
__attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni,avx512vbmi")))
void pack_codes(const std::uint8_t* qs, std::uint8_t* out) {
  __m512i z[4];  // elements 64s .. 64s + 63: qs[32s + l] low nibbles, then high nibbles
  for (int s = 0; s < 4; ++s) {
    const __m512i both = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 32 * s)));
    z[s] = _mm512_and_si512(_mm512_srlv_epi64(both, _mm512_setr_epi64(0, 0, 0, 0, 4, 4, 4, 4)), _mm512_set1_epi8(0x0F));
  }
  for (int p = 0; p < 2; ++p) {
    const __m512i a = k_pack_gather(z[2 * p], z[2 * p + 1], 0), b = k_pack_gather(z[2 * p], z[2 * p + 1], 1);
    _mm512_storeu_si512(out + 64 * p, _mm512_or_si512(a, _mm512_slli_epi16(b, 4)));  // nibbles: no bit crosses a byte
  }
}
}  // namespace
#else
void pack_codes(const std::uint8_t*, std::uint8_t*) {}  // never called: nothing is packed off x86
#endif

namespace {
// One row's block (Q4_K or Q5_K, Bits = 4 or 5) into its group's block o as row i.
template <int Bits>
void pack_block(int i, const std::uint8_t* src, std::uint8_t* o) noexcept {
  std::uint16_t h[2];
  std::memcpy(h, src, 4);
  const auto neg_dmin = static_cast<std::uint16_t>(h[1] ^ 0x8000u);
  std::memcpy(o + 2 * i, &h[0], 2);
  std::memcpy(o + kQ4GroupNegDminAt + 2 * i, &neg_dmin, 2);
  // Row i's 16 fields are bits 96i .. 96i + 95 of the stream: bytes 12i .. 12i + 11.
  std::uint8_t fields[16];
  unpack_scales_k4(src + 4, fields, fields + 8);
  std::uint64_t lo = 0, hi = 0;  // fields 0..9 (60 bits), 10..15
  for (int j = 0; j < 10; ++j) lo |= std::uint64_t{fields[j]} << (6 * j);
  for (int j = 10; j < 16; ++j) hi |= std::uint64_t{fields[j]} << (6 * j - 60);
  lo |= hi << 60;  // the stream's bits 60..63
  hi >>= 4;
  std::memcpy(o + kQ4GroupFieldsAt + 12 * i, &lo, 8);  // little-endian, as the kernel reads it
  std::memcpy(o + kQ4GroupFieldsAt + 12 * i + 8, &hi, 4);
  pack_codes(src + K4Layout<Bits>::kQsOffset, o + kQ4GroupCodesAt + 128 * i);
  if constexpr (Bits == 5) {
    const std::uint8_t* qh = src + K4Layout<5>::kQhOffset;  // bit j of qh[l]: element 32j + l
    for (int p = 0; p < 2; ++p)
      for (int high = 0; high < 2; ++high) {
        std::uint64_t mask = 0;
        for (int t = 0; t < 64; ++t) {
          const int e = k_pack_first(p, high, t / 4) + t % 4;
          mask |= std::uint64_t{(qh[e % 32] >> (e / 32)) & 1u} << t;
        }
        std::memcpy(o + kQ5GroupHighBitsAt + 32 * i + 8 * (2 * p + high), &mask, 8);
      }
  }
}
}  // namespace

std::uint64_t q4_k_packed_bytes(std::int64_t k, std::int64_t m) noexcept {
  return packed_groups_bytes(k / kQK_K, m, kQ4GroupRows, sizeof(block_q4_k));
}

void q4_k_pack_groups(const std::uint8_t* w, std::size_t stride, std::int64_t k, std::int64_t m, std::int64_t g0,
                      std::int64_t g1, std::uint8_t* out) noexcept {
  pack_row_groups(w, stride, k / kQK_K, m, kQ4GroupRows, sizeof(block_q4_k), g0, g1, out, &pack_block<4>);
}

std::uint64_t q5_k_packed_bytes(std::int64_t k, std::int64_t m) noexcept {
  return packed_groups_bytes(k / kQK_K, m, kQ4GroupRows, sizeof(block_q5_k));
}

void q5_k_pack_groups(const std::uint8_t* w, std::size_t stride, std::int64_t k, std::int64_t m, std::int64_t g0,
                      std::int64_t g1, std::uint8_t* out) noexcept {
  pack_row_groups(w, stride, k / kQK_K, m, kQ4GroupRows, sizeof(block_q5_k), g0, g1, out, &pack_block<5>);
}

namespace {
// The two layouts differ only in their bytes, their packing and the kernel on them.
constexpr PackedLayout rows4(const char* name, PackedLayout::BytesFn bytes, PackedLayout::PackFn pack, GemmFn kernel) {
  return {.name = name,
          .row_group = kQ4GroupRows,
          .used_at = &packed_layout_level,
          .bytes = bytes,
          .pack = pack,
          .gemm = {.avx512 = kernel, .amx = kernel}};
}
}  // namespace

constinit const PackedLayout kQ4_KRows4 =
    rows4("q4_k_rows4", &q4_k_packed_bytes, &q4_k_pack_groups, GRAFT_X86_KERNEL(&q4_k_packed_gemm_avx512));
constinit const PackedLayout kQ5_KRows4 =
    rows4("q5_k_rows4", &q5_k_packed_bytes, &q5_k_pack_groups, GRAFT_X86_KERNEL(&q5_k_packed_gemm_avx512));

}  // namespace graft::quant
