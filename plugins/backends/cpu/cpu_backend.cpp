// The CPU backend: host memory, a thread pool, and the generic ops. On the CPU "device" and
// "pinned host" memory are ordinary host memory, so the same pipeline runs unchanged.
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "cpu_info.hpp"
#include "graft/graft.hpp"
#include "thread_pool.hpp"

namespace graft::cpu {

namespace {

constexpr std::size_t kAlignment = 64;  // a cache line, and an AVX-512 register

class HostBuffer final : public Buffer {
 public:
  HostBuffer(void* p, std::size_t n, MemoryKind k) : p_(p), n_(n), k_(k) {}
  ~HostBuffer() override { std::free(p_); }
  void* data() const noexcept override { return p_; }
  std::size_t size() const noexcept override { return n_; }
  MemoryKind kind() const noexcept override { return k_; }

 private:
  void* p_;
  std::size_t n_;
  MemoryKind k_;
};

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(unsigned threads) : info_(detect_cpu()), pool_(threads ? threads : info_.logical_cores) {}

  Status status() const override { return Status::success(); }

  std::vector<DeviceInfo> devices() const override {
    DeviceInfo d;
    d.name = info_.model + " (" + std::to_string(pool_.size()) + " threads, " + info_.simd_summary() + ")";
    d.total_memory = info_.total_memory;
    d.free_memory = detect_cpu().available_memory;
    return {d};
  }

  Expected<std::unique_ptr<Buffer>> allocate(std::size_t bytes, MemoryKind kind) override {
    const std::size_t rounded = (std::max<std::size_t>(bytes, 1) + kAlignment - 1) / kAlignment * kAlignment;
    void* p = std::aligned_alloc(kAlignment, rounded);
    if (!p) return Status(Errc::out_of_memory, "cpu: cannot allocate " + std::to_string(bytes) + " bytes");
    return std::unique_ptr<Buffer>(new HostBuffer(p, bytes, kind));
  }

  Status copy(void* dst, MemoryKind, const void* src, MemoryKind, std::size_t bytes) override {
    if (bytes && (!dst || !src)) return Status(Errc::invalid_argument, "cpu: copy with a null pointer");
    std::memcpy(dst, src, bytes);
    return Status::success();
  }

  Status synchronize() override { return Status::success(); }
  unsigned n_threads() const noexcept override { return pool_.size(); }
  void parallel_for(std::size_t n, const std::function<void(std::size_t, std::size_t)>& fn) override {
    pool_.parallel_for(n, fn);
  }
  void* native_stream() noexcept override { return nullptr; }

  // The generic ops arrive with the CPU forward pass (next milestone); until then each says so.
  Status rms_norm(const TensorView&, const TensorView&, float, const TensorView&) override {
    return not_implemented("cpu backend: rms_norm");
  }
  Status rope(const TensorView&, const std::int32_t*, const RopeParams&, const TensorView&) override {
    return not_implemented("cpu backend: rope");
  }
  Status softmax(const TensorView&, float, const TensorView&) override { return not_implemented("cpu backend: softmax"); }
  Status add(const TensorView&, const TensorView&, const TensorView&) override {
    return not_implemented("cpu backend: add");
  }
  Status mul(const TensorView&, const TensorView&, const TensorView&) override {
    return not_implemented("cpu backend: mul");
  }
  Status silu_mul(const TensorView&, const TensorView&, const TensorView&) override {
    return not_implemented("cpu backend: silu_mul");
  }
  Status matmul(const TensorView&, const TensorView&, const TensorView&) override {
    return not_implemented("cpu backend: matmul");
  }
  Status get_rows(const TensorView&, const std::int32_t*, std::size_t, const TensorView&) override {
    return not_implemented("cpu backend: get_rows");
  }

 private:
  CpuInfo info_;
  ThreadPool pool_;
};

const ConfigKeySpec kKeys[] = {
    {"threads", ConfigType::integer, "worker threads; 0 = one per logical core", 0, 4096, false},
};

PluginObject* create(const HostServices&, const Config& config, Status& error) noexcept {
  return guarded_create(error, [&]() -> PluginObject* {
    const auto threads = config.get_int("threads").value_or(0);
    return new CpuBackend(static_cast<unsigned>(threads));
  });
}

const PluginDescriptor kDescriptor{
    GRAFT_ABI_VERSION, sizeof(PluginDescriptor), PluginKind::backend, "cpu", GRAFT_SDK_VERSION_STRING,
    "CPU backend: host memory, thread pool, generic ops", kKeys, std::size(kKeys), &create,
};

}  // namespace

}  // namespace graft::cpu

GRAFT_PLUGIN(graft::cpu::kDescriptor)
