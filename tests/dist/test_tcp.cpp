// The tcp backend and the store, with ranks as forked processes. The test process hosts the
// store on a free port; every child joins through it, so parallel runs never collide.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "core/hash.h"
#include "dist/store.h"
#include "dist/tcp_group.h"
#include "tests/dist/dist_test_util.h"
#include "tests/dist/process_util.h"

using namespace rg;
using namespace rg::dist;
using namespace rg::dist::test;

namespace {

// Rank `rank` of `n` joins a tcp group through the store on 127.0.0.1:`port`.
std::shared_ptr<ProcessGroup> join_tcp(int port, int rank, int n, const Options& options) {
  auto store = std::make_shared<TcpStore>("127.0.0.1", port, false, options.timeout);
  return make_tcp_group(store, rank, n, options);
}

// Runs fn(group) on `n` processes joined over tcp; returns each child's outcome.
std::vector<ChildResult> run_tcp(int n, const std::function<void(ProcessGroup&)>& fn,
                                 Options options = {}, bool shared_memory = true,
                                 std::chrono::seconds limit = std::chrono::seconds(120),
                                 const std::function<bool(int)>& joins = nullptr) {
  StoreProcess server;
  const int port = server.port();
  std::vector<int> joiners;  // once they are done, the ranks that stayed away are stopped
  for (int r = 0; joins && r < n; ++r)
    if (joins(r)) joiners.push_back(r);
  return run_processes(
      n,
      [&](int rank) {
        if (joins && !joins(rank)) {
          std::this_thread::sleep_for(std::chrono::seconds(30));
          return;
        }
        if (!shared_memory) setenv("RG_DIST_SHM", "0", 1);
        auto pg = join_tcp(port, rank, n, options);
        fn(*pg);
      },
      limit, joiners);
}

// Every rank checks its result against the reference, then all ranks compare a hash of
// their result bytes through the group itself.
void check_identical(ProcessGroup& pg, const Tensor& t, const std::string& what) {
  const std::vector<char> bytes = bytes_of(t);
  const uint64_t hash = fnv1a(bytes.data(), bytes.size());
  Tensor mine = empty({1}, DType::i64);
  *mine.data<int64_t>() = static_cast<int64_t>(hash);
  Tensor all = empty({pg.size()}, DType::i64);
  pg.allgather(all, mine)->wait();
  for (int r = 0; r < pg.size(); ++r)
    RG_CHECK(all.data<int64_t>()[r] == static_cast<int64_t>(hash), what, ": rank ", r,
             " has other bits than rank ", pg.rank());
}

void expect_success(const std::vector<ChildResult>& results) {
  for (size_t r = 0; r < results.size(); ++r) {
    INFO("rank ", r, ": ", results[r].message);
    CHECK(results[r].status == 0);
    CHECK(!results[r].killed);
  }
}

void allreduce_everything(ProcessGroup& pg) {
  const int n = pg.size();
  for (DType dtype : kAllDtypes) {
    for (CombineOp op : {CombineOp::sum, CombineOp::avg, CombineOp::max}) {
      if (!supports(dtype, op)) continue;
      for (int64_t length : {int64_t(0), int64_t(1), int64_t(n - 1), int64_t(n), int64_t(n + 1),
                             int64_t(1000), int64_t((1 << 20) + 3)}) {
        if (length > 1000 && op != CombineOp::sum && dtype != DType::f32) continue;
        Tensor t = make_input(dtype, length, pg.rank());
        pg.allreduce(t, op)->wait();
        std::string problem = check_reduction(t, op, n);
        RG_CHECK(problem.empty(), problem);
        check_identical(pg, t, str(dtype_name(dtype), " ", combine_op_name(op), " ", length));
      }
    }
  }
}

}  // namespace

TEST_CASE("tcp ring all-reduce over processes equals the reference, bit-identical on all ranks") {
  for (int n : {2, 3, 4}) {
    CAPTURE(n);
    expect_success(run_tcp(n, allreduce_everything));
  }
}

