// The rendezvous store under hostile input: malformed frames sent over raw sockets must close
// only their own connection, never the server (which runs inside rank 0), and never make it
// allocate what a length field claims; floods of silent, slow or surplus connections must cost
// rank 0 no thread and a bounded number of file descriptors. Also: strict ADD, clamped
// timeouts, the job token, and the interface the server listens on.
#include <arpa/inet.h>
#include <dirent.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "dist/store.h"
#include "dist/store_wire.h"

using namespace rg;
using namespace rg::dist;
using namespace rg::dist::store_wire;

namespace {

int raw_connect(const char* ip, int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, ip, &addr.sin_addr);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

template <typename T>
void append(std::string& out, T value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof(value));
}

std::string hello(const std::string& token) {
  std::string out;
  append(out, kHelloMagic);
  append(out, static_cast<uint32_t>(token.size()));
  return out + token;
}

// The start of a request: command, key length (as claimed) and key bytes.
std::string request_head(uint8_t command, uint32_t key_len, const std::string& key) {
  std::string out;
  append(out, command);
  append(out, key_len);
  return out + key;
}

void send_bytes(int fd, const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t k = ::send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (k <= 0) return;  // the server may close early: that is allowed
    done += static_cast<size_t>(k);
  }
}

// Reads until the server closes the connection (true) or 10 s pass (false).
bool closed_by_server(int fd) {
  char buf[4096];
  for (int waited = 0; waited < 10'000; waited += 50) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    ssize_t k = ::recv(fd, buf, sizeof(buf), 0);
    if (k <= 0) return true;
  }
  return false;
}

// The hello verdict: the accepted byte, then the reason.
uint8_t read_verdict(int fd) {
  uint8_t accepted = 0;
  uint32_t len = 0;
  if (::recv(fd, &accepted, 1, MSG_WAITALL) != 1) return 255;
  if (::recv(fd, &len, 4, MSG_WAITALL) != 4) return 255;
  std::string reason(len, '\0');
  if (len && ::recv(fd, reason.data(), len, MSG_WAITALL) != static_cast<ssize_t>(len)) return 255;
  return accepted;
}

