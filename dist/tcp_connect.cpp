// Peer connections of the tcp backend (see tcp_connect.h).
//
// Hello:   magic u32 | rank i32 | world size i32 | role i32 (0 data, 1 control) | token
//          length u32 | token
// Verdict: accepted u8 | reason length u32 | reason
// The listener serves its pending connections together with poll(): each must deliver its
// hello within kHelloTimeout, so a silent one is dropped rather than blocking the set-up.
#include "dist/tcp_connect.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "dist/dist_error.h"
#include "dist/socket.h"

namespace rg::dist {
namespace {

constexpr uint32_t kHelloMagic = 0x52474832;  // "RGH2"
constexpr Milliseconds kHelloTimeout{10'000};
constexpr uint32_t kMaxReasonBytes = 4096;

struct HelloHeader {
  uint32_t magic = kHelloMagic;
  int32_t rank = 0;
  int32_t size = 0;
  int32_t role = 0;
  uint32_t token_len = 0;
};
static_assert(sizeof(HelloHeader) == 20, "sent as raw bytes");

void send_verdict(int fd, bool accepted, const std::string& reason) {
  uint8_t ok = accepted;
  uint32_t len = reason.size();
  const auto deadline = Clock::now() + Milliseconds(1000);
  try {
    net::write_all(fd, &ok, 1, deadline, "verdict");
    net::write_all(fd, &len, 4, deadline, "verdict");
    net::write_all(fd, reason.data(), reason.size(), deadline, "verdict");
  } catch (const Error&) {
    // The other side has gone; nothing to tell.
  }
}

// Connects to rank q for `role`, says hello, and waits for the verdict.
int connect_one(const PeerAddress& peer, int q, int rank, int size, int role,
                const std::string& token, Clock::time_point deadline, const std::string& me) {
  const std::string what = str(me, ": connecting to rank ", q, " at ", peer.ip, ":", peer.port);
  int fd = net::connect_tcp(peer.ip, peer.port, deadline, what);
  try {
    HelloHeader hello{kHelloMagic, rank, size, role, static_cast<uint32_t>(token.size())};
    net::write_all(fd, &hello, sizeof(hello), deadline, what);
    net::write_all(fd, token.data(), token.size(), deadline, what);
    uint8_t accepted = 0;
    uint32_t len = 0;
    net::read_all(fd, &accepted, 1, deadline, what);
    net::read_all(fd, &len, 4, deadline, what);
    RG_CHECK(len <= kMaxReasonBytes, what, ": malformed verdict");
    std::string reason(len, '\0');
    net::read_all(fd, reason.data(), len, deadline, what);
    RG_CHECK(accepted == 1, what, ": refused: ", reason);
  } catch (...) {
    ::close(fd);
    throw;
  }
  return fd;
}

// A connection accepted but not yet identified.
struct Pending {
  int fd = -1;
  std::string from;
  Clock::time_point deadline;
  std::string bytes;  // the hello so far
};

// The problem with a complete hello, or "" when it is the expected rank of this job.
std::string check_hello(const HelloHeader& h, const std::string& their_token, int rank, int size,
                        const PeerSockets& sockets, const std::string& token) {
  if (their_token != token)
    return str("job token mismatch: rank ", rank,
               " here belongs to another job (RG_JOB_TOKEN differs); is another job using the "
               "same MASTER_ADDR:MASTER_PORT?");
  if (h.size != size)
    return str("world size mismatch: rank ", rank, " has WORLD_SIZE=", size, ", rank ", h.rank,
               " has WORLD_SIZE=", h.size);
  if (h.rank <= rank || h.rank >= size || (h.role != 0 && h.role != 1))
    return str("unexpected hello (rank ", h.rank, ", role ", h.role, ") at rank ", rank);
  if ((h.role == 0 ? sockets.data : sockets.control)[h.rank] >= 0)
    return str("rank ", h.rank, " connected twice: two processes with RANK=", h.rank, "?");
  return "";
}

class Acceptor {
 public:
  Acceptor(PeerSockets& sockets, int listen_fd, int rank, int size, const std::string& token,
           const std::string& me)
      : sockets_(sockets),
        listen_fd_(listen_fd),
        rank_(rank),
        size_(size),
        token_(token),
        me_(me) {}
  ~Acceptor() {
    for (auto& p : pending_) ::close(p.fd);
  }

  // Accepts until every higher rank has both connections, or throws at `deadline`.
  void run(Clock::time_point deadline) {
    while (missing() > 0) {
      std::vector<pollfd> fds{{listen_fd_, POLLIN, 0}};
      for (auto& p : pending_) fds.push_back({p.fd, POLLIN, 0});
      const auto now = Clock::now();
      if (now >= deadline) fail_missing();
      ::poll(fds.data(), fds.size(), 50);
      if (fds[0].revents & POLLIN) accept_one();
      for (size_t i = pending_.size(); i-- > 0;) {
        if (i + 1 < fds.size() && fds[i + 1].revents) read_hello(i);
        if (i < pending_.size() && Clock::now() > pending_[i].deadline)
          drop(i, "no hello within the handshake timeout");
      }
    }
  }

 private:
  int missing() const {
    int n = 0;
    for (int q = rank_ + 1; q < size_; ++q) n += (sockets_.data[q] < 0) + (sockets_.control[q] < 0);
    return n;
  }

  [[noreturn]] void fail_missing() {
    std::string list;
    int first = -1;
    for (int q = rank_ + 1; q < size_; ++q)
      if (sockets_.data[q] < 0 || sockets_.control[q] < 0) {
        list += str(list.empty() ? "" : ", ", q);
        if (first < 0) first = q;
      }
    throw DistError({FailureKind::timeout, first, "connect", 0},
                    str(me_, ": rank(s) ", list, " did not connect within the timeout"));
  }

  void accept_one() {
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) return;
    net::set_nodelay(fd);
    pending_.push_back({fd, net::peer_address(fd), Clock::now() + kHelloTimeout, {}});
  }

  void drop(size_t i, const std::string& why) {
    std::fprintf(stderr, "%s: dropped a connection from %s: %s\n", me_.c_str(),
                 pending_[i].from.c_str(), why.c_str());
    ::close(pending_[i].fd);
    pending_.erase(pending_.begin() + static_cast<long>(i));
  }

  // Reads what has arrived of pending connection i; settles it once its hello is complete.
  void read_hello(size_t i) {
    Pending& p = pending_[i];
    size_t want = sizeof(HelloHeader);
    HelloHeader h;
    if (p.bytes.size() >= sizeof(h)) {
      std::memcpy(&h, p.bytes.data(), sizeof(h));
      want += h.token_len;
    }
    char buf[512];
    ssize_t k = ::recv(p.fd, buf, std::min(sizeof(buf), want - p.bytes.size()), MSG_DONTWAIT);
    if (k == 0 || (k < 0 && errno != EAGAIN && errno != EINTR))
      return drop(i, "closed before its hello");
    if (k > 0) p.bytes.append(buf, static_cast<size_t>(k));
    if (p.bytes.size() < sizeof(h)) return;
    std::memcpy(&h, p.bytes.data(), sizeof(h));
    if (h.magic != kHelloMagic) return drop(i, "not a ringgrad rank (bad hello)");
    if (h.token_len > kMaxJobTokenBytes) return drop(i, "oversized job token");
    if (p.bytes.size() < sizeof(h) + h.token_len) return;
    settle(i, h, p.bytes.substr(sizeof(h)));
  }

  void settle(size_t i, const HelloHeader& h, const std::string& their_token) {
    const int fd = pending_[i].fd;
    const std::string problem = check_hello(h, their_token, rank_, size_, sockets_, token_);
    send_verdict(fd, problem.empty(), problem);
    if (!problem.empty()) {
      const bool same_job = their_token == token_;
      drop(i, problem);
      // A process of this job that disagrees is a broken launch: fail this rank too. A
      // stranger (another job) is only turned away.
      RG_CHECK(!same_job, me_, ": ", problem);
      return;
    }
    (h.role == 0 ? sockets_.data : sockets_.control)[h.rank] = fd;
    pending_.erase(pending_.begin() + static_cast<long>(i));
  }

  PeerSockets& sockets_;
  int listen_fd_, rank_, size_;
  const std::string& token_;
  const std::string& me_;
  std::vector<Pending> pending_;
};

}  // namespace

PeerSockets::~PeerSockets() {
  for (int fd : data)
    if (fd >= 0) ::close(fd);
  for (int fd : control)
    if (fd >= 0) ::close(fd);
}

void connect_peers(PeerSockets& sockets, int listen_fd, const std::vector<PeerAddress>& peers,
                   int rank, const std::string& job_token, Clock::time_point deadline,
                   const std::string& me) {
  const int size = static_cast<int>(peers.size());
  for (int q = 0; q < rank; ++q) {
    sockets.data[q] = connect_one(peers[q], q, rank, size, 0, job_token, deadline, me);
    sockets.control[q] = connect_one(peers[q], q, rank, size, 1, job_token, deadline, me);
  }
  Acceptor(sockets, listen_fd, rank, size, job_token, me).run(deadline);
}

}  // namespace rg::dist
