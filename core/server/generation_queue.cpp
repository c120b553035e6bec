#include "server/generation_queue.hpp"

namespace graft::server {

Status shutting_down() { return Status(Errc::unsupported, "the server is shutting down"); }

GenerationQueue::GenerationQueue(Pipeline& pipeline, std::unique_ptr<Session> session,
                                 std::unique_ptr<SpeculativeDecoder> decoder, ServerMetrics& metrics)
    : pipeline_(pipeline), session_(std::move(session)), decoder_(std::move(decoder)), metrics_(metrics) {
  metrics_.kv(0, session_->capacity());
  worker_ = std::thread([this] { run(); });
}

GenerationQueue::~GenerationQueue() {
  {
    std::lock_guard lock(m_);
    stopping_ = true;
    for (auto& job : waiting_) job->finish(shutting_down(), {}, 0);
    waiting_.clear();
    if (running_) running_->cancelled = true;
  }
  cv_.notify_all();
  worker_.join();
}

void GenerationQueue::submit(std::shared_ptr<GenerationJob> job) {
  {
    std::lock_guard lock(m_);
    if (stopping_) {
      job->finish(shutting_down(), {}, 0);
      return;
    }
    waiting_.push_back(std::move(job));
  }
  cv_.notify_one();
}

std::size_t GenerationQueue::depth() const {
  std::lock_guard lock(m_);
  return waiting_.size();
}

bool GenerationQueue::running() const {
  std::lock_guard lock(m_);
  return running_ != nullptr;
}

void GenerationQueue::run() {
  for (;;) {
    std::shared_ptr<GenerationJob> job;
    {
      std::unique_lock lock(m_);
      cv_.wait(lock, [&] { return stopping_ || !waiting_.empty(); });
      if (stopping_) return;
      job = std::move(waiting_.front());
      waiting_.pop_front();
      running_ = job;
    }
    // A job whose client went away before it started finishes at once (nobody reads its result).
    if (job->cancelled) job->finish(Status::success(), {}, 0);
    else run_one(*job);
    std::lock_guard lock(m_);
    running_.reset();
  }
}

void GenerationQueue::run_one(GenerationJob& job) {
  const SpeculativeStats before = decoder_ ? decoder_->stats() : SpeculativeStats{};
  GenerationStats stats;
  Status st = session_->generate(
      job.prompt, job.options,
      [&](TokenId, std::string_view text) {
        job.push(text, true);
        return !job.cancelled.load();
      },
      stats, decoder_.get());
  // The text held back for stop strings comes out at the end.
  job.push(session_->tail(), false);
  double tpr = 0;
  if (decoder_) {
    const SpeculativeStats& after = decoder_->stats();
    const std::uint64_t rounds = after.rounds - before.rounds;
    if (rounds) tpr = double(after.emitted - before.emitted) / double(rounds);
    metrics_.speculative(after);
  }
  if (st.ok()) metrics_.generation(stats);
  metrics_.kv(static_cast<std::uint32_t>(session_->tokens().size()), session_->capacity());
  job.finish(std::move(st), stats, tpr);
}

}  // namespace graft::server
