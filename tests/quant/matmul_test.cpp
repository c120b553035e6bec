// Every format's CPU matmul against two references, at real shapes, for n = 1, 2, 3, 5, 16, thread
// counts 1..3 and every SIMD level this CPU has:
//  - exact: an independent re-implementation of the documented computation (Q8_0 activations and
//    integer block sums for Q8_0/Q4_0, the 16-lane f32 order for dense formats), compared bit for bit;
//  - approximate: a double-precision dot product of the dequantized weights with the original x,
//    within an error bound derived from the activation rounding and f32 accumulation.
#include <bit>
#include <cmath>
#include <cstring>

#include "ggml_reference.hpp"
#include "quant_test_util.hpp"

using namespace quant_test;

namespace {

struct Shape {
  std::int64_t k, m;
};

const std::int64_t kNs[] = {1, 2, 3, 5, 16};
constexpr std::int64_t kMaxN = 16;

// x rows: Gaussian, with one block holding exact .5 ties after scaling (amax 127 -> id = 1), where
// ggml's x86 rounding (half to even) and roundf differ.
std::vector<float> activations(std::int64_t k, std::uint32_t seed) {
  auto x = gaussian(static_cast<std::size_t>(k * kMaxN), 1.0f, seed);
  if (k >= 64)
    for (int j = 0; j < 32; ++j) x[32 + j] = j == 0 ? 127.0f : (j % 2 ? 2.5f : -0.5f) * (j % 3 ? 1.0f : -1.0f);
  return x;
}

bool is_quantized(const std::string& name) { return name == "q8_0" || name == "q4_0"; }

// The exact outputs the kernels must produce, [c][r].
std::vector<float> exact_reference(const std::string& name, const std::vector<std::uint8_t>& q,
                                   const std::vector<float>& wd, const std::vector<float>& x, Shape s) {
  std::vector<float> y(static_cast<std::size_t>(s.m * kMaxN));
  if (is_quantized(name)) {
    const std::size_t bb = name == "q8_0" ? 34 : 18, row = static_cast<std::size_t>(s.k / 32) * bb;
    std::vector<std::vector<quant_ref::Block>> w(static_cast<std::size_t>(s.m));
    for (std::int64_t r = 0; r < s.m; ++r)
      for (std::int64_t b = 0; b < s.k / 32; ++b) {
        const std::uint8_t* p = q.data() + static_cast<std::size_t>(r) * row + static_cast<std::size_t>(b) * bb;
        w[static_cast<std::size_t>(r)].push_back(name == "q8_0" ? quant_ref::q8_0_block(p) : quant_ref::q4_0_block(p));
      }
    for (std::int64_t c = 0; c < kMaxN; ++c) {
      const auto xa = quant_ref::quantize_activation(x.data() + c * s.k, s.k);
      for (std::int64_t r = 0; r < s.m; ++r) y[static_cast<std::size_t>(c * s.m + r)] = quant_ref::quantized_dot(w[static_cast<std::size_t>(r)], xa);
    }
    return y;
  }
  std::vector<float> xr(x);
  if (name == "f16") for (auto& v : xr) v = quant_ref::fp16_to_fp32(quant_ref::fp32_to_fp16(v));
  if (name == "bf16") for (auto& v : xr) v = quant_ref::bf16_to_fp32(quant_ref::fp32_to_bf16(v));
  for (std::int64_t c = 0; c < kMaxN; ++c)
    for (std::int64_t r = 0; r < s.m; ++r)
      y[static_cast<std::size_t>(c * s.m + r)] = quant_ref::lane_dot(wd.data() + r * s.k, xr.data() + c * s.k, s.k);
  return y;
}

// Double-precision dot products and their allowed error, [c][r].
void approximate_reference(const std::string& name, const std::vector<float>& wd, const std::vector<float>& x, Shape s,
                           std::vector<double>& ref, std::vector<double>& tol) {
  ref.assign(static_cast<std::size_t>(s.m * kMaxN), 0.0);
  tol.assign(ref.size(), 0.0);
  const double acc_terms = is_quantized(name) ? static_cast<double>(s.k / 32 + 3) : static_cast<double>(s.k / 16 + 6);
  for (std::int64_t c = 0; c < kMaxN; ++c) {
    const float* xc = x.data() + c * s.k;
    for (std::int64_t r = 0; r < s.m; ++r) {
      const float* wr = wd.data() + r * s.k;
      double dot = 0, abs_dot = 0, act_err = 0;
      for (std::int64_t b = 0; b < (s.k + 31) / 32; ++b) {
        double amax = 0, wabs = 0;
        const std::int64_t end = std::min(s.k, (b + 1) * 32);
        for (std::int64_t i = b * 32; i < end; ++i) amax = std::max(amax, std::fabs(static_cast<double>(xc[i])));
        for (std::int64_t i = b * 32; i < end; ++i) {
          const double w = wr[i], xv = xc[i];
          dot += w * xv;
          wabs += std::fabs(w);
          abs_dot += std::fabs(w) * (std::fabs(xv) + (is_quantized(name) ? amax / 127 : 0.0));
          if (name == "f16") act_err += std::fabs(w) * (std::fabs(xv) * 0x1p-11 + 0x1p-25);
          if (name == "bf16") act_err += std::fabs(w) * std::fabs(xv) * 0x1p-8;
        }
        // Q8_0 activations: half a step plus the fp16 rounding of the scale times the largest code.
        if (is_quantized(name)) act_err += wabs * amax * (0.5 / 127 + 0x1p-11);
      }
      ref[static_cast<std::size_t>(c * s.m + r)] = dot;
      tol[static_cast<std::size_t>(c * s.m + r)] = act_err + acc_terms * 0x1p-22 * abs_dot + 1e-30;
    }
  }
}

void check_format(const std::string& name, Shape s, const std::vector<std::string>& levels,
                  const std::vector<std::int64_t>& threads, const std::vector<std::int64_t>& ns, std::uint32_t seed) {
  SCOPED_TRACE(name + " k=" + std::to_string(s.k) + " m=" + std::to_string(s.m));
  auto base = format(name);
  ASSERT_NE(base, nullptr);
  const auto w = gaussian(static_cast<std::size_t>(s.k * s.m), 0.05f, seed);
  const auto q = quantize(*base, w, s.k, s.m);
  const auto wd = dequantize(*base, q, s.k * s.m);
  const auto x = activations(s.k, seed + 1);
  const auto exact = exact_reference(name, q, wd, x, s);
  std::vector<double> ref, tol;
  approximate_reference(name, wd, x, s, ref, tol);

  for (const auto& level : levels) {
    auto f = format(name, level);
    ASSERT_NE(f, nullptr);
    for (std::int64_t t : threads) {
      for (std::int64_t n : ns) {
        SCOPED_TRACE(level + " threads=" + std::to_string(t) + " n=" + std::to_string(n));
        const auto y = matmul(*f, *cpu(t), q, s.k, s.m, x.data(), n);
        std::size_t bad_exact = 0, bad_approx = 0;
        for (std::size_t i = 0; i < y.size(); ++i) {
          if (std::bit_cast<std::uint32_t>(y[i]) != std::bit_cast<std::uint32_t>(exact[i]) && ++bad_exact <= 3)
            ADD_FAILURE() << "y[" << i / s.m << "][" << i % s.m << "] = " << y[i] << ", exact reference " << exact[i];
          if (!(std::fabs(y[i] - ref[i]) <= tol[i]) && ++bad_approx <= 3)
            ADD_FAILURE() << "y[" << i / s.m << "][" << i % s.m << "] = " << y[i] << ", double reference " << ref[i]
                          << " +- " << tol[i];
        }
        ASSERT_EQ(bad_exact + bad_approx, 0u);
      }
    }
  }
}

}  // namespace

