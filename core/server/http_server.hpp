// graft's HTTP server on cpp-httplib: the routes of docs/serve.md over one GenerationQueue. The
// routes' handlers run on httplib's threads and wait on their job; the model runs on the queue's
// worker alone.
#pragma once

#include <memory>
#include <string>

#include "engine/pipeline.hpp"
#include "server/server_options.hpp"

namespace graft::server {

class HttpServer {
 public:
  // Makes the sequence (and its drafters) the profile asks for; errors are one line.
  static Expected<std::unique_ptr<HttpServer>> create(Pipeline& pipeline, const ServerOptions& options);
  ~HttpServer();

  // Binds host:port (port 0: any free port); returns the port, or an error naming the address.
  Expected<int> bind();
  // Serves until stop() (from another thread or a signal handler's thread).
  void serve();
  void stop();

 private:
  struct Impl;
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace graft::server
