// fp16 -> f32 for every one of the 65536 halves, built once per process. The kernels broadcast a
// block scale straight from this table (a load, no shuffle), which is cheaper than F16C in the
// inner loop; the values equal f16_to_f32 exactly.
#pragma once

namespace graft::quant {

const float* fp16_table() noexcept;

}  // namespace graft::quant
