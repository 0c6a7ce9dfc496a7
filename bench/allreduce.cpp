// All-reduce bandwidth in the format of nccl-tests: for each size, the time of one in-place
// all-reduce, algbw = bytes / time and busbw = algbw * 2 (n-1) / n (the traffic each link
// carries in a bandwidth-optimal algorithm, comparable across world sizes). The ring is
// measured against a baseline in the same run: gather to rank 0, reduce there, send back
// (host backends) or ncclAllReduce (nccl).
//
//   bench/allreduce [--backend threads|tcp|nccl|all] [--nproc N] [--min-bytes 4K]
//                   [--max-bytes 64M] [--factor 4] [--dtype f32|f64|bf16]
// tcp ranks are forked processes joined through a store hosted by this process; nccl needs
// one GPU per rank (run it under rgrun: RANK/WORLD_SIZE in the environment select it).
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench/cli.h"
#include "dist/init.h"
#include "dist/nccl_group.h"
#include "dist/buffer_math.h"
#include "dist/store.h"
#include "dist/tcp_group.h"
#include "dist/threads_group.h"

using namespace rg;
using namespace rg::dist;

namespace {

struct Config {
  std::string backend = "all";
  int nproc = 2;
  int64_t min_bytes = 4 << 10;
  int64_t max_bytes = 64 << 20;
  int factor = 4;
  DType dtype = DType::f32;
};

// "4096", "4K", "64M", "1G" (binary units) -> bytes; -1 when it is not such a size.
int64_t parse_bytes(const std::string& s) {
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  std::string unit = end;
  int64_t scale = unit == "K" || unit == "k"   ? 1 << 10
                  : unit == "M" || unit == "m" ? 1 << 20
                  : unit == "G" || unit == "g" ? int64_t(1) << 30
                  : unit.empty()               ? 1
                                               : -1;
  if (end == s.c_str() || scale < 0 || !(v >= 1) || v * scale > double(int64_t(1) << 40)) return -1;
  return static_cast<int64_t>(v * scale);
}

const CLI::Validator kByteSize(
    [](std::string& s) {
      return parse_bytes(s) > 0 ? std::string()
                                : "'" + s + "' is not a size like 4096, 4K, 64M or 1G";
    },
    "SIZE");

Config parse(int argc, char** argv) {
  Config c;
  std::string min_bytes = "4K", max_bytes = "64M", dtype = "f32";
  CLI::App app{
      "allreduce: ring all-reduce time, algbw and busbw per size (nccl-tests format) against "
      "gather+reduce+send back (threads, tcp) or ncclAllReduce (nccl), measured in the same run",
      "allreduce"};
  bench::show_defaults(app);
  app.add_option("--backend", c.backend, "process group(s) to measure (nccl: under rgrun)")
      ->check(CLI::IsMember({"threads", "tcp", "nccl", "all"}));
  app.add_option("--nproc", c.nproc, "ranks (threads or forked processes)")
      ->check(CLI::Range(1, 256));
  app.add_option("--min-bytes", min_bytes, "smallest message size")->check(kByteSize);
  app.add_option("--max-bytes", max_bytes, "largest message size")->check(kByteSize);
  app.add_option("--factor", c.factor, "each size is the previous one times this")
      ->check(CLI::Range(2, 1 << 20));
  app.add_option("--dtype", dtype, "element type")->check(CLI::IsMember({"f32", "f64", "bf16"}));
  bench::parse_flags(app, argc, argv);
  c.min_bytes = parse_bytes(min_bytes);
  c.max_bytes = parse_bytes(max_bytes);
  c.dtype = dtype == "f64" ? DType::f64 : dtype == "bf16" ? DType::bf16 : DType::f32;
  if (c.min_bytes > c.max_bytes) {
    std::fprintf(stderr, "allreduce: --min-bytes %s is above --max-bytes %s\n", min_bytes.c_str(),
                 max_bytes.c_str());
    std::exit(2);
  }
  return c;
}

// Baseline for host backends: every rank sends to rank 0, which adds the buffers in rank
// order and sends the sum back to each rank.
void gather_reduce_send_back(ProcessGroup& pg, const Tensor& t, Tensor& scratch) {
  const int n = pg.size();
  if (pg.rank() == 0) {
    for (int r = 1; r < n; ++r) {
      pg.recv(scratch, r, 1)->wait();
      reduce_into(t, scratch, CombineOp::sum);
    }
    std::vector<std::shared_ptr<Work>> sends;
    for (int r = 1; r < n; ++r) sends.push_back(pg.send(t, r, 2));
    for (auto& s : sends) s->wait();
  } else {
    pg.send(t, 0, 1)->wait();
    pg.recv(t, 0, 2)->wait();
  }
}

double seconds_per_op(ProcessGroup& pg, int iters, const std::function<void()>& op) {
  pg.barrier()->wait();
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) op();
  pg.barrier()->wait();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / iters;
}

