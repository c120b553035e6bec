#include "server/half_closed_reply.hpp"

#include <fmt/format.h>
#include <httplib.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <string>
#include <string_view>

#include "server/client_connection.hpp"

namespace graft::server {

namespace {

// As long as cpp-httplib waits for a socket to take more bytes (its default write timeout).
constexpr int kWriteTimeoutMs = 5000;

// Writes all of `data`, waiting up to the write timeout whenever the socket is full; false once
// the peer is gone (reset, broken pipe) or too slow.
bool send_all(int fd, std::string_view data) {
  while (!data.empty()) {
    pollfd p{fd, POLLOUT, 0};
    if (::poll(&p, 1, kWriteTimeoutMs) <= 0 || (p.revents & (POLLERR | POLLNVAL))) return false;
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) continue;
      return false;
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

// The reason phrase (clients read the code; the phrase is for people reading traces).
const char* reason_of(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 404: return "Not Found";
    case 413: return "Payload Too Large";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    default: return status < 400 ? "OK" : "Error";
  }
}

// Runs a chunked content provider to its end into `fd`, in HTTP/1.1 chunked framing.
bool stream_chunked(int fd, httplib::Response& res) {
  bool ok = true;
  bool done = false;
  httplib::DataSink sink;
  sink.write = [&](const char* data, std::size_t size) {
    if (ok && size > 0)
      ok = send_all(fd, fmt::format("{:x}\r\n", size)) && send_all(fd, std::string_view(data, size)) &&
           send_all(fd, "\r\n");
    return ok;
  };
  sink.is_writable = [&] { return ok; };
  sink.done = [&] {
    if (!done && ok) ok = send_all(fd, "0\r\n\r\n");
    done = true;
  };
  std::size_t offset = 0;  // the providers of the generation routes ignore it
  while (ok && !done)
    if (!res.content_provider_(offset, 0, sink)) ok = false;
  return ok;
}

}  // namespace

bool reply_if_half_closed(const httplib::Request& req, httplib::Response& res) {
  const int fd = request_socket(req);
  if (fd < 0 || peer_state(fd) != PeerState::fin_received) return false;
  const bool stream = res.body.empty() && res.content_provider_ && res.is_chunked_content_provider_;
  if (res.body.empty() && res.content_provider_ && !stream) return false;  // no route answers so
  // No request can follow on this connection: it ends with this answer.
  // (Each header once: httplib's set_header adds a line even when the name is there.)
  res.headers.erase("Keep-Alive");
  res.headers.erase("Connection");
  res.set_header("Connection", "close");
  if (stream) {
    res.headers.erase("Content-Encoding");  // written as is: uncompressed
    res.headers.erase("Transfer-Encoding");
    res.set_header("Transfer-Encoding", "chunked");
  }
  std::string head = fmt::format("HTTP/1.1 {} {}\r\n", res.status, res.reason.empty() ? reason_of(res.status) : res.reason);
  for (const auto& [name, value] : res.headers) head += fmt::format("{}: {}\r\n", name, value);
  head += "\r\n";
  bool ok = send_all(fd, head);
  if (req.method != "HEAD") {
    if (stream) {
      if (ok) ok = stream_chunked(fd, res);
      res.content_provider_success_ = ok;  // what the provider's releaser is told
      res.content_provider_ = nullptr;     // httplib must not run it again
    } else if (ok) {
      ok = send_all(fd, res.body);
    }
  }
  // The end of the answer, and no byte more: httplib's own write of it, which follows, fails.
  ::shutdown(fd, SHUT_WR);
  return true;
}

}  // namespace graft::server
