// Q1_0 on the packed layout (q1_0_packed.hpp) with table lookups, AVX-512 VBMI. Same bits as every
// other Q1_0 kernel (bonsai_gemm.hpp: lane g % 16 of an output takes fma(float(P_g), d_w * d_x[g]),
// P_g the exact sum of +-x over sub-block g, then the fixed 16-lane tree).
//
// Per activation column and sub-block of 32 quants, tables of the 16 signed sums
// v = sum_b (+-x[4t + b]) of each nibble group t = 0..7 (4 elements; layout and split at
// kTableBytes below). The 16 rows' 32 sign bits of that sub-block are one 64-byte load in the
// packed layout (row i: dword i); byte j of a row's dword holds nibble groups 2j (low nibble) and
// 2j + 1 (high). OR-ing the byte's position j into bits 4..5 of each nibble makes it an index into
// a 64-entry table, so one vpermb looks up 64 (row, group) sums; vpdpbusd adds each row's 4 of them
// into its dword: P for 16 rows in 4 lookups, 2 byte adds and 2 dot products, where unpacking the
// bits for vpdpbusd costs 3 operations per 4 elements of 16 rows (bonsai_gemm_avx512.hpp). The
// tables are built once per call and thread. The f32 steps then run with the 16 rows across the
// vector and the 16 lanes of the definition in 16 registers, so the final tree is 15 additions for
// 16 outputs.
//
// Batches share the weight work across columns instead: per sub-block, 8 multishift + and steps
// make each row's 32 sign bits into bytes u = code + 1 (0 or 2), 4 per dword, and each column
// adds its 4 broadcast activation quants per step with one vpdpbusd, from a start of -sum(x), so
// the 16 rows' P come out in the 16 dwords (the lookups would cost a table per column). The
// definition's lanes are walked one at a time (sub-blocks L, L + 16, ...), so a tile's 4 column
// accumulators stay in registers. Rows go in blocks of ~256 KiB, swept once per column tile, so
// they stay in L2; the AMX kernel takes the batches it pays for (q1_0_gemm_amx.cpp).
#include "families/bonsai/q1_0_gemm.hpp"
#include "families/bonsai/q1_0_packed.hpp"

#ifdef __x86_64__
#include <algorithm>
#include <cstring>
#include <type_traits>

#include "activations/q8_activations.hpp"
#include "families/bonsai/bonsai_gemm_avx512.hpp"
#include "formats/q1_0/block_q1_0.hpp"