// Lengths around a crossover of 256 bytes: f32 and f64 on both sides of it and at it, on
// shared memory and sockets; every rank checks the reference and compares its bits.
TEST_CASE("tcp all-reduce at the direct-exchange crossover is exact and bit-identical") {
  Options options;
  options.direct_bytes = 256;
  auto around_crossover = [](ProcessGroup& pg) {
    for (DType dtype : {DType::f32, DType::f64, DType::bf16}) {
      const int64_t at = 256 / static_cast<int64_t>(itemsize(dtype));
      for (int64_t length : {at - 1, at, at + 1}) {
        Tensor t = make_input(dtype, length, pg.rank());
        pg.allreduce(t)->wait();
        std::string problem = check_reduction(t, CombineOp::sum, pg.size());
        RG_CHECK(problem.empty(), problem);
        check_identical(pg, t, str(dtype_name(dtype), " ", length));
      }
    }
    pg.barrier()->wait();
  };
  for (int n : {2, 3}) {
    CAPTURE(n);
    expect_success(run_tcp(n, around_crossover, options));
    expect_success(run_tcp(n, around_crossover, options, /*shared_memory=*/false));
  }
}

TEST_CASE("tcp all-reduce gives the same result over sockets as over shared memory") {
  for (int n : {2, 3}) {
    CAPTURE(n);
    expect_success(run_tcp(n, allreduce_everything, {}, /*shared_memory=*/false));
  }
}

// Whether this kernel lets a process read a sibling's memory (process_vm_readv): allowed at
// all, and not under Yama's ptrace_scope 1 to 3. The single-copy path must be taken exactly
// where it does.
bool kernel_allows_peer_reads() {
  std::ifstream scope_file("/proc/sys/kernel/yama/ptrace_scope");
  int scope = 0;
  return process_reads_work() && (!(scope_file >> scope) || scope == 0);
}

