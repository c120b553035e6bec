// A fixed pool of worker threads for data-parallel kernels. The calling thread takes a share of
// every parallel_for, so a pool of n threads has n - 1 workers.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace graft::cpu {

class ThreadPool {
 public:
  explicit ThreadPool(unsigned n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  unsigned size() const noexcept { return n_threads_; }
  // Splits [0, n) into one contiguous range per thread and waits for all of them. Re-entrant:
  // a nested or concurrent call runs fn(0, n) on its calling thread.
  void parallel_for(std::size_t n, const std::function<void(std::size_t, std::size_t)>& fn);

 private:
  void worker(unsigned index);

  unsigned n_threads_;
  std::vector<std::thread> workers_;
  std::atomic<bool> busy_{false};  // a parallel_for owns the workers
  std::mutex mu_;
  std::condition_variable wake_, done_;
  const std::function<void(std::size_t, std::size_t)>* job_ = nullptr;
  std::size_t job_n_ = 0;
  // Atomics so workers and the caller can spin briefly before sleeping: decode issues a few
  // hundred parallel_for calls per token, and a condition-variable round trip each (~12 us)
  // costs more than a small matrix-vector product.
  std::atomic<std::uint64_t> generation_{0};
  std::atomic<unsigned> pending_{0};
  bool stop_ = false;
};

}  // namespace graft::cpu
