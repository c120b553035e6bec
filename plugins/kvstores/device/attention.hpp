// The CPU attention kernel over one layer of the device store, with its shape checks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "cpu_simd.hpp"
#include "graft/backend.hpp"
#include "graft/kv_store.hpp"
#include "graft/status.hpp"
#include "graft/tensor.hpp"

namespace graft::kv {

enum class CacheType { f32, f16 };

// One layer's cache: K and V in `type`, token-major ([slots][n_kv_heads][head_dim], capacity 0) or
// head-major ([n_kv_heads][capacity][head_dim], what the store keeps: one KV head's rows are one
// stream for attention to read, where token-major puts them n_kv_heads * head_dim elements apart).
struct LayerCache {
  const void* k = nullptr;
  const void* v = nullptr;
  CacheType type = CacheType::f16;
  std::uint32_t n_kv_heads = 0;
  std::uint32_t head_dim_k = 0;
  std::uint32_t head_dim_v = 0;
  std::uint32_t capacity = 0;  // slots per head when head-major; 0: token-major

  // Element offsets: where KV head g's rows start, and from one slot's row to the next.
  std::size_t k_head(std::uint32_t g) const noexcept { return std::size_t{g} * head_dim_k * (capacity ? capacity : 1); }
  std::size_t v_head(std::uint32_t g) const noexcept { return std::size_t{g} * head_dim_v * (capacity ? capacity : 1); }
  std::size_t k_slot() const noexcept { return std::size_t{head_dim_k} * (capacity ? 1 : n_kv_heads); }
  std::size_t v_slot() const noexcept { return std::size_t{head_dim_v} * (capacity ? 1 : n_kv_heads); }
};

// Which kernels attend() runs: scalar (portable: generic C++ vectors, any CPU), avx2 (AVX2 + F16C)
// or avx512 (AVX-512 F/BW/VL/DQ); the CPU plugins' levels (cpu_simd.hpp), never amx. Every level
// computes the same bits (docs/kvstores.md), so the choice only changes speed; tests force each one
// to prove that.
using AttnSimd = SimdLevel;

bool cpu_supports(AttnSimd level) noexcept;
AttnSimd best_attn_simd() noexcept;
// text as in $GRAFT_CPU_SIMD: "" or "auto" (best), "scalar" (portable), "avx2" or "avx512". A
// level this CPU lacks or an unknown name is an invalid_argument error, never a downgrade.
Expected<AttnSimd> parse_attn_simd(std::string_view text);

// An AttentionBatch once attend() has checked it: its mask as the bytes the CPU reads.
struct MaskedBatch {
  std::uint32_t n_query = 0;
  std::uint32_t n_past = 0;
  const std::uint8_t* ancestor = nullptr;  // n_query x n_query, or null: causal
  float scale = 1.0f;
  std::uint32_t sliding_window = 0;
};

// out = softmax(q k^T * scale, mask) v for q [head_dim_k, n_heads, n_query] and
// out [head_dim_v, n_heads, n_query]; the caller has checked that slots [0, n_past + n_query) of
// `cache` are filled. Shape errors come back as Errc::invalid_argument naming the argument.
// The mask and window rules and the fixed operation order behind every output are documented in
// docs/kvstores.md. Work is split over (query block, KV head, query heads) units; no result
// depends on the thread count or the level. The first form takes the level from $GRAFT_CPU_SIMD,
// read once per process.
Status attend(Backend& backend, const LayerCache& cache, const TensorView& q, const AttentionBatch& batch,
              const TensorView& out);
Status attend(Backend& backend, const LayerCache& cache, const TensorView& q, const AttentionBatch& batch,
              const TensorView& out, AttnSimd level);

// dst[i] = f32_to_f16(src[i]) (plugins/common/half.hpp) for i < n, with the conversion instructions of the level
// attend uses ($GRAFT_CPU_SIMD; plain code where that names no usable level): the same bits.
void narrow_to_f16(const float* src, std::uint16_t* dst, std::uint32_t n) noexcept;

}  // namespace graft::kv
