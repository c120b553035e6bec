#include "activations/dense_activations.hpp"

#include <algorithm>
#include <cstdint>

#include "half.hpp"
#ifdef __x86_64__
#include "simd/x86_simd.hpp"
#endif

namespace graft::quant {

namespace {

// x rounded through f16 and widened back, portable: f32_to_f16_ggml then f16_to_f32. Narrowed a
// chunk at a time, then widened in a loop of its own, which vectorizes (the widening is
// branch-free; inside the narrowing's loop it would cost more than the narrowing).
void round_f16(const float* x, float* out, std::size_t n) {
  constexpr std::size_t kChunk = 256;
  std::uint16_t h[kChunk];
  for (std::size_t b = 0; b < n; b += kChunk) {
    const std::size_t len = std::min(kChunk, n - b);
    for (std::size_t i = 0; i < len; ++i) h[i] = f32_to_f16_ggml(x[b + i]);
    for (std::size_t i = 0; i < len; ++i) out[b + i] = f16_to_f32(h[i]);
  }
}

#ifdef __x86_64__
// The same with vcvtps2ph (nearest, ties to even, as f32_to_f16_ggml) and vcvtph2ps, eight at a
// time; a NaN lane is set to what the portable path gives (sign | quiet bit, no payload).
GRAFT_TARGET_AVX2 void round_f16_f16c(const float* x, float* out, std::size_t n) {
  const __m256 quiet = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FC00000));
  const __m256 sign = _mm256_castsi256_ps(_mm256_set1_epi32(static_cast<int>(0x80000000u)));
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    const __m256 r = _mm256_cvtph_ps(_mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    const __m256 nan = _mm256_cmp_ps(v, v, _CMP_UNORD_Q);
    _mm256_storeu_ps(out + i, _mm256_blendv_ps(r, _mm256_or_ps(_mm256_and_ps(v, sign), quiet), nan));
  }
  round_f16(x + i, out + i, n - i);
}
#endif

}  // namespace

const float* prepare_dense_activations(Backend& backend, [[maybe_unused]] SimdLevel level, DenseRounding rounding,
                                       const float* x, std::int64_t count, std::vector<float>& storage) {
  if (rounding == DenseRounding::none) return x;
  storage.resize(static_cast<std::size_t>(count));
  float* out = storage.data();
  auto convert = [&](std::size_t begin, std::size_t end) {
    if (rounding == DenseRounding::f16) {
#ifdef __x86_64__
      if (level != SimdLevel::scalar) return round_f16_f16c(x + begin, out + begin, end - begin);
#endif
      round_f16(x + begin, out + begin, end - begin);
    } else {
      for (std::size_t i = begin; i < end; ++i) out[i] = bf16_to_f32(f32_to_bf16(x[i]));
    }
  };
  if (count < (std::int64_t{1} << 16)) convert(0, static_cast<std::size_t>(count));
  else backend.parallel_for(static_cast<std::size_t>(count), convert);
  return out;
}

}  // namespace graft::quant
