// What one weight-format plugin declares: its type, reference row conversions and CPU kernels.
// The shared WeightFormat implementation (block_format.hpp) does the rest.
#pragma once

#include <array>
#include <cstdint>

#include "driver/gemm.hpp"
#include "graft/weight_format.hpp"
#include "simd/simd_level.hpp"

namespace graft::quant {

enum class ActivationForm {
  f32,        // x as given (f32 weights)
  f16_round,  // x rounded through f16 (f16 weights, as ggml's vec_dot_f16)
  bf16_round, // x rounded through bf16 (bf16 weights, as ggml's vec_dot_bf16)
  q8_0,       // x quantized to Q8_0 blocks (Q8_0, Q4_0, Q1_0, Q2_0 weights, as ggml)
  q8_k,       // x quantized to Q8_K blocks of 256 (K-quants and TQ1_0/TQ2_0, as ggml)
};

// A kernel per SIMD level (SimdLevel's order). Null: none for that level (the x86 ones off x86; amx
// where a format has no tile kernels, whose avx512 kernel then runs there: kernel_level).
struct LevelKernels {
  GemmFn scalar = nullptr;
  GemmFn avx2 = nullptr;
  GemmFn avx512 = nullptr;
  GemmFn amx = nullptr;

  GemmFn operator[](SimdLevel level) const noexcept {
    switch (level) {
      case SimdLevel::scalar: return scalar;
      case SimdLevel::avx2: return avx2;
      case SimdLevel::avx512: return avx512;
      case SimdLevel::amx: return amx;
    }
    return nullptr;
  }
};

// A kernel defined only on x86 (its file is wrapped in #ifdef __x86_64__): `fn` there, null elsewhere,
// so a format's kernel table names its SIMD kernels unconditionally.
#ifdef __x86_64__
#define GRAFT_X86_KERNEL(fn) (fn)
#else
#define GRAFT_X86_KERNEL(fn) nullptr
#endif

// A layout of the weights that the kernels of some levels read instead of the file's, made once at
// load (FormatKernels::prepare): rows interleaved in groups, say, so one load serves many rows.
// Defined in the family folder next to its packing code and kernels; a format's FormatSpec lists the
// layouts its kernels read.
struct PackedLayout {
  using BytesFn = std::uint64_t (*)(std::int64_t k, std::int64_t m) noexcept;
  // Writes groups [g0, g1) of the m rows at w (row stride `stride`) into the packed matrix out.
  using PackFn = void (*)(const std::uint8_t* w, std::size_t stride, std::int64_t k, std::int64_t m, std::int64_t g0,
                          std::int64_t g1, std::uint8_t* out) noexcept;

  const char* name;
  std::int64_t row_group;  // rows per group: threads split the rows on its multiples
  // Whether the kernels of this level (on this CPU) can read it; of a format's layouts, the first
  // that can is read (packed_layout).
  bool (*used_at)(SimdLevel level) noexcept;
  BytesFn bytes;
  PackFn pack;
  // The kernels on it, where used_at: GemmArgs::w is the packed matrix, w_stride the bytes of one
  // row (group r / row_group starts at w + r * w_stride, whatever the stride of the weight view it
  // was packed from), r0 a multiple of row_group.
  LevelKernels gemm;
  // Whether matrices of rows of k elements are worth the copy (null: all are); for the others
  // prepare makes none and the level's file-layout kernels read the file.
  bool (*used_for)(std::int64_t k) noexcept = nullptr;
  // Whether its batch kernels build data per activation column that every row reads (Q1_0 rows32:
  // lookup tables, 8 bytes per weight position and column, costing about a row group's lookups to
  // build): the driver then splits large batches on columns, so each column's data is built once
  // per call and the (small) weights are what is re-read; split on rows, every piece of rows the
  // pool hands out rebuilt every column's.
  bool batches_by_column = false;
};

// Every format plugin's definition, written with designated initializers (formats/<name>/).
struct FormatSpec {
  TypeTraits traits;
  // One row of k elements (k a multiple of traits.block_elems).
  void (*quantize_row)(const float* src, void* dst, std::int64_t k) noexcept;
  void (*dequantize_row)(const void* src, float* dst, std::int64_t k) noexcept;
  ActivationForm activations;
  // For q8_0 activations (ignored for the others): the unsigned offset of the weight codes some kernels multiply by
  // (Q4_0: 8, Q8_0: 128), folded into Q8Activations::lane_offsets.
  std::int32_t activation_offset = 0;
  LevelKernels gemm;
  // Whether the AVX-512 batch kernels read the column-pair copy of the activations
  // (Q8Activations / Q8KActivations pairs); the driver builds it only for formats that do.
  bool avx512_pairs = false;
  // The layouts of their own that the kernels of some levels read (the first used at a level wins);
  // none: every level reads the file's layout.
  std::array<const PackedLayout*, 2> packed{};
  // Whether the AVX2 batch tiles read Q8KActivations::sums32; the driver builds it only for those.
  bool q8k_sums32 = false;
};

// The layout the kernels of `level` read, or null for the file's.
inline const PackedLayout* packed_layout(const FormatSpec& spec, SimdLevel level) noexcept {
  for (const PackedLayout* p : spec.packed)
    if (p && p->used_at(level)) return p;
  return nullptr;
}

}  // namespace graft::quant
