// One cached row in its element type: how the store writes K and V rows, and how tests and
// benchmarks build caches the store would have written.
#pragma once

#include <cstdint>

#include "attention.hpp"

namespace graft::kv {

// dst (cache_row_bytes(type, n) bytes) = the n floats at src as `type`: f32 copied; f16 nearest
// even (narrow_to_f16); q8_0 and q4_0 by ggml's reference quantizers; tq3 rotated (rotation.hpp,
// n rotatable) then quantized (tq3_rows.hpp).
void encode_row(CacheType type, const float* src, std::uint32_t n, void* dst) noexcept;

}  // namespace graft::kv
