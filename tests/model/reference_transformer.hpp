// A deliberately naive llama/qwen3/qwen35 forward pass in double precision over f32 weights,
// written from the architecture descriptions (formats.md; shared/reference/qwen35.md for qwen35's
// gated attention and gated delta-net) independently of core/model: full recompute of the whole
// sequence for every call, plain loops, no KV cache, the delta-net's recurrence token by token.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "gguf/gguf_file.hpp"
#include "model/model_params.hpp"

namespace ref {

struct Params {
  int n_vocab, n_embd, n_layer, n_head, n_head_kv, head_dim, n_ff, n_rot;
  bool neox, qk_norm;
  double freq_base, eps;
  // qwen35: layer l is a gated delta-net unless (l + 1) % interval == 0 (then gated attention);
  // every layer's pre-FFN norm is post_attention_norm.
  bool qwen35 = false;
  int interval = 4, conv_kernel = 0, ssm_state = 0, ssm_groups = 0, ssm_heads = 0;
};

// The reference's parameters read from a loaded model's (the qwen35 ones for a qwen35 file).
inline Params params_of(const graft::ModelParams& mp) {
  Params p{int(mp.n_vocab), int(mp.n_embd), int(mp.n_main_layers()), int(mp.n_head), int(mp.n_head_kv),
           int(mp.head_dim), int(mp.n_ff), int(mp.n_rot), mp.rope_neox, mp.qk_norm, double(mp.rope_freq_base),
           double(mp.rms_eps)};
  if (mp.arch_name == "qwen35") {
    p.qwen35 = true;
    p.interval = int(mp.full_attention_interval);
    p.conv_kernel = int(mp.ssm_conv_kernel);
    p.ssm_state = int(mp.ssm_state);
    p.ssm_groups = int(mp.ssm_groups);
    p.ssm_heads = int(mp.ssm_heads);
  }
  return p;
}

class Transformer {
 public:
  Transformer(const graft::gguf::File& f, const Params& p) : f_(f), p_(p) {}

  // Logits (n_vocab) after each token of `tokens`.
  std::vector<std::vector<double>> forward(const std::vector<int>& tokens) const {
    const auto x = hidden(tokens);
    std::vector<std::vector<double>> logits(x.size());
    for (std::size_t t = 0; t < x.size(); ++t) logits[t] = lm_head(norm(x[t], vec("output_norm.weight", p_.n_embd)));
    return logits;
  }

  // The residual stream after the last main layer, per token (before output_norm).
  std::vector<std::vector<double>> hidden(const std::vector<int>& tokens) const {
    const int T = static_cast<int>(tokens.size()), E = p_.n_embd;
    std::vector<std::vector<double>> x(T, std::vector<double>(E));
    std::vector<int> positions(T);
    for (int t = 0; t < T; ++t) x[t] = row("token_embd.weight", tokens[t], E), positions[t] = t;
    for (int l = 0; l < p_.n_layer; ++l) {
      const std::string b = "blk." + std::to_string(l) + ".";
      if (p_.qwen35 && (l + 1) % p_.interval != 0)
        delta_net_layer(b, x);
      else
        attention_block(b, x, positions);
    }
    return x;
  }

