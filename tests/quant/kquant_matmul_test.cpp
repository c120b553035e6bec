// K-quant (Q4_K, Q5_K, Q6_K) CPU matmul: bit for bit against the documented per-output operation order
// (kquant_reference.hpp) at real shapes (k = 1024, 2048, 4096; m not a multiple of the row tile;
// n = 1..9 and 64), every SIMD level and 1-3 threads; within a derived bound of a double-precision
// dot product; determinism across batch splits; get_rows; error texts.
#include <bit>
#include <cmath>
#include <cstring>

#include "kquant_reference.hpp"
#include "quant_test_util.hpp"

using namespace quant_test;

namespace {

struct KFormat {
  std::string name;
  std::size_t block_bytes;
  float (*dot)(const std::uint8_t*, const kquant_ref::Q8KRow&, std::int64_t);
};

const KFormat kKFormats[] = {
    {"q4_k", 144, &kquant_ref::q4_k_dot},
    {"q5_k", 176, &kquant_ref::q5_k_dot},
    {"q6_k", 210, &kquant_ref::q6_k_dot},
};

constexpr std::int64_t kMaxN = 64;
const std::int64_t kNs[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 64};

// Relative error of the f32 accumulation against the exact value, generous for k <= 4096.
constexpr double kAccumulationRel = 1e-4;

std::vector<float> activations(std::int64_t k, std::uint32_t seed) {
  auto x = gaussian(static_cast<std::size_t>(k * kMaxN), 1.0f, seed);
  // One block whose largest magnitude is negative and one all zero (d = 0).
  x[300] = -9.0f;
  for (int j = 0; j < 256; ++j) x[static_cast<std::size_t>(k + j)] = 0.0f;
  return x;
}

// Weight rows: quantized Gaussian rows, plus (last rows) raw random bytes with finite scales, which
// reach every code and every 6-bit / int8 scale the quantizer may never produce.
std::vector<std::uint8_t> weights(WeightFormat& f, const KFormat& kf, std::int64_t k, std::int64_t m,
                                  std::uint32_t seed) {
  auto q = quantize(f, gaussian(static_cast<std::size_t>(k * m), 0.05f, seed), k, m);
  std::mt19937 rng(seed);
  const std::size_t row = static_cast<std::size_t>(k / 256) * kf.block_bytes;
  for (std::size_t i = (static_cast<std::size_t>(m) - 3) * row; i < q.size(); ++i) q[i] = static_cast<std::uint8_t>(rng());
  const std::size_t half = kf.name == "q6_k" ? 208 : 0;
  for (std::size_t b = (static_cast<std::size_t>(m) - 3) * row; b < q.size(); b += kf.block_bytes) {
    q[b + half + 1] = static_cast<std::uint8_t>(0x10 + rng() % 0x10);
    if (kf.name != "q6_k") q[b + 3] = static_cast<std::uint8_t>(0x10 + rng() % 0x10);
  }
  return q;
}

}  // namespace

TEST(KQuantMatmul, BitExactAgainstTheDocumentedOrderAndCloseToExact) {
  for (const KFormat& kf : kKFormats) {
    auto base = format(kf.name);
    ASSERT_NE(base, nullptr);
    for (const std::int64_t k : {1024, 2048, 4096}) {
      const std::int64_t m = k == 2048 ? 37 : 13;
      SCOPED_TRACE(kf.name + " k " + std::to_string(k));
      const auto q = weights(*base, kf, k, m, static_cast<std::uint32_t>(k));
      const auto wd = dequantize(*base, q, k * m);
      const auto x = activations(k, static_cast<std::uint32_t>(k + 1));
      const std::size_t row = static_cast<std::size_t>(k / 256) * kf.block_bytes;
      std::vector<float> exact(static_cast<std::size_t>(m * kMaxN));
      for (std::int64_t c = 0; c < kMaxN; ++c) {
        const auto xa = kquant_ref::quantize_q8_k(x.data() + c * k, k);
        for (std::int64_t r = 0; r < m; ++r)
          exact[static_cast<std::size_t>(c * m + r)] = kf.dot(q.data() + static_cast<std::size_t>(r) * row, xa, k);
        // The double-precision dot of the dequantized weights with the unquantized x differs by the
        // activation rounding (at most d_x / 2 per element) and the f32 accumulation.
        for (std::int64_t r = 0; r < m; ++r) {
          double dot = 0, bound = 0;
          for (std::int64_t i = 0; i < k; ++i) {
            const double w = wd[static_cast<std::size_t>(r * k + i)], v = x[static_cast<std::size_t>(c * k + i)];
            dot += w * v;
            bound += std::fabs(w) * (std::fabs(xa.d[static_cast<std::size_t>(i / 256)]) / 2 + kAccumulationRel * std::fabs(v));
          }
          ASSERT_LE(std::fabs(exact[static_cast<std::size_t>(c * m + r)] - dot), bound + 1e-6) << "row " << r << " col " << c;
        }
      }
      for (const auto& level : available_levels()) {
        auto f = format(kf.name, level);
        for (std::int64_t t : {1, 2, 3})
          for (std::int64_t n : kNs) {
            const auto y = matmul(*f, *cpu(t), q, k, m, x.data(), n);
            for (std::size_t i = 0; i < y.size(); ++i)
              ASSERT_EQ(std::bit_cast<std::uint32_t>(y[i]), std::bit_cast<std::uint32_t>(exact[i]))
                  << level << " threads " << t << " n " << n << " index " << i;
          }
      }
    }
  }
}

