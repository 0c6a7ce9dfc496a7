// Blocking TCP helpers with deadlines (see socket.h): poll() bounds every wait.
#include "dist/socket.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <thread>

namespace rg::dist::net {
namespace {

sockaddr_in resolve(const std::string& host, int port, const std::string& what) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (host.empty() || host == "0.0.0.0") {
    addr.sin_addr.s_addr = htonl(INADDR_ANY);
    return addr;
  }
  if (inet_pton(AF_INET, host.c_str(), &addr.sin_addr) == 1) return addr;
  addrinfo hints{}, *found = nullptr;
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  int rc = getaddrinfo(host.c_str(), nullptr, &hints, &found);
  RG_CHECK(rc == 0 && found, what, ": cannot resolve host '", host, "': ", gai_strerror(rc));
  addr.sin_addr = reinterpret_cast<sockaddr_in*>(found->ai_addr)->sin_addr;
  freeaddrinfo(found);
  return addr;
}

int remaining_ms(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<Milliseconds>(deadline - Clock::now()).count();
  return left < 0 ? 0 : static_cast<int>(std::min<int64_t>(left, 1 << 30));
}

// Waits until fd is ready for `events`; false on timeout.
bool wait_ready(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    int rc = ::poll(&p, 1, remaining_ms(deadline));
    if (rc > 0) return true;
    if (rc == 0) return false;
    if (errno != EINTR) return true;  // let the I/O call report the error
  }
}

}  // namespace

int listen_tcp(const std::string& host, int port, int backlog, const std::string& what) {
  sockaddr_in addr = resolve(host, port, what);
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  RG_CHECK(fd >= 0, what, ": socket: ", std::strerror(errno));
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::listen(fd, backlog) != 0) {
    int err = errno;
    ::close(fd);
    RG_FAIL(what, ": cannot listen on ", host.empty() ? "*" : host, ":", port, ": ",
            std::strerror(err));
  }
  return fd;
}

int local_port(int fd) {
  sockaddr_in addr{};
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  return ntohs(addr.sin_port);
}

std::string local_address(int fd) {
  sockaddr_in addr{};
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  char text[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &addr.sin_addr, text, sizeof(text));
  return text;
}

std::string peer_address(int fd) {
  sockaddr_in addr{};
  socklen_t len = sizeof(addr);
  getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  char text[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &addr.sin_addr, text, sizeof(text));
  return str(text, ":", ntohs(addr.sin_port));
}

int connect_tcp(const std::string& host, int port, Clock::time_point deadline,
                const std::string& what) {
  sockaddr_in addr = resolve(host, port, what);
  for (;;) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    RG_CHECK(fd >= 0, what, ": socket: ", std::strerror(errno));
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
      set_nodelay(fd);
      return fd;
    }
    int err = errno;
    ::close(fd);
    if (Clock::now() >= deadline)
      RG_FAIL(what, ": could not connect to ", host, ":", port, " before the timeout (",
              std::strerror(err), ")");
    std::this_thread::sleep_for(Milliseconds(20));
  }
}

int accept_tcp(int listen_fd, Clock::time_point deadline) {
  if (!wait_ready(listen_fd, POLLIN, deadline)) return -1;
  int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
  if (fd >= 0) set_nodelay(fd);
  return fd;
}

void write_all(int fd, const void* data, size_t n, Clock::time_point deadline,
               const std::string& what) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    RG_CHECK(wait_ready(fd, POLLOUT, deadline), what, ": timed out sending");
    ssize_t k = ::send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (k < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    RG_CHECK(k > 0, what, ": connection lost (", std::strerror(errno), ")");
    p += k;
    n -= static_cast<size_t>(k);
  }
}

void read_all(int fd, void* data, size_t n, Clock::time_point deadline, const std::string& what) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    RG_CHECK(wait_ready(fd, POLLIN, deadline), what, ": timed out waiting for an answer");
    ssize_t k = ::recv(fd, p, n, MSG_DONTWAIT);
    if (k < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    RG_CHECK(k != 0, what, ": connection closed by the other side");
    RG_CHECK(k > 0, what, ": connection lost (", std::strerror(errno), ")");
    p += k;
    n -= static_cast<size_t>(k);
  }
}

void set_nodelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

std::string host_identity() {
  char name[256] = {};
  gethostname(name, sizeof(name) - 1);
  std::string boot_id;
  std::ifstream("/proc/sys/kernel/random/boot_id") >> boot_id;
  std::string id = std::string(name) + "/" + boot_id;
  // A launcher's node (torchrun and rgrun set GROUP_RANK): two nodes started on one machine
  // talk over tcp, as nodes do, and only the ranks of one node share memory. (No spaces:
  // the rendezvous sends the identity as one word.)
  if (const char* node = std::getenv("GROUP_RANK"); node && *node) {
    id += "/node-";
    for (const char* c = node; *c; ++c)
      id += std::isgraph(static_cast<unsigned char>(*c)) ? *c : '_';
  }
  return id;
}

}  // namespace rg::dist::net
