// A drafter's activations live in the backend's device memory (Backend::allocate(..., device)):
// their views say so, so a backend whose device memory the host cannot read takes them.
#pragma once

#include "graft/tensor.hpp"

namespace graft::drafters {

inline TensorView device_f32(float* data, std::int64_t ne0, std::int64_t ne1 = 1, std::int64_t ne2 = 1) {
  return f32_view(data, ne0, ne1, ne2, MemoryKind::device);
}

}  // namespace graft::drafters
