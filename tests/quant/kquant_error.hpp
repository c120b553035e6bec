// Reconstruction-error measurement for the K-quant quantizers: Gaussian rows and real weights from
// the zoo model (F16 tensors of models/zoo-qwen3-4x256.gguf), RMSE of the plugin's round trip next
// to a per-block optimum the test computes by search.
#pragma once

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "ggml_reference.hpp"
#include "gguf/gguf_file.hpp"
#include "quant_test_util.hpp"

namespace kquant_error {

// Up to `blocks` super-blocks of 256 from each F16 2-D weight of the zoo model named in `names`,
// taken from rows spread over the tensor.
inline std::vector<float> zoo_weights(const std::vector<std::string>& names, std::int64_t blocks) {
  auto file = graft::gguf::File::open(GRAFT_ZOO_MODEL);
  EXPECT_TRUE(file) << file.status().message();
  std::vector<float> out;
  if (!file) return out;
  for (const auto& name : names) {
    const auto* t = (*file)->tensor(name);
    EXPECT_NE(t, nullptr) << name;
    if (!t) continue;
    EXPECT_EQ(t->type, 1u) << name << " is not F16";
    const std::uint64_t total = t->elements() / 256;
    const std::uint64_t stride = std::max<std::uint64_t>(1, total / static_cast<std::uint64_t>(blocks));
    for (std::uint64_t b = 0; b < total && b / stride < static_cast<std::uint64_t>(blocks); b += stride)
      for (std::uint64_t i = 0; i < 256; ++i) {
        const std::uint8_t* p = t->data + 2 * (b * 256 + i);
        out.push_back(quant_ref::fp16_to_fp32(static_cast<std::uint16_t>(p[0] | (p[1] << 8))));
      }
  }
  return out;
}

inline const std::vector<std::string> kZooTensors = {"blk.0.attn_q.weight", "blk.1.attn_output.weight",
                                                     "blk.2.ffn_gate.weight", "blk.3.ffn_down.weight"};

// Sum of squared errors of the plugin's round trip.
inline double plugin_sse(graft::WeightFormat& f, const std::vector<float>& x) {
  const auto q = quant_test::quantize(f, x, 256, static_cast<std::int64_t>(x.size() / 256));
  const auto y = quant_test::dequantize(f, q, static_cast<std::int64_t>(x.size()));
  double e = 0;
  for (std::size_t i = 0; i < x.size(); ++i) e += (static_cast<double>(y[i]) - x[i]) * (static_cast<double>(y[i]) - x[i]);
  return e;
}

struct Report {
  double ours, optimum;
};

// RMSE of ours and of `optimum_sse` (per super-block) over x; prints both.
inline Report measure(const std::string& what, graft::WeightFormat& f, const std::vector<float>& x,
                      const std::function<double(const float*)>& optimum_sse) {
  double opt = 0;
  for (std::size_t b = 0; b < x.size() / 256; ++b) opt += optimum_sse(x.data() + 256 * b);
  const double n = static_cast<double>(x.size());
  Report r{std::sqrt(plugin_sse(f, x) / n), std::sqrt(opt / n)};
  double sig = 0;
  for (float v : x) sig += static_cast<double>(v) * v;
  std::printf("[ error    ] %s: %zu blocks, signal rms %.5g, ours rmse %.5g, optimum rmse %.5g, ratio %.4f\n",
              what.c_str(), x.size() / 256, std::sqrt(sig / n), r.ours, r.optimum, r.ours / r.optimum);
  return r;
}

}  // namespace kquant_error
