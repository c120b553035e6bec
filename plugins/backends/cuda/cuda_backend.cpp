// The CUDA backend: one device, its memory (device, pinned host, host), one stream that every op
// and copy is enqueued on, events, CUDA graphs, and the generic ops (cuda_ops.cu). The CUDA
// runtime is linked statically and finds the driver (libcuda) when first called, so the plugin
// loads on a machine without one and says why it cannot run ("no CUDA device: ...").
// Format kernels and the KV store's attention come from the kernel library "cuda"
// (docs/architecture.md, "Devices"); the delta-net ops are part 2 of issue 37: "not implemented".
#include <cuda_runtime.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "../cpu/tensor_check.hpp"
#include "cuda_ops.hpp"
#include "graft/graft.hpp"

namespace graft::cuda {

namespace {

using cpu::check_dense;
using cpu::check_output;
using cpu::check_rows;
using cpu::Overlap;
using cpu::overlap;
using cpu::same_shape;
using cpu::shape_string;

constexpr const char* kName = "cuda";

std::string cuda_text(cudaError_t e) { return std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e); }

Status fail(const char* op, const std::string& what, Errc code = Errc::invalid_argument) {
  return Status(code, std::string("cuda backend: ") + op + ": " + what);
}

Status check_cuda(const char* op, cudaError_t e) {
  return e == cudaSuccess ? Status::success() : fail(op, cuda_text(e), Errc::internal);
}

class CudaBuffer final : public Buffer {
 public:
  CudaBuffer(void* p, std::size_t n, MemoryKind k) : p_(p), n_(n), k_(k) {}
  ~CudaBuffer() override {
    // Work still queued may read it: cudaFree waits for the device; pinned and host memory after
    // the device is idle.
    if (k_ == MemoryKind::device) {
      cudaFree(p_);
    } else if (k_ == MemoryKind::pinned_host) {
      cudaDeviceSynchronize();
      cudaFreeHost(p_);
    } else {
      cudaDeviceSynchronize();
      std::free(p_);
    }
  }
  void* data() const noexcept override { return p_; }
  std::size_t size() const noexcept override { return n_; }
  MemoryKind kind() const noexcept override { return k_; }

 private:
  void* p_;
  std::size_t n_;
  MemoryKind k_;
};

class CudaEvent final : public Event {
 public:
  explicit CudaEvent(cudaEvent_t e) : e_(e) {}
  ~CudaEvent() override { cudaEventDestroy(e_); }
  bool ready() const noexcept override { return cudaEventQuery(e_) == cudaSuccess; }
  Status synchronize() override { return check_cuda("event", cudaEventSynchronize(e_)); }

 private:
  cudaEvent_t e_;
};

class CudaGraph final : public Graph {
 public:
  CudaGraph(cudaGraphExec_t exec, cudaStream_t stream) : exec_(exec), stream_(stream) {}
  ~CudaGraph() override { cudaGraphExecDestroy(exec_); }
  Status launch() override { return check_cuda("graph launch", cudaGraphLaunch(exec_, stream_)); }
  std::uint64_t instantiations() const noexcept override { return instantiations_; }

  cudaGraphExec_t exec_;
  cudaStream_t stream_;
  std::uint64_t instantiations_ = 1;
};

// A row-strided f32 view as the kernels take it (checked by the caller).
RowView rows_of(const TensorView& t) {
  RowView r;
  r.data = t.data;
  r.ne0 = t.ne[0];
  r.ne1 = t.ne[1];
  r.ne2 = t.ne[2];
  r.rows = t.rows();
  r.nb1 = t.nb[1];
  r.nb2 = t.nb[2];
  r.nb3 = t.nb[3];
  return r;
}

class CudaBackend final : public Backend {
 public:
  CudaBackend(int device, Status status) : device_(device), status_(std::move(status)) {
    if (!status_.ok()) return;
    if (cudaError_t e = cudaSetDevice(device_); e != cudaSuccess) {
      status_ = Status(Errc::unsupported, "cannot use CUDA device " + std::to_string(device_) + ": " + cuda_text(e));
      return;
    }
    if (cudaError_t e = cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking); e != cudaSuccess)
      status_ = Status(Errc::unsupported, "cannot create a CUDA stream: " + cuda_text(e));
  }
  ~CudaBackend() override {
    if (stream_) {
      cudaStreamSynchronize(stream_);
      cudaStreamDestroy(stream_);
    }
  }

