// The device store's descriptor, configuration, memory accounting and argument errors.
#include "kv_test_util.hpp"

using namespace kvtest;

namespace {

// A backend that looks like a GPU (a native stream) or cannot allocate: the two ways creation
// must fail cleanly.
class FakeBackend final : public Backend {
 public:
  explicit FakeBackend(bool gpu) : gpu_(gpu) {}
  std::string_view name() const noexcept override { return gpu_ ? "fakegpu" : "fake"; }
  Status status() const override { return Status::success(); }
  std::vector<DeviceInfo> devices() const override {
    DeviceInfo d;
    d.name = "Fake H200";
    return {d};
  }
  Expected<std::unique_ptr<Buffer>> allocate(std::size_t bytes, MemoryKind) override {
    return Status(Errc::out_of_memory, "fake: cannot allocate " + std::to_string(bytes) + " bytes");
  }
  Status copy(void*, MemoryKind, const void*, MemoryKind, std::size_t) override { return not_implemented("copy"); }
  Status copy_async(void*, MemoryKind, const void*, MemoryKind, std::size_t) override { return not_implemented("copy"); }
  Status synchronize() override { return Status::success(); }
  Expected<std::unique_ptr<Event>> record_event() override { return not_implemented("event"); }
  bool graphs_supported() const noexcept override { return false; }
  Status begin_capture() override { return not_implemented("graphs"); }
  Status end_capture(std::unique_ptr<Graph>&) override { return not_implemented("graphs"); }
  Status top_k(const TensorView&, std::uint32_t, const TensorView&, const TensorView&) override {
    return not_implemented("x");
  }
  Status softmax(const TensorView&, const TensorView&) override { return not_implemented("x"); }
  unsigned n_threads() const noexcept override { return 1; }
  void parallel_for(std::size_t n, const std::function<void(std::size_t, std::size_t)>& fn) override { fn(0, n); }
  void* native_stream() noexcept override { return gpu_ ? this : nullptr; }
  bool host_accessible(graft::MemoryKind kind) const noexcept override { return !gpu_ || kind != graft::MemoryKind::device; }
  Status rms_norm(const TensorView&, const TensorView&, float, const TensorView&) override {
    return not_implemented("x");
  }
  Status rope(const TensorView&, const TensorView&, const RopeParams&, const TensorView&) override {
    return not_implemented("x");
  }
  Status add(const TensorView&, const TensorView&, const TensorView&) override { return not_implemented("x"); }
  Status silu_mul(const TensorView&, const TensorView&, const TensorView&) override { return not_implemented("x"); }
  Status sigmoid_mul(const TensorView&, const TensorView&, const TensorView&) override { return not_implemented("x"); }
  Status l2_norm(const TensorView&, float, const TensorView&) override { return not_implemented("x"); }
  Status delta_net_gates(const TensorView&, const TensorView&, const TensorView&, const TensorView&, const TensorView&,
                         const TensorView&) override {
    return not_implemented("x");
  }
  Status causal_conv_silu(const TensorView&, const TensorView&, const TensorView&, const TensorView&, const TensorView&,
                          const TensorView&) override {
    return not_implemented("x");
  }
  Status gated_delta_net(const TensorView&, const TensorView&, const TensorView&, const TensorView&, const TensorView&,
                         const TensorView&, const TensorView&, const TensorView&, const TensorView&,
                         const TensorView&) override {
    return not_implemented("x");
  }
  Status delta_net_apply(const TensorView&, const TensorView&, const TensorView&, const TensorView&,
                         const TensorView&) override {
    return not_implemented("x");
  }
  Status conv_window_advance(const TensorView&, const TensorView&, const TensorView&) override {
    return not_implemented("x");
  }

