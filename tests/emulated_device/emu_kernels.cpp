// The emulated device's kernel library ("emu"): the weight formats and the `device` KV store on
// the emulated device (emu_device.hpp), as graft's CUDA kernel library brings them to the CUDA
// backend. The kernels are the CPU's, run on the device's stream over its memory: prepare uploads
// the weights (the file's bytes, or the CPU kernels' own layout), matmul and get_rows read only
// that copy, and the KV store keeps its K/V where the host cannot see them.
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "device_store.hpp"
#include "slot_book.hpp"
#include "emu_device.hpp"
#include "emu_sysram_store.hpp"
#include "graft/graft.hpp"

namespace graft::emu {

namespace {

// The types graft's CUDA kernel library brings first (issue 37): the others are "no kernels".
constexpr TypeId kTypes[] = {type_id::f32, type_id::f16, type_id::bf16, type_id::q8_0, type_id::q4_k, type_id::q1_0};

Status fail(const std::string& what) { return Status(Errc::invalid_argument, "emu kernels: " + what); }

Expected<Device*> device_of(Backend& backend) {
  if (backend.name() != "emu") return fail("backend '" + std::string(backend.name()) + "' is not the emulated device");
  return static_cast<Device*>(backend.native_stream());
}

// Bytes of a packed tensor (weights are packed: rows of whole blocks, one after another).
std::size_t packed_bytes(const TensorView& w) {
  return w.nb[1] * static_cast<std::size_t>(w.ne[1] * w.ne[2] * w.ne[3]);
}

// The weights on the device: the file's bytes, and the CPU kernels' layout where they have one
// (their get_rows reads the file's bytes even then).
class EmuPrepared final : public PreparedWeights {
 public:
  std::uint64_t bytes() const noexcept override { return raw->size() + (cpu ? cpu->bytes() : 0); }
  const char* layout() const noexcept override { return cpu ? cpu->layout() : "file layout, uploaded"; }

  std::unique_ptr<Buffer> raw;           // the file's bytes in device memory (tagged)
  std::unique_ptr<PreparedWeights> cpu;  // the CPU kernels' layout (in the device's memory), or null
};

class EmuFormatKernels final : public FormatKernels {
 public:
  EmuFormatKernels(const HostServices& host, TypeId type) : host_(host), type_(type) {}

  Status prepare(Backend& backend, const TensorView& w, std::unique_ptr<PreparedWeights>& out) override {
    auto dev = device_of(backend);
    if (!dev) return dev.status();
    FormatKernels* k = nullptr;
    GRAFT_TRY(cpu_kernels(k));
    if (!backend.host_accessible(w.memory)) return fail("prepare: the weights arrive in device memory, not the host's");
    auto p = std::make_unique<EmuPrepared>();
    GRAFT_TRY(k->prepare((*dev)->cpu(), w, p->cpu));
    const std::size_t bytes = packed_bytes(w);
    auto buf = backend.allocate(bytes, MemoryKind::device);
    if (!buf) return buf.status();
    GRAFT_TRY(backend.copy((*buf)->data(), MemoryKind::device, w.data, w.memory, bytes));
    p->raw = std::move(*buf);
    out = std::move(p);
    return Status::success();
  }

  // The upload and the CPU kernels' copy, as prepare makes them (0 where the backend is not emu's).
  std::uint64_t prepared_bytes(Backend& backend, const TensorView& w) override {
    auto dev = device_of(backend);
    FormatKernels* k = nullptr;
    if (!dev || !cpu_kernels(k).ok()) return 0;
    return packed_bytes(w) + k->prepared_bytes((*dev)->cpu(), w);
  }

