// The values of the dist environment variables are checked, and an error names the variable
// and the value: RG_DIST_TIMEOUT (finite seconds, above 0, at most 30 days) and RG_DIST_SHM
// (0 or 1).
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

#include "dist/store.h"
#include "dist/tcp_group.h"
#include "tests/dist/process_util.h"

using namespace rg;
using namespace rg::dist;
using namespace rg::dist::test;

namespace {

// Every rank of `n` joins a tcp group (through a store of its own) and runs fn on it.
std::vector<ChildResult> run_group(int n, const std::function<void(ProcessGroup&)>& fn) {
  StoreProcess server;
  const int port = server.port();
  return run_processes(
      n,
      [&](int rank) {
        Options options;
        options.timeout = Milliseconds(30'000);
        auto store = std::make_shared<TcpStore>("127.0.0.1", port, false, options.timeout);
        fn(*make_tcp_group(store, rank, n, options));
      },
      std::chrono::seconds(60));
}

}  // namespace

TEST_CASE("RG_DIST_TIMEOUT must be finite seconds above 0 and at most 30 days") {
  const char* given = std::getenv("RG_DIST_TIMEOUT");
  const std::string saved = given ? given : "";
  for (const char* bad : {"inf", "nan", "1e100", "0", "-1", "abc", "2592001", "5s"}) {
    CAPTURE(bad);
    setenv("RG_DIST_TIMEOUT", bad, 1);
    CHECK_THROWS_WITH_AS(default_timeout(),
                         doctest::Contains(str("RG_DIST_TIMEOUT='", bad, "'").c_str()), Error);
    CHECK_THROWS_WITH_AS(default_timeout(), doctest::Contains("at most 2592000 (30 days)"), Error);
  }
  setenv("RG_DIST_TIMEOUT", "0.5", 1);
  CHECK(default_timeout() == Milliseconds(500));
  setenv("RG_DIST_TIMEOUT", "2592000", 1);
  CHECK(default_timeout() == Milliseconds(int64_t(2592000) * 1000));
  unsetenv("RG_DIST_TIMEOUT");
  CHECK(default_timeout() == Milliseconds(300'000));
  if (given) setenv("RG_DIST_TIMEOUT", saved.c_str(), 1);
}

TEST_CASE("RG_DIST_SHM is 0 or 1: another value fails every rank, naming the variable and value") {
  for (const char* value : {"abc", "2", "yes"}) {
    CAPTURE(value);
    setenv("RG_DIST_SHM", value, 1);
    auto results = run_group(2, [](ProcessGroup&) {});
    unsetenv("RG_DIST_SHM");
    for (const auto& r : results) {
      INFO(r.message);
      CHECK(!r.killed);
      CHECK(r.status == 1);
      CHECK(r.message.find(str("RG_DIST_SHM='", value, "'")) != std::string::npos);
    }
  }
  for (const char* value : {"1", "0", ""}) {
    CAPTURE(value);
    setenv("RG_DIST_SHM", value, 1);
    auto results = run_group(2, [value](ProcessGroup& pg) {
      const std::string link = pg.peer_link(1 - pg.rank());
      const std::string expected = std::string(value) == "0" ? "tcp" : "shm";
      RG_CHECK(link == expected, "RG_DIST_SHM='", value, "': link ", link);
    });
    unsetenv("RG_DIST_SHM");
    for (const auto& r : results) {
      INFO(r.message);
      CHECK(r.status == 0);
    }
  }
}
