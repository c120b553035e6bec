// The generic ops of the CPU backend (contracts in docs/backends.md). Each checks its arguments,
// then runs a row kernel over the rows, split across the backend's threads when the work is big
// enough. Rows never share a reduction, so a row's result does not depend on the batch or on the
// thread count.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "graft/backend.hpp"
#include "kernels.hpp"
#include "thread_pool.hpp"

namespace graft::cpu {

struct OpContext {
  const Kernels& k;
  ThreadPool& pool;

  // Runs fn over [0, n_rows): on the calling thread when the total work (in elements) is too
  // small to repay waking the pool, otherwise split across the pool.
  void for_rows(std::size_t n_rows, std::size_t work_per_row,
                const std::function<void(std::size_t, std::size_t)>& fn) const {
    constexpr std::size_t kMinParallelWork = 1 << 15;
    if (pool.size() == 1 || n_rows < 2 || n_rows * work_per_row < kMinParallelWork)
      fn(0, n_rows);
    else
      pool.parallel_for(n_rows, fn);
  }
};

Status op_rms_norm(const OpContext& c, const TensorView& x, const TensorView& w, float eps, const TensorView& y);
Status op_rope(const OpContext& c, const TensorView& x, const TensorView& positions, const RopeParams& p,
               const TensorView& y);
Status op_add(const OpContext& c, const TensorView& a, const TensorView& b, const TensorView& y);
Status op_silu_mul(const OpContext& c, const TensorView& gate, const TensorView& up, const TensorView& y);
Status op_sigmoid_mul(const OpContext& c, const TensorView& x, const TensorView& g, const TensorView& y);
Status op_l2_norm(const OpContext& c, const TensorView& x, float eps, const TensorView& y);
Status op_delta_net_gates(const OpContext& c, const TensorView& alpha, const TensorView& beta, const TensorView& dt_bias,
                          const TensorView& ssm_a, const TensorView& g, const TensorView& b);
Status op_causal_conv_silu(const OpContext& c, const TensorView& x, const TensorView& w, const TensorView& state,
                           const TensorView& parents, const TensorView& y, const TensorView& state_out);
Status op_gated_delta_net(const OpContext& c, const TensorView& q, const TensorView& k, const TensorView& v,
                          const TensorView& g, const TensorView& b, const TensorView& state,
                          const TensorView& parents, const TensorView& out, const TensorView& state_out,
                          const TensorView& deltas);
Status op_delta_net_apply(const OpContext& c, const TensorView& k, const TensorView& d, const TensorView& g,
                          const TensorView& rows, const TensorView& state);
Status op_conv_window_advance(const OpContext& c, const TensorView& x, const TensorView& rows, const TensorView& state);
// The k largest entries of each row (Backend::top_k).
Status op_top_k(const OpContext& c, const TensorView& x, std::uint32_t k, const TensorView& ids, const TensorView& values);
Status op_softmax(const OpContext& c, const TensorView& x, const TensorView& y);

}  // namespace graft::cpu
