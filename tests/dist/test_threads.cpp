// The collectives on the threads backend: ranks are threads of this test, so results of all
// ranks can be compared byte for byte. Rank functions report with RG_CHECK (doctest's
// asserts stay on the main thread).
#include <doctest/doctest.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "dist/threads_group.h"
#include "tests/dist/dist_test_util.h"
#include "tests/dist/threads_allreduce.h"

using namespace rg;
using namespace rg::dist;
using namespace rg::dist::test;

namespace {

std::vector<int64_t> lengths_for(int world) {
  return {0, 1, world - 1, world, world + 1, 1000, (1 << 20) + 3};
}

}  // namespace

TEST_CASE("ring all-reduce equals the f64 reference and is bit-identical on every rank") {
  for (int world = 1; world <= 8; ++world) {
    for (DType dtype : kAllDtypes) {
      for (CombineOp op : {CombineOp::sum, CombineOp::avg, CombineOp::max}) {
        if (!supports(dtype, op)) continue;
        for (int64_t length : lengths_for(world)) {
          // The large length once per dtype and world for sum, once per world otherwise.
          if (length > 1000 && op != CombineOp::sum && dtype != DType::f32) continue;
          CAPTURE(world);
          CAPTURE(length);
          INFO(dtype_name(dtype), " ", combine_op_name(op));
          std::vector<std::vector<char>> results;
          REQUIRE_NOTHROW(results = allreduce_on_threads(world, dtype, op, length));
          for (int r = 1; r < world; ++r) CHECK(results[r] == results[0]);
        }
      }
    }
  }
}

