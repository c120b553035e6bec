#include "activations/q8k_activations.hpp"

#include <cmath>
#include <cstring>

namespace graft::quant {

namespace {

// ggml's nearest_int: round half to even for |v| < 2^22 via the float's mantissa bits.
inline int nearest_int(float v) noexcept {
  const float biased = v + 12582912.0f;
  std::int32_t i;
  std::memcpy(&i, &biased, sizeof i);
  return (i & 0x007FFFFF) - 0x00400000;
}

}  // namespace

void quantize_q8k_row(const float* x, std::int64_t k, std::int8_t* qs, float* d, std::int16_t* bsums) noexcept {
  for (std::int64_t b = 0; b < k / kQK_K; ++b, x += kQK_K, qs += kQK_K, bsums += 16) {
    float max = 0.0f, amax = 0.0f;
    for (int j = 0; j < kQK_K; ++j) {
      const float ax = std::fabs(x[j]);
      if (ax > amax) {
        amax = ax;
        max = x[j];
      }
    }
    if (amax == 0.0f) {
      d[b] = 0.0f;
      std::memset(qs, 0, kQK_K);
      std::memset(bsums, 0, 16 * sizeof(std::int16_t));
      continue;
    }
    const float iscale = -127.0f / max;
    for (int j = 0; j < kQK_K; ++j) {
      const int v = nearest_int(iscale * x[j]);
      qs[j] = static_cast<std::int8_t>(v < 127 ? v : 127);
    }
    for (int g = 0; g < 16; ++g) {
      int sum = 0;
      for (int j = 0; j < 16; ++j) sum += qs[g * 16 + j];
      bsums[g] = static_cast<std::int16_t>(sum);
    }
    d[b] = 1.0f / iscale;
  }
}

void q8k_lane_sums(const std::int8_t* qs, std::int32_t bias, std::int32_t* out) noexcept {
  for (int l = 0; l < 8; ++l) out[l] = 0;
  for (int e = 0; e < kQK_K; ++e) out[(e % 32) / 4] += qs[e];
  for (int l = 0; l < 8; ++l) out[l] *= bias;
}

void quantize_q8k_activations(Backend& backend, SimdLevel level, const float* x, std::int64_t n, std::int64_t k,
                              bool pairs, bool sums32, Q8KActivations& out) {
#ifdef __x86_64__
  const auto row_fn = for_level(level, &quantize_q8k_row, &quantize_q8k_row_avx2, &quantize_q8k_row_avx512);
  const auto lane_sums_fn = for_level(level, &q8k_lane_sums, &q8k_lane_sums, &q8k_lane_sums_avx512);
#else
  (void)level;
  const auto row_fn = &quantize_q8k_row;
  const auto lane_sums_fn = &q8k_lane_sums;
#endif
  out.generation = next_activation_generation();
  out.n = n;
  out.nb = k / kQK_K;
  out.qs.resize(static_cast<std::size_t>(n * k));
  out.d.resize(static_cast<std::size_t>(n * out.nb));
  out.bsums.resize(static_cast<std::size_t>(n * out.nb * 16));
  out.sums32.resize(sums32 ? static_cast<std::size_t>(n * out.nb * 8) : 0);
  auto rows = [&](std::size_t begin, std::size_t end) {
    for (std::size_t r = begin; r < end; ++r) {
      const auto i = static_cast<std::int64_t>(r);
      std::int16_t* bs = out.bsums.data() + i * out.nb * 16;
      row_fn(x + i * k, k, out.qs.data() + i * k, out.d.data() + i * out.nb, bs);
      if (!sums32) continue;
      std::int16_t* s32 = out.sums32.data() + i * out.nb * 8;
      for (std::int64_t j = 0; j < out.nb * 8; ++j) s32[j] = static_cast<std::int16_t>(bs[2 * j] + bs[2 * j + 1]);
    }
  };
  // A few rows cost less than waking the pool.
  const bool small = n * k < (std::int64_t{1} << 16);
  if (small) rows(0, static_cast<std::size_t>(n));
  else backend.parallel_for(static_cast<std::size_t>(n), rows);

  out.n_pairs = pairs ? n / 2 : 0;
  const std::int64_t nb = out.nb;
  out.pairs.resize(static_cast<std::size_t>(out.n_pairs * nb * Q8KActivations::kPairBytes));
  auto interleave = [&](std::size_t begin, std::size_t end) {
    for (std::size_t pi = begin; pi < end; ++pi) {
      const auto p = static_cast<std::int64_t>(pi);
      for (std::int64_t b = 0; b < nb; ++b) {
        auto* dst = const_cast<std::int8_t*>(out.pair_block(p, b));
        for (std::int64_t h = 0; h < 2; ++h) {
          const std::int64_t row = 2 * p + h;
          for (int j = 0; j < 8; ++j) std::memcpy(dst + 64 * j + 32 * h, out.block_qs(row, b) + 32 * j, 32);
          std::memcpy(dst + Q8KActivations::kPairBsumsAt + 32 * h, out.block_bsums(row, b), 32);
          const float s = out.scale(row, b);
          for (int l = 0; l < 8; ++l) std::memcpy(dst + Q8KActivations::kPairScalesAt + 32 * h + 4 * l, &s, 4);
          std::int32_t lanes[8];
          lane_sums_fn(out.block_qs(row, b), Q8KActivations::kLaneBias, lanes);
          std::memcpy(dst + Q8KActivations::kPairLaneSumsAt + 32 * h, lanes, 32);
        }
      }
    }
  };
  if (small) interleave(0, static_cast<std::size_t>(out.n_pairs));
  else backend.parallel_for(static_cast<std::size_t>(out.n_pairs), interleave);
}

}  // namespace graft::quant