  Status matmul(Backend& backend, const TensorView& w, const PreparedWeights* prepared, const TensorView& x,
                const TensorView& y) override {
    auto dev = device_of(backend);
    if (!dev) return dev.status();
    FormatKernels* k = nullptr;
    GRAFT_TRY(cpu_kernels(k));
    TensorView cw, cx, cy;
    GRAFT_TRY(weights(**dev, w, prepared, "matmul", cw));
    GRAFT_TRY((*dev)->to_cpu(x, "matmul", "x", true, cx));
    GRAFT_TRY((*dev)->to_cpu(y, "matmul", "y", true, cy));
    const PreparedWeights* cp = static_cast<const EmuPrepared*>(prepared)->cpu.get();
    Backend* cpu = &(*dev)->cpu();
    return (*dev)->enqueue("matmul", [k, cpu, cw, cp, cx, cy] { return k->matmul(*cpu, cw, cp, cx, cy); });
  }

  Status get_rows(Backend& backend, const TensorView& table, const PreparedWeights* prepared, const TensorView& ids,
                  const TensorView& y) override {
    auto dev = device_of(backend);
    if (!dev) return dev.status();
    FormatKernels* k = nullptr;
    GRAFT_TRY(cpu_kernels(k));
    TensorView ct, ci, cy;
    GRAFT_TRY(weights(**dev, table, prepared, "get_rows", ct));
    GRAFT_TRY((*dev)->to_cpu(ids, "get_rows", "ids", true, ci));
    GRAFT_TRY((*dev)->to_cpu(y, "get_rows", "y", true, cy));
    const PreparedWeights* cp = static_cast<const EmuPrepared*>(prepared)->cpu.get();
    Backend* cpu = &(*dev)->cpu();
    return (*dev)->enqueue("get_rows", [k, cpu, ct, cp, ci, cy] { return k->get_rows(*cpu, ct, cp, ci, cy); });
  }

 private:
  Status cpu_kernels(FormatKernels*& k) const {
    k = host_.format_kernels(type_, "cpu");
    if (!k) return fail("type " + std::to_string(type_) + " has no CPU kernels to emulate");
    return Status::success();
  }

  // The weights as the CPU kernels read them: never the host's copy (a GPU cannot read it), only
  // the uploaded one.
  static Status weights(const Device& dev, const TensorView& w, const PreparedWeights* prepared, const char* op,
                        TensorView& out) {
    if (!prepared) return fail(std::string(op) + ": the weights were not uploaded (no prepared copy)");
    const auto* p = static_cast<const EmuPrepared*>(prepared);
    TensorView d = w;
    d.data = p->raw->data();
    d.memory = MemoryKind::device;
    return dev.to_cpu(d, op, "w", true, out);
  }

  const HostServices& host_;
  TypeId type_;
};

// The `device` store on the emulated device: the CPU's device store, its writes, attention and
// moves queued on the stream; its size kept on the host at enqueue time (as a GPU store's must be,
// since the host plans the next pass before the last one ran).
class EmuKvStore final : public KvStore {
 public:
  EmuKvStore(Device& dev, std::unique_ptr<KvStore> inner)
      : dev_(dev), inner_(std::move(inner)), g_(inner_->geometry()), book_(g_) {}

  KvGeometry geometry() const noexcept override { return g_; }
  std::uint32_t size() const noexcept override { return book_.size(); }
  bool lossless() const noexcept override { return inner_->lossless(); }
  KvMemory memory() const noexcept override { return inner_->memory(); }

  Status write(std::uint32_t layer, std::uint32_t slot, std::uint32_t n, const TensorView& k,
               const TensorView& v) override {
    GRAFT_TRY(book_.check_write(layer, slot, n));
    TensorView ck, cv;
    GRAFT_TRY(dev_.to_cpu(k, "kv write", "k", true, ck));
    GRAFT_TRY(dev_.to_cpu(v, "kv write", "v", true, cv));
    GRAFT_TRY(dev_.enqueue("kv write", [s = inner_.get(), layer, slot, n, ck, cv] { return s->write(layer, slot, n, ck, cv); }));
    book_.wrote(layer, slot, n);
    return Status::success();
  }