namespace graft::quant {

namespace {

constexpr std::size_t kTableBytes = 256;  // per column and sub-block: 2 x 64 low parts, 2 x 64 high parts

// The 64 entries of a table: slot j (0..3) x pattern n (0..15). Table "a" serves the low nibbles of
// a row's 4 code bytes (groups 0, 2, 4, 6: group 2j in slot j), table "b" the high nibbles (groups
// 2j + 1). An entry v = sum_b (+-x[4t + b]) (|v| <= 508) is split as v = lo + 128 * hi with
// lo = v & 127 and hi = v >> 7 in -4..3, the table holding lo and 16 * hi: two lookups' low parts
// add up to at most 254 (unsigned) and their high parts to -128..96 (signed), so each pair is one
// byte add before a single vpdpbusd (ones for the low parts, eights for the high ones).
//
// Controls for building them: word w of vector q is the entry (group t = kPairBase[q] + 2 (w / 16),
// pattern n = w % 16), so the low (high) bytes of vectors 0 and 1 are table a's low (high) parts and
// those of vectors 2 and 3 table b's.
constexpr int kPairBase[4] = {0, 4, 1, 5};
struct TableCtrl {
  alignas(64) std::uint8_t xa[4][64];   // vpermb: bytes 2w, 2w+1 <- x[4t], x[4t + 1]
  alignas(64) std::uint8_t xb[4][64];   //                        <- x[4t + 2], x[4t + 3]
  alignas(64) std::uint8_t pa[64];      // 2 * (bits 0, 1 of n): the unsigned side of vpmaddubsw
  alignas(64) std::uint8_t pb[64];      // 2 * (bits 2, 3 of n)
  alignas(64) std::uint16_t sum[4][32]; // vpermw: word w <- low word of dword t (the group's sum)
  alignas(64) std::uint8_t lo[64];      // vpermt2b: the low / high bytes of 64 words
  alignas(64) std::uint8_t hi[64];
};
constexpr TableCtrl make_table_ctrl() {
  TableCtrl c{};
  for (int q = 0; q < 4; ++q)
    for (int w = 0; w < 32; ++w) {
      const int t = kPairBase[q] + 2 * (w / 16);
      c.xa[q][2 * w] = static_cast<std::uint8_t>(4 * t), c.xa[q][2 * w + 1] = static_cast<std::uint8_t>(4 * t + 1);
      c.xb[q][2 * w] = static_cast<std::uint8_t>(4 * t + 2), c.xb[q][2 * w + 1] = static_cast<std::uint8_t>(4 * t + 3);
      c.sum[q][w] = static_cast<std::uint16_t>(2 * t);
    }
  for (int w = 0; w < 32; ++w) {
    const int n = w % 16;
    c.pa[2 * w] = static_cast<std::uint8_t>(2 * (n & 1)), c.pa[2 * w + 1] = static_cast<std::uint8_t>(n & 2);
    c.pb[2 * w] = static_cast<std::uint8_t>((n >> 1) & 2), c.pb[2 * w + 1] = static_cast<std::uint8_t>((n >> 2) & 2);
  }
  for (int i = 0; i < 64; ++i) c.lo[i] = static_cast<std::uint8_t>(2 * i), c.hi[i] = static_cast<std::uint8_t>(2 * i + 1);
  return c;
}
constexpr TableCtrl kTableCtrl = make_table_ctrl();

// The tables of one activation column: sub-block g at tab + 256 g: a's low parts, b's low parts,
// a's high parts, b's high parts (64 bytes each).
GRAFT_TARGET_AVX512_VBMI void build_tables(const std::int8_t* x, std::int64_t nsub, std::uint8_t* tab) {
  const TableCtrl& c = kTableCtrl;
  const __m512i ones = _mm512_set1_epi8(1);
  const __m512i low7 = _mm512_set1_epi16(0x007F), high4 = _mm512_set1_epi16(static_cast<short>(0xF000));
  for (std::int64_t g = 0; g < nsub; ++g) {
    const __m512i xv = _mm512_zextsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + 32 * g)));
    const __m512i sums = _mm512_dpbusd_epi32(_mm512_setzero_si512(), ones, xv);  // dword t: the group's sum
    __m512i v[4];
    for (int q = 0; q < 4; ++q) {
      const __m512i a = _mm512_permutexvar_epi8(_mm512_load_si512(c.xa[q]), xv);
      const __m512i b = _mm512_permutexvar_epi8(_mm512_load_si512(c.xb[q]), xv);
      __m512i e = _mm512_add_epi16(_mm512_maddubs_epi16(_mm512_load_si512(c.pa), a),
                                   _mm512_maddubs_epi16(_mm512_load_si512(c.pb), b));
      e = _mm512_sub_epi16(e, _mm512_permutexvar_epi16(_mm512_load_si512(c.sum[q]), sums));
      // Low byte: v & 127; high byte: 16 * (v >> 7), i.e. bits 7..10 of v in bits 4..7.
      v[q] = _mm512_or_si512(_mm512_and_si512(e, low7), _mm512_and_si512(_mm512_slli_epi16(e, 5), high4));
    }
    std::uint8_t* t = tab + static_cast<std::size_t>(g) * kTableBytes;
    const __m512i lo = _mm512_load_si512(c.lo), hi = _mm512_load_si512(c.hi);
    _mm512_store_si512(t, _mm512_permutex2var_epi8(v[0], lo, v[1]));
    _mm512_store_si512(t + 64, _mm512_permutex2var_epi8(v[2], lo, v[3]));
    _mm512_store_si512(t + 128, _mm512_permutex2var_epi8(v[0], hi, v[1]));
    _mm512_store_si512(t + 192, _mm512_permutex2var_epi8(v[2], hi, v[3]));
  }
}

