// Launch mistakes and faults around the tcp backend's rendezvous, with ranks as forked
// processes: duplicate ranks and world sizes that disagree are reported at once (the group
// timeout is far longer than the test's limit, so a test that passes did not wait for it);
// jobs with different tokens never pair; silent connections do not stall the set-up; and a
// stopped rank is named by the others.
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <sstream>
#include <thread>

#include "dist/socket.h"
#include "dist/store.h"
#include "dist/tcp_group.h"
#include "tests/dist/dist_test_util.h"
#include "tests/dist/process_util.h"

using namespace rg;
using namespace rg::dist;
using namespace rg::dist::test;

namespace {

constexpr auto kLimit = std::chrono::seconds(45);

Options long_timeout() {
  Options options;
  options.timeout = Milliseconds(120'000);  // far beyond kLimit: must not be what ends a wait
  return options;
}

int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Child `i` joins a tcp group as rank ranks[i] of a world of sizes[i], through a store this
// process hosts, and all-reduces once.
std::vector<ChildResult> launch(const std::vector<int>& ranks, const std::vector<int>& sizes) {
  StoreProcess server;
  const int port = server.port();
  return run_processes(
      static_cast<int>(ranks.size()),
      [&](int i) {
        auto store = std::make_shared<TcpStore>("127.0.0.1", port, false, long_timeout().timeout);
        auto pg = make_tcp_group(store, ranks[i], sizes[i], long_timeout());
        Tensor t = make_input(DType::f32, 10, pg->rank());
        pg->allreduce(t)->wait();
      },
      kLimit);
}

}  // namespace

TEST_CASE("ranks that disagree on the world size all fail at rendezvous, naming both sizes") {
  auto results = launch({0, 1, 2}, {2, 3, 3});
  for (size_t i = 0; i < results.size(); ++i) {
    INFO("process ", i, ": ", results[i].message);
    CHECK(!results[i].killed);
    CHECK(results[i].status == 1);
    CHECK(contains(results[i].message, "world size mismatch"));
    CHECK(contains(results[i].message, "WORLD_SIZE=2"));
    CHECK(contains(results[i].message, "WORLD_SIZE=3"));
  }
}

TEST_CASE("two processes with the same rank all fail at rendezvous, naming the rank") {
  auto results = launch({0, 1, 1}, {3, 3, 3});
  for (size_t i = 0; i < results.size(); ++i) {
    INFO("process ", i, ": ", results[i].message);
    CHECK(!results[i].killed);
    CHECK(results[i].status == 1);
    CHECK(contains(results[i].message, "two processes were started as rank 1"));
  }
}

TEST_CASE("two jobs started on one port at once never pair ranks across jobs") {
  for (int trial = 0; trial < 4; ++trial) {
    CAPTURE(trial);
    const int port = free_port();
    // Processes 0, 1: job 1's ranks 0 and 1; processes 2, 3: job 2's.
    auto results = run_processes(
        4,
        [&](int i) {
          const int job = 1 + i / 2, rank = i % 2;
          Options options;
          options.timeout = Milliseconds(8000);
          options.job_token = str("job-", job, "-trial-", trial);
          auto store = std::make_shared<TcpStore>("127.0.0.1", port, rank == 0, options.timeout,
                                                  options.job_token);
          auto pg = make_tcp_group(store, rank, 2, options);
          Tensor t = empty({1}, DType::i64);
          *t.data<int64_t>() = job;
          pg->allreduce(t)->wait();
          RG_CHECK(*t.data<int64_t>() == 2 * job, "paired across jobs: sum ", *t.data<int64_t>());
        },
        kLimit);
    // Both jobs may succeed, one after the other, when their lifetimes do not overlap; a
    // failing rank may see any of several causes (the other job's store or rank refused it,
    // its port was taken, the other job's store went away mid-hello...). What must never
    // happen is a pairing across jobs, a crash, or a hang.
    for (int i = 0; i < 4; ++i) {
      INFO("job ", 1 + i / 2, " rank ", i % 2, ": ", results[i].message);
      CHECK(!results[i].killed);
      CHECK((results[i].status == 0 || results[i].status == 1));
      CHECK(!contains(results[i].message, "paired across jobs"));
      if (results[i].status == 1) CHECK(!results[i].message.empty());
    }
  }
}

TEST_CASE("a rank of another job that reaches this job's store never takes a rank's place") {
  StoreProcess server(Milliseconds(10'000), "job-a");
  const int port = server.port();
  // Process 0: job a's rank 0. Process 1: job b's rank 1, first at the door. Process 2: job
  // a's real rank 1, a second later.
  auto results = run_processes(
      3,
      [&](int i) {
        if (i == 2) std::this_thread::sleep_for(std::chrono::seconds(1));
        Options options;
        options.timeout = Milliseconds(20'000);
        options.job_token = i == 1 ? "job-b" : "job-a";
        auto store = std::make_shared<TcpStore>("127.0.0.1", port, false, options.timeout,
                                                options.job_token);
        auto pg = make_tcp_group(store, i == 0 ? 0 : 1, 2, options);
        Tensor t = empty({1}, DType::i64);
        *t.data<int64_t>() = i == 1 ? 100 : 1;
        pg->allreduce(t)->wait();
        RG_CHECK(*t.data<int64_t>() == 2, "paired across jobs: sum ", *t.data<int64_t>());
      },
      kLimit);
  for (int i = 0; i < 3; ++i) {
    INFO("process ", i, ": ", results[i].message);
    CHECK(!results[i].killed);
    CHECK(results[i].status == (i == 1 ? 1 : 0));
  }
  CHECK(contains(results[1].message, "job token mismatch"));
}

TEST_CASE("a peer link presenting another job's token is refused, naming the cause") {
  StoreProcess server;
  const int port = server.port();
  auto results = run_processes(
      2,
      [&](int rank) {
        Options options;
        options.timeout = Milliseconds(3000);
        auto store = std::make_shared<TcpStore>("127.0.0.1", port, false, options.timeout);
        if (rank == 1) options.job_token = "a-stranger's-token";
        make_tcp_group(store, rank, 2, options);
      },
      kLimit);
  INFO("rank 0: ", results[0].message);
  INFO("rank 1: ", results[1].message);
  CHECK(results[1].status == 1);
  CHECK(contains(results[1].message, "refused: job token mismatch"));
  CHECK(results[0].status == 1);  // never paired with the stranger
  CHECK(contains(results[0].message, "rank(s) 1 did not connect"));
}

TEST_CASE("a silent connection to a rank's port does not stall the set-up") {
  StoreProcess server;
  const int port = server.port();
  // Processes 0-2 are the ranks; process 3 connects to rank 0's peer port as soon as it is
  // published, says nothing, and is stopped once the ranks are done.
  auto results = run_processes(
      4,
      [&](int i) {
        if (i == 3) {
          TcpStore store("127.0.0.1", port, false, Milliseconds(20'000));
          std::istringstream addr(store.get("tcp/addr/0", Milliseconds(20'000)));
          std::string ip;
          int peer_port = 0;
          addr >> ip >> peer_port;
          int fd = ::socket(AF_INET, SOCK_STREAM, 0);
          sockaddr_in a{};
          a.sin_family = AF_INET;
          a.sin_port = htons(static_cast<uint16_t>(peer_port));
          inet_pton(AF_INET, ip.c_str(), &a.sin_addr);
          ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
          std::this_thread::sleep_for(std::chrono::seconds(30));
          return;
        }
        // The ranks come late, so the silent connection is the first rank 0 accepts.
        if (i > 0) std::this_thread::sleep_for(std::chrono::milliseconds(1500));
        auto store = std::make_shared<TcpStore>("127.0.0.1", port, false, long_timeout().timeout);
        auto pg = make_tcp_group(store, i, 3, long_timeout());
        Tensor t = make_input(DType::f32, 10, i);
        pg->allreduce(t)->wait();
      },
      std::chrono::seconds(25), /*must_finish=*/{0, 1, 2});
  for (int r = 0; r < 3; ++r) {
    INFO("rank ", r, ": ", results[r].message);
    CHECK(results[r].status == 0);
    CHECK(!results[r].killed);
  }
}

TEST_CASE("a rank stopped mid-collective is named by the ranks that wait for it") {
  StoreProcess server;
  const int port = server.port();
  Options options;
  options.timeout = Milliseconds(2000);
  auto results = run_processes(3,
                               [&](int rank) {
                                 auto store = std::make_shared<TcpStore>("127.0.0.1", port, false,
                                                                         options.timeout);
                                 auto pg = make_tcp_group(store, rank, 3, options);
                                 Tensor t = make_input(DType::f32, 1000, rank);
                                 pg->allreduce(t)->wait();
                                 if (rank == 0)
                                   raise(SIGSTOP);  // alive but silent; killed by the harness
                                 pg->allreduce(t)->wait();
                               },
                               kLimit, /*must_finish=*/{1, 2});
  for (int r : {1, 2}) {
    INFO("rank ", r, ": ", results[r].message);
    CHECK(results[r].status == 1);
    CHECK(contains(results[r].message, "rank 0 does not answer"));
  }
}

TEST_CASE("a stopped rank 0 during rendezvous is named: it hosts the store") {
  const int port = free_port();
  auto results = run_processes(3,
                               [&](int rank) {
                                 Milliseconds timeout(2000);
                                 auto store = std::make_shared<TcpStore>(
                                     "127.0.0.1", port, rank == 0, Milliseconds(4000));
                                 if (rank == 0) raise(SIGSTOP);
                                 Options options;
                                 options.timeout = timeout;
                                 make_tcp_group(store, rank, 3, options);
                               },
                               kLimit, /*must_finish=*/{1, 2});
  for (int r : {1, 2}) {
    INFO("rank ", r, ": ", results[r].message);
    CHECK(results[r].status == 1);
    CHECK(contains(results[r].message, "rank 0 hosts the store"));
  }
}

TEST_CASE("ranks are not forked while this process runs store threads (the child could hang)") {
  // Under AddressSanitizer a child forked while a server thread starts a connection thread can
  // inherit the sanitizer's thread-registry lock held, and hang on its first thread: about 1
  // fork in 500 in a stand-alone reproduction. The harness refuses such a fork outright.
  {
    TcpStore server("127.0.0.1", 0, true, Milliseconds(10'000));
    CHECK_THROWS_WITH_AS(run_processes(
                             1, [](int) {}, kLimit),
                         doctest::Contains("runs ringgrad threads (rg-store"), std::runtime_error);
    CHECK_THROWS_AS(StoreProcess(), std::runtime_error);
  }
  StoreProcess server;  // a store in its own process leaves this one free to fork
  auto results = run_processes(
      2,
      [&](int rank) {
        auto store =
            std::make_shared<TcpStore>("127.0.0.1", server.port(), false, long_timeout().timeout);
        auto pg = make_tcp_group(store, rank, 2, long_timeout());
        Tensor t = make_input(DType::f32, 10, rank);
        pg->allreduce(t)->wait();
      },
      kLimit);
  for (const auto& r : results) CHECK(r.status == 0);
}

TEST_CASE("GROUP_RANK makes a launcher's node a host of its own (one word, any value)") {
  unsetenv("GROUP_RANK");
  const std::string machine = rg::dist::net::host_identity();
  setenv("GROUP_RANK", "1", 1);
  const std::string node1 = rg::dist::net::host_identity();
  setenv("GROUP_RANK", "a b", 1);
  const std::string odd = rg::dist::net::host_identity();
  unsetenv("GROUP_RANK");
  CHECK(node1 == machine + "/node-1");
  CHECK(odd == machine + "/node-a_b");  // the rendezvous sends it as one word
  CHECK(rg::dist::net::host_identity() == machine);
}
