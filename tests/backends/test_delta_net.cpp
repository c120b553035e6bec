// The ops of qwen35's gated delta-net and gated attention against double-precision references
// written from the published recurrence (shared/reference/qwen35.md, section 4), at the real
// shapes of Qwen3.6-27B's delta-net heads (Dk = Dv = 128, Hk = 16, Hv = 48): the recurrence
// itself, a token tree against each of its paths run alone (bit for bit), a chain's final state
// against one row at a time (bit for bit), a tree's kept deltas moving the state along a path
// (bit for bit), the same bits on every thread count and level, the causal convolution with its
// rolling window and the window moved along a path, the gates, l2_norm and sigmoid_mul.
#include <algorithm>
#include <limits>

#include "cpu_fixture.hpp"
#include "kernels.hpp"

using namespace cpu_test;

namespace {

// Qwen3.6-27B's delta-net (qwen35.md section 1): 16 q/k heads, 48 v heads of 128.
constexpr std::int64_t kDk = 128, kDv = 128, kHk = 16, kHv = 48, kConvKernel = 4;
constexpr std::int64_t kChannels = 2 * kHk * kDk + kHv * kDv;  // 10240
// Output of the recurrence after T rows, against the f64 one: f32 dot products of 128 terms and
// a state kept in f32 over the rows (relative to the output's scale).
constexpr double kDeltaNetRelTol = 2e-5;
// The chunked form against the recurrence, both in double: the same sums in another order.
constexpr double kChunkedAbsTol = 1e-9;
// The convolution: 4 f32 products summed in order, then silu (exp within a few ulp).
constexpr double kConvRelTol = 1e-6, kConvAbsTol = 1e-7;
constexpr double kGateRelTol = 2e-6;
// ggml's float softplus, log(1 + e^x), loses e^x where it is below float's epsilon: up to an ulp of
// 1 absolute, times |ssm_a|.
constexpr double kSoftplusAbsTol = 1.2e-7;
constexpr double kSigmoidRelTol = 6e-7;

struct DeltaInputs {
  std::int64_t T;
  std::vector<float> q, k, v, g, b, state;
};

// Inputs as the layer gives them: q and k l2-normalised per head, g = log decay in (-2, 0), b in
// (0, 1), a state from earlier tokens.
DeltaInputs delta_inputs(std::int64_t T, std::uint32_t seed) {
  DeltaInputs in{T, random_floats(kDk * kHk * T, -1, 1, seed), random_floats(kDk * kHk * T, -1, 1, seed + 1),
                 random_floats(kDv * kHv * T, -1, 1, seed + 2), random_floats(kHv * T, -2.0f, -0.01f, seed + 3),
                 random_floats(kHv * T, 0.05f, 0.95f, seed + 4), random_floats(kDk * kDv * kHv, -0.5f, 0.5f, seed + 5)};
  for (auto* x : {&in.q, &in.k})
    for (std::int64_t r = 0; r < kHk * T; ++r) {
      double ss = 0;
      for (std::int64_t i = 0; i < kDk; ++i) ss += double((*x)[r * kDk + i]) * (*x)[r * kDk + i];
      for (std::int64_t i = 0; i < kDk; ++i) (*x)[r * kDk + i] = static_cast<float>((*x)[r * kDk + i] / std::sqrt(ss));
    }
  return in;
}

// The recurrence in double, rows along `path` (each row after the previous one, from the state).
std::vector<double> delta_reference(const DeltaInputs& in, const std::vector<std::int64_t>& path,
                                    std::vector<double>* final_state = nullptr) {
  std::vector<double> S(in.state.begin(), in.state.end()), out(path.size() * kDv * kHv);
  const double scale = 1.0 / std::sqrt(double(kDk));
  for (std::size_t p = 0; p < path.size(); ++p) {
    const std::int64_t t = path[p];
    for (std::int64_t j = 0; j < kHv; ++j) {
      const float* q = &in.q[(t * kHk + j % kHk) * kDk];
      const float* k = &in.k[(t * kHk + j % kHk) * kDk];
      const float* v = &in.v[(t * kHv + j) * kDv];
      const double decay = std::exp(double(in.g[t * kHv + j])), beta = in.b[t * kHv + j];
      double* s = &S[j * kDk * kDv];
      for (std::int64_t m = 0; m < kDv; ++m) {
        double* row = s + m * kDk;  // S[., m]
        double u = 0;
        for (std::int64_t i = 0; i < kDk; ++i) row[i] *= decay, u += row[i] * k[i];
        const double d = beta * (v[m] - u);
        double o = 0;
        for (std::int64_t i = 0; i < kDk; ++i) row[i] += k[i] * d, o += row[i] * q[i];
        out[(p * kHv + j) * kDv + m] = o * scale;
      }
    }
  }
  if (final_state) *final_state = S;
  return out;
}

// The chunked (WY / UT) form of the same recurrence, in double, as a GPU kernel computes prefill
// (qwen35.md section 5): per chunk of cs rows with G_t the running sum of g inside it,
// A[t][s] = b_t (k_t . k_s) e^(G_t - G_s) for s < t, (I + A) D = b V - (b e^G K) S0 solved by
// forward substitution, O_t = e^(G_t) S0^T q_t + sum_(s <= t) e^(G_t - G_s) (q_t . k_s) D_s, and
// S = e^(G_last) S0 + sum_s e^(G_last - G_s) k_s D_s^T. The CPU runs the recurrence instead
// (docs/backends.md: no faster there, and exact); this checks the form the CUDA kernel will use.
std::vector<double> delta_chunked_reference(const DeltaInputs& in, std::int64_t cs, std::vector<double>* final_state) {
  std::vector<double> S(in.state.begin(), in.state.end()), out(in.T * kDv * kHv);
  const double scale = 1.0 / std::sqrt(double(kDk));
  for (std::int64_t j = 0; j < kHv; ++j) {
    double* s0 = &S[j * kDk * kDv];  // s0[m * kDk + i] = S[i][m]
    for (std::int64_t c0 = 0; c0 < in.T; c0 += cs) {
      const std::int64_t L = std::min(cs, in.T - c0);
      auto q = [&](std::int64_t t) { return &in.q[((c0 + t) * kHk + j % kHk) * kDk]; };
      auto k = [&](std::int64_t t) { return &in.k[((c0 + t) * kHk + j % kHk) * kDk]; };
      auto v = [&](std::int64_t t) { return &in.v[((c0 + t) * kHv + j) * kDv]; };
      auto beta = [&](std::int64_t t) { return double(in.b[(c0 + t) * kHv + j]); };
      std::vector<double> G(L);
      for (std::int64_t t = 0; t < L; ++t) G[t] = (t ? G[t - 1] : 0.0) + in.g[(c0 + t) * kHv + j];
      auto dot = [](const float* a, const float* b) {
        double d = 0;
        for (std::int64_t i = 0; i < kDk; ++i) d += double(a[i]) * b[i];
        return d;
      };
      // D: forward substitution of (I + A) D = b V - (b e^G K) S0, one row of Dv per t.
      std::vector<double> D(L * kDv);
      for (std::int64_t t = 0; t < L; ++t)
        for (std::int64_t m = 0; m < kDv; ++m) {
          double ks0 = 0;
          for (std::int64_t i = 0; i < kDk; ++i) ks0 += double(k(t)[i]) * s0[m * kDk + i];
          double rhs = beta(t) * (v(t)[m] - std::exp(G[t]) * ks0);
          for (std::int64_t s = 0; s < t; ++s) rhs -= beta(t) * dot(k(t), k(s)) * std::exp(G[t] - G[s]) * D[s * kDv + m];
          D[t * kDv + m] = rhs;
        }
      for (std::int64_t t = 0; t < L; ++t)
        for (std::int64_t m = 0; m < kDv; ++m) {
          double qs0 = 0;
          for (std::int64_t i = 0; i < kDk; ++i) qs0 += double(q(t)[i]) * s0[m * kDk + i];
          double o = std::exp(G[t]) * qs0;
          for (std::int64_t s = 0; s <= t; ++s) o += std::exp(G[t] - G[s]) * dot(q(t), k(s)) * D[s * kDv + m];
          out[((c0 + t) * kHv + j) * kDv + m] = o * scale;
        }
      for (std::int64_t m = 0; m < kDv; ++m)
        for (std::int64_t i = 0; i < kDk; ++i) {
          double x = std::exp(G[L - 1]) * s0[m * kDk + i];
          for (std::int64_t s = 0; s < L; ++s) x += std::exp(G[L - 1] - G[s]) * k(s)[i] * D[s * kDv + m];
          s0[m * kDk + i] = x;
        }
    }
  }
  if (final_state) *final_state = S;
  return out;
}

struct DeltaRun {
  Status status;
  std::vector<float> out, state_out, deltas;
};

// The op over rows [t0, t0 + n) of `in` (state: `state`), as a chain or with parents; with
// want_deltas, each row's d too.
DeltaRun run_delta(Backend& be, const DeltaInputs& in, std::int64_t t0, std::int64_t n, std::vector<float> state,
                   const std::int32_t* parents = nullptr, bool want_state = false, bool want_deltas = false) {
  auto sub = [&](const std::vector<float>& x, std::int64_t row) {
    return std::vector<float>(x.begin() + t0 * row, x.begin() + (t0 + n) * row);
  };
  auto q = sub(in.q, kDk * kHk), k = sub(in.k, kDk * kHk), v = sub(in.v, kDv * kHv), g = sub(in.g, kHv),
       b = sub(in.b, kHv);
  DeltaRun r;
  r.out.assign(static_cast<std::size_t>(kDv * kHv * n), 0.0f);
  r.state_out.assign(state.size(), 0.0f);
  r.deltas.assign(r.out.size(), 0.0f);
  TensorView none;
  none.data = nullptr;
  r.status = be.gated_delta_net(view(q, kDk, kHk, n), view(k, kDk, kHk, n), view(v, kDv, kHv, n), view(g, kHv, n),
                                view(b, kHv, n), view(state, kDk, kDv, kHv), idx(parents, std::size_t(n)), view(r.out, kDv, kHv, n),
                                want_state ? view(r.state_out, kDk, kDv, kHv) : none,
                                want_deltas ? view(r.deltas, kDv, kHv, n) : none);
  return r;
}

// The rows `path` of `in` gathered into a chain from the same state.
DeltaInputs chain_of(const DeltaInputs& in, const std::vector<std::int64_t>& path) {
  DeltaInputs chain{static_cast<std::int64_t>(path.size()), {}, {}, {}, {}, {}, in.state};
  for (std::int64_t t : path) {
    auto take = [&](const std::vector<float>& x, std::vector<float>& to, std::int64_t row) {
      to.insert(to.end(), x.begin() + t * row, x.begin() + (t + 1) * row);
    };
    take(in.q, chain.q, kDk * kHk), take(in.k, chain.k, kDk * kHk), take(in.v, chain.v, kDv * kHv);
    take(in.g, chain.g, kHv), take(in.b, chain.b, kHv);
  }
  return chain;
}

double max_rel_error(const std::vector<float>& got, const std::vector<double>& want) {
  double scale = 0, err = 0;
  for (double w : want) scale = std::max(scale, std::abs(w));
  for (std::size_t i = 0; i < got.size(); ++i) err = std::max(err, std::abs(got[i] - want[i]));
  return err / std::max(scale, 1e-30);
}

class DeltaNet : public OpTest {};
CPU_OP_TEST_SUITE(DeltaNet);

TEST_P(DeltaNet, TheRecurrenceMatchesADoubleReferenceAtRealShapes) {
  const DeltaInputs in = delta_inputs(5, 100);
  std::vector<double> want_state;
  const auto want = delta_reference(in, {0, 1, 2, 3, 4}, &want_state);
  const DeltaRun got = run_delta(*backend, in, 0, 5, in.state, nullptr, true);
  ASSERT_TRUE(got.status.ok()) << got.status.message();
  EXPECT_LT(max_rel_error(got.out, want), kDeltaNetRelTol);
  EXPECT_LT(max_rel_error(got.state_out, want_state), kDeltaNetRelTol);
}

// The chunked form (chunks of 64, the last one partial) equals the recurrence in double, and the
// op's f32 recurrence equals both within its tolerance, outputs and final state.
// (Once, on the default level: every setup gives the same bits, above.)
TEST(DeltaNetChunked, TheChunkedFormEqualsTheRecurrence) {
  auto backend = make_cpu(2);
  ASSERT_TRUE(backend);
  const DeltaInputs in = delta_inputs(150, 150);
  std::vector<double> rec_state, chunk_state;
  std::vector<std::int64_t> all(150);
  for (std::int64_t t = 0; t < 150; ++t) all[t] = t;
  const auto rec = delta_reference(in, all, &rec_state);
  const auto chunked = delta_chunked_reference(in, 64, &chunk_state);
  double err = 0, state_err = 0;
  for (std::size_t i = 0; i < rec.size(); ++i) err = std::max(err, std::abs(rec[i] - chunked[i]));
  for (std::size_t i = 0; i < rec_state.size(); ++i) state_err = std::max(state_err, std::abs(rec_state[i] - chunk_state[i]));
  EXPECT_LT(err, kChunkedAbsTol);
  EXPECT_LT(state_err, kChunkedAbsTol);
  const DeltaRun got = run_delta(*backend, in, 0, 150, in.state, nullptr, true);
  ASSERT_TRUE(got.status.ok());
  EXPECT_LT(max_rel_error(got.out, chunked), kDeltaNetRelTol);
  EXPECT_LT(max_rel_error(got.state_out, chunk_state), kDeltaNetRelTol);
}

// A chain of T rows in one call gives the bits of T calls of one row each, its final state
// included: a verify pass reproduces decoding, and replaying accepted rows restores its state.
TEST_P(DeltaNet, AChainIsBitForBitItsRowsOneAtATime) {
  const DeltaInputs in = delta_inputs(4, 200);
  const DeltaRun all = run_delta(*backend, in, 0, 4, in.state, nullptr, true);
  ASSERT_TRUE(all.status.ok()) << all.status.message();
  std::vector<float> state = in.state;
  for (std::int64_t t = 0; t < 4; ++t) {
    const DeltaRun one = run_delta(*backend, in, t, 1, state, nullptr, true);
    ASSERT_TRUE(one.status.ok());
    const std::vector<float> part(all.out.begin() + t * kDv * kHv, all.out.begin() + (t + 1) * kDv * kHv);
    ASSERT_EQ(first_bit_difference(one.out, part), -1) << "row " << t;
    state = one.state_out;
  }
  EXPECT_EQ(first_bit_difference(state, all.state_out), -1);
}

// A token tree (root 0; 1 and 4 under it; 2 under 1; 3 under 2; 5 under 4): every row's output is
// that of its path from the state run as a chain, bit for bit.
TEST_P(DeltaNet, ATreeRowIsBitForBitItsPathRunAlone) {
  const DeltaInputs in = delta_inputs(6, 300);
  const std::int32_t parents[] = {-1, 0, 1, 2, 0, 4};
  const DeltaRun tree = run_delta(*backend, in, 0, 6, in.state, parents);
  ASSERT_TRUE(tree.status.ok()) << tree.status.message();
  const std::vector<std::vector<std::int64_t>> paths = {{0, 1, 2, 3}, {0, 4, 5}};
  for (const auto& path : paths) {
    const DeltaInputs chain = chain_of(in, path);
    const DeltaRun alone = run_delta(*backend, chain, 0, chain.T, in.state);
    ASSERT_TRUE(alone.status.ok());
    for (std::size_t p = 0; p < path.size(); ++p) {
      const auto t = path[p];
      for (std::int64_t e = 0; e < kDv * kHv; ++e)
        ASSERT_EQ(bits(alone.out[p * kDv * kHv + e]), bits(tree.out[t * kDv * kHv + e])) << "row " << t << " elem " << e;
    }
  }
}

// What a tree pass keeps (each row's d, with its k and g) moves the state along any path of the
// tree to the bits of running that path as a chain: the commit of a speculative round, without
// the dot products. Paths of the tree of the test above, whole, cut short, and of one row.
TEST_P(DeltaNet, ATreePassesDeltasMoveTheStateAlongAPathBitForBit) {
  const DeltaInputs in = delta_inputs(6, 350);
  const std::int32_t parents[] = {-1, 0, 1, 2, 0, 4};
  const DeltaRun tree = run_delta(*backend, in, 0, 6, in.state, parents, false, true);
  ASSERT_TRUE(tree.status.ok()) << tree.status.message();
  auto k = in.k, g = in.g;
  for (const std::vector<std::int64_t>& path : {std::vector<std::int64_t>{0, 1, 2, 3}, {0, 4, 5}, {0, 1}, {0}}) {
    const DeltaInputs chain = chain_of(in, path);
    const DeltaRun want = run_delta(*backend, chain, 0, chain.T, in.state, nullptr, true);
    ASSERT_TRUE(want.status.ok());
    std::vector<std::int32_t> rows(path.begin(), path.end());
    auto state = in.state, deltas = tree.deltas;
    ASSERT_TRUE(backend->delta_net_apply(view(k, kDk, kHk, 6), view(deltas, kDv, kHv, 6), view(g, kHv, 6), idx(rows),
                                         view(state, kDk, kDv, kHv)).ok());
    EXPECT_EQ(first_bit_difference(state, want.state_out), -1) << "path of " << path.size() << " ending at " << path.back();
  }
  // No rows: the state as it was.
  auto state = in.state, deltas = tree.deltas;
  ASSERT_TRUE(backend->delta_net_apply(view(k, kDk, kHk, 6), view(deltas, kDv, kHv, 6), view(g, kHv, 6), TensorView{},
                                       view(state, kDk, kDv, kHv)).ok());
  EXPECT_EQ(first_bit_difference(state, in.state), -1);
}

// Every level computes the dot products in the same lane order (kernels.hpp): the same bits as the
// scalar kernel, and on every thread count.
TEST_P(DeltaNet, EveryLevelAndThreadCountGivesTheScalarBits) {
  const DeltaInputs in = delta_inputs(3, 400);
  const DeltaRun got = run_delta(*backend, in, 0, 3, in.state, nullptr, true);
  ASSERT_TRUE(got.status.ok());
  auto scalar = make_cpu(1, "scalar");
  ASSERT_TRUE(scalar);
  const DeltaRun want = run_delta(*scalar, in, 0, 3, in.state, nullptr, true);
  EXPECT_EQ(first_bit_difference(got.out, want.out), -1);
  EXPECT_EQ(first_bit_difference(got.state_out, want.state_out), -1);
}

// The conv window: per channel the Kc - 1 raw inputs before the row, then the row.
std::vector<double> conv_reference(const std::vector<float>& x, const std::vector<float>& w, const std::vector<float>& state,
                                   const std::vector<std::int64_t>& path, std::vector<float>* final_state = nullptr) {
  const std::int64_t H = kConvKernel - 1;
  std::vector<double> y(path.size() * kChannels);
  for (std::int64_t c = 0; c < kChannels; ++c) {
    std::vector<double> window(state.begin() + c * H, state.begin() + (c + 1) * H);
    for (std::size_t p = 0; p < path.size(); ++p) {
      window.push_back(x[path[p] * kChannels + c]);
      double s = 0;
      for (std::int64_t i = 0; i < kConvKernel; ++i) s += double(w[c * kConvKernel + i]) * window[window.size() - kConvKernel + i];
      y[p * kChannels + c] = s / (1 + std::exp(-s));
    }
    if (final_state)
      for (std::int64_t i = 0; i < H; ++i) (*final_state)[c * H + i] = static_cast<float>(window[window.size() - H + i]);
  }
  return y;
}

TEST_P(DeltaNet, TheCausalConvolutionFollowsItsWindowInChainsAndTrees) {
  const std::int64_t T = 5, H = kConvKernel - 1;
  auto x = random_floats(kChannels * T, -2, 2, 500), w = random_floats(kConvKernel * kChannels, -1, 1, 501),
       state = random_floats(H * kChannels, -2, 2, 502);
  std::vector<float> y(x.size()), next(state.size()), want_next(state.size());
  ASSERT_TRUE(backend->causal_conv_silu(view(x, kChannels, T), view(w, kConvKernel, kChannels), view(state, H, kChannels),
                                        TensorView{}, view(y, kChannels, T), view(next, H, kChannels)).ok());
  const auto want = conv_reference(x, w, state, {0, 1, 2, 3, 4}, &want_next);
  for (std::size_t i = 0; i < y.size(); ++i) ASSERT_NEAR(y[i], want[i], kConvRelTol * std::abs(want[i]) + kConvAbsTol) << i;
  EXPECT_EQ(first_bit_difference(next, want_next), -1);  // raw inputs, copied
  // A tree: 0 -> 1 -> 2, 0 -> 3 -> 4. Row 4's window is (state's last, 0, 3).
  const std::int32_t parents[] = {-1, 0, 1, 0, 3};
  std::vector<float> yt(x.size());
  TensorView none;
  none.data = nullptr;
  ASSERT_TRUE(backend->causal_conv_silu(view(x, kChannels, T), view(w, kConvKernel, kChannels), view(state, H, kChannels),
                                        idx(parents, 5), view(yt, kChannels, T), none).ok());
  const auto branch = conv_reference(x, w, state, {0, 3, 4});
  for (std::int64_t c = 0; c < kChannels; ++c) {
    ASSERT_EQ(yt[2 * kChannels + c], y[2 * kChannels + c]);  // row 2 follows 0, 1 as in the chain
    ASSERT_NEAR(yt[4 * kChannels + c], branch[2 * kChannels + c], kConvRelTol * std::abs(branch[2 * kChannels + c]) + kConvAbsTol);
  }
  // In place of the state (state_out == state), in one row at a time: the same final window.
  std::vector<float> rolling = state, y1(kChannels);
  for (std::int64_t t = 0; t < T; ++t) {
    std::vector<float> xt(x.begin() + t * kChannels, x.begin() + (t + 1) * kChannels);
    ASSERT_TRUE(backend->causal_conv_silu(view(xt, kChannels), view(w, kConvKernel, kChannels), view(rolling, H, kChannels),
                                          TensorView{}, view(y1, kChannels), view(rolling, H, kChannels)).ok());
    for (std::int64_t c = 0; c < kChannels; ++c) ASSERT_EQ(bits(y1[c]), bits(y[t * kChannels + c])) << t;
  }
  EXPECT_EQ(first_bit_difference(rolling, want_next), -1);
}

// The window moved on by a path's raw inputs equals the window after running that path (the
// conv's own state_out): longer than the window, shorter, one row, none.
TEST_P(DeltaNet, TheConvWindowAdvancesAlongAPath) {
  const std::int64_t T = 6, H = kConvKernel - 1;
  auto x = random_floats(kChannels * T, -2, 2, 550), state = random_floats(H * kChannels, -2, 2, 551);
  for (const std::vector<std::int64_t>& path :
       {std::vector<std::int64_t>{0, 3, 4, 5}, {1, 2}, {5}, std::vector<std::int64_t>{}}) {
    std::vector<float> want(state.size());
    conv_reference(x, std::vector<float>(kConvKernel * kChannels, 0.0f), state, path, &want);
    if (path.empty()) want = state;
    std::vector<std::int32_t> rows(path.begin(), path.end());
    auto got = state;
    ASSERT_TRUE(backend->conv_window_advance(view(x, kChannels, T), idx(rows), view(got, H, kChannels)).ok());
    EXPECT_EQ(first_bit_difference(got, want), -1) << "a path of " << path.size();
  }
}

TEST_P(DeltaNet, GatesL2NormAndSigmoidMulMatchDoubleReferences) {
  const std::int64_t T = 7;
  auto alpha = random_floats(kHv * T, -25, 25, 600), beta = random_floats(kHv * T, -8, 8, 601),
       bias = random_floats(kHv, -1, 1, 602), a = random_floats(kHv, -3, -0.01f, 603);
  std::vector<float> g(alpha.size()), b(beta.size());
  ASSERT_TRUE(backend->delta_net_gates(view(alpha, kHv, T), view(beta, kHv, T), view(bias, kHv), view(a, kHv),
                                       view(g, kHv, T), view(b, kHv, T)).ok());
  for (std::int64_t t = 0; t < T; ++t)
    for (std::int64_t h = 0; h < kHv; ++h) {
      const double x = double(alpha[t * kHv + h]) + bias[h];
      const double want_g = (x > 20 ? x : std::log1p(std::exp(x))) * a[h];
      const double want_b = 1 / (1 + std::exp(-double(beta[t * kHv + h])));
      ASSERT_NEAR(g[t * kHv + h], want_g, kGateRelTol * std::abs(want_g) + kSoftplusAbsTol * std::abs(a[h])) << "x " << x;
      ASSERT_NEAR(b[t * kHv + h], want_b, kGateRelTol * want_b) << t << " " << h;
    }
  // l2_norm over a head, in place: unit length; the eps floor for a zero row.
  auto x = random_floats(kDk * kHk * T, -3, 3, 604);
  std::fill(x.begin(), x.begin() + kDk, 0.0f);
  const auto x0 = x;
  ASSERT_TRUE(backend->l2_norm(view(x, kDk, kHk * T), 1e-6f, view(x, kDk, kHk * T)).ok());
  for (std::int64_t i = 0; i < kDk; ++i) ASSERT_EQ(x[i], 0.0f);
  for (std::int64_t r = 1; r < kHk * T; ++r) {
    double ss = 0;
    for (std::int64_t i = 0; i < kDk; ++i) ss += double(x0[r * kDk + i]) * x0[r * kDk + i];
    for (std::int64_t i = 0; i < kDk; ++i)
      ASSERT_NEAR(x[r * kDk + i], x0[r * kDk + i] / std::sqrt(ss), 2e-7 * std::abs(x0[r * kDk + i] / std::sqrt(ss)) + 1e-9);
  }
  // sigmoid_mul: the attention output gate.
  auto o = random_floats(256 * T, -4, 4, 605), gate = random_floats(256 * T, -30, 30, 606);
  std::vector<float> y(o.size());
  ASSERT_TRUE(backend->sigmoid_mul(view(o, 256, T), view(gate, 256, T), view(y, 256, T)).ok());
  for (std::size_t i = 0; i < y.size(); ++i) {
    const double want = o[i] / (1 + std::exp(-double(gate[i])));
    ASSERT_NEAR(y[i], want, kSigmoidRelTol * std::abs(want) + 1e-30) << i;
  }
}

// Bad arguments: one line naming the op and the fault.
TEST_P(DeltaNet, BadArgumentsAreOneLineErrors) {
  DeltaInputs in = delta_inputs(2, 700);
  const std::int32_t later[] = {-1, 1};
  EXPECT_EQ(run_delta(*backend, in, 0, 2, in.state, later).status.message(),
            "cpu backend: gated_delta_net: parents[1] = 1; a row's parent must be an earlier row or -1 (the state)");
  const std::int32_t tree[] = {-1, 0};
  EXPECT_EQ(run_delta(*backend, in, 0, 2, in.state, tree, true).status.message(),
            "cpu backend: gated_delta_net: state_out needs a chain (parents null): a token tree has no single final state");
  std::vector<float> q(20 * 2), k(20 * 2), v(kDv * 3), g(3), b(3), s(20 * kDv * 3), out(kDv * 3);
  TensorView none;
  none.data = nullptr;
  EXPECT_EQ(backend->gated_delta_net(view(q, 20, 2), view(k, 20, 2), view(v, kDv, 3), view(g, 3), view(b, 3),
                                     view(s, 20, kDv, 3), TensorView{}, view(out, kDv, 3), none, none).message(),
            "cpu backend: gated_delta_net: the key head size Dk = 20 is not a multiple of 16");
  // deltas: one per row of v.
  std::vector<float> deltas(kDv * kHv), out2(kDv * kHv * 2);
  EXPECT_EQ(backend->gated_delta_net(view(in.q, kDk, kHk, 2), view(in.k, kDk, kHk, 2), view(in.v, kDv, kHv, 2),
                                     view(in.g, kHv, 2), view(in.b, kHv, 2), view(in.state, kDk, kDv, kHv), idx(tree, 2),
                                     view(out2, kDv, kHv, 2), none,
                                     view(deltas, kDv, kHv, 1)).message(),
            "cpu backend: gated_delta_net: deltas has shape [128, 48]; expected [128, 48, 2] like v");
  // delta_net_apply and conv_window_advance: rows past what is kept.
  const std::int32_t past[] = {0, 2}, negative[] = {-1};
  std::vector<float> d(kDv * kHv * 2);
  EXPECT_EQ(backend->delta_net_apply(view(in.k, kDk, kHk, 2), view(d, kDv, kHv, 2), view(in.g, kHv, 2), idx(past, 2),
                                     view(in.state, kDk, kDv, kHv)).message(),
            "cpu backend: delta_net_apply: rows[1] = 2 is past the 2 rows kept");
  EXPECT_EQ(backend->delta_net_apply(view(in.k, kDk, kHk, 2), view(d, kDv, kHv, 2), view(in.g, kHv, 2), idx(negative, 1),
                                     view(in.state, kDk, kDv, kHv)).message(),
            "cpu backend: delta_net_apply: rows[0] = -1 is negative");
  // Index arrays are packed i32 vectors of the rows they index.
  TensorView wrong_type = idx(past, 2);
  wrong_type.type = graft::type_id::f32;
  EXPECT_EQ(backend->delta_net_apply(view(in.k, kDk, kHk, 2), view(d, kDv, kHv, 2), view(in.g, kHv, 2), wrong_type,
                                     view(in.state, kDk, kDv, kHv)).message(),
            "cpu backend: delta_net_apply: rows has type f32; expected i32");
  std::vector<float> x(8 * 2), w(9 * 8), st(8 * 8), y(8 * 2);
  EXPECT_EQ(backend->causal_conv_silu(view(x, 8, 2), view(w, 9, 8), view(st, 8, 8), none, view(y, 8, 2), none).message(),
            "cpu backend: causal_conv_silu: the kernel size Kc = w.ne[0] = 9 is not supported (2..8)");
  EXPECT_EQ(backend->causal_conv_silu(view(x, 8, 2), view(w, 4, 8), view(st, 3, 8), none, view(x, 8, 2), none).message(),
            "cpu backend: causal_conv_silu: y is x; this op cannot run in place");
  const std::int32_t parents_of_one[] = {-1};
  EXPECT_EQ(backend->causal_conv_silu(view(x, 8, 2), view(w, 4, 8), view(st, 3, 8), idx(parents_of_one, 1), view(y, 8, 2),
                                      none).message(),
            "cpu backend: causal_conv_silu: parents has shape [1]; expected [2]");
  EXPECT_EQ(backend->conv_window_advance(view(x, 8, 2), idx(past, 2), view(st, 3, 8)).message(),
            "cpu backend: conv_window_advance: rows[1] = 2 is past the 2 rows of x");
}

}  // namespace