// All-reduces above a 64 KiB single-copy crossover (and one below it) with every rank
// checking the reference and the bits; returns how many took the single-copy path.
uint64_t allreduce_across_single_copy(ProcessGroup& pg) {
  for (DType dtype : {DType::f32, DType::f64, DType::bf16})
    for (int64_t length : {int64_t(1000), int64_t(300'007)}) {
      Tensor t = make_shared_input(dtype, length, pg.rank(), 9);
      pg.allreduce(t)->wait();
      std::string problem = check_reduction(t, CombineOp::sum, pg.size(), 9);
      RG_CHECK(problem.empty(), problem);
      check_identical(pg, t, str(dtype_name(dtype), " ", length));
    }
  return pg.single_copy_counters().collectives;
}

TEST_CASE("tcp single-copy all-reduce over processes is exact, bit-identical, and taken") {
  Options options;
  options.single_copy_bytes = 64 << 10;
  const uint64_t expected = kernel_allows_peer_reads() ? 3 : 0;
  if (expected == 0) MESSAGE("peer reads are forbidden here: the ring is checked instead");
  for (int n : {2, 3}) {
    CAPTURE(n);
    expect_success(run_tcp(
        n,
        [&](ProcessGroup& pg) {
          const uint64_t taken = allreduce_across_single_copy(pg);
          RG_CHECK(taken == expected, "single-copy path taken ", taken, " times, expected ",
                   expected);
          // Their buffers came from the shareable arena: every peer's was loaded directly.
          RG_CHECK(pg.single_copy_counters().peer_buffers_loaded == expected * (n - 1),
                   "peers loaded ", pg.single_copy_counters().peer_buffers_loaded,
                   " times, expected ", expected * (n - 1));
          // Only the collectives' buffers: a large tensor allocated otherwise (weights,
          // activations) stays private memory that a peer cannot map.
          Tensor private_one = make_input(DType::f32, 300'007, pg.rank());
          RG_CHECK(shareable_location(private_one.data_ptr(), 4).offset == -1,
                   "a tensor outside ShareableAllocations lies in the shareable arena");
        },
        options));
  }
}

// Rank 1's buffer predates its group, so it is not in a shareable arena: rank 0 reads it
// with process_vm_readv and gathers its segment the same way, while rank 1 loads rank 0's
// buffer and writes its reduced segment into it; the bits are the same either way.
TEST_CASE("tcp single-copy all-reduce mixes loads and process reads, exact and identical") {
  if (!kernel_allows_peer_reads()) {
    MESSAGE("peer reads are forbidden here: covered by the ring tests instead");
    return;
  }
  StoreProcess server;
  const int port = server.port();
  auto results = run_processes(
      2,
      [&](int rank) {
        Options options;
        options.single_copy_bytes = 64 << 10;
        options.single_copy_read_bytes = 64 << 10;
        Tensor early = make_input(DType::f32, 300'007, rank, 4);
        auto pg = join_tcp(port, rank, 2, options);
        Tensor t = rank == 1 ? early : make_shared_input(DType::f32, 300'007, rank, 4);
        for (int round = 0; round < 2; ++round) {  // the second finds the mapping again
          if (round > 0) t.copy_(make_input(DType::f32, 300'007, rank, 4));
          pg->allreduce(t)->wait();
          std::string problem = check_reduction(t, CombineOp::sum, 2, 4);
          RG_CHECK(problem.empty(), "round ", round, ": ", problem);
          check_identical(*pg, t, str("round ", round));
        }
        RG_CHECK(pg->single_copy_counters().collectives == 2, "single-copy path not taken");
        RG_CHECK(pg->single_copy_counters().peer_buffers_loaded == (rank == 1 ? 2u : 0u), "rank ",
                 rank, " loaded ", pg->single_copy_counters().peer_buffers_loaded, " peer buffers");
      },
      std::chrono::seconds(120));
  expect_success(results);
}

// Below single_copy_read_bytes, a buffer outside the shareable arena sends every rank to
// the ring (decided from the descriptions, alike on all ranks); an arena buffer of the same
// size then takes the single-copy path.
TEST_CASE("tcp single-copy all-reduce below the read crossover needs every buffer loadable") {
  Options options;
  options.single_copy_bytes = 64 << 10;
  options.single_copy_read_bytes = 4 << 20;
  const uint64_t loads = kernel_allows_peer_reads() ? 1 : 0;
  StoreProcess server;
  const int port = server.port();
  auto results = run_processes(
      2,
      [&](int rank) {
        Tensor early = make_input(DType::f32, 300'007, rank, 6);
        auto pg = join_tcp(port, rank, 2, options);
        Tensor t = rank == 0 ? early : make_input(DType::f32, 300'007, rank, 6);
        for (int round = 0; round < 2; ++round) {
          if (round == 1) t = make_shared_input(DType::f32, 300'007, rank, 6);  // the arena's
          pg->allreduce(t)->wait();
          std::string problem = check_reduction(t, CombineOp::sum, 2, 6);
          RG_CHECK(problem.empty(), "round ", round, ": ", problem);
          check_identical(*pg, t, str("round ", round));
          RG_CHECK(pg->single_copy_counters().collectives == round * loads, "round ", round,
                   ": single-copy all-reduces ", pg->single_copy_counters().collectives);
        }
        RG_CHECK(pg->single_copy_counters().peer_buffers_loaded == loads, "peer buffers loaded ",
                 pg->single_copy_counters().peer_buffers_loaded);
      },
      std::chrono::seconds(120));
  expect_success(results);
}

TEST_CASE("tcp ranks say how they reach each peer: shared memory on one host, else tcp") {
  for (bool shared_memory : {true, false}) {
    CAPTURE(shared_memory);
    expect_success(run_tcp(
        3,
        [&](ProcessGroup& pg) {
          std::string want;
          for (int q = 0; q < 3; ++q)
            want += str(q ? ", " : "", q, " ",
                        q == pg.rank()  ? "self"
                        : shared_memory ? "shm"
                                        : "tcp");
          RG_CHECK(pg.describe_links() == want, "links ", pg.describe_links(), ", expected ", want);
          bool named = false;
          try {
            pg.peer_link(3);
          } catch (const Error& e) {
            named =
                std::string(e.what()).find("rank 3 outside world of size 3") != std::string::npos;
          }
          RG_CHECK(named, "peer_link(3) did not fail naming the rank");
        },
        {}, shared_memory));
  }
}

// Rank 1 refuses to have its memory read: the vote makes every rank take the ring.
TEST_CASE("tcp ranks agree on the ring when one refuses peer reads") {
  StoreProcess server;
  const int port = server.port();
  auto results = run_processes(
      3,
      [&](int rank) {
        Options options;
        options.single_copy_bytes = 64 << 10;
        options.allow_peer_reads = rank != 1;
        auto pg = join_tcp(port, rank, 3, options);
        RG_CHECK(allreduce_across_single_copy(*pg) == 0, "single-copy path taken");
        RG_CHECK(pg->single_copy_counters().peer_reads == PeerReads::refused,
                 "peer reads not refused");
      },
      std::chrono::seconds(120));
  expect_success(results);
}

TEST_CASE("tcp broadcast, allgather, reduce_scatter, barrier and send/recv across processes") {
  expect_success(run_tcp(3, [](ProcessGroup& pg) {
    const int n = pg.size();
    for (int64_t length : {int64_t(0), int64_t(5), int64_t(300'001)}) {
      Tensor b = make_input(DType::f32, length, pg.rank());
      pg.broadcast(b, 2)->wait();
      RG_CHECK(bytes_of(b) == bytes_of(make_input(DType::f32, length, 2)), "broadcast");

      Tensor in = make_input(DType::f64, length, pg.rank());
      Tensor out = empty({n * length}, DType::f64);
      pg.allgather(out, in)->wait();
      for (int r = 0; r < n; ++r)
        RG_CHECK(std::memcmp(static_cast<char*>(out.data_ptr()) + r * in.nbytes(),
                             make_input(DType::f64, length, r).data_ptr(), in.nbytes()) == 0,
                 "allgather slice ", r);

      Tensor whole = make_input(DType::f32, n * length, pg.rank());
      Tensor part = empty({length});
      pg.reduce_scatter(part, whole)->wait();
      for (int64_t i = 0; i < length; ++i)
        RG_CHECK(close_enough(DType::f32, get_element(part, i),
                              reference(DType::f32, CombineOp::sum, n, pg.rank() * length + i)),
                 "reduce_scatter element ", i);
      pg.barrier()->wait();
    }
    // A ring of user messages with two tags.
    Tensor out = make_input(DType::i64, 100, pg.rank());
    Tensor in = empty({100}, DType::i64);
    auto r = pg.recv(in, (pg.rank() + n - 1) % n, 3);
    pg.send(out, (pg.rank() + 1) % n, 3)->wait();
    r->wait();
    RG_CHECK(bytes_of(in) == bytes_of(make_input(DType::i64, 100, (pg.rank() + n - 1) % n)),
             "send/recv");
  }));
}

TEST_CASE("the store serves concurrent clients: set, get that waits, add, check, timeouts") {
  TcpStore server("127.0.0.1", 0, true, Milliseconds(5000));
  const int port = server.port();
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      try {
        TcpStore client("127.0.0.1", port, false, Milliseconds(5000));
        for (int i = 0; i < 100; ++i) client.add("counter", 1);
        client.set(str("key/", t), str("value ", t));
        // Waits for the key of the next thread, which may not be set yet.
        std::string v = client.get(str("key/", (t + 1) % 8));
        if (v != str("value ", (t + 1) % 8)) failures++;
      } catch (const std::exception&) {
        failures++;
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(failures.load() == 0);
  CHECK(server.add("counter", 0) == 800);
  CHECK(server.check("key/3"));
  CHECK(!server.check("missing"));
  auto start = Clock::now();
  CHECK_THROWS_WITH_AS(server.get("missing", Milliseconds(200)),
                       doctest::Contains("waiting for key 'missing'"), Error);
  // 15x the 200 ms asked for; a get that ignored it would wait for the store's default.
  CHECK(Clock::now() - start < std::chrono::seconds(3));
  CHECK_THROWS_WITH_AS(TcpStore("127.0.0.1", 1, false, Milliseconds(300)),
                       doctest::Contains("is rank 0 running?"), Error);
}

TEST_CASE("a rank that never joins makes the others fail at start-up, naming it") {
  Options options;
  options.timeout = Milliseconds(1500);
  auto results = run_tcp(
      3, [](ProcessGroup&) {}, options, true, std::chrono::seconds(20),
      [](int rank) { return rank != 2; });
  for (int r : {0, 1}) {
    INFO(results[r].message);
    CHECK(results[r].status == 1);
    CHECK(results[r].message.find("rank 2 did not join") != std::string::npos);
  }
}

// 100'000 floats go around the ring, 1'000'000 (4 MiB) take the single-copy path.
TEST_CASE("a rank that dies mid-training makes the others fail at once, naming it") {
  // Longer than run_tcp's 40 s limit, which kills a rank still waiting (its status is then
  // not 1): only noticing the death can end the wait in time. Not timed here.
  Options options;
  options.timeout = Milliseconds(600'000);
  for (int64_t length : {int64_t(100'000), int64_t(1'000'000)}) {
    CAPTURE(length);
    auto results = run_tcp(
        3,
        [&](ProcessGroup& pg) {
          Tensor t = make_input(DType::f32, length, pg.rank());
          pg.allreduce(t)->wait();
          if (pg.rank() == 1) _exit(7);  // crashes between two collectives
          pg.allreduce(t)->wait();
        },
        options, true, std::chrono::seconds(40));
    CHECK(results[1].status == 7);
    for (int r : {0, 2}) {
      INFO(results[r].message);
      CHECK(results[r].status == 1);
      CHECK(results[r].message.find("rank 1") != std::string::npos);
    }
  }
}

TEST_CASE("a rank that hangs makes the others time out, naming it") {
  Options options;
  options.timeout = Milliseconds(1500);
  auto results = run_tcp(
      3,
      [](ProcessGroup& pg) {
        Tensor t = make_input(DType::f32, 1000, pg.rank());
        pg.allreduce(t)->wait();
        if (pg.rank() == 0) std::this_thread::sleep_for(std::chrono::seconds(6));
        pg.allreduce(t)->wait();
      },
      options, true, std::chrono::seconds(40));
  for (int r : {1, 2}) {
    INFO(results[r].message);
    CHECK(results[r].status == 1);
    CHECK(results[r].message.find("waiting for rank 0") != std::string::npos);
  }
}

TEST_CASE("a mismatched collective across processes is reported on every rank") {
  Options options;
  options.timeout = Milliseconds(5000);
  auto results = run_tcp(
      2,
      [](ProcessGroup& pg) {
        Tensor t = make_input(pg.rank() == 0 ? DType::f32 : DType::f64, 10, pg.rank());
        pg.allreduce(t)->wait();
      },
      options, true, std::chrono::seconds(30));
  for (int r : {0, 1}) {
    INFO(results[r].message);
    CHECK(results[r].status == 1);
    CHECK(results[r].message.find("mismatched collectives") != std::string::npos);
  }
}

namespace {

// Entries of /dev/shm that one of these processes could have created.
std::vector<std::string> shm_files_of(const std::vector<ChildResult>& results) {
  std::vector<std::string> found;
  for (const auto& entry : std::filesystem::directory_iterator("/dev/shm")) {
    const std::string name = entry.path().filename().string();
    for (const auto& r : results)
      if (name.find(str("-", r.pid, "-")) != std::string::npos) found.push_back(name);
  }
  return found;
}

}  // namespace

TEST_CASE("tcp shared-memory rings of any RG_DIST_SHM_BYTES work and leave nothing in /dev/shm") {
  for (const char* bytes : {"1", "8", "63", "100"}) {
    CAPTURE(bytes);
    setenv("RG_DIST_SHM_BYTES", bytes, 1);
    auto results = run_tcp(3, [](ProcessGroup& pg) {
      for (int64_t length :
           {int64_t(0), int64_t(1), int64_t(63), int64_t(1000), int64_t(100'003)}) {
        Tensor t = make_input(DType::f32, length, pg.rank());
        pg.allreduce(t)->wait();
        std::string problem = check_reduction(t, CombineOp::sum, pg.size());
        RG_CHECK(problem.empty(), problem);
      }
    });
    unsetenv("RG_DIST_SHM_BYTES");
    expect_success(results);
    CHECK(shm_files_of(results).empty());
  }
}

TEST_CASE("a bad RG_DIST_SHM_BYTES fails every rank at once, naming the variable and value") {
  for (const char* bytes : {"abc", "0"}) {
    CAPTURE(bytes);
    setenv("RG_DIST_SHM_BYTES", bytes, 1);
    auto results = run_tcp(
        2, [](ProcessGroup&) {}, {}, true, std::chrono::seconds(60));
    unsetenv("RG_DIST_SHM_BYTES");
    for (const auto& r : results) {
      INFO(r.message);
      CHECK(!r.killed);
      CHECK(r.status == 1);
      CHECK(r.message.find(str("RG_DIST_SHM_BYTES='", bytes, "'")) != std::string::npos);
    }
  }
}

TEST_CASE("ranks that mix shared memory and sockets agree on each pair's transport") {
  // Rank 2 turns shared memory off, so it shares nothing, while ranks 0 and 1 share with each
  // other and offer to rank 2: every pair must still settle (rank 2's pairs on sockets).
  StoreProcess server;
  const int port = server.port();
  Options options;
  options.timeout = Milliseconds(60'000);
  auto results = run_processes(
      3,
      [&](int rank) {
        if (rank == 2) setenv("RG_DIST_SHM", "0", 1);
        auto pg = join_tcp(port, rank, 3, options);
        allreduce_everything(*pg);
      },
      std::chrono::seconds(40));
  expect_success(results);
}
