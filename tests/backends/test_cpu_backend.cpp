// The CPU backend as an object: devices, memory, threads, and how the SIMD level is chosen.
#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <utility>

#include "cpu_fixture.hpp"
#include "simd_level.hpp"

using namespace graft;
using namespace cpu_test;

namespace {

class Basics : public ::testing::TestWithParam<int> {};
INSTANTIATE_TEST_SUITE_P(cpu, Basics, ::testing::Values(1, 3),
                         [](const auto& info) { return std::to_string(info.param) + "threads"; });

TEST_P(Basics, ReportsDeviceThreadsAndKernelLevel) {
  auto b = make_cpu(GetParam());
  ASSERT_TRUE(b);
  EXPECT_TRUE(b->status().ok());
  EXPECT_EQ(b->n_threads(), static_cast<unsigned>(GetParam()));
  auto devs = b->devices();
  ASSERT_EQ(devs.size(), 1u);
  EXPECT_GT(devs[0].total_memory, 0u);
  EXPECT_NE(devs[0].name.find(std::to_string(GetParam()) + " threads"), std::string::npos) << devs[0].name;
  // Unforced, the backend picks the best level this CPU has.
  const std::string best = level_available("avx512") ? "avx512" : level_available("avx2") ? "avx2" : "scalar";
  EXPECT_NE(devs[0].name.find("kernels " + best + ")"), std::string::npos) << devs[0].name;
  EXPECT_EQ(b->native_stream(), nullptr);
}

// The backend names itself as its descriptor does, so callers need no name beside Backend&.
TEST(cpuBackend, NameIsThePluginName) {
  auto b = make_cpu(1);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->name(), "cpu");
  EXPECT_EQ(b->name(), cpu_library()->name());
}

// "graft.cpu.simd" v1 describes the kernels in use, as the device name does.
TEST(cpuExtensions, SimdExtensionDescribesTheKernelsInUse) {
  const std::pair<const char*, std::uint32_t> levels[] = {{"scalar", 1}, {"avx2", 8}, {"avx512", 16}};
  for (auto [level, floats] : levels) {
    if (!level_available(level)) continue;
    auto b = make_cpu(1, level);
    ASSERT_TRUE(b);
    const CpuSimdExtension* simd = find_extension<CpuSimdExtension>(*b);
    ASSERT_NE(simd, nullptr) << level;
    EXPECT_EQ(b->extension("graft.cpu.simd", 1), simd);
    EXPECT_STREQ(simd->level, level);
    EXPECT_EQ(simd->floats_per_vector, floats) << level;
    const std::string tail = std::string(simd->cpu_features) + "; kernels " + level + ")";
    EXPECT_NE(b->devices()[0].name.find(tail), std::string::npos) << b->devices()[0].name << " lacks " << tail;
  }
}

// Only the exact name and version are answered.
TEST(cpuExtensions, OtherVersionsAndNamesAreNull) {
  auto b = make_cpu(1);
  ASSERT_TRUE(b);
  ASSERT_NE(b->extension("graft.cpu.simd", 1), nullptr);
  EXPECT_EQ(b->extension("graft.cpu.simd", 0), nullptr);
  EXPECT_EQ(b->extension("graft.cpu.simd", 2), nullptr);
  EXPECT_EQ(b->extension("graft.cpu.simdx", 1), nullptr);
  EXPECT_EQ(b->extension("graft.cpu.sim", 1), nullptr);
  EXPECT_EQ(b->extension("graft.cuda.simd", 1), nullptr);
  EXPECT_EQ(b->extension("", 1), nullptr);
}