TEST_CASE("ring all-reduce gives the same bits run after run, whatever the chunking timing") {
  Options small_chunks;
  small_chunks.chunk_bytes = 4096;
  auto first = allreduce_on_threads(5, DType::f32, CombineOp::sum, 100'003, small_chunks);
  for (int run = 0; run < 3; ++run)
    CHECK(allreduce_on_threads(5, DType::f32, CombineOp::sum, 100'003, small_chunks) == first);
  // A different chunk size must not change the order of additions either.
  CHECK(allreduce_on_threads(5, DType::f32, CombineOp::sum, 100'003) == first);
}

TEST_CASE("broadcast copies the root's bytes to every rank, for every root") {
  for (int world : {1, 2, 3, 8}) {
    for (int64_t length : {int64_t(0), int64_t(1), int64_t(world + 1), int64_t(300'001)}) {
      for (int root = 0; root < world; root += 2) {
        CAPTURE(world);
        CAPTURE(length);
        CAPTURE(root);
        CHECK_NOTHROW(run_threads(world, [&](ProcessGroup& pg) {
          Tensor t = make_input(DType::f64, length, pg.rank());
          pg.broadcast(t, root)->wait();
          RG_CHECK(bytes_of(t) == bytes_of(make_input(DType::f64, length, root)), "rank ",
                   pg.rank(), " did not get root ", root, "'s bytes");
        }));
      }
    }
  }
}

TEST_CASE("allgather concatenates every rank's input in rank order") {
  for (int world : {1, 2, 3, 4, 8}) {
    for (DType dtype : {DType::f32, DType::bf16, DType::i64}) {
      for (int64_t length : {int64_t(0), int64_t(1), int64_t(7), int64_t(100'003)}) {
        CAPTURE(world);
        CAPTURE(length);
        CHECK_NOTHROW(run_threads(world, [&](ProcessGroup& pg) {
          Tensor in = make_input(dtype, length, pg.rank());
          Tensor out = empty({world, length}, dtype);
          pg.allgather(out, in)->wait();
          for (int r = 0; r < world; ++r) {
            Tensor want = make_input(dtype, length, r);
            RG_CHECK(std::memcmp(static_cast<char*>(out.data_ptr()) + r * want.nbytes(),
                                 want.data_ptr(), want.nbytes()) == 0,
                     "slice of rank ", r, " differs on rank ", pg.rank());
          }
        }));
      }
    }
  }
}

TEST_CASE("reduce_scatter gives rank r the reduction of slice r") {
  for (int world : {1, 2, 3, 5, 8}) {
    for (DType dtype : kAllDtypes) {
      for (CombineOp op : {CombineOp::sum, CombineOp::avg, CombineOp::max}) {
        if (!supports(dtype, op)) continue;
        for (int64_t length : {int64_t(0), int64_t(1), int64_t(world + 1), int64_t(40'000)}) {
          CAPTURE(world);
          CAPTURE(length);
          INFO(dtype_name(dtype), " ", combine_op_name(op));
          CHECK_NOTHROW(run_threads(world, [&](ProcessGroup& pg) {
            Tensor in = make_input(dtype, world * length, pg.rank());
            Tensor out = empty({length}, dtype);
            pg.reduce_scatter(out, in, op)->wait();
            for (int64_t i = 0; i < length; ++i) {
              double want = reference(dtype, op, world, pg.rank() * length + i);
              RG_CHECK(close_enough(dtype, get_element(out, i), want), "rank ", pg.rank(),
                       " element ", i, ": ", get_element(out, i), " != ", want);
            }
            // The input is left as it was.
            RG_CHECK(bytes_of(in) == bytes_of(make_input(dtype, world * length, pg.rank())),
                     "reduce_scatter modified its input");
          }));
        }
      }
    }
  }
}

TEST_CASE("no rank leaves a barrier before every rank has entered it") {
  for (int world : {1, 2, 4, 8}) {
    std::atomic<int> entered{0};
    CHECK_NOTHROW(run_threads(world, [&](ProcessGroup& pg) {
      for (int round = 1; round <= 5; ++round) {
        if (pg.rank() == round % world) std::this_thread::sleep_for(std::chrono::milliseconds(5));
        entered.fetch_add(1);
        pg.barrier()->wait();
        RG_CHECK(entered.load() >= round * world, "rank ", pg.rank(), " left barrier ", round,
                 " early");
        pg.barrier()->wait();
      }
    }));
  }
}

TEST_CASE("send and recv deliver messages per tag in order, whatever the posting order") {
  CHECK_NOTHROW(run_threads(2, [](ProcessGroup& pg) {
    if (pg.rank() == 0) {
      for (int i = 0; i < 3; ++i) {
        Tensor a = make_input(DType::f32, 10 + i, 100 + i);
        Tensor b = make_input(DType::f32, 20 + i, 200 + i);
        pg.send(a, 1, 7)->wait();
        pg.send(b, 1, 8)->wait();
      }
    } else {
      // Receive tag 8 first: the tag-7 messages in front of them are buffered.
      for (int i = 0; i < 3; ++i) {
        Tensor b = empty({20 + i});
        pg.recv(b, 0, 8)->wait();
        RG_CHECK(bytes_of(b) == bytes_of(make_input(DType::f32, 20 + i, 200 + i)), "tag 8 #", i);
      }
      for (int i = 0; i < 3; ++i) {
        Tensor a = empty({10 + i});
        pg.recv(a, 0, 7)->wait();
        RG_CHECK(bytes_of(a) == bytes_of(make_input(DType::f32, 10 + i, 100 + i)), "tag 7 #", i);
      }
    }
  }));
}

TEST_CASE("Work::wait with a timeout returns false while the peer has not sent") {
  CHECK_NOTHROW(run_threads(2, [](ProcessGroup& pg) {
    Tensor t = empty({4});
    if (pg.rank() == 1) {
      auto work = pg.recv(t, 0, 1);
      RG_CHECK(!work->wait(Milliseconds(20)), "recv completed before the send");
      RG_CHECK(!work->is_completed(), "is_completed before the send");
      pg.send(t, 0, 2)->wait();  // lets rank 0 send
      RG_CHECK(work->wait(Milliseconds(5000)), "recv did not complete");
    } else {
      pg.recv(t, 1, 2)->wait();
      pg.send(t, 1, 1)->wait();
    }
  }));
}

TEST_CASE("collectives issued asynchronously complete in order and are counted") {
  CHECK_NOTHROW(run_threads(3, [](ProcessGroup& pg) {
    std::vector<Tensor> buffers;
    std::vector<std::shared_ptr<Work>> works;
    for (int i = 0; i < 6; ++i) {
      buffers.push_back(make_input(DType::f32, 5000 + i, pg.rank(), i));
      works.push_back(pg.allreduce(buffers.back()));
    }
    works.push_back(pg.barrier());
    for (auto& w : works) w->wait();
    for (int i = 0; i < 6; ++i) {
      std::string problem = check_reduction(buffers[i], CombineOp::sum, 3, i);
      RG_CHECK(problem.empty(), problem);
    }
    RG_CHECK(pg.collectives_issued(Collective::allreduce) == 6, "allreduce count");
    RG_CHECK(pg.collectives_issued(Collective::barrier) == 1, "barrier count");
    RG_CHECK(pg.collectives_issued() == 7, "total count");
  }));
}

TEST_CASE("bad arguments are rejected with a clear error") {
  auto groups = make_thread_groups(2);
  ProcessGroup& pg = *groups[0];
  Tensor t = empty({4, 4});
  CHECK_THROWS_WITH_AS(pg.allreduce(make_view(t, {4, 2}, {4, 1}, 0)),
                       doctest::Contains("contiguous"), Error);
  CHECK_THROWS_WITH_AS(pg.allreduce(empty({3}, DType::i32), CombineOp::avg),
                       doctest::Contains("avg of int32"), Error);
  CHECK_THROWS_WITH_AS(pg.allgather(empty({3}), empty({2})),
                       doctest::Contains("expected world size"), Error);
  CHECK_THROWS_WITH_AS(pg.send(t, 0), doctest::Contains("cannot send to rank 0"), Error);
  CHECK_THROWS_AS(pg.broadcast(t, 5), Error);
}

TEST_CASE("a collective called with another count or kind on one rank is reported") {
  Options options;
  options.timeout = Milliseconds(3000);
  try {
    run_threads(
        3,
        [](ProcessGroup& pg) {
          Tensor t = make_input(DType::f32, pg.rank() == 1 ? 99 : 100, pg.rank());
          pg.allreduce(t)->wait();
        },
        options);
    FAIL("no error");
  } catch (const Error& e) {
    std::string what = e.what();
    CHECK(what.find("mismatched collectives") != std::string::npos);
    CHECK(what.find("99 float32") != std::string::npos);
  }
  try {
    run_threads(
        2,
        [](ProcessGroup& pg) {
          Tensor t = make_input(DType::f32, 10, pg.rank());
          if (pg.rank() == 0)
            pg.allreduce(t)->wait();
          else
            pg.broadcast(t, 0)->wait();
        },
        options);
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("broadcast #1") != std::string::npos);
  }
}

TEST_CASE("ranks that broadcast from different roots fail as mismatched collectives") {
  Options options;
  options.timeout = Milliseconds(20000);  // a mismatch, never the timeout, must end it
  for (int world : {2, 3}) {
    // Every rank its own root (each would only send), then ranks 0 and 1 both roots (2 listens).
    for (bool all_roots : {true, false}) {
      if (world == 2 && !all_roots) continue;
      CAPTURE(world);
      CAPTURE(all_roots);
      std::atomic<int> returned{0};
      try {
        run_threads(
            world,
            [&](ProcessGroup& pg) {
              Tensor t = make_input(DType::f32, 10, pg.rank());
              const int root = all_roots ? pg.rank() : std::min(pg.rank(), 1);
              pg.broadcast(t, root)->wait();
              returned++;
            },
            options);
        FAIL("no error");
      } catch (const Error& e) {
        INFO(e.what());
        CHECK(std::string(e.what()).find("mismatched collectives") != std::string::npos);
        CHECK(std::string(e.what()).find("from root") != std::string::npos);
      }
      CHECK(returned < world);
    }
  }
}

TEST_CASE("a rank that never arrives makes the others fail within the timeout, naming it") {
  Options options;
  options.timeout = Milliseconds(1000);
  auto start = Clock::now();
  std::atomic<int> errors_naming_rank2{0};
  CHECK_THROWS_AS(run_threads(
                      4,
                      [&](ProcessGroup& pg) {
                        if (pg.rank() == 2) {
                          std::this_thread::sleep_for(std::chrono::milliseconds(3500));
                          return;
                        }
                        Tensor t = make_input(DType::f32, 1000, pg.rank());
                        try {
                          pg.allreduce(t)->wait();
                        } catch (const Error& e) {
                          if (std::string(e.what()).find("waiting for rank 2") != std::string::npos)
                            errors_naming_rank2.fetch_add(1);
                          throw;
                        }
                      },
                      options),
                  Error);
  CHECK(errors_naming_rank2.load() == 3);
  // 10x the 1 s timeout: what is checked is that the timeout ends the wait (a wait without
  // one never returns), not how fast.
  CHECK(Clock::now() - start < std::chrono::seconds(10));
}

TEST_CASE("a rank that throws makes the others fail at once, naming it") {
  // Longer than meson's limit for this test: only the failing rank's abort can end the wait
  // (a wait for the timeout fails the test as a TIMEOUT), and the message says it did.
  Options options;
  options.timeout = Milliseconds(3'600'000);
  try {
    run_threads(
        3,
        [](ProcessGroup& pg) {
          if (pg.rank() == 1) RG_FAIL("out of memory in the forward pass");
          Tensor t = make_input(DType::f32, 100, pg.rank());
          pg.allreduce(t)->wait();
        },
        options);
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("rank 1: out of memory") != std::string::npos);
  }
}

TEST_CASE("a failed group fails every later collective with the first error") {
  auto groups = make_thread_groups(2);
  groups[1]->abort("test abort");
  Tensor t = make_input(DType::f32, 10, 0);
  auto work = groups[0]->allreduce(t);
  CHECK_THROWS_WITH_AS(work->wait(), doctest::Contains("rank 1 aborted: test abort"), Error);
  CHECK_THROWS_WITH_AS(groups[0]->allreduce(t)->wait(), doctest::Contains("test abort"), Error);
}

// The direct exchange (Options::direct_bytes and below) and the ring (above) each give the
// reference and identical bits on every rank, on both sides of the crossover and at it.
TEST_CASE("all-reduce at the direct-exchange crossover: both algorithms are exact and identical") {
  for (int world = 1; world <= 5; ++world) {
    for (DType dtype : kAllDtypes) {
      for (CombineOp op : {CombineOp::sum, CombineOp::avg, CombineOp::max}) {
        if (!supports(dtype, op)) continue;
        Options options;
        options.direct_bytes = 64 * itemsize(dtype);
        for (int64_t length : {int64_t(63), int64_t(64), int64_t(65)}) {
          CAPTURE(world);
          CAPTURE(length);
          INFO(dtype_name(dtype), " ", combine_op_name(op));
          std::vector<std::vector<char>> results;
          REQUIRE_NOTHROW(results = allreduce_on_threads(world, dtype, op, length, options));
          for (int r = 1; r < world; ++r) CHECK(results[r] == results[0]);
        }
      }
    }
  }
}

TEST_CASE("direct-exchange all-reduce gives the same bits run after run, at every size") {
  Options always_direct;
  always_direct.direct_bytes = size_t(1) << 30;
  for (int64_t length : {int64_t(0), int64_t(1), int64_t(1000), int64_t(100'003)}) {
    CAPTURE(length);
    auto first = allreduce_on_threads(5, DType::f32, CombineOp::sum, length, always_direct);
    for (int r = 1; r < 5; ++r) CHECK(first[r] == first[0]);
    CHECK(allreduce_on_threads(5, DType::f32, CombineOp::sum, length, always_direct) == first);
  }
  Options never_direct;
  never_direct.direct_bytes = 0;  // the ring even for barriers and single elements
  auto ring = allreduce_on_threads(3, DType::f64, CombineOp::sum, 1, never_direct);
  CHECK(ring[1] == ring[0]);
  CHECK(ring[2] == ring[0]);
}

TEST_CASE("RG_DIST_DIRECT_BYTES sets the default crossover; a bad value is named") {
  setenv("RG_DIST_DIRECT_BYTES", "4096", 1);
  CHECK(default_direct_bytes() == 4096);
  CHECK(Options().direct_bytes == 4096);
  setenv("RG_DIST_DIRECT_BYTES", "4K", 1);
  CHECK_THROWS_WITH(default_direct_bytes(), doctest::Contains("RG_DIST_DIRECT_BYTES"));
  unsetenv("RG_DIST_DIRECT_BYTES");
  CHECK(default_direct_bytes() == size_t(32) << 10);
}

// A collective waited at once may run on the waiting thread (when it is next and none runs);
// waits in any order must still see every collective run once, in the order issued.
TEST_CASE("collectives waited out of order or at once complete in issue order") {
  CHECK_NOTHROW(run_threads(3, [](ProcessGroup& pg) {
    std::vector<Tensor> buffers;
    std::vector<std::shared_ptr<Work>> works;
    for (int i = 0; i < 4; ++i) {
      buffers.push_back(make_input(DType::f32, 100 + 20000 * i, pg.rank(), i));
      works.push_back(pg.allreduce(buffers.back()));
    }
    for (int i : {3, 1, 0, 2}) works[i]->wait();
    for (int i = 4; i < 10; ++i) {  // each waited at once: the inline path
      buffers.push_back(make_input(DType::f32, 7 * i, pg.rank(), i));
      pg.allreduce(buffers.back())->wait();
      pg.barrier()->wait();
    }
    for (int i = 0; i < 10; ++i) {
      std::string problem = check_reduction(buffers[i], CombineOp::sum, 3, i);
      RG_CHECK(problem.empty(), problem);
    }
  }));
}

TEST_CASE("the communication thread runs under SCHED_BATCH (its wake-ups do not preempt)") {
  int comm_threads = 0, batch = 0;
  run_threads(1, [&](ProcessGroup&) {
    for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
      std::ifstream comm(task.path() / "comm");
      std::string name;
      std::getline(comm, name);
      if (name != "rg-comm") continue;
      ++comm_threads;
      if (sched_getscheduler(std::stoi(task.path().filename().string())) == SCHED_BATCH) ++batch;
    }
  });
  CHECK(comm_threads >= 1);
  CHECK(batch == comm_threads);
}

// max(-0, +0) and max(+0, -0), or max with a NaN, differ by operand order: every rank must
// reduce in the same order to end with the same bits (a 2-rank "add the peer's input to
// mine" shortcut would not).
TEST_CASE("all-reduce of signed zeros and NaNs gives the same bits on every rank") {
  for (size_t direct : {size_t(0), size_t(1) << 20}) {
    for (int world : {2, 3}) {
      for (CombineOp op : {CombineOp::max, CombineOp::sum}) {
        CAPTURE(direct);
        CAPTURE(world);
        std::vector<std::vector<char>> results(world);
        Options options;
        options.direct_bytes = direct;
        run_threads(
            world,
            [&](ProcessGroup& pg) {
              const float nan = std::nanf(pg.rank() == 0 ? "1" : "2");  // distinct payloads
              Tensor t = empty({4}, DType::f32);
              float* x = t.data<float>();
              x[0] = pg.rank() % 2 ? 0.0f : -0.0f;
              x[1] = pg.rank() % 2 ? -0.0f : 0.0f;
              x[2] = pg.rank() == 0 ? nan : 1.0f;
              x[3] = nan;
              pg.allreduce(t, op)->wait();
              results[pg.rank()] = bytes_of(t);
            },
            options);
        for (int r = 1; r < world; ++r) CHECK(results[r] == results[0]);
      }
    }
  }
}

TEST_CASE("threads ranks reach each other in memory, and say so") {
  run_threads(2, [](ProcessGroup& pg) {
    const std::string want = pg.rank() == 0 ? "0 self, 1 memory" : "0 memory, 1 self";
    RG_CHECK(pg.describe_links() == want, "links ", pg.describe_links(), ", expected ", want);
  });
}