  // qwen35's MTP block (blk.n_layer, shared/reference/qwen35.md section 7) drafting k tokens after
  // `tokens` and the target's `next`: row p pairs token p with the target's normed hidden state of
  // token p - 1; each draft feeds the block's own normed output to the next step. Greedy drafts,
  // and each one's softmax probability in *probs.
  std::vector<int> mtp_drafts(const std::vector<int>& tokens, int next, int k, std::vector<double>* probs) const {
    const int E = p_.n_embd, n = static_cast<int>(tokens.size());
    const std::string b = "blk." + std::to_string(p_.n_layer) + ".";
    const auto on = vec("output_norm.weight", E);
    auto h = hidden(tokens);
    for (auto& r : h) r = norm(r, on);  // the target's t_h_nextn
    std::vector<std::vector<double>> u;  // the block's input rows
    std::vector<int> positions;
    auto add_row = [&](int token, const std::vector<double>& hid, int pos) {
      auto e = norm(row("token_embd.weight", token, E), vec(b + "nextn.enorm.weight", E));
      const auto hh = norm(hid, vec(b + "nextn.hnorm.weight", E));
      e.insert(e.end(), hh.begin(), hh.end());  // [embedding ; hidden]
      u.push_back(matvec(b + "nextn.eh_proj.weight", e, E));
      positions.push_back(pos);
    };
    for (int pos = 1; pos < n; ++pos) add_row(tokens[pos], h[pos - 1], pos);
    add_row(next, h[n - 1], n);
    std::vector<int> drafts;
    for (int step = 0; step < k; ++step) {
      auto x = u;
      attention_block(b, x, positions);
      const auto hm = norm(x.back(), vec(b + "nextn.shared_head_norm.weight", E));
      const auto logits = lm_head(hm);
      const int best = static_cast<int>(std::max_element(logits.begin(), logits.end()) - logits.begin());
      double sum = 0;
      for (double l : logits) sum += std::exp(l - logits[best]);
      if (probs) probs->push_back(1.0 / sum);
      drafts.push_back(best);
      add_row(best, hm, n + 1 + step);
    }
    return drafts;
  }

 private:
  // x rows (at positions pos, each attending to itself and the rows before it) += a full-attention
  // block: attention (qwen35: gated), then the FFN.
  void attention_block(const std::string& b, std::vector<std::vector<double>>& x, const std::vector<int>& pos) const {
    const int T = static_cast<int>(x.size()), E = p_.n_embd, D = p_.head_dim;
    std::vector<std::vector<double>> q(T), k(T), v(T), gate(T);
    for (int t = 0; t < T; ++t) {
      auto h = norm(x[t], vec(b + "attn_norm.weight", E));
      if (p_.qwen35) {  // per head: D query values, then D gate values
        const auto qg = matvec(b + "attn_q.weight", h, 2 * p_.n_head * D);
        q[t].resize(p_.n_head * D), gate[t].resize(p_.n_head * D);
        for (int hd = 0; hd < p_.n_head; ++hd)
          for (int d = 0; d < D; ++d) q[t][hd * D + d] = qg[2 * hd * D + d], gate[t][hd * D + d] = qg[2 * hd * D + D + d];
      } else {
        q[t] = matvec(b + "attn_q.weight", h, p_.n_head * D);
      }
      k[t] = matvec(b + "attn_k.weight", h, p_.n_head_kv * D);
      v[t] = matvec(b + "attn_v.weight", h, p_.n_head_kv * D);
      if (p_.qk_norm) {
        for (int hd = 0; hd < p_.n_head; ++hd) norm_head(q[t], hd, vec(b + "attn_q_norm.weight", D));
        for (int hd = 0; hd < p_.n_head_kv; ++hd) norm_head(k[t], hd, vec(b + "attn_k_norm.weight", D));
      }
      for (int hd = 0; hd < p_.n_head; ++hd) rope(q[t], hd, pos[t]);
      for (int hd = 0; hd < p_.n_head_kv; ++hd) rope(k[t], hd, pos[t]);
    }
    for (int t = 0; t < T; ++t) {
      std::vector<double> att(p_.n_head * D, 0.0);
      for (int hd = 0; hd < p_.n_head; ++hd) {
        const int kvh = hd / (p_.n_head / p_.n_head_kv);
        std::vector<double> s(t + 1);
        double mx = -1e300;
        for (int j = 0; j <= t; ++j) {
          double dot = 0;
          for (int d = 0; d < D; ++d) dot += q[t][hd * D + d] * k[j][kvh * D + d];
          s[j] = dot / std::sqrt(double(D));
          mx = std::max(mx, s[j]);
        }
        double sum = 0;
        for (auto& e : s) sum += (e = std::exp(e - mx));
        for (int j = 0; j <= t; ++j)
          for (int d = 0; d < D; ++d) att[hd * D + d] += s[j] / sum * v[j][kvh * D + d];
      }
      if (p_.qwen35)
        for (int i = 0; i < p_.n_head * D; ++i) att[i] /= 1 + std::exp(-gate[t][i]);  // the output gate
      auto o = matvec(b + "attn_output.weight", att, E);
      for (int e = 0; e < E; ++e) x[t][e] += o[e];
      ffn(b, x[t]);
    }
  }
  std::vector<double> lm_head(const std::vector<double>& h) const {
    return matvec(f_.tensor("output.weight") ? "output.weight" : "token_embd.weight", h, p_.n_vocab);
  }

