// A deliberately naive llama/qwen3 forward pass in double precision over f32 weights, written
// from the architecture description (formats.md) independently of core/model: full recompute of
// the whole sequence for every call, plain loops, no KV cache.
#pragma once

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "gguf/gguf_file.hpp"

namespace ref {

struct Params {
  int n_vocab, n_embd, n_layer, n_head, n_head_kv, head_dim, n_ff, n_rot;
  bool neox, qk_norm;
  double freq_base, eps;
};

class Transformer {
 public:
  Transformer(const graft::gguf::File& f, const Params& p) : f_(f), p_(p) {}

  // Logits (n_vocab) after each token of `tokens`.
  std::vector<std::vector<double>> forward(const std::vector<int>& tokens) const {
    const int T = static_cast<int>(tokens.size()), E = p_.n_embd, D = p_.head_dim;
    std::vector<std::vector<double>> x(T, std::vector<double>(E));
    for (int t = 0; t < T; ++t) x[t] = row("token_embd.weight", tokens[t], E);
    for (int l = 0; l < p_.n_layer; ++l) {
      const std::string b = "blk." + std::to_string(l) + ".";
      std::vector<std::vector<double>> q(T), k(T), v(T);
      for (int t = 0; t < T; ++t) {
        auto h = norm(x[t], vec(b + "attn_norm.weight", E));
        q[t] = matvec(b + "attn_q.weight", h, p_.n_head * D);
        k[t] = matvec(b + "attn_k.weight", h, p_.n_head_kv * D);
        v[t] = matvec(b + "attn_v.weight", h, p_.n_head_kv * D);
        if (p_.qk_norm) {
          for (int hd = 0; hd < p_.n_head; ++hd) norm_head(q[t], hd, vec(b + "attn_q_norm.weight", D));
          for (int hd = 0; hd < p_.n_head_kv; ++hd) norm_head(k[t], hd, vec(b + "attn_k_norm.weight", D));
        }
        for (int hd = 0; hd < p_.n_head; ++hd) rope(q[t], hd, t);
        for (int hd = 0; hd < p_.n_head_kv; ++hd) rope(k[t], hd, t);
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
        auto o = matvec(b + "attn_output.weight", att, E);
        for (int e = 0; e < E; ++e) x[t][e] += o[e];
        auto h = norm(x[t], vec(b + "ffn_norm.weight", E));
        auto g = matvec(b + "ffn_gate.weight", h, p_.n_ff);
        auto u = matvec(b + "ffn_up.weight", h, p_.n_ff);
        for (int i = 0; i < p_.n_ff; ++i) g[i] = g[i] / (1 + std::exp(-g[i])) * u[i];
        auto dn = matvec(b + "ffn_down.weight", g, E);
        for (int e = 0; e < E; ++e) x[t][e] += dn[e];
      }
    }
    const std::string out = f_.tensor("output.weight") ? "output.weight" : "token_embd.weight";
    std::vector<std::vector<double>> logits(T);
    for (int t = 0; t < T; ++t) logits[t] = matvec(out, norm(x[t], vec("output_norm.weight", E)), p_.n_vocab);
    return logits;
  }

 private:
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
