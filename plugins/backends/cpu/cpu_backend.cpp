// The CPU backend: host memory, a thread pool, and the generic ops (ops_*.cpp) on kernels chosen
// at run time for the CPU (kernels_*.cpp). On the CPU "device" and "pinned host" memory are
// ordinary host memory, so the same pipeline runs unchanged.
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include <exception>
#include <new>

#include "cpu_backend.hpp"
#include "cpu_info.hpp"
#include "graft/graft.hpp"
#include "kernels.hpp"
#include "ops.hpp"
#include "simd_level.hpp"
#include "thread_pool.hpp"

namespace graft::cpu {

namespace {

constexpr std::size_t kAlignment = 64;  // a cache line, and an AVX-512 register
constexpr const char* kName = "cpu";     // the plugin's name, also Backend::name()

// Floats per register of a level's kernels (W in kernels_avx2.cpp and kernels_avx512.cpp).
std::uint32_t floats_per_vector(SimdLevel level) noexcept {
  switch (level) {
    case SimdLevel::scalar: return 1;
    case SimdLevel::avx2: return 8;
    case SimdLevel::avx512: return 16;
  }
  return 1;
}

class HostBuffer final : public Buffer {
 public:
  HostBuffer(void* p, std::size_t n, MemoryKind k, std::atomic<std::int64_t>* counter)
      : p_(p), n_(n), k_(k), counter_(k == MemoryKind::host ? nullptr : counter) {
    if (counter_) *counter_ += static_cast<std::int64_t>(n_);
  }
  ~HostBuffer() override {
    std::free(p_);
    if (counter_) *counter_ -= static_cast<std::int64_t>(n_);
  }
  void* data() const noexcept override { return p_; }
  std::size_t size() const noexcept override { return n_; }
  MemoryKind kind() const noexcept override { return k_; }

 private:
  void* p_;
  std::size_t n_;
  MemoryKind k_;
  std::atomic<std::int64_t>* counter_;
};

class DoneEvent final : public Event {
 public:
  bool ready() const noexcept override { return true; }
  Status synchronize() override { return Status::success(); }
};

class CpuBackend final : public Backend {
 public:
  CpuBackend(const CpuInfo& info, SimdLevel level, unsigned threads)
      : info_(info),
        kernels_(&kernels_for(level)),
        pool_(threads ? threads : info_.logical_cores),
        cpu_features_(info_.simd_summary()),
        simd_{simd_level_name(level), floats_per_vector(level), cpu_features_.c_str()} {}

  void count_device_bytes(std::atomic<std::int64_t>* counter) noexcept { device_bytes_ = counter; }

  const void* extension(std::string_view ext, std::uint32_t version) const noexcept override {
    if (ext == CpuSimdExtension::kName && version == CpuSimdExtension::kVersion) return &simd_;
    return nullptr;
  }

  std::string_view name() const noexcept override { return kName; }
  Status status() const override { return Status::success(); }

  std::vector<DeviceInfo> devices() const override {
    DeviceInfo d;
    d.name = info_.model + " (" + std::to_string(pool_.size()) + " threads, " + info_.simd_summary() + "; kernels " +
             simd_level_name(kernels_->level) + ")";
    d.total_memory = info_.total_memory;
    d.free_memory = detect_cpu().available_memory;
    return {d};
  }

  Expected<std::unique_ptr<Buffer>> allocate(std::size_t bytes, MemoryKind kind) override {
    const std::size_t rounded = (std::max<std::size_t>(bytes, 1) + kAlignment - 1) / kAlignment * kAlignment;
    void* p = std::aligned_alloc(kAlignment, rounded);
    if (!p) return Status(Errc::out_of_memory, "cpu: cannot allocate " + std::to_string(bytes) + " bytes");
    return std::unique_ptr<Buffer>(new HostBuffer(p, bytes, kind, device_bytes_));
  }

  Status copy(void* dst, MemoryKind, const void* src, MemoryKind, std::size_t bytes) override {
    if (bytes && (!dst || !src)) return Status(Errc::invalid_argument, "cpu: copy with a null pointer");
    std::memcpy(dst, src, bytes);
    return Status::success();
  }

  // The CPU has no stream: work runs as it is enqueued, so an asynchronous copy is a copy, every
  // event is ready when recorded, and there is nothing to capture.
  Status copy_async(void* dst, MemoryKind dst_kind, const void* src, MemoryKind src_kind, std::size_t bytes) override {
    return copy(dst, dst_kind, src, src_kind, bytes);
  }
  Status synchronize() override { return Status::success(); }
  Expected<std::unique_ptr<Event>> record_event() override { return std::unique_ptr<Event>(new DoneEvent); }
  bool graphs_supported() const noexcept override { return false; }
  Status begin_capture() override { return Status(Errc::unsupported, "cpu backend: no graphs: ops run as they are called"); }
  Status end_capture(std::unique_ptr<Graph>&) override {
    return Status(Errc::unsupported, "cpu backend: no graphs: ops run as they are called");
  }
  unsigned n_threads() const noexcept override { return pool_.size(); }
  void parallel_for(std::size_t n, const std::function<void(std::size_t, std::size_t)>& fn) override {
    pool_.parallel_for(n, fn);
  }
  void* native_stream() noexcept override { return nullptr; }
  bool host_accessible(MemoryKind) const noexcept override { return true; }

