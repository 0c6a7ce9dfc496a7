// The lean path of small all-reduces and barriers (dist/lean_collective.cpp): which
// collectives take it, that its results are those of the queued direct exchange bit for bit,
// and that a lean collective completes however it is waited for (at once, polled, with a
// timeout, behind later collectives, behind a user's message or a full ring) or fails
// cleanly when its group goes away first.
#include <doctest/doctest.h>

#include <chrono>
#include <thread>

#include "dist/threads_group.h"
#include "tests/dist/dist_test_util.h"

using namespace rg;
using namespace rg::dist;
using namespace rg::dist::test;

namespace {

void expect_reduced(const Tensor& t, CombineOp op, int world, uint64_t seed) {
  std::string problem = check_reduction(t, op, world, seed);
  RG_CHECK(problem.empty(), problem);
}

// Issues a ring all-reduce of `blocker`, then `small`, so that on every rank but the last
// `small` is issued while the ring one is still queued: rank r + 1 issues anything only
// after rank r has issued both (a token passed along by send/recv), and the ring all-reduce
// cannot finish before every rank has issued it. Waits for both.
void issue_behind_queued(ProcessGroup& pg, const Tensor& blocker, const Tensor& small,
                         CombineOp op) {
  Tensor token = empty({1});
  if (pg.rank() > 0) pg.recv(token, pg.rank() - 1, 11)->wait();
  auto first = pg.allreduce(blocker);
  auto second = pg.allreduce(small, op);
  if (pg.rank() + 1 < pg.size()) pg.send(token, pg.rank() + 1, 11)->wait();
  second->wait();
  first->wait();
}

bool is_last(const ProcessGroup& pg) { return pg.rank() + 1 == pg.size(); }

}  // namespace

TEST_CASE("small f32/f64 all-reduces and barriers take the lean path, others the queue") {
  for (int world : {2, 3}) {
    CAPTURE(world);
    Options options;
    options.direct_bytes = 4096;
    CHECK_NOTHROW(run_threads(
        world,
        [&](ProcessGroup& pg) {
          uint64_t lean = 0;
          auto expect_lean = [&](bool taken, const char* what) {
            lean += taken;
            RG_CHECK(pg.lean_collectives_issued() == lean, what, ": lean path ",
                     taken ? "not taken" : "taken");
          };
          for (DType dtype : {DType::f32, DType::f64, DType::bf16, DType::i32}) {
            const int64_t fits = 4096 / itemsize(dtype);
            for (int64_t length : {int64_t(0), int64_t(1), fits, fits + 1}) {
              Tensor t = make_input(dtype, length, pg.rank(), length);
              pg.allreduce(t, CombineOp::sum)->wait();
              expect_reduced(t, CombineOp::sum, world, length);
              const bool floating = dtype == DType::f32 || dtype == DType::f64;
              expect_lean(length <= fits && (floating || length == 0), dtype_name(dtype));
            }
          }
          pg.barrier()->wait();
          expect_lean(true, "barrier");
          // Issued behind a queued collective, a small one is queued too.
          Tensor big = make_input(DType::f32, 10000, pg.rank(), 1);
          Tensor small = make_input(DType::f32, 10, pg.rank(), 2);
          issue_behind_queued(pg, big, small, CombineOp::sum);
          if (!is_last(pg)) expect_lean(false, "behind a queued collective");
          expect_reduced(big, CombineOp::sum, world, 1);
          expect_reduced(small, CombineOp::sum, world, 2);
        },
        options));
  }
}

TEST_CASE("the lean path gives the bits of the queued direct exchange, for every op") {
  for (int world : {2, 3}) {
    for (DType dtype : {DType::f32, DType::f64}) {
      for (CombineOp op : {CombineOp::sum, CombineOp::avg, CombineOp::max}) {
        CAPTURE(world);
        INFO(dtype_name(dtype), " ", combine_op_name(op));
        std::vector<std::vector<char>> lean(world), queued(world);
        CHECK_NOTHROW(run_threads(world, [&](ProcessGroup& pg) {
          Tensor a = make_input(dtype, 777, pg.rank(), 9);
          const uint64_t before = pg.lean_collectives_issued();
          pg.allreduce(a, op)->wait();
          RG_CHECK(pg.lean_collectives_issued() == before + 1, "not lean");
          lean[pg.rank()] = bytes_of(a);
          Tensor blocker = make_input(DType::f32, 20000, pg.rank());
          Tensor b = make_input(dtype, 777, pg.rank(), 9);
          issue_behind_queued(pg, blocker, b, op);
          if (!is_last(pg))
            RG_CHECK(pg.lean_collectives_issued() == before + 1, "queued one went lean");
          queued[pg.rank()] = bytes_of(b);
          expect_reduced(b, op, world, 9);
        }));
        for (int r = 0; r < world; ++r) {
          CHECK(lean[r] == queued[0]);
          CHECK(queued[r] == queued[0]);
        }
      }
    }
  }
}

