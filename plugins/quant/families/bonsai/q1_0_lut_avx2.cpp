// Q1_0 on the rows32 layout (q1_0_packed.hpp) with table lookups, AVX2. Same bits as every other
// Q1_0 kernel (bonsai_gemm.hpp: lane g % 16 of an output takes fma(float(P_g), d_w * d_x[g]), P_g
// the exact sum of +-x over sub-block g, then the fixed 16-lane tree).
//
// Expanding sign bits for vpmaddubsw costs ~11 operations per 32 weights of a row (the file-layout
// kernel, bonsai_gemm_avx2.hpp): far below what memory delivers (docs/formats_bonsai.md). Here, per
// activation column and sub-block, tables hold the signed sum v = sum_b (+-x[4t + b]) of each of
// the 8 nibble groups t (4 elements) for all 16 sign patterns, and one vpshufb looks up 32 rows'
// nibbles at once (a rows32 plane is byte j of 32 rows: groups 2j and 2j + 1). A byte cannot hold
// v (|v| <= 508), so each table is two: v + 508 = 32 hi + lo with lo, hi in 0..31, and the 8
// groups' lo (hi) parts add up in bytes (<= 248) before vpmaddubsw forms lo + 32 hi per row in 16
// bits; a word under 0x4B00 is then the float 2^23 + (lo + 32 hi), one subtraction from the exact
// float(P). Per 32 rows x 32 weights: 4 loads, 12 index operations, 16 lookups, 14 byte adds and
// ~20 operations to combine, convert and accumulate, where expansion needs ~350.
//
// The tables (256 bytes per column and sub-block) are built once per call and thread for a decode
// column; batches build them for chunks of columns that stay in L2, and sweep each column against
// rows in blocks that stay in L2, so the lookups hit L1. Large batches come split on columns
// (PackedLayout::batches_by_column), so each column's tables are built once per call.
#include "families/bonsai/q1_0_gemm.hpp"
#include "families/bonsai/q1_0_packed.hpp"

#ifdef __x86_64__
#include <algorithm>
#include <cstring>

#include "activations/q8_activations.hpp"
#include "formats/q1_0/block_q1_0.hpp"
#include "simd/x86_simd.hpp"