  // x += SwiGLU(norm(x)), the norm ffn_norm (qwen35: post_attention_norm).
  void ffn(const std::string& b, std::vector<double>& x) const {
    const int E = p_.n_embd;
    auto h = norm(x, vec(b + (p_.qwen35 ? "post_attention_norm.weight" : "ffn_norm.weight"), E));
    auto g = matvec(b + "ffn_gate.weight", h, p_.n_ff);
    auto u = matvec(b + "ffn_up.weight", h, p_.n_ff);
    for (int i = 0; i < p_.n_ff; ++i) g[i] = g[i] / (1 + std::exp(-g[i])) * u[i];
    auto dn = matvec(b + "ffn_down.weight", g, E);
    for (int e = 0; e < E; ++e) x[e] += dn[e];
  }

  // qwen35.md section 4, token by token from zero state: x += ssm_out(gated norm(delta rule(conv))).
  void delta_net_layer(const std::string& b, std::vector<std::vector<double>>& x) const {
    const int E = p_.n_embd, Kc = p_.conv_kernel, Dk = p_.ssm_state, Hk = p_.ssm_groups, Hv = p_.ssm_heads;
    const int C = 2 * Hk * Dk + Hv * Dk;
    const float* conv = data(b + "ssm_conv1d.weight");  // [Kc, C]: channel c's taps at c * Kc
    const auto dt_bias = vec(b + "ssm_dt.bias", Hv), a = vec(b + "ssm_a", Hv), ssm_norm = vec(b + "ssm_norm.weight", Dk);
    std::vector<std::vector<double>> window(C, std::vector<double>(Kc - 1, 0.0));  // oldest first
    std::vector<double> S(static_cast<std::size_t>(Hv) * Dk * Dk, 0.0);             // S[j][i][m]
    for (auto& xt : x) {
      const auto h = norm(xt, vec(b + "attn_norm.weight", E));
      const auto raw = matvec(b + "attn_qkv.weight", h, C);
      const auto z = matvec(b + "attn_gate.weight", h, Hv * Dk);
      const auto beta_raw = matvec(b + "ssm_beta.weight", h, Hv), alpha = matvec(b + "ssm_alpha.weight", h, Hv);
      std::vector<double> y(C);
      for (int c = 0; c < C; ++c) {
        double s = 0;
        for (int i = 0; i < Kc - 1; ++i) s += conv[c * Kc + i] * window[c][i];
        s += conv[c * Kc + Kc - 1] * raw[c];
        y[c] = s / (1 + std::exp(-s));
        window[c].erase(window[c].begin());
        window[c].push_back(raw[c]);
      }
      auto l2 = [&](int off) {
        double ss = 0;
        for (int i = 0; i < Dk; ++i) ss += y[off + i] * y[off + i];
        const double r = 1.0 / std::max(std::sqrt(ss), p_.eps);
        for (int i = 0; i < Dk; ++i) y[off + i] *= r;
      };
      for (int hk = 0; hk < Hk; ++hk) l2(hk * Dk), l2(Hk * Dk + hk * Dk);
      std::vector<double> out(static_cast<std::size_t>(Hv) * Dk);
      for (int j = 0; j < Hv; ++j) {
        const double* q = &y[(j % Hk) * Dk];
        const double* k = &y[Hk * Dk + (j % Hk) * Dk];
        const double* v = &y[2 * Hk * Dk + j * Dk];
        const double sp = alpha[j] + dt_bias[j] > 20 ? alpha[j] + dt_bias[j] : std::log1p(std::exp(alpha[j] + dt_bias[j]));
        const double decay = std::exp(sp * a[j]), beta = 1 / (1 + std::exp(-beta_raw[j]));
        double* s = &S[static_cast<std::size_t>(j) * Dk * Dk];  // s[i * Dk + m] = S[i][m]
        for (int e = 0; e < Dk * Dk; ++e) s[e] *= decay;
        std::vector<double> o(Dk, 0.0);
        for (int m = 0; m < Dk; ++m) {
          double u = 0;
          for (int i = 0; i < Dk; ++i) u += s[i * Dk + m] * k[i];
          const double d = beta * (v[m] - u);
          for (int i = 0; i < Dk; ++i) s[i * Dk + m] += k[i] * d;
          for (int i = 0; i < Dk; ++i) o[m] += s[i * Dk + m] * q[i];
          o[m] /= std::sqrt(double(Dk));
        }
        // Gated norm: RMSNorm over the head, times ssm_norm, times silu(z).
        const auto on = norm(o, ssm_norm);
        for (int m = 0; m < Dk; ++m) {
          const double zz = z[j * Dk + m];
          out[j * Dk + m] = on[m] * zz / (1 + std::exp(-zz));
        }
      }
      const auto o = matvec(b + "ssm_out.weight", out, E);
      for (int e = 0; e < E; ++e) xt[e] += o[e];
      ffn(b, xt);
    }
  }

