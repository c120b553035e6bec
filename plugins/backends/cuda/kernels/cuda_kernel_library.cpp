// graft's CUDA kernel library ("cuda", libgraft_kernels_cuda.so): the CUDA kernels of the built-in
// formats f32, f16, bf16, q8_0, q4_k and q1_0 (weight_kernels.cu) and the `device` KV store on the
// GPU (kv_kernels.cu), for the CUDA backend (plugins/backends/cuda). The format plugins link no
// CUDA library: the host asks this library for a type when a format has no kernels for "cuda"
// (kernel_library.hpp). Weights are uploaded once by prepare() and read in the file's block layout.
// Work is launched on the backend's stream (Backend::native_stream()).
#include <cuda_runtime.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "graft/graft.hpp"
#include "kv_kernels.hpp"
#include "slot_book.hpp"
#include "weight_kernels.hpp"

namespace graft::cuda {

namespace {

constexpr TypeId kTypes[] = {type_id::f32, type_id::f16, type_id::bf16, type_id::q8_0, type_id::q4_k, type_id::q1_0};

Status fail(Errc code, const std::string& what) { return Status(code, "cuda kernels: " + what); }

Status launched(int e, const char* what) {
  if (e == 0) return Status::success();
  const auto err = static_cast<cudaError_t>(e);
  return fail(Errc::internal, std::string(what) + ": " + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")");
}

Status on_cuda(const Backend& b, const char* op) {
  if (b.name() != "cuda")
    return fail(Errc::invalid_argument, std::string(op) + ": backend '" + std::string(b.name()) + "' is not cuda");
  return Status::success();
}

// An f32 view a kernel can read: device or pinned memory, rows of ne[0] contiguous floats
// nb[1] bytes apart over all of dimensions 1..3 (a packed or row-strided 2-D view).
Status check_rows(const TensorView& t, const char* op, const char* name, std::int64_t ne0, std::int64_t rows,
                  std::int64_t& ld) {
  const std::string what = std::string(op) + ": " + name;
  if (t.type != type_id::f32) return fail(Errc::invalid_argument, what + " must be f32");
  if (t.memory == MemoryKind::host)
    return fail(Errc::invalid_argument, what + " is in host memory; the CUDA kernels read device or pinned host memory");
  if (!t.data && rows) return fail(Errc::invalid_argument, what + " has no data");
  if (t.ne[0] != ne0 || t.rows() != rows)
    return fail(Errc::invalid_argument, what + " is [" + std::to_string(t.ne[0]) + ", " + std::to_string(t.rows()) +
                                            "], expected [" + std::to_string(ne0) + ", " + std::to_string(rows) + "]");
  if (t.nb[0] != sizeof(float) || t.nb[1] % sizeof(float) != 0 || t.nb[1] < ne0 * sizeof(float) ||
      (t.ne[2] > 1 && t.nb[2] != t.nb[1] * t.ne[1]) || (t.ne[3] > 1 && t.nb[3] != t.nb[2] * t.ne[2]))
    return fail(Errc::invalid_argument, what + ": rows must be contiguous and evenly spaced");
  ld = static_cast<std::int64_t>(t.nb[1] / sizeof(float));
  return Status::success();
}

class CudaPrepared final : public PreparedWeights {
 public:
  explicit CudaPrepared(std::unique_ptr<Buffer> b) : buf(std::move(b)) {}
  std::uint64_t bytes() const noexcept override { return buf->size(); }
  const char* layout() const noexcept override { return "file layout, in device memory"; }
  std::unique_ptr<Buffer> buf;
};

class CudaFormatKernels final : public FormatKernels {
 public:
  explicit CudaFormatKernels(TypeId type) : type_(type) {}

  Status prepare(Backend& backend, const TensorView& w, std::unique_ptr<PreparedWeights>& out) override {
    GRAFT_TRY(on_cuda(backend, "prepare"));
    GRAFT_TRY(check_weights(w, "prepare"));
    if (!backend.host_accessible(w.memory)) return fail(Errc::invalid_argument, "prepare: the weights must arrive in host memory");
    const std::size_t bytes = w.nb[1] * static_cast<std::size_t>(w.rows());
    auto buf = backend.allocate(bytes, MemoryKind::device);
    if (!buf) return buf.status();
    GRAFT_TRY(backend.copy((*buf)->data(), MemoryKind::device, w.data, w.memory, bytes));
    out = std::make_unique<CudaPrepared>(std::move(*buf));
    return Status::success();
  }

