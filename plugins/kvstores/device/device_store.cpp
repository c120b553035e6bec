#include "device_store.hpp"

#include <algorithm>
#include <cstring>
#include <exception>
#include <limits>
#include <new>
#include <string>
#include <string_view>
#include <tuple>

#include "cache_rows.hpp"
#include "half.hpp"
#include "rotation.hpp"
#include "views.hpp"

namespace graft::kv {

namespace {

constexpr const char* kPrefix = "kvstore device: ";


std::string mib(std::uint64_t bytes) { return std::to_string((bytes + (1u << 20) - 1) >> 20) + " MiB"; }

// Below this many elements a write runs on the calling thread: waking the pool costs more than a
// decode step's handful of rows.
constexpr std::size_t kParallelWriteElements = 1u << 16;

}  // namespace

std::uint64_t bytes_per_token(const KvGeometry& g, CacheType k_type, CacheType v_type) noexcept {
  std::uint64_t r = 0;
  const std::uint64_t row = static_cast<std::uint64_t>(cache_row_bytes(k_type, g.head_dim_k)) +
                            cache_row_bytes(v_type, g.head_dim_v);
  if (__builtin_mul_overflow(static_cast<std::uint64_t>(g.n_layers), static_cast<std::uint64_t>(g.n_kv_heads), &r) ||
      __builtin_mul_overflow(r, row, &r))
    return std::numeric_limits<std::uint64_t>::max();
  return r;
}

Status DeviceKvStore::named(Status st) const {
  constexpr std::string_view shared = kPrefix;
  if (st.ok() || prefix_ == shared || st.message().rfind(shared, 0) != 0) return st;
  return Status(st.code(), prefix_ + st.message().substr(shared.size()));
}

Status DeviceKvStore::check(const KvGeometry& g, CacheType k_type, CacheType v_type, const std::string& prefix) {
  auto fail = [&](Errc code, const std::string& message) { return Status(code, prefix + message); };
  const std::pair<const char*, std::uint32_t> fields[] = {{"n_layers", g.n_layers},
                                                          {"n_kv_heads", g.n_kv_heads},
                                                          {"head_dim_k", g.head_dim_k},
                                                          {"head_dim_v", g.head_dim_v},
                                                          {"capacity", g.capacity}};
  for (const auto& [name, value] : fields)
    if (value == 0) return fail(Errc::invalid_argument, std::string("geometry ") + name + " is 0");
  // A quantized row is whole blocks.
  for (const auto& [type, dim, name] :
       {std::tuple{k_type, g.head_dim_k, "head_dim_k"}, std::tuple{v_type, g.head_dim_v, "head_dim_v"}})
    if (dim % cache_type_elems(type) != 0)
      return fail(Errc::invalid_argument, std::string(name) + " = " + std::to_string(dim) + " is not a multiple of " +
                                              std::to_string(cache_type_elems(type)) + ", which a " +
                                              cache_type_name(type) + " cache needs (one block is " +
                                              std::to_string(cache_type_elems(type)) + " elements)");
  // A rotated type's rows go through a Walsh-Hadamard transform.
  for (const auto& [type, dim, name] :
       {std::tuple{k_type, g.head_dim_k, "head_dim_k"}, std::tuple{v_type, g.head_dim_v, "head_dim_v"}})
    if (cache_type_rotated(type) && !rotatable(dim))
      return fail(Errc::invalid_argument, std::string(name) + " = " + std::to_string(dim) +
                                              " is not a power of two up to " + std::to_string(kMaxRotatedDim) + ", which a " + cache_type_name(type) +
                                              " cache needs (its rows are rotated by a Walsh-Hadamard transform)");
  return Status::success();
}

Expected<std::unique_ptr<KvStore>> DeviceKvStore::create(Backend& backend, const KvGeometry& g, CacheType k_type,
                                                         CacheType v_type, std::string prefix) {
  auto fail = [&](Errc code, const std::string& message) { return Status(code, prefix + message); };
  GRAFT_TRY(check(g, k_type, v_type, prefix));
  // Attention runs on the calling CPU threads and reads buffers directly, which is only valid
  // when the backend's "device" memory is host memory (the CPU backend).
  if (!backend.host_accessible(MemoryKind::device)) {
    const auto devs = backend.devices();
    return fail(Errc::unsupported, "this store computes attention on the CPU and cannot use backend device '" +
                                       (devs.empty() ? std::string("?") : devs[0].name) +
                                       "' (a GPU backend); use the cpu backend");
  }

  std::size_t k_bytes = 0, v_bytes = 0;
  if (__builtin_mul_overflow(static_cast<std::size_t>(g.capacity) * g.n_kv_heads, cache_row_bytes(k_type, g.head_dim_k),
                             &k_bytes) ||
      __builtin_mul_overflow(static_cast<std::size_t>(g.capacity) * g.n_kv_heads, cache_row_bytes(v_type, g.head_dim_v),
                             &v_bytes))
    return fail(Errc::out_of_memory, "a layer of " + std::to_string(g.capacity) + " tokens does not fit in memory");
  std::uint64_t total = 0;  // for the message only
  if (__builtin_mul_overflow(bytes_per_token(g, k_type, v_type), static_cast<std::uint64_t>(g.capacity), &total))
    total = std::numeric_limits<std::uint64_t>::max();
  // What else would fit: a smaller element type, in the words of the plugin's keys.
  const bool any_f32 = k_type == CacheType::f32 || v_type == CacheType::f32;
  const std::string smaller = !any_f32                    ? ""
                              : prefix == kPrefix ? " or use type = \"f16\""
                                                  : " or use smaller types (type_k, type_v)";
  const std::string types = k_type == v_type ? std::string(cache_type_name(k_type))
                                             : std::string(cache_type_name(k_type)) + "/" + cache_type_name(v_type);

  try {
    std::unique_ptr<DeviceKvStore> s(new DeviceKvStore(backend, g, k_type, v_type, prefix));
    s->k_.reserve(g.n_layers);
    s->v_.reserve(g.n_layers);
    for (std::uint32_t l = 0; l < g.n_layers; ++l) {
      for (auto* list : {&s->k_, &s->v_}) {
        auto buf = backend.allocate(list == &s->k_ ? k_bytes : v_bytes, MemoryKind::device);
        if (!buf)
          return fail(buf.status().code(), "cannot allocate the " + types + " KV cache (" + mib(total) + " for " +
                                               std::to_string(g.capacity) + " tokens): " + buf.status().message() +
                                               "; lower [context] size" + smaller);
        s->device_bytes_ += (*buf)->size();
        list->push_back(std::move(*buf));
      }
    }
    return std::unique_ptr<KvStore>(std::move(s));
  } catch (const std::bad_alloc&) {
    return fail(Errc::out_of_memory, "out of host memory while creating the store");
  }
}

Status DeviceKvStore::write(std::uint32_t layer, std::uint32_t slot, std::uint32_t n, const TensorView& k,
                            const TensorView& v) {
  GRAFT_TRY(named(book_.check_write(layer, slot, n)));
  GRAFT_TRY(named(check_f32_rows(k, "write: k", g_.head_dim_k, g_.n_kv_heads, n, "[head_dim_k, n_kv_heads, n]")));
  GRAFT_TRY(named(check_f32_rows(v, "write: v", g_.head_dim_v, g_.n_kv_heads, n, "[head_dim_v, n_kv_heads, n]")));
  if (n == 0) return Status::success();

  GRAFT_TRY(write_rows(layer, slot, n, k, v));
  book_.wrote(layer, slot, n);
  return Status::success();
}

Status DeviceKvStore::write_rows(std::uint32_t layer, std::uint32_t slot, std::uint32_t n, const TensorView& k,
                                 const TensorView& v) {
  const std::uint32_t heads = g_.n_kv_heads, hk = g_.head_dim_k, hv = g_.head_dim_v;
  void* kd = k_[layer]->data();
  void* vd = v_[layer]->data();
  const CacheType kt = k_type_, vt = v_type_;
  const std::size_t k_row = cache_row_bytes(kt, hk), v_row = cache_row_bytes(vt, hv);
  // Row r = t * heads + h goes to slot + t of head h: row h * capacity + slot + t of the layer.
  const std::size_t capacity = g_.capacity;
  auto rows = [&](std::size_t begin, std::size_t end) {
    for (std::size_t r = begin; r < end; ++r) {
      const auto t = static_cast<std::int64_t>(r / heads), h = static_cast<std::int64_t>(r % heads);
      const std::size_t dst = static_cast<std::size_t>(h) * capacity + slot + static_cast<std::size_t>(t);
      encode_row(kt, row(k, h, t), hk, static_cast<char*>(kd) + dst * k_row);
      encode_row(vt, row(v, h, t), hv, static_cast<char*>(vd) + dst * v_row);
    }
  };
  const std::size_t n_rows = static_cast<std::size_t>(n) * heads;
  if (n_rows * (hk + hv) >= kParallelWriteElements)
    backend_.parallel_for(n_rows, rows);
  else
    rows(0, n_rows);
  return Status::success();
}

Status DeviceKvStore::attend(std::uint32_t layer, const TensorView& q, const AttentionBatch& batch,
                             const TensorView& out) {
  GRAFT_TRY(named(book_.check_attend(layer, batch.n_past, batch.n_query)));
  const LayerCache cache{k_[layer]->data(), v_[layer]->data(), k_type_,      v_type_,
                         g_.n_kv_heads,     g_.head_dim_k,      g_.head_dim_v, g_.capacity};
  try {
    return named(kv::attend(backend_, cache, q, batch, out));
  } catch (const std::bad_alloc&) {
    return Status(Errc::out_of_memory,
                  prefix_ + "attend: out of host memory for " + std::to_string(batch.n_query) + " queries");
  } catch (const std::exception& e) {
    return Status(Errc::internal, prefix_ + "attend: " + e.what());
  }
}

Status DeviceKvStore::truncate(std::uint32_t n) {
  GRAFT_TRY(named(book_.check_truncate(n)));
  book_.set_all(n);
  return Status::success();
}

Status DeviceKvStore::compact(std::uint32_t dst, std::span<const std::uint32_t> src) {
  GRAFT_TRY(named(book_.check_compact(dst, src)));
  // Ascending order is safe: dst + i <= src[i], and every later source lies above src[i].
  const std::size_t k_slot = cache_row_bytes(k_type_, g_.head_dim_k);  // bytes of one head's row
  const std::size_t v_slot = cache_row_bytes(v_type_, g_.head_dim_v);
  const std::size_t k_head = k_slot * g_.capacity, v_head = v_slot * g_.capacity;
  for (std::uint32_t l = 0; l < g_.n_layers; ++l)
    for (std::uint32_t h = 0; h < g_.n_kv_heads; ++h) {
      auto* kb = static_cast<char*>(k_[l]->data()) + h * k_head;
      auto* vb = static_cast<char*>(v_[l]->data()) + h * v_head;
      for (std::size_t i = 0; i < src.size();) {
        std::size_t run = 1;  // consecutive sources move as one block
        while (i + run < src.size() && src[i + run] == src[i] + run) ++run;
        const std::size_t from = src[i], to = dst + i;
        if (from != to) {
          std::memmove(kb + to * k_slot, kb + from * k_slot, run * k_slot);
          std::memmove(vb + to * v_slot, vb + from * v_slot, run * v_slot);
        }
        i += run;
      }
    }
  book_.set_all(static_cast<std::uint32_t>(dst + src.size()));
  return Status::success();
}

}  // namespace graft::kv
