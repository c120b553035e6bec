// The CUDA backend as the GPU tests use it: the plugin, a fixture that skips without a device,
// device copies of host vectors and back.
#pragma once

#include <algorithm>
#include <cmath>

#include "cpu_fixture.hpp"

namespace cuda_test {

using namespace cpu_test;

inline std::shared_ptr<graft::PluginLibrary> cuda_library() {
  static auto lib = [] {
    auto l = graft::PluginLibrary::load(std::filesystem::path(GRAFT_PLUGIN_DIR) / "libgraft_backend_cuda.so");
    EXPECT_TRUE(l) << l.status().message();
    return l ? *l : nullptr;
  }();
  return lib;
}

inline std::shared_ptr<Backend> make_cuda() {
  static const graft::DefaultHostServices host;
  auto lib = cuda_library();
  if (!lib) return nullptr;
  auto b = lib->create<Backend>(host, graft::Config{});
  EXPECT_TRUE(b) << b.status().message();
  return b ? *b : nullptr;
}



// Device copies of host vectors, and back.
class OnGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    cuda = make_cuda();
    ASSERT_TRUE(cuda);
    if (!cuda->status().ok()) GTEST_SKIP() << cuda->status().message();
    cpu = make_cpu(1);
  }
  float* upload(const std::vector<float>& v) {
    auto b = cuda->allocate(v.size() * sizeof(float), graft::MemoryKind::device);
    EXPECT_TRUE(b);
    EXPECT_TRUE(cuda->copy((*b)->data(), graft::MemoryKind::device, v.data(), graft::MemoryKind::host, v.size() * 4).ok());
    buffers.push_back(std::move(*b));
    return static_cast<float*>(buffers.back()->data());
  }
  std::int32_t* upload(const std::vector<std::int32_t>& v) {
    auto b = cuda->allocate(v.size() * sizeof(std::int32_t), graft::MemoryKind::device);
    EXPECT_TRUE(b);
    EXPECT_TRUE(cuda->copy((*b)->data(), graft::MemoryKind::device, v.data(), graft::MemoryKind::host, v.size() * 4).ok());
    buffers.push_back(std::move(*b));
    return static_cast<std::int32_t*>(buffers.back()->data());
  }
  template <class T>
  std::vector<T> download(const T* p, std::size_t n) {
    std::vector<T> out(n);
    EXPECT_TRUE(cuda->synchronize().ok());
    EXPECT_TRUE(cuda->copy(out.data(), graft::MemoryKind::host, p, graft::MemoryKind::device, n * sizeof(T)).ok());
    return out;
  }
  static TensorView dev(float* p, std::int64_t ne0, std::int64_t ne1 = 1, std::int64_t ne2 = 1) {
    return graft::f32_view(p, ne0, ne1, ne2, graft::MemoryKind::device);
  }
  std::shared_ptr<Backend> cuda, cpu;
  std::vector<std::unique_ptr<graft::Buffer>> buffers;
};

inline double max_rel(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    m = std::max(m, std::abs(double(a[i]) - b[i]) / std::max(1e-30, std::abs(double(b[i]))));
  return m;
}


}  // namespace cuda_test
