#include "activations/dense_activations.hpp"

#include <algorithm>
#include <cstdint>

#include "half.hpp"

namespace graft::quant {

const float* prepare_dense_activations(Backend& backend, DenseRounding rounding, const float* x, std::int64_t count,
                                       std::vector<float>& storage) {
  if (rounding == DenseRounding::none) return x;
  storage.resize(static_cast<std::size_t>(count));
  float* out = storage.data();
  auto convert = [&](std::size_t begin, std::size_t end) {
    if (rounding == DenseRounding::f16) {
      // Narrowed a chunk at a time, then widened in a loop of its own, which vectorizes (the
      // widening is branch-free; inside the narrowing's loop it would cost more than the narrowing).
      constexpr std::size_t kChunk = 256;
      std::uint16_t h[kChunk];
      for (std::size_t b = begin; b < end; b += kChunk) {
        const std::size_t n = std::min(kChunk, end - b);
        for (std::size_t i = 0; i < n; ++i) h[i] = f32_to_f16_ggml(x[b + i]);
        for (std::size_t i = 0; i < n; ++i) out[b + i] = f16_to_f32(h[i]);
      }
    } else {
      for (std::size_t i = begin; i < end; ++i) out[i] = bf16_to_f32(f32_to_bf16(x[i]));
    }
  };
  if (count < (std::int64_t{1} << 16)) convert(0, static_cast<std::size_t>(count));
  else backend.parallel_for(static_cast<std::size_t>(count), convert);
  return out;
}

}  // namespace graft::quant