  Status attend(std::uint32_t layer, const TensorView& q, const AttentionBatch& batch, const TensorView& out) override {
    GRAFT_TRY(book_.check_attend(layer, batch.n_past, batch.n_query));
    TensorView cq, co;
    AttentionBatch cb = batch;
    GRAFT_TRY(dev_.to_cpu(q, "kv attend", "q", true, cq));
    GRAFT_TRY(dev_.to_cpu(out, "kv attend", "out", true, co));
    GRAFT_TRY(dev_.to_cpu(batch.ancestor, "kv attend", "ancestor", true, cb.ancestor));
    return dev_.enqueue("kv attend", [s = inner_.get(), layer, cq, cb, co] { return s->attend(layer, cq, cb, co); });
  }

  Status truncate(std::uint32_t n) override {
    GRAFT_TRY(book_.check_truncate(n));
    GRAFT_TRY(dev_.enqueue("kv truncate", [s = inner_.get(), n] { return s->truncate(n); }));
    book_.set_all(n);
    return Status::success();
  }

  Status compact(std::uint32_t dst, std::span<const std::uint32_t> src) override {
    GRAFT_TRY(book_.check_compact(dst, src));
    std::vector<std::uint32_t> moved(src.begin(), src.end());
    GRAFT_TRY(dev_.enqueue("kv compact", [s = inner_.get(), dst, moved] { return s->compact(dst, moved); }));
    book_.set_all(static_cast<std::uint32_t>(dst + src.size()));
    return Status::success();
  }

 private:
  Device& dev_;
  std::unique_ptr<KvStore> inner_;
  KvGeometry g_;
  kv::SlotBook book_;  // the CPU store's bookkeeping and errors, kept on the host at enqueue time
};

class EmuLibrary final : public KernelLibrary {
 public:
  explicit EmuLibrary(const HostServices& host) {
    for (TypeId t : kTypes) kernels_.push_back(std::make_unique<EmuFormatKernels>(host, t));
  }
  std::string_view backend() const noexcept override { return "emu"; }
  std::span<const TypeId> types() const noexcept override { return kTypes; }
  FormatKernels* kernels(TypeId type) noexcept override {
    for (std::size_t i = 0; i < std::size(kTypes); ++i)
      if (kTypes[i] == type) return kernels_[i].get();
    return nullptr;
  }
  bool has_kv_store(std::string_view store) const noexcept override { return store == "device" || store == "sysram"; }
  Expected<std::unique_ptr<KvStore>> create_kv_store(std::string_view store, const Config& config, Backend& backend,
                                                     const KvGeometry& geometry) override {
    if (store != "device" && store != "sysram") return fail("no KV store '" + std::string(store) + "'");
    auto dev = device_of(backend);
    if (!dev) return dev.status();
    if (store == "sysram") {
      auto options = kv::parse_sysram_options(config);
      if (!options) return options.status();
      return make_sysram_store(**dev, backend, geometry, *options);
    }
    const std::string type = config.get_string("type").value_or("f16");
    const kv::CacheType t = type == "f32" ? kv::CacheType::f32 : kv::CacheType::f16;
    auto inner = kv::DeviceKvStore::create((*dev)->cpu(), geometry, t, t);
    if (!inner) return inner.status();
    return std::unique_ptr<KvStore>(new EmuKvStore(**dev, std::move(*inner)));
  }

 private:
  std::vector<std::unique_ptr<EmuFormatKernels>> kernels_;
};

PluginObject* create(const HostServices& host, const Config&, Status& error) noexcept {
  return guarded_create(error, [&] { return new EmuLibrary(host); });
}

const PluginDescriptor kDescriptor{
    GRAFT_ABI_VERSION, sizeof(PluginDescriptor), PluginKind::kernels, "emu", GRAFT_SDK_VERSION_STRING,
    "kernels of the emulated device for tests: f32, f16, bf16, q8_0, q4_k, q1_0, the device and sysram KV stores",
    nullptr, 0,
    &create,
};

}  // namespace

}  // namespace graft::emu

GRAFT_PLUGIN(graft::emu::kDescriptor)
