// Store server (see store_server.h for the design and why it runs inside rank 0).
//
// The poll loop (thread "rg-store") owns the listening socket and the connections still in
// their hello (`pending`), and wakes at least every kTick to expire hellos, reap finished
// serving threads and flush the log. It reads only a hello's own bytes, without blocking,
// and tries at accept already: a rank sends its hello as it connects. A serving thread sends
// the verdict, then answers request after request: between requests it may idle for as long
// as the client likes, but once a request has started its remaining bytes must come within
// kFrameTimeout. Every limit is checked before the bytes it announces are read.
#include "dist/store_server.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <list>
#include <map>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include "core/memory_limits.h"
#include "dist/job_token.h"
#include "dist/socket.h"
#include "dist/store_wire.h"

namespace rg::dist {

using namespace store_wire;

namespace {

constexpr Milliseconds kFrameTimeout{30'000};
constexpr Milliseconds kTick{100};
constexpr int kAcceptBatch = 256;  // accepts per round, so that hellos are read in between
constexpr int kLogBurst = 8;       // lines per kLogWindow; the rest are counted
constexpr Milliseconds kLogWindow{10'000};

// A client that broke the protocol; its connection is closed with this reason.
struct Malformed {
  std::string reason;
};

struct Request {
  uint8_t command = 0;
  std::string key, value;
  int64_t argument = 0;
};

struct Reply {
  Status status = kOk;
  std::string text;
};

// A connection still in its hello: magic u32 | token length u32 | token.
struct Pending {
  int fd = -1;
  std::string peer;  // "ip:port", for the log
  Clock::time_point deadline;
  uint32_t head[2] = {0, 0};  // magic, token length
  size_t got = 0;             // bytes of the hello read so far
  std::string token;
};

// Lines on stderr, at most kLogBurst per kLogWindow (a flood of bad connections would print
// one each); those held back are counted and summed up in one line when the window ends.
class RateLimitedLog {
 public:
  void line(const std::string& text) {
    std::lock_guard lock(mu_);
    roll_locked(false);
    if (printed_ < kLogBurst) {
      std::fprintf(stderr, "ringgrad store: %s\n", text.c_str());
      ++printed_;
    } else {
      ++held_;
      last_held_ = text;
    }
  }
  // Sums up a window that has ended (or the last one, when `final`).
  void roll(bool final) {
    std::lock_guard lock(mu_);
    roll_locked(final);
  }

 private:
  void roll_locked(bool final) {
    if (!final && Clock::now() - window_start_ < kLogWindow) return;
    if (held_ > 0)
      std::fprintf(stderr,
                   "ringgrad store: ... and %llu more like these, not listed (the last: %s)\n",
                   static_cast<unsigned long long>(held_), last_held_.c_str());
    window_start_ = Clock::now();
    printed_ = 0;
    held_ = 0;
  }

  std::mutex mu_;
  Clock::time_point window_start_ = Clock::now();
  int printed_ = 0;
  uint64_t held_ = 0;
  std::string last_held_;
};

// Parses a whole decimal int64 ("-12"); false for anything else, overflow included.
bool parse_int64(const std::string& s, int64_t& out) {
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size() && !s.empty();
}

std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == '\n') {
      parts.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  return parts;
}

// Compares in time independent of where the tokens differ.
bool same_token(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

// Reads what has arrived of p's hello without blocking: true once it is whole. Throws
// Malformed at a wrong magic, an over-long token or a connection closed before the end.
bool read_hello(Pending& p) {
  for (;;) {
    char* dest = reinterpret_cast<char*>(p.head) + p.got;
    size_t want = sizeof(p.head) - p.got;
    if (p.got >= sizeof(p.head)) {
      const size_t have = p.got - sizeof(p.head);
      if (have == p.head[1]) return true;
      dest = p.token.data() + have;
      want = p.head[1] - have;
    }
    const ssize_t k = ::recv(p.fd, dest, want, MSG_DONTWAIT);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return false;
    if (k == 0) throw Malformed{"closed before its hello was whole"};
    if (k < 0) throw Malformed{str("hello: ", std::strerror(errno))};
    const size_t before = p.got;
    p.got += static_cast<size_t>(k);
    if (before < 4 && p.got >= 4 && p.head[0] != kHelloMagic)
      throw Malformed{"not a ringgrad store client (bad hello)"};
    if (before < 8 && p.got >= 8) {
      if (p.head[1] > kMaxJobTokenBytes)
        throw Malformed{
            str("job token of ", p.head[1], " bytes (at most ", kMaxJobTokenBytes, ")")};
      p.token.assign(p.head[1], '\0');
    }
  }
}

// Sends a refusal (accepted 0 | reason) without blocking: a fresh socket's buffer holds it.
void send_refusal(int fd, const std::string& reason) {
  std::string verdict(1, '\0');
  const uint32_t len = reason.size();
  verdict.append(reinterpret_cast<const char*>(&len), 4);
  verdict += reason;
  (void)::send(fd, verdict.data(), verdict.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
}

}  // namespace

struct StoreServer::State {
  struct Connection {
    int fd = -1;
    std::string peer;  // "ip:port", for the log
    std::thread thread;
    std::atomic<bool> finished{false};
  };

  std::string token;
  int listen_fd = -1;
  int port = 0;
  std::atomic<bool> stopping{false};
  std::thread poll_thread;
  RateLimitedLog log;

  // Owned by the poll thread alone.
  std::vector<Pending> pending;
  Clock::time_point accept_paused_until;

  std::mutex mu;  // guards everything below
  std::condition_variable changed;
  std::map<std::string, std::string> data;
  uint64_t stored_bytes = 0;
  std::list<Connection> connections;

  void poll_loop();
  bool progress(Pending& p, Clock::time_point now);
  void accept_new(Clock::time_point now);
  void admit(Pending& p);
  void close_pending(Pending& p, const std::string& why);
  void reap_finished_locked();
  void serve(Connection& c);
  bool read_request(Connection& c, Request& request);
  void send_reply(Connection& c, const Reply& reply);
  Reply execute(const Request& request);
  Reply set(const std::string& key, const std::string& value);
  Reply add(const std::string& key, int64_t delta);
  Reply wait_any(std::vector<std::string> keys, int64_t wait_ms,
                 std::unique_lock<std::mutex>& lock);
  void closing(const std::string& peer, const std::string& why) {
    log.line(str("closing the connection from ", peer, ": ", why));
  }
};

StoreServer::StoreServer(const std::string& host, int port, std::string job_token)
    : state_(std::make_unique<State>()) {
  state_->token = std::move(job_token);
  try {
    state_->listen_fd = net::listen_tcp(host, port, 1024, "store server");
  } catch (const Error& e) {
    RG_FAIL(e.what(), " (is another job, or another rank 0, using MASTER_PORT ", port, "?)");
  }
  state_->port = net::local_port(state_->listen_fd);
  // Non-blocking: the poll loop accepts until the backlog is empty.
  ::fcntl(state_->listen_fd, F_SETFL, ::fcntl(state_->listen_fd, F_GETFL) | O_NONBLOCK);
  state_->poll_thread = start_thread("store server", [s = state_.get()] {
    pthread_setname_np(pthread_self(), "rg-store");  // named for gdb, top and the tests
    s->poll_loop();
  });
}

StoreServer::~StoreServer() {
  State& s = *state_;
  s.stopping = true;
  s.poll_thread.join();  // closes the pending connections
  ::close(s.listen_fd);
  {
    std::lock_guard lock(s.mu);
    for (auto& c : s.connections)
      if (c.fd >= 0) ::shutdown(c.fd, SHUT_RDWR);  // wakes its thread
    s.changed.notify_all();
  }
  for (auto& c : s.connections) c.thread.join();
  s.log.roll(true);
}

int StoreServer::port() const { return state_->port; }

// One round: wait (at most kTick, or until the nearest hello deadline) for bytes or
// connections, advance the hellos, then accept.
void StoreServer::State::poll_loop() {
  std::vector<pollfd> fds;
  while (!stopping) {
    auto now = Clock::now();
    auto wake = now + kTick;
    fds.assign(1, pollfd{now < accept_paused_until ? -1 : listen_fd, POLLIN, 0});
    for (const Pending& p : pending) {
      fds.push_back(pollfd{p.fd, POLLIN, 0});
      wake = std::min(wake, p.deadline);
    }
    const auto wait = std::chrono::ceil<Milliseconds>(wake - now).count();
    ::poll(fds.data(), fds.size(), static_cast<int>(std::max<int64_t>(wait, 0)));
    now = Clock::now();
    // Backwards, so that moving the last entry into a finished one's place skips nothing.
    for (size_t i = pending.size(); i-- > 0;) {
      if (fds[i + 1].revents == 0 && now < pending[i].deadline) continue;
      if (!progress(pending[i], now)) continue;
      if (i + 1 != pending.size()) pending[i] = std::move(pending.back());
      pending.pop_back();
    }
    if (fds[0].revents != 0) accept_new(now);
    {
      std::lock_guard lock(mu);
      reap_finished_locked();
    }
    log.roll(false);
  }
  for (Pending& p : pending) ::close(p.fd);
  pending.clear();
}

// Reads more of p's hello; true when p is done with (admitted or closed).
bool StoreServer::State::progress(Pending& p, Clock::time_point now) {
  try {
    if (read_hello(p)) {
      admit(p);
      return true;
    }
  } catch (const Malformed& m) {
    close_pending(p, m.reason);
    return true;
  }
  if (now < p.deadline) return false;
  close_pending(p, str("no whole hello within ", kHelloTimeout.count(), " ms (", p.got,
                       " bytes of it came)"));
  return true;
}

// Accepts what waits in the backlog. A connection without a whole hello waits in `pending`;
// when all kMaxPendingHellos places are taken, the oldest waiter is closed to make room
// (closing the newcomer would let 64 silent connections, renewed each second, lock out ranks).
void StoreServer::State::accept_new(Clock::time_point now) {
  for (int i = 0; i < kAcceptBatch && !stopping; ++i) {
    const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      // Out of descriptors (EMFILE, ENFILE) or memory: retry after a tick instead of spinning.
      log.line(str("cannot accept connections for now: ", std::strerror(errno)));
      accept_paused_until = now + kTick;
      return;
    }
    net::set_nodelay(fd);
    Pending p{fd, net::peer_address(fd), now + kHelloTimeout, {0, 0}, 0, {}};
    if (progress(p, now)) continue;
    if (pending.size() < kMaxPendingHellos) {
      pending.push_back(std::move(p));
      continue;
    }
    auto oldest = std::min_element(pending.begin(), pending.end(),
                                   [](auto& a, auto& b) { return a.deadline < b.deadline; });
    close_pending(*oldest, str("no hello yet, and ", kMaxPendingHellos,
                               " newer connections wait for theirs (a flood?)"));
    *oldest = std::move(p);
  }
}

// A whole hello: the right token gets a serving thread, a wrong one a refusal.
void StoreServer::State::admit(Pending& p) {
  if (!same_token(p.token, token)) {
    send_refusal(p.fd,
                 "job token mismatch: this store belongs to another job (RG_JOB_TOKEN differs)");
    close_pending(p, "job token mismatch (a process of another job?)");
    return;
  }
  std::lock_guard lock(mu);
  if (connections.size() >= kMaxServedConnections) {
    send_refusal(p.fd, str("the store serves at most ", kMaxServedConnections, " connections"));
    close_pending(p, str("refused: ", connections.size(), " connections already served"));
    return;
  }
  Connection& c = connections.emplace_back();
  c.fd = p.fd;
  c.peer = p.peer;
  try {
    c.thread = std::thread([this, &c] {
      pthread_setname_np(pthread_self(), "rg-store-conn");
      serve(c);
    });
  } catch (const std::system_error& e) {
    connections.pop_back();
    close_pending(p, str("no thread to serve it: ", e.what()));
    return;
  }
  p.fd = -1;
}

void StoreServer::State::close_pending(Pending& p, const std::string& why) {
  closing(p.peer, why);
  ::close(p.fd);
  p.fd = -1;
}

void StoreServer::State::reap_finished_locked() {
  for (auto it = connections.begin(); it != connections.end();) {
    if (!it->finished) {
      ++it;
      continue;
    }
    it->thread.join();
    it = connections.erase(it);
  }
}

// Runs one admitted connection to its end: the verdict, then requests. Nothing escapes (a
// thrown exception would end the process).
void StoreServer::State::serve(Connection& c) {
  try {
    const uint8_t verdict[5] = {1, 0, 0, 0, 0};  // accepted, no reason
    net::write_all(c.fd, verdict, sizeof(verdict), Clock::now() + kFrameTimeout, "hello");
    Request request;
    while (read_request(c, request)) send_reply(c, execute(request));
  } catch (const Malformed& m) {
    closing(c.peer, m.reason);
  } catch (const std::exception& e) {
    if (!stopping) closing(c.peer, e.what());
  } catch (...) {
    closing(c.peer, "unknown exception");
  }
  std::lock_guard lock(mu);
  ::close(c.fd);
  c.fd = -1;
  c.finished = true;
}

// Reads one request; false when the client closed the connection between requests.
bool StoreServer::State::read_request(Connection& c, Request& r) {
  try {
    net::read_all(c.fd, &r.command, 1, Clock::now() + kMaxWait, "request");
  } catch (const Error&) {
    return false;  // closed (or the server is stopping)
  }
  if (r.command < kSet || r.command > kWaitAny)
    throw Malformed{str("unknown command ", int(r.command))};
  const auto deadline = Clock::now() + kFrameTimeout;
  uint32_t key_len = 0;
  uint64_t value_len = 0;
  net::read_all(c.fd, &key_len, 4, deadline, "request");
  if (key_len > kMaxKeyBytes)
    throw Malformed{str("key length ", key_len, " exceeds the limit of ", kMaxKeyBytes)};
  r.key.assign(key_len, '\0');
  net::read_all(c.fd, r.key.data(), key_len, deadline, "request");
  net::read_all(c.fd, &value_len, 8, deadline, "request");
  if (value_len > kMaxValueBytes)
    throw Malformed{str("value length ", value_len, " exceeds the limit of ", kMaxValueBytes)};
  r.value.assign(value_len, '\0');
  net::read_all(c.fd, r.value.data(), value_len, deadline, "request");
  net::read_all(c.fd, &r.argument, 8, deadline, "request");
  return true;
}

void StoreServer::State::send_reply(Connection& c, const Reply& reply) {
  const auto deadline = Clock::now() + kFrameTimeout;
  uint8_t status = reply.status;
  uint64_t len = reply.text.size();
  net::write_all(c.fd, &status, 1, deadline, "reply");
  net::write_all(c.fd, &len, 8, deadline, "reply");
  net::write_all(c.fd, reply.text.data(), reply.text.size(), deadline, "reply");
}

Reply StoreServer::State::execute(const Request& r) {
  std::unique_lock lock(mu);
  switch (r.command) {
    case kSet:
      return set(r.key, r.value);
    case kGet: {
      Reply reply = wait_any({r.key}, r.argument, lock);
      if (reply.status == kOk) reply.text = data[r.key];
      return reply;
    }
    case kAdd:
      return add(r.key, r.argument);
    case kCheck:
      return {data.count(r.key) ? kOk : kMissing, ""};
    default:
      return wait_any(split_lines(r.value), r.argument, lock);
  }
}

Reply StoreServer::State::set(const std::string& key, const std::string& value) {
  auto it = data.find(key);
  const uint64_t old_bytes = it == data.end() ? 0 : key.size() + it->second.size();
  const uint64_t new_bytes = key.size() + value.size();
  if (stored_bytes - old_bytes + new_bytes > kMaxStoredBytes)
    return {kFailed, str("the store is full (", kMaxStoredBytes, " bytes of keys and values)")};
  stored_bytes = stored_bytes - old_bytes + new_bytes;
  data[key] = value;
  changed.notify_all();
  return {kOk, ""};
}

Reply StoreServer::State::add(const std::string& key, int64_t delta) {
  int64_t current = 0;
  auto it = data.find(key);
  if (it != data.end() && !parse_int64(it->second, current))
    return {kFailed, str("add to key '", key, "': its value is not a 64-bit integer")};
  int64_t sum = 0;
  if (__builtin_add_overflow(current, delta, &sum))
    return {kFailed, str("add to key '", key, "': ", current, " + ", delta, " overflows int64")};
  Reply stored = set(key, std::to_string(sum));
  return stored.status == kOk ? Reply{kOk, std::to_string(sum)} : stored;
}

// Waits (at most wait_ms, clamped) until one of `keys` exists: "index\nvalue" of the first.
Reply StoreServer::State::wait_any(std::vector<std::string> keys, int64_t wait_ms,
                                   std::unique_lock<std::mutex>& lock) {
  int found = -1;
  auto any = [&] {
    for (size_t i = 0; i < keys.size(); ++i) {
      if (data.count(keys[i])) {
        found = static_cast<int>(i);
        return true;
      }
    }
    return stopping.load();
  };
  changed.wait_for(lock, clamp_wait(wait_ms), any);
  if (found < 0) return {kMissing, ""};
  return {kOk, str(found, "\n", data[keys[found]])};
}

}  // namespace rg::dist
