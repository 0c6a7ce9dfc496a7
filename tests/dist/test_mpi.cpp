// The mpi backend, run by mpirun (-np 2 and -np 3, tests/dist/meson.build): every rank runs
// these cases in the same order, each on a group of its own. Inputs are small integers that
// depend on the rank, so every sum, mean and maximum is exact in every dtype and each rank
// checks its result against the value computed here. The failure cases check the DistError
// each rank gets: its kind and the rank it blames.
#include <doctest/doctest.h>

#include <chrono>
#include <thread>

#include "core/shareable_host_memory.h"
#include "dist/init.h"
#include "ops/ops.h"
#include "tests/dist/dist_test_util.h"

using namespace rg;
using namespace rg::dist;
using namespace rg::dist::test;

namespace {

std::shared_ptr<ProcessGroup> mpi_group(int timeout_ms = 60'000) {
  Options options;
  options.timeout = Milliseconds(timeout_ms);
  return init_process_group("mpi", options);
}

// Rank r's element i: in [-2, 2 * size]; sums stay far below 256 (exact in bf16).
double input(int rank, int64_t i) { return static_cast<double>(i % 5 - 2 + 2 * rank); }

double expected(CombineOp op, int size, int64_t i) {
  const double base = static_cast<double>(i % 5 - 2);
  switch (op) {
    case CombineOp::sum:
      return size * base + size * (size - 1);
    case CombineOp::avg:
      return base + (size - 1);
    default:
      return base + 2 * (size - 1);
  }
}

// The number of elements of `t` that differ from want(i).
template <class Want>
int64_t wrong_elements(const Tensor& t, Want want) {
  int64_t wrong = 0;
  for (int64_t i = 0; i < t.numel(); ++i) wrong += get_element(t, i) != want(i);
  return wrong;
}

// Runs `body` expecting the DistError it throws; returns it.
template <class Body>
DistError expect_dist_error(Body body) {
  try {
    body();
  } catch (const DistError& e) {
    return e;
  }
  FAIL("no DistError was thrown");
  return DistError({}, "");
}

}  // namespace

TEST_CASE("mpi: the group is MPI_COMM_WORLD and every peer's link is mpi") {
  auto pg = mpi_group();
  CHECK(std::string(pg->backend_name()) == "mpi");
  CHECK(pg->size() >= 2);
  for (int q = 0; q < pg->size(); ++q)
    CHECK(pg->peer_link(q) == (q == pg->rank() ? "self" : "mpi"));
}

TEST_CASE("mpi: one host numbered 0; bytes_sent counts a send's payload within the host") {
  auto pg = mpi_group();
  const int r = pg->rank(), n = pg->size();
  const Transport& transport = pg->transport();
  CHECK(transport.host_of_ranks() == std::vector<int>(n, 0));  // mpirun on this machine
  const LinkTierBytes before = transport.bytes_sent();
  Tensor t = full({1000}, 1.0 + r);  // f32: 4000 bytes
  if (r == 0) {
    REQUIRE_NOTHROW(pg->send(t, 1, 7)->wait());
  } else if (r == 1) {
    REQUIRE_NOTHROW(pg->recv(t, 0, 7)->wait());
    CHECK(wrong_elements(t, [](int64_t) { return 1.0; }) == 0);
  }
  const LinkTierBytes after = transport.bytes_sent();
  CHECK(after.within_host - before.within_host == (r == 0 ? 4000u : 0u));
  CHECK(after.network == before.network);
  REQUIRE_NOTHROW(pg->barrier()->wait());
}

TEST_CASE("mpi: all-reduce sum, avg and max of f32, f64, bf16 and i64 are exact") {
  auto pg = mpi_group();
  const int n = pg->size(), r = pg->rank();
  for (DType dtype : {DType::f32, DType::f64, DType::bf16, DType::i64}) {
    for (CombineOp op : {CombineOp::sum, CombineOp::avg, CombineOp::max}) {
      if (dtype == DType::i64 && op == CombineOp::avg) continue;
      for (int64_t length : {int64_t(0), int64_t(1), int64_t(1000), int64_t(1) << 20}) {
        INFO(dtype_name(dtype), " ", combine_op_name(op), " of ", length);
        Tensor t = empty({length}, dtype);
        for (int64_t i = 0; i < length; ++i) set_element(t, i, input(r, i));
        REQUIRE_NOTHROW(pg->allreduce(t, op)->wait());
        CHECK(wrong_elements(t, [&](int64_t i) { return expected(op, n, i); }) == 0);
      }
    }
  }
}

