// What the routes share: the pipeline, the options, the queue and the metrics.
#pragma once

#include <atomic>
#include <ctime>
#include <memory>
#include <string>

#include "engine/pipeline.hpp"
#include "server/generation_queue.hpp"
#include "server/server_metrics.hpp"
#include "server/server_options.hpp"

namespace httplib {
struct Request;
struct Response;
}  // namespace httplib

namespace graft::server {

struct ServerContext {
  ServerContext(Pipeline& p, const ServerOptions& o) : pipeline(p), options(o) {}
  Pipeline& pipeline;
  ServerOptions options;
  std::string model_name;   // the id /v1/models lists (the model file's name without .gguf)
  std::time_t created = 0;  // when the server started (the model entry's `created`)
  ServerMetrics metrics;
  std::unique_ptr<GenerationQueue> queue;
  std::atomic<std::uint64_t> next_id{1};

  std::string new_id(const char* prefix) { return prefix + std::to_string(next_id++); }
};

// Sends `error` as the OpenAI-style JSON body with its status.
void send_error(httplib::Response& res, const struct ApiError& error);

// POST /v1/completions (completions_route.cpp).
void handle_completions(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);

}  // namespace graft::server
