// The emulated device's backend plugin ("emu"): emu_device.hpp says what it emulates and why.
#include <array>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "cpu_backend.hpp"
#include "emu_device.hpp"
#include "graft/graft.hpp"

namespace graft::emu {

namespace {

constexpr const char* kName = "emu";


// A CPU buffer; device memory is handed out tagged.
class EmuBuffer final : public Buffer {
 public:
  EmuBuffer(std::unique_ptr<Buffer> inner, std::function<void()> drain) : inner_(std::move(inner)), drain_(std::move(drain)) {}
  // Queued work may still use it, as on a GPU (cudaFree waits): run it first.
  ~EmuBuffer() override { drain_(); }
  void* data() const noexcept override {
    return inner_->kind() == MemoryKind::device ? tag(inner_->data()) : inner_->data();
  }
  std::size_t size() const noexcept override { return inner_->size(); }
  MemoryKind kind() const noexcept override { return inner_->kind(); }

 private:
  std::unique_ptr<Buffer> inner_;
  std::function<void()> drain_;
};

struct Work {
  std::string what;
  std::function<Status()> fn;
};

class EmuBackend;

class EmuEvent final : public Event {
 public:
  EmuEvent(EmuBackend& b, std::uint64_t point) : b_(b), point_(point) {}
  bool ready() const noexcept override;
  Status synchronize() override;

 private:
  EmuBackend& b_;
  std::uint64_t point_;
};

class EmuGraph final : public Graph {
 public:
  EmuGraph(EmuBackend& b, std::vector<Work> work) : b_(b), work_(std::move(work)) {}
  Status launch() override;
  std::uint64_t instantiations() const noexcept override { return instantiations_; }

  // In place when the capture has the same steps (cudaGraphExecUpdate's "same topology").
  bool update(std::vector<Work>& work) {
    if (work.size() != work_.size()) return false;
    for (std::size_t i = 0; i < work.size(); ++i)
      if (work[i].what != work_[i].what) return false;
    work_ = std::move(work);
    return true;
  }
  void remake(std::vector<Work> work) {
    work_ = std::move(work);
    ++instantiations_;
  }

 private:
  EmuBackend& b_;
  std::vector<Work> work_;
  std::uint64_t instantiations_ = 1;
};

class EmuBackend final : public Backend, public Device {
 public:
  // device_bytes: the count the CPU backend behind it keeps (make_cpu_backend), owned here.
  EmuBackend(std::unique_ptr<Backend> cpu, std::unique_ptr<std::atomic<std::int64_t>> device_bytes)
      : device_bytes_(std::move(device_bytes)), cpu_(std::move(cpu)) {}
  ~EmuBackend() override { (void)synchronize(); }

  // ---- Device ----
  Backend& cpu() noexcept override { return *cpu_; }
  std::int64_t device_bytes() const noexcept override { return device_bytes_->load(); }

  Status enqueue(std::string what, std::function<Status()> fn) override {
    std::lock_guard lock(mu_);
    if (capturing_) {
      capture_.push_back({std::move(what), std::move(fn)});
      return Status::success();
    }
    queue_.push_back({std::move(what), std::move(fn)});
    ++queued_;
    return Status::success();
  }

  Status to_cpu(const TensorView& v, const char* op, const char* name, bool device_only,
                TensorView& out) const override {
    out = v;
    if (!v.data) return Status::success();
    if (v.memory == MemoryKind::device) {
      if (!tagged(v.data))
        return fail(op, std::string(name) + " is labelled device memory but points into host memory");
      out.data = untag(v.data);
      return Status::success();
    }
    if (tagged(v.data))
      return fail(op, std::string(name) + " is labelled " + memory_kind_name(v.memory) + " but points into device memory");
    if (device_only && v.memory == MemoryKind::host)
      return fail(op, std::string(name) + " is in pageable host memory; device work reads device or pinned host memory");
    return Status::success();
  }

