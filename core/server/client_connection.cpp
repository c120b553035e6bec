#include "server/client_connection.hpp"

#include <dirent.h>
#include <httplib.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cstdlib>

#include "server/generation_job.hpp"

namespace graft::server {

namespace {

// Per httplib thread: the request its handler is answering (set before routing).
thread_local const httplib::Request* t_request = nullptr;

// As cpp-httplib's get_ip_and_port: numeric host, port from the address.
Endpoint endpoint_of(const sockaddr_storage& addr, socklen_t len) {
  int port = -1;
  if (addr.ss_family == AF_INET) port = ntohs(reinterpret_cast<const sockaddr_in&>(addr).sin_port);
  else if (addr.ss_family == AF_INET6) port = ntohs(reinterpret_cast<const sockaddr_in6&>(addr).sin6_port);
  else return {};
  char host[NI_MAXHOST];
  if (::getnameinfo(reinterpret_cast<const sockaddr*>(&addr), len, host, sizeof host, nullptr, 0, NI_NUMERICHOST) != 0)
    return {};
  return {host, port};
}

Endpoint peer_endpoint(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return {};
  return endpoint_of(addr, len);
}

// Calls `fn` with each socket descriptor of the process until it returns false.
template <class Fn>
void for_each_socket(Fn&& fn) {
  DIR* dir = ::opendir("/proc/self/fd");
  if (!dir) return;
  const int own = ::dirfd(dir);
  while (const dirent* e = ::readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(e->d_name, &end, 10);
    struct stat st{};
    if (end == e->d_name || *end || fd == own || ::fstat(static_cast<int>(fd), &st) != 0 || !S_ISSOCK(st.st_mode))
      continue;
    if (!fn(static_cast<int>(fd))) break;
  }
  ::closedir(dir);
}

// Whether `fd` is the connection of `req`: its local and remote address and port (no two open
// sockets share both endpoints).
bool is_socket_of(int fd, const httplib::Request& req) {
  const Endpoint peer = peer_endpoint(fd);
  if (peer.port != req.remote_port || peer.ip != req.remote_addr) return false;
  const Endpoint local = local_endpoint(fd);
  return local.port == req.local_port && local.ip == req.local_addr;
}

// The socket `req` came on, or -1.
int find_socket(const httplib::Request& req) {
  int found = -1;
  for_each_socket([&](int fd) {
    if (!is_socket_of(fd, req)) return true;
    found = fd;
    return false;
  });
  return found;
}

// Calls `fn(fd, peer)` for each client connection of the server listening on `local_port`.
template <class Fn>
void for_each_client(int local_port, Fn&& fn) {
  for_each_socket([&](int fd) {
    const Endpoint peer = peer_endpoint(fd);
    if (peer.port >= 0 && local_endpoint(fd).port == local_port) fn(fd, peer);
    return true;
  });
}

constexpr char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";

}  // namespace

void set_current_request(const httplib::Request& req) { t_request = &req; }

int request_socket(const httplib::Request& req) {
  // A connection thread serves one connection for many keep-alive requests: its socket is looked
  // up among all descriptors once, then only checked.
  thread_local int t_fd = -1;
  if (t_fd >= 0 && is_socket_of(t_fd, req)) return t_fd;
  t_fd = find_socket(req);
  return t_fd;
}

void wait_watching_client(GenerationJob& job) {
  int fd = -2;  // looked up at the first poll: a short request never pays the search
  bool probed = false;
  while (!job.wait_for(kClientPoll)) {
    if (fd == -2) fd = t_request ? request_socket(*t_request) : -1;
    if (fd < 0 || job.cancelled) continue;
    const PeerState state = peer_state(fd);
    if (state == PeerState::gone) {
      job.cancelled = true;  // the worker stops it
    } else if (state == PeerState::fin_received && !probed) {
      probed = true;
      const bool can_probe = t_request && t_request->version == "HTTP/1.1";
      if (!can_probe || ::send(fd, kContinue, sizeof kContinue - 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
        job.cancelled = true;
    }
  }
}

PeerState peer_state(int fd) {
  tcp_info info{};
  socklen_t len = sizeof info;
  if (::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0) return PeerState::open;  // cannot tell
  if (info.tcpi_state == TCP_ESTABLISHED) return PeerState::open;
  if (info.tcpi_state == TCP_CLOSE_WAIT) return PeerState::fin_received;
  return PeerState::gone;
}

void BusyConnections::begin(const httplib::Request& req) {
  std::lock_guard lock(m_);
  // Without a body the request is whole once its headers are.
  const bool body = req.has_header("Transfer-Encoding") ||
                    (req.has_header("Content-Length") && req.get_header_value("Content-Length") != "0");
  busy_[std::this_thread::get_id()] = Busy{Endpoint{req.remote_addr, req.remote_port}, !body};
  if (!body) reading_since_.erase({req.remote_addr, req.remote_port});
}

void BusyConnections::answering() {
  std::lock_guard lock(m_);
  auto it = busy_.find(std::this_thread::get_id());
  if (it == busy_.end()) return;
  it->second.answering = true;
  reading_since_.erase({it->second.client.ip, it->second.client.port});
}

void BusyConnections::end() {
  std::lock_guard lock(m_);
  auto it = busy_.find(std::this_thread::get_id());
  if (it == busy_.end()) return;
  reading_since_[{it->second.client.ip, it->second.client.port}] = Clock::now();
  busy_.erase(it);
}

void BusyConnections::close_idle(int local_port) {
  std::lock_guard lock(m_);
  for_each_client(local_port, [&](int fd, const Endpoint& peer) {
    for (const auto& [thread, busy] : busy_)
      if (busy.client.port == peer.port && busy.client.ip == peer.ip) return;  // answering a request
    ::shutdown(fd, SHUT_RDWR);
  });
}

std::size_t BusyConnections::close_slow(int local_port, Clock::duration deadline) {
  std::lock_guard lock(m_);
  const Clock::time_point now = Clock::now();
  std::map<std::pair<std::string, int>, Clock::time_point> still_reading;  // the connections that remain
  std::size_t closed = 0;
  for_each_client(local_port, [&](int fd, const Endpoint& peer) {
    for (const auto& [thread, busy] : busy_)
      if (busy.answering && busy.client.port == peer.port && busy.client.ip == peer.ip) return;
    const std::pair<std::string, int> key{peer.ip, peer.port};
    const auto known = reading_since_.find(key);
    const Clock::time_point since = known == reading_since_.end() ? now : known->second;
    if (now - since > deadline) {
      ::shutdown(fd, SHUT_RDWR);  // its thread reads the end of the connection and closes it
      ++closed;
    } else {
      still_reading.emplace(key, since);
    }
  });
  reading_since_ = std::move(still_reading);  // closed connections are forgotten
  return closed;
}

Endpoint local_endpoint(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return {};
  return endpoint_of(addr, len);
}

}  // namespace graft::server
