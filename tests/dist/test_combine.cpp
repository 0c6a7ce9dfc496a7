// Folding received bytes into a buffer (dist/combine_bytes.h), the ring all-reduce's
// reduce-scatter receive: the same bits as reduce_into whatever pieces the bytes arrive in
// and wherever they sit, a ring read in place across its wrap, and a whole all-reduce over
// rings so small that elements are split between the end and the start of the ring.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <thread>

#include "dist/buffer_math.h"
#include "dist/byte_stream.h"
#include "dist/combine_bytes.h"
#include "dist/message_transport.h"
#include "dist/threads_group.h"
#include "tests/dist/dist_test_util.h"
#include "tests/dist/test_ring_memory.h"

using namespace rg;
using namespace rg::dist;
using namespace rg::dist::test;

namespace {

// n elements of mixed sign, with a NaN, signed zeros and infinities for max.
Tensor special_input(DType dtype, int64_t n, int rank) {
  Tensor t = make_input(dtype, n, rank);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const double specials[] = {nan, rank ? 0.0 : -0.0, rank ? -0.0 : 0.0, inf, -inf};
  // (Within the tensor: element 3 * i + rank of a 3-element one was written past its end, in
  // the allocator's rounded-up block, until the sanitizer build poisoned that tail.)
  for (int64_t i = 0; i < 5 && 3 * i + rank < n; ++i) set_element(t, 3 * i + rank, specials[i]);
  return t;
}

// Rings of `capacity` bytes: 0 data 0 -> 1, 1 data 1 -> 0, 2 control 0 -> 1, 3 control 1 -> 0.
struct RingPair {
  TestRings rings;
  explicit RingPair(size_t capacity) : rings(4, capacity) {}
  std::vector<PeerLink> links(int rank) {
    std::vector<PeerLink> out(2);
    const int peer = 1 - rank;
    out[peer].data = rings.stream(rank, peer);
    out[peer].control = rings.stream(2 + rank, 2 + peer);
    return out;
  }
};

}  // namespace

TEST_CASE("ByteCombiner gives reduce_into's bits from pieces of any length at any address") {
  for (DType dtype : {DType::f32, DType::f64}) {
    for (CombineOp op : {CombineOp::sum, CombineOp::max}) {
      INFO(dtype_name(dtype), " ", combine_op_name(op));
      const int64_t n = 301;
      Tensor want = special_input(dtype, n, 0), incoming = special_input(dtype, n, 1);
      Tensor got = want.clone();
      reduce_into(want, incoming, op);
      // The incoming bytes 3 bytes off any alignment, handed over 1, 2, ..., 13 bytes at a time.
      std::vector<char> shifted(incoming.nbytes() + 3);
      std::memcpy(shifted.data() + 3, incoming.data_ptr(), incoming.nbytes());
      ByteCombiner combiner{static_cast<char*>(got.data_ptr()), dtype, op};
      size_t at = 0;
      for (size_t piece = 1; at < incoming.nbytes(); piece = piece % 13 + 1) {
        const size_t k = std::min(piece, incoming.nbytes() - at);
        combiner.take(shifted.data() + 3 + at, k);
        at += k;
      }
      CHECK(combiner.folded == incoming.nbytes());
      CHECK(combiner.carry_len == 0);
      CHECK(bytes_of(got) == bytes_of(want));
    }
  }
  CHECK_FALSE(combines_bytes(DType::bf16));
  CHECK_FALSE(combines_bytes(DType::i64));
}

TEST_CASE("a ring hands its bytes over in place, in order, across its wrap") {
  RingPair pair(64);
  auto writer = pair.rings.stream(0, 1);
  auto reader = pair.rings.stream(1, 0);
  char first[40], second[50];
  for (int i = 0; i < 40; ++i) first[i] = char(i);
  for (int i = 0; i < 50; ++i) second[i] = char(100 + i);
  std::vector<char> got;
  std::vector<size_t> pieces;
  auto take = [&](const char* bytes, size_t n) {
    got.insert(got.end(), bytes, bytes + n);
    pieces.push_back(n);
  };
  REQUIRE(writer->write_some(first, 40) == 40);
  CHECK(reader->read_with(1000, take) == 40);
  REQUIRE(writer->write_some(second, 50) == 50);  // 24 bytes to the end, 26 from the start
  CHECK(reader->read_with(1000, take) == 50);
  CHECK(pieces == std::vector<size_t>{40, 24, 26});
  CHECK(std::vector<char>(got.begin() + 40, got.end()) == std::vector<char>(second, second + 50));
  CHECK(reader->read_with(1000, take) == 0);  // nothing yet
  writer->close();
  CHECK_THROWS_AS(reader->read_with(1000, take), PeerClosed);
}

TEST_CASE("all-reduce over rings that split elements across their wrap equals the threads run") {
  // 102-byte rings: after a 40-byte header 62 bytes fit before the wrap, so floats and
  // doubles are cut in two there; the bf16 all-reduce of 3 in between shifts the positions.
  RingPair pair(102);
  Options options;
  options.timeout = Milliseconds(60'000);
  options.direct_bytes = 0;  // always the ring
  std::shared_ptr<ProcessGroup> group[2];
  for (int r = 0; r < 2; ++r)
    group[r] = make_message_group("test", r, 2, options, pair.links(r), nullptr);
  const DType dtypes[] = {DType::f32, DType::bf16, DType::f64, DType::f32};
  const int64_t lengths[] = {1001, 3, 333, 7};
  std::vector<std::vector<char>> got[2];
  auto rank_body = [&](int r) {
    for (int k = 0; k < 4; ++k) {
      Tensor t = special_input(dtypes[k], lengths[k], r);
      group[r]->allreduce(t, k == 2 ? CombineOp::max : CombineOp::sum)->wait();
      got[r].push_back(bytes_of(t));
    }
  };
  std::thread other(rank_body, 1);
  rank_body(0);
  other.join();
  std::vector<std::vector<char>> want[2];
  run_threads(
      2,
      [&](ProcessGroup& pg) {
        for (int k = 0; k < 4; ++k) {
          Tensor t = special_input(dtypes[k], lengths[k], pg.rank());
          pg.allreduce(t, k == 2 ? CombineOp::max : CombineOp::sum)->wait();
          want[pg.rank()].push_back(bytes_of(t));
        }
      },
      options);
  CHECK(got[0] == want[0]);
  CHECK(got[1] == want[1]);
  CHECK(got[0] == got[1]);
}
