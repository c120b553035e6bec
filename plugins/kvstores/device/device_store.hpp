// The CPU's KV store: K and V in backend memory, each in its own element type (f32, f16, q8_0,
// q4_0), one buffer per layer for K and one for V, each [n_kv_heads][capacity][row] (head-major:
// decode attention reads each KV head's rows as one stream; truncate is a counter change and
// compact moves a run of consecutive slots with one memmove per head). The `device` plugin makes it
// with one plain type for both, the `quant` plugin with any pair.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "attention.hpp"
#include "slot_book.hpp"
#include "graft/backend.hpp"
#include "graft/kv_store.hpp"

namespace graft::kv {

// Bytes per token for all layers, K + V; saturates at UINT64_MAX instead of wrapping.
std::uint64_t bytes_per_token(const KvGeometry& g, CacheType k_type, CacheType v_type) noexcept;

class DeviceKvStore final : public KvStore {
 public:
  // The backend must outlive the store: the store runs on its threads and its buffers are the
  // backend's objects.
  // prefix: the plugin's name in messages ("kvstore device: ").
  static Expected<std::unique_ptr<KvStore>> create(Backend& backend, const KvGeometry& g, CacheType k_type,
                                                   CacheType v_type, std::string prefix = "kvstore device: ");
  // The geometry's refusals create() gives (a zero, rows that are not whole blocks, a rotated
  // type's head size), before anything is allocated.
  static Status check(const KvGeometry& g, CacheType k_type, CacheType v_type, const std::string& prefix);

  KvGeometry geometry() const noexcept override { return g_; }
  std::uint32_t size() const noexcept override { return book_.size(); }
  bool lossless() const noexcept override { return k_type_ == CacheType::f32 && v_type_ == CacheType::f32; }
  KvMemory memory() const noexcept override { return {device_bytes_, 0}; }

  Status write(std::uint32_t layer, std::uint32_t slot, std::uint32_t n, const TensorView& k,
               const TensorView& v) override;
  Status attend(std::uint32_t layer, const TensorView& q, const AttentionBatch& batch, const TensorView& out) override;
  Status truncate(std::uint32_t n) override;
  Status compact(std::uint32_t dst, std::span<const std::uint32_t> src) override;

 private:
  DeviceKvStore(Backend& backend, const KvGeometry& g, CacheType k_type, CacheType v_type, std::string prefix)
      : backend_(backend), g_(g), k_type_(k_type), v_type_(v_type), prefix_(std::move(prefix)), book_(g) {}
  Status write_rows(std::uint32_t layer, std::uint32_t slot, std::uint32_t n, const TensorView& k, const TensorView& v);
  // The shared checks and kernels word their errors as the device store's: this store's name instead.
  Status named(Status st) const;

  Backend& backend_;
  KvGeometry g_;
  CacheType k_type_, v_type_;
  std::string prefix_;
  std::vector<std::unique_ptr<Buffer>> k_, v_;  // one per layer
  SlotBook book_;  // which slots each layer holds, and the rules of every call
  std::uint64_t device_bytes_ = 0;
};

}  // namespace graft::kv
