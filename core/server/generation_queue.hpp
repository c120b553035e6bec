// The requests waiting for the model, and the worker thread that runs them one after the other on
// one sequence (a Session, with the profile's drafters when it speculates). Jobs whose client has
// gone are dropped before they start and stop at their next token once started.
#pragma once

#include <deque>
#include <memory>
#include <mutex>
#include <thread>

#include "engine/pipeline.hpp"
#include "server/generation_job.hpp"
#include "server/server_metrics.hpp"
#include "speculative/speculative_decoder.hpp"

namespace graft::server {

// What a job gets when the server stops before it ran (HTTP 503).
Status shutting_down();

class GenerationQueue {
 public:
  GenerationQueue(Pipeline& pipeline, std::unique_ptr<Session> session, std::unique_ptr<SpeculativeDecoder> decoder,
                  ServerMetrics& metrics);
  ~GenerationQueue();  // stops: cancels waiting jobs, finishes the running one, joins the worker

  void submit(std::shared_ptr<GenerationJob> job);
  std::size_t depth() const;  // waiting, not counting the running job
  bool running() const;
  std::uint32_t capacity() const { return session_->capacity(); }

 private:
  void run();
  void run_one(GenerationJob& job);

  Pipeline& pipeline_;
  std::unique_ptr<Session> session_;
  std::unique_ptr<SpeculativeDecoder> decoder_;
  ServerMetrics& metrics_;
  mutable std::mutex m_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<GenerationJob>> waiting_;
  std::shared_ptr<GenerationJob> running_;
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace graft::server