// Block b of a group against one column: sub-block 4b + s adds to definition lane 4 bb + s, with
// bb = b % 4 (a compile-time register index, so the 16 accumulators never leave registers).
template <int bb, bool kPrefetch>
GRAFT_TARGET_AVX512_VBMI __attribute__((always_inline)) inline void column_block(__m512 (&acc)[16], const std::uint8_t* grp,
                                                                                std::int64_t b, const std::uint8_t* tab,
                                                                                const float* dx) {
  const __m512i low = _mm512_set1_epi8(0x0F), ones = _mm512_set1_epi8(1), eights = _mm512_set1_epi8(8);
  // Slot j in bits 4..5 of byte j of each dword (vpermb reads bits 0..5 of an index).
  const __m512i slot = _mm512_set1_epi32(0x30201000);
  const std::uint8_t* blk = grp + b * kQ1GroupBlockBytes;
  if constexpr (kPrefetch) {
    // 4 KiB ahead in the one stream the packed matrix is, into L2: faster than a T0 prefetch 2 KiB
    // ahead and than none (docs/benchmarks.md).
    for (int l = 0; l < 5; ++l) _mm_prefetch(reinterpret_cast<const char*>(blk + 4096 + 64 * l), _MM_HINT_T1);
  }
  const __m512 dw = _mm512_maskz_cvtph_ps(0xFFFF, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk)));
#pragma GCC unroll 4
  for (int s = 0; s < 4; ++s) {
    const std::int64_t g = 4 * b + s;
    const std::uint8_t* t = tab + static_cast<std::size_t>(g) * kTableBytes;
    const __m512i w = _mm512_loadu_si512(blk + kQ1GroupSignsAt + 64 * s);
    const __m512i ia = _mm512_ternarylogic_epi32(w, low, slot, 0xEA);  // (w & low) | slot
    const __m512i ib = _mm512_ternarylogic_epi32(_mm512_srli_epi16(w, 4), low, slot, 0xEA);
    const __m512i ls = _mm512_add_epi8(_mm512_permutexvar_epi8(ia, _mm512_load_si512(t)),
                                       _mm512_permutexvar_epi8(ib, _mm512_load_si512(t + 64)));
    const __m512i hs = _mm512_add_epi8(_mm512_permutexvar_epi8(ia, _mm512_load_si512(t + 128)),
                                       _mm512_permutexvar_epi8(ib, _mm512_load_si512(t + 192)));
    const __m512i p = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), ls, ones), eights, hs);
    const __m512 scale = _mm512_mul_ps(dw, _mm512_set1_ps(dx[g]));
    acc[4 * bb + s] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), scale, acc[4 * bb + s]);
  }
}

// The last nb % 4 blocks of a group (from block b, a multiple of 4).
template <bool kPrefetch>
GRAFT_TARGET_AVX512_VBMI __attribute__((noinline)) void column_tail(__m512 (&acc)[16], const std::uint8_t* grp,
                                                                   std::int64_t b, std::int64_t nb,
                                                                   const std::uint8_t* tab, const float* dx) {
  column_block<0, kPrefetch>(acc, grp, b, tab, dx);
  if (b + 1 < nb) column_block<1, kPrefetch>(acc, grp, b + 1, tab, dx);
  if (b + 2 < nb) column_block<2, kPrefetch>(acc, grp, b + 2, tab, dx);
}

