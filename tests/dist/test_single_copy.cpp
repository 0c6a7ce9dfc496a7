// The single-copy all-reduce (dist/single_copy_allreduce.cpp) on the threads backend, whose
// ranks load from and store into each other's buffers as processes of one host do through
// their shareable arenas (here without asking the kernel: they share the address space):
// which all-reduces take it, that they give the reference with identical bits on
// every rank and from run to run, on both sides of its crossover and at it, and that ranks
// that refuse such reads all fall back to the ring. Over forked processes: test_tcp.cpp.
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

#include "dist/threads_group.h"
#include "tests/dist/dist_test_util.h"

using namespace rg;
using namespace rg::dist;
using namespace rg::dist::test;

namespace {

constexpr size_t kCrossover = 4096;  // bytes; small, so that the tests stay quick

Options single_copy_from(size_t bytes) {
  Options options;
  options.direct_bytes = 256;
  options.single_copy_bytes = bytes;
  return options;
}

// All-reduces `length` elements on `world` threads; checks the reference on every rank and
// returns each rank's result bytes and how many all-reduces took the single-copy path.
struct Outcome {
  std::vector<std::vector<char>> bytes;
  std::vector<uint64_t> single_copies;
  std::vector<uint64_t> peer_loads;
};
Outcome allreduce_on_threads(int world, DType dtype, CombineOp op, int64_t length,
                             const Options& options, uint64_t seed = 0) {
  Outcome out{std::vector<std::vector<char>>(world), std::vector<uint64_t>(world),
              std::vector<uint64_t>(world)};
  run_threads(
      world,
      [&](ProcessGroup& pg) {
        Tensor t = make_input(dtype, length, pg.rank(), seed);
        pg.allreduce(t, op)->wait();
        std::string problem = check_reduction(t, op, world, seed);
        RG_CHECK(problem.empty(), problem);
        out.bytes[pg.rank()] = bytes_of(t);
        out.single_copies[pg.rank()] = pg.single_copy_counters().collectives;
        out.peer_loads[pg.rank()] = pg.single_copy_counters().peer_buffers_loaded;
      },
      options);
  return out;
}

}  // namespace

TEST_CASE("single-copy all-reduce at its crossover: exact, bit-identical, taken where eligible") {
  for (int world : {2, 3, 4}) {
    for (DType dtype : kAllDtypes) {
      for (CombineOp op : {CombineOp::sum, CombineOp::avg, CombineOp::max}) {
        if (!supports(dtype, op)) continue;
        const int64_t at = kCrossover / itemsize(dtype);
        // 100'003: segments of several 128 KiB chunks (f64), an uneven last one.
        for (int64_t length : {at - 1, at, at + 1, int64_t(100'003)}) {
          CAPTURE(world);
          CAPTURE(length);
          INFO(dtype_name(dtype), " ", combine_op_name(op));
          Outcome got;
          REQUIRE_NOTHROW(
              got = allreduce_on_threads(world, dtype, op, length, single_copy_from(kCrossover)));
          const bool floating = dtype == DType::f32 || dtype == DType::f64 || dtype == DType::bf16;
          const uint64_t expected = length >= at && floating ? 1 : 0;
          for (int r = 0; r < world; ++r) {
            CHECK(got.bytes[r] == got.bytes[0]);
            CHECK(got.single_copies[r] == expected);
            CHECK(got.peer_loads[r] == expected * (world - 1));  // every peer, directly
          }
        }
      }
    }
  }
}

TEST_CASE("single-copy all-reduce gives the same bits run after run") {
  for (int world : {2, 3}) {
    CAPTURE(world);
    auto first = allreduce_on_threads(world, DType::f32, CombineOp::sum, 300'007,
                                      single_copy_from(kCrossover), 5);
    REQUIRE(first.single_copies[0] == 1);
    for (int run = 0; run < 3; ++run)
      CHECK(allreduce_on_threads(world, DType::f32, CombineOp::sum, 300'007,
                                 single_copy_from(kCrossover), 5)
                .bytes == first.bytes);
  }
}

// Each segment is reduced by its owner alone, so even additions whose order matters (signed
// zeros under max, NaN payloads) come out the same on every rank.
TEST_CASE("single-copy all-reduce of signed zeros and NaNs gives the same bits on every rank") {
  std::vector<std::vector<char>> bytes(3);
  run_threads(
      3,
      [&](ProcessGroup& pg) {
        Tensor t = empty({4096});
        float* p = t.data<float>();
        for (int64_t i = 0; i < t.numel(); ++i)
          p[i] = (i + pg.rank()) % 3 == 0 ? -0.0f : (i % 7 == 0 ? std::nanf("") : 0.0f);
        pg.allreduce(t, CombineOp::max)->wait();
        RG_CHECK(pg.single_copy_counters().collectives == 1, "single-copy path not taken");
        bytes[pg.rank()] = bytes_of(t);
      },
      single_copy_from(kCrossover));
  CHECK(bytes[1] == bytes[0]);
  CHECK(bytes[2] == bytes[0]);
}

TEST_CASE("ranks that refuse peer reads agree on the ring, once, and stay exact") {
  Options refuse = single_copy_from(kCrossover);
  refuse.allow_peer_reads = false;
  run_threads(
      3,
      [&](ProcessGroup& pg) {
        for (int64_t length : {int64_t(2000), int64_t(50'001)}) {
          Tensor t = make_input(DType::f64, length, pg.rank(), 3);
          pg.allreduce(t)->wait();
          std::string problem = check_reduction(t, CombineOp::sum, 3, 3);
          RG_CHECK(problem.empty(), problem);
          RG_CHECK(pg.single_copy_counters().peer_reads == PeerReads::refused,
                   "peer reads not refused");
        }
        RG_CHECK(pg.single_copy_counters().collectives == 0, "single-copy path taken");
      },
      refuse);
}

TEST_CASE("single_copy_bytes 0 keeps every all-reduce on the ring, untested") {
  run_threads(
      2,
      [&](ProcessGroup& pg) {
        Tensor t = make_input(DType::f32, 1 << 20, pg.rank());
        pg.allreduce(t)->wait();
        RG_CHECK(pg.single_copy_counters().collectives == 0, "single-copy path taken");
        RG_CHECK(pg.single_copy_counters().peer_reads == PeerReads::untested, "peer reads probed");
      },
      single_copy_from(0));
}

TEST_CASE("RG_DIST_SINGLE_COPY_BYTES and _READ_BYTES set the crossovers; a bad value is named") {
  for (const char* name : {"RG_DIST_SINGLE_COPY_BYTES", "RG_DIST_SINGLE_COPY_READ_BYTES"}) {
    CAPTURE(name);
    const bool reads = std::string(name).find("READ") != std::string::npos;
    auto current = [&] {
      return reads ? default_single_copy_read_bytes() : default_single_copy_bytes();
    };
    setenv(name, "65536", 1);
    CHECK(current() == 65536);
    CHECK((reads ? Options().single_copy_read_bytes : Options().single_copy_bytes) == 65536);
    setenv(name, "-1", 1);
    CHECK_THROWS_WITH(current(),
                      doctest::Contains((std::string(name) + ": expected a whole number").c_str()));
    unsetenv(name);
    CHECK(current() == (reads ? size_t(2) << 20 : size_t(32) << 10));
  }
}