TEST(Matmul, QuantizedFormatsAtModelShapes) {
  for (const std::string name : {"q8_0", "q4_0"}) {
    check_format(name, {1024, 1024}, available_levels(), {1, 2, 3}, {1, 2, 3, 5, 16}, 21);
    check_format(name, {1024, 2816}, available_levels(), {2, 3}, {1, 5, 16}, 22);
  }
}

TEST(Matmul, DenseFormatsAtModelShapes) {
  for (const std::string name : {"f32", "f16", "bf16"}) {
    check_format(name, {1024, 1024}, available_levels(), {1, 2, 3}, {1, 2, 3, 5, 16}, 23);
    check_format(name, {1024, 2816}, available_levels(), {2}, {1, 16}, 24);
  }
}

TEST(Matmul, LargeSquareQuantized) {
  check_format("q4_0", {4096, 4096}, {available_levels().back()}, {2}, {1, 3}, 25);
  check_format("q8_0", {4096, 4096}, {available_levels().back()}, {2}, {1}, 26);
}

TEST(Matmul, OddRowCountsAndShortRows) {
  for (const auto& name : kFormats) {
    check_format(name, {256, 37}, available_levels(), {1, 3}, {1, 2, 3, 5, 16}, 27);
    check_format(name, {32, 5}, available_levels(), {2}, {1, 3, 16}, 28);
  }
  // Rows of 11 blocks: Q8_0's AVX2 layout ends them with a chunk of 3 (q8_0_packed.hpp).
  check_format("q8_0", {352, 19}, available_levels(), {1, 2}, {1, 2, 3}, 30);
}