 private:
  bool gpu_;
};

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST(kvDeviceStore, DescriptorDeclaresTheTypeKey) {
  auto lib = kv_library();
  ASSERT_TRUE(lib);
  EXPECT_EQ(lib->kind(), PluginKind::kv_store);
  EXPECT_EQ(lib->name(), "device");
  const auto keys = lib->config_keys();
  ASSERT_EQ(keys.size(), 1u);
  EXPECT_STREQ(keys[0].key, "type");
  EXPECT_EQ(keys[0].type, ConfigType::string);
  EXPECT_FALSE(keys[0].required);
}

TEST(kvDeviceStore, UnknownTypeListsTheValidOnes) {
  auto f = kv_factory("bf16");
  ASSERT_FALSE(f);
  EXPECT_EQ(f.status().code(), Errc::invalid_argument);
  EXPECT_TRUE(contains(f.status().message(), "type = \"bf16\" is not supported; valid types: f16, f32"))
      << f.status().message();
  // The host validates key types against the descriptor; a direct caller still gets an error.
  DefaultHostServices host;
  Config cfg;
  cfg.set("type", std::int64_t{16});
  auto wrong = kv_library()->create<KvStoreFactory>(host, cfg);
  ASSERT_FALSE(wrong);
  EXPECT_TRUE(contains(wrong.status().message(), "type must be a string")) << wrong.status().message();
}

// Per token: layers * kv_heads * (head_dim_k + head_dim_v) * element size; the store allocates
// exactly capacity times that, all as device memory.
TEST(kvDeviceStore, MemoryAccountingAndLosslessness) {
  const KvGeometry g = geometry(4, 8, 128, 64, 100);
  struct Want {
    std::string type;
    std::uint64_t per_token;
    bool lossless;
  };
  for (const Want& w : {Want{"", 4 * 8 * 192 * 2, false}, Want{"f16", 12288, false}, Want{"f32", 24576, true}}) {
    SCOPED_TRACE("type '" + w.type + "'");
    auto f = kv_factory(w.type);
    ASSERT_TRUE(f) << f.status().message();
    EXPECT_EQ((*f)->bytes_per_token(g), w.per_token);
    auto backend = cpu_backend(1);
    auto s = (*f)->create(*backend, g);
    ASSERT_TRUE(s) << s.status().message();
    EXPECT_EQ((*s)->memory().device_bytes, 100 * w.per_token);
    EXPECT_EQ((*s)->memory().host_bytes, 0u);
    EXPECT_EQ((*s)->lossless(), w.lossless);
    EXPECT_EQ((*s)->size(), 0u);
    const KvGeometry got = (*s)->geometry();
    EXPECT_EQ(got.n_layers, 4u);
    EXPECT_EQ(got.head_dim_v, 64u);
    EXPECT_EQ(got.capacity, 100u);
  }
  auto f = kv_factory("f32");
  ASSERT_TRUE(f);
  // A geometry whose byte count does not fit 64 bits saturates instead of wrapping.
  EXPECT_EQ((*f)->bytes_per_token(geometry(0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu, 1, 1)), UINT64_MAX);
}

TEST(kvDeviceStore, ContextFullSaysWhatToDo) {
  Harness h("f16", geometry(2, 2, 16, 16, 512));
  h.write_random(0, 510);
  const std::vector<float> four(16 * 2 * 4, 0.25f);
  Status st = h.store->write(0, 510, 4, h.kview(four, 4), h.vview(four, 4));
  EXPECT_EQ(st.code(), Errc::out_of_range);
  EXPECT_EQ(st.message(),
            "kvstore device: context full: writing slots [510, 514) needs room for 514 tokens but the "
            "KV cache holds 512; raise [context] size in the profile (or pass --ctx)");
  EXPECT_EQ(h.store->size(), 510u);
  const std::vector<float> two(16 * 2 * 2, 0.25f);
  for (std::uint32_t l = 0; l < 2; ++l) EXPECT_TRUE(h.store->write(l, 510, 2, h.kview(two, 2), h.vview(two, 2)).ok());
  EXPECT_EQ(h.store->size(), 512u);
}

TEST(kvDeviceStore, ShapeErrorsNameTheArgument) {
  Harness h("f32", geometry(2, 2, 16, 8, 64));
  std::vector<float> buf(16 * 4 * 3, 0.5f);
  const TensorView k3 = f32_view(buf.data(), 16, 2, 3), v3 = f32_view(buf.data(), 8, 2, 3);
  auto expect = [](const Status& st, Errc code, const std::string& message) {
    EXPECT_EQ(st.code(), code);
    EXPECT_EQ(st.message(), message);
  };
  expect(h.store->write(0, 0, 3, f32_view(buf.data(), 8, 2, 3), v3), Errc::invalid_argument,
         "kvstore device: write: k has shape [8, 2, 3], expected [16, 2, 3] = [head_dim_k, n_kv_heads, n]");
  expect(h.store->write(0, 0, 2, f32_view(buf.data(), 16, 2, 2), v3), Errc::invalid_argument,
         "kvstore device: write: v has shape [8, 2, 3], expected [8, 2, 2] = [head_dim_v, n_kv_heads, n]");
  TensorView f16k = k3;
  f16k.type = type_id::f16;
  expect(h.store->write(0, 0, 3, f16k, v3), Errc::invalid_argument,
         "kvstore device: write: k must be f32 (type id 0), got type id 1");
  TensorView gappy = k3;
  gappy.nb[0] = 8;
  EXPECT_EQ(h.store->write(0, 0, 3, gappy, v3).code(), Errc::invalid_argument);
  TensorView overlapping = k3;  // token 1's rows would start inside token 0's
  overlapping.nb[2] = overlapping.nb[1];
  expect(h.store->write(0, 0, 3, overlapping, v3), Errc::invalid_argument,
         "kvstore device: write: k has strides [4, 64, 64]; rows must be contiguous floats and must not overlap");
  TensorView null = k3;
  null.data = nullptr;
  expect(h.store->write(0, 0, 3, null, v3), Errc::invalid_argument,
         "kvstore device: write: k has no data (null pointer)");
  expect(h.store->write(2, 0, 3, k3, v3), Errc::invalid_argument,
         "kvstore device: write: layer 2 does not exist (the store has 2 layers)");
  EXPECT_EQ(h.store->size(), 0u) << "a refused write changes nothing";

  for (std::uint32_t l = 0; l < 2; ++l) ASSERT_TRUE(h.store->write(l, 0, 3, k3, v3).ok());
  AttentionBatch b;
  b.n_query = 1;
  b.n_past = 2;
  std::vector<float> q(16 * 4), out(8 * 4);
  expect(h.store->attend(0, f32_view(q.data(), 16, 3, 1), b, f32_view(out.data(), 8, 3, 1)), Errc::invalid_argument,
         "kvstore device: attend: q has 3 heads, which is not a positive multiple of the 2 KV heads");
  expect(h.store->attend(0, f32_view(q.data(), 16, 4, 1), b, f32_view(out.data(), 16, 2, 1)), Errc::invalid_argument,
         "kvstore device: attend: out has shape [16, 2, 1], expected [8, 4, 1] = [head_dim_v, n_heads, n_query]");
  expect(h.store->attend(0, f32_view(q.data(), 16, 4, 2), b, f32_view(out.data(), 8, 4, 1)), Errc::invalid_argument,
         "kvstore device: attend: q has shape [16, 4, 2], expected [16, 4, 1] = [head_dim_k, n_heads, n_query]");
  b.n_past = 3;
  expect(h.store->attend(1, f32_view(q.data(), 16, 4, 1), b, f32_view(out.data(), 8, 4, 1)), Errc::out_of_range,
         "kvstore device: attend: the batch needs slots [0, 4) (n_past 3 + n_query 1) but layer 1 has 3 filled; "
         "write the batch's K/V first");
  b.n_past = 2;
  b.scale = NAN;
  EXPECT_EQ(h.store->attend(0, f32_view(q.data(), 16, 4, 1), b, f32_view(out.data(), 8, 4, 1)).code(),
            Errc::invalid_argument);
  b.scale = 1.0f;
  EXPECT_TRUE(h.store->attend(0, f32_view(q.data(), 16, 4, 1), b, f32_view(out.data(), 8, 4, 1)).ok());
}

TEST(kvDeviceStore, CreationErrors) {
  auto f = kv_factory("f16");
  ASSERT_TRUE(f);
  auto cpu = cpu_backend(1);
  auto zero = (*f)->create(*cpu, geometry(2, 0, 64, 64, 16));
  ASSERT_FALSE(zero);
  EXPECT_EQ(zero.status().code(), Errc::invalid_argument);
  EXPECT_EQ(zero.status().message(), "kvstore device: geometry n_kv_heads is 0");

  FakeBackend gpu(true);
  auto on_gpu = (*f)->create(gpu, geometry(2, 2, 64, 64, 16));
  ASSERT_FALSE(on_gpu);
  EXPECT_EQ(on_gpu.status().code(), Errc::unsupported);
  EXPECT_EQ(on_gpu.status().message(),
            "kvstore device: no kernels for backend 'fakegpu' (its kernel library, libgraft_kernels_fakegpu.so, is "
            "missing or has no device store)");

  FakeBackend full(false);
  auto no_memory = (*f)->create(full, geometry(2, 2, 64, 64, 4096));
  ASSERT_FALSE(no_memory);
  EXPECT_EQ(no_memory.status().code(), Errc::out_of_memory);
  EXPECT_EQ(no_memory.status().message(),
            "kvstore device: cannot allocate the f16 KV cache (4 MiB for 4096 tokens): fake: cannot allocate 1048576 "
            "bytes; lower [context] size");
  auto f32 = kv_factory("f32");
  ASSERT_TRUE(f32);
  auto no_memory32 = (*f32)->create(full, geometry(2, 2, 64, 64, 4096));
  ASSERT_FALSE(no_memory32);
  EXPECT_TRUE(contains(no_memory32.status().message(), "lower [context] size or use type = \"f16\""))
      << no_memory32.status().message();
}

namespace {
// A kernel library that implements the "device" store on the fake GPU: records what it was given.
class FakeGpuKernels final : public KernelLibrary {
 public:
  std::string_view backend() const noexcept override { return "fakegpu"; }
  std::span<const TypeId> types() const noexcept override { return {}; }
  FormatKernels* kernels(TypeId) noexcept override { return nullptr; }
  bool has_kv_store(std::string_view store) const noexcept override { return store == "device"; }
  Expected<std::unique_ptr<KvStore>> create_kv_store(std::string_view store, const Config& config, Backend& backend,
                                                     const KvGeometry& g) override {
    asked = std::string(store) + " on " + std::string(backend.name()) + ", type " +
            config.get_string("type").value_or("(default)") + ", " + std::to_string(g.capacity) + " tokens";
    return Status(Errc::not_implemented, "fake kernels: no store");
  }
  std::string asked;
};
}  // namespace

// On a backend whose memory the CPU cannot read, the store is its kernel library's, made with the
// plugin's own profile keys; the CPU's store stays the plugin's.
TEST(kvDeviceStore, AGpuBackendGetsTheStoreOfItsKernelLibrary) {
  DefaultHostServices host;
  auto kernels = std::make_shared<FakeGpuKernels>();
  host.add_kernel_library(kernels);
  auto f = kv_factory("f32", host);
  ASSERT_TRUE(f);
  FakeBackend gpu(true);
  auto store = (*f)->create(gpu, geometry(2, 2, 64, 64, 16));
  EXPECT_EQ(store.status().message(), "fake kernels: no store");
  EXPECT_EQ(kernels->asked, "device on fakegpu, type f32, 16 tokens");
  kernels->asked.clear();
  auto cpu = cpu_backend(1);
  EXPECT_TRUE((*f)->create(*cpu, geometry(2, 2, 64, 64, 16)));
  EXPECT_EQ(kernels->asked, "");
}

// The ancestor mask is an i8 [n_query, n_query] view.
TEST(kvDeviceStore, AMaskOfTheWrongShapeIsRefused) {
  auto f = kv_factory("f16");
  ASSERT_TRUE(f);
  auto cpu = cpu_backend(1);
  auto store = (*f)->create(*cpu, geometry(1, 1, 16, 16, 8));
  ASSERT_TRUE(store);
  std::vector<float> k(16 * 2, 0.5f), q(16 * 2, 0.5f), out(16 * 2);
  ASSERT_TRUE((*store)->write(0, 0, 2, f32_view(k.data(), 16, 1, 2), f32_view(k.data(), 16, 1, 2)).ok());
  const std::uint8_t mask[9] = {1, 0, 0, 1, 1, 0, 1, 1, 1};
  AttentionBatch b;
  b.n_query = 2;
  b.ancestor = mask_view(mask, 3);
  EXPECT_EQ((*store)->attend(0, f32_view(q.data(), 16, 1, 2), b, f32_view(out.data(), 16, 1, 2)).message(),
            "kvstore device: attend: the ancestor mask must be a packed i8 [2, 2] (n_query x n_query)");
  b.ancestor = mask_view(mask, 2);
  EXPECT_TRUE((*store)->attend(0, f32_view(q.data(), 16, 1, 2), b, f32_view(out.data(), 16, 1, 2)).ok());
}