  std::string_view name() const noexcept override { return kName; }
  Status status() const override { return status_; }

  std::vector<DeviceInfo> devices() const override {
    if (!status_.ok()) return {};
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, device_) != cudaSuccess) return {};
    DeviceInfo d;
    d.name = prop.name;
    d.compute_major = prop.major;
    d.compute_minor = prop.minor;
    std::size_t free = 0, total = 0;
    if (cudaMemGetInfo(&free, &total) == cudaSuccess) d.free_memory = free, d.total_memory = total;
    else d.total_memory = prop.totalGlobalMem;
    return {d};
  }

  bool host_accessible(MemoryKind kind) const noexcept override { return kind != MemoryKind::device; }

  Expected<std::unique_ptr<Buffer>> allocate(std::size_t bytes, MemoryKind kind) override {
    GRAFT_TRY(usable("allocate"));
    const std::size_t n = std::max<std::size_t>(bytes, 1);
    void* p = nullptr;
    cudaError_t e = cudaSuccess;
    switch (kind) {
      case MemoryKind::device: e = cudaMalloc(&p, n); break;
      case MemoryKind::pinned_host: e = cudaMallocHost(&p, n); break;
      case MemoryKind::host:
        p = std::aligned_alloc(256, (n + 255) / 256 * 256);
        if (!p) e = cudaErrorMemoryAllocation;
        break;
    }
    if (e != cudaSuccess)
      return Status(Errc::out_of_memory, "cuda backend: cannot allocate " + std::to_string(bytes) + " bytes of " +
                                             memory_kind_name(kind) + ": " + cuda_text(e));
    return std::unique_ptr<Buffer>(new CudaBuffer(p, bytes, kind));
  }

  Status copy(void* dst, MemoryKind, const void* src, MemoryKind, std::size_t bytes) override {
    GRAFT_TRY(usable("copy"));
    if (bytes && (!dst || !src)) return fail("copy", "a null pointer");
    GRAFT_TRY(check_cuda("copy", cudaStreamSynchronize(stream_)));
    return check_cuda("copy", cudaMemcpy(dst, src, bytes, cudaMemcpyDefault));
  }

  Status copy_async(void* dst, MemoryKind, const void* src, MemoryKind, std::size_t bytes) override {
    GRAFT_TRY(usable("copy_async"));
    if (bytes && (!dst || !src)) return fail("copy_async", "a null pointer");
    if (bytes == 0) return Status::success();
    return check_cuda("copy_async", cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream_));
  }

  Status synchronize() override {
    GRAFT_TRY(usable("synchronize"));
    return check_cuda("synchronize", cudaStreamSynchronize(stream_));
  }

  Expected<std::unique_ptr<Event>> record_event() override {
    GRAFT_TRY(usable("record_event"));
    cudaEvent_t e = nullptr;
    GRAFT_TRY(check_cuda("record_event", cudaEventCreateWithFlags(&e, cudaEventDisableTiming)));
    if (cudaError_t r = cudaEventRecord(e, stream_); r != cudaSuccess) {
      cudaEventDestroy(e);
      return check_cuda("record_event", r);
    }
    return std::unique_ptr<Event>(new CudaEvent(e));
  }

  bool graphs_supported() const noexcept override { return status_.ok(); }

  Status begin_capture() override {
    GRAFT_TRY(usable("begin_capture"));
    return check_cuda("begin_capture", cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
  }

  Status end_capture(std::unique_ptr<Graph>& graph) override {
    GRAFT_TRY(usable("end_capture"));
    cudaGraph_t g = nullptr;
    GRAFT_TRY(check_cuda("end_capture", cudaStreamEndCapture(stream_, &g)));
    struct Drop {
      cudaGraph_t g;
      ~Drop() { cudaGraphDestroy(g); }
    } drop{g};
    if (graph) {
      // The same launches with other pointers or sizes: update the instantiated graph in place.
      auto* cg = static_cast<CudaGraph*>(graph.get());
      cudaGraphExecUpdateResultInfo info{};
      if (cudaGraphExecUpdate(cg->exec_, g, &info) == cudaSuccess) return Status::success();
      cudaGetLastError();  // a refused update is not an error: instantiate anew
      cudaGraphExec_t exec = nullptr;
      GRAFT_TRY(check_cuda("end_capture", cudaGraphInstantiate(&exec, g, 0)));
      cudaGraphExecDestroy(cg->exec_);
      cg->exec_ = exec;
      ++cg->instantiations_;
      return Status::success();
    }
    cudaGraphExec_t exec = nullptr;
    GRAFT_TRY(check_cuda("end_capture", cudaGraphInstantiate(&exec, g, 0)));
    graph = std::make_unique<CudaGraph>(exec, stream_);
    return Status::success();
  }

  unsigned n_threads() const noexcept override { return 1; }
  void parallel_for(std::size_t n, const std::function<void(std::size_t, std::size_t)>& fn) override { fn(0, n); }
  void* native_stream() noexcept override { return stream_; }

  // ---- ops: the CPU backend's checks, then a launch ----
  Status rms_norm(const TensorView& x, const TensorView& w, float eps, const TensorView& y) override {
    constexpr const char* op = "rms_norm";
    GRAFT_TRY(usable(op));
    for (auto [name, t] : {std::pair{"x", &x}, {"y", &y}}) GRAFT_TRY(check(op, name, *t, true));
    GRAFT_TRY(check(op, "w", w, false));
    if (w.elements() != x.ne[0])
      return fail(op, "w has " + std::to_string(w.elements()) + " elements; expected ne[0] of x = " + std::to_string(x.ne[0]));
    if (auto e = cpu::check_eps(eps); !e.empty()) return fail(op, e);
    if (auto e = check_output("y", y, "x", x, true); !e.empty()) return fail(op, e);
    return launched(op, launch_rms_norm(stream_, rows_of(x), w.as<const float>(), eps, rows_of(y)));
  }

  Status rope(const TensorView& x, const TensorView& positions, const RopeParams& p, const TensorView& y) override {
    constexpr const char* op = "rope";
    GRAFT_TRY(usable(op));
    GRAFT_TRY(check(op, "x", x, true));
    GRAFT_TRY(check(op, "y", y, true));
    if (x.ne[3] != 1) return fail(op, "x has shape " + shape_string(x) + "; expected [head_dim, n_heads, n_tokens]");
    if (auto e = check_output("y", y, "x", x, true); !e.empty()) return fail(op, e);
    if (auto e = cpu::check_rope_params(x, p); !e.empty()) return fail(op, e);
    if (x.ne[1] == 0 || x.ne[2] == 0) return Status::success();
    const std::int32_t* pos = nullptr;
    if (auto e = cpu::check_index("positions", positions, x.ne[2], false, &pos); !e.empty()) return fail(op, e);
    GRAFT_TRY(device_readable(op, "positions", positions));
    const float theta_scale = std::pow(p.freq_base, -2.0f / static_cast<float>(p.n_rot));
    return launched(op, launch_rope(stream_, rows_of(x), pos, p.n_rot, p.neox, p.freq_scale, theta_scale, rows_of(y)));
  }

  Status add(const TensorView& a, const TensorView& b, const TensorView& y) override {
    constexpr const char* op = "add";
    GRAFT_TRY(usable(op));
    for (auto [name, t] : {std::pair{"a", &a}, {"b", &b}, {"y", &y}}) GRAFT_TRY(check(op, name, *t, false));
    const bool broadcast = !same_shape(a, b);
    if (broadcast && (b.ne[0] != a.ne[0] || b.rows() != 1))
      return fail(op, "b has shape " + shape_string(b) + "; expected " + shape_string(a) + " like a, or one row of " +
                          std::to_string(a.ne[0]));
    if (auto e = check_output("y", y, "a", a, true); !e.empty()) return fail(op, e);
    if (broadcast && overlap(y, b) != Overlap::none) return fail(op, "y overlaps b, which is broadcast over the rows");
    if (!broadcast)
      if (auto e = check_output("y", y, "b", b, true); !e.empty()) return fail(op, e);
    return launched(op, launch_add(stream_, a.as<const float>(), b.as<const float>(), y.as<float>(), a.ne[0], a.rows(),
                                   broadcast));
  }

  Status silu_mul(const TensorView& gate, const TensorView& up, const TensorView& y) override {
    return gated("silu_mul", gate, up, y, launch_silu_mul);
  }
  Status sigmoid_mul(const TensorView& x, const TensorView& g, const TensorView& y) override {
    return gated("sigmoid_mul", x, g, y, launch_sigmoid_mul);
  }

  Status l2_norm(const TensorView& x, float eps, const TensorView& y) override {
    constexpr const char* op = "l2_norm";
    GRAFT_TRY(usable(op));
    for (auto [name, t] : {std::pair{"x", &x}, {"y", &y}}) GRAFT_TRY(check(op, name, *t, true));
    if (auto e = cpu::check_eps(eps); !e.empty()) return fail(op, e);
    if (auto e = check_output("y", y, "x", x, true); !e.empty()) return fail(op, e);
    return launched(op, launch_l2_norm(stream_, rows_of(x), eps, rows_of(y)));
  }

  Status top_k(const TensorView& x, std::uint32_t k, const TensorView& ids, const TensorView& values) override {
    constexpr const char* op = "top_k";
    GRAFT_TRY(usable(op));
    GRAFT_TRY(check(op, "x", x, false));
    const std::int64_t n = x.ne[0], rows = x.rows();
    if (k < 1 || k > n) return fail(op, "k = " + std::to_string(k) + " must be between 1 and the row length " + std::to_string(n));
    if (auto e = check_dense("ids", ids, {type_id::i32}); !e.empty()) return fail(op, e);
    GRAFT_TRY(device_readable(op, "ids", ids));
    if (ids.ne[0] != k || ids.rows() != rows)
      return fail(op, "ids has shape " + shape_string(ids) + "; expected [" + std::to_string(k) + ", " +
                          std::to_string(rows) + "] (k, rows of x)");
    if (values.data) {
      GRAFT_TRY(check(op, "values", values, false));
      if (!same_shape(values, ids)) return fail(op, "values has shape " + shape_string(values) + "; expected " + shape_string(ids) + " like ids");
    }
    return launched(op, launch_top_k(stream_, x.as<const float>(), n, rows, k, ids.as<std::int32_t>(),
                                     values.data ? values.as<float>() : nullptr));
  }

  Status softmax(const TensorView& x, const TensorView& y) override {
    constexpr const char* op = "softmax";
    GRAFT_TRY(usable(op));
    GRAFT_TRY(check(op, "x", x, false));
    GRAFT_TRY(check(op, "y", y, false));
    if (!same_shape(x, y)) return fail(op, "y has shape " + shape_string(y) + "; expected " + shape_string(x) + " like x");
    const cpu::Overlap o = cpu::overlap(x, y);
    if (o != cpu::Overlap::none && o != cpu::Overlap::same) return fail(op, "y overlaps x without being x");
    return launched(op, launch_softmax(stream_, x.as<const float>(), x.ne[0], x.rows(), y.as<float>()));
  }

  // The delta-net (qwen35) on CUDA is part 2 of issue 37.
  Status delta_net_gates(const TensorView&, const TensorView&, const TensorView&, const TensorView&, const TensorView&,
                         const TensorView&) override {
    return not_on_cuda("delta_net_gates");
  }
  Status causal_conv_silu(const TensorView&, const TensorView&, const TensorView&, const TensorView&, const TensorView&,
                          const TensorView&) override {
    return not_on_cuda("causal_conv_silu");
  }
  Status gated_delta_net(const TensorView&, const TensorView&, const TensorView&, const TensorView&, const TensorView&,
                         const TensorView&, const TensorView&, const TensorView&, const TensorView&,
                         const TensorView&) override {
    return not_on_cuda("gated_delta_net");
  }
  Status delta_net_apply(const TensorView&, const TensorView&, const TensorView&, const TensorView&,
                         const TensorView&) override {
    return not_on_cuda("delta_net_apply");
  }
  Status conv_window_advance(const TensorView&, const TensorView&, const TensorView&) override {
    return not_on_cuda("conv_window_advance");
  }

 private:

  Status usable(const char* op) const {
    if (status_.ok()) return Status::success();
    return Status(status_.code(), std::string("cuda backend: ") + op + ": " + status_.message());
  }

  // Pageable host memory is not where a kernel can read.
  static Status device_readable(const char* op, const char* name, const TensorView& t) {
    if (t.memory != MemoryKind::host) return Status::success();
    return fail(op, std::string(name) + " is in host memory; the CUDA kernels read device or pinned host memory");
  }

  // An f32 tensor: row-strided or packed, in memory a kernel reads.
  static Status check(const char* op, const char* name, const TensorView& t, bool strided) {
    const std::string e = strided ? check_rows(name, t, {type_id::f32}) : check_dense(name, t, {type_id::f32});
    if (!e.empty()) return fail(op, e);
    return device_readable(op, name, t);
  }

  template <class Launch>
  Status gated(const char* op, const TensorView& a, const TensorView& b, const TensorView& y, Launch launch) {
    GRAFT_TRY(usable(op));
    for (auto [name, t] : {std::pair{"a", &a}, {"b", &b}, {"y", &y}}) GRAFT_TRY(check(op, name, *t, true));
    if (!same_shape(a, b) || !same_shape(a, y))
      return fail(op, "shapes differ: " + shape_string(a) + ", " + shape_string(b) + ", " + shape_string(y));
    return launched(op, launch(stream_, rows_of(a), rows_of(b), rows_of(y)));
  }

  static Status launched(const char* op, int error) { return check_cuda(op, static_cast<cudaError_t>(error)); }

  static Status not_on_cuda(const char* op) {
    return Status(Errc::not_implemented, std::string("cuda backend: ") + op +
                                             ": not implemented on cuda (qwen35's delta-net is part 2 of the CUDA backend)");
  }

  int device_ = 0;
  Status status_;
  cudaStream_t stream_ = nullptr;
};

