// The nccl backend on a real GPU (test_dist_nccl, registered as dist-nccl when CUDA is built).
// One GPU is all a check machine has, and NCCL refuses two ranks on one device, so the ranks
// here are world 1 (collectives must leave every dtype's bits as they are, on the ring path
// and on NCCL's own all-reduce), a world of 2 whose second rank never comes (init must fail
// within the timeout, naming the wait), and 2 processes on the one GPU, each made a host of
// its own (below). Without a GPU it exits 77: meson counts a skip, and bench/gpu_check.sh,
// which runs it directly, a failure.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
#include <execinfo.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "dist/nccl_group.h"
#include "dist/store.h"
#include "ops/ops.h"

using namespace rg;
using namespace rg::dist;

namespace {

const Device kGpu(DeviceType::cuda, 0);

std::shared_ptr<Store> local_store() {
  return std::make_shared<TcpStore>("127.0.0.1", 0, true, Milliseconds(10000));
}

// Values of every sign and size, exact in each dtype (bf16 keeps 8 bits of mantissa), and
// still exact times 3.
const std::vector<double> kValues = {-3.5, -1, -0.0, 0, 0.25, 1, 2, 1024, 65536, -4096};

Tensor values_on_gpu(DType dtype) { return tensor(kValues, {10}, dtype, kGpu); }

// combine(v, 2 v) for each v of kValues: what ranks holding kValues and 2 kValues reduce to.
template <typename Combine>
std::vector<double> combined_values(Combine combine) {
  std::vector<double> out;
  for (double v : kValues) out.push_back(combine(v, 2 * v));
  return out;
}

}  // namespace

TEST_CASE("nccl: world 1 collectives leave every dtype's values as they are") {
  Options options;
  options.timeout = Milliseconds(20000);
  auto pg = make_nccl_group(local_store(), 0, 1, 0, options, "nccl-world1");
  CHECK(std::string(pg->backend_name()) == "nccl");
  for (DType dtype : {DType::f32, DType::f64, DType::bf16, DType::i32, DType::i64}) {
    CAPTURE(dtype);
    Tensor expected = values_on_gpu(dtype).to(kCPU);
    Tensor t = values_on_gpu(dtype);
    for (CombineOp op : {CombineOp::sum, CombineOp::max}) {
      pg->allreduce(t, op)->wait();  // the ring path, over ncclSend/ncclRecv
      CHECK(equal(t.to(kCPU), expected));
      nccl_allreduce(*pg, t, op)->wait();  // NCCL's own
      CHECK(equal(t.to(kCPU), expected));
    }
    pg->broadcast(t, 0)->wait();
    CHECK(equal(t.to(kCPU), expected));
  }
  pg->barrier()->wait();
}

TEST_CASE("nccl: a rank that never joins makes init fail within the timeout, naming the wait") {
  Options options;
  options.timeout = Milliseconds(3000);
  CHECK_THROWS_WITH_AS(make_nccl_group(local_store(), 0, 2, 0, options, "nccl-missing"),
                       doctest::Contains("waiting for all 2 ranks to join"), Error);
}

