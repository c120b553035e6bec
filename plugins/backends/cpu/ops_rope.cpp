// rope: rotary position embedding of x [head_dim, n_heads, n_tokens], NORM or NEOX pairing; x and
// y may be row-strided views (the q or k part of a fused projection's output).
//
// The angles follow ggml's ggml_rope_cache_init/rope_yarn (no YaRN, no frequency factors): in
// float, theta_scale = powf(freq_base, -2.0f/n_rot); theta starts at (float)pos and is multiplied
// by theta_scale once per pair; pair i uses cosf/sinf(freq_scale * theta_i). The rotation is
// x0*cos - x1*sin, x0*sin + x1*cos with separate multiplies and adds (no FMA) on every SIMD level.
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "ops.hpp"
#include "tensor_check.hpp"

namespace graft::cpu {

namespace {

void angles(std::int32_t pos, float freq_scale, float theta_scale, std::size_t n_pairs, float* cos, float* sin) {
  float theta = static_cast<float>(pos);
  for (std::size_t i = 0; i < n_pairs; ++i) {
    const float a = freq_scale * theta;
    cos[i] = std::cos(a);
    sin[i] = std::sin(a);
    theta *= theta_scale;
  }
}

}  // namespace

Status op_rope(const OpContext& c, const TensorView& x, const TensorView& positions_view, const RopeParams& p,
               const TensorView& y) {
  constexpr const char* op = "rope";
  if (auto e = check_rows("x", x, {type_id::f32}); !e.empty()) return op_error(op, e);
  if (auto e = check_rows("y", y, {type_id::f32}); !e.empty()) return op_error(op, e);
  if (x.ne[3] != 1)
    return op_error(op, "x has shape " + shape_string(x) + "; expected [head_dim, n_heads, n_tokens]");
  if (auto e = check_output("y", y, "x", x, true); !e.empty()) return op_error(op, e);
  const std::int64_t head_dim = x.ne[0];
  if (auto e = check_rope_params(x, p); !e.empty()) return op_error(op, e);
  const auto n_heads = static_cast<std::size_t>(x.ne[1]);
  const auto n_tokens = static_cast<std::size_t>(x.ne[2]);
  if (n_tokens == 0 || n_heads == 0) return Status::success();
  const std::int32_t* positions = nullptr;
  if (auto e = check_index("positions", positions_view, static_cast<std::int64_t>(n_tokens), false, &positions); !e.empty())
    return op_error(op, e);

  // cos/sin per token, shared by its heads: [token][pair], cos block then sin block.
  const auto n_pairs = static_cast<std::size_t>(p.n_rot / 2);
  std::vector<float> cache(2 * n_tokens * n_pairs);
  float* cos = cache.data();
  float* sin = cache.data() + n_tokens * n_pairs;
  const float theta_scale = std::pow(p.freq_base, -2.0f / static_cast<float>(p.n_rot));
  c.for_rows(n_tokens, 32 * n_pairs, [&](std::size_t begin, std::size_t end) {
    for (std::size_t t = begin; t < end; ++t)
      angles(positions[t], p.freq_scale, theta_scale, n_pairs, cos + t * n_pairs, sin + t * n_pairs);
  });

  const auto hd = static_cast<std::size_t>(head_dim);
  const std::size_t n_rot = 2 * n_pairs;
  const bool in_place = x.data == y.data;
  const auto rotate = p.neox ? c.k.rope_neox_row : c.k.rope_norm_row;
  c.for_rows(n_tokens * n_heads, hd, [&](std::size_t begin, std::size_t end) {
    for (std::size_t r = begin; r < end; ++r) {
      const std::size_t t = r / n_heads;
      const float* xr = row_ptr<const float>(x, r);
      float* yr = row_ptr<float>(y, r);
      rotate(xr, cos + t * n_pairs, sin + t * n_pairs, n_pairs, yr);
      if (!in_place && n_rot < hd) std::memcpy(yr + n_rot, xr + n_rot, (hd - n_rot) * sizeof(float));
    }
  });
  return Status::success();
}

}  // namespace graft::cpu