TEST_CASE("a lean collective completes polled, with a timeout, or behind later collectives") {
  CHECK_NOTHROW(run_threads(3, [](ProcessGroup& pg) {
    Tensor polled = make_input(DType::f32, 5, pg.rank(), 1);
    auto work = pg.allreduce(polled);
    while (!work->is_completed()) std::this_thread::yield();
    work->wait();
    expect_reduced(polled, CombineOp::sum, 3, 1);

    Tensor timed = make_input(DType::f64, 6, pg.rank(), 2);
    work = pg.allreduce(timed, CombineOp::max);
    while (!work->wait(Milliseconds(1))) {
    }
    expect_reduced(timed, CombineOp::max, 3, 2);

    // Waited last, after a ring all-reduce, a barrier and another small one issued behind it.
    Tensor a = make_input(DType::f32, 7, pg.rank(), 3);
    Tensor b = make_input(DType::f32, 50000, pg.rank(), 4);
    Tensor c = make_input(DType::f32, 8, pg.rank(), 5);
    auto wa = pg.allreduce(a, CombineOp::avg);
    auto wb = pg.allreduce(b);
    auto wbar = pg.barrier();
    auto wc = pg.allreduce(c);
    wc->wait();
    wb->wait();
    wbar->wait();
    wa->wait();
    expect_reduced(a, CombineOp::avg, 3, 3);
    expect_reduced(b, CombineOp::sum, 3, 4);
    expect_reduced(c, CombineOp::sum, 3, 5);
  }));
}

TEST_CASE("a lean collective behind a user's message or a full ring still completes") {
  CHECK_NOTHROW(run_threads(2, [](ProcessGroup& pg) {
    const int peer = 1 - pg.rank();
    // A small message in front of rank 0's frame: rank 1 finds it first in the stream.
    Tensor note = make_input(DType::f32, 10, 0, 6);
    Tensor t = make_input(DType::f32, 4, pg.rank(), 7);
    if (pg.rank() == 0) pg.send(note, peer, 3)->wait();
    pg.allreduce(t)->wait();
    expect_reduced(t, CombineOp::sum, 2, 7);
    if (pg.rank() == 1) {
      Tensor got = empty({10});
      pg.recv(got, peer, 3)->wait();
      RG_CHECK(bytes_of(got) == bytes_of(note), "the user's message changed");
    }
    // 2 MiB (twice the threads backend's ring) still going out when rank 0 issues the
    // all-reduce: its frame waits behind them, so it cannot be written whole.
    Tensor bulk = make_input(DType::f32, 1 << 19, 0, 8);
    Tensor u = make_input(DType::f64, 3, pg.rank(), 9);
    if (pg.rank() == 0) {
      auto sending = pg.send(bulk, peer, 4);
      pg.allreduce(u)->wait();
      sending->wait();
    } else {
      pg.allreduce(u)->wait();
      Tensor got = empty({1 << 19});
      pg.recv(got, peer, 4)->wait();
      RG_CHECK(bytes_of(got) == bytes_of(bulk), "the bulk message changed");
    }
    expect_reduced(u, CombineOp::sum, 2, 9);
  }));
}

TEST_CASE("a lean collective its group outlives fails naming the destroyed group") {
  auto groups = make_thread_groups(2);
  Tensor t0 = make_input(DType::f32, 3, 0), t1 = make_input(DType::f32, 3, 1);
  auto w0 = groups[0]->allreduce(t0);
  auto w1 = groups[1]->allreduce(t1);
  CHECK(groups[0]->lean_collectives_issued() == 1);
  groups.clear();  // neither was waited for
  CHECK_THROWS_WITH_AS(w0->wait(), doctest::Contains("destroyed"), Error);
  CHECK_THROWS_WITH_AS(w1->wait(), doctest::Contains("destroyed"), Error);
  CHECK(w0->is_completed());
}

TEST_CASE("a rank that never reaches a lean barrier is named by the one waiting in it") {
  Options options;
  options.timeout = Milliseconds(300);
  std::string error;
  try {
    run_threads(
        2,
        [&](ProcessGroup& pg) {
          if (pg.rank() == 1) {
            std::this_thread::sleep_for(Milliseconds(1500));
            return;
          }
          pg.barrier()->wait();
        },
        options);
  } catch (const std::exception& e) {
    error = e.what();
  }
  CHECK(error.find("barrier") != std::string::npos);
  CHECK(error.find("rank 1") != std::string::npos);
}

// Lean works are reused once no one holds them (CollectiveScheduler::recycled_lean): one still held
// is never reused under its holder, and a reused one reports its own collective.
TEST_CASE("a lean work still held is not reused; released ones are, with their own results") {
  CHECK_NOTHROW(run_threads(2, [](ProcessGroup& pg) {
    Tensor a = make_input(DType::f32, 8, pg.rank(), 1);
    auto held = pg.allreduce(a);
    held->wait();
    Tensor b = make_input(DType::f32, 8, pg.rank(), 2);
    auto next = pg.allreduce(b);
    RG_CHECK(next.get() != held.get(), "a held work was reused");
    RG_CHECK(held->is_completed(), "the held work was rearmed under its holder");
    next->wait();
    expect_reduced(a, CombineOp::sum, 2, 1);
    expect_reduced(b, CombineOp::sum, 2, 2);
    held.reset();
    next.reset();
    const Work* previous = nullptr;
    for (uint64_t seed = 3; seed < 40; ++seed) {  // released at once: the spare comes back
      Tensor t = make_input(DType::f64, 5, pg.rank(), seed);
      auto work = seed % 2 ? pg.allreduce(t, CombineOp::max) : pg.barrier();
      work->wait();
      if (seed % 2) expect_reduced(t, CombineOp::max, 2, seed);
      if (previous) RG_CHECK(work.get() == previous, "a released work was not reused");
      previous = work.get();
    }
  }));
}