// One group of 16 rows against one column: the 16 outputs at y (the first `rows` stored).
template <bool kPrefetch>
GRAFT_TARGET_AVX512_VBMI void group_column(const std::uint8_t* grp, std::int64_t nb, const std::uint8_t* tab,
                                           const float* dx, float* y, __mmask16 rows) {
  const __m512 z = _mm512_setzero_ps();
  __m512 acc[16] = {z, z, z, z, z, z, z, z, z, z, z, z, z, z, z, z};
  std::int64_t b = 0;
  for (; b + 4 <= nb; b += 4) {
    column_block<0, kPrefetch>(acc, grp, b, tab, dx);
    column_block<1, kPrefetch>(acc, grp, b + 1, tab, dx);
    column_block<2, kPrefetch>(acc, grp, b + 2, tab, dx);
    column_block<3, kPrefetch>(acc, grp, b + 3, tab, dx);
  }
  if (b < nb) {
    // Out of line and through memory, so the main loop's accumulators are never spilled for it.
    alignas(64) __m512 tail[16];
    for (int l = 0; l < 16; ++l) tail[l] = acc[l];
    column_tail<kPrefetch>(tail, grp, b, nb, tab, dx);
    for (int l = 0; l < 16; ++l) acc[l] = tail[l];
  }
  for (int w = 8; w >= 1; w /= 2)
    for (int l = 0; l < w; ++l) acc[l] = _mm512_add_ps(acc[l], acc[l + w]);
  _mm512_mask_storeu_ps(y, rows, acc[0]);
}

// vpmultishiftqb controls per step; a qword holds rows 2i and 2i + 1 here.
struct ExpandCtrl {
  alignas(64) std::uint8_t step[8][64];
};
constexpr ExpandCtrl make_expand_ctrl() {
  ExpandCtrl c{};
  for (int q = 0; q < 8; ++q)
    for (int n = 0; n < 64; ++n)
      c.step[q][n] = q1_sign_step_ctrl(q, n % 8);
  return c;
}
constexpr ExpandCtrl kExpandCtrl = make_expand_ctrl();

// One group of 16 rows against C columns from c; neg_sums[j * nsub + g] = -sum of column c + j's
// quants in sub-block g; lanes: scratch for C x 16 x 16 floats.
template <int C>
GRAFT_TARGET_AVX512_VBMI void group_columns(const std::uint8_t* grp, std::int64_t nsub, const Q8Activations& xq,
                                            std::int64_t c, const std::int32_t* neg_sums, float* lanes, float* y,
                                            std::int64_t y_stride, __mmask16 rows) {
  const __m512i two = _mm512_set1_epi8(2);
  const std::int8_t* x[C];
  const float* dx[C];
  for (int j = 0; j < C; ++j) x[j] = xq.block_qs(c + j, 0), dx[j] = xq.scales(c + j);
  const int used = static_cast<int>(std::min<std::int64_t>(16, nsub));
  for (int L = 0; L < used; ++L) {
    __m512 acc[C];
    for (auto& v : acc) v = _mm512_setzero_ps();
    for (std::int64_t g = L; g < nsub; g += 16) {
      const std::uint8_t* blk = grp + (g / 4) * kQ1GroupBlockBytes;
      const __m512 dw = _mm512_maskz_cvtph_ps(0xFFFF, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk)));
      const __m512i w = _mm512_loadu_si512(blk + kQ1GroupSignsAt + 64 * (g % 4));
      __m512i u[8];
      for (int q = 0; q < 8; ++q)
        u[q] = _mm512_and_si512(_mm512_multishift_epi64_epi8(_mm512_load_si512(kExpandCtrl.step[q]), w), two);
      for (int j = 0; j < C; ++j) {
        // Two chains of 4 (vpdpbusd's latency, not its throughput, would bound one chain of 8).
        __m512i p0 = _mm512_set1_epi32(neg_sums[j * nsub + g]), p1 = _mm512_setzero_si512();
        for (int q = 0; q < 8; q += 2) {
          std::int32_t quad[2];
          std::memcpy(quad, x[j] + 32 * g + 4 * q, 8);
          p0 = _mm512_dpbusd_epi32(p0, u[q], _mm512_set1_epi32(quad[0]));
          p1 = _mm512_dpbusd_epi32(p1, u[q + 1], _mm512_set1_epi32(quad[1]));
        }
        const __m512i p = _mm512_add_epi32(p0, p1);
        acc[j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), _mm512_mul_ps(dw, _mm512_set1_ps(dx[j][g])), acc[j]);
      }
    }
    for (int j = 0; j < C; ++j) _mm512_store_ps(lanes + (16 * j + L) * 16, acc[j]);
  }
  for (int j = 0; j < C; ++j) {
    __m512 v[16];
    for (int l = 0; l < 16; ++l) v[l] = l < used ? _mm512_load_ps(lanes + (16 * j + l) * 16) : _mm512_setzero_ps();
    for (int w = 8; w >= 1; w /= 2)
      for (int l = 0; l < w; ++l) v[l] = _mm512_add_ps(v[l], v[l + w]);
    _mm512_mask_storeu_ps(y + (c + j) * y_stride, rows, v[0]);
  }
}

}  // namespace

