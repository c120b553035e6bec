// The zoo target with drafters, for the speculative tests: the bench/spec prompts, a pipeline per
// SIMD level and KV type, and generation with or without a decoder.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "engine/pipeline.hpp"
#include "plugin_host/plugin_library.hpp"
#include "speculative/drafters.hpp"
#include "test_util.hpp"

namespace zoo {

using namespace graft;
namespace fs = std::filesystem;

inline const fs::path kRoot = fs::path(GRAFT_SOURCE_DIR);
inline const fs::path kTarget = kRoot / "models" / "zoo-qwen3-4x256.gguf";
inline const fs::path kPrompts = kRoot / "bench" / "spec" / "prompts";

// Every bench/spec prompt, as `graft run -f` reads it (one trailing newline dropped).
inline std::vector<std::pair<std::string, std::string>> corpus() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& dir : fs::directory_iterator(kPrompts))
    for (const auto& f : fs::directory_iterator(dir.path())) {
      std::ifstream in(f.path());
      std::ostringstream ss;
      ss << in.rdbuf();
      std::string text = ss.str();
      if (!text.empty() && text.back() == '\n') text.pop_back();
      out.emplace_back(dir.path().filename().string() + "/" + f.path().filename().string(), text);
    }
  std::sort(out.begin(), out.end());
  return out;
}

// A pipeline over the zoo target with GRAFT_CPU_SIMD = level (the variable is read as the
// plugins create their objects, then restored). Null with *skip set when this CPU lacks the level.
// kv_type: the device store's type, or "K/V" (q8_0/q4_0): the quant store with those types.
inline std::unique_ptr<Pipeline> pipeline(const std::string& level, const std::string& kv_type, std::string* skip,
                                          std::uint32_t context = 512, std::uint32_t batch = 256) {
  Profile profile = Profile::builtin();
  profile.model = kTarget;
  profile.context = context;
  // One thread: ctest runs two tests at once on two cores, and a thread pool sharing its cores
  // with another process slows down tenfold. Results do not depend on the thread count.
  profile.threads = 1;
  if (const auto slash = kv_type.find('/'); slash != std::string::npos) {
    profile.kv = PluginChoice{"quant", {}, "test", {}};
    profile.kv.config.set("type_k", kv_type.substr(0, slash));
    profile.kv.config.set("type_v", kv_type.substr(slash + 1));
  } else {
    profile.kv.config.set("type", kv_type);
  }
  const char* old = getenv("GRAFT_CPU_SIMD");
  const std::string saved = old ? old : "";
  if (level.empty()) unsetenv("GRAFT_CPU_SIMD");
  else setenv("GRAFT_CPU_SIMD", level.c_str(), 1);
  auto p = Pipeline::build(profile, batch);
  if (old) setenv("GRAFT_CPU_SIMD", saved.c_str(), 1);
  else unsetenv("GRAFT_CPU_SIMD");
  if (!p) {
    if (skip && p.status().message().find("this CPU lacks") != std::string::npos) *skip = p.status().message();
    else ADD_FAILURE() << p.status().message();
    return nullptr;
  }
  return std::move(*p);
}

inline std::vector<TokenId> tokenize(const Pipeline& p, const std::string& text) {
  TokenizeOptions opt;
  opt.add_special = true;
  opt.parse_special = true;
  auto ids = p.tokenizer().encode(text, opt);
  EXPECT_TRUE(ids) << ids.status().message();
  return ids ? *ids : std::vector<TokenId>{};
}

inline PluginChoice drafter(const std::string& name, Config config = {}) {
  return PluginChoice{name, std::move(config), "test", {}};
}

// Drafters over p: the named plugins with the given budget. adaptive = false verifies every
// proposal (the most rounds of partial acceptance); true is what users run (choices by timing).
inline std::unique_ptr<Drafters> drafters(const Pipeline& p, std::vector<PluginChoice> list, std::int64_t max_nodes = 16,
                                          std::int64_t max_depth = 8, bool adaptive = true) {
  SpeculativeSettings spec;
  spec.enabled = true;
  spec.max_nodes = max_nodes;
  spec.max_depth = max_depth;
  spec.adaptive = adaptive;
  auto d = Drafters::load(p, std::move(list), spec);
  EXPECT_TRUE(d) << d.status().message();
  return d ? std::move(*d) : nullptr;
}

struct Generated {
  std::vector<TokenId> ids;
  GenerationStats stats;
  std::vector<TokenId> session_tokens;
  std::vector<float> logits;
};

// generate() on a new session; with `decoder` when given.
inline Generated generate(const Pipeline& p, const std::vector<TokenId>& prompt, const SamplingSettings& sampling,
                          std::int64_t n, TokenDecoder* decoder, std::unique_ptr<Session>* keep = nullptr) {
  Generated g;
  auto s = p.new_session();
  EXPECT_TRUE(s) << s.status().message();
  if (!s) return g;
  GenerationOptions opt;
  opt.max_tokens = n;
  opt.sampling = sampling;
  Status st = (*s)->generate(prompt, opt, [&](TokenId id, std::string_view) { g.ids.push_back(id); return true; },
                             g.stats, decoder);
  EXPECT_TRUE(st.ok()) << st.message();
  g.session_tokens.assign((*s)->tokens().begin(), (*s)->tokens().end());
  g.logits = (*s)->logits();
  if (keep) *keep = std::move(*s);
  return g;
}

inline SamplingSettings greedy() {
  SamplingSettings s;
  s.temperature = 0;
  return s;
}

}  // namespace zoo