TEST(KQuantMatmul, BatchSplitsThreadsAndLevelsGiveTheSameBits) {
  // A long m spread over threads and tiles, in row ranges that do not align with the tile.
  constexpr std::int64_t k = 1024, m = 1001, n = 16;
  for (const KFormat& kf : kKFormats) {
    auto scalar = format(kf.name, "scalar");
    const auto q = quantize(*scalar, gaussian(static_cast<std::size_t>(k * m), 0.05f, 71), k, m);
    const auto x = gaussian(static_cast<std::size_t>(k * n), 1.0f, 72);
    const auto want = matmul(*scalar, *cpu(1), q, k, m, x.data(), n);
    for (const auto& level : available_levels()) {
      auto f = format(kf.name, level);
      for (std::int64_t t : {1, 2, 3}) {
        ASSERT_EQ(std::memcmp(matmul(*f, *cpu(t), q, k, m, x.data(), n).data(), want.data(), want.size() * 4), 0)
            << kf.name << " " << level << " threads " << t;
        for (std::int64_t c0 : {0, 5, 11}) {
          const std::int64_t len = c0 == 11 ? 5 : (c0 == 5 ? 3 : 1);
          const auto part = matmul(*f, *cpu(t), q, k, m, x.data() + c0 * k, len);
          ASSERT_EQ(std::memcmp(part.data(), want.data() + c0 * m, part.size() * 4), 0)
              << kf.name << " " << level << " threads " << t << " columns from " << c0;
        }
      }
    }
  }
}

TEST(KQuantMatmul, ConsecutiveCallsOfOneShapeUseTheirOwnActivations) {
  // The packed K-quant kernels put a call's activations in their code order once per thread and
  // keep them for the other row ranges the pool hands the thread; the next call of the same shape
  // on the same threads, with other activations, must not find them still valid.
  constexpr std::int64_t k = 1024, m = 300;
  for (const std::string name : {"q4_k", "q5_k", "q2_k"}) {
    auto scalar = format(name, "scalar");
    ASSERT_NE(scalar, nullptr);
    const auto q = quantize(*scalar, gaussian(static_cast<std::size_t>(k * m), 0.05f, 73), k, m);
    const auto x1 = gaussian(static_cast<std::size_t>(k * 16), 1.0f, 74), x2 = gaussian(static_cast<std::size_t>(k * 16), 1.0f, 75);
    for (const std::int64_t n : {1, 16}) {
      const auto want1 = matmul(*scalar, *cpu(1), q, k, m, x1.data(), n);
      const auto want2 = matmul(*scalar, *cpu(1), q, k, m, x2.data(), n);
      for (const auto& level : available_levels()) {
        auto f = format(name, level);
        for (std::int64_t t : {1, 2})
          for (int round = 0; round < 2; ++round) {
            SCOPED_TRACE(name + " " + level + " threads " + std::to_string(t) + " n " + std::to_string(n));
            ASSERT_EQ(std::memcmp(matmul(*f, *cpu(t), q, k, m, x1.data(), n).data(), want1.data(), want1.size() * 4), 0)
                << "first activations";
            ASSERT_EQ(std::memcmp(matmul(*f, *cpu(t), q, k, m, x2.data(), n).data(), want2.data(), want2.size() * 4), 0)
                << "second activations";
          }
      }
    }
  }
}

TEST(KQuantMatmul, GetRowsEqualsDequantizingTheRows) {
  constexpr std::int64_t k = 512, rows = 40;
  const std::int32_t ids[] = {0, 39, 7, 7, 23};
  for (const KFormat& kf : kKFormats) {
    auto f = format(kf.name);
    const auto q = quantize(*f, gaussian(static_cast<std::size_t>(k * rows), 1.0f, 73), k, rows);
    const auto all = dequantize(*f, q, k * rows);
    for (std::int64_t t : {1, 3}) {
      std::vector<float> y(std::size(ids) * k, -1.0f);
      const Status st = f->kernels("cpu")->get_rows(*cpu(t), weight_view(q.data(), traits(*f), k, rows), nullptr,
                                                    i32_view(const_cast<std::int32_t*>(ids), std::size(ids)),
                                                    f32_view(y.data(), k, std::size(ids)));
      ASSERT_TRUE(st.ok()) << st.message();
      for (std::size_t i = 0; i < std::size(ids); ++i)
        EXPECT_EQ(std::memcmp(y.data() + i * k, all.data() + ids[i] * k, k * 4), 0) << kf.name << " row " << i;
    }
  }
}

TEST(KQuantMatmul, RowLengthsNotAMultipleOf256AreRejected) {
  for (const KFormat& kf : kKFormats) {
    auto f = format(kf.name);
    const std::int64_t bad[] = {384, 2};
    EXPECT_EQ(f->check_tensor(traits(*f).id, bad, 2, 0).message(),
              kf.name + " tensor: row length 384 is not a multiple of the block size 256");
    std::vector<std::uint8_t> q(2 * kf.block_bytes);
    std::vector<float> x(384), y(1);
    TensorView w = weight_view(q.data(), traits(*f), 256, 1);
    w.ne[0] = 384;
    EXPECT_EQ(f->kernels("cpu")->matmul(*cpu(1), w, f32_view(x.data(), 384, 1), f32_view(y.data(), 1, 1)).message(),
              kf.name + " matmul: weight row length 384 is not a multiple of the block size 256");
    std::vector<float> out(384);
    EXPECT_EQ(f->dequantize(traits(*f).id, q.data(), out.data(), 384).message(),
              kf.name + " dequantize: element count 384 is not a multiple of the block size 256");
  }
}
