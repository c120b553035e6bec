#include "server/connection_pool.hpp"

#include <algorithm>

namespace graft::server {

ConnectionPool::ConnectionPool(std::size_t max_threads)
    : max_threads_(std::max(kWarmThreads, max_threads)) {
  std::lock_guard lock(m_);
  while (threads_.size() < kWarmThreads) start_thread();
}

ConnectionPool::~ConnectionPool() { shutdown(); }

void ConnectionPool::start_thread() { threads_.emplace_back([this] { work(); }); }

void ConnectionPool::join_retired() {
  std::vector<std::thread> done;
  {
    std::lock_guard lock(m_);
    done.swap(retired_);
  }
  for (std::thread& t : done) t.join();
}

void ConnectionPool::enqueue(std::function<void()> fn) {
  join_retired();
  {
    std::unique_lock lock(m_);
    if (stop_) {  // a connection accepted as the server stops: served here, no thread left to join
      lock.unlock();
      fn();
      return;
    }
    jobs_.push_back(std::move(fn));
    // A job waits for a thread only when every thread the bound allows is busy.
    if (idle_ < jobs_.size() && threads_.size() < max_threads_) start_thread();
  }
  cv_.notify_one();
}

void ConnectionPool::shutdown() {
  std::vector<std::thread> threads;
  {
    std::lock_guard lock(m_);
    stop_ = true;
    threads.swap(threads_);
  }
  cv_.notify_all();
  for (std::thread& t : threads) t.join();
  join_retired();
}

void ConnectionPool::work() {
  std::unique_lock lock(m_);
  for (;;) {
    ++idle_;
    cv_.wait_for(lock, kRetireAfter, [&] { return stop_ || !jobs_.empty(); });
    --idle_;
    if (!jobs_.empty()) {
      std::function<void()> fn = std::move(jobs_.front());
      jobs_.pop_front();
      lock.unlock();
      fn();
      lock.lock();
      continue;
    }
    if (stop_) return;
    if (threads_.size() > kWarmThreads) {  // idle past the warm ones: this thread ends
      const auto self = std::find_if(threads_.begin(), threads_.end(),
                                     [](const std::thread& t) { return t.get_id() == std::this_thread::get_id(); });
      retired_.push_back(std::move(*self));
      threads_.erase(self);
      return;
    }
  }
}

}  // namespace graft::server
