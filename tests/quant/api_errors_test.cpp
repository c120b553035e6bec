// What the plugins declare and how they refuse bad input: type geometry, check_tensor, exact error
// texts for bad shapes, kernels only for "cpu", and the simd level switch.
#include <cstdlib>

#include "quant_test_util.hpp"

using namespace quant_test;

TEST(FormatApi, DeclaresGgmlIdsAndGeometry) {
  struct Want {
    std::string name;
    TypeId id;
    std::uint32_t elems, bytes;
  };
  for (const Want& w : {Want{"f32", 0, 1, 4}, Want{"f16", 1, 1, 2}, Want{"bf16", 30, 1, 2}, Want{"q8_0", 8, 32, 34},
                        Want{"q4_0", 2, 32, 18}}) {
    auto f = format(w.name);
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(f->types().size(), 1u);
    const TypeTraits t = f->types()[0];
    EXPECT_EQ(t.id, w.id) << w.name;
    EXPECT_EQ(std::string(t.name), w.name);
    EXPECT_EQ(t.block_elems, w.elems) << w.name;
    EXPECT_EQ(t.block_bytes, w.bytes) << w.name;
  }
}

TEST(FormatApi, KernelsOnlyForTheCpuBackend) {
  for (const auto& name : kFormats) {
    auto f = format(name);
    EXPECT_NE(f->kernels("cpu"), nullptr) << name;
    EXPECT_EQ(f->kernels("cuda"), nullptr) << name;
    EXPECT_EQ(f->kernels(""), nullptr) << name;
  }
}

TEST(FormatApi, CheckTensor) {
  auto f = format("q4_0");
  const std::int64_t good[] = {64, 3};
  EXPECT_TRUE(f->check_tensor(type_id::q4_0, good, 2, 3 * 2 * 18).ok());
  const std::int64_t odd[] = {48, 3};
  EXPECT_EQ(f->check_tensor(type_id::q4_0, odd, 2, 0).message(),
            "q4_0 tensor: row length 48 is not a multiple of the block size 32");
  EXPECT_EQ(f->check_tensor(type_id::q4_0, good, 2, 100).message(), "q4_0 tensor: 100 bytes, expected 108 for its shape");
  EXPECT_EQ(f->check_tensor(type_id::q8_0, good, 2, 108).message(), "q4_0 tensor: type id 8 is not 2 (q4_0)");
  EXPECT_EQ(f->check_tensor(type_id::q4_0, good, 5, 108).message(), "q4_0 tensor: n_dims 5 is outside 1..4");
  const std::int64_t negative[] = {64, -1};
  EXPECT_EQ(f->check_tensor(type_id::q4_0, negative, 2, 0).message(), "q4_0 tensor: dimension 1 is negative");
  const std::int64_t f32_shape[] = {7, 3, 2};
  EXPECT_TRUE(format("f32")->check_tensor(type_id::f32, f32_shape, 3, 7 * 3 * 2 * 4).ok());
}

TEST(FormatApi, QuantizeAndDequantizeRefuseBadSizes) {
  auto f = format("q8_0");
  float x[40] = {};
  std::uint8_t q[68];
  EXPECT_EQ(f->quantize(type_id::q8_0, x, q, 1, 40, nullptr).message(),
            "q8_0 quantize: row length 40 is not a multiple of the block size 32");
  EXPECT_EQ(f->dequantize(type_id::q8_0, q, x, 33).message(),
            "q8_0 dequantize: element count 33 is not a multiple of the block size 32");
  EXPECT_EQ(f->quantize(type_id::q4_0, x, q, 1, 32, nullptr).message(), "q8_0 quantize: type id 2 is not 8 (q8_0)");
  EXPECT_EQ(f->quantize(type_id::q8_0, x, q, -1, 32, nullptr).message(), "q8_0 quantize: negative row count -1");
  EXPECT_TRUE(f->quantize(type_id::q8_0, x, q, 0, 32, nullptr).ok());
}