  // prepare uploads the file's bytes as they are.
  std::uint64_t prepared_bytes(Backend&, const TensorView& w) override {
    return static_cast<std::uint64_t>(w.nb[1]) * static_cast<std::uint64_t>(w.rows());
  }

  Status matmul(Backend& backend, const TensorView& w, const PreparedWeights* prepared, const TensorView& x,
                const TensorView& y) override {
    GRAFT_TRY(on_cuda(backend, "matmul"));
    GRAFT_TRY(check_weights(w, "matmul"));
    if (!prepared) return fail(Errc::invalid_argument, "matmul: the weights are not on the device (prepare them at load)");
    const std::int64_t k = w.ne[0], m = w.rows(), n = x.rows();
    std::int64_t ldx = 0, ldy = 0;
    GRAFT_TRY(check_rows(x, "matmul", "x", k, n, ldx));
    GRAFT_TRY(check_rows(y, "matmul", "y", m, n, ldy));
    return launched(launch_weight_matmul(backend.native_stream(), type_, static_cast<const CudaPrepared*>(prepared)->buf->data(),
                                         w.nb[1], k, m, x.as<float>(), ldx, n, y.as<float>(), ldy),
                    "matmul");
  }

  Status get_rows(Backend& backend, const TensorView& table, const PreparedWeights* prepared, const TensorView& ids,
                  const TensorView& y) override {
    GRAFT_TRY(on_cuda(backend, "get_rows"));
    GRAFT_TRY(check_weights(table, "get_rows"));
    if (!prepared) return fail(Errc::invalid_argument, "get_rows: the table is not on the device (prepare it at load)");
    if (ids.type != type_id::i32 || ids.rows() != 1)
      return fail(Errc::invalid_argument, "get_rows: ids must be an i32 vector");
    if (ids.memory == MemoryKind::host)
      return fail(Errc::invalid_argument, "get_rows: ids are in host memory; the CUDA kernels read device or pinned host memory");
    const std::int64_t n = ids.ne[0];
    std::int64_t ldy = 0;
    GRAFT_TRY(check_rows(y, "get_rows", "y", table.ne[0], n, ldy));
    return launched(launch_weight_get_rows(backend.native_stream(), type_,
                                           static_cast<const CudaPrepared*>(prepared)->buf->data(), table.nb[1], table.ne[0],
                                           table.rows(), ids.as<std::int32_t>(), n, y.as<float>(), ldy),
                    "get_rows");
  }

 private:
  Status check_weights(const TensorView& w, const char* op) const {
    if (w.type != type_) return fail(Errc::invalid_argument, std::string(op) + ": weights of type " + std::to_string(w.type) +
                                                                 " given to the kernels of type " + std::to_string(type_));
    if (w.ne[0] % 32 != 0)
      return fail(Errc::not_implemented, std::string(op) + ": rows of " + std::to_string(w.ne[0]) +
                                             " elements (the CUDA kernels take multiples of 32)");
    return Status::success();
  }

  TypeId type_;
};

// The `device` KV store on the GPU: the CPU store's layout and rules (plugins/kvstores/device),
// its K/V in device memory, its writes, attention and compaction launched on the stream.
class CudaKvStore final : public KvStore {
 public:
  static Expected<std::unique_ptr<KvStore>> create(Backend& backend, const KvGeometry& g, bool f16) {
    if (!g.n_layers || !g.n_kv_heads || !g.head_dim_k || !g.head_dim_v || !g.capacity)
      return fail(Errc::invalid_argument, "kv store: a geometry with a zero");
    if (g.head_dim_k > 256 || g.head_dim_v > 256)
      return fail(Errc::not_implemented, "kv store: head dimensions above 256");
    std::unique_ptr<CudaKvStore> s(new CudaKvStore(backend, g, f16));
    const std::size_t elt = f16 ? 2 : 4;
    for (std::uint32_t l = 0; l < g.n_layers; ++l) {
      for (auto [list, dim] : {std::pair{&s->k_, g.head_dim_k}, std::pair{&s->v_, g.head_dim_v}}) {
        auto b = backend.allocate(std::size_t(g.n_kv_heads) * g.capacity * dim * elt, MemoryKind::device);
        if (!b) return b.status();
        s->bytes_ += (*b)->size();
        list->push_back(std::move(*b));
      }
    }
    auto staging = backend.allocate(std::size_t(g.capacity) * sizeof(std::uint32_t), MemoryKind::pinned_host);
    if (!staging) return staging.status();
    auto src = backend.allocate(std::size_t(g.capacity) * sizeof(std::uint32_t), MemoryKind::device);
    if (!src) return src.status();
    s->staging_ = std::move(*staging);
    s->src_ = std::move(*src);
    return std::unique_ptr<KvStore>(std::move(s));
  }

