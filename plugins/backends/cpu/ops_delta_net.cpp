// The ops of gated linear attention (qwen35's gated delta-net and its gated full attention):
// sigmoid_mul, l2_norm, delta_net_gates, causal_conv_silu and gated_delta_net, and the two that
// move a state on by a token tree's accepted rows (delta_net_apply, conv_window_advance). Contracts
// in docs/backends.md. The recurrences run heads (or channels) in parallel and rows in order, so a
// result never depends on the thread count; a token tree's rows each start from their parent's
// state, so a row's result is exactly that of running its path one row at a time.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "ops.hpp"
#include "tensor_check.hpp"

namespace graft::cpu {

namespace {

constexpr std::int64_t kMaxConvKernel = 8;  // taps: qwen35 uses 4

bool is(const TensorView& t, std::int64_t n0, std::int64_t n1, std::int64_t n2 = 1) {
  return t.ne[0] == n0 && t.ne[1] == n1 && t.ne[2] == n2 && t.ne[3] == 1;
}

std::string expect(const char* name, const TensorView& t, const std::string& want) {
  return std::string(name) + " has shape " + shape_string(t) + "; expected " + want;
}

// "" when parents (n entries) is null or names, for each row, an earlier row or -1.
std::string check_parents(const std::int32_t* parents, std::int64_t n) {
  if (!parents) return "";
  for (std::int64_t t = 0; t < n; ++t)
    if (parents[t] < -1 || parents[t] >= t)
      return "parents[" + std::to_string(t) + "] = " + std::to_string(parents[t]) +
             "; a row's parent must be an earlier row or -1 (the state)";
  return "";
}

// "" when `view` is a packed i32 list (data null: empty) of rows each in [0, t); *rows, *n: the
// list. `what` names the t rows in the message.
std::string check_row_list(const TensorView& view, std::int64_t t, const char* what, const std::int32_t** rows,
                           std::uint32_t* n) {
  *n = view.data ? static_cast<std::uint32_t>(view.ne[0]) : 0;
  if (view.data && view.ne[0] < 0) return "rows has shape " + shape_string(view);
  if (auto e = check_index("rows", view, *n, true, rows); !e.empty()) return e;
  for (std::uint32_t i = 0; i < *n; ++i) {
    const std::string at = "rows[" + std::to_string(i) + "] = " + std::to_string((*rows)[i]);
    if ((*rows)[i] < 0) return at + " is negative";
    if ((*rows)[i] >= t) return at + " is past the " + std::to_string(t) + what;
  }
  return "";
}

// state_out: absent (data null), or a chain's final state shaped like `state` (it may be state).
std::string check_state_out(const TensorView& state_out, const TensorView& state, const std::int32_t* parents,
                            std::initializer_list<std::pair<const char*, const TensorView*>> inputs) {
  if (!state_out.data) return "";
  if (parents) return "state_out needs a chain (parents null): a token tree has no single final state";
  if (auto e = check_dense("state_out", state_out, {type_id::f32}); !e.empty()) return e;
  if (auto e = check_output("state_out", state_out, "state", state, true); !e.empty()) return e;
  for (auto [name, t] : inputs)
    if (overlap(state_out, *t) != Overlap::none) return std::string("state_out overlaps ") + name;
  return "";
}

float silu(float x) { return x / (1.0f + std::exp(-x)); }

}  // namespace

Status op_sigmoid_mul(const OpContext& c, const TensorView& x, const TensorView& g, const TensorView& y) {
  constexpr const char* op = "sigmoid_mul";
  for (auto [name, t] : {std::pair{"x", &x}, {"g", &g}, {"y", &y}})
    if (auto e = check_rows(name, *t, {type_id::f32}); !e.empty()) return op_error(op, e);
  if (!same_shape(x, g)) return op_error(op, expect("g", g, shape_string(x) + " like x"));
  if (auto e = check_output("y", y, "x", x, true); !e.empty()) return op_error(op, e);
  if (auto e = check_output("y", y, "g", g, true); !e.empty()) return op_error(op, e);
  const auto n = static_cast<std::size_t>(x.ne[0]);
  const Kernels& k = c.k;
  c.for_rows(static_cast<std::size_t>(x.rows()), 4 * n, [&](std::size_t begin, std::size_t end) {
    for (std::size_t r = begin; r < end; ++r)
      k.sigmoid_mul_row(row_ptr<const float>(x, r), row_ptr<const float>(g, r), row_ptr<float>(y, r), n);
  });
  return Status::success();
}

Status op_l2_norm(const OpContext& c, const TensorView& x, float eps, const TensorView& y) {
  constexpr const char* op = "l2_norm";
  for (auto [name, t] : {std::pair{"x", &x}, {"y", &y}})
    if (auto e = check_rows(name, *t, {type_id::f32}); !e.empty()) return op_error(op, e);
  if (auto e = check_eps(eps); !e.empty()) return op_error(op, e);
  if (auto e = check_output("y", y, "x", x, true); !e.empty()) return op_error(op, e);
  const auto n = static_cast<std::size_t>(x.ne[0]);
  c.for_rows(static_cast<std::size_t>(x.rows()), n, [&](std::size_t begin, std::size_t end) {
    for (std::size_t r = begin; r < end; ++r) {
      const float* xr = row_ptr<const float>(x, r);
      float* yr = row_ptr<float>(y, r);
      // ggml_l2_norm: the sum of squares in double, then 1 / max(sqrt(sum), eps) in float.
      const float scale = 1.0f / std::max(std::sqrt(static_cast<float>(sum_of_squares(xr, n))), eps);
      for (std::size_t i = 0; i < n; ++i) yr[i] = xr[i] * scale;
    }
  });
  return Status::success();
}

Status op_delta_net_gates(const OpContext& c, const TensorView& alpha, const TensorView& beta, const TensorView& dt_bias,
                          const TensorView& ssm_a, const TensorView& g, const TensorView& b) {
  constexpr const char* op = "delta_net_gates";
  for (auto [name, t] : {std::pair{"alpha", &alpha}, {"beta", &beta}, {"g", &g}, {"b", &b}})
    if (auto e = check_rows(name, *t, {type_id::f32}); !e.empty()) return op_error(op, e);
  for (auto [name, t] : {std::pair{"dt_bias", &dt_bias}, {"ssm_a", &ssm_a}})
    if (auto e = check_dense(name, *t, {type_id::f32}); !e.empty()) return op_error(op, e);
  const std::int64_t hv = alpha.ne[0];
  if (!same_shape(alpha, beta)) return op_error(op, expect("beta", beta, shape_string(alpha) + " like alpha"));
  for (auto [name, t] : {std::pair{"dt_bias", &dt_bias}, {"ssm_a", &ssm_a}})
    if (t->elements() != hv || t->ne[0] != hv) return op_error(op, expect(name, *t, "[" + std::to_string(hv) + "] (one per head)"));
  if (auto e = check_output("g", g, "alpha", alpha, true); !e.empty()) return op_error(op, e);
  if (auto e = check_output("b", b, "beta", beta, true); !e.empty()) return op_error(op, e);
  if (overlap(g, beta) != Overlap::none || overlap(g, b) != Overlap::none) return op_error(op, "g overlaps beta or b");
  if (overlap(b, alpha) != Overlap::none) return op_error(op, "b overlaps alpha");
  const float* bias = dt_bias.as<const float>();
  const float* a = ssm_a.as<const float>();
  c.for_rows(static_cast<std::size_t>(alpha.rows()), 16 * static_cast<std::size_t>(hv), [&](std::size_t begin, std::size_t end) {
    for (std::size_t r = begin; r < end; ++r) {
      const float* al = row_ptr<const float>(alpha, r);
      const float* be = row_ptr<const float>(beta, r);
      float* gr = row_ptr<float>(g, r);
      float* br = row_ptr<float>(b, r);
      for (std::int64_t h = 0; h < hv; ++h) {
        // softplus as ggml: x past 20 is itself, else log(1 + e^x).
        const float x = al[h] + bias[h];
        const float softplus = x > 20.0f ? x : std::log(1.0f + std::exp(x));
        gr[h] = softplus * a[h];
        br[h] = 1.0f / (1.0f + std::exp(-be[h]));
      }
    }
  });
  return Status::success();
}

Status op_causal_conv_silu(const OpContext& c, const TensorView& x, const TensorView& w, const TensorView& state,
                           const TensorView& parents_view, const TensorView& y, const TensorView& state_out) {
  constexpr const char* op = "causal_conv_silu";
  for (auto [name, t] : {std::pair{"x", &x}, {"y", &y}})
    if (auto e = check_rows(name, *t, {type_id::f32}); !e.empty()) return op_error(op, e);
  for (auto [name, t] : {std::pair{"w", &w}, {"state", &state}})
    if (auto e = check_dense(name, *t, {type_id::f32}); !e.empty()) return op_error(op, e);
  const std::int64_t C = x.ne[0], T = x.rows(), K = w.ne[0];
  if (K < 2 || K > kMaxConvKernel)
    return op_error(op, "the kernel size Kc = w.ne[0] = " + std::to_string(K) + " is not supported (2.." +
                            std::to_string(kMaxConvKernel) + ")");
  if (!is(w, K, C)) return op_error(op, expect("w", w, "[" + std::to_string(K) + ", " + std::to_string(C) + "] (Kc, channels)"));
  if (!is(state, K - 1, C))
    return op_error(op, expect("state", state, "[" + std::to_string(K - 1) + ", " + std::to_string(C) + "] (Kc - 1, channels)"));
  if (!same_shape(x, y)) return op_error(op, expect("y", y, shape_string(x) + " like x"));
  if (auto e = check_output("y", y, "x", x, false); !e.empty()) return op_error(op, e);
  for (auto [name, t] : {std::pair{"w", &w}, {"state", &state}})
    if (overlap(y, *t) != Overlap::none) return op_error(op, std::string("y overlaps ") + name);
  const std::int32_t* parents = nullptr;
  if (auto e = check_index("parents", parents_view, T, true, &parents); !e.empty()) return op_error(op, e);
  if (auto e = check_parents(parents, T); !e.empty()) return op_error(op, e);
  if (auto e = check_state_out(state_out, state, parents, {{"x", &x}, {"y", &y}, {"w", &w}}); !e.empty())
    return op_error(op, e);

  // Each row's window, oldest first: src >= 0 is a row of x, src < 0 entry -1 - src of the state.
  const std::int64_t H = K - 1;
  std::vector<std::int64_t> src(static_cast<std::size_t>(T * H));
  for (std::int64_t t = 0; t < T; ++t) {
    std::int64_t cur = t, j = H - 1;
    for (; j >= 0; --j) {
      const std::int64_t p = parents ? parents[cur] : cur - 1;
      if (p < 0) break;
      src[static_cast<std::size_t>(t * H + j)] = p;
      cur = p;
    }
    for (std::int64_t back = 0; j >= 0; --j, ++back) src[static_cast<std::size_t>(t * H + j)] = -1 - (H - 1 - back);
  }
  const float* wp = w.as<const float>();
  const float* sp = state.as<const float>();
  // Channels contiguous in every operand: the window and the taps transposed to [H, C] and [K, C],
  // and each row's window sources as row pointers (rows of x, or of the transposed window).
  const auto Cz = static_cast<std::size_t>(C);
  std::vector<float> window(static_cast<std::size_t>(H) * Cz), taps(static_cast<std::size_t>(K) * Cz);
  for (std::size_t ch = 0; ch < Cz; ++ch) {
    for (std::int64_t i = 0; i < H; ++i) window[static_cast<std::size_t>(i) * Cz + ch] = sp[ch * static_cast<std::size_t>(H) + i];
    for (std::int64_t i = 0; i < K; ++i) taps[static_cast<std::size_t>(i) * Cz + ch] = wp[ch * static_cast<std::size_t>(K) + i];
  }
  std::vector<const float*> from(static_cast<std::size_t>(T * H));
  for (std::size_t e = 0; e < from.size(); ++e)
    from[e] = src[e] >= 0 ? row_ptr<const float>(x, static_cast<std::size_t>(src[e]))
                          : window.data() + static_cast<std::size_t>(-1 - src[e]) * Cz;
  c.for_rows(Cz, static_cast<std::size_t>(T * K), [&](std::size_t c0, std::size_t c1) {
    thread_local std::vector<float> acc;
    acc.resize(c1 - c0);
    for (std::int64_t t = 0; t < T; ++t) {
      const float* xt = row_ptr<const float>(x, static_cast<std::size_t>(t));
      float* yt = row_ptr<float>(y, static_cast<std::size_t>(t));
      // Per channel, in tap order as ggml_ssm_conv: 0 + w0 v0 + w1 v1 + ... + w_H x_t.
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (std::int64_t i = 0; i < H; ++i) {
        const float* v = from[static_cast<std::size_t>(t * H + i)];
        const float* wi = taps.data() + static_cast<std::size_t>(i) * Cz;
        for (std::size_t ch = c0; ch < c1; ++ch) acc[ch - c0] += wi[ch] * v[ch];
      }
      const float* wl = taps.data() + static_cast<std::size_t>(H) * Cz;
      for (std::size_t ch = c0; ch < c1; ++ch) yt[ch] = silu(acc[ch - c0] + wl[ch] * xt[ch]);
    }
  });
  if (state_out.data) {
    // The last Kc - 1 raw inputs of (state, x rows), per channel, oldest first.
    std::vector<float> next(static_cast<std::size_t>(C * H));
    for (std::int64_t ch = 0; ch < C; ++ch)
      for (std::int64_t i = 0; i < H; ++i) {
        const std::int64_t idx = T + i;  // in (state | x rows), of length H + T: its last H entries
        next[static_cast<std::size_t>(ch * H + i)] =
            idx < H ? sp[ch * H + idx] : row_ptr<const float>(x, static_cast<std::size_t>(idx - H))[ch];
      }
    std::copy(next.begin(), next.end(), state_out.as<float>());
  }
  return Status::success();
}

Status op_gated_delta_net(const OpContext& c, const TensorView& q, const TensorView& k, const TensorView& v,
                          const TensorView& g, const TensorView& b, const TensorView& state,
                          const TensorView& parents_view, const TensorView& out, const TensorView& state_out,
                          const TensorView& deltas) {
  constexpr const char* op = "gated_delta_net";
  for (auto [name, t] : {std::pair{"q", &q}, {"k", &k}, {"v", &v}, {"g", &g}, {"b", &b}, {"out", &out}})
    if (auto e = check_rows(name, *t, {type_id::f32}); !e.empty()) return op_error(op, e);
  if (auto e = check_dense("state", state, {type_id::f32}); !e.empty()) return op_error(op, e);
  const std::int64_t Dk = q.ne[0], Hk = q.ne[1], T = q.ne[2], Dv = v.ne[0], Hv = v.ne[1];
  if (q.ne[3] != 1) return op_error(op, expect("q", q, "[Dk, Hk, T]"));
  if (Dk % 16 != 0) return op_error(op, "the key head size Dk = " + std::to_string(Dk) + " is not a multiple of 16");
  if (!same_shape(q, k)) return op_error(op, expect("k", k, shape_string(q) + " like q"));
  if (!is(v, Dv, Hv, T)) return op_error(op, expect("v", v, "[Dv, Hv, " + std::to_string(T) + "]"));
  if (Hv % Hk != 0)
    return op_error(op, "v heads Hv = " + std::to_string(Hv) + " is not a multiple of the q/k heads Hk = " + std::to_string(Hk));
  for (auto [name, t] : {std::pair{"g", &g}, {"b", &b}})
    if (!is(*t, Hv, T)) return op_error(op, expect(name, *t, "[" + std::to_string(Hv) + ", " + std::to_string(T) + "]"));
  if (!is(state, Dk, Dv, Hv))
    return op_error(op, expect("state", state, "[" + std::to_string(Dk) + ", " + std::to_string(Dv) + ", " +
                                                   std::to_string(Hv) + "] (Dk, Dv, Hv)"));
  if (!same_shape(out, v)) return op_error(op, expect("out", out, shape_string(v) + " like v"));
  for (auto [name, t] : {std::pair{"q", &q}, {"k", &k}, {"v", &v}, {"g", &g}, {"b", &b}, {"state", &state}})
    if (overlap(out, *t) != Overlap::none) return op_error(op, std::string("out overlaps ") + name);
  const std::int32_t* parents = nullptr;
  if (auto e = check_index("parents", parents_view, T, true, &parents); !e.empty()) return op_error(op, e);
  if (auto e = check_parents(parents, T); !e.empty()) return op_error(op, e);
  if (auto e = check_state_out(state_out, state, parents,
                               {{"q", &q}, {"k", &k}, {"v", &v}, {"g", &g}, {"b", &b}, {"out", &out}});
      !e.empty())
    return op_error(op, e);
  if (deltas.data) {
    if (auto e = check_dense("deltas", deltas, {type_id::f32}); !e.empty()) return op_error(op, e);
    if (!same_shape(deltas, v)) return op_error(op, expect("deltas", deltas, shape_string(v) + " like v"));
    for (auto [name, t] : {std::pair{"q", &q}, {"k", &k}, {"v", &v}, {"g", &g}, {"b", &b}, {"state", &state}, {"out", &out},
                           {"state_out", &state_out}})
      if (t->data && overlap(deltas, *t) != Overlap::none) return op_error(op, std::string("deltas overlaps ") + name);
  }

  const std::size_t head = static_cast<std::size_t>(Dk * Dv);
  const float scale = 1.0f / std::sqrt(static_cast<float>(Dk));
  const Kernels& kern = c.k;
  c.for_rows(static_cast<std::size_t>(Hv), static_cast<std::size_t>(T) * head * 4, [&](std::size_t h0, std::size_t h1) {
    // A chain runs in one copy of the head's state, or in the state itself when it is also the
    // output (decoding, a commit: no copy in or out); a tree keeps every row's state (a row's
    // children start from it).
    const bool in_place = !parents && state_out.data == state.data;
    thread_local std::vector<float> scratch;
    if (!in_place) scratch.resize(head * static_cast<std::size_t>(parents ? T : 1));
    for (std::size_t j = h0; j < h1; ++j) {
      const float* committed = state.as<const float>() + j * head;
      const std::size_t kh = j % static_cast<std::size_t>(Hk);  // v head j reads q/k head j mod Hk (tiled)
      float* const chain = in_place ? state_out.as<float>() + j * head : scratch.data();
      if (!parents && !in_place) std::copy(committed, committed + head, scratch.data());
      for (std::int64_t t = 0; t < T; ++t) {
        float* s = chain;
        if (parents) {
          s += static_cast<std::size_t>(t) * head;
          const float* from = parents[t] < 0 ? committed : scratch.data() + static_cast<std::size_t>(parents[t]) * head;
          std::copy(from, from + head, s);
        }
        const auto tr = static_cast<std::size_t>(t);
        const std::size_t qk_row = tr * static_cast<std::size_t>(Hk) + kh, v_row = tr * static_cast<std::size_t>(Hv) + j;
        kern.delta_rule_row(s, row_ptr<const float>(q, qk_row), row_ptr<const float>(k, qk_row),
                            row_ptr<const float>(v, v_row), std::exp(row_ptr<const float>(g, tr)[j]),
                            row_ptr<const float>(b, tr)[j], scale, row_ptr<float>(out, v_row),
                            deltas.data ? row_ptr<float>(deltas, v_row) : nullptr, static_cast<std::size_t>(Dk),
                            static_cast<std::size_t>(Dv));
      }
      if (state_out.data && !in_place) std::copy(scratch.data(), scratch.data() + head, state_out.as<float>() + j * head);
    }
  });
  return Status::success();
}

Status op_delta_net_apply(const OpContext& c, const TensorView& k, const TensorView& d, const TensorView& g,
                          const TensorView& rows_view, const TensorView& state) {
  constexpr const char* op = "delta_net_apply";
  for (auto [name, t] : {std::pair{"k", &k}, {"d", &d}, {"g", &g}})
    if (auto e = check_rows(name, *t, {type_id::f32}); !e.empty()) return op_error(op, e);
  if (auto e = check_dense("state", state, {type_id::f32}); !e.empty()) return op_error(op, e);
  const std::int64_t Dk = k.ne[0], Hk = k.ne[1], T = k.ne[2], Dv = d.ne[0], Hv = d.ne[1];
  if (k.ne[3] != 1) return op_error(op, expect("k", k, "[Dk, Hk, T]"));
  if (Dk % 16 != 0) return op_error(op, "the key head size Dk = " + std::to_string(Dk) + " is not a multiple of 16");
  if (!is(d, Dv, Hv, T)) return op_error(op, expect("d", d, "[Dv, Hv, " + std::to_string(T) + "]"));
  if (Hv % Hk != 0)
    return op_error(op, "v heads Hv = " + std::to_string(Hv) + " is not a multiple of the q/k heads Hk = " + std::to_string(Hk));
  if (!is(g, Hv, T)) return op_error(op, expect("g", g, "[" + std::to_string(Hv) + ", " + std::to_string(T) + "]"));
  if (!is(state, Dk, Dv, Hv))
    return op_error(op, expect("state", state, "[" + std::to_string(Dk) + ", " + std::to_string(Dv) + ", " +
                                                   std::to_string(Hv) + "] (Dk, Dv, Hv)"));
  for (auto [name, t] : {std::pair{"k", &k}, {"d", &d}, {"g", &g}})
    if (overlap(state, *t) != Overlap::none) return op_error(op, std::string("state overlaps ") + name);
  const std::int32_t* rows = nullptr;
  std::uint32_t n_rows = 0;
  if (auto e = check_row_list(rows_view, T, " rows kept", &rows, &n_rows); !e.empty()) return op_error(op, e);
  if (n_rows == 0) return Status::success();

  const std::size_t head = static_cast<std::size_t>(Dk * Dv), n = n_rows;
  const Kernels& kern = c.k;
  c.for_rows(static_cast<std::size_t>(Hv), n * head * 2, [&](std::size_t h0, std::size_t h1) {
    thread_local std::vector<const float*> kp, dp;
    thread_local std::vector<float> decay;
    kp.resize(n), dp.resize(n), decay.resize(n);
    for (std::size_t j = h0; j < h1; ++j) {
      const std::size_t kh = j % static_cast<std::size_t>(Hk);
      for (std::size_t t = 0; t < n; ++t) {
        const auto r = static_cast<std::size_t>(rows[t]);
        kp[t] = row_ptr<const float>(k, r * static_cast<std::size_t>(Hk) + kh);
        dp[t] = row_ptr<const float>(d, r * static_cast<std::size_t>(Hv) + j);
        decay[t] = std::exp(row_ptr<const float>(g, r)[j]);  // as gated_delta_net computes it
      }
      kern.delta_apply_rows(state.as<float>() + j * head, kp.data(), dp.data(), decay.data(), n,
                            static_cast<std::size_t>(Dk), static_cast<std::size_t>(Dv));
    }
  });
  return Status::success();
}

Status op_conv_window_advance(const OpContext& /*c*/, const TensorView& x, const TensorView& rows_view,
                              const TensorView& state) {
  constexpr const char* op = "conv_window_advance";
  if (auto e = check_rows("x", x, {type_id::f32}); !e.empty()) return op_error(op, e);
  if (auto e = check_dense("state", state, {type_id::f32}); !e.empty()) return op_error(op, e);
  const std::int64_t C = x.ne[0], T = x.rows(), H = state.ne[0];
  if (H < 1 || H + 1 > kMaxConvKernel || !is(state, H, C))
    return op_error(op, expect("state", state, "[Kc - 1, " + std::to_string(C) + "] with Kc in 2.." +
                                                   std::to_string(kMaxConvKernel)));
  if (overlap(state, x) != Overlap::none) return op_error(op, "state overlaps x");
  const std::int32_t* rows = nullptr;
  std::uint32_t n_rows = 0;
  if (auto e = check_row_list(rows_view, T, " rows of x", &rows, &n_rows); !e.empty()) return op_error(op, e);
  // Entry i of the new window is entry n + i of (window | the rows' inputs), which is later than i:
  // in place, ascending, nothing is read after it is written.
  float* sp = state.as<float>();
  const std::int64_t n = n_rows;
  for (std::int64_t i = 0; i < H; ++i) {
    const std::int64_t idx = n + i;
    if (idx < H) {
      for (std::int64_t ch = 0; ch < C; ++ch) sp[ch * H + i] = sp[ch * H + idx];
    } else {
      const float* xr = row_ptr<const float>(x, static_cast<std::size_t>(rows[idx - H]));
      for (std::int64_t ch = 0; ch < C; ++ch) sp[ch * H + i] = xr[ch];
    }
  }
  return Status::success();
}

}  // namespace graft::cpu