namespace graft::quant {

namespace {

constexpr std::size_t kTableBytes = 256;  // per column and sub-block: lo tables t = 0..7, then hi tables
constexpr int kBias = 508;                // v + kBias >= 0; P = 32 sum(hi) + sum(lo) - 8 kBias

struct TableCtrl {
  alignas(32) std::int8_t xa[4][32];  // vpshufb: bytes 2e, 2e + 1 <- x[4t], x[4t + 1] (t % 4 of a half)
  alignas(32) std::int8_t xb[4][32];  //                          <- x[4t + 2], x[4t + 3]
  alignas(32) std::int8_t sa[32];     // vpsignb: entry n (word e of lane 0: n = e; lane 1: n = e + 8),
  alignas(32) std::int8_t sb[32];     // bits 0, 1 (sa) and 2, 3 (sb) of n as +1 / -1
};
constexpr TableCtrl make_table_ctrl() {
  TableCtrl c{};
  for (int t = 0; t < 4; ++t)
    for (int e = 0; e < 16; ++e) {
      c.xa[t][2 * e] = static_cast<std::int8_t>(4 * t), c.xa[t][2 * e + 1] = static_cast<std::int8_t>(4 * t + 1);
      c.xb[t][2 * e] = static_cast<std::int8_t>(4 * t + 2), c.xb[t][2 * e + 1] = static_cast<std::int8_t>(4 * t + 3);
    }
  for (int e = 0; e < 16; ++e) {
    const int n = e;  // word e holds pattern e (lane 0: 0..7, lane 1: 8..15)
    auto sign = [&](int bit) { return static_cast<std::int8_t>((n >> bit) & 1 ? 1 : -1); };
    c.sa[2 * e] = sign(0), c.sa[2 * e + 1] = sign(1);
    c.sb[2 * e] = sign(2), c.sb[2 * e + 1] = sign(3);
  }
  return c;
}
constexpr TableCtrl kTableCtrl = make_table_ctrl();

// Group t's 16 entries v + kBias as words (lane 0: patterns 0..7, lane 1: 8..15). half: x[0..15]
// or x[16..31] in both lanes, t4 = t % 4.
GRAFT_TARGET_AVX2 inline __m256i table_entries(__m256i half, int t4) {
  const TableCtrl& c = kTableCtrl;
  const __m256i ones = _mm256_set1_epi8(1);
  const __m256i a = _mm256_sign_epi8(_mm256_shuffle_epi8(half, _mm256_load_si256(reinterpret_cast<const __m256i*>(c.xa[t4]))),
                                     _mm256_load_si256(reinterpret_cast<const __m256i*>(c.sa)));
  const __m256i b = _mm256_sign_epi8(_mm256_shuffle_epi8(half, _mm256_load_si256(reinterpret_cast<const __m256i*>(c.xb[t4]))),
                                     _mm256_load_si256(reinterpret_cast<const __m256i*>(c.sb)));
  // Activation quants are within +-127 (Q8_0), so vpsignb never overflows and each word <= 254.
  const __m256i v = _mm256_add_epi16(_mm256_maddubs_epi16(ones, a), _mm256_maddubs_epi16(ones, b));
  return _mm256_add_epi16(v, _mm256_set1_epi16(kBias));
}

// The tables of nsub sub-blocks of one column's quants x, at tab + 256 g: lo parts of groups
// 0..7 (16 bytes each), then the hi parts.
GRAFT_TARGET_AVX2 void build_tables(const std::int8_t* x, std::int64_t nsub, std::uint8_t* tab) {
  const __m256i low5 = _mm256_set1_epi16(31);
  for (std::int64_t g = 0; g < nsub; ++g) {
    const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + 32 * g));
    const __m256i halves[2] = {_mm256_permute2x128_si256(xv, xv, 0x00), _mm256_permute2x128_si256(xv, xv, 0x11)};
    std::uint8_t* t = tab + static_cast<std::size_t>(g) * kTableBytes;
    for (int p = 0; p < 4; ++p) {  // groups 2p, 2p + 1
      const __m256i e0 = table_entries(halves[p / 2], (2 * p) % 4);
      const __m256i e1 = table_entries(halves[p / 2], (2 * p + 1) % 4);
      // packus interleaves the two groups by lane; the permute puts each group's 16 bytes together.
      const __m256i lo = _mm256_packus_epi16(_mm256_and_si256(e0, low5), _mm256_and_si256(e1, low5));
      const __m256i hi = _mm256_packus_epi16(_mm256_srli_epi16(e0, 5), _mm256_srli_epi16(e1, 5));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(t + 32 * p), _mm256_permute4x64_epi64(lo, _MM_SHUFFLE(3, 1, 2, 0)));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(t + 128 + 32 * p), _mm256_permute4x64_epi64(hi, _MM_SHUFFLE(3, 1, 2, 0)));
    }
  }
}

GRAFT_TARGET_AVX2 inline __m256i table(const std::uint8_t* t) {
  return _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(t)));
}

// One group of 32 rows against one column: the definition's 16 lanes of the 32 outputs in `lanes`
// (lane L, rows 8q..8q+7 at lanes + 32 L + 8 q), folded into y (the first `rows` stored).
GRAFT_TARGET_AVX2 void group_column(const std::uint8_t* grp, std::int64_t nb, const std::uint8_t* tab,
                                    const float* dx, float* lanes, float* y, std::int64_t rows, bool prefetch) {
  const __m256i low = _mm256_set1_epi8(0x0F);
  const __m256i lo_hi = _mm256_set1_epi16(32 * 256 + 1);  // vpmaddubsw: lo * 1 + hi * 32
  // A word Q (0..8184) under 0x4B00 is the float 2^23 + Q: P = Q - 8 kBias in two operations.
  const __m256i magic = _mm256_set1_epi16(0x4B00);
  const __m256 unbias = _mm256_set1_ps(8388608.0f + 8 * kBias);
  alignas(32) float dw[kQ1PlaneRows];
  for (std::int64_t b = 0; b < nb; ++b) {
    const std::uint8_t* blk = grp + b * kQ1PlaneBlockBytes;
    if (prefetch)
      for (int l = 0; l < 9; ++l) _mm_prefetch(reinterpret_cast<const char*>(blk + 4096 + 64 * l), _MM_HINT_T0);
    for (int q = 0; q < 4; ++q)
      _mm256_store_ps(dw + 8 * q, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 16 * q))));