  KvGeometry geometry() const noexcept override { return g_; }
  std::uint32_t size() const noexcept override { return book_.size(); }
  bool lossless() const noexcept override { return !f16_; }
  KvMemory memory() const noexcept override { return {bytes_, 0}; }

  Status write(std::uint32_t layer, std::uint32_t slot, std::uint32_t n, const TensorView& k,
               const TensorView& v) override {
    GRAFT_TRY(book_.check_write(layer, slot, n));
    HeadRows kr, vr;
    GRAFT_TRY(head_rows(k, "kv write: k", g_.head_dim_k, g_.n_kv_heads, n, kr));
    GRAFT_TRY(head_rows(v, "kv write: v", g_.head_dim_v, g_.n_kv_heads, n, vr));
    if (n == 0) return Status::success();
    GRAFT_TRY(launched(launch_kv_write(be_.native_stream(), layer_of(layer), slot, n, kr, vr), "kv write"));
    book_.wrote(layer, slot, n);
    return Status::success();
  }

  Status attend(std::uint32_t layer, const TensorView& q, const AttentionBatch& b, const TensorView& out) override {
    GRAFT_TRY(book_.check_attend(layer, b.n_past, b.n_query));
    if (b.sliding_window) return fail(Errc::not_implemented, "kv attend: a sliding window on cuda");
    const auto n_heads = static_cast<std::uint32_t>(q.ne[1]);
    if (n_heads == 0 || n_heads % g_.n_kv_heads != 0)
      return fail(Errc::invalid_argument, "kv attend: " + std::to_string(n_heads) + " query heads for " +
                                              std::to_string(g_.n_kv_heads) + " KV heads");
    HeadRows qr, orows;
    GRAFT_TRY(head_rows(q, "kv attend: q", g_.head_dim_k, n_heads, b.n_query, qr));
    GRAFT_TRY(head_rows(out, "kv attend: out", g_.head_dim_v, n_heads, b.n_query, orows));
    if (b.ancestor.data) {
      if (b.ancestor.type != type_id::i8 || b.ancestor.ne[0] != b.n_query || b.ancestor.ne[1] != b.n_query)
        return fail(Errc::invalid_argument, "kv attend: the ancestor mask must be i8 [n_query, n_query]");
      if (b.ancestor.memory == MemoryKind::host)
        return fail(Errc::invalid_argument, "kv attend: the ancestor mask is in host memory");
    }
    return launched(launch_attention(be_.native_stream(), layer_of(layer), qr, n_heads, b.n_query, b.n_past,
                                     static_cast<const std::uint8_t*>(b.ancestor.data), b.scale, orows),
                    "kv attend");
  }

  Status truncate(std::uint32_t n) override {
    GRAFT_TRY(book_.check_truncate(n));
    book_.set_all(n);
    return Status::success();
  }

  Status compact(std::uint32_t dst, std::span<const std::uint32_t> src) override {
    GRAFT_TRY(book_.check_compact(dst, src));
    if (!src.empty()) {
      // The staging buffer may still be read by the last compaction's copy.
      if (cudaError_t e = cudaStreamSynchronize(static_cast<cudaStream_t>(be_.native_stream())); e != cudaSuccess)
        return launched(static_cast<int>(e), "kv compact");
      std::copy(src.begin(), src.end(), static_cast<std::uint32_t*>(staging_->data()));
      GRAFT_TRY(be_.copy_async(src_->data(), MemoryKind::device, staging_->data(), MemoryKind::pinned_host,
                               src.size() * sizeof(std::uint32_t)));
      for (std::uint32_t l = 0; l < g_.n_layers; ++l)
        GRAFT_TRY(launched(launch_kv_compact(be_.native_stream(), layer_of(l), dst, static_cast<const std::uint32_t*>(src_->data()),
                                             static_cast<std::uint32_t>(src.size())),
                           "kv compact"));
    }
    book_.set_all(static_cast<std::uint32_t>(dst + src.size()));
    return Status::success();
  }