TEST_P(Basics, AllocatesAlignedMemoryAndCopies) {
  auto b = make_cpu(GetParam());
  ASSERT_TRUE(b);
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

TEST(cpuThreads, ParallelForCoversEveryIndexExactlyOnce) {
  for (std::int64_t threads : {1, 2, 4, 7}) {
    auto b = make_cpu(threads);
    ASSERT_TRUE(b);
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

// Threads walk their own share front to back, and a thread that is done takes pieces from the back
// of a slower thread's share. Here the first range the calling thread runs waits until every other
// index has run: that happens only if the worker takes over the rest of the caller's share
// (handed out whole, or never taken over, the caller runs more than one piece or the wait times out).
TEST(cpuThreads, AFinishedThreadTakesOverTheRestOfASlowOnesShare) {
  auto b = make_cpu(2);
  ASSERT_TRUE(b);
  constexpr std::size_t n = 160;  // shares [0, 80) (the caller's) and [80, 160)
  const std::thread::id caller = std::this_thread::get_id();
  std::vector<std::atomic<int>> hits(n);
  std::atomic<std::size_t> done{0}, by_caller{0};
  std::atomic<bool> stalled{false}, timed_out{false};
  b->parallel_for(n, [&](std::size_t begin, std::size_t end) {
    if (std::this_thread::get_id() == caller && !stalled.exchange(true)) {
      const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (done.load() < n - (end - begin))
        if (std::chrono::steady_clock::now() > give_up) {
          timed_out = true;
          break;
        } else {
          std::this_thread::yield();
        }
    }
    for (std::size_t i = begin; i < end; ++i) hits[i]++;
    if (std::this_thread::get_id() == caller) by_caller += end - begin;
    done += end - begin;
  });
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << i;
  EXPECT_FALSE(timed_out.load()) << "the rest of the caller's share waited for the caller";
  EXPECT_LE(by_caller.load(), n / 16) << "the caller ran more than its first piece";
}

// Calls far enough apart that the workers stop spinning and sleep, and ranges slow enough that the
// caller stops spinning and sleeps: every call still runs every index once and returns (a lost
// wake-up would hang here).
TEST(cpuThreads, SleepingWorkersAndASleepingCallerWakeUp) {
  for (std::int64_t threads : {2, 3}) {
    auto b = make_cpu(threads);
    ASSERT_TRUE(b);
    for (int round = 0; round < 12; ++round) {
      std::this_thread::sleep_for(std::chrono::milliseconds(round % 2 ? 3 : 0));  // workers asleep by now
      std::vector<std::atomic<int>> hits(6);
      b->parallel_for(hits.size(), [&](std::size_t begin, std::size_t end) {
        if (begin > 0 && round % 3 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(3));  // caller waits
        for (std::size_t i = begin; i < end; ++i) hits[i]++;
      });
      for (std::size_t i = 0; i < hits.size(); ++i) ASSERT_EQ(hits[i].load(), 1) << "round " << round << " index " << i;
    }
  }
}

// An op called from inside parallel_for (a weight-format kernel normalizing its rows) and two host
// threads calling at once both complete, covering every index once.
TEST(cpuThreads, NestedAndConcurrentParallelForComplete) {
  auto b = make_cpu(3);
  ASSERT_TRUE(b);
  std::vector<std::atomic<int>> hits(60 * 50);
  b->parallel_for(60, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i)
      b->parallel_for(50, [&](std::size_t b2, std::size_t e2) {
        for (std::size_t j = b2; j < e2; ++j) hits[i * 50 + j]++;
      });
  });
  for (auto& h : hits) ASSERT_EQ(h.load(), 1);

  std::vector<std::atomic<int>> a(100000), c(100000);
  auto sweep = [&](std::vector<std::atomic<int>>& v) {
    for (int round = 0; round < 20; ++round)
      b->parallel_for(v.size(), [&](std::size_t begin, std::size_t end) {
        for (std::size_t i = begin; i < end; ++i) v[i]++;
      });
  };
  std::thread other([&] { sweep(c); });
  sweep(a);
  other.join();
  for (std::size_t i = 0; i < a.size(); ++i) ASSERT_TRUE(a[i] == 20 && c[i] == 20) << i;
}

// ---- SIMD level selection ----

class SimdForce : public ::testing::TestWithParam<std::string> {};
INSTANTIATE_TEST_SUITE_P(cpu, SimdForce, ::testing::Values("scalar", "avx2", "avx512"),
                         [](const auto& info) { return info.param; });

TEST_P(SimdForce, ForcedLevelIsUsedOrRefused) {
  auto b = try_make_cpu(2, GetParam());
  if (level_available(GetParam())) {
    ASSERT_TRUE(b) << b.status().message();
    EXPECT_NE((*b)->devices()[0].name.find("kernels " + GetParam() + ")"), std::string::npos);
  } else {
    ASSERT_FALSE(b);
    EXPECT_EQ(b.status().code(), Errc::invalid_argument);
    // the host prefixes the plugin and its file
    EXPECT_NE(b.status().message().find("): cpu backend: GRAFT_CPU_SIMD = \"" + GetParam() + "\": this CPU lacks "),
              std::string::npos)
        << b.status().message();
  }
}

TEST(cpuSimd, AutoAndEmptyPickTheBestLevel) {
  for (const char* v : {"", "auto"}) {
    auto b = try_make_cpu(1, v);
    ASSERT_TRUE(b) << b.status().message();
    const std::string best = level_available("avx512") ? "avx512" : level_available("avx2") ? "avx2" : "scalar";
    EXPECT_NE((*b)->devices()[0].name.find("kernels " + best + ")"), std::string::npos);
  }
}

TEST(cpuSimd, UnknownLevelIsAClearError) {
  auto b = try_make_cpu(1, "avx3");
  ASSERT_FALSE(b);
  EXPECT_EQ(b.status().code(), Errc::invalid_argument);
  const std::string m = b.status().message();
  // the host names the plugin and its file, then the plugin's line
  EXPECT_EQ(m.rfind("backend plugin 'cpu' (", 0), 0u) << m;
  const std::string line = "): cpu backend: GRAFT_CPU_SIMD = \"avx3\": expected auto, amx, avx512, avx2 or scalar";
  EXPECT_EQ(m.substr(m.size() - std::min(m.size(), line.size())), line) << m;
}

// The resolution rule itself, against CPUs this machine is not (simd_level.cpp is compiled into
// this test).
TEST(cpuSimd, ResolutionAgainstMissingFeatures) {
  cpu::CpuInfo none;
  cpu::CpuInfo avx2;
  avx2.avx2 = avx2.fma = avx2.f16c = true;
  cpu::CpuInfo avx512 = avx2;
  avx512.avx512f = true;
  cpu::CpuInfo avx2_no_fma = avx2;
  avx2_no_fma.fma = false;

  EXPECT_EQ(cpu::best_simd_level(none), cpu::SimdLevel::scalar);
  EXPECT_EQ(cpu::best_simd_level(avx2), cpu::SimdLevel::avx2);
  EXPECT_EQ(cpu::best_simd_level(avx512), cpu::SimdLevel::avx512);
  EXPECT_EQ(cpu::best_simd_level(avx2_no_fma), cpu::SimdLevel::scalar);

  EXPECT_EQ(*cpu::resolve_simd_level("scalar", none, "GRAFT_CPU_SIMD"), cpu::SimdLevel::scalar);
  EXPECT_EQ(*cpu::resolve_simd_level("auto", avx512, "GRAFT_CPU_SIMD"), cpu::SimdLevel::avx512);
  EXPECT_EQ(*cpu::resolve_simd_level("avx2", avx512, "GRAFT_CPU_SIMD"), cpu::SimdLevel::avx2);

  auto r = cpu::resolve_simd_level("avx512", avx2, "GRAFT_CPU_SIMD");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().message(), "cpu backend: GRAFT_CPU_SIMD = \"avx512\": this CPU lacks avx512f");
  r = cpu::resolve_simd_level("avx2", avx2_no_fma, "GRAFT_CPU_SIMD");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().message(), "cpu backend: GRAFT_CPU_SIMD = \"avx2\": this CPU lacks fma");
  r = cpu::resolve_simd_level("avx512", none, "GRAFT_CPU_SIMD");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().message(), "cpu backend: GRAFT_CPU_SIMD = \"avx512\": this CPU lacks avx2, fma, f16c, avx512f");
}

}  // namespace
