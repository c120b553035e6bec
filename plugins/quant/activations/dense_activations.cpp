#include "activations/dense_activations.hpp"

#include "half.hpp"

namespace graft::quant {

const float* prepare_dense_activations(Backend& backend, DenseRounding rounding, const float* x, std::int64_t count,
                                       std::vector<float>& storage) {
  if (rounding == DenseRounding::none) return x;
  storage.resize(static_cast<std::size_t>(count));
  float* out = storage.data();
  auto convert = [&](std::size_t begin, std::size_t end) {
    if (rounding == DenseRounding::f16)
      for (std::size_t i = begin; i < end; ++i) out[i] = f16_to_f32(f32_to_f16_ggml(x[i]));
    else
      for (std::size_t i = begin; i < end; ++i) out[i] = bf16_to_f32(f32_to_bf16(x[i]));
  };
  if (count < (std::int64_t{1} << 16)) convert(0, static_cast<std::size_t>(count));
  else backend.parallel_for(static_cast<std::size_t>(count), convert);
  return out;
}

}  // namespace graft::quant
