// Shared by the KV-store tests: loading the plugins, random K/V/Q, token trees, and a plain
// double-precision attention to compare against.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "attention.hpp"
#include "attention_kernels.hpp"
#include "half.hpp"
#include "graft/graft.hpp"
#include "plugin_host/host_services.hpp"
#include "plugin_host/plugin_library.hpp"

namespace kvtest {

using namespace graft;

inline std::shared_ptr<PluginLibrary> library(const char* file) {
  auto lib = PluginLibrary::load(std::filesystem::path(GRAFT_PLUGIN_DIR) / file);
  EXPECT_TRUE(lib) << lib.status().message();
  return lib ? *lib : nullptr;
}

inline std::shared_ptr<PluginLibrary> kv_library() {
  static auto lib = library("libgraft_kvstore_device.so");
  return lib;
}

inline std::shared_ptr<Backend> cpu_backend(std::int64_t threads) {
  static auto lib = library("libgraft_backend_cpu.so");
  DefaultHostServices host;
  Config cfg;
  cfg.set("threads", threads);
  auto b = lib->create<Backend>(host, cfg);
  EXPECT_TRUE(b) << b.status().message();
  return b ? *b : nullptr;
}

// The host the factories keep (it must outlive them).
inline const HostServices& default_host() {
  static const DefaultHostServices host;
  return host;
}

inline std::shared_ptr<PluginLibrary> quant_library() {
  static auto lib = library("libgraft_kvstore_quant.so");
  return lib;
}

// "K/V" ("q8_0/q4_0") names the quant store with those types; anything else the device store's
// type ("" leaves the key unset: the plugin's default).
inline bool is_quant(const std::string& type) { return type.find('/') != std::string::npos; }
inline std::shared_ptr<PluginLibrary> library_for(const std::string& type) {
  return is_quant(type) ? quant_library() : kv_library();
}

inline Expected<std::shared_ptr<KvStoreFactory>> kv_factory(const std::string& type,
                                                            const HostServices& host = default_host()) {
  Config cfg;
  if (is_quant(type)) {
    cfg.set("type_k", type.substr(0, type.find('/')));
    cfg.set("type_v", type.substr(type.find('/') + 1));
  } else if (!type.empty()) {
    cfg.set("type", type);
  }
  return library_for(type)->create<KvStoreFactory>(host, cfg);
}

inline KvGeometry geometry(std::uint32_t layers, std::uint32_t kv_heads, std::uint32_t dk, std::uint32_t dv,
                           std::uint32_t capacity) {
  KvGeometry g;
  g.n_layers = layers;
  g.n_kv_heads = kv_heads;
  g.head_dim_k = dk;
  g.head_dim_v = dv;
  g.capacity = capacity;
  return g;
}

inline std::vector<float> uniform(std::mt19937& rng, std::size_t n, float amplitude) {
  std::uniform_real_distribution<float> d(-amplitude, amplitude);
  std::vector<float> x(n);
  for (auto& v : x) v = d(rng);
  return x;
}

inline std::vector<float> round_f16(const std::vector<float>& x) {
  std::vector<float> r(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) r[i] = graft::f16_to_f32(graft::f32_to_f16(x[i]));
  return r;
}

inline float max_abs(const std::vector<float>& x) {
  float m = 0;
  for (float v : x) m = std::max(m, std::fabs(v));
  return m;
}

// An n x n ancestor mask in host memory as AttentionBatch takes it; null: causal.
inline graft::TensorView mask_view(const std::uint8_t* mask, std::uint32_t n) {
  return mask ? graft::i8_view(const_cast<std::uint8_t*>(mask), n, n) : graft::TensorView{};
}

// One layer's K/V as the test wrote it: [slot][kv head][dim], the layout write() takes.
struct RefLayer {
  std::vector<float> k, v;
};

// A token tree of n nodes in topological order: parent[i] < i, or -1 for a child of the last
// committed token. ancestor[i * n + j] = 1 for j == i and every ancestor j of i.
struct Tree {
  std::vector<int> parent;
  std::vector<std::uint8_t> ancestor;
  std::vector<std::uint32_t> depth;  // number of ancestors inside the tree
  // Nodes from the root to `leaf`, ascending.
  std::vector<std::uint32_t> path_to(std::uint32_t leaf) const {
    std::vector<std::uint32_t> p;
    for (int i = static_cast<int>(leaf); i >= 0; i = parent[i]) p.insert(p.begin(), static_cast<std::uint32_t>(i));
    return p;
  }
};

inline Tree tree_from_parents(std::vector<int> parent) {
  Tree t;
  const std::size_t n = parent.size();
  t.parent = std::move(parent);
  t.ancestor.assign(n * n, 0);
  t.depth.assign(n, 0);
  for (std::size_t i = 0; i < n; ++i)
    for (int j = static_cast<int>(i); j >= 0; j = t.parent[j]) {
      t.ancestor[i * n + j] = 1;
      if (j != static_cast<int>(i)) ++t.depth[i];
    }
  return t;
}

// Node 0 is the root; node i > 0 hangs under a random earlier node (two roots when n > 3, as a
// merged tree of two drafters has).
inline Tree random_tree(std::mt19937& rng, std::size_t n) {
  std::vector<int> parent(n, -1);
  for (std::size_t i = 1; i < n; ++i) {
    std::uniform_int_distribution<int> d(0, static_cast<int>(i) - 1);
    parent[i] = (n > 3 && i == n / 2) ? -1 : d(rng);
  }
  return tree_from_parents(std::move(parent));
}

// Plain attention in double. Query i sits at position qpos[i] and batch key j at qpos[j];
// committed slot s is at position s. mask == nullptr means causal within the batch.
inline std::vector<double> reference_attention(const RefLayer& kv, const KvGeometry& g, const std::vector<float>& q,
                                               std::uint32_t n_heads, std::uint32_t n_past, std::uint32_t n_query,
                                               const std::uint8_t* mask, const std::vector<std::uint32_t>& qpos,
                                               float scale, std::uint32_t window) {
  const std::uint32_t dk = g.head_dim_k, dv = g.head_dim_v, n_rep = n_heads / g.n_kv_heads;
  std::vector<double> out(static_cast<std::size_t>(dv) * n_heads * n_query, 0.0);
  for (std::uint32_t i = 0; i < n_query; ++i)
    for (std::uint32_t h = 0; h < n_heads; ++h) {
      const std::uint32_t kvh = h / n_rep;
      std::vector<std::pair<std::uint32_t, double>> scores;  // (slot, score)
      for (std::uint32_t s = 0; s < n_past + n_query; ++s) {
        std::int64_t key_pos = s;
        if (s >= n_past) {
          const std::uint32_t j = s - n_past;
          if (mask ? !mask[i * n_query + j] : j > i) continue;
          key_pos = qpos[j];
        }
        if (window && static_cast<std::int64_t>(qpos[i]) - key_pos >= window) continue;
        double dot = 0;
        for (std::uint32_t d = 0; d < dk; ++d)
          dot += static_cast<double>(q[(static_cast<std::size_t>(i) * n_heads + h) * dk + d]) *
                 kv.k[(static_cast<std::size_t>(s) * g.n_kv_heads + kvh) * dk + d];
        scores.emplace_back(s, dot * scale);
      }
      if (scores.empty()) continue;
      double m = -INFINITY, sum = 0;
      for (auto& [s, x] : scores) m = std::max(m, x);
      for (auto& [s, x] : scores) sum += (x = std::exp(x - m));
      double* o = &out[(static_cast<std::size_t>(i) * n_heads + h) * dv];
      for (auto& [s, p] : scores)
        for (std::uint32_t d = 0; d < dv; ++d)
          o[d] += p / sum * kv.v[(static_cast<std::size_t>(s) * g.n_kv_heads + kvh) * dv + d];
    }
  return out;
}

inline std::vector<std::uint32_t> causal_positions(std::uint32_t n_past, std::uint32_t n_query) {
  std::vector<std::uint32_t> p(n_query);
  for (std::uint32_t i = 0; i < n_query; ++i) p[i] = n_past + i;
  return p;
}

inline std::vector<std::uint32_t> tree_positions(std::uint32_t n_past, const Tree& t) {
  std::vector<std::uint32_t> p(t.depth.size());
  for (std::size_t i = 0; i < p.size(); ++i) p[i] = n_past + t.depth[i];
  return p;
}

inline double max_abs_diff(const std::vector<float>& a, const std::vector<double>& b) {
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

// A store with the libraries, backend and factory it needs; members are destroyed in reverse
// order, so the store goes before the backend whose memory and threads it uses.
struct Harness {
  Harness(const std::string& type, const KvGeometry& g, std::int64_t threads = 2, unsigned seed = 1)
      : geom(g), rng(seed), backend(cpu_backend(threads)) {
    auto f = kv_factory(type);
    EXPECT_TRUE(f) << f.status().message();
    factory = *f;
    auto s = factory->create(*backend, g);
    EXPECT_TRUE(s) << s.status().message();
    store = library_for(type)->adopt(std::move(*s));
    layers.resize(g.n_layers);
  }

  // Writes n random tokens at slot (every layer, different data per layer) and records them.
  void write_random(std::uint32_t slot, std::uint32_t n, float amplitude = 1.0f) {
    for (std::uint32_t l = 0; l < geom.n_layers; ++l) {
      auto k = uniform(rng, static_cast<std::size_t>(n) * geom.n_kv_heads * geom.head_dim_k, amplitude);
      auto v = uniform(rng, static_cast<std::size_t>(n) * geom.n_kv_heads * geom.head_dim_v, amplitude);
      write(l, slot, n, k, v);
    }
  }

  void write(std::uint32_t l, std::uint32_t slot, std::uint32_t n, const std::vector<float>& k,
             const std::vector<float>& v) {
    Status st = store->write(l, slot, n, kview(k, n), vview(v, n));
    ASSERT_TRUE(st.ok()) << st.message();
    record(layers[l].k, slot, k, static_cast<std::size_t>(geom.n_kv_heads) * geom.head_dim_k);
    record(layers[l].v, slot, v, static_cast<std::size_t>(geom.n_kv_heads) * geom.head_dim_v);
  }

  TensorView kview(const std::vector<float>& k, std::uint32_t n) const {
    return f32_view(const_cast<float*>(k.data()), geom.head_dim_k, geom.n_kv_heads, n);
  }
  TensorView vview(const std::vector<float>& v, std::uint32_t n) const {
    return f32_view(const_cast<float*>(v.data()), geom.head_dim_v, geom.n_kv_heads, n);
  }

  // Runs attend and returns out [head_dim_v, n_heads, n_query].
  std::vector<float> attend(std::uint32_t layer, const std::vector<float>& q, std::uint32_t n_heads,
                            const AttentionBatch& b) {
    std::vector<float> out(static_cast<std::size_t>(geom.head_dim_v) * n_heads * b.n_query, NAN);
    Status st = store->attend(layer, f32_view(const_cast<float*>(q.data()), geom.head_dim_k, n_heads, b.n_query), b,
                              f32_view(out.data(), geom.head_dim_v, n_heads, b.n_query));
    EXPECT_TRUE(st.ok()) << st.message();
    return out;
  }

  KvGeometry geom;
  std::mt19937 rng;
  std::shared_ptr<Backend> backend;
  std::shared_ptr<KvStoreFactory> factory;
  std::shared_ptr<KvStore> store;
  std::vector<RefLayer> layers;

 private:
  static void record(std::vector<float>& dst, std::uint32_t slot, const std::vector<float>& src, std::size_t per_slot) {
    dst.resize(std::max(dst.size(), slot * per_slot + src.size()));
    std::copy(src.begin(), src.end(), dst.begin() + static_cast<std::ptrdiff_t>(slot * per_slot));
  }
};

// The SIMD kernel tables of the attention this CPU runs, with their level names.
struct SimdTable {
  const char* name;
  const kv::AttnKernels* k;
};
inline std::vector<SimdTable> simd_tables() {
  std::vector<SimdTable> t;
  if (kv::attn_kernels_avx2() && kv::cpu_supports(kv::AttnSimd::avx2)) {
    t.push_back({"avx2", kv::attn_kernels_avx2()});
    if (kv::attn_kernels_avx2_without_vnni() != kv::attn_kernels_avx2())
      t.push_back({"avx2 without vnni", kv::attn_kernels_avx2_without_vnni()});
  }
  if (kv::attn_kernels_avx512() && kv::cpu_supports(kv::AttnSimd::avx512)) {
    t.push_back({"avx512", kv::attn_kernels_avx512()});
    // where the CPU has VNNI, the table the CPUs without it run differs in its q8_0 scores
    if (kv::attn_kernels_avx512_without_vnni() != kv::attn_kernels_avx512())
      t.push_back({"avx512 without vnni", kv::attn_kernels_avx512_without_vnni()});
  }
  return t;
}

}  // namespace kvtest
