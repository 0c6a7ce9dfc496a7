// The rendezvous store under hostile input: malformed frames sent over raw sockets must close
// only their own connection, never the server (which runs inside rank 0), and never make it
// allocate what a length field claims. Also: strict ADD, clamped timeouts, the job token, and
// the interface the server listens on.
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <thread>

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

const std::string kToken = job_token_from_env();

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
