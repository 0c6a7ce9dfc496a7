// The idle-wait policy (dist/idle_wait.h): when waiters yield at once instead of spinning,
// RG_DIST_IDLE_WAIT's values checked, and every all-reduce path giving the same bits whether
// its waits spin or yield (threads and tcp ranks, more ranks than this machine may have cores).
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

#include "dist/idle_wait.h"
#include "dist/store.h"
#include "dist/tcp_group.h"
#include "tests/dist/process_util.h"
#include "tests/dist/threads_allreduce.h"

using namespace rg;
using namespace rg::dist;
using namespace rg::dist::test;

TEST_CASE("waiters yield at once only where the ranks of a host outnumber its cores") {
  CHECK_FALSE(yields_at_once(IdleWait::automatic, 2, 2));
  CHECK_FALSE(yields_at_once(IdleWait::automatic, 1, 1));
  CHECK(yields_at_once(IdleWait::automatic, 3, 2));
  CHECK(yields_at_once(IdleWait::automatic, 8, 2));
  CHECK(yields_at_once(IdleWait::yield_at_once, 1, 64));
  CHECK_FALSE(yields_at_once(IdleWait::spin_first, 64, 1));
  CHECK(cores_at_load() >= 1);
}

TEST_CASE("RG_DIST_IDLE_WAIT is auto, spin or yield; another value is named") {
  const char* given = std::getenv("RG_DIST_IDLE_WAIT");
  const std::string saved = given ? given : "";
  for (const char* bad : {"2", "Spin", "yield_at_once", "busy"}) {
    CAPTURE(bad);
    setenv("RG_DIST_IDLE_WAIT", bad, 1);
    CHECK_THROWS_WITH_AS(default_idle_wait(),
                         doctest::Contains(str("RG_DIST_IDLE_WAIT='", bad, "'").c_str()), Error);
    CHECK_THROWS_WITH_AS(Options(), doctest::Contains("expected auto, spin or yield"), Error);
  }
  setenv("RG_DIST_IDLE_WAIT", "spin", 1);
  CHECK(default_idle_wait() == IdleWait::spin_first);
  setenv("RG_DIST_IDLE_WAIT", "yield", 1);
  CHECK(Options().idle_wait == IdleWait::yield_at_once);
  setenv("RG_DIST_IDLE_WAIT", "auto", 1);
  CHECK(default_idle_wait() == IdleWait::automatic);
  unsetenv("RG_DIST_IDLE_WAIT");
  CHECK(default_idle_wait() == IdleWait::automatic);
  if (given) setenv("RG_DIST_IDLE_WAIT", saved.c_str(), 1);
}

TEST_CASE("thread ranks that yield at once reduce to the same bits as ranks that spin") {
  // 5 ranks: the direct exchange (1 KiB and 16 KiB), the ring (1 MiB), odd segments.
  for (int64_t length : {int64_t(256), int64_t(4096), int64_t(1) << 18}) {
    CAPTURE(length);
    Options spin, yield;
    spin.idle_wait = IdleWait::spin_first;
    yield.idle_wait = IdleWait::yield_at_once;
    const auto spun = allreduce_on_threads(5, DType::f32, CombineOp::sum, length, spin);
    const auto yielded = allreduce_on_threads(5, DType::f32, CombineOp::sum, length, yield);
    for (int r = 0; r < 5; ++r) CHECK(yielded[r] == spun[r]);
  }
}

TEST_CASE("tcp ranks that yield at once give every rank the right sums") {
  StoreProcess server;
  const int port = server.port();
  auto results = run_processes(
      4,
      [&](int rank) {
        Options options;
        options.timeout = Milliseconds(30'000);
        options.idle_wait = IdleWait::yield_at_once;
        options.single_copy_bytes = 0;  // the ring through the shared-memory rings
        auto store = std::make_shared<TcpStore>("127.0.0.1", port, false, options.timeout);
        auto pg = make_tcp_group(store, rank, 4, options);
        for (int64_t length : {int64_t(16), int64_t(8192), int64_t(1) << 18}) {
          Tensor t = make_input(DType::f32, length, rank);
          pg->allreduce(t, CombineOp::sum)->wait();
          const std::string problem = check_reduction(t, CombineOp::sum, 4);
          RG_CHECK(problem.empty(), "length ", length, ": ", problem);
        }
        pg->barrier()->wait();
      },
      std::chrono::seconds(60));
  for (size_t r = 0; r < results.size(); ++r) {
    INFO("rank ", r, ": ", results[r].message);
    CHECK(results[r].status == 0);
    CHECK(!results[r].killed);
  }
}