  // ---- Backend ----
  std::string_view name() const noexcept override { return kName; }
  Status status() const override { return cpu_->status(); }
  std::vector<DeviceInfo> devices() const override {
    auto d = cpu_->devices();
    for (auto& i : d) i.name = "emulated device on " + i.name;
    return d;
  }
  bool host_accessible(MemoryKind kind) const noexcept override { return kind != MemoryKind::device; }

  Expected<std::unique_ptr<Buffer>> allocate(std::size_t bytes, MemoryKind kind) override {
    auto inner = cpu_->allocate(bytes, kind);
    if (!inner) return inner.status();
    return std::unique_ptr<Buffer>(new EmuBuffer(std::move(*inner), [this] { drain(); }));
  }

  Status copy(void* dst, MemoryKind dst_kind, const void* src, MemoryKind src_kind, std::size_t bytes) override {
    if (capturing()) return fail("copy", "a blocking copy while capturing a graph");
    GRAFT_TRY(synchronize());
    void* d = nullptr;
    const void* s = nullptr;
    GRAFT_TRY(pointers("copy", dst, dst_kind, src, src_kind, bytes, false, d, s));
    if (bytes) std::memcpy(d, s, bytes);
    return Status::success();
  }

  Status copy_async(void* dst, MemoryKind dst_kind, const void* src, MemoryKind src_kind, std::size_t bytes) override {
    void* d = nullptr;
    const void* s = nullptr;
    GRAFT_TRY(pointers("copy_async", dst, dst_kind, src, src_kind, bytes, capturing(), d, s));
    return enqueue("copy_async", [d, s, bytes] {
      if (bytes) std::memcpy(d, s, bytes);
      return Status::success();
    });
  }

  Status synchronize() override {
    if (capturing()) return fail("synchronize", "waiting for the device while capturing a graph");
    return run_until(UINT64_MAX);
  }

  Expected<std::unique_ptr<Event>> record_event() override {
    if (capturing()) return fail("record_event", "an event while capturing a graph");
    std::lock_guard lock(mu_);
    return std::unique_ptr<Event>(new EmuEvent(*this, queued_));
  }

  bool graphs_supported() const noexcept override { return true; }
  Status begin_capture() override {
    std::lock_guard lock(mu_);
    if (capturing_) return fail("begin_capture", "already capturing");
    capturing_ = true;
    capture_.clear();
    return Status::success();
  }
  Status end_capture(std::unique_ptr<Graph>& graph) override {
    std::vector<Work> work;
    {
      std::lock_guard lock(mu_);
      if (!capturing_) return fail("end_capture", "not capturing");
      capturing_ = false;
      work = std::move(capture_);
      capture_.clear();
    }
    if (!graph) {
      graph = std::make_unique<EmuGraph>(*this, std::move(work));
      return Status::success();
    }
    // Only graphs made here are updated (a kernel library's own could not be).
    auto* g = static_cast<EmuGraph*>(graph.get());
    if (!g->update(work)) g->remake(std::move(work));
    return Status::success();
  }

  unsigned n_threads() const noexcept override { return cpu_->n_threads(); }
  void parallel_for(std::size_t n, const std::function<void(std::size_t, std::size_t)>& fn) override {
    cpu_->parallel_for(n, fn);
  }
  void* native_stream() noexcept override { return static_cast<Device*>(this); }

