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

// The socket `req` came on (its local and remote address and port), or -1. It stays open while the
// request's handler runs: httplib closes a connection on the thread that serves it, after the
// handler returned.
int connection_socket(const httplib::Request& req) {
  int found = -1;
  for_each_socket([&](int fd) {
    const Endpoint peer = peer_endpoint(fd);
    if (peer.port != req.remote_port || peer.ip != req.remote_addr) return true;
    const Endpoint local = local_endpoint(fd);
    if (local.port != req.local_port || local.ip != req.local_addr) return true;
    found = fd;
    return false;
  });
  return found;
}

}  // namespace

void set_current_request(const httplib::Request& req) { t_request = &req; }

void wait_watching_client(GenerationJob& job) {
  int fd = -2;  // looked up at the first poll: a short request never pays the search
  while (!job.wait_for(kClientPoll)) {
    if (fd == -2) fd = t_request ? connection_socket(*t_request) : -1;
    if (fd >= 0 && !job.cancelled && client_gone(fd)) job.cancelled = true;  // the worker stops it
  }
}

bool client_gone(int fd) {
  tcp_info info{};
  socklen_t len = sizeof info;
  if (::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0) return false;  // cannot tell
  return info.tcpi_state != TCP_ESTABLISHED;
}

void BusyConnections::begin(const httplib::Request& req) {
  std::lock_guard lock(m_);
  busy_[std::this_thread::get_id()] = Endpoint{req.remote_addr, req.remote_port};
}

void BusyConnections::end() {
  std::lock_guard lock(m_);
  busy_.erase(std::this_thread::get_id());
}

void BusyConnections::close_idle(int local_port) {
  std::lock_guard lock(m_);
  for_each_socket([&](int fd) {
    const Endpoint peer = peer_endpoint(fd);
    if (peer.port < 0 || local_endpoint(fd).port != local_port) return true;  // not a client of this server
    for (const auto& [thread, client] : busy_)
      if (client.port == peer.port && client.ip == peer.ip) return true;  // answering a request
    ::shutdown(fd, SHUT_RDWR);
    return true;
  });
}

Endpoint local_endpoint(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return {};
  return endpoint_of(addr, len);
}

}  // namespace graft::server