#pragma GCC unroll 1
    for (int s = 0; s < 4; ++s) {
      const std::int64_t g = 4 * b + s;
      const std::uint8_t* t = tab + static_cast<std::size_t>(g) * kTableBytes;
      const std::uint8_t* planes = blk + kQ1PlaneSignsAt + 128 * s;
      __m256i lo = _mm256_setzero_si256(), hi = _mm256_setzero_si256();
#pragma GCC unroll 4
      for (int j = 0; j < 4; ++j) {
        const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(planes + 32 * j));
        const __m256i ia = _mm256_and_si256(w, low), ib = _mm256_and_si256(_mm256_srli_epi16(w, 4), low);
        lo = _mm256_add_epi8(lo, _mm256_add_epi8(_mm256_shuffle_epi8(table(t + 32 * j), ia),
                                                 _mm256_shuffle_epi8(table(t + 32 * j + 16), ib)));
        hi = _mm256_add_epi8(hi, _mm256_add_epi8(_mm256_shuffle_epi8(table(t + 128 + 32 * j), ia),
                                                 _mm256_shuffle_epi8(table(t + 128 + 32 * j + 16), ib)));
      }
      // Q = lo + 32 hi per row in words (plane positions 0-7 | 16-23 and 8-15 | 24-31), then as
      // floats in dwords: positions 16h + 4q + e hold row 8q + 4h + e (kQ1PlanePos), so vector q is
      // rows 8q..8q+7 in order.
      const __m256i qa = _mm256_maddubs_epi16(_mm256_unpacklo_epi8(lo, hi), lo_hi);
      const __m256i qb = _mm256_maddubs_epi16(_mm256_unpackhi_epi8(lo, hi), lo_hi);
      const __m256i f[4] = {_mm256_unpacklo_epi16(qa, magic), _mm256_unpackhi_epi16(qa, magic),
                            _mm256_unpacklo_epi16(qb, magic), _mm256_unpackhi_epi16(qb, magic)};
      const __m256 d = _mm256_broadcast_ss(dx + g);
      float* acc = lanes + 32 * (g % 16);
      // The first sub-block of a lane starts it from +0, as the definition's zeroed lanes.
      const bool first = g < 16;
#pragma GCC unroll 4
      for (int q = 0; q < 4; ++q) {
        const __m256 p = _mm256_sub_ps(_mm256_castsi256_ps(f[q]), unbias);
        const __m256 prev = first ? _mm256_setzero_ps() : _mm256_load_ps(acc + 8 * q);
        _mm256_store_ps(acc + 8 * q, _mm256_fmadd_ps(p, _mm256_mul_ps(_mm256_load_ps(dw + 8 * q), d), prev));
      }
    }
  }
  // The fixed tree: lane l + lane l + 8, then 4, 2, 1 apart (lanes never started are zero).
  const std::int64_t used = std::min<std::int64_t>(16, 4 * nb);
  for (int q = 0; q < 4; ++q) {
    __m256 v[16];
    for (int l = 0; l < 16; ++l) v[l] = l < used ? _mm256_load_ps(lanes + 32 * l + 8 * q) : _mm256_setzero_ps();
    for (int w = 8; w >= 1; w /= 2)
      for (int l = 0; l < w; ++l) v[l] = _mm256_add_ps(v[l], v[l + w]);
    const std::int64_t here = std::min<std::int64_t>(8, rows - 8 * q);
    if (here >= 8) {
      _mm256_storeu_ps(y + 8 * q, v[0]);
    } else if (here > 0) {
      alignas(32) float tmp[8];
      _mm256_store_ps(tmp, v[0]);
      std::memcpy(y + 8 * q, tmp, static_cast<std::size_t>(here) * sizeof(float));
    }
  }
}

