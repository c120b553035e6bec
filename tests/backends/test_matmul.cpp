// Dense matmul with f32, f16 and bf16 weights against a double-precision reference.
#include "cpu_fixture.hpp"

using namespace cpu_test;
using graft::TypeId;
namespace type_id = graft::type_id;

namespace {

// f32 accumulation over k terms (16-32 partial sums, then a tree): the error is a small multiple
// of 2^-24 * sum |w_i x_i|.
constexpr double kMatmulRelTol = 3e-7;  // of sum |w_i * x_i|

struct Weights {
  std::vector<float> f32;           // the values the reference uses
  std::vector<std::uint16_t> half;  // f16 or bf16 bits of the same values
};

Weights make_weights(TypeId type, std::size_t n, std::uint32_t seed) {
  Weights w;
  w.f32 = random_floats(n, -1.0f, 1.0f, seed);
  if (type == type_id::f32) return w;
  w.half.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    w.half[i] = type == type_id::f16 ? f32_to_f16_normal(w.f32[i]) : f32_to_bf16_truncate(w.f32[i]);
    w.f32[i] = type == type_id::f16 ? static_cast<float>(f16_value(w.half[i]))
                                    : std::bit_cast<float>(static_cast<std::uint32_t>(w.half[i]) << 16);
  }
  return w;
}

TensorView weight_view(Weights& w, TypeId type, std::int64_t k, std::int64_t m) {
  return type == type_id::f32 ? view(w.f32, k, m) : view16(w.half, type, k, m);
}

void check_against_reference(const std::vector<float>& w, const std::vector<float>& x, const std::vector<float>& y,
                             std::size_t k, std::size_t m, std::size_t n, const std::string& what) {
  std::size_t bad = 0;
  for (std::size_t j = 0; j < n; ++j)
    for (std::size_t i = 0; i < m; ++i) {
      double ref = 0, mag = 0;
      for (std::size_t l = 0; l < k; ++l) {
        ref += static_cast<double>(w[i * k + l]) * x[j * k + l];
        mag += std::fabs(static_cast<double>(w[i * k + l]) * x[j * k + l]);
      }
      if (!(std::fabs(y[j * m + i] - ref) <= kMatmulRelTol * mag) && bad++ < 5)
        ADD_FAILURE() << what << ": y[" << j << "][" << i << "] = " << y[j * m + i] << ", reference " << ref;
    }
  EXPECT_EQ(bad, 0u) << what;
}

class Matmul : public OpTest {};
CPU_OP_TEST_SUITE(Matmul);

TEST_P(Matmul, AllWeightTypesMatchTheReference) {
  struct Shape {
    std::int64_t k, m, n;
  };
  // hidden 1024 and 4096 inputs; k and n off the vector and column-block sizes too
  for (Shape s : {Shape{1024, 256, 7}, Shape{4096, 64, 7}, Shape{1000, 33, 5}, Shape{13, 3, 1}})
    for (TypeId type : {type_id::f32, type_id::f16, type_id::bf16}) {
      Weights w = make_weights(type, s.k * s.m, 51);
      auto x = random_floats(s.k * s.n, -2.0f, 2.0f, 52);
      std::vector<float> y(s.m * s.n);
      ASSERT_TRUE(backend->matmul(weight_view(w, type, s.k, s.m), view(x, s.k, s.n), view(y, s.m, s.n)).ok());
      check_against_reference(w.f32, x, y, s.k, s.m, s.n,
                              "k " + std::to_string(s.k) + " m " + std::to_string(s.m) + " type " + std::to_string(type));
    }
}

// Widening f16/bf16 is exact and done before the dot, so a half-precision matmul gives the bits
// of the f32 matmul of the widened weights.
TEST_P(Matmul, HalfWeightsGiveTheBitsOfTheirF32Values) {
  const std::int64_t k = 1024, m = 40, n = 6;
  auto x = random_floats(k * n, -2.0f, 2.0f, 53);
  for (TypeId type : {type_id::f16, type_id::bf16}) {
    Weights w = make_weights(type, k * m, 54);
    std::vector<float> y_half(m * n), y_f32(m * n);
    ASSERT_TRUE(backend->matmul(weight_view(w, type, k, m), view(x, k, n), view(y_half, m, n)).ok());
    ASSERT_TRUE(backend->matmul(view(w.f32, k, m), view(x, k, n), view(y_f32, m, n)).ok());
    EXPECT_EQ(first_bit_difference(y_half, y_f32), -1) << "type " << type;
  }
}

TEST_P(Matmul, ThreeDimensionalActivationsAreRows) {
  // x [k, n_heads, n_tokens] is n_heads * n_tokens rows of k.
  const std::int64_t k = 128, m = 16;
  auto w = random_floats(k * m, -1.0f, 1.0f, 55);
  auto x = random_floats(k * 4 * 3, -1.0f, 1.0f, 56);
  std::vector<float> y3(m * 4 * 3), y2(m * 12);
  ASSERT_TRUE(backend->matmul(view(w, k, m), view(x, k, 4, 3), view(y3, m, 4, 3)).ok());
  ASSERT_TRUE(backend->matmul(view(w, k, m), view(x, k, 12), view(y2, m, 12)).ok());
  EXPECT_EQ(first_bit_difference(y3, y2), -1);
  check_against_reference(w, x, y2, k, m, 12, "3-D");
}

}  // namespace