  Status rms_norm(const TensorView& x, const TensorView& w, float eps, const TensorView& y) override {
    return guarded("rms_norm", [&] { return op_rms_norm(ctx(), x, w, eps, y); });
  }
  Status rope(const TensorView& x, const TensorView& positions, const RopeParams& p, const TensorView& y) override {
    return guarded("rope", [&] { return op_rope(ctx(), x, positions, p, y); });
  }
  Status add(const TensorView& a, const TensorView& b, const TensorView& y) override {
    return guarded("add", [&] { return op_add(ctx(), a, b, y); });
  }
  Status silu_mul(const TensorView& gate, const TensorView& up, const TensorView& y) override {
    return guarded("silu_mul", [&] { return op_silu_mul(ctx(), gate, up, y); });
  }
  Status sigmoid_mul(const TensorView& x, const TensorView& g, const TensorView& y) override {
    return guarded("sigmoid_mul", [&] { return op_sigmoid_mul(ctx(), x, g, y); });
  }
  Status l2_norm(const TensorView& x, float eps, const TensorView& y) override {
    return guarded("l2_norm", [&] { return op_l2_norm(ctx(), x, eps, y); });
  }
  Status delta_net_gates(const TensorView& alpha, const TensorView& beta, const TensorView& dt_bias,
                         const TensorView& ssm_a, const TensorView& g, const TensorView& b) override {
    return guarded("delta_net_gates", [&] { return op_delta_net_gates(ctx(), alpha, beta, dt_bias, ssm_a, g, b); });
  }
  Status causal_conv_silu(const TensorView& x, const TensorView& w, const TensorView& state, const TensorView& parents,
                          const TensorView& y, const TensorView& state_out) override {
    return guarded("causal_conv_silu", [&] { return op_causal_conv_silu(ctx(), x, w, state, parents, y, state_out); });
  }
  Status gated_delta_net(const TensorView& q, const TensorView& k, const TensorView& v, const TensorView& g,
                         const TensorView& b, const TensorView& state, const TensorView& parents, const TensorView& out,
                         const TensorView& state_out, const TensorView& deltas) override {
    return guarded("gated_delta_net",
                   [&] { return op_gated_delta_net(ctx(), q, k, v, g, b, state, parents, out, state_out, deltas); });
  }
  Status delta_net_apply(const TensorView& k, const TensorView& d, const TensorView& g, const TensorView& rows,
                         const TensorView& state) override {
    return guarded("delta_net_apply", [&] { return op_delta_net_apply(ctx(), k, d, g, rows, state); });
  }
  Status conv_window_advance(const TensorView& x, const TensorView& rows, const TensorView& state) override {
    return guarded("conv_window_advance", [&] { return op_conv_window_advance(ctx(), x, rows, state); });
  }
  Status top_k(const TensorView& x, std::uint32_t k, const TensorView& ids, const TensorView& values) override {
    return guarded("top_k", [&] { return op_top_k(ctx(), x, k, ids, values); });
  }
  Status softmax(const TensorView& x, const TensorView& y) override {
    return guarded("softmax", [&] { return op_softmax(ctx(), x, y); });
  }

 private:
  OpContext ctx() { return OpContext{*kernels_, pool_}; }

  // No exception may cross the plugin boundary: allocation failures (the rope angle cache, error
  // text) become a Status.
  template <class F>
  static Status guarded(const char* op, F&& f) noexcept {
    try {
      return f();
    } catch (const std::bad_alloc&) {
      return Status(Errc::out_of_memory, std::string("cpu backend: ") + op + ": out of memory");
    } catch (const std::exception& e) {
      return Status(Errc::internal, std::string("cpu backend: ") + op + ": " + e.what());
    } catch (...) {
      return Status(Errc::internal, std::string("cpu backend: ") + op + ": unknown exception");
    }
  }

  CpuInfo info_;
  const Kernels* kernels_;
  ThreadPool pool_;
  std::string cpu_features_;  // simd_ points into it
  CpuSimdExtension simd_;     // "graft.cpu.simd" v1
  std::atomic<std::int64_t>* device_bytes_ = nullptr;  // make_cpu_backend's count, or none
};

}  // namespace

Expected<std::unique_ptr<Backend>> make_cpu_backend(unsigned threads, std::atomic<std::int64_t>* device_bytes) {
  try {
    const CpuInfo info = detect_cpu();
    // The kernel level is forced through the environment (tests, debugging); unset means auto.
    const char* forced = std::getenv(kSimdEnvVar);
    auto level = resolve_simd_level(forced ? forced : "auto", info, kSimdEnvVar);
    if (!level) return level.status();
    auto backend = std::make_unique<CpuBackend>(info, *level, threads);
    backend->count_device_bytes(device_bytes);
    return std::unique_ptr<Backend>(std::move(backend));
  } catch (const std::bad_alloc&) {
    return Status(Errc::out_of_memory, "cpu backend: out of memory while starting");
  } catch (const std::exception& e) {
    return Status(Errc::internal, std::string("cpu backend: ") + e.what());
  }
}

}  // namespace graft::cpu