// Tables of one call's columns, per thread: the pool hands a thread several row ranges of a call.
struct Tables {
  DerivedFrom from;
  AlignedVector<std::uint8_t> bytes;
  const std::uint8_t* build(const Q8Activations& xq, std::int64_t nsub, std::int64_t c0, std::int64_t c1) {
    if (!from.holds(xq.generation, c0, c1)) {
      const std::size_t col = static_cast<std::size_t>(nsub) * kTableBytes;
      if (bytes.size() < col * static_cast<std::size_t>(c1 - c0)) bytes.resize(col * static_cast<std::size_t>(c1 - c0));
      for (std::int64_t c = c0; c < c1; ++c) build_tables(xq.block_qs(c, 0), nsub, bytes.data() + col * static_cast<std::size_t>(c - c0));
      from.set(xq.generation, c0, c1);
    }
    return bytes.data();
  }
};

}  // namespace

void q1_0_planes_gemm_avx2(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1) {
  const Q8Activations& xq = *a.xq;
  const std::int64_t nsub = a.k / 32, nb = a.k / kQK1_0;
  const auto group_bytes = static_cast<std::int64_t>(kQ1PlaneRows * a.w_stride);
  const std::size_t col_tables = static_cast<std::size_t>(nsub) * kTableBytes;
  thread_local Tables tables;
  thread_local AlignedVector<float> lanes(16 * kQ1PlaneRows);
  auto sweep = [&](bool prefetch, std::int64_t rb, std::int64_t re, std::int64_t c, const std::uint8_t* tab) {
    for (std::int64_t r = rb; r < re; r += kQ1PlaneRows)
      group_column(a.w + (r / kQ1PlaneRows) * group_bytes, nb, tab, xq.scales(c), lanes.data(),
                   a.y + c * static_cast<std::int64_t>(a.y_stride) + r, std::min<std::int64_t>(kQ1PlaneRows, r1 - r), prefetch);
  };
  if (c1 - c0 == 1) {
    sweep(true, r0, r1, c0, tables.build(xq, nsub, c0, c1));
    return;
  }
  // Batches: columns in chunks whose tables stay in L2 (~128 KiB), each column swept against rows
  // in blocks of ~192 KiB of weights (in L2 too), so only the first column of a block reads memory.
  // A call's columns whose tables fit in 320 KiB are one chunk, built once per thread and kept for
  // the other row ranges the pool hands it (speculative verification's few columns); the row
  // blocks take what L2 has left.
  constexpr std::int64_t KiB = 1024;
  const auto tables_bytes = static_cast<std::int64_t>(col_tables);
  const std::int64_t chunk =
      (c1 - c0) * tables_bytes <= 320 * KiB ? c1 - c0 : std::max<std::int64_t>(1, 128 * KiB / tables_bytes);
  const std::int64_t block_bytes = std::clamp(448 * KiB - chunk * tables_bytes, 64 * KiB, 192 * KiB);
  const std::int64_t block = std::max<std::int64_t>(1, block_bytes / group_bytes) * kQ1PlaneRows;
  for (std::int64_t cc = c0; cc < c1; cc += chunk) {
    const std::int64_t ce = std::min(c1, cc + chunk);
    const std::uint8_t* tab = tables.build(xq, nsub, cc, ce);
    for (std::int64_t rb = r0; rb < r1; rb += block)
      for (std::int64_t c = cc; c < ce; ++c)
        sweep(false, rb, std::min(r1, rb + block), c, tab + static_cast<std::size_t>(c - cc) * col_tables);
  }
}

}  // namespace graft::quant
#endif
