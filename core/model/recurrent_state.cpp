#include "model/recurrent_state.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "model/architecture.hpp"
#include "model/workspace.hpp"

namespace graft {

std::uint64_t RecurrentState::pending_row_floats(const ModelParams& p) {
  return std::uint64_t(p.ssm_channels()) + std::uint64_t(p.ssm_groups) * p.ssm_state + p.ssm_heads +
         std::uint64_t(p.ssm_heads) * p.ssm_state;  // x [C], k [Dk, Hk], g [Hv], d [Dv, Hv]
}

std::uint64_t RecurrentState::bytes_for(const ModelParams& p, std::uint32_t max_pending) {
  const std::uint64_t pending = std::uint64_t(p.count(LayerKind::delta_net)) * max_pending * pending_row_floats(p);
  // ... and the deferred path: max_pending i32 (the size of a float).
  return (p.recurrent_state_floats() + pending + max_pending) * sizeof(float);
}

Expected<std::unique_ptr<RecurrentState>> RecurrentState::create(Backend& backend, const ModelParams& p,
                                                                 std::uint32_t max_pending) {
  const std::uint32_t layers = p.count(LayerKind::delta_net);
  if (layers == 0) return Status(Errc::invalid_argument, "recurrent state: the model has no delta-net layers");
  if (p.ssm_conv_kernel < 2 || p.ssm_state == 0 || p.ssm_heads == 0)
    return Status(Errc::invalid_argument, "recurrent state: the model's ssm shape is incomplete");
  std::unique_ptr<RecurrentState> s(new RecurrentState());
  s->backend_ = &backend;
  s->layers_ = layers;
  s->max_pending_ = max_pending;
  s->kc_ = p.ssm_conv_kernel;
  s->dk_ = s->dv_ = p.ssm_state;
  s->channels_ = p.ssm_channels();
  s->heads_ = p.ssm_heads;
  s->k_heads_ = p.ssm_groups;
  s->pending_row_ = pending_row_floats(p);
  s->conv_floats_ = std::uint64_t(s->kc_ - 1) * s->channels_;
  s->delta_floats_ = std::uint64_t(s->dk_) * s->dv_ * s->heads_;
  s->bytes_ = bytes_for(p, max_pending);
  auto buf = backend.allocate(s->bytes_, MemoryKind::device);
  if (!buf) return std::move(buf).status();
  s->buffer_ = std::move(*buf);
  s->base_ = static_cast<float*>(s->buffer_->data());
  s->pending_ = s->base_ + std::uint64_t(layers) * s->layer_floats();
  s->path_ = reinterpret_cast<std::int32_t*>(s->pending_ + std::uint64_t(layers) * max_pending * s->pending_row_);
  GRAFT_TRY(s->zero());
  return s;
}

TensorView RecurrentState::conv(std::uint32_t i) const {
  return device_f32(base_ + i * layer_floats(), kc_ - 1, static_cast<std::int64_t>(channels_));
}

TensorView RecurrentState::delta(std::uint32_t i) const {
  return device_f32(base_ + i * layer_floats() + conv_floats_, dk_, dv_, static_cast<std::int64_t>(heads_));
}

float* RecurrentState::pending_x(std::uint32_t i) const {
  return pending_ + std::uint64_t(i) * max_pending_ * pending_row_;
}
float* RecurrentState::pending_k(std::uint32_t i) const { return pending_x(i) + std::uint64_t(max_pending_) * channels_; }
float* RecurrentState::pending_g(std::uint32_t i) const {
  return pending_k(i) + std::uint64_t(max_pending_) * k_heads_ * dk_;
}
float* RecurrentState::pending_d(std::uint32_t i) const { return pending_g(i) + std::uint64_t(max_pending_) * heads_; }

Status RecurrentState::defer(std::span<const std::uint32_t> path) {
  if (path.size() > max_pending_)
    return Status(Errc::invalid_argument,
                  fmt::format("recurrent state: a path of {} rows exceeds the {} rows kept", path.size(), max_pending_));
  const std::vector<std::int32_t> rows(path.begin(), path.end());
  GRAFT_TRY(backend_->copy(path_, MemoryKind::device, rows.data(), MemoryKind::host, rows.size() * sizeof(std::int32_t)));
  deferred_.assign(path.begin(), path.end());
  pending_parents_.clear();  // the kept rows now serve the deferred path only
  if (position_ != kUnknown) position_ += static_cast<std::uint32_t>(path.size());
  return Status::success();
}

TensorView RecurrentState::deferred_rows() const {
  return i32_view(path_, static_cast<std::int64_t>(deferred_.size()), MemoryKind::device);
}

Status RecurrentState::zero() {
  // Backends have no fill op: one layer's worth of zeros copied in, layer by layer (the position
  // unknown until all are).
  position_ = kUnknown;
  const std::vector<float> zeros(layer_floats(), 0.0f);
  for (std::uint32_t i = 0; i < layers_; ++i)
    GRAFT_TRY(backend_->copy(base_ + i * layer_floats(), MemoryKind::device, zeros.data(), MemoryKind::host,
                             zeros.size() * sizeof(float)));
  position_ = 0;
  pending_parents_.clear();
  deferred_.clear();
  return Status::success();
}

Status RecurrentState::copy_from(const RecurrentState& from) {
  if (from.layers_ != layers_ || from.layer_floats() != layer_floats())
    return Status(Errc::invalid_argument, "recurrent state: copied from another model's state");
  if (!from.deferred_.empty())
    return Status(Errc::invalid_argument, "recurrent state: copied from a state whose accepted path is not applied yet");
  if (&from != this) {
    position_ = kUnknown;  // until the copy is whole
    GRAFT_TRY(backend_->copy(base_, MemoryKind::device, from.base_, MemoryKind::device,
                             std::uint64_t(layers_) * layer_floats() * sizeof(float)));
  }
  position_ = from.position_;
  pending_parents_.clear();
  deferred_.clear();
  return Status::success();
}

}  // namespace graft