  Status rms_norm(const TensorView& x, const TensorView& w, float eps, const TensorView& y) override {
    TensorView cx, cw, cy;
    GRAFT_TRY(to_cpu(x, "rms_norm", "x", true, cx));
    GRAFT_TRY(to_cpu(w, "rms_norm", "w", true, cw));
    GRAFT_TRY(to_cpu(y, "rms_norm", "y", true, cy));
    return enqueue("rms_norm", [this, cx, cw, eps, cy] { return cpu_->rms_norm(cx, cw, eps, cy); });
  }
  Status rope(const TensorView& x, const TensorView& positions, const RopeParams& p, const TensorView& y) override {
    TensorView cx, cp, cy;
    GRAFT_TRY(to_cpu(x, "rope", "x", true, cx));
    GRAFT_TRY(to_cpu(positions, "rope", "positions", true, cp));
    GRAFT_TRY(to_cpu(y, "rope", "y", true, cy));
    return enqueue("rope", [this, cx, cp, p, cy] { return cpu_->rope(cx, cp, p, cy); });
  }
  Status add(const TensorView& a, const TensorView& b, const TensorView& y) override {
    TensorView ca, cb, cy;
    GRAFT_TRY(to_cpu(a, "add", "a", true, ca));
    GRAFT_TRY(to_cpu(b, "add", "b", true, cb));
    GRAFT_TRY(to_cpu(y, "add", "y", true, cy));
    return enqueue("add", [this, ca, cb, cy] { return cpu_->add(ca, cb, cy); });
  }
  Status silu_mul(const TensorView& gate, const TensorView& up, const TensorView& y) override {
    TensorView cg, cu, cy;
    GRAFT_TRY(to_cpu(gate, "silu_mul", "gate", true, cg));
    GRAFT_TRY(to_cpu(up, "silu_mul", "up", true, cu));
    GRAFT_TRY(to_cpu(y, "silu_mul", "y", true, cy));
    return enqueue("silu_mul", [this, cg, cu, cy] { return cpu_->silu_mul(cg, cu, cy); });
  }
  Status sigmoid_mul(const TensorView& x, const TensorView& g, const TensorView& y) override {
    TensorView cx, cg, cy;
    GRAFT_TRY(to_cpu(x, "sigmoid_mul", "x", true, cx));
    GRAFT_TRY(to_cpu(g, "sigmoid_mul", "g", true, cg));
    GRAFT_TRY(to_cpu(y, "sigmoid_mul", "y", true, cy));
    return enqueue("sigmoid_mul", [this, cx, cg, cy] { return cpu_->sigmoid_mul(cx, cg, cy); });
  }
  Status l2_norm(const TensorView& x, float eps, const TensorView& y) override {
    TensorView cx, cy;
    GRAFT_TRY(to_cpu(x, "l2_norm", "x", true, cx));
    GRAFT_TRY(to_cpu(y, "l2_norm", "y", true, cy));
    return enqueue("l2_norm", [this, cx, eps, cy] { return cpu_->l2_norm(cx, eps, cy); });
  }
  Status delta_net_gates(const TensorView& alpha, const TensorView& beta, const TensorView& dt_bias,
                         const TensorView& ssm_a, const TensorView& g, const TensorView& b) override {
    TensorView c[6];
    GRAFT_TRY(to_cpu(alpha, "delta_net_gates", "alpha", true, c[0]));
    GRAFT_TRY(to_cpu(beta, "delta_net_gates", "beta", true, c[1]));
    GRAFT_TRY(to_cpu(dt_bias, "delta_net_gates", "dt_bias", true, c[2]));
    GRAFT_TRY(to_cpu(ssm_a, "delta_net_gates", "ssm_a", true, c[3]));
    GRAFT_TRY(to_cpu(g, "delta_net_gates", "g", true, c[4]));
    GRAFT_TRY(to_cpu(b, "delta_net_gates", "b", true, c[5]));
    return enqueue("delta_net_gates", [this, c0 = c[0], c1 = c[1], c2 = c[2], c3 = c[3], c4 = c[4], c5 = c[5]] {
      return cpu_->delta_net_gates(c0, c1, c2, c3, c4, c5);
    });
  }
  Status causal_conv_silu(const TensorView& x, const TensorView& w, const TensorView& state, const TensorView& parents,
                          const TensorView& y, const TensorView& state_out) override {
    TensorView c[6];
    GRAFT_TRY(to_cpu(x, "causal_conv_silu", "x", true, c[0]));
    GRAFT_TRY(to_cpu(w, "causal_conv_silu", "w", true, c[1]));
    GRAFT_TRY(to_cpu(state, "causal_conv_silu", "state", true, c[2]));
    GRAFT_TRY(to_cpu(parents, "causal_conv_silu", "parents", true, c[3]));
    GRAFT_TRY(to_cpu(y, "causal_conv_silu", "y", true, c[4]));
    GRAFT_TRY(to_cpu(state_out, "causal_conv_silu", "state_out", true, c[5]));
    return enqueue("causal_conv_silu", [this, c0 = c[0], c1 = c[1], c2 = c[2], c3 = c[3], c4 = c[4], c5 = c[5]] {
      return cpu_->causal_conv_silu(c0, c1, c2, c3, c4, c5);
    });
  }
  Status gated_delta_net(const TensorView& q, const TensorView& k, const TensorView& v, const TensorView& g,
                         const TensorView& b, const TensorView& state, const TensorView& parents, const TensorView& out,
                         const TensorView& state_out, const TensorView& deltas) override {
    const TensorView* in[10] = {&q, &k, &v, &g, &b, &state, &parents, &out, &state_out, &deltas};
    static const char* const names[10] = {"q", "k", "v", "g", "b", "state", "parents", "out", "state_out", "deltas"};
    std::array<TensorView, 10> c;
    for (int i = 0; i < 10; ++i) GRAFT_TRY(to_cpu(*in[i], "gated_delta_net", names[i], true, c[i]));
    return enqueue("gated_delta_net", [this, c] {
      return cpu_->gated_delta_net(c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7], c[8], c[9]);
    });
  }
  Status delta_net_apply(const TensorView& k, const TensorView& d, const TensorView& g, const TensorView& rows,
                         const TensorView& state) override {
    std::array<TensorView, 5> c;
    GRAFT_TRY(to_cpu(k, "delta_net_apply", "k", true, c[0]));
    GRAFT_TRY(to_cpu(d, "delta_net_apply", "d", true, c[1]));
    GRAFT_TRY(to_cpu(g, "delta_net_apply", "g", true, c[2]));
    GRAFT_TRY(to_cpu(rows, "delta_net_apply", "rows", true, c[3]));
    GRAFT_TRY(to_cpu(state, "delta_net_apply", "state", true, c[4]));
    return enqueue("delta_net_apply", [this, c] { return cpu_->delta_net_apply(c[0], c[1], c[2], c[3], c[4]); });
  }
  Status conv_window_advance(const TensorView& x, const TensorView& rows, const TensorView& state) override {
    std::array<TensorView, 3> c;
    GRAFT_TRY(to_cpu(x, "conv_window_advance", "x", true, c[0]));
    GRAFT_TRY(to_cpu(rows, "conv_window_advance", "rows", true, c[1]));
    GRAFT_TRY(to_cpu(state, "conv_window_advance", "state", true, c[2]));
    return enqueue("conv_window_advance", [this, c] { return cpu_->conv_window_advance(c[0], c[1], c[2]); });
  }
  Status top_k(const TensorView& x, std::uint32_t k, const TensorView& ids, const TensorView& values) override {
    TensorView cx, ci, cv;
    GRAFT_TRY(to_cpu(x, "top_k", "x", true, cx));
    GRAFT_TRY(to_cpu(ids, "top_k", "ids", true, ci));
    GRAFT_TRY(to_cpu(values, "top_k", "values", true, cv));
    return enqueue("top_k", [this, cx, k, ci, cv] { return cpu_->top_k(cx, k, ci, cv); });
  }
  Status softmax(const TensorView& x, const TensorView& y) override {
    TensorView cx, cy;
    GRAFT_TRY(to_cpu(x, "softmax", "x", true, cx));
    GRAFT_TRY(to_cpu(y, "softmax", "y", true, cy));
    return enqueue("softmax", [this, cx, cy] { return cpu_->softmax(cx, cy); });
  }

