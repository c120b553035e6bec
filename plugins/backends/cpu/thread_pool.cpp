#include "thread_pool.hpp"

#include <algorithm>

namespace graft::cpu {

namespace {

// About 20-50 us of polling before a thread sleeps: long enough to catch the next call of a
// forward pass, short enough not to steal a shared core for long.
constexpr int kSpinIterations = 4000;
// Pieces per share, and the units per thread from which a job is split in pieces: a piece
// (an eighth of a share, at least one unit) is what a thread that finished early can take over.
// From 2 units per thread: decode attention is one short unit per KV head, and without pieces the
// thread that ran slower held the other up every layer (measured: docs/benchmarks.md, "Thread pool
// pieces").
constexpr std::size_t kPiecesPerShare = 8;
constexpr std::size_t kPiecesFrom = 2;  // units per thread

constexpr std::uint64_t pack(std::size_t front, std::size_t back) { return front | std::uint64_t{back} << 32; }
constexpr std::size_t front_of(std::uint64_t r) { return r & 0xFFFFFFFFu; }
constexpr std::size_t back_of(std::uint64_t r) { return r >> 32; }

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

ThreadPool::ThreadPool(unsigned n_threads)
    : n_threads_(std::max(1u, n_threads)), shares_(std::make_unique<Share[]>(n_threads_)) {
  for (unsigned i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { worker(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mu_);
    stop_.store(true);
    generation_.fetch_add(1, std::memory_order_release);  // spinning workers look at stop_ next
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
  unsigned sleepers;
  {
    // Under the lock so that a worker deciding to sleep either sees this job or is counted.
    std::lock_guard lock(mu_);
    job_ = &fn;
    job_n_ = n;
    job_chunk_ = 0;
    if (n >= kPiecesFrom * n_threads_ && n < (std::size_t{1} << 32)) {
      job_chunk_ = (n + kPiecesPerShare * n_threads_ - 1) / (kPiecesPerShare * n_threads_);
      for (unsigned i = 0; i < n_threads_; ++i) {
        auto [b, e] = share(n, n_threads_, i);
        shares_[i].range.store(pack(b, e), std::memory_order_relaxed);
      }
    }
    pending_.store(n_threads_ - 1, std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_release);
    sleepers = sleepers_;
  }
  if (sleepers > 0) wake_.notify_all();
  run_share(fn, n, job_chunk_, 0);
  for (int i = 0; i < kSpinIterations && pending_.load(std::memory_order_acquire) != 0; ++i) cpu_relax();
  if (pending_.load(std::memory_order_acquire) != 0) {
    std::unique_lock lock(mu_);
    // Sequentially consistent with the last worker's decrement and read of this flag: either it
    // sees the flag and notifies, or this predicate sees pending_ at 0.
    caller_waiting_.store(true);
    done_.wait(lock, [this] { return pending_.load() == 0; });
    caller_waiting_.store(false);
  }
}

void ThreadPool::run_share(const std::function<void(std::size_t, std::size_t)>& fn, std::size_t n, std::size_t chunk,
                           unsigned index) {
  if (chunk == 0) {
    auto [b, e] = share(n, n_threads_, index);
    if (b < e) fn(b, e);
    return;
  }
  // Own share from the front: consecutive pieces continue one stream.
  std::atomic<std::uint64_t>& own = shares_[index].range;
  for (std::uint64_t r = own.load(std::memory_order_relaxed);;) {
    const std::size_t f = front_of(r), e = back_of(r);
    if (f >= e) break;
    const std::size_t to = std::min(e, f + chunk);
    if (own.compare_exchange_weak(r, pack(to, e), std::memory_order_relaxed)) {
      fn(f, to);
      r = own.load(std::memory_order_relaxed);
    }
  }
  // Then the others' from their backs, where their owners get last.
  for (unsigned k = 1; k < n_threads_; ++k) {
    std::atomic<std::uint64_t>& other = shares_[(index + k) % n_threads_].range;
    for (std::uint64_t r = other.load(std::memory_order_relaxed);;) {
      const std::size_t f = front_of(r), e = back_of(r);
      if (f >= e) break;
      const std::size_t from = e - std::min(e - f, chunk);
      if (other.compare_exchange_weak(r, pack(f, from), std::memory_order_relaxed)) {
        fn(from, e);
        r = other.load(std::memory_order_relaxed);
      }
    }
  }
}

void ThreadPool::worker(unsigned index) {
  std::uint64_t seen = 0;
  for (;;) {
    const std::function<void(std::size_t, std::size_t)>* job;
    std::size_t n, chunk;
    for (int i = 0; i < kSpinIterations && generation_.load(std::memory_order_acquire) == seen; ++i) cpu_relax();
    if (generation_.load(std::memory_order_acquire) == seen) {
      std::unique_lock lock(mu_);
      ++sleepers_;
      wake_.wait(lock, [&] { return generation_.load(std::memory_order_acquire) != seen; });
      --sleepers_;
    }
    if (stop_.load()) return;
    // The caller wrote the job before the generation's release increment, and writes the next one
    // only after every worker has counted itself out of this one.
    seen = generation_.load(std::memory_order_acquire);
    job = job_;
    n = job_n_;
    chunk = job_chunk_;
    run_share(*job, n, chunk, index);
    if (pending_.fetch_sub(1) == 1 && caller_waiting_.load()) {
      std::lock_guard lock(mu_);  // the caller is between its predicate check and its sleep, or asleep
      done_.notify_one();
    }
  }
}

}  // namespace graft::cpu