TEST(FormatApi, MatmulRefusesBadShapesWithExactMessages) {
  auto f = format("q8_0");
  const TypeTraits t = traits(*f);
  auto& b = *cpu(2);
  std::vector<std::uint8_t> q(34 * 2 * 8);
  std::vector<float> x(64 * 3), y(8 * 3);
  const TensorView w = weight_view(q.data(), t, 64, 8);
  FormatKernels& k = *f->kernels("cpu");
  auto msg = [](Status s) { return s.message(); };
  EXPECT_TRUE(k.matmul(b, w, f32_view(x.data(), 64, 3), f32_view(y.data(), 8, 3)).ok());

  EXPECT_EQ(msg(k.matmul(b, weight_view(q.data(), traits(*format("q4_0")), 64, 8), f32_view(x.data(), 64, 3),
                         f32_view(y.data(), 8, 3))),
            "q8_0 matmul: weight type id 2 is not 8 (q8_0)");
  TensorView odd = w;
  odd.ne[0] = 48;
  EXPECT_EQ(msg(k.matmul(b, odd, f32_view(x.data(), 48, 3), f32_view(y.data(), 8, 3))),
            "q8_0 matmul: weight row length 48 is not a multiple of the block size 32");
  TensorView three_d = w;
  three_d.ne[2] = 2;
  EXPECT_EQ(msg(k.matmul(b, three_d, f32_view(x.data(), 64, 3), f32_view(y.data(), 8, 3))),
            "q8_0 matmul: weight tensor must be 2-D [k, rows], got [64, 8, 2]");
  TensorView narrow = w;
  narrow.nb[1] = 40;
  EXPECT_EQ(msg(k.matmul(b, narrow, f32_view(x.data(), 64, 3), f32_view(y.data(), 8, 3))),
            "q8_0 matmul: weight row stride 40 is smaller than a row (68 bytes)");
  EXPECT_EQ(msg(k.matmul(b, w, f32_view(x.data(), 32, 3), f32_view(y.data(), 8, 3))),
            "q8_0 matmul: x is [32, 3], expected 64 columns");
  EXPECT_EQ(msg(k.matmul(b, w, f32_view(x.data(), 64, 3), f32_view(y.data(), 7, 3))),
            "q8_0 matmul: y is [7, 3], expected 8 x 3");
  EXPECT_EQ(msg(k.matmul(b, w, f32_view(x.data(), 64, 3), f32_view(y.data(), 8, 2))),
            "q8_0 matmul: y is [8, 2], expected 8 x 3");
  TensorView xf16 = f32_view(x.data(), 64, 3);
  xf16.type = type_id::f16;
  EXPECT_EQ(msg(k.matmul(b, w, xf16, f32_view(y.data(), 8, 3))), "q8_0 matmul: x must be f32, got type id 1");
  TensorView strided = f32_view(x.data(), 32, 3);
  strided.ne[0] = 64;  // rows 32 floats apart while claiming 64 columns
  EXPECT_EQ(msg(k.matmul(b, w, strided, f32_view(y.data(), 8, 3))), "q8_0 matmul: x must be contiguous");
  EXPECT_EQ(msg(k.matmul(b, w, f32_view(x.data(), 64, 3), f32_view(x.data() + 8, 8, 3))), "q8_0 matmul: y overlaps x");
  TensorView no_data = w;
  no_data.data = nullptr;
  EXPECT_EQ(msg(k.matmul(b, no_data, f32_view(x.data(), 64, 3), f32_view(y.data(), 8, 3))),
            "q8_0 matmul: weight tensor has no data");
}

TEST(FormatApi, GetRowsRefusesBadInput) {
  auto f = format("q4_0");
  std::vector<std::uint8_t> q(18 * 2 * 4);
  std::vector<float> y(64 * 2);
  const TensorView table = weight_view(q.data(), traits(*f), 64, 4);
  FormatKernels& k = *f->kernels("cpu");
  const std::int32_t bad[] = {1, 4};
  auto ids = [](const std::int32_t* p, std::int64_t n) { return i32_view(const_cast<std::int32_t*>(p), n); };
  EXPECT_EQ(k.get_rows(*cpu(1), table, nullptr, ids(bad, 2), f32_view(y.data(), 64, 2)).message(),
            "q4_0 get_rows: row id 4 is out of range for a table of 4 rows");
  const std::int32_t negative[] = {-1, 0};
  EXPECT_EQ(k.get_rows(*cpu(1), table, nullptr, ids(negative, 2), f32_view(y.data(), 64, 2)).message(),
            "q4_0 get_rows: row id -1 is out of range for a table of 4 rows");
  const std::int32_t ok[] = {0, 3};
  EXPECT_EQ(k.get_rows(*cpu(1), table, nullptr, ids(ok, 2), f32_view(y.data(), 32, 2)).message(),
            "q4_0 get_rows: y is [32, 2], expected 64 x 2");
  EXPECT_EQ(k.get_rows(*cpu(1), table, nullptr, ids(nullptr, 2), f32_view(y.data(), 64, 2)).message(), "q4_0 get_rows: ids is null");
  TensorView float_ids = ids(ok, 2);
  float_ids.type = type_id::f32;
  EXPECT_EQ(k.get_rows(*cpu(1), table, nullptr, float_ids, f32_view(y.data(), 64, 2)).message(),
            "q4_0 get_rows: ids must be a packed i32 vector");
}

namespace {
// The host names the plugin and its file before the plugin's own message.
std::string create_error(const std::string& name, const std::string& what) {
  return "quant plugin '" + name + "' (" + GRAFT_PLUGIN_DIR + "/libgraft_quant_" + name + ".so): " + what;
}
}  // namespace

TEST(FormatApi, SimdLevelSwitch) {
  auto unknown = try_format("q8_0", "sse9");
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.status().message(),
            create_error("q8_0", "unknown simd level 'sse9' (expected auto, scalar, avx2, avx512 or amx)"));
  EXPECT_TRUE(try_format("f16", "scalar"));
  EXPECT_TRUE(try_format("f16", "auto"));
  // The environment variable applies when the config has no "simd" key; the key wins over it.
  ::setenv("GRAFT_CPU_SIMD", "bogus", 1);
  auto from_env = try_format("q4_0");
  EXPECT_TRUE(try_format("q4_0", "scalar"));
  ::unsetenv("GRAFT_CPU_SIMD");
  ASSERT_FALSE(from_env);
  EXPECT_EQ(from_env.status().message(),
            create_error("q4_0", "GRAFT_CPU_SIMD: unknown simd level 'bogus' (expected auto, scalar, avx2, avx512 or amx)"));
  for (const auto& level : kLevels) {
    auto f = try_format("q8_0", level);
    if (f) continue;
    EXPECT_EQ(f.status().code(), Errc::unsupported) << level;
    EXPECT_NE(f.status().message().find("is not supported by this CPU"), std::string::npos) << f.status().message();
  }
}
