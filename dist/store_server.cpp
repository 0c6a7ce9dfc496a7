// Store server (see store_server.h): one thread accepts, one thread serves each connection.
//
// A connection's thread reads the hello (within kHelloTimeout, so a silent client costs only
// its own thread), then request after request: between requests it may idle for as long as
// the client likes, but once a request has started its remaining bytes must come within
// kFrameTimeout. Every limit is checked before the bytes it announces are read. Finished
// connections are reaped by the accept thread; at most kMaxConnections are served at once.
#include "dist/store_server.h"

#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <charconv>
#include <condition_variable>
#include <cstdio>
#include <list>
#include <map>
#include <mutex>
#include <thread>

#include "dist/socket.h"
#include "dist/store_wire.h"

namespace rg::dist {

using namespace store_wire;

namespace {

constexpr Milliseconds kHelloTimeout{10'000};
constexpr Milliseconds kFrameTimeout{30'000};
constexpr size_t kMaxConnections = 4096;

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
  std::thread accept_thread;

  std::mutex mu;  // guards everything below
  std::condition_variable changed;
  std::map<std::string, std::string> data;
  uint64_t stored_bytes = 0;
  std::list<Connection> connections;

  void accept_loop();
  void reap_finished_locked();
  void serve(Connection& c);
  void greet(Connection& c);
  bool read_request(Connection& c, Request& request);
  void send_reply(Connection& c, const Reply& reply);
  Reply execute(const Request& request);
  Reply set(const std::string& key, const std::string& value);
  Reply add(const std::string& key, int64_t delta);
  Reply wait_any(std::vector<std::string> keys, int64_t wait_ms,
                 std::unique_lock<std::mutex>& lock);
  void log(const Connection& c, const std::string& why) {
    std::fprintf(stderr, "ringgrad store: closing the connection from %s: %s\n", c.peer.c_str(),
                 why.c_str());
  }
};

StoreServer::StoreServer(const std::string& host, int port, std::string job_token)
    : state_(std::make_unique<State>()) {
  state_->token = std::move(job_token);
  state_->listen_fd = net::listen_tcp(host, port, 1024, "store server");
  state_->port = net::local_port(state_->listen_fd);
  state_->accept_thread = std::thread([s = state_.get()] {
    pthread_setname_np(pthread_self(), "rg-store");  // named for gdb, top and the tests
    s->accept_loop();
  });
}

StoreServer::~StoreServer() {
  State& s = *state_;
  s.stopping = true;
  ::shutdown(s.listen_fd, SHUT_RDWR);
  s.accept_thread.join();
  ::close(s.listen_fd);
  {
    std::lock_guard lock(s.mu);
    for (auto& c : s.connections)
      if (c.fd >= 0) ::shutdown(c.fd, SHUT_RDWR);  // wakes its thread
    s.changed.notify_all();
  }
  for (auto& c : s.connections) c.thread.join();
}

int StoreServer::port() const { return state_->port; }

void StoreServer::State::accept_loop() {
  while (!stopping) {
    int fd = net::accept_tcp(listen_fd, Clock::now() + Milliseconds(100));
    std::lock_guard lock(mu);
    reap_finished_locked();
    if (fd < 0) continue;
    if (stopping || connections.size() >= kMaxConnections) {
      if (!stopping)
        std::fprintf(stderr, "ringgrad store: refusing a connection: %zu already open\n",
                     connections.size());
      ::close(fd);
      continue;
    }
    Connection& c = connections.emplace_back();
    c.fd = fd;
    c.peer = net::peer_address(fd);
    c.thread = std::thread([this, &c] {
      pthread_setname_np(pthread_self(), "rg-store-conn");
      serve(c);
    });
  }
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

// Runs one connection to its end; nothing escapes (a thrown exception would end the process).
void StoreServer::State::serve(Connection& c) {
  try {
    greet(c);
    Request request;
    while (read_request(c, request)) send_reply(c, execute(request));
  } catch (const Malformed& m) {
    log(c, m.reason);
  } catch (const std::exception& e) {
    if (!stopping) log(c, e.what());
  } catch (...) {
    log(c, "unknown exception");
  }
  std::lock_guard lock(mu);
  ::close(c.fd);
  c.fd = -1;
  c.finished = true;
}

// Reads the hello and answers it; a wrong magic or token ends the connection.
void StoreServer::State::greet(Connection& c) {
  const auto deadline = Clock::now() + kHelloTimeout;
  uint32_t magic = 0, token_len = 0;
  net::read_all(c.fd, &magic, 4, deadline, "hello");
  if (magic != kHelloMagic) throw Malformed{"not a ringgrad store client (bad hello)"};
  net::read_all(c.fd, &token_len, 4, deadline, "hello");
  if (token_len > kMaxJobTokenBytes)
    throw Malformed{str("job token of ", token_len, " bytes (at most ", kMaxJobTokenBytes, ")")};
  std::string their_token(token_len, '\0');
  net::read_all(c.fd, their_token.data(), token_len, deadline, "hello");
  const bool accepted = their_token == token;
  const std::string reason =
      accepted ? ""
               : "job token mismatch: this store belongs to another job (RG_JOB_TOKEN differs)";
  uint8_t verdict = accepted;
  uint32_t reason_len = reason.size();
  net::write_all(c.fd, &verdict, 1, deadline, "hello");
  net::write_all(c.fd, &reason_len, 4, deadline, "hello");
  net::write_all(c.fd, reason.data(), reason.size(), deadline, "hello");
  if (!accepted) throw Malformed{"job token mismatch (a process of another job?)"};
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
