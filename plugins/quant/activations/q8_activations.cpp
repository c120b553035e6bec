#include "activations/q8_activations.hpp"

#include <atomic>

#include <cmath>
#include <cstring>

#include "half.hpp"

namespace graft::quant {

namespace {

// Round half to even for |v| <= 2^22, as _mm256_round_ps(v, _MM_ROUND_NEAREST) does: adding and
// subtracting 1.5 * 2^23 leaves an integer rounded in the default (nearest-even) mode. Without
// -ffast-math the compiler may not fold the pair away.
inline float round_half_even(float v) noexcept {
  constexpr float kMagic = 12582912.0f;
  return (v + kMagic) - kMagic;
}

}  // namespace

void quantize_activation_row(const float* x, std::int64_t k, std::int32_t offset, std::int8_t* qs, float* d,
                             std::int32_t* lane_offsets) noexcept {
  for (std::int64_t b = 0; b < k / 32; ++b, x += 32, qs += 32, lane_offsets += 8) {
    float amax = 0.0f;
    for (int j = 0; j < 32; ++j) {
      const float a = std::fabs(x[j]);
      amax = amax > a ? amax : a;
    }
    d[b] = f16_to_f32(f32_to_f16_ggml(amax / 127.0f));
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    for (int j = 0; j < 32; ++j) qs[j] = static_cast<std::int8_t>(static_cast<int>(round_half_even(x[j] * id)));
    for (int l = 0; l < 8; ++l) lane_offsets[l] = -offset * (qs[4 * l] + qs[4 * l + 1] + qs[4 * l + 2] + qs[4 * l + 3]);
  }
}

std::uint64_t next_activation_generation() noexcept {
  static std::atomic<std::uint64_t> fills{0};
  return fills.fetch_add(1, std::memory_order_relaxed) + 1;
}

void quantize_activations(Backend& backend, SimdLevel level, const float* x, std::int64_t n, std::int64_t k,
                          std::int32_t offset, bool pairs, Q8Activations& out) {
#ifdef __x86_64__
  const auto row_fn = for_level(level, &quantize_activation_row, &quantize_activation_row_avx2,
                                &quantize_activation_row_avx512);
#else
  (void)level;
  const auto row_fn = &quantize_activation_row;
#endif
  out.generation = next_activation_generation();
  out.n = n;
  out.nb = k / 32;
  out.qs.resize(static_cast<std::size_t>(n * k));
  out.d.resize(static_cast<std::size_t>(n * out.nb));
  out.lane_offsets.resize(static_cast<std::size_t>(n * out.nb * 8));
  auto rows = [&](std::size_t begin, std::size_t end) {
    for (std::size_t r = begin; r < end; ++r) {
      const auto i = static_cast<std::int64_t>(r);
      row_fn(x + i * k, k, offset, out.qs.data() + i * k, out.d.data() + i * out.nb,
             out.lane_offsets.data() + i * out.nb * 8);
    }
  };
  // A few rows cost less than waking the pool.
  const bool small = n * k < (std::int64_t{1} << 16);
  if (small) rows(0, static_cast<std::size_t>(n));
  else backend.parallel_for(static_cast<std::size_t>(n), rows);

  out.n_pairs = pairs ? n / 2 : 0;
  const std::int64_t nb = out.nb;
  out.pair_qs.resize(static_cast<std::size_t>(out.n_pairs * nb * 64));
  out.pair_offsets.resize(static_cast<std::size_t>(out.n_pairs * nb * 16));
  out.pair_scales.resize(static_cast<std::size_t>(out.n_pairs * nb * 16));
  auto interleave = [&](std::size_t begin, std::size_t end) {
    for (std::size_t pi = begin; pi < end; ++pi) {
      const auto p = static_cast<std::int64_t>(pi);
      for (std::int64_t b = 0; b < nb; ++b) {
        const std::int64_t dst = p * nb + b;
        for (std::int64_t h = 0; h < 2; ++h) {
          const std::int64_t row = 2 * p + h;
          std::memcpy(out.pair_qs.data() + dst * 64 + h * 32, out.block_qs(row, b), 32);
          std::memcpy(out.pair_offsets.data() + dst * 16 + h * 8, out.offsets(row, b), 32);
          for (int l = 0; l < 8; ++l) out.pair_scales[static_cast<std::size_t>(dst * 16 + h * 8 + l)] = out.scales(row)[b];
        }
      }
    }
  };
  if (small) interleave(0, static_cast<std::size_t>(out.n_pairs));
  else backend.parallel_for(static_cast<std::size_t>(out.n_pairs), interleave);
}

}  // namespace graft::quant