void q1_0_packed_gemm_avx512(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1) {
  const Q8Activations& xq = *a.xq;
  const std::int64_t nsub = a.k / 32, nb = a.k / kQK1_0;
  auto rows_of = [&](std::int64_t r) { return static_cast<__mmask16>((1u << std::min<std::int64_t>(16, r1 - r)) - 1); };
  if (c1 - c0 == 1) {
    // The pool hands a thread several row ranges of one call: the tables are built once per call.
    struct Tables {
      DerivedFrom from;
      AlignedVector<std::uint8_t> bytes;
    };
    thread_local Tables tables;
    if (!tables.from.holds(xq.generation, c0, c1)) {
      const std::size_t bytes = static_cast<std::size_t>(nsub) * kTableBytes;
      if (tables.bytes.size() < bytes) tables.bytes.resize(bytes);
      build_tables(xq.block_qs(c0, 0), nsub, tables.bytes.data());
      tables.from.set(xq.generation, c0, c1);
    }
    for (std::int64_t r = r0; r < r1; r += kQ1GroupRows)
      group_column<true>(a.w + r * static_cast<std::int64_t>(a.w_stride), nb, tables.bytes.data(), xq.scales(c0),
                         a.y + c0 * static_cast<std::int64_t>(a.y_stride) + r, rows_of(r));
    return;
  }
  // Batches: -sum(x) per column and sub-block (the activations' lane offsets are -sums of 4).
  thread_local AlignedVector<std::int32_t> neg_sums;
  thread_local AlignedVector<float> lanes(4 * 16 * 16);
  neg_sums.resize(static_cast<std::size_t>((c1 - c0) * nsub));
  for (std::int64_t c = c0; c < c1; ++c)
    for (std::int64_t g = 0; g < nsub; ++g) {
      const std::int32_t* o = xq.offsets(c, g);
      neg_sums[static_cast<std::size_t>((c - c0) * nsub + g)] = o[0] + o[1] + o[2] + o[3] + o[4] + o[5] + o[6] + o[7];
    }
  const auto group_bytes = static_cast<std::int64_t>(kQ1GroupRows * a.w_stride);
  const std::int64_t block = std::max<std::int64_t>(1, (std::int64_t{256} << 10) / group_bytes) * kQ1GroupRows;
  const auto ys = static_cast<std::int64_t>(a.y_stride);
  for (std::int64_t rb = r0; rb < r1; rb += block) {
    const std::int64_t re = std::min(r1, rb + block);
    std::int64_t c = c0;
    auto sweep = [&](auto cols) {
      constexpr int C = decltype(cols)::value;
      for (std::int64_t r = rb; r < re; r += kQ1GroupRows)
        group_columns<C>(a.w + r * static_cast<std::int64_t>(a.w_stride), nsub, xq, c,
                         neg_sums.data() + (c - c0) * nsub, lanes.data(), a.y + r, ys, rows_of(r));
      c += C;
    };
    while (c + 4 <= c1) sweep(std::integral_constant<int, 4>{});
    if (c1 - c == 3) sweep(std::integral_constant<int, 3>{});
    if (c1 - c == 2) sweep(std::integral_constant<int, 2>{});
    if (c1 - c == 1) sweep(std::integral_constant<int, 1>{});
  }
}

}  // namespace graft::quant
#endif
