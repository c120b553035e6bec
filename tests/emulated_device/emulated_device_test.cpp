// The emulated device's own guarantees (emu_device.hpp): device memory the host cannot read, work
// that runs only when waited for, labels checked against pointers, graphs replayed and updated.
// They are what makes the conformance suite's bit-for-bit results on `emu` (tests/conformance)
// mean that the host side of a GPU is right.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <fstream>

#include "emu_device.hpp"
#include "engine/pipeline.hpp"
#include "speculative/drafters.hpp"
#include "test_util.hpp"

using namespace graft;
namespace fs = std::filesystem;

namespace {

const fs::path kZoo = fs::path(GRAFT_SOURCE_DIR) / "models" / "zoo-qwen3-4x256.gguf";

// ---- the emulator's own guarantees: what makes the tests above mean something ----

// The zoo model on `backend` (emu: the emulated device's plugins), one thread, a short context.
Profile zoo_profile(const std::string& backend) {
  Profile profile = Profile::builtin();
  profile.model = kZoo;
  profile.context = 64;
  profile.threads = 1;
  profile.backend.name = backend;
  if (backend == "emu") profile.plugin_dirs.push_back(EMU_PLUGIN_DIR);
  return profile;
}

class EmulatorChecks : public ::testing::Test {
 protected:
  void SetUp() override {
    auto p = Pipeline::build(zoo_profile("emu"), 16);
    ASSERT_TRUE(p) << p.status().message();
    p_ = std::move(*p);
  }
  Backend& be() { return p_->backend(); }
  std::unique_ptr<Buffer> alloc(std::size_t floats, MemoryKind kind) {
    auto b = be().allocate(floats * sizeof(float), kind);
    EXPECT_TRUE(b) << b.status().message();
    return b ? std::move(*b) : nullptr;
  }
  std::unique_ptr<Pipeline> p_;
};

TEST_F(EmulatorChecks, DeviceMemoryFaultsOnTheHostAndWorkRunsWhenWaitedFor) {
  EXPECT_FALSE(be().host_accessible(MemoryKind::device));
  EXPECT_TRUE(be().host_accessible(MemoryKind::pinned_host));
  auto dev = alloc(4, MemoryKind::device), in = alloc(4, MemoryKind::pinned_host), out = alloc(4, MemoryKind::pinned_host);
  ASSERT_TRUE(dev && in && out);
  // An address no process maps: a host read would fault, not pass.
  EXPECT_NE(reinterpret_cast<std::uintptr_t>(dev->data()) >> 62, 0u);
  auto* x = static_cast<float*>(in->data());
  auto* y = static_cast<float*>(out->data());
  for (int i = 0; i < 4; ++i) x[i] = float(i + 1), y[i] = -1;
  ASSERT_TRUE(be().copy_async(dev->data(), MemoryKind::device, x, MemoryKind::pinned_host, 16).ok());
  ASSERT_TRUE(be().copy_async(y, MemoryKind::pinned_host, dev->data(), MemoryKind::device, 16).ok());
  auto ev = be().record_event();
  ASSERT_TRUE(ev);
  EXPECT_FALSE((*ev)->ready());
  EXPECT_EQ(y[3], -1.0f) << "the copies ran before anything waited for them";
  ASSERT_TRUE((*ev)->synchronize().ok());
  EXPECT_TRUE((*ev)->ready());
  EXPECT_EQ(y[3], 4.0f);
}

// The device store on the device keeps its slots on the host with the CPU store's bookkeeping
// (SlotBook), so every call either store refuses, both refuse with the same words, before any
// work is queued.
TEST_F(EmulatorChecks, TheDeviceStoreRefusesWhatTheCpuStoreRefusesInTheSameWords) {
  auto cpu = Pipeline::build(zoo_profile("cpu"), 16);
  ASSERT_TRUE(cpu) << cpu.status().message();
  auto on_cpu = (*cpu)->new_session();
  auto on_emu = p_->new_session();
  ASSERT_TRUE(on_cpu && on_emu);
  const std::vector<TokenId> prompt = {1, 2, 3, 4, 5, 6};
  ASSERT_TRUE((*on_cpu)->append(prompt).ok());
  ASSERT_TRUE((*on_emu)->append(prompt).ok());
  KvStore& c = (*on_cpu)->kv();
  KvStore& e = (*on_emu)->kv();
  ASSERT_EQ(c.size(), 6u);
  ASSERT_EQ(e.size(), 6u);
  const std::uint32_t bad_order[] = {5, 3}, unfilled[] = {4, 6}, below[] = {1, 5};
  const std::vector<std::pair<std::string, std::function<Status(KvStore&)>>> calls = {
      {"a write leaving a gap", [](KvStore& s) { return s.write(0, 7, 1, TensorView{}, TensorView{}); }},
      {"a write past the capacity", [](KvStore& s) { return s.write(0, 6, 60, TensorView{}, TensorView{}); }},
      {"a layer that does not exist", [](KvStore& s) { return s.write(99, 6, 1, TensorView{}, TensorView{}); }},
      {"attention before the write", [](KvStore& s) { return s.attend(0, TensorView{}, AttentionBatch{6, 2}, TensorView{}); }},
      {"a truncate that grows", [](KvStore& s) { return s.truncate(7); }},
      {"a compact past the slots", [](KvStore& s) { return s.compact(8, {}); }},
      {"a compact out of order", [&](KvStore& s) { return s.compact(2, bad_order); }},
      {"a compact of an unfilled slot", [&](KvStore& s) { return s.compact(2, unfilled); }},
      {"a compact moving up", [&](KvStore& s) { return s.compact(2, below); }},
  };
  for (const auto& [what, call] : calls) {
    const Status sc = call(c), se = call(e);
    EXPECT_FALSE(sc.ok()) << what;
    EXPECT_EQ(se.message(), sc.message()) << what;
    EXPECT_EQ(se.code(), sc.code()) << what;
  }
  EXPECT_EQ(e.size(), 6u) << "a refused call changed nothing";
  ASSERT_TRUE(be().synchronize().ok());
}

TEST_F(EmulatorChecks, AViewWhoseLabelLiesIsRefusedNamingTheOpAndTheTensor) {
  auto dev = alloc(8, MemoryKind::device), w = alloc(8, MemoryKind::device);
  std::vector<float> host(8, 1.0f);
  ASSERT_TRUE(dev && w);
  // Device memory labelled host (what the core did with its activations before this emulator).
  Status st = be().rms_norm(f32_view(static_cast<float*>(dev->data()), 8), f32_view(static_cast<float*>(w->data()), 8, 1, 1, MemoryKind::device),
                            1e-6f, f32_view(static_cast<float*>(dev->data()), 8, 1, 1, MemoryKind::device));
  EXPECT_EQ(st.message(), "emu rms_norm: x is labelled host memory but points into device memory");
  // Host memory labelled device.
  st = be().add(f32_view(host.data(), 8, 1, 1, MemoryKind::device), f32_view(static_cast<float*>(dev->data()), 8, 1, 1, MemoryKind::device),
                f32_view(static_cast<float*>(dev->data()), 8, 1, 1, MemoryKind::device));
  EXPECT_EQ(st.message(), "emu add: a is labelled device memory but points into host memory");
  // Pageable host memory, where a GPU kernel cannot read.
  st = be().add(f32_view(host.data(), 8), f32_view(static_cast<float*>(dev->data()), 8, 1, 1, MemoryKind::device),
                f32_view(static_cast<float*>(dev->data()), 8, 1, 1, MemoryKind::device));
  EXPECT_EQ(st.message(), "emu add: a is in pageable host memory; device work reads device or pinned host memory");
}

TEST_F(EmulatorChecks, AGraphReplaysItsCaptureAndUpdatesInPlaceWhenTheShapeHolds) {
  auto a = alloc(4, MemoryKind::device), in = alloc(4, MemoryKind::pinned_host), out = alloc(4, MemoryKind::pinned_host);
  ASSERT_TRUE(a && in && out);
  auto* x = static_cast<float*>(in->data());
  auto* y = static_cast<float*>(out->data());
  const TensorView av = f32_view(static_cast<float*>(a->data()), 4, 1, 1, MemoryKind::device);
  auto capture = [&](bool twice) {
    EXPECT_TRUE(be().begin_capture().ok());
    EXPECT_TRUE(be().copy_async(a->data(), MemoryKind::device, x, MemoryKind::pinned_host, 16).ok());
    EXPECT_TRUE(be().add(av, av, av).ok());
    if (twice) EXPECT_TRUE(be().add(av, av, av).ok());
    EXPECT_TRUE(be().copy_async(y, MemoryKind::pinned_host, a->data(), MemoryKind::device, 16).ok());
  };
  std::unique_ptr<Graph> g;
  capture(false);
  // Inside a capture nothing may wait, and pageable host memory cannot be copied.
  std::vector<float> pageable(4);
  EXPECT_FALSE(be().synchronize().ok());
  EXPECT_FALSE(be().copy_async(a->data(), MemoryKind::device, pageable.data(), MemoryKind::host, 16).ok());
  ASSERT_TRUE(be().end_capture(g).ok());
  ASSERT_TRUE(g);
  for (float v : {1.0f, 5.0f}) {  // the graph reads its input where the capture did, each launch
    for (int i = 0; i < 4; ++i) x[i] = v + float(i);
    ASSERT_TRUE(g->launch().ok());
    ASSERT_TRUE(be().synchronize().ok());
    EXPECT_EQ(y[1], 2 * (v + 1));
  }
  capture(false);
  ASSERT_TRUE(be().end_capture(g).ok());
  EXPECT_EQ(g->instantiations(), 1u) << "the same steps: updated in place";
  capture(true);
  ASSERT_TRUE(be().end_capture(g).ok());
  EXPECT_EQ(g->instantiations(), 2u) << "another step: made anew";
  x[1] = 1;
  ASSERT_TRUE(g->launch().ok());
  ASSERT_TRUE(be().synchronize().ok());
  EXPECT_EQ(y[1], 4.0f);
}

// `graft bench` on a device whose memory the host cannot read measures that memory's bandwidth
// through the backend (device-to-device copies), not the host's.
// A GPU's memory plan (core/engine/memory_plan.hpp) is what it then holds: the weights uploaded
// (the file's bytes, the CPU kernels' layouts beside them, the untied token table too) with their
// file pages given back, the KV cache and the workspace in device memory, to the byte.
TEST_F(EmulatorChecks, TheMemoryPlanIsWhatTheDeviceHolds) {
  const MemoryPlan& plan = p_->memory_plan();
  auto session = p_->new_session();
  ASSERT_TRUE(session) << session.status().message();
  const MemoryReport mem = p_->memory(**session);
  std::uint64_t file_bytes = 0;
  for (const auto& t : p_->file().tensors()) file_bytes += t.bytes;
  EXPECT_GT(mem.prepared, 0u) << "the weights were uploaded";
  EXPECT_EQ(plan.item("weights")->bytes, file_bytes - mem.released + mem.prepared);
  EXPECT_EQ(plan.item("KV cache")->bytes, mem.kv);
  EXPECT_EQ(plan.item("workspace")->bytes, mem.scratch);
}

TEST(EmulatedBench, DecodeIsMeasuredAgainstTheDevicesCopyBandwidth) {
  TempDir dir;
  const fs::path profile = dir.path() / "emu.toml";
  std::ofstream(profile) << "[backend]\nname = \"emu\"\nthreads = 1\n";
  auto r = run_command(std::string(GRAFT_EXE) + " bench -m " + kZoo.string() + " --profile " + profile.string() +
                       " --plugin-dir " + EMU_PLUGIN_DIR + " --prompt-tokens 16 --gen-tokens 4 --reps 1 --bandwidth-mib 64");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("64.0 MiB buffer, device-to-device copy"), std::string::npos) << r.output;
}

}  // namespace

