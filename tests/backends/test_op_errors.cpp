// Bad arguments are errors with one exact line, never crashes: types, shapes, strides, aliasing.
#include <limits>

#include "cpu_fixture.hpp"

using namespace cpu_test;
using graft::Errc;
using graft::RopeParams;
namespace type_id = graft::type_id;

namespace {

class OpErrors : public OpTest {
 protected:
  void expect_error(const Status& st, const std::string& message) {
    EXPECT_EQ(st.code(), Errc::invalid_argument) << st.message();
    EXPECT_EQ(st.message(), message);
  }
  std::vector<float> a = std::vector<float>(1024 * 8, 1.0f), b = a, c = a;
};
CPU_OP_TEST_SUITE(OpErrors);

TEST_P(OpErrors, TensorChecksNameTheTensorAndTheFault) {
  auto w = view(b, 1024);
  auto y = view(c, 1024, 7);
  auto x = view(a, 1024, 7);
  const std::string p = "cpu backend: rms_norm: ";

  auto t = x;
  t.type = type_id::f16;
  expect_error(backend->rms_norm(t, w, 1e-6f, y), p + "x has type f16; expected f32");
  t = x;
  t.type = type_id::q8_0;
  expect_error(backend->rms_norm(x, w, 1e-6f, t), p + "y has type q8_0; expected f32");
  t.type = 99;
  expect_error(backend->rms_norm(x, t, 1e-6f, y), p + "w has type id 99; expected f32");
  t = x;
  t.n_dims = 5;
  expect_error(backend->rms_norm(t, w, 1e-6f, y), p + "x has n_dims = 5; expected 1 to 4");
  t = x;
  t.ne[0] = 0;
  expect_error(backend->rms_norm(t, w, 1e-6f, y), p + "x has ne[0] = 0; rows must not be empty");
  t = x;
  t.ne[1] = -3;
  expect_error(backend->rms_norm(t, w, 1e-6f, y), p + "x has ne[1] = -3");
  t = x;
  t.ne[2] = 2;
  expect_error(backend->rms_norm(t, w, 1e-6f, y), p + "x has ne[2] = 2 beyond its n_dims = 2");
  t = x;
  t.ne[1] = std::int64_t{1} << 40;
  expect_error(backend->rms_norm(t, w, 1e-6f, y), p + "x is too large: [1024, 1099511627776]");
  t = x;
  t.nb[0] = 8;
  expect_error(backend->rms_norm(t, w, 1e-6f, y), p + "x is not contiguous: nb[0] = 8, expected 4");
  t = x;
  t.nb[1] = 2048;  // rms_norm takes row-strided views, but not rows that overlap
  expect_error(backend->rms_norm(t, w, 1e-6f, y),
               p + "x has nb[1] = 2048; rows must not overlap: expected a multiple of 4 of at least 4096");
  t.nb[1] = 4098;
  expect_error(backend->rms_norm(t, w, 1e-6f, y),
               p + "x has nb[1] = 4098; rows must not overlap: expected a multiple of 4 of at least 4096");
  t.nb[1] = 8192;  // add takes packed tensors only
  expect_error(backend->add(t, x, y), "cpu backend: add: a is not contiguous: nb[1] = 8192, expected 4096");
  t = x;
  t.data = nullptr;
  expect_error(backend->rms_norm(t, w, 1e-6f, y), p + "x has no data (null pointer)");
  // a default TensorView (nb all zero) is not taken for a contiguous one
  graft::TensorView raw;
  raw.data = a.data();
  raw.ne = {1024, 7, 1, 1};
  raw.n_dims = 2;
  expect_error(backend->rms_norm(raw, w, 1e-6f, y), p + "x is not contiguous: nb[0] = 0, expected 4");
}

TEST_P(OpErrors, RmsNorm) {
  const std::string p = "cpu backend: rms_norm: ";
  auto x = view(a, 1024, 7);
  expect_error(backend->rms_norm(x, view(b, 1000), 1e-6f, view(c, 1024, 7)),
               p + "w has 1000 elements; expected ne[0] of x = 1024");
  expect_error(backend->rms_norm(x, view(b, 1024), 1e-6f, view(c, 1024, 6)),
               p + "y has shape [1024, 6]; expected [1024, 7] like x");
  expect_error(backend->rms_norm(x, view(b, 1024), -1.0f, view(c, 1024, 7)), p + "eps = -1 must be finite and >= 0");
  expect_error(backend->rms_norm(x, view(b, 1024), std::numeric_limits<float>::quiet_NaN(), view(c, 1024, 7)),
               p + "eps = nan must be finite and >= 0");
  expect_error(backend->rms_norm(x, view(b, 1024), 1e-6f, graft::f32_view(a.data() + 1, 1024, 7)),
               p + "y partially overlaps x; in place needs y and x to be the same memory");
  expect_error(backend->rms_norm(x, view(c, 1024), 1e-6f, view(c, 1024, 7)), p + "y overlaps w");
}

TEST_P(OpErrors, Rope) {
  const std::string p = "cpu backend: rope: ";
  const std::int32_t pos_values[7] = {};
  const TensorView pos = idx(pos_values, 7);
  auto x = view(a, 128, 8, 7);
  auto y = view(c, 128, 8, 7);
  RopeParams rp;
  rp.n_rot = 128;
  for (std::int32_t n_rot : {0, 63, 130, -2}) {
    RopeParams bad = rp;
    bad.n_rot = n_rot;
    expect_error(backend->rope(x, pos, bad, y),
                 p + "n_rot = " + std::to_string(n_rot) + " must be even and between 2 and head_dim = 128");
  }
  RopeParams bad = rp;
  bad.freq_base = 0.0f;
  expect_error(backend->rope(x, pos, bad, y), p + "freq_base = 0 must be positive and finite");
  bad = rp;
  bad.freq_scale = std::numeric_limits<float>::quiet_NaN();
  expect_error(backend->rope(x, pos, bad, y), p + "freq_scale = nan must be positive and finite");
  bad.freq_scale = std::numeric_limits<float>::infinity();
  expect_error(backend->rope(x, pos, bad, y), p + "freq_scale = inf must be positive and finite");
  expect_error(backend->rope(x, TensorView{}, rp, y), p + "positions is null");
  expect_error(backend->rope(x, idx(pos_values, 6), rp, y), p + "positions has shape [6]; expected [7]");
  TensorView float_pos = pos;
  float_pos.type = graft::type_id::f32;
  expect_error(backend->rope(x, float_pos, rp, y), p + "positions has type f32; expected i32");
  auto x4 = x;
  x4.n_dims = 4;
  x4.ne = {128, 4, 7, 2};
  x4.nb = {4, 4 * 128, 4 * 128 * 4, 4 * 128 * 4 * 7};
  expect_error(backend->rope(x4, pos, rp, y), p + "x has shape [128, 4, 7, 2]; expected [head_dim, n_heads, n_tokens]");
  expect_error(backend->rope(x, pos, rp, view(c, 128, 8, 6)), p + "y has shape [128, 8, 6]; expected [128, 8, 7] like x");
}

TEST_P(OpErrors, AddAndSiluMul) {
  auto y = view(c, 1024, 7);
  expect_error(backend->add(view(a, 1024, 7), view(b, 1024, 2), y),
               "cpu backend: add: b has shape [1024, 2]; expected [1024, 7] like a, or one row of 1024");
  expect_error(backend->add(view(a, 1024, 7), view(b, 512), y),
               "cpu backend: add: b has shape [512]; expected [1024, 7] like a, or one row of 1024");
  // y = a + a[row 0] would rewrite the broadcast row while other rows still read it
  expect_error(backend->add(view(a, 1024, 7), view(a, 1024), view(a, 1024, 7)),
               "cpu backend: add: y overlaps b, which is broadcast over the rows");
  auto i32 = view(a, 1024, 7);
  i32.type = type_id::i32;
  expect_error(backend->add(i32, view(b, 1024, 7), y), "cpu backend: add: a has type i32; expected f32");
  expect_error(backend->add(view(a, 1024, 7), view(b, 1024, 7), view(c, 1024)),
               "cpu backend: add: y has shape [1024]; expected [1024, 7] like a");
  expect_error(backend->add(view(a, 1024, 7), view(b, 1024, 7), graft::f32_view(b.data() + 4, 1024, 7)),
               "cpu backend: add: y partially overlaps b; in place needs y and b to be the same memory");
  auto bf = y;
  bf.type = type_id::bf16;
  expect_error(backend->add(view(a, 1024, 7), view(b, 1024, 7), bf), "cpu backend: add: y has type bf16; expected f32");

  expect_error(backend->silu_mul(view(a, 1024, 7), view(b, 1024, 6), y),
               "cpu backend: silu_mul: up has shape [1024, 6]; expected [1024, 7] like gate");
  expect_error(backend->silu_mul(view(a, 1024, 4), view(b, 1024, 4), graft::f32_view(a.data() + 1024, 1024, 4)),
               "cpu backend: silu_mul: y partially overlaps gate; in place needs y and gate to be the same memory");
}

TEST_P(OpErrors, EmptyBatchesAreNotErrors) {
  auto empty = view(a, 1024);
  empty.ne[1] = 0;
  empty.n_dims = 2;
  EXPECT_TRUE(backend->rms_norm(empty, view(b, 1024), 1e-6f, empty).ok());
  EXPECT_TRUE(backend->add(empty, empty, empty).ok());
  EXPECT_TRUE(backend->silu_mul(empty, empty, empty).ok());
  auto no_tokens = view(a, 128, 8);
  no_tokens.n_dims = 3;
  no_tokens.ne[2] = 0;
  RopeParams rp;
  rp.n_rot = 128;
  EXPECT_TRUE(backend->rope(no_tokens, TensorView{}, rp, no_tokens).ok());
}

}  // namespace
