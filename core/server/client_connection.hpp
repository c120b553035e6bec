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
// request this thread is answering has gone (closed or reset its connection) and then cancels the
// job: the worker stops it at its next token, or drops it before it starts.
void wait_watching_client(GenerationJob& job);

// Whether the peer of connected TCP socket `fd` has closed or reset the connection: the socket has
// left ESTABLISHED (CLOSE_WAIT after the client's FIN, CLOSE after a reset). A local shutdown for
// reading (stop_reading_connections) leaves it ESTABLISHED.
bool client_gone(int fd);

// A socket's own address, as cpp-httplib writes addresses (numeric host); port -1 when unknown.
struct Endpoint {
  std::string ip;
  int port = -1;
};
Endpoint local_endpoint(int fd);

// The requests being answered, by connection thread (from the pre-routing handler to the log
// line), so that stop() can close the connections that only idle between keep-alive requests:
// cpp-httplib 0.11 waits out their 5 s keep-alive timeout before it returns otherwise.
class BusyConnections {
 public:
  void begin(const httplib::Request& req);
  void end();
  // Shuts down (both ways) every connection to `local_port` that answers no request now: its
  // thread, waiting for a next request, sees the end of the connection at once.
  void close_idle(int local_port);

 private:
  std::mutex m_;
  std::map<std::thread::id, Endpoint> busy_;  // a thread's current request's client
};

}  // namespace graft::server
