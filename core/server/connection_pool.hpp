// The threads that serve connections. cpp-httplib 0.11 (Debian's build) keeps a fixed pool of
// max(8, cores - 1) threads, each holding its connection until the connection ends; eight clients
// that send a byte a second (or idle between keep-alive requests) held all of them, and every
// other request, /health included, waited. This pool keeps eight threads warm as cpp-httplib's
// does and starts another whenever a connection finds none idle, up to a bound (past it,
// connections wait their turn, as before); a thread past the warm ones that idles for a second
// ends. A slow client holds its own thread, never the others'.
#pragma once

#include <httplib.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace graft::server {

class ConnectionPool : public httplib::TaskQueue {
 public:
  static constexpr std::size_t kWarmThreads = 8;
  static constexpr std::chrono::seconds kRetireAfter{1};

  explicit ConnectionPool(std::size_t max_threads);
  ~ConnectionPool() override;

  void enqueue(std::function<void()> fn) override;
  void shutdown() override;

 private:
  void work();
  void start_thread();  // under m_
  void join_retired();  // not under m_

  const std::size_t max_threads_;
  std::mutex m_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  std::vector<std::thread> threads_;
  std::vector<std::thread> retired_;  // ended, to be joined
  std::size_t idle_ = 0;              // threads waiting for a connection
  bool stop_ = false;
};

}  // namespace graft::server