// The drafters' part of the memory plan (core/speculative/drafter_plan.hpp) is what they hold on
// the device once they have run: mtp (its head's weights bound again for the sequence, the block
// its runner binds on first use, its runner's workspace, its buffers, a one-layer KV cache) and
// dflash2 (the drafter file's uploads, its runner's blocks and workspace, its KV cache, its
// buffers), and the target's hidden states the verify passes keep for them, to the byte. The
// device's count is every device and pinned buffer alive (emu_device.hpp).
TEST(EmulatedDrafters, TheDraftersPlanIsWhatTheyHoldOnTheDevice) {
  Profile profile = zoo_profile("emu");
  profile.context = 256;
  profile.speculative.enabled = true;
  Config dflash;
  dflash.set("model", (fs::path(GRAFT_SOURCE_DIR) / "models" / "zoo-dflash2-2x256.gguf").string());
  profile.drafters = {PluginChoice{"mtp", {}, "", {}}, PluginChoice{"dflash2", dflash, "", {}}};
  auto p = Pipeline::build(profile, 32);
  ASSERT_TRUE(p) << p.status().message();
  const MemoryPlan& plan = (*p)->memory_plan();
  ASSERT_TRUE(plan.not_counted.empty()) << plan.not_counted.front();
  ASSERT_NE(plan.item("drafter weights"), nullptr) << plan.table();
  ASSERT_NE(plan.item("drafter KV"), nullptr) << plan.table();
  ASSERT_NE(plan.item("drafter buffers"), nullptr) << plan.table();
  ASSERT_NE(plan.item("verify taps"), nullptr) << plan.table();
  const std::uint64_t planned = plan.item("drafter weights")->bytes + plan.item("drafter KV")->bytes +
                                plan.item("drafter buffers")->bytes + plan.item("verify taps")->bytes;
  auto* dev = static_cast<emu::Device*>((*p)->backend().native_stream());
  auto session = (*p)->new_session();
  ASSERT_TRUE(session) << session.status().message();
  const std::int64_t before = dev->device_bytes();
  auto set = Drafters::load(**p);
  ASSERT_TRUE(set) << set.status().message();
  auto decoder = (*set)->new_decoder();
  ASSERT_TRUE(decoder) << decoder.status().message();
  TokenizeOptions opt;
  opt.add_special = true;
  // Longer than a pass (32 rows), so the verify taps' buffers reach the size planned for them.
  auto prompt = (*p)->tokenizer().encode(
      "def fibonacci(n):\n    if n < 2:\n        return n\n    return fibonacci(n - 1) + fibonacci(n - 2)\n\n"
      "def factorial(n):\n    if n < 2:\n        return 1\n    return n * factorial(n - 1)\n",
      opt);
  ASSERT_TRUE(prompt) << prompt.status().message();
  ASSERT_GT(prompt->size(), 32u);
  GenerationOptions gen;
  gen.max_tokens = 12;
  gen.sampling.temperature = 0;
  GenerationStats stats;
  Status st = (*session)->generate(*prompt, gen, [](TokenId, std::string_view) { return true; }, stats, decoder->get());
  ASSERT_TRUE(st.ok()) << st.message();
  const std::int64_t held = dev->device_bytes() - before;
  EXPECT_EQ(static_cast<std::uint64_t>(held), planned) << plan.table();
}