namespace {

// NCCL refuses two ranks of one host on one device ("Duplicate GPU detected"). Its host is
// the hash of NCCL_HOSTID when that is set, so each rank here gets its own: two "hosts" that
// share a GPU. With P2P, SHM and InfiniBand off they talk over sockets on the loopback. This
// needs an NCCL that reads NCCL_HOSTID (2.x does) and the loopback interface "lo".

// What the child was doing, for the report of a crash (a fatal signal prints it and a stack).
const char* volatile g_stage = "starting";

void report_crash(int signal) {
  char line[160];
  const int n = std::snprintf(line, sizeof line, "two-process rank: signal %d while %s; stack:\n",
                              signal, g_stage);
  if (n > 0) (void)!write(2, line, size_t(n));
  void* frames[48];
  backtrace_symbols_fd(frames, backtrace(frames, 48), 2);
  _exit(128 + signal);
}

void install_crash_report() {
  for (int sig : {SIGSEGV, SIGBUS, SIGABRT, SIGILL, SIGFPE}) std::signal(sig, report_crash);
}

// The child's side: rank `rank` of 2 through the store at 127.0.0.1:port. Rank r holds
// kValues * (r + 1); sum and max must give exactly what they give on a CPU, on the ring path
// and on NCCL's own all-reduce. Returns the exit status (0: all equal).
int run_two_process_rank(int rank, int port) {
  install_crash_report();
  Options options;
  options.timeout = Milliseconds(60000);
  g_stage = "connecting to the store";
  auto store = std::make_shared<TcpStore>("127.0.0.1", port, false, Milliseconds(20000));
  g_stage = "making the nccl group";
  auto pg = make_nccl_group(store, rank, 2, 0, options, "nccl-two-processes");
  const Tensor sum = tensor(combined_values([](double a, double b) { return a + b; }), {10});
  const Tensor max =
      tensor(combined_values([](double a, double b) { return std::fmax(a, b); }), {10});
  int failures = 0;
  for (DType dtype : {DType::f32, DType::f64, DType::bf16}) {  // world 1 covers the ints
    for (CombineOp op : {CombineOp::sum, CombineOp::max}) {
      const Tensor& want = op == CombineOp::sum ? sum : max;
      for (bool ring : {true, false}) {
        Tensor t = mul(tensor(kValues, {10}, DType::f64), rank + 1).to(dtype).to(kGpu);
        g_stage = ring ? "in the ring all-reduce" : "in ncclAllReduce";
        (ring ? pg->allreduce(t, op) : nccl_allreduce(*pg, t, op))->wait();
        if (!equal(t.to(kCPU), want.to(dtype))) {
          std::fprintf(stderr, "rank %d: %s %s all-reduce of %s differs from the cpu's\n", rank,
                       ring ? "ring" : "nccl", op == CombineOp::sum ? "sum" : "max",
                       dtype_name(dtype));
          ++failures;
        }
      }
    }
  }
  g_stage = "in the barrier";
  pg->barrier()->wait();
  return failures == 0 ? 0 : 1;
}

// Starts this executable as rank `rank` of the two-process case, with its own NCCL host.
pid_t spawn_rank(int rank, int port) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e)
    if (std::strncmp(*e, "NCCL_", 5) != 0) env.emplace_back(*e);
  for (const char* v : {"NCCL_P2P_DISABLE=1", "NCCL_SHM_DISABLE=1", "NCCL_IB_DISABLE=1",
                        "NCCL_SOCKET_IFNAME=lo", "NCCL_DEBUG=WARN"})
    env.emplace_back(v);
  env.push_back("NCCL_HOSTID=ringgrad-test-host-" + std::to_string(rank));
  std::vector<std::string> args = {"test_dist_nccl", "--two-process-rank", std::to_string(rank),
                                   std::to_string(port)};
  std::vector<char*> argv, envp;
  for (auto& a : args) argv.push_back(a.data());
  for (auto& e : env) envp.push_back(e.data());
  argv.push_back(nullptr);
  envp.push_back(nullptr);
  pid_t pid = -1;
  REQUIRE(posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv.data(), envp.data()) == 0);
  return pid;
}

// Waits for `pid` until `deadline` and kills it past that. Returns its exit status, 128 +
// the signal's number if a signal ended it, -1 if it was killed at the deadline.
int wait_for_rank(pid_t pid, std::chrono::steady_clock::time_point deadline) {
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

TEST_CASE("nccl: 2 processes on the one GPU, each its own NCCL host, reduce as the cpu does") {
  TcpStore server("127.0.0.1", 0, true, Milliseconds(10000));
  pid_t ranks[2] = {spawn_rank(0, server.port()), spawn_rank(1, server.port())};
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);
  for (int r = 0; r < 2; ++r) {
    CAPTURE(r);
    CHECK(wait_for_rank(ranks[r], deadline) == 0);  // the ranks print what differed
  }
}

int main(int argc, char** argv) {
  if (argc == 4 && std::strcmp(argv[1], "--two-process-rank") == 0) {
    try {
      return run_two_process_rank(std::atoi(argv[2]), std::atoi(argv[3]));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "rank %s: %s\n", argv[2], e.what());
      return 1;
    }
  }
  if (!nccl_available()) {
    std::puts("dist-nccl: no GPU with NCCL on this machine: skipped (exit 77)");
    return 77;
  }
  doctest::Context context(argc, argv);
  return context.run();
}