size_t resident_bytes() {
  size_t pages = 0, resident = 0;
  std::ifstream("/proc/self/statm") >> pages >> resident;
  return resident * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

// Entries of a /proc directory: /proc/self/task (threads), /proc/self/fd (open descriptors).
size_t count_entries(const char* dir) {
  DIR* d = opendir(dir);
  if (!d) return 0;
  size_t n = 0;
  while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

// Raises this process's soft limit on open files to the hard one; returns the soft limit.
rlim_t raise_fd_limit() {
  rlimit r{};
  getrlimit(RLIMIT_NOFILE, &r);
  r.rlim_cur = r.rlim_max;
  setrlimit(RLIMIT_NOFILE, &r);
  getrlimit(RLIMIT_NOFILE, &r);
  return r.rlim_cur;
}

// Waits until the server has closed every one of `fds` (our ends stay open) or `limit`
// passes; returns for each whether it was closed.
std::vector<bool> wait_closed(const std::vector<int>& fds, Milliseconds limit) {
  std::vector<bool> closed(fds.size(), false);
  const auto deadline = Clock::now() + limit;
  size_t left = fds.size();
  std::vector<pollfd> polled;
  std::vector<size_t> index;
  while (left > 0 && Clock::now() < deadline) {
    polled.clear();
    index.clear();
    for (size_t i = 0; i < fds.size(); ++i) {
      if (closed[i]) continue;
      polled.push_back(pollfd{fds[i], POLLIN, 0});
      index.push_back(i);
    }
    if (::poll(polled.data(), polled.size(), 100) <= 0) continue;
    char buf[256];
    for (size_t k = 0; k < polled.size(); ++k) {
      if (polled[k].revents == 0 || ::recv(polled[k].fd, buf, sizeof(buf), MSG_DONTWAIT) > 0)
        continue;
      closed[index[k]] = true;
      --left;
    }
  }
  return closed;
}

const std::string kToken = job_token_from_env();

// n connections to 127.0.0.1:port that never send a byte (their descriptors).
std::vector<int> silent_connections(int port, size_t n) {
  std::vector<int> fds;
  for (size_t i = 0; i < n; ++i) {
    const int fd = raw_connect("127.0.0.1", port);
    REQUIRE(fd >= 0);
    fds.push_back(fd);
  }
  return fds;
}

}  // namespace

TEST_CASE("malformed frames close their own connection; the store keeps serving") {
  TcpStore server("127.0.0.1", 0, true, Milliseconds(10'000));
  const int port = server.port();
  TcpStore before("127.0.0.1", port, false, Milliseconds(10'000));
  before.set("alive", "yes");
  const size_t rss_before = resident_bytes();

  std::mt19937_64 random(12345);
  std::string noise(4096, '\0');
  for (char& c : noise) c = static_cast<char>(random());
  std::string value_2_63 = request_head(kSet, 1, "k"), value_2_40 = value_2_63,
              value_2_gib = value_2_63;
  append(value_2_63, uint64_t(1) << 63);
  append(value_2_40, uint64_t(1) << 40);
  append(value_2_gib, uint64_t(2) << 30);
  value_2_gib += std::string(1000, 'v');  // the start of the announced 2 GiB
  struct Case {
    const char* name;
    std::string bytes;
    bool after_hello;
  };
  const Case cases[] = {
      {"value length 2^63", value_2_63, true},
      {"value length 2^40", value_2_40, true},
      {"value length 2 GiB", value_2_gib, true},
      {"key length 0xFFFFFFFF", request_head(kGet, 0xFFFFFFFFu, "abc"), true},
      {"unknown command", request_head(99, 1, "k"), true},
      {"4 KiB of random bytes instead of a hello", noise, false},
      {"4 KiB of random bytes after the hello", noise, true},
      {"token length 0xFFFFFFFF",
       [] {
         std::string h;
         append(h, kHelloMagic);
         append(h, 0xFFFFFFFFu);
         return h;
       }(),
       false},
  };
  std::vector<int> open_fds;
  int silent = raw_connect("127.0.0.1", port);  // never says anything
  REQUIRE(silent >= 0);
  for (const Case& c : cases) {
    CAPTURE(c.name);
    int fd = raw_connect("127.0.0.1", port);
    REQUIRE(fd >= 0);
    if (c.after_hello) {
      send_bytes(fd, hello(kToken));
      REQUIRE(read_verdict(fd) == 1);
    }
    send_bytes(fd, c.bytes);
    CHECK(closed_by_server(fd));
    open_fds.push_back(fd);  // our end stays open: the server must not hold memory for it
    // Old and new clients are still served.
    CHECK(before.get("alive") == "yes");
    TcpStore fresh("127.0.0.1", port, false, Milliseconds(10'000));
    fresh.set(str("after/", c.name), "ok");
    CHECK(fresh.get(str("after/", c.name)) == "ok");
  }
  CHECK(resident_bytes() < rss_before + (256u << 20));
  for (int fd : open_fds) ::close(fd);
  ::close(silent);
}

TEST_CASE("ADD parses strictly and refuses to overflow; the server survives every refusal") {
  TcpStore store("127.0.0.1", 0, true, Milliseconds(10'000));
  store.set("word", "abc");
  store.set("twenty_digits", "12345678901234567890");
  store.set("max", std::to_string(std::numeric_limits<int64_t>::max()));
  store.set("min", std::to_string(std::numeric_limits<int64_t>::min()));
  store.set("trailing", "12x");
  CHECK_THROWS_WITH_AS(store.add("word", 1), doctest::Contains("not a 64-bit integer"), Error);
  CHECK_THROWS_WITH_AS(store.add("twenty_digits", 1), doctest::Contains("not a 64-bit integer"),
                       Error);
  CHECK_THROWS_WITH_AS(store.add("trailing", 1), doctest::Contains("not a 64-bit integer"), Error);
  CHECK_THROWS_WITH_AS(store.add("max", 1), doctest::Contains("overflows int64"), Error);
  CHECK_THROWS_WITH_AS(store.add("min", -1), doctest::Contains("overflows int64"), Error);
  CHECK(store.add("max", -1) == std::numeric_limits<int64_t>::max() - 1);
  CHECK(store.add("fresh", 5) == 5);
  CHECK(store.get("word") == "abc");  // a refused ADD changes nothing
}

TEST_CASE("waits of INT64_MAX ms are clamped, not overflowed") {
  TcpStore store("127.0.0.1", 0, true, Milliseconds(10'000));
  store.set("here", "v");
  CHECK(store.get("here", Milliseconds::max()) == "v");
  // A raw GET that asks for INT64_MAX ms, for a key set a little later, is answered with it.
  int fd = raw_connect("127.0.0.1", store.port());
  REQUIRE(fd >= 0);
  send_bytes(fd, hello(kToken));
  REQUIRE(read_verdict(fd) == 1);
  std::string get = request_head(kGet, 5, "later");
  append(get, uint64_t(0));
  append(get, std::numeric_limits<int64_t>::max());
  send_bytes(fd, get);
  std::this_thread::sleep_for(Milliseconds(100));
  store.set("later", "now");
  uint8_t status = 0;
  uint64_t len = 0;
  REQUIRE(::recv(fd, &status, 1, MSG_WAITALL) == 1);
  REQUIRE(::recv(fd, &len, 8, MSG_WAITALL) == 8);
  std::string value(len, '\0');
  REQUIRE(::recv(fd, value.data(), len, MSG_WAITALL) == static_cast<ssize_t>(len));
  CHECK(status == kOk);
  CHECK(value == "now");
  ::close(fd);
}

TEST_CASE("a client with another job's token is refused, naming the cause") {
  TcpStore store("127.0.0.1", 0, true, Milliseconds(10'000), "job-a");
  CHECK_THROWS_WITH_AS(TcpStore("127.0.0.1", store.port(), false, Milliseconds(5000), "job-b"),
                       doctest::Contains("job token mismatch"), Error);
  TcpStore same("127.0.0.1", store.port(), false, Milliseconds(5000), "job-a");
  same.set("k", "v");
  CHECK(store.get("k") == "v");
}

TEST_CASE("the store listens only on MASTER_ADDR's interface") {
  TcpStore store("127.0.0.1", 0, true, Milliseconds(10'000));
  int fd = raw_connect("127.0.0.2", store.port());  // another loopback address
  CHECK(fd < 0);
  if (fd >= 0) ::close(fd);
}

TEST_CASE("over-long keys and values are refused by the client with a clear error") {
  TcpStore store("127.0.0.1", 0, true, Milliseconds(10'000));
  CHECK_THROWS_WITH_AS(store.set(std::string(kMaxKeyBytes + 1, 'k'), "v"),
                       doctest::Contains("at most 4096"), Error);
  CHECK_THROWS_WITH_AS(store.set("k", std::string(kMaxValueBytes + 1, 'v')),
                       doctest::Contains("at most 1048576"), Error);
  store.set("k", std::string(kMaxValueBytes, 'v'));
  CHECK(store.get("k").size() == kMaxValueBytes);
}

TEST_CASE("a thousand silent connections cost the store no thread and a bounded number of fds") {
  const rlim_t fd_limit = raise_fd_limit();
  TcpStore server("127.0.0.1", 0, true, Milliseconds(10'000));
  const size_t threads_before = count_entries("/proc/self/task");
  const size_t fds_before = count_entries("/proc/self/fd");
  // As many as our own limit allows (our ends count too), past the cap in any case.
  const size_t n =
      std::min<size_t>(1000, fd_limit > fds_before + 300 ? fd_limit - fds_before - 300 : 0);
  REQUIRE(n > kMaxPendingHellos + 32);
  const std::vector<int> silent = silent_connections(server.port(), n);
  // A member still connects and is served, after the crowd (so all of it has been accepted).
  TcpStore member("127.0.0.1", server.port(), false, Milliseconds(10'000));
  member.set("k", "v");
  CHECK(server.get("k") == "v");
  CHECK(member.add("n", 2) == 2);
  // Descriptors the server holds for the crowd: all but our n ends and the member's two.
  const size_t server_fds = count_entries("/proc/self/fd") - fds_before - n - 2;
  CHECK(server_fds <= kMaxPendingHellos + 1);
  CHECK(count_entries("/proc/self/task") <= threads_before + 1);  // the member's thread
  // The server closes every silent one: past the cap at once, the rest at their deadline.
  const std::vector<bool> closed = wait_closed(silent, Milliseconds(30'000));
  CHECK(std::count(closed.begin(), closed.end(), true) == static_cast<long>(n));
  CHECK(count_entries("/proc/self/task") <= threads_before + 1);
  for (int fd : silent) ::close(fd);
  CHECK(member.get("k") == "v");
}

TEST_CASE("past the cap on waiting hellos the oldest waiters are closed; members still get in") {
  TcpStore server("127.0.0.1", 0, true, Milliseconds(10'000));
  const size_t fds_before = count_entries("/proc/self/fd");
  const size_t extra = 32, n = kMaxPendingHellos + extra;
  const std::vector<int> silent = silent_connections(server.port(), n);
  TcpStore member("127.0.0.1", server.port(), false, Milliseconds(10'000));
  member.set("k", "v");
  CHECK(server.get("k") == "v");
  // The server holds at most the cap for them (all but our n ends and the member's two).
  CHECK(count_entries("/proc/self/fd") - fds_before - n - 2 <= kMaxPendingHellos + 1);
  // The first `extra` are closed (they see EOF); the rest too, at the latest at the deadline.
  const std::vector<int> oldest(silent.begin(), silent.begin() + extra);
  const std::vector<bool> closed = wait_closed(oldest, Milliseconds(10'000));
  CHECK(std::count(closed.begin(), closed.end(), true) == static_cast<long>(extra));
  for (int fd : silent) ::close(fd);
}

TEST_CASE("a hello trickled byte by byte is cut off at the hello deadline; members are served") {
  const std::string token(200, 't');  // 208 bytes of hello: 20 s at 10 bytes a second
  TcpStore server("127.0.0.1", 0, true, Milliseconds(10'000), token);
  const int fd = raw_connect("127.0.0.1", server.port());
  REQUIRE(fd >= 0);
  const std::string h = hello(token);
  const auto start = Clock::now();
  size_t sent = 0;
  bool closed = false;
  while (sent < h.size() && !closed) {
    if (::send(fd, h.data() + sent, 1, MSG_NOSIGNAL) != 1) break;  // reset: closed
    ++sent;
    pollfd p{fd, POLLIN, 0};
    char byte = 0;
    closed = ::poll(&p, 1, 100) > 0 && ::recv(fd, &byte, 1, MSG_DONTWAIT) <= 0;
    if (sent == 3) {  // meanwhile a member is served
      TcpStore member("127.0.0.1", server.port(), false, Milliseconds(10'000), token);
      member.set("during", "trickle");
      CHECK(member.get("during") == "trickle");
    }
  }
  const auto elapsed = Clock::now() - start;
  CHECK(sent < h.size());
  CHECK(elapsed >= Milliseconds(800));  // not before its deadline (1 s)...
  // ...and ended by it: 10x the deadline, where a server without one would serve the trickle
  // byte by byte for the whole header (minutes at one byte per 100 ms poll).
  CHECK(elapsed < Milliseconds(10'000));
  ::close(fd);
  CHECK(server.get("during") == "trickle");
}