TEST(Matmul, DenseRowsNotAMultipleOfSixteen) {
  for (const std::string name : {"f32", "f16", "bf16"})
    for (std::int64_t k : {1, 7, 100, 1001}) check_format(name, {k, 9}, available_levels(), {1, 2}, {1, 5, 16}, 29);
}

TEST(Matmul, EmptyBatchAndEmptyOutputAreNoOps) {
  auto f = format("q8_0");
  const auto w = gaussian(64 * 4, 1.0f, 30);
  const auto q = quantize(*f, w, 64, 4);
  float x[64] = {}, y[4] = {7, 7, 7, 7};
  TensorView xv = f32_view(x, 64, 1), yv = f32_view(y, 4, 1);
  xv.ne[1] = 0;
  yv.ne[1] = 0;
  EXPECT_TRUE(f->kernels("cpu")->matmul(*cpu(2), weight_view(q.data(), traits(*f), 64, 4), xv, yv).ok());
  EXPECT_EQ(y[0], 7.0f);
}

TEST(Matmul, Q8_0AcceptsEveryCodeIncludingMinus128) {
  // Files written by other tools may hold -128, which ggml's quantizer never produces; the sign
  // trick and the w + 128 form must both still give the exact integer sums.
  const std::int64_t k = 256, m = 12;
  std::vector<std::uint8_t> q(static_cast<std::size_t>(m * k / 32 * 34));
  std::mt19937 rng(31);
  for (std::size_t i = 0; i < q.size(); ++i) q[i] = static_cast<std::uint8_t>(rng());
  for (std::size_t b = 0; b < q.size(); b += 34) {
    q[b] = static_cast<std::uint8_t>(rng() & 0xFF);
    q[b + 1] = static_cast<std::uint8_t>(0x20 + (rng() & 0x0F));  // scales around 2^-7
    q[b + 2] = 0x80;                                              // at least one -128 per block
  }
  auto base = format("q8_0");
  const auto wd = dequantize(*base, q, k * m);
  const auto x = activations(k, 32);
  const auto exact = exact_reference("q8_0", q, wd, x, {k, m});
  for (const auto& level : available_levels()) {
    const auto y = matmul(*format("q8_0", level), *cpu(2), q, k, m, x.data(), kMaxN);
    for (std::size_t i = 0; i < y.size(); ++i)
      ASSERT_EQ(std::bit_cast<std::uint32_t>(y[i]), std::bit_cast<std::uint32_t>(exact[i])) << level << " " << i;
  }
}
