// graft's CUDA kernel library (plugins/backends/cuda/kernels): without a GPU it loads and claims its
// types; with one, each format's matmul and get_rows against the CPU kernels of the same format
// on the same quantized weights, and the device KV store's attention against the CPU store's, with
// the tolerances named below.
#include <cstring>
#include <map>

#include "cuda_fixture.hpp"

using namespace cuda_test;
using graft::KernelLibrary;
using graft::MemoryKind;
using graft::TypeId;
using graft::WeightFormat;

namespace {

const graft::DefaultHostServices& host() {
  static const graft::DefaultHostServices h;
  return h;
}

std::shared_ptr<graft::PluginLibrary> library(const std::string& file) {
  static std::map<std::string, std::shared_ptr<graft::PluginLibrary>> cache;
  auto& lib = cache[file];
  if (!lib) {
    auto l = graft::PluginLibrary::load(std::filesystem::path(GRAFT_PLUGIN_DIR) / file);
    EXPECT_TRUE(l) << file << ": " << l.status().message();
    if (l) lib = *l;
  }
  return lib;
}

std::shared_ptr<KernelLibrary> kernels() {
  auto lib = library("libgraft_kernels_cuda.so");
  if (!lib) return nullptr;
  auto k = lib->create<KernelLibrary>(host(), graft::Config{});
  EXPECT_TRUE(k) << k.status().message();
  return k ? *k : nullptr;
}

std::shared_ptr<WeightFormat> format(const std::string& name) {
  auto lib = library("libgraft_quant_" + name + ".so");
  if (!lib) return nullptr;
  auto f = lib->create<WeightFormat>(host(), graft::Config{});
  EXPECT_TRUE(f) << f.status().message();
  return f ? *f : nullptr;
}

TEST(CudaKernels, TheLibraryLoadsWithoutAGpuAndClaimsItsTypes) {
  auto k = kernels();
  ASSERT_TRUE(k);
  EXPECT_EQ(k->backend(), "cuda");
  const std::vector<TypeId> want = {graft::type_id::f32, graft::type_id::f16, graft::type_id::bf16,
                                    graft::type_id::q8_0, graft::type_id::q4_k, graft::type_id::q1_0};
  EXPECT_EQ(std::vector<TypeId>(k->types().begin(), k->types().end()), want);
  for (TypeId t : want) EXPECT_NE(k->kernels(t), nullptr) << t;
  EXPECT_EQ(k->kernels(graft::type_id::q4_0), nullptr);
  EXPECT_TRUE(k->has_kv_store("device"));
  EXPECT_FALSE(k->has_kv_store("quant"));
}

// ---- with a GPU ----

// Dense weights: the GPU sums each product in f32 (fused multiply-adds, in 32-element chunks);
// the CPU's order differs. Relative to sum |w x| of the output.
constexpr double kDenseTol = 1e-5;
// Quantized weights: the CPU kernels quantize x to 8 bits (as ggml's do), the GPU reads it in f32:
// an error of up to half a step of x's 8-bit scale per element.
constexpr double kQuantTol = 1.5e-2;
// get_rows decodes the same bytes with the same operations: bit for bit.

struct TypeCase {
  const char* name;
  TypeId id;
  double tol;
};

class OnGpuKernels : public OnGpu, public ::testing::WithParamInterface<TypeCase> {};

TEST_P(OnGpuKernels, MatmulAndGetRowsMatchTheCpuKernels) {
  const TypeCase& c = GetParam();
  auto lib = kernels();
  auto f = format(c.name);
  ASSERT_TRUE(lib && f);
  const std::int64_t k = 4096, m = 512;
  const auto traits = *std::find_if(f->types().begin(), f->types().end(), [&](const auto& t) { return t.id == c.id; });
  const std::size_t row_bytes = k / traits.block_elems * traits.block_bytes;
  const auto wf = random_floats(k * m, -1, 1, 11);
  std::vector<std::uint8_t> q(row_bytes * m);
  ASSERT_TRUE(f->quantize(c.id, wf.data(), q.data(), m, k, nullptr).ok());
  TensorView w;
  w.data = q.data();
  w.type = c.id;
  w.n_dims = 2;
  w.ne = {k, m, 1, 1};
  w.nb = {traits.block_bytes, row_bytes, row_bytes * m, row_bytes * m};
  std::vector<float> deq(k * m);
  ASSERT_TRUE(f->dequantize(c.id, q.data(), deq.data(), k * m).ok());

  graft::FormatKernels* gk = lib->kernels(c.id);
  ASSERT_TRUE(gk);
  std::unique_ptr<graft::PreparedWeights> prepared;
  ASSERT_TRUE(gk->prepare(*cuda, w, prepared).ok());
  ASSERT_TRUE(prepared);
  std::vector<float> first_row;  // n = 1's outputs: every batch must reproduce them bit for bit
  for (std::int64_t n : {1, 3, 8, 9, 64}) {
    auto x = random_floats(k * n, -2, 2, 100 + static_cast<std::uint32_t>(n));
    std::copy_n(random_floats(k, -2, 2, 101).begin(), k, x.begin());  // row 0 the same in every batch
    std::vector<float> want(m * n);
    ASSERT_TRUE(f->kernels("cpu")->matmul(*cpu, w, view(x, k, n), view(want, m, n)).ok());
    float *dx = upload(x), *dy = upload(std::vector<float>(m * n));
    const graft::Status st = gk->matmul(*cuda, w, prepared.get(), dev(dx, k, n), dev(dy, m, n));
    ASSERT_TRUE(st.ok()) << st.message();
    const auto got = download(dy, m * n);
    double worst = 0;
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t r = 0; r < m; ++r) {
        double mag = 0;
        for (std::int64_t e = 0; e < k; ++e) mag += std::abs(double(deq[r * k + e]) * x[j * k + e]);
        worst = std::max(worst, std::abs(double(got[j * m + r]) - want[j * m + r]) / std::max(mag, 1e-30));
      }
    EXPECT_LE(worst, c.tol) << c.name << " n = " << n;
    if (n == 1) first_row.assign(got.begin(), got.begin() + m);
    else EXPECT_EQ(std::memcmp(got.data(), first_row.data(), m * sizeof(float)), 0) << "row 0 of a batch of " << n;
  }
  const std::vector<std::int32_t> ids = {0, 511, 7, 7, 300};
  std::int32_t* di = upload(ids);
  float* dy = upload(std::vector<float>(k * ids.size()));
  ASSERT_TRUE(gk->get_rows(*cuda, w, prepared.get(), graft::i32_view(di, 5, MemoryKind::device), dev(dy, k, 5)).ok());
  const auto rows = download(dy, k * ids.size());
  for (std::size_t j = 0; j < ids.size(); ++j)
    EXPECT_EQ(std::memcmp(rows.data() + j * k, deq.data() + ids[j] * k, k * sizeof(float)), 0) << "row " << ids[j];
  // Host memory is refused by name.
  std::vector<float> hx(k), hy(m);
  EXPECT_EQ(gk->matmul(*cuda, w, prepared.get(), view(hx, k), dev(dy, m)).message(),
            "cuda kernels: matmul: x is in host memory; the CUDA kernels read device or pinned host memory");
}

