// What graft serve's tests share (server_test.cpp, server_robustness_test.cpp): the zoo pipeline, a
// server on a free loopback port over it, posting JSON, plain greedy generation to compare with,
// reading /metrics and the process's thread count.
#pragma once

#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "engine/pipeline.hpp"
#include "server/http_server.hpp"
#include "tokenizer/tokenizer.hpp"

namespace graft::server_test {

inline const std::filesystem::path kTarget = std::filesystem::path(GRAFT_SOURCE_DIR) / "models" / "zoo-qwen3-4x256.gguf";
inline constexpr std::uint32_t kContext = 256;

// The zoo target (or `model`), with `edit` applied to the profile (drafters, ...).
inline std::unique_ptr<Pipeline> zoo_pipeline(const std::function<void(Profile&)>& edit = {},
                                              const std::filesystem::path& model = kTarget) {
  Profile profile = Profile::builtin();
  profile.model = model;
  profile.context = kContext;
  profile.threads = 1;  // ctest runs two tests at once on two cores
  if (edit) edit(profile);
  auto p = Pipeline::build(profile, 256);
  EXPECT_TRUE(p) << p.status().message();
  return p ? std::move(*p) : nullptr;
}

// A server on a free loopback port for one test, over `p` (default: the zoo pipeline).
struct Running {
  std::unique_ptr<Pipeline> pipeline;
  std::unique_ptr<server::HttpServer> server;
  std::thread thread;
  int port = 0;
  explicit Running(server::ServerOptions o = {}, std::unique_ptr<Pipeline> p = nullptr) {
    pipeline = p ? std::move(p) : zoo_pipeline();
    if (!pipeline) return;
    o.port = 0;
    auto s = server::HttpServer::create(*pipeline, o);
    EXPECT_TRUE(s) << s.status().message();
    if (!s) return;
    server = std::move(*s);
    auto bound = server->bind();
    EXPECT_TRUE(bound) << bound.status().message();
    if (!bound) return;
    port = *bound;
    thread = std::thread([this] { server->serve(); });
  }
  ~Running() {
    if (thread.joinable()) {
      server->stop();
      thread.join();
    }
  }
  httplib::Client client() const {
    httplib::Client c("127.0.0.1", port);
    c.set_read_timeout(60, 0);
    return c;
  }
};

inline nlohmann::json post(httplib::Client& c, const std::string& path, const nlohmann::json& body, int want_status) {
  auto r = c.Post(path.c_str(), body.dump(), "application/json");
  EXPECT_TRUE(r) << path << ": no response";
  if (!r) return {};
  EXPECT_EQ(r->status, want_status) << r->body;
  return nlohmann::json::parse(r->body, nullptr, false);
}

// The continuation plain generation (Session::generate, one token per pass) gives for `prompt`
// with these settings: with the vocabulary's BOS as /v1/completions tokenizes, or (add_bos false)
// as the chat route tokenizes a rendered template.
inline std::string plain_generation(const Pipeline& p, const std::string& prompt, std::int64_t n,
                                    const SamplingSettings& sampling, bool add_bos = true) {
  TokenizeOptions opt;
  opt.add_special = add_bos;
  opt.parse_special = true;
  auto ids = p.tokenizer().encode(prompt, opt);
  EXPECT_TRUE(ids);
  auto s = p.new_session();
  EXPECT_TRUE(s);
  GenerationOptions g;
  g.max_tokens = n;
  g.sampling = sampling;
  GenerationStats stats;
  EXPECT_TRUE((*s)->generate(*ids, g, [](TokenId, std::string_view) { return true; }, stats).ok());
  return (*s)->text();
}

// The greedy continuation. repeat_penalty != 1: greedy over penalised logits, which the host
// samples from the whole row (Sampler::plain_argmax is false); 1: the backend's greedy ids.
inline std::string plain_greedy(const Pipeline& p, const std::string& prompt, std::int64_t n, bool add_bos = true,
                                double repeat_penalty = 1.0) {
  SamplingSettings sampling;
  sampling.temperature = 0;
  sampling.repeat_penalty = repeat_penalty;
  return plain_generation(p, prompt, n, sampling, add_bos);
}

// A gauge's or counter's value in /metrics' text (-1, and a failure, when it is not there).
inline long metric_value(const std::string& metrics, const std::string& name) {
  const auto at = metrics.find("\n" + name + " ");
  EXPECT_NE(at, std::string::npos) << name;
  return at == std::string::npos ? -1 : std::stol(metrics.substr(at + name.size() + 2));
}

// The process's threads now (/proc/self/status): the server runs in the test's process.
inline int thread_count() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("Threads:", 0) == 0) return std::stoi(line.substr(8));
  return -1;
}

// Waits (at most `limit`) until the process runs at most `want` threads: the server's connection
// threads past its warm ones end after idling a second (server/connection_pool.hpp). Returns the
// last count.
inline int wait_for_threads(int want, std::chrono::milliseconds limit = std::chrono::seconds(5)) {
  const auto start = std::chrono::steady_clock::now();
  int n = thread_count();
  while (n > want && std::chrono::steady_clock::now() - start < limit) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    n = thread_count();
  }
  return n;
}

}  // namespace graft::server_test