void run_rank(ProcessGroup& pg, const Config& c, const char* label) {
  const int n = pg.size();
  const Device device = pg.default_device();
  const bool nccl = std::string(pg.backend_name()) == "nccl";
  if (pg.rank() == 0) {
    std::printf("# ringgrad all-reduce: backend %s, %d ranks, %s sum%s\n", label, n,
                dtype_name(c.dtype),
                nccl ? ", baseline ncclAllReduce" : ", baseline gather+send back");
    std::printf("# %12s %12s %8s | %10s %8s %8s | %10s %8s %8s | %8s\n", "size(B)", "count", "type",
                "ring(us)", "algbw", "busbw", "base(us)", "algbw", "busbw", "ring/base");
  }
  for (int64_t bytes = c.min_bytes; bytes <= c.max_bytes; bytes *= c.factor) {
    const int64_t count = bytes / static_cast<int64_t>(itemsize(c.dtype));
    Tensor t = empty({count}, c.dtype, device);
    Tensor scratch = empty({count}, c.dtype, device);
    if (device.is_host_memory()) std::memset(t.data_ptr(), 0, t.nbytes());
    const int iters =
        static_cast<int>(std::clamp<int64_t>((256 << 20) / std::max<int64_t>(bytes, 1), 3, 200));
    auto ring = [&] { pg.allreduce(t)->wait(); };
    auto baseline = [&] {
      if (nccl)
        nccl_allreduce(pg, t)->wait();
      else
        gather_reduce_send_back(pg, t, scratch);
    };
    ring();  // warm-up: first touch of the memory, connections, caches
    baseline();
    double ring_s = seconds_per_op(pg, iters, ring);
    double base_s = seconds_per_op(pg, std::max(3, iters / 2), baseline);
    if (pg.rank() == 0) {
      const double bus = 2.0 * (n - 1) / n;
      const double ring_alg = bytes / ring_s / 1e9, base_alg = bytes / base_s / 1e9;
      std::printf("  %12lld %12lld %8s | %10.1f %8.2f %8.2f | %10.1f %8.2f %8.2f | %8.2f\n",
                  static_cast<long long>(bytes), static_cast<long long>(count), dtype_name(c.dtype),
                  ring_s * 1e6, ring_alg, ring_alg * bus, base_s * 1e6, base_alg, base_alg * bus,
                  base_s / ring_s);
      std::fflush(stdout);
    }
  }
}

void run_tcp(const Config& c) {
  auto server = std::make_shared<TcpStore>("127.0.0.1", 0, true);
  const int port = server->port();
  std::vector<pid_t> pids;
  for (int rank = 0; rank < c.nproc; ++rank) {
    pid_t pid = fork();
    if (pid == 0) {
      int code = 0;
      try {
        auto store = std::make_shared<TcpStore>("127.0.0.1", port, false);
        auto pg = make_tcp_group(store, rank, c.nproc);
        run_rank(*pg, c, "tcp (shared memory within the host)");
      } catch (const std::exception& e) {
        std::fprintf(stderr, "rank %d: %s\n", rank, e.what());
        code = 1;
      }
      std::fflush(stdout);
      _exit(code);
    }
    pids.push_back(pid);
  }
  for (pid_t pid : pids) waitpid(pid, nullptr, 0);
}

}  // namespace

int main(int argc, char** argv) {
  Config c = parse(argc, argv);
  try {
    if (std::getenv("RANK") && std::getenv("WORLD_SIZE")) {  // launched by rgrun
      auto pg = init_process_group(c.backend == "nccl" || c.backend == "tcp" ? c.backend : "auto");
      run_rank(*pg, c, pg->backend_name());
      return 0;
    }
    if (c.backend == "threads" || c.backend == "all") {
      run_threads(c.nproc, [&](ProcessGroup& pg) { run_rank(pg, c, "threads"); });
      std::printf("\n");
    }
    if (c.backend == "tcp" || c.backend == "all") run_tcp(c);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "allreduce: %s\n", e.what());
    return 1;
  }
  return 0;
}
