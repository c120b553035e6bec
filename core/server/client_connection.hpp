// The server's view of its clients' TCP connections, which cpp-httplib 0.11 (Debian's build)
// does not give: a handler gets no socket and no way to see that its client has gone. The
// request's socket is found among the process's descriptors (/proc/self/fd) by its local and
// remote address and port.
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

namespace httplib {
struct Request;
}

namespace graft::server {

struct GenerationJob;

// How often a whole-answer request looks whether its client has gone.
inline constexpr std::chrono::milliseconds kClientPoll{50};

// Called by the pre-routing handler: the request the handler on this thread is answering
// (handlers run on the thread that read the request, which owns its connection until they return).
void set_current_request(const httplib::Request& req);

// Waits for `job` to finish; while it runs, looks every kClientPoll whether the client of the
// request this thread is answering has gone and then cancels the job: the worker stops it at its
// next token, or drops it before it starts. A client whose FIN came (it closed, or only
// half-closed and still reads) is sent one "100 Continue" (HTTP/1.1 allows a client to receive
// 1xx it did not ask for): a closed socket answers it with a reset, and the next look cancels; a
// half-closed client keeps its answer (half_closed_reply.hpp writes it). HTTP/1.0 has no 1xx: its
// FIN is taken as gone.
void wait_watching_client(GenerationJob& job);

// What the peer of a connected TCP socket has done: nothing (open), sent its FIN (closed or
// half-closed: the two look the same until something is written to it), or reset/closed it for
// good (gone). A local shutdown for reading (stop_reading_connections) leaves it open.
enum class PeerState { open, fin_received, gone };
PeerState peer_state(int fd);

// The socket `req` came on, or -1 (found among the process's descriptors once per connection and
// thread, then remembered). It stays open while the request is answered: httplib closes a
// connection on the thread that serves it, after the answer was written.
int request_socket(const httplib::Request& req);

// A socket's own address, as cpp-httplib writes addresses (numeric host); port -1 when unknown.
struct Endpoint {
  std::string ip;
  int port = -1;
};
Endpoint local_endpoint(int fd);

// The requests being answered, by connection thread (from the pre-routing handler to the log
// line), so that stop() can close the connections that only idle between keep-alive requests
// (cpp-httplib 0.11 waits out their 5 s keep-alive timeout before it returns otherwise), and the
// read deadline can close those that take too long to send a request.
class BusyConnections {
 public:
  using Clock = std::chrono::steady_clock;

  // The pre-routing handler: `req`'s headers are read; its body, if any, is read next.
  void begin(const httplib::Request& req);
  // A route's handler: the whole request is read, the connection is being answered.
  void answering();
  // The log line: the answer is written; the connection reads its next request.
  void end();
  // Shuts down (both ways) every connection to `local_port` that answers no request now: its
  // thread, waiting for a next request, sees the end of the connection at once.
  void close_idle(int local_port);
  // Shuts down (both ways) every connection to `local_port` that has been sending one request (its
  // headers and body), or has been waiting for a thread, for longer than `deadline`: a client that
  // trickles a request a byte at a time holds its thread that long at most. Returns how many.
  std::size_t close_slow(int local_port, Clock::duration deadline);

 private:
  struct Busy {
    Endpoint client;
    bool answering = false;
  };
  std::mutex m_;
  std::map<std::thread::id, Busy> busy_;  // a thread's current request
  // Connections reading a request: since when (the end of their previous answer, else since the
  // deadline's sweep first saw them).
  std::map<std::pair<std::string, int>, Clock::time_point> reading_since_;
};

}  // namespace graft::server
