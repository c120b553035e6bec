// Activations quantized to Q8_0 once per matmul, as ggml's CPU backend does before its integer dot
// products (type_traits_cpu[Q8_0].from_float = quantize_row_q8_0, x86 version in
// ggml-cpu/arch/x86/quants.c): per block of 32, amax = max |x|, d = fp16(amax / 127),
// q = round_half_even(x * (127 / amax)). Note this is not quantize_row_q8_0_ref (which uses
// 1 / d and roundf); we match what llama.cpp computes on x86, where our users run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>
#include <vector>

#include "graft/backend.hpp"
#include "simd/simd_level.hpp"

namespace graft::quant {

// Cache-line aligned storage, so 512-bit loads of the interleaved pairs never split a line.
template <class T>
struct LineAllocator {
  using value_type = T;
  LineAllocator() = default;
  template <class U>
  LineAllocator(const LineAllocator<U>&) noexcept {}
  T* allocate(std::size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t{64})); }
  void deallocate(T* p, std::size_t) noexcept { ::operator delete(p, std::align_val_t{64}); }
  template <class U>
  bool operator==(const LineAllocator<U>&) const noexcept { return true; }
};
template <class T>
using AlignedVector = std::vector<T, LineAllocator<T>>;

// Stored unpacked (not as 34-byte blocks) so kernels load whole vectors and f32 scales.
struct Q8Activations {
  std::int64_t n = 0;    // activation rows
  // Unique per fill in the process, so a kernel can keep what it derives from one column (Q1_0's
  // lookup tables) for the other row ranges it is handed in the same call.
  std::uint64_t generation = 0;
  std::int64_t nb = 0;   // blocks per row
  AlignedVector<std::int8_t> qs;      // [n][nb][32]
  std::vector<float> d;             // [n][nb]: the fp16 scale, widened
  // [n][nb][8]: -offset * (sum of quants l*4 .. l*4+3): the correction for kernels that multiply
  // x by an unsigned form of the weights, w + offset (Q4_0's codes are q - 8, Q8_0's w + 128).
  std::vector<std::int32_t> lane_offsets;

  // Column pairs (rows 2p, 2p + 1) interleaved per block, built only for the AVX-512 batch tiles:
  // 64 quant bytes, 16 lane offsets and 16 copies of the two scales per block, so one 512-bit
  // load (or memory operand) brings both columns with no shuffle.
  std::int64_t n_pairs = 0;
  AlignedVector<std::int8_t> pair_qs;        // [n/2][nb][2][32]
  AlignedVector<std::int32_t> pair_offsets;  // [n/2][nb][2][8]
  AlignedVector<float> pair_scales;          // [n/2][nb][2][8]

  const std::int8_t* block_qs(std::int64_t row, std::int64_t b) const { return qs.data() + (row * nb + b) * 32; }
  const float* scales(std::int64_t row) const { return d.data() + row * nb; }
  const std::int32_t* offsets(std::int64_t row, std::int64_t b) const { return lane_offsets.data() + (row * nb + b) * 8; }
};

// A number no fill of activations (Q8Activations, Q8KActivations) in this process had before.
std::uint64_t next_activation_generation() noexcept;

// What a kernel's per-thread cache derived from activations was built from: the fill (its
// generation; 0 never matches) and the columns [c0, c1). The pool hands a thread several row
// ranges of one call, which all share such a cache (Q1_0's lookup tables, the Bonsai AMX A tiles,
// the packed K-quants' activation order).
struct DerivedFrom {
  std::uint64_t generation = 0;
  std::int64_t c0 = -1, c1 = -1;
  bool holds(std::uint64_t g, std::int64_t from, std::int64_t to) const noexcept {
    return g != 0 && generation == g && c0 == from && c1 == to;
  }
  void set(std::uint64_t g, std::int64_t from, std::int64_t to) noexcept { generation = g, c0 = from, c1 = to; }
};

// One row of k (a multiple of 32) values; the AVX2 and AVX-512 forms give identical bits, faster
// (except where the scalar's cast is undefined, amax below ~3.7e-37, and for NaN inputs).
void quantize_activation_row(const float* x, std::int64_t k, std::int32_t offset, std::int8_t* qs, float* d,
                             std::int32_t* lane_offsets) noexcept;
void quantize_activation_row_avx2(const float* x, std::int64_t k, std::int32_t offset, std::int8_t* qs, float* d,
                                  std::int32_t* lane_offsets) noexcept;
void quantize_activation_row_avx512(const float* x, std::int64_t k, std::int32_t offset, std::int8_t* qs, float* d,
                                    std::int32_t* lane_offsets) noexcept;

// All n rows of x (row stride k); rows are split across the backend's threads when n is large.
// `pairs` also builds the interleaved column pairs.
void quantize_activations(Backend& backend, SimdLevel level, const float* x, std::int64_t n, std::int64_t k,
                          std::int32_t offset, bool pairs, Q8Activations& out);

}  // namespace graft::quant
