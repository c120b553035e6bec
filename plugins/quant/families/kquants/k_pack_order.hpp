// The element order of Q4_K's (and Q5_K's) packed layout, q4_k_rows4. A block's 256 codes form 4
// vectors of 64 bytes, A and B for p = 0, 1 (the low and high nibbles of code vector p); dword n
// of each holds 4 consecutive elements, the group (j, l) = elements 32j + 4l .. 32j + 4l + 3, where
// l is the definition's lane (S[l] sums its groups over all j, each times its sub-block scale). The
// groups are placed so that after one vpdpbusd of A and of B against the activations in the same
// order, vpackssdw(A, B) leaves in dword q the sums of groups (4p + 2 (q / 8), l) (low word) and
// (4p + 2 (q / 8) + 1, l) (high word) with l = q % 8: one vpdpwssd against the matching scale
// words then adds both into lane l or 8 + l of a 16-lane sum, folded to 8 lanes at the end.
// (Q4_K's sub-blocks of 32 are the j. Q2_K's layout pairs two rows per code vector so that no
// fold is needed: q2_k_packed.hpp.)
#pragma once

#include <cstdint>

#include "activations/q8k_activations.hpp"
#include "simd/x86_simd.hpp"

namespace graft::quant {

// The first element of the group in dword n (0..15) of vector A (high = 0) or B (high = 1), p = 0, 1.
constexpr int k_pack_first(int p, int high, int n) {
  const int lane = n / 4, pair = (n % 4) / 2, word = n % 2;
  const int j = 4 * p + 2 * (lane / 2) + word;
  const int l = (4 * lane + 2 * high + pair) % 8;
  return 32 * j + 4 * l;
}

#ifdef GRAFT_QUANT_X86
// Codes (one per byte) of elements 128p .. 128p + 127 in element order, as two vectors lo and hi:
// vector A (high = 0) or B (high = 1) of p in the packed order. (AVX512-VBMI.)
__attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni,avx512vbmi")))
inline __m512i k_pack_gather(__m512i lo, __m512i hi, int high) {
  struct Idx {
    alignas(64) std::uint8_t b[2][64];
  };
  static constexpr Idx kIdx = [] {
    Idx t{};
    for (int h = 0; h < 2; ++h)
      for (int i = 0; i < 64; ++i) t.b[h][i] = static_cast<std::uint8_t>(k_pack_first(0, h, i / 4) + i % 4);
    return t;
  }();
  return _mm512_permutex2var_epi8(lo, _mm512_load_si512(kIdx.b[high]), hi);
}

// The activations of columns [c0, c1) in that order, 256 bytes per block (A0, B0, A1, B1), in a
// per-thread buffer valid until the next call on this thread for other activations or columns: two
// vpermt2d per 128 quants.
__attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")))
inline const std::int8_t* k_pack_activations(const Q8KActivations& xk, std::int64_t c0, std::int64_t c1) {
  struct Perm {
    alignas(64) std::int32_t idx[2][16];  // dword index into the 128 quants of p
  };
  static constexpr Perm kPerm = [] {
    Perm t{};
    for (int h = 0; h < 2; ++h)
      for (int n = 0; n < 16; ++n) t.idx[h][n] = k_pack_first(0, h, n) / 4;
    return t;
  }();
  // The pool hands a thread several row ranges of one call: the columns are permuted once.
  struct Permuted {
    DerivedFrom from;
    AlignedVector<std::int8_t> bytes;
  };
  thread_local Permuted buf;
  if (buf.from.holds(xk.generation, c0, c1)) return buf.bytes.data();
  const std::int64_t nb = xk.nb;
  const auto bytes = static_cast<std::size_t>((c1 - c0) * nb * kQK_K);
  if (buf.bytes.size() < bytes) buf.bytes.resize(bytes);
  buf.from.set(xk.generation, c0, c1);
  const __m512i pa = _mm512_load_si512(kPerm.idx[0]), pb = _mm512_load_si512(kPerm.idx[1]);
  std::int8_t* out = buf.bytes.data();
  for (std::int64_t c = c0; c < c1; ++c)
    for (std::int64_t b = 0; b < nb; ++b, out += kQK_K) {
      const std::int8_t* x = xk.block_qs(c, b);
      for (int p = 0; p < 2; ++p) {
        const __m512i lo = _mm512_loadu_si512(x + 128 * p), hi = _mm512_loadu_si512(x + 128 * p + 64);
        _mm512_store_si512(out + 128 * p, _mm512_permutex2var_epi32(lo, pa, hi));
        _mm512_store_si512(out + 128 * p + 64, _mm512_permutex2var_epi32(lo, pb, hi));
      }
    }
  return buf.bytes.data();
}
#endif

}  // namespace graft::quant
