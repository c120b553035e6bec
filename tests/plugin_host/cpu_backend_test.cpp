#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <vector>

#include "graft/graft.hpp"
#include "plugin_host/host_services.hpp"
#include "plugin_host/plugin_library.hpp"

using namespace graft;

namespace {

std::shared_ptr<Backend> make_cpu(std::int64_t threads) {
  static auto lib = PluginLibrary::load(std::filesystem::path(GRAFT_PLUGIN_DIR) / "libgraft_backend_cpu.so");
  EXPECT_TRUE(lib) << lib.status().message();
  DefaultHostServices host;
  Config cfg;
  cfg.set("threads", threads);
  auto b = (*lib)->create<Backend>(host, cfg);
  EXPECT_TRUE(b) << b.status().message();
  return *b;
}

}  // namespace

TEST(CpuBackend, ReportsDeviceAndThreads) {
  auto b = make_cpu(3);
  EXPECT_TRUE(b->status().ok());
  EXPECT_EQ(b->n_threads(), 3u);
  auto devs = b->devices();
  ASSERT_EQ(devs.size(), 1u);
  EXPECT_GT(devs[0].total_memory, 0u);
  EXPECT_NE(devs[0].name.find("3 threads"), std::string::npos) << devs[0].name;
  EXPECT_EQ(b->native_stream(), nullptr);
}

TEST(CpuBackend, AllocatesAlignedMemoryAndCopies) {
  auto b = make_cpu(1);
  for (MemoryKind kind : {MemoryKind::host, MemoryKind::pinned_host, MemoryKind::device}) {
    auto buf = b->allocate(1000, kind);
    ASSERT_TRUE(buf) << buf.status().message();
    EXPECT_EQ((*buf)->size(), 1000u);
    EXPECT_EQ((*buf)->kind(), kind);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>((*buf)->data()) % 64, 0u);
    std::vector<char> src(1000, 'x');
    ASSERT_TRUE(b->copy((*buf)->data(), kind, src.data(), MemoryKind::host, src.size()).ok());
    EXPECT_EQ(std::memcmp((*buf)->data(), src.data(), src.size()), 0);
  }
  EXPECT_FALSE(b->copy(nullptr, MemoryKind::host, "a", MemoryKind::host, 1).ok());
}

TEST(CpuBackend, ParallelForCoversEveryIndexExactlyOnce) {
  for (std::int64_t threads : {1, 2, 4, 7}) {
    auto b = make_cpu(threads);
    for (std::size_t n : {0u, 1u, 2u, 3u, 100u, 1001u}) {
      std::vector<std::atomic<int>> hits(n);
      for (int round = 0; round < 3; ++round)
        b->parallel_for(n, [&](std::size_t begin, std::size_t end) {
          ASSERT_LE(begin, end);
          for (std::size_t i = begin; i < end; ++i) hits[i]++;
        });
      for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 3) << "threads " << threads << " n " << n;
    }
  }
}

TEST(CpuBackend, OpsNotYetImplementedSaySo) {
  auto b = make_cpu(1);
  float x[4] = {1, 2, 3, 4};
  auto v = f32_view(x, 4);
  Status st = b->rms_norm(v, v, 1e-6f, v);
  EXPECT_EQ(st.code(), Errc::not_implemented);
  EXPECT_EQ(st.message(), "cpu backend: rms_norm: not implemented");
}