TEST_CASE("mpi: on one host, large all-reduces reach the peers' buffers (single copy)") {
  auto pg = mpi_group();
  const int n = pg->size(), r = pg->rank();
  for (int64_t length : {int64_t(1) << 14, int64_t(1) << 20}) {  // 64 KiB, 4 MiB of f32
    INFO("length ", length);
    Tensor t;
    {
      ShareableAllocations shared;  // as DDP allocates its buckets: peers may map them
      t = empty({length});
    }
    for (int64_t i = 0; i < length; ++i) set_element(t, i, input(r, i));
    const uint64_t before = pg->single_copy_counters().collectives;
    const uint64_t loaded = pg->single_copy_counters().peer_buffers_loaded;
    REQUIRE_NOTHROW(pg->allreduce(t)->wait());
    CHECK(wrong_elements(t, [&](int64_t i) { return expected(CombineOp::sum, n, i); }) == 0);
    CHECK(pg->single_copy_counters().peer_reads == PeerReads::agreed);
    CHECK(pg->single_copy_counters().collectives == before + 1);
    CHECK(pg->single_copy_counters().peer_buffers_loaded >
          loaded);  // loads from the peers' mapped arenas
  }
}

TEST_CASE("mpi: broadcast copies the root's tensor, from every root") {
  auto pg = mpi_group();
  for (int root = 0; root < pg->size(); ++root) {
    for (int64_t length : {int64_t(0), int64_t(1), int64_t(300'001)}) {
      Tensor t = empty({length}, DType::f32);
      for (int64_t i = 0; i < length; ++i) set_element(t, i, pg->rank() * 1000.0 + i % 1000);
      REQUIRE_NOTHROW(pg->broadcast(t, root)->wait());
      CHECK(wrong_elements(t, [&](int64_t i) { return root * 1000.0 + i % 1000; }) == 0);
    }
  }
}

TEST_CASE("mpi: allgather puts rank q's tensor at slice q") {
  auto pg = mpi_group();
  for (int64_t length : {int64_t(0), int64_t(1), int64_t(100'003)}) {
    Tensor in = empty({length}, DType::f64), out = empty({length * pg->size()}, DType::f64);
    for (int64_t i = 0; i < length; ++i) set_element(in, i, pg->rank() * 1e6 + i);
    REQUIRE_NOTHROW(pg->allgather(out, in)->wait());
    CHECK(wrong_elements(out, [&](int64_t j) { return (j / length) * 1e6 + j % length; }) == 0);
  }
}

TEST_CASE("mpi: reduce_scatter gives rank r the sum of slice r") {
  auto pg = mpi_group();
  const int n = pg->size(), r = pg->rank();
  for (int64_t length : {int64_t(1), int64_t(1000), int64_t(100'003)}) {
    Tensor in = empty({length * n}, DType::f64), out = empty({length}, DType::f64);
    for (int64_t j = 0; j < length * n; ++j) set_element(in, j, static_cast<double>(j + r));
    REQUIRE_NOTHROW(pg->reduce_scatter(out, in)->wait());
    CHECK(wrong_elements(out, [&](int64_t i) {
            return n * static_cast<double>(r * length + i) + n * (n - 1) / 2;
          }) == 0);
  }
}

TEST_CASE("mpi: barriers, and collectives issued back to back") {
  auto pg = mpi_group();
  for (int i = 0; i < 10; ++i) REQUIRE_NOTHROW(pg->barrier()->wait());
  std::vector<Tensor> tensors;
  std::vector<std::shared_ptr<Work>> works;
  for (int k = 0; k < 8; ++k) {
    tensors.push_back(empty({1000 + k}, DType::f32));
    for (int64_t i = 0; i < 1000 + k; ++i) set_element(tensors.back(), i, input(pg->rank(), i));
    works.push_back(pg->allreduce(tensors.back()));
  }
  for (int k = 0; k < 8; ++k) {
    REQUIRE_NOTHROW(works[k]->wait());
    CHECK(wrong_elements(tensors[k],
                         [&](int64_t i) { return expected(CombineOp::sum, pg->size(), i); }) == 0);
  }
}

TEST_CASE("mpi: p2p messages of one tag arrive in order, tags apart") {
  auto pg = mpi_group();
  const int r = pg->rank(), n = pg->size();
  const int64_t big = int64_t(1) << 18;  // past the eager limit
  if (r == 0) {
    std::vector<Tensor> sent;
    std::vector<std::shared_ptr<Work>> works;
    for (int q = 1; q < n; ++q)
      for (int k = 0; k < 4; ++k)
        for (int tag : {1, 2}) {
          sent.push_back(full({k == 3 ? big : 10}, 100.0 * tag + 10 * q + k));
          works.push_back(pg->send(sent.back(), q, tag));
        }
    for (auto& w : works) REQUIRE_NOTHROW(w->wait());
  } else {
    for (int tag : {2, 1})  // the other tag first: its messages wait, in order
      for (int k = 0; k < 4; ++k) {
        Tensor t = empty({k == 3 ? big : 10}, DType::f32);
        REQUIRE_NOTHROW(pg->recv(t, 0, tag)->wait());
        CHECK(wrong_elements(t, [&](int64_t) { return 100.0 * tag + 10 * r + k; }) == 0);
      }
  }
  REQUIRE_NOTHROW(pg->barrier()->wait());
}

TEST_CASE("mpi: p2p on a user's thread while collectives run on the group") {
  auto pg = mpi_group();
  const int r = pg->rank(), n = pg->size(), next = (r + 1) % n, prev = (r + n - 1) % n;
  int64_t wrong_p2p = 0;
  std::string side_error;
  std::thread side([&] {
    try {
      for (int k = 0; k < 50; ++k) {
        Tensor out = full({1000}, r * 100.0 + k), in = empty({1000}, DType::f32);
        auto send = pg->send(out, next, 7);
        pg->recv(in, prev, 7)->wait();
        send->wait();
        wrong_p2p += wrong_elements(in, [&](int64_t) { return prev * 100.0 + k; });
      }
    } catch (const std::exception& e) {
      side_error = e.what();
    }
  });
  int64_t wrong_sums = 0;
  for (int k = 0; k < 50; ++k) {
    Tensor t = empty({1000 + k}, DType::f32);
    for (int64_t i = 0; i < t.numel(); ++i) set_element(t, i, input(r, i));
    pg->allreduce(t)->wait();
    wrong_sums += wrong_elements(t, [&](int64_t i) { return expected(CombineOp::sum, n, i); });
  }
  side.join();
  CHECK(side_error == "");
  CHECK(wrong_p2p == 0);
  CHECK(wrong_sums == 0);
}

TEST_CASE("mpi: ranks in all-reduces of different counts fail with a mismatch") {
  auto pg = mpi_group(20'000);
  Tensor t = full({100 + pg->rank()}, 1.0);
  DistError e = expect_dist_error([&] { pg->allreduce(t)->wait(); });
  INFO(std::string(e.what()));
  // With 3 ranks, one may hear a peer's report of its mismatch before it sees one itself.
  CHECK(
      (e.kind() == FailureKind::mismatch || (pg->size() > 2 && e.kind() == FailureKind::aborted)));
  if (e.kind() == FailureKind::mismatch)
    CHECK(std::string(e.what()).find("mismatched collectives") != std::string::npos);
}

TEST_CASE("mpi: a rank that aborts makes the others fail naming it, before the timeout") {
  auto pg = mpi_group(60'000);
  if (pg->rank() == 0) pg->abort("test abort");
  Tensor t = full({1000}, 1.0);
  DistError e = expect_dist_error([&] { pg->allreduce(t)->wait(); });
  INFO(std::string(e.what()));
  CHECK(e.kind() == FailureKind::aborted);
  CHECK(e.blamed_rank() == 0);  // an abort, not the 60 s timeout (FailureKind::timeout)
}

TEST_CASE("mpi: a rank that does not answer is named by the others after the timeout") {
  auto pg = mpi_group(2'000);
  Tensor t = full({10}, 1.0);
  if (pg->rank() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(4'000));
  DistError e = expect_dist_error([&] { pg->allreduce(t)->wait(); });
  INFO(std::string(e.what()));
  CHECK(e.blamed_rank() == 0);
  if (pg->rank() != 0)
    CHECK((e.kind() == FailureKind::timeout || e.kind() == FailureKind::aborted));
}