INSTANTIATE_TEST_SUITE_P(types, OnGpuKernels,
                         ::testing::Values(TypeCase{"f32", graft::type_id::f32, kDenseTol},
                                           TypeCase{"f16", graft::type_id::f16, kDenseTol},
                                           TypeCase{"bf16", graft::type_id::bf16, kDenseTol},
                                           TypeCase{"q8_0", graft::type_id::q8_0, kQuantTol},
                                           TypeCase{"q4_k", graft::type_id::q4_k, kQuantTol},
                                           TypeCase{"q1_0", graft::type_id::q1_0, kQuantTol}),
                         [](const auto& info) { return std::string(info.param.name); });

// Attention over f16 K/V: the GPU's expf and summation order against the CPU store's polynomial
// exp and order; both round K/V to f16 the same way.
constexpr double kAttentionAbsTol = 2e-5;

TEST_F(OnGpu, TheDeviceKvStoreAttendsAsTheCpuStoreDoes) {
  auto lib = kernels();
  auto kvlib = library("libgraft_kvstore_device.so");
  ASSERT_TRUE(lib && kvlib);
  auto factory = kvlib->create<graft::KvStoreFactory>(host(), graft::Config{});
  ASSERT_TRUE(factory) << factory.status().message();
  const graft::KvGeometry g{2, 2, 128, 128, 96};
  const std::uint32_t H = 8, n_past = 41;
  auto cpu_store = (*factory)->create(*cpu, g);
  auto gpu_store = lib->create_kv_store("device", graft::Config{}, *cuda, g);
  ASSERT_TRUE(cpu_store && gpu_store) << gpu_store.status().message();
  auto both = [&](auto&& f) {
    f(**cpu_store, false);
    f(**gpu_store, true);
  };
  // The prefix, then a tree of 5 rows: 0 -+- 1, 0 -- 2 -- 3, and 4.
  const std::vector<int> parent = {-1, 0, 0, 2, -1};
  const std::uint32_t nt = 5;
  std::vector<std::uint8_t> mask(nt * nt, 0);
  for (std::uint32_t i = 0; i < nt; ++i)
    for (int j = int(i); j >= 0; j = parent[j]) mask[i * nt + j] = 1;
  for (std::uint32_t layer = 0; layer < g.n_layers; ++layer) {
    auto k = random_floats(128 * 2 * (n_past + nt), -1, 1, 20 + layer), v = random_floats(128 * 2 * (n_past + nt), -1, 1, 30 + layer);
    float *dk = upload(k), *dv = upload(v);
    both([&](graft::KvStore& s, bool gpu) {
      const auto kv = gpu ? dev(dk, 128, 2, n_past + nt) : view(k, 128, 2, n_past + nt);
      const auto vv = gpu ? dev(dv, 128, 2, n_past + nt) : view(v, 128, 2, n_past + nt);
      ASSERT_TRUE(s.write(layer, 0, n_past + nt, kv, vv).ok());
    });
  }
  auto mask_dev = cuda->allocate(mask.size(), MemoryKind::device);
  ASSERT_TRUE(mask_dev);
  ASSERT_TRUE(cuda->copy((*mask_dev)->data(), MemoryKind::device, mask.data(), MemoryKind::host, mask.size()).ok());
  const auto q = random_floats(128 * H * nt, -1, 1, 40);
  float* dq = upload(q);
  float* dout = upload(std::vector<float>(128 * H * nt));
  for (bool tree : {false, true}) {
    graft::AttentionBatch b;
    b.n_query = nt;
    b.n_past = n_past;
    b.scale = 1.0f / std::sqrt(128.0f);
    std::vector<float> want(128 * H * nt), qc = q;
    b.ancestor = tree ? graft::i8_view(mask.data(), nt, nt) : TensorView{};
    ASSERT_TRUE((*cpu_store)->attend(1, view(qc, 128, H, nt), b, view(want, 128, H, nt)).ok());
    b.ancestor = tree ? graft::i8_view(static_cast<std::uint8_t*>((*mask_dev)->data()), nt, nt, MemoryKind::device) : TensorView{};
    const graft::Status st = (*gpu_store)->attend(1, dev(dq, 128, H, nt), b, dev(dout, 128, H, nt));
    ASSERT_TRUE(st.ok()) << st.message();
    const auto got = download(dout, want.size());
    double worst = 0;
    for (std::size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::abs(double(got[i]) - want[i]));
    EXPECT_LE(worst, kAttentionAbsTol) << (tree ? "tree" : "causal");
  }
  // Keep the path 0, 2, 3 after the prefix; a single query then sees it as the CPU's does.
  const std::vector<std::uint32_t> path = {n_past, n_past + 2, n_past + 3};
  both([&](graft::KvStore& s, bool) {
    ASSERT_TRUE(s.compact(n_past, path).ok());
    EXPECT_EQ(s.size(), n_past + 3);
  });
  graft::AttentionBatch b;
  b.n_query = 1;
  b.n_past = n_past + 2;
  b.scale = 0.1f;
  std::vector<float> want(128 * H), qc(q.begin(), q.begin() + 128 * H);
  ASSERT_TRUE((*cpu_store)->attend(0, view(qc, 128, H, 1), b, view(want, 128, H, 1)).ok());
  ASSERT_TRUE((*gpu_store)->attend(0, dev(dq, 128, H, 1), b, dev(dout, 128, H, 1)).ok());
  const auto got = download(dout, want.size());
  double worst = 0;
  for (std::size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::abs(double(got[i]) - want[i]));
  EXPECT_LE(worst, kAttentionAbsTol) << "after compact";
}

}  // namespace