  const float* data(const std::string& name) const {
    const auto* t = f_.tensor(name);
    if (!t || t->type != 0) throw std::runtime_error("reference needs f32 tensor " + name);
    return reinterpret_cast<const float*>(t->data);
  }
  std::vector<double> vec(const std::string& name, int n) const {
    const float* d = data(name);
    return std::vector<double>(d, d + n);
  }
  std::vector<double> row(const std::string& name, int r, int n) const {
    const float* d = data(name) + static_cast<std::size_t>(r) * n;
    return std::vector<double>(d, d + n);
  }
  std::vector<double> matvec(const std::string& name, const std::vector<double>& x, int m) const {
    const float* w = data(name);
    const int k = static_cast<int>(x.size());
    std::vector<double> y(m);
    for (int i = 0; i < m; ++i) {
      double s = 0;
      for (int j = 0; j < k; ++j) s += double(w[static_cast<std::size_t>(i) * k + j]) * x[j];
      y[i] = s;
    }
    return y;
  }
  std::vector<double> norm(const std::vector<double>& x, const std::vector<double>& w) const {
    double ss = 0;
    for (double e : x) ss += e * e;
    const double r = 1.0 / std::sqrt(ss / x.size() + p_.eps);
    std::vector<double> y(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) y[i] = x[i] * r * w[i];
    return y;
  }
  void norm_head(std::vector<double>& x, int h, const std::vector<double>& w) const {
    const int D = p_.head_dim;
    std::vector<double> part(x.begin() + h * D, x.begin() + (h + 1) * D);
    part = norm(part, w);
    std::copy(part.begin(), part.end(), x.begin() + h * D);
  }
  void rope(std::vector<double>& x, int h, int pos) const {
    double* v = x.data() + h * p_.head_dim;
    for (int i = 0; i < p_.n_rot / 2; ++i) {
      const double theta = pos * std::pow(p_.freq_base, -2.0 * i / p_.n_rot);
      const double c = std::cos(theta), s = std::sin(theta);
      const int a = p_.neox ? i : 2 * i, b = p_.neox ? i + p_.n_rot / 2 : 2 * i + 1;
      const double x0 = v[a], x1 = v[b];
      v[a] = x0 * c - x1 * s;
      v[b] = x0 * s + x1 * c;
    }
  }

  const graft::gguf::File& f_;
  Params p_;
};

}  // namespace ref