  // Runs queued work until `point` items have run in all, and reports the first failure (once).
  // The work queued after a failure is dropped, as a failed CUDA stream's never runs.
  Status run_until(std::uint64_t point) {
    std::lock_guard lock(mu_);
    step_until(point);
    return std::exchange(error_, Status::success());
  }
  bool has_run(std::uint64_t point) {
    std::lock_guard lock(mu_);
    return ran_ >= point;
  }
  // Runs everything queued; a failure waits for the next synchronize to be reported.
  void drain() {
    std::lock_guard lock(mu_);
    step_until(UINT64_MAX);
  }
  bool capturing() {
    std::lock_guard lock(mu_);
    return capturing_;
  }

 private:
  void step_until(std::uint64_t point) {
    while (ran_ < queued_ && ran_ < point) {
      Work w = std::move(queue_.front());
      queue_.pop_front();
      ++ran_;
      Status st = w.fn();
      if (!st.ok()) {
        if (error_.ok()) error_ = Status(st.code(), "emu: queued " + w.what + " failed: " + st.message());
        ran_ = queued_;
        queue_.clear();
      }
    }
  }

  static Status fail(const char* op, const std::string& what) {
    return Status(Errc::invalid_argument, std::string("emu ") + op + ": " + what);
  }

  Status pointers(const char* op, void* dst, MemoryKind dk, const void* src, MemoryKind sk, std::size_t bytes,
                  bool device_only, void*& d, const void*& s) const {
    TensorView vd, vs, cd, cs;
    vd.data = dst, vd.memory = dk;
    vs.data = const_cast<void*>(src), vs.memory = sk;
    if (bytes && (!dst || !src)) return fail(op, "a null pointer");
    GRAFT_TRY(to_cpu(vd, op, "dst", device_only, cd));
    GRAFT_TRY(to_cpu(vs, op, "src", device_only, cs));
    d = cd.data;
    s = cs.data;
    return Status::success();
  }

