// The CPU attention kernel over one layer of the device store, with its shape checks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "cpu_simd.hpp"
#include "graft/backend.hpp"
#include "graft/kv_store.hpp"
#include "graft/status.hpp"
#include "graft/tensor.hpp"

namespace graft::kv {

// Element types of a cache: plain f32 and f16, ggml's q8_0 and q4_0 blocks (32 elements with an
// fp16 scale, written by ggml's reference quantizers), and tq3, 3-bit blocks of rotated rows
// (tq3_rows.hpp, rotation.hpp).
enum class CacheType { f32, f16, q8_0, q4_0, tq3 };

// Elements per unit of the type (1, or a block's 32) and the unit's bytes.
constexpr std::uint32_t cache_type_elems(CacheType t) noexcept {
  return t == CacheType::f32 || t == CacheType::f16 ? 1u : 32u;
}
constexpr std::size_t cache_type_unit_bytes(CacheType t) noexcept {
  switch (t) {
    case CacheType::f32: return 4;
    case CacheType::f16: return 2;
    case CacheType::q8_0: return 34;
    case CacheType::q4_0: return 18;
    case CacheType::tq3: return 14;
  }
  return 0;
}
// Whether rows are rotated before they are stored (rotation.hpp): the head size must then be a
// power of two, queries are rotated alike and a V cache's output is un-rotated.
constexpr bool cache_type_rotated(CacheType t) noexcept { return t == CacheType::tq3; }
const char* cache_type_name(CacheType t) noexcept;
// "f32", "f16", "q8_0", "q4_0", "tq3"; anything else: nullopt.
std::optional<CacheType> cache_type_from_name(std::string_view name) noexcept;
// Bytes of one row of `dim` elements (dim a multiple of the type's block).
constexpr std::size_t cache_row_bytes(CacheType t, std::uint32_t dim) noexcept {
  return dim / cache_type_elems(t) * cache_type_unit_bytes(t);
}

// One layer's cache: K and V each in its own type, token-major ([slots][n_kv_heads][head_dim],
// capacity 0; plain types only) or head-major ([n_kv_heads][capacity][head_dim], what the stores
// keep: one KV head's rows are one stream for attention to read, where token-major puts them
// n_kv_heads * head_dim elements apart).
struct LayerCache {
  const void* k = nullptr;
  const void* v = nullptr;
  CacheType k_type = CacheType::f16;
  CacheType v_type = CacheType::f16;
  std::uint32_t n_kv_heads = 0;
  std::uint32_t head_dim_k = 0;
  std::uint32_t head_dim_v = 0;
  std::uint32_t capacity = 0;  // slots per head when head-major; 0: token-major

  // Offsets in units of the type (elements, or blocks): where KV head g's rows start,
  // and from one slot's row to the next.
  std::size_t k_row() const noexcept { return head_dim_k / cache_type_elems(k_type); }
  std::size_t v_row() const noexcept { return head_dim_v / cache_type_elems(v_type); }
  std::size_t k_head(std::uint32_t g) const noexcept { return std::size_t{g} * k_row() * (capacity ? capacity : 1); }
  std::size_t v_head(std::uint32_t g) const noexcept { return std::size_t{g} * v_row() * (capacity ? capacity : 1); }
  std::size_t k_slot() const noexcept { return k_row() * (capacity ? 1 : n_kv_heads); }
  std::size_t v_slot() const noexcept { return v_row() * (capacity ? 1 : n_kv_heads); }
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
              const TensorView& out, float* lse = nullptr);
// lse, when not null, receives each (query, head) row's log-sum-exp of its scaled scores at
// lse[query * n_heads + head] (-inf where it saw nothing): with it, attention over disjoint
// pieces of a cache merges exactly into attention over all of them (merge_attention, the sysram
// store). The outputs do not change.
Status attend(Backend& backend, const LayerCache& cache, const TensorView& q, const AttentionBatch& batch,
              const TensorView& out, AttnSimd level, float* lse = nullptr);

// dst[i] = f32_to_f16(src[i]) (plugins/common/half.hpp) for i < n, with the conversion instructions of the level
// attend uses ($GRAFT_CPU_SIMD; plain code where that names no usable level): the same bits.
void narrow_to_f16(const float* src, std::uint16_t* dst, std::uint32_t n) noexcept;

}  // namespace graft::kv
