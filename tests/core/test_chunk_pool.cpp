// ChunkPool and parallel_for over it: every index is covered exactly once whichever threads
// claim the chunks, nested calls run inline, concurrent callers each get their own workers.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "core/chunk_pool.h"
#include "core/parallel.h"

using namespace rg;

TEST_CASE("ChunkPool covers every index exactly once, job after job") {
  ChunkPool pool;
  std::mt19937 rng(1);
  std::set<std::thread::id> runners;
  for (int job = 0; job < 2000; ++job) {
    const int64_t n = std::uniform_int_distribution<int64_t>(1, 5000)(rng);
    const int threads = 1 + job % 4;
    std::vector<std::atomic<int>> hits(n);
    std::atomic<int> calls{0};
    std::mutex m;
    pool.run(n, threads, threads, [&](int64_t begin, int64_t end) {
      calls.fetch_add(1);
      for (int64_t i = begin; i < end; ++i) hits[i].fetch_add(1);
      std::lock_guard<std::mutex> lock(m);
      runners.insert(std::this_thread::get_id());
    });
    CHECK(calls.load() == std::min<int64_t>(threads, n));
    int64_t wrong = 0;
    for (auto& h : hits) wrong += h.load() != 1;
    REQUIRE(wrong == 0);
  }
  CHECK(runners.size() >= 1);
}

TEST_CASE("parallel_for inside a chunk runs inline; concurrent callers don't interfere") {
  set_num_threads(2);
  std::atomic<int> nested_chunks{0};
  parallel_for(1 << 16, 1, [&](int64_t, int64_t) {
    parallel_for(1 << 16, 1, [&](int64_t b, int64_t e) {
      CHECK(b == 0);
      CHECK(e == 1 << 16);
      nested_chunks.fetch_add(1);
    });
  });
  CHECK(nested_chunks.load() == 2);
  std::vector<std::thread> callers;
  std::vector<int64_t> sums(4, 0);
  for (int t = 0; t < 4; ++t)
    callers.emplace_back([&, t] {
      for (int r = 0; r < 300; ++r) {
        std::atomic<int64_t> sum{0};
        parallel_for(1000, 1, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) sum.fetch_add(i);
        });
        sums[t] += sum.load();
      }
    });
  for (auto& c : callers) c.join();
  for (int t = 0; t < 4; ++t) CHECK(sums[t] == 300 * (999 * 1000 / 2));
}

// A child forked after the pool started its workers has none of them: parallel_for there
// must not wait for them, and exit (which destroys the thread-local pool) must not join them.
TEST_CASE("a forked child runs parallel_for and exits without its parent's workers") {
  const int saved = get_num_threads();
  set_num_threads(2);
  std::atomic<int64_t> parent_sum{0};
  parallel_for(1000, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) parent_sum += i;
  });
  REQUIRE(parent_sum == 999 * 1000 / 2);
  pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    std::atomic<int64_t> sum{0};
    for (int job = 0; job < 20; ++job)
      parallel_for(1000, 1, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) sum += i;
      });
    std::exit(sum == 20 * (999 * 1000 / 2) ? 0 : 3);  // runs the thread-local pool's destructor
  }
  int status = 0;
  pid_t done = 0;
  for (int i = 0; i < 600 && done == 0; ++i) {  // up to a minute: a hang, not a timing check
    done = waitpid(child, &status, WNOHANG);
    if (done == 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (done == 0) {
    kill(child, SIGKILL);
    waitpid(child, &status, 0);
  }
  set_num_threads(saved);
  CHECK_MESSAGE(done == child, "the forked child hung");
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}