  std::unique_ptr<std::atomic<std::int64_t>> device_bytes_;  // declared first: outlives cpu_
  std::unique_ptr<Backend> cpu_;
  std::recursive_mutex mu_;
  std::deque<Work> queue_;
  std::uint64_t queued_ = 0, ran_ = 0;
  Status error_ = Status::success();
  bool capturing_ = false;
  std::vector<Work> capture_;
};

bool EmuEvent::ready() const noexcept { return b_.has_run(point_); }
Status EmuEvent::synchronize() { return b_.run_until(point_); }

Status EmuGraph::launch() {
  if (b_.capturing()) return Status(Errc::invalid_argument, "emu graph launch: while capturing a graph");
  for (const Work& w : work_) GRAFT_TRY(b_.enqueue(w.what, w.fn));
  return Status::success();
}

const ConfigKeySpec kKeys[] = {
    {"threads", ConfigType::integer, "CPU worker threads; 0 = one per logical core", 0, 4096, false},
};

PluginObject* create(const HostServices&, const Config& config, Status& error) noexcept {
  return guarded_create(error, [&]() -> PluginObject* {
    auto counter = std::make_unique<std::atomic<std::int64_t>>(0);
    auto cpu = cpu::make_cpu_backend(static_cast<unsigned>(config.get_int("threads").value_or(0)), counter.get());
    if (!cpu) {
      error = cpu.status();
      return nullptr;
    }
    return new EmuBackend(std::move(*cpu), std::move(counter));
  });
}

const PluginDescriptor kDescriptor{
    GRAFT_ABI_VERSION, sizeof(PluginDescriptor), PluginKind::backend, kName, GRAFT_SDK_VERSION_STRING,
    "an emulated device for tests: device memory the host cannot read, a deferred stream, graphs", kKeys,
    std::size(kKeys), &create,
};

}  // namespace

}  // namespace graft::emu

GRAFT_PLUGIN(graft::emu::kDescriptor)