const ConfigKeySpec kKeys[] = {
    {"device", ConfigType::integer, "CUDA device index (0 = the first)", 0, 64, false},
    {"threads", ConfigType::integer, "ignored: the CUDA backend computes on the device", 0, 4096, false},
};

PluginObject* create(const HostServices&, const Config& config, Status& error) noexcept {
  return guarded_create(error, [&]() -> PluginObject* {
    const int device = static_cast<int>(config.get_int("device").value_or(0));
    // No driver or no device is a status, not a failure to create: `graft plugins` shows it, and
    // a profile that asks for cuda fails with it.
    int count = 0;
    Status status = Status::success();
    if (cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess) {
      status = Status(Errc::unsupported, "no CUDA device: cudaGetDeviceCount returned " + std::to_string(int(e)) + " (" +
                                             cuda_text(e) + ")");
      cudaGetLastError();
    } else if (device >= count) {
      status = Status(Errc::unsupported, "no CUDA device " + std::to_string(device) + ": " + std::to_string(count) +
                                             " device(s) found");
    }
    return new CudaBackend(device, std::move(status));
  });
}

const PluginDescriptor kDescriptor{
    GRAFT_ABI_VERSION, sizeof(PluginDescriptor), PluginKind::backend, kName, GRAFT_SDK_VERSION_STRING,
    "CUDA backend: device memory, one stream, events, CUDA graphs, generic ops", kKeys, std::size(kKeys), &create,
};

}  // namespace

}  // namespace graft::cuda

GRAFT_PLUGIN(graft::cuda::kDescriptor)