 private:
  CudaKvStore(Backend& be, const KvGeometry& g, bool f16) : be_(be), g_(g), f16_(f16), book_(g) {}

  KvLayer layer_of(std::uint32_t l) const {
    return KvLayer{k_[l]->data(), v_[l]->data(), f16_, g_.n_kv_heads, g_.head_dim_k, g_.head_dim_v, g_.capacity};
  }

  // [dim, heads, n] f32 rows of dim contiguous floats, in memory the kernels read.
  static Status head_rows(const TensorView& t, const std::string& what, std::uint32_t dim, std::uint32_t heads, std::uint32_t n,
                          HeadRows& out) {
    if (t.type != type_id::f32) return fail(Errc::invalid_argument, what + " must be f32");
    if (t.memory == MemoryKind::host) return fail(Errc::invalid_argument, what + " is in host memory");
    if (t.ne[0] != dim || t.ne[1] != heads || t.ne[2] != n || t.ne[3] != 1 || t.nb[0] != sizeof(float))
      return fail(Errc::invalid_argument, what + " must be [" + std::to_string(dim) + ", " + std::to_string(heads) + ", " +
                                              std::to_string(n) + "] with contiguous rows");
    out = HeadRows{t.data, t.nb[1], t.nb[2]};
    return Status::success();
  }

  Backend& be_;
  KvGeometry g_;
  bool f16_;
  std::vector<std::unique_ptr<Buffer>> k_, v_;
  std::unique_ptr<Buffer> staging_, src_;  // compact's source slots: pinned, then on the device
  kv::SlotBook book_;  // the CPU store's bookkeeping and errors, kept on the host at enqueue time
  std::uint64_t bytes_ = 0;
};

class CudaKernelLibrary final : public KernelLibrary {
 public:
  CudaKernelLibrary() {
    for (TypeId t : kTypes) kernels_.push_back(std::make_unique<CudaFormatKernels>(t));
  }
  std::string_view backend() const noexcept override { return "cuda"; }
  std::span<const TypeId> types() const noexcept override { return kTypes; }
  FormatKernels* kernels(TypeId type) noexcept override {
    for (std::size_t i = 0; i < std::size(kTypes); ++i)
      if (kTypes[i] == type) return kernels_[i].get();
    return nullptr;
  }
  bool has_kv_store(std::string_view store) const noexcept override { return store == "device"; }
  Expected<std::unique_ptr<KvStore>> create_kv_store(std::string_view store, const Config& config, Backend& backend,
                                                     const KvGeometry& g) override {
    if (store != "device") return fail(Errc::not_found, "no KV store '" + std::string(store) + "'");
    GRAFT_TRY(on_cuda(backend, "kv store"));
    const std::string type = config.get_string("type").value_or("f16");
    if (type != "f16" && type != "f32") return fail(Errc::invalid_argument, "kv store: type \"" + type + "\" on cuda");
    return CudaKvStore::create(backend, g, type == "f16");
  }

 private:
  std::vector<std::unique_ptr<CudaFormatKernels>> kernels_;
};

PluginObject* create(const HostServices&, const Config&, Status& error) noexcept {
  return guarded_create(error, [] { return new CudaKernelLibrary(); });
}

const PluginDescriptor kDescriptor{
    GRAFT_ABI_VERSION, sizeof(PluginDescriptor), PluginKind::kernels, "cuda", GRAFT_SDK_VERSION_STRING,
    "CUDA kernels: f32, f16, bf16, q8_0, q4_k, q1_0 (file layout on the device) and the device KV store", nullptr, 0,
    &create,
};

}  // namespace

}  // namespace graft::cuda

GRAFT_PLUGIN(graft::cuda::kDescriptor)
