// TcpStore: client and server of the rendezvous key-value store.
//
// Protocol (one request, then one reply, per round trip):
//   request: command u8 | key length u32 | key | value length u64 | value | argument i64
//   reply:   found u8   | value length u64 | value
// The server runs one thread per client over a map guarded by a mutex; `get` waits on a
// condition variable up to the timeout the client sent (argument, in ms), so many ranks can
// block on keys at once.
#include "dist/store.h"

#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <map>
#include <thread>

#include "dist/socket.h"

namespace rg::dist {

namespace {
enum Command : uint8_t { kSet = 1, kGet = 2, kAdd = 3, kCheck = 4 };
constexpr Milliseconds kIoMargin{5000};  // network slack beyond a request's own timeout

std::string seconds(Milliseconds ms) { return str(ms.count() / 1000.0, " s"); }
}  // namespace

class StoreServer {
 public:
  explicit StoreServer(int port) {
    listen_fd_ = net::listen_tcp("", port, 1024, "store server");
    port_ = net::local_port(listen_fd_);
    accept_thread_ = std::thread([this] { accept_loop(); });
  }

  ~StoreServer() {
    stopping_ = true;
    ::shutdown(listen_fd_, SHUT_RDWR);
    accept_thread_.join();
    ::close(listen_fd_);
    {
      std::lock_guard lock(mu_);
      for (int fd : client_fds_) ::shutdown(fd, SHUT_RDWR);
    }
    cv_.notify_all();
    for (auto& t : client_threads_) t.join();
    for (int fd : client_fds_) ::close(fd);
  }

  int port() const { return port_; }

 private:
  void accept_loop() {
    while (!stopping_) {
      int fd = net::accept_tcp(listen_fd_, Clock::now() + Milliseconds(100));
      if (fd < 0) continue;
      std::lock_guard lock(mu_);
      if (stopping_) {
        ::close(fd);
        break;
      }
      client_fds_.push_back(fd);
      client_threads_.emplace_back([this, fd] { serve(fd); });
    }
  }

  void serve(int fd) {
    const auto forever = [] { return Clock::now() + std::chrono::hours(24 * 365); };
    try {
      while (!stopping_) {
        uint8_t command;
        uint32_t key_len;
        uint64_t value_len;
        int64_t argument;
        net::read_all(fd, &command, 1, forever(), "store server");
        net::read_all(fd, &key_len, 4, forever(), "store server");
        std::string key(key_len, '\0');
        net::read_all(fd, key.data(), key_len, forever(), "store server");
        net::read_all(fd, &value_len, 8, forever(), "store server");
        std::string value(value_len, '\0');
        net::read_all(fd, value.data(), value_len, forever(), "store server");
        net::read_all(fd, &argument, 8, forever(), "store server");
        auto [found, reply] = execute(command, key, std::move(value), argument);
        uint8_t found_byte = found;
        uint64_t reply_len = reply.size();
        auto deadline = Clock::now() + kIoMargin;
        net::write_all(fd, &found_byte, 1, deadline, "store server");
        net::write_all(fd, &reply_len, 8, deadline, "store server");
        net::write_all(fd, reply.data(), reply.size(), deadline, "store server");
      }
    } catch (const Error&) {
      // The client went away (or we are stopping): this connection is done.
    }
  }

  std::pair<bool, std::string> execute(uint8_t command, const std::string& key, std::string value,
                                       int64_t argument) {
    std::unique_lock lock(mu_);
    switch (command) {
      case kSet:
        data_[key] = std::move(value);
        cv_.notify_all();
        return {true, ""};
      case kGet: {
        bool found = cv_.wait_for(lock, Milliseconds(argument),
                                  [&] { return stopping_ || data_.count(key) > 0; });
        if (!found || !data_.count(key)) return {false, ""};
        return {true, data_[key]};
      }
      case kAdd: {
        int64_t current = data_.count(key) ? std::stoll(data_[key]) : 0;
        current += argument;
        data_[key] = std::to_string(current);
        cv_.notify_all();
        return {true, data_[key]};
      }
      case kCheck:
        return {data_.count(key) > 0, ""};
    }
    return {false, "unknown command"};
  }

  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::thread accept_thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::string> data_;
  std::vector<int> client_fds_;
  std::vector<std::thread> client_threads_;
};

TcpStore::TcpStore(const std::string& host, int port, bool serve, Milliseconds timeout)
    : host_(host), port_(port), timeout_(timeout) {
  if (serve) {
    server_ = std::make_unique<StoreServer>(port);
    port_ = server_->port();
  }
  fd_ = net::connect_tcp(host_, port_, Clock::now() + timeout_,
                         str("store at ", host_, ":", port_,
                             " (MASTER_ADDR:MASTER_PORT; is rank "
                             "0 running?)"));
}

TcpStore::~TcpStore() {
  if (fd_ >= 0) ::close(fd_);
  server_.reset();
}

std::string TcpStore::local_address() const { return net::local_address(fd_); }

std::pair<bool, std::string> TcpStore::request(uint8_t command, const std::string& key,
                                               const std::string& value, int64_t argument,
                                               Milliseconds timeout) {
  std::lock_guard lock(mu_);
  const std::string what = str("store at ", host_, ":", port_, ", key '", key, "'");
  auto deadline = Clock::now() + timeout + kIoMargin;
  uint32_t key_len = key.size();
  uint64_t value_len = value.size();
  net::write_all(fd_, &command, 1, deadline, what);
  net::write_all(fd_, &key_len, 4, deadline, what);
  net::write_all(fd_, key.data(), key.size(), deadline, what);
  net::write_all(fd_, &value_len, 8, deadline, what);
  net::write_all(fd_, value.data(), value.size(), deadline, what);
  net::write_all(fd_, &argument, 8, deadline, what);
  uint8_t found;
  uint64_t reply_len;
  net::read_all(fd_, &found, 1, deadline, what);
  net::read_all(fd_, &reply_len, 8, deadline, what);
  std::string reply(reply_len, '\0');
  net::read_all(fd_, reply.data(), reply_len, deadline, what);
  return {found != 0, std::move(reply)};
}

void TcpStore::set(const std::string& key, const std::string& value, Milliseconds timeout) {
  request(kSet, key, value, 0, effective(timeout));
}

std::string TcpStore::get(const std::string& key, Milliseconds timeout) {
  timeout = effective(timeout);
  auto [found, value] = request(kGet, key, "", timeout.count(), timeout);
  RG_CHECK(found, "store at ", host_, ":", port_, ": timed out after ", seconds(timeout),
           " waiting for key '", key, "'");
  return value;
}

int64_t TcpStore::add(const std::string& key, int64_t delta, Milliseconds timeout) {
  return std::stoll(request(kAdd, key, "", delta, effective(timeout)).second);
}

void TcpStore::wait(const std::vector<std::string>& keys, Milliseconds timeout) {
  auto deadline = Clock::now() + effective(timeout);
  for (const auto& key : keys) {
    auto left = std::chrono::duration_cast<Milliseconds>(deadline - Clock::now());
    get(key, std::max(left, Milliseconds(0)));
  }
}

bool TcpStore::check(const std::string& key) { return request(kCheck, key, "", 0, timeout_).first; }

}  // namespace rg::dist
