#include "thread_pool.hpp"

#include <algorithm>

namespace graft::cpu {

namespace {

// About 20-50 us of polling before a thread sleeps: long enough to catch the next call of a
// forward pass, short enough not to steal a shared core for long.
constexpr int kSpinIterations = 4000;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

std::pair<std::size_t, std::size_t> share(std::size_t n, unsigned parts, unsigned i) {
  const std::size_t chunk = (n + parts - 1) / parts;
  const std::size_t begin = std::min(n, chunk * i);
  return {begin, std::min(n, begin + chunk)};
}
}  // namespace

ThreadPool::ThreadPool(unsigned n_threads) : n_threads_(std::max(1u, n_threads)) {
  for (unsigned i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { worker(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::parallel_for(std::size_t n, const std::function<void(std::size_t, std::size_t)>& fn) {
  if (n == 0) return;
  // A parallel_for from inside another one (a kernel calling an op) or from a second host thread
  // runs on its caller: the workers belong to the call in flight, and waiting for them from one
  // of them would deadlock. Results do not depend on the split, so this changes only speed.
  bool idle = false;
  if (n_threads_ == 1 || n == 1 || !busy_.compare_exchange_strong(idle, true, std::memory_order_acquire)) {
    fn(0, n);
    return;
  }
  struct Release {
    std::atomic<bool>& busy;
    ~Release() { busy.store(false, std::memory_order_release); }
  } release{busy_};
  {
    std::lock_guard lock(mu_);
    job_ = &fn;
    job_n_ = n;
    pending_.store(n_threads_ - 1, std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  auto [b, e] = share(n, n_threads_, 0);
  if (b < e) fn(b, e);
  for (int i = 0; i < kSpinIterations && pending_.load(std::memory_order_acquire) != 0; ++i) cpu_relax();
  if (pending_.load(std::memory_order_acquire) != 0) {
    std::unique_lock lock(mu_);
    done_.wait(lock, [this] { return pending_.load(std::memory_order_acquire) == 0; });
  }
}

void ThreadPool::worker(unsigned index) {
  std::uint64_t seen = 0;
  for (;;) {
    const std::function<void(std::size_t, std::size_t)>* job;
    std::size_t n;
    for (int i = 0; i < kSpinIterations && generation_.load(std::memory_order_acquire) == seen; ++i) cpu_relax();
    {
      std::unique_lock lock(mu_);
      wake_.wait(lock, [&] { return stop_ || generation_.load(std::memory_order_acquire) != seen; });
      if (stop_) return;
      seen = generation_.load(std::memory_order_acquire);
      job = job_;
      n = job_n_;
    }
    auto [b, e] = share(n, n_threads_, index);
    if (b < e) (*job)(b, e);
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard lock(mu_);  // pairs with the caller's predicate check: no lost wake-up
      done_.notify_one();
    }
  }
}

}  // namespace graft::cpu
