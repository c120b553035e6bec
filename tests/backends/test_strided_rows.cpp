// Row-strided views: rms_norm, rope and silu_mul read and write rows that are contiguous but lie
// apart, as the q/k/v or gate/up parts of one fused projection's output do ([part][token] with the
// parts of a token side by side). Each must give, bit for bit, what it gives on a dense copy.
#include "cpu_fixture.hpp"

using namespace cpu_test;
using graft::RopeParams;

namespace {

class StridedRows : public OpTest {};
CPU_OP_TEST_SUITE(StridedRows);

// A [ne0, ne1, ne2] view of base with the given row and token strides in floats.
TensorView strided(float* base, std::int64_t ne0, std::int64_t ne1, std::int64_t ne2, std::size_t s1, std::size_t s2) {
  TensorView t = graft::f32_view(base, ne0, ne1, ne2);
  t.nb[1] = 4 * s1;
  t.nb[2] = 4 * s2;
  t.nb[3] = 4 * s2 * static_cast<std::size_t>(ne2);
  return t;
}

// The [ne0 * ne1] floats of each of `tokens` tokens, taken from `stride` floats apart from offset.
std::vector<float> gather(const std::vector<float>& buf, std::size_t offset, std::size_t per_token, std::size_t stride,
                          std::size_t tokens) {
  std::vector<float> out;
  for (std::size_t t = 0; t < tokens; ++t)
    out.insert(out.end(), buf.begin() + static_cast<std::ptrdiff_t>(offset + t * stride),
               buf.begin() + static_cast<std::ptrdiff_t>(offset + t * stride + per_token));
  return out;
}

// Shapes of a qwen3-like layer: 8 heads of 64 (q), 2 KV heads (k, v), 5 tokens.
constexpr std::int64_t kD = 64, kH = 8, kHkv = 2, kTokens = 5;
constexpr std::size_t kQkv = (kH + 2 * kHkv) * kD;  // floats per token of the fused output

TEST_P(StridedRows, RmsNormPerHeadOnTheQAndKParts) {
  const auto fused0 = random_floats(kQkv * kTokens, -3.0f, 3.0f, 71);
  auto w = random_floats(kD, 0.5f, 1.5f, 72);
  for (auto [offset, heads] : {std::pair<std::size_t, std::int64_t>{0, kH}, {kH * kD, kHkv}}) {
    // Dense: the part copied out, normalized per head row.
    auto dense = gather(fused0, offset, heads * kD, kQkv, kTokens);
    std::vector<float> expected(dense.size());
    ASSERT_TRUE(backend->rms_norm(view(dense, kD, heads * kTokens), view(w, kD), 1e-6f, view(expected, kD, heads * kTokens)).ok());
    // Strided, in place in the fused buffer, as the model runs it.
    auto fused = fused0;
    const TensorView part = strided(fused.data() + offset, kD, heads, kTokens, kD, kQkv);
    ASSERT_TRUE(backend->rms_norm(part, view(w, kD), 1e-6f, part).ok());
    EXPECT_EQ(first_bit_difference(gather(fused, offset, heads * kD, kQkv, kTokens), expected), -1) << "offset " << offset;
    // Everything outside the part is untouched.
    for (std::size_t t = 0; t < kTokens; ++t)
      for (std::size_t i = 0; i < kQkv; ++i) {
        if (i >= offset && i < offset + heads * kD) continue;
        ASSERT_EQ(bits(fused[t * kQkv + i]), bits(fused0[t * kQkv + i])) << "token " << t << " element " << i;
      }
    // Strided in, dense out.
    std::vector<float> out(expected.size());
    fused = fused0;
    ASSERT_TRUE(backend->rms_norm(strided(fused.data() + offset, kD, heads, kTokens, kD, kQkv), view(w, kD), 1e-6f,
                                  view(out, kD, heads, kTokens))
                    .ok());
    EXPECT_EQ(first_bit_difference(out, expected), -1);
  }
}

TEST_P(StridedRows, RopeOnTheKPart) {
  const auto fused0 = random_floats(kQkv * kTokens, -2.0f, 2.0f, 73);
  const std::int32_t pos[kTokens] = {3, 4, 5, 6, 90};
  RopeParams p;
  p.n_rot = kD;
  p.neox = true;
  p.freq_base = 1000000.0f;
  const std::size_t offset = kH * kD;
  auto dense = gather(fused0, offset, kHkv * kD, kQkv, kTokens);
  std::vector<float> expected(dense.size());
  ASSERT_TRUE(backend->rope(view(dense, kD, kHkv, kTokens), idx(pos, kTokens), p, view(expected, kD, kHkv, kTokens)).ok());
  auto fused = fused0;
  const TensorView part = strided(fused.data() + offset, kD, kHkv, kTokens, kD, kQkv);
  ASSERT_TRUE(backend->rope(part, idx(pos, kTokens), p, part).ok());
  EXPECT_EQ(first_bit_difference(gather(fused, offset, kHkv * kD, kQkv, kTokens), expected), -1);
  // The v part after it is untouched.
  EXPECT_EQ(gather(fused, offset + kHkv * kD, kHkv * kD, kQkv, kTokens),
            gather(fused0, offset + kHkv * kD, kHkv * kD, kQkv, kTokens));
}

TEST_P(StridedRows, SiluMulOfTheGateAndUpParts) {
  const std::int64_t n_ff = 352;  // not a multiple of the vector widths: the row tails run too
  const auto fused = random_floats(2 * n_ff * kTokens, -6.0f, 6.0f, 74);
  auto gate = gather(fused, 0, n_ff, 2 * n_ff, kTokens), up = gather(fused, n_ff, n_ff, 2 * n_ff, kTokens);
  std::vector<float> expected(gate.size()), out(gate.size());
  ASSERT_TRUE(backend->silu_mul(view(gate, n_ff, kTokens), view(up, n_ff, kTokens), view(expected, n_ff, kTokens)).ok());
  auto f = fused;
  TensorView g = strided(f.data(), n_ff, kTokens, 1, 2 * n_ff, 2 * n_ff * kTokens);
  TensorView u = strided(f.data() + n_ff, n_ff, kTokens, 1, 2 * n_ff, 2 * n_ff * kTokens);
  g.n_dims = u.n_dims = 2;
  ASSERT_TRUE(backend->silu_mul(g, u, view(out, n_ff, kTokens)).ok());
  EXPECT_EQ(first_bit_difference(out, expected), -1);
}

TEST_P(StridedRows, OverlappingRowsAndDenseOnlyOpsAreRefused) {
  auto buf = random_floats(kQkv * kTokens, -1.0f, 1.0f, 75);
  auto w = random_floats(kD, 0.5f, 1.5f, 76);
  // Rows 32 floats apart overlap rows of 64.
  const TensorView overlapping = strided(buf.data(), kD, kH, kTokens, kD / 2, kQkv);
  Status st = backend->rms_norm(overlapping, view(w, kD), 1e-6f, overlapping);
  EXPECT_EQ(st.message(), "cpu backend: rms_norm: x has nb[1] = 128; rows must not overlap: expected a multiple of 4 of at least 256");
  // Tokens closer than the heads they hold overlap too.
  const TensorView tokens = strided(buf.data(), kD, kH, kTokens, kD, kD * kH - 1);
  const std::vector<std::int32_t> zeros(kTokens, 0);
  st = backend->rope(tokens, idx(zeros), RopeParams{}, tokens);
  EXPECT_EQ(st.message(), "cpu backend: rope: x has nb[2] = 2044; rows must not overlap: expected a multiple of 4 of at least 2048");
  // y interleaved with x in the same buffer is not x: refused as an overlap.
  const TensorView q = strided(buf.data(), kD, kH, kTokens, kD, kQkv);
  const TensorView k = strided(buf.data() + kH * kD, kD, kH / 4, kTokens, kD, kQkv);
  st = backend->rms_norm(strided(buf.data(), kD, kHkv, kTokens, kD, kQkv), view(w, kD), 1e-6f, k);
  EXPECT_EQ(st.message(), "cpu backend: rms_norm: y partially overlaps x; in place needs y and x to be the same memory");
  // Ops that take dense tensors only still say so.
  std::vector<float> y(static_cast<std::size_t>(kD * kH * kTokens));
  st = backend->add(q, view(y, kD, kH, kTokens), view(y, kD, kH, kTokens));
  EXPECT_EQ(st.message(), "cpu backend: add: a is not contiguous: nb[2] = 3072, expected 2048");
}

}  // namespace
