// A fixed pool of worker threads for data-parallel kernels. The calling thread takes a share of
// every parallel_for, so a pool of n threads has n - 1 workers.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
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
  // Runs fn over contiguous ranges covering [0, n) on the pool's threads and waits for all of
  // them. Each thread owns an equal contiguous share and walks it front to back (one stream, as
  // the hardware prefetchers like); for larger n it does so in pieces, and a thread done with its
  // own share takes pieces from the back of the others', so a thread that started late or runs on
  // a busier core does not hold the rest up. Re-entrant: a nested or concurrent call runs
  // fn(0, n) on its calling thread.
  void parallel_for(std::size_t n, const std::function<void(std::size_t, std::size_t)>& fn);

 private:
  void worker(unsigned index);
  // Runs thread `index`'s share of the current job, then what it can take from the others'.
  void run_share(const std::function<void(std::size_t, std::size_t)>& fn, std::size_t n, std::size_t chunk,
                 unsigned index);

  unsigned n_threads_;
  std::vector<std::thread> workers_;
  std::atomic<bool> busy_{false};  // a parallel_for owns the workers
  std::mutex mu_;
  std::condition_variable wake_, done_;
  const std::function<void(std::size_t, std::size_t)>* job_ = nullptr;
  std::size_t job_n_ = 0;
  std::size_t job_chunk_ = 0;  // piece size of a job split in pieces; 0: one range per thread
  // Per thread, the unclaimed part [front, back) of its share, as front | back << 32: the owner
  // advances front, others lower back, each by compare-and-swap.
  struct alignas(64) Share {
    std::atomic<std::uint64_t> range{0};
  };
  std::unique_ptr<Share[]> shares_;
  // Atomics so workers and the caller can spin briefly before sleeping: decode issues a few
  // hundred parallel_for calls per token, and a condition-variable round trip each (~12 us)
  // costs more than a small matrix-vector product. While both sides spin, a call takes no lock:
  // the mutex and condition variables are touched only where the other side may be asleep.
  std::atomic<std::uint64_t> generation_{0};  // job fields are written before its increment
  std::atomic<unsigned> pending_{0};
  std::atomic<bool> stop_{false};
  unsigned sleepers_ = 0;                  // workers waiting on wake_ (under mu_)
  std::atomic<bool> caller_waiting_{false};  // the caller waits (or is about to) on done_
};

}  // namespace graft::cpu
