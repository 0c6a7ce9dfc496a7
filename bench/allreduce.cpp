// All-reduce bandwidth in the format of nccl-tests: for each size, the time of one in-place
// all-reduce, algbw = bytes / time and busbw = algbw * 2 (n-1) / n (the traffic each link
// carries in a bandwidth-optimal algorithm, comparable across world sizes). The ring is
// measured against a baseline in the same run: gather to rank 0, reduce there, send back
// (host backends) or ncclAllReduce (nccl).
//
//   bench/allreduce [--backend threads|tcp|nccl|mpi|all] [--nproc N] [--min-bytes 4K]
//                   [--max-bytes 64M] [--factor 4] [--dtype f32|f64|bf16]
//                   [--baseline gather|mpi] [--rounds R]
// tcp ranks are forked processes, each pinned to one CPU (rank r on the r-th allowed one, as
// mpirun --bind-to core does), joined through a store hosted by this process; nccl needs
// one GPU per rank (run it under rgrun: RANK/WORLD_SIZE in the environment select it); mpi
// runs under mpirun (mpirun -np N bench/allreduce --backend mpi: the ring over MPI messages).
//
// --baseline mpi (tcp, f32) measures Open MPI's MPI_Allreduce as the baseline, as
// nccl-tests does for NCCL: the ringgrad side runs first, then
//   mpirun --allow-run-as-root --oversubscribe -np N --mca btl self,vader --bind-to core
//          bench/allreduce_mpi ...
// (the MPI twin, bench/allreduce_mpi.cpp, found next to this executable), and one table
// gives both times, both busbw and the ratio ringgrad/MPI time, with rows for a barrier and
// an 8-byte all-reduce. Both sides time alike (bench/allreduce_timing.h): one warm-up call,
// then the mean over many calls between two barriers. --rounds R alternates the two sides R
// times and prints each round. The bench also measures single-thread memcpy bandwidth
// (64 MiB buffers, best of 5; bytes copied / time) and prints busbw at 16 MiB as a
// percentage of it. The twin is built only when Meson finds MPI; on Debian:
//   apt-get install openmpi-bin libopenmpi-dev && meson setup --reconfigure build
// MPI is never needed to build or test ringgrad.
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "bench/allreduce_timing.h"
#include "bench/cli.h"
#include "bench/tcp_ranks.h"
#include "core/shareable_host_memory.h"
#include "dist/buffer_math.h"
#include "dist/init.h"
#include "dist/nccl_group.h"
#include "dist/store.h"
#include "dist/tcp_group.h"
#include "dist/threads_group.h"

using namespace rg;
using namespace rg::dist;

namespace {

// The buffer that is all-reduced, allocated as DDP allocates its buckets: where peers of this
// host may map it (core/shareable_host_memory.h), so the single-copy path loads from it.
Tensor bucket_like(int64_t count, DType dtype, Device device) {
  ShareableAllocations shared;
  return empty({count}, dtype, device);
}

struct Config {
  std::string backend = "all";
  int nproc = 2;
  int64_t min_bytes = 4 << 10;
  int64_t max_bytes = 64 << 20;
  int factor = 4;
  DType dtype = DType::f32;
  std::string baseline = "gather";
  int rounds = 1;
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

[[noreturn]] void usage_error(const std::string& message) {
  std::fprintf(stderr, "allreduce: %s\n", message.c_str());
  std::exit(2);
}

// The MPI twin: bench/allreduce_mpi beside this executable.
std::string twin_path() {
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return (ec ? std::filesystem::path("allreduce_mpi") : self.parent_path() / "allreduce_mpi")
      .string();
}

bool on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "";
  for (size_t start = 0; start <= dirs.size();) {
    size_t end = std::min(dirs.find(':', start), dirs.size());
    std::string dir = dirs.substr(start, end - start);
    if (!dir.empty() && access((dir + "/" + program).c_str(), X_OK) == 0) return true;
    start = end + 1;
  }
  return false;
}

// --baseline mpi: tcp only, f32 only, and the twin and mpirun must be there.
void check_mpi_baseline(const Config& c) {
  if (c.baseline != "mpi") return;
  if (c.backend != "tcp") usage_error("--baseline mpi needs --backend tcp (processes)");
  if (c.dtype != DType::f32) usage_error("--baseline mpi measures f32 only (--dtype f32)");
  if (access(twin_path().c_str(), X_OK) != 0)
    usage_error("--baseline mpi: the MPI twin " + twin_path() +
                " was not built (Meson found no MPI); install Open MPI with `apt-get install "
                "openmpi-bin libopenmpi-dev`, then `meson setup --reconfigure <builddir>` and "
                "rebuild");
  if (!on_path("mpirun"))
    usage_error("--baseline mpi: mpirun is not on PATH (apt-get install openmpi-bin)");
}

Config parse(int argc, char** argv) {
  Config c;
  std::string min_bytes = "4K", max_bytes = "64M", dtype = "f32";
  CLI::App app{
      "allreduce: ring all-reduce time, algbw and busbw per size (nccl-tests format) against "
      "gather+reduce+send back (threads, tcp), ncclAllReduce (nccl) or Open MPI's "
      "MPI_Allreduce (--baseline mpi), measured in the same run",
      "allreduce"};
  bench::show_defaults(app);
  app.add_option("--backend", c.backend,
                 "process group(s) to measure (nccl: under rgrun; mpi: under mpirun)")
      ->check(CLI::IsMember({"threads", "tcp", "nccl", "mpi", "all"}));
  app.add_option("--nproc", c.nproc, "ranks (threads or forked processes)")
      ->check(CLI::Range(1, 256));
  app.add_option("--min-bytes", min_bytes, "smallest message size")->check(kByteSize);
  app.add_option("--max-bytes", max_bytes, "largest message size")->check(kByteSize);
  app.add_option("--factor", c.factor, "each size is the previous one times this")
      ->check(CLI::Range(2, 1 << 20));
  app.add_option("--dtype", dtype, "element type")->check(CLI::IsMember({"f32", "f64", "bf16"}));
  app.add_option("--baseline", c.baseline,
                 "host baseline: gather+send back, or Open MPI's MPI_Allreduce under mpirun "
                 "(tcp, f32; needs the MPI twin bench/allreduce_mpi)")
      ->check(CLI::IsMember({"gather", "mpi"}));
  app.add_option("--rounds", c.rounds, "measure this many times (mpi: alternating the sides)")
      ->check(CLI::Range(1, 100));
  bench::parse_flags(app, argc, argv);
  c.min_bytes = parse_bytes(min_bytes);
  c.max_bytes = parse_bytes(max_bytes);
  c.dtype = dtype == "f64" ? DType::f64 : dtype == "bf16" ? DType::bf16 : DType::f32;
  if (c.min_bytes > c.max_bytes)
    usage_error("--min-bytes " + min_bytes + " is above --max-bytes " + max_bytes);
  check_mpi_baseline(c);
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
    std::printf("# rank 0's links to its peers: %s\n", pg.describe_links().c_str());
    std::printf("# %12s %12s %8s | %10s %8s %8s | %10s %8s %8s | %8s\n", "size(B)", "count", "type",
                "ring(us)", "algbw", "busbw", "base(us)", "algbw", "busbw", "ring/base");
  }
  for (int64_t bytes = c.min_bytes; bytes <= c.max_bytes; bytes *= c.factor) {
    const int64_t count = bytes / static_cast<int64_t>(itemsize(c.dtype));
    Tensor t = bucket_like(count, c.dtype, device);
    Tensor scratch = empty({count}, c.dtype, device);
    if (device.is_host_memory()) std::memset(t.data_ptr(), 0, t.nbytes());
    const int iters = bench::allreduce_iterations(bytes);
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

// One warm-up all-reduce of `bytes` (f32), then the mean over `iters` calls.
double time_ring(ProcessGroup& pg, int64_t bytes, int iters) {
  Tensor t = bucket_like(bytes / 4, DType::f32, pg.default_device());
  std::memset(t.data_ptr(), 0, t.nbytes());
  auto ring = [&] { pg.allreduce(t)->wait(); };
  ring();
  return seconds_per_op(pg, iters, ring);
}

// The ringgrad side of --baseline mpi, measured as bench/allreduce_mpi measures MPI; rank 0
// writes "ringgrad <barrier|latency|allreduce> <bytes> <seconds>" lines to `out` (latency:
// the 8-byte all-reduce timed over bench::kLatencyIterations calls).
void run_rank_vs_mpi(ProcessGroup& pg, const Config& c, int out) {
  auto report = [&](const char* kind, int64_t bytes, double seconds) {
    if (pg.rank() == 0)
      dprintf(out, "ringgrad %s %lld %.9e\n", kind, static_cast<long long>(bytes), seconds);
  };
  if (pg.rank() == 0)
    dprintf(out, "# ringgrad rank 0's links to its peers: %s\n", pg.describe_links().c_str());
  auto barrier = [&] { pg.barrier()->wait(); };
  barrier();  // warm-up
  report("barrier", 0, seconds_per_op(pg, bench::kLatencyIterations, barrier));
  report("latency", bench::kLatencyBytes,
         time_ring(pg, bench::kLatencyBytes, bench::kLatencyIterations));
  for (int64_t bytes = c.min_bytes; bytes <= c.max_bytes; bytes *= c.factor)
    report("allreduce", bytes, time_ring(pg, bytes, bench::allreduce_iterations(bytes)));
}

// Forks c.nproc ranks joined by a tcp group; with `out` >= 0 they run the ringgrad side of
// --baseline mpi and write to it, else run_rank. Returns false when a rank failed.
// Rank r runs on the r-th CPU this process may use (modulo their number), as mpirun's
// --bind-to core places the MPI side; the group's communication thread shares that core.
void pin_rank(int rank) {
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) return;
  std::vector<int> cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &allowed)) cpus.push_back(cpu);
  if (cpus.empty()) return;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpus[rank % cpus.size()], &one);
  sched_setaffinity(0, sizeof(one), &one);  // best effort, like the MPI side's binding
}

bool run_tcp(const Config& c, int out = -1) {
  return bench::run_forked_tcp_ranks(c.nproc, "allreduce", pin_rank, [&](ProcessGroup& pg) {
    if (out >= 0)
      run_rank_vs_mpi(pg, c, out);
    else
      run_rank(pg, c, "tcp (shared memory within the host)");
  });
}

// One measurement of either side: barrier (bytes 0) or all-reduce of `bytes`.
struct Measurement {
  std::string kind;
  int64_t bytes = 0;
  double seconds = 0;
};
using Side = std::vector<Measurement>;

// "<side> <kind> <bytes> <seconds>" lines of `side` in `text`; '#' lines go to `notes`.
Side parse_side(const std::string& text, const std::string& side, std::string* notes = nullptr) {
  Side result;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = std::min(text.find('\n', start), text.size());
    std::string line = text.substr(start, end - start);
    start = end + 1;
    char who[32], kind[32];
    long long bytes = 0;
    double seconds = 0;
    if (notes && !line.empty() && line[0] == '#') *notes += line + "\n";
    if (std::sscanf(line.c_str(), "%31s %31s %lld %lf", who, kind, &bytes, &seconds) == 4 &&
        side == who)
      result.push_back({kind, bytes, seconds});
  }
  return result;
}

Side measure_ringgrad(const Config& c, std::string* notes) {
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error("pipe failed");
  const bool ok = run_tcp(c, fds[1]);
  close(fds[1]);
  std::string text;
  char buffer[4096];
  for (ssize_t got; (got = read(fds[0], buffer, sizeof buffer)) > 0;) text.append(buffer, got);
  close(fds[0]);
  if (!ok) throw std::runtime_error("a ringgrad rank failed (see above)");
  return parse_side(text, "ringgrad", notes);
}

std::string shell_quote(const std::string& s) {
  std::string quoted = "'";
  for (char ch : s) quoted += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return quoted + "'";
}

Side measure_mpi(const Config& c, std::string* notes) {
  const std::string command = "mpirun --allow-run-as-root --oversubscribe -np " +
                              std::to_string(c.nproc) + " --mca btl self,vader --bind-to core " +
                              shell_quote(twin_path()) + " --min-bytes " +
                              std::to_string(c.min_bytes) + " --max-bytes " +
                              std::to_string(c.max_bytes) + " --factor " + std::to_string(c.factor);
  std::fflush(stdout);
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) throw std::runtime_error("cannot start: " + command);
  std::string text;
  char buffer[4096];
  for (size_t got; (got = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;)
    text.append(buffer, got);
  const int status = pclose(pipe);
  if (status != 0)
    throw std::runtime_error("failed (status " + std::to_string(status) + "): " + command);
  *notes += "# " + command + "\n";
  return parse_side(text, "mpi", notes);
}

// Single-thread memcpy bandwidth: bytes copied / time, 64 MiB buffers, best of 5.
double memcpy_gbs() {
  const size_t bytes = size_t(64) << 20;
  std::vector<char> from(bytes, 1), to(bytes, 0);
  double best = 1e30;
  for (int i = 0; i < 5; ++i) {
    auto start = std::chrono::steady_clock::now();
    std::memcpy(to.data(), from.data(), bytes);
    best = std::min(
        best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    from[i] = to[bytes - 1 - i];  // keeps the copies from being optimized away
  }
  return bytes / best / 1e9;
}

const Measurement* find(const Side& side, const std::string& kind, int64_t bytes) {
  for (const auto& m : side)
    if (m.kind == kind && m.bytes == bytes) return &m;
  return nullptr;
}

std::string row_label(const Measurement& m) {
  if (m.kind == "barrier") return "barrier";
  return std::to_string(m.bytes) + (m.kind == "latency" ? " (lat)" : "");
}

// busbw in GB/s of `bytes` in `seconds`, or "-" for a barrier or a missing measurement.
std::string busbw(int64_t bytes, double seconds, int nproc) {
  if (bytes <= 0 || !(seconds > 0)) return "-";
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", bytes / seconds / 1e9 * 2.0 * (nproc - 1) / nproc);
  return text;
}

// One round's table: every ringgrad row beside the MPI row of the same kind and size.
void print_round(const Config& c, int round, const Side& ours, const Side& mpi) {
  std::printf(
      "# round %d/%d: %d ranks, f32 sum, in place; busbw in GB/s; ratio = ringgrad/MPI "
      "time; (lat): 8 B timed over %d calls\n",
      round, c.rounds, c.nproc, bench::kLatencyIterations);
  std::printf("# %12s | %12s %8s | %12s %8s | %8s\n", "size(B)", "ringgrad(us)", "busbw", "MPI(us)",
              "busbw", "ratio");
  for (const auto& m : ours) {
    const Measurement* theirs = find(mpi, m.kind, m.bytes);
    const double their_s = theirs ? theirs->seconds : NAN;
    std::printf("  %12s | %12.2f %8s | %12.2f %8s | %8.2f\n", row_label(m).c_str(), m.seconds * 1e6,
                busbw(m.bytes, m.seconds, c.nproc).c_str(), their_s * 1e6,
                busbw(m.bytes, their_s, c.nproc).c_str(), m.seconds / their_s);
  }
}

// busbw of the measured size closest to 16 MiB, as a percentage of memcpy bandwidth.
void print_vs_memcpy(const Config& c, const Side& ours, const Side& mpi, double memcpy) {
  const Measurement* best = nullptr;
  for (const auto& m : ours)
    if (m.kind == "allreduce" && (!best || std::abs(std::log2(double(m.bytes)) - 24) <
                                               std::abs(std::log2(double(best->bytes)) - 24)))
      best = &m;
  if (!best) return;
  const double bus = 2.0 * (c.nproc - 1) / c.nproc;
  const double rg = best->bytes / best->seconds / 1e9 * bus;
  const Measurement* theirs = find(mpi, best->kind, best->bytes);
  const double their = theirs ? theirs->bytes / theirs->seconds / 1e9 * bus : NAN;
  std::printf(
      "# busbw at %lld B%s: ringgrad %.2f GB/s = %.0f%% of memcpy, MPI %.2f GB/s = %.0f%%\n",
      static_cast<long long>(best->bytes),
      best->bytes == (16 << 20) ? " (16 MiB)" : " (the size measured closest to 16 MiB)", rg,
      100 * rg / memcpy, their, 100 * their / memcpy);
}

void run_mpi_baseline(const Config& c) {
  const double memcpy = memcpy_gbs();
  std::printf("# ringgrad tcp (forked processes, shared memory) vs Open MPI MPI_Allreduce\n");
  std::printf("# memcpy, one thread, 64 MiB, best of 5: %.2f GB/s\n", memcpy);
  for (int round = 1; round <= c.rounds; ++round) {
    std::string notes;
    Side ours = measure_ringgrad(c, &notes);
    Side mpi = measure_mpi(c, &notes);
    if (round == 1) std::printf("%s", notes.c_str());
    print_round(c, round, ours, mpi);
    print_vs_memcpy(c, ours, mpi, memcpy);
    std::fflush(stdout);
  }
}

}  // namespace

int main(int argc, char** argv) {
  Config c = parse(argc, argv);
  try {
    if (c.baseline == "mpi") {
      run_mpi_baseline(c);
      return 0;
    }
    if (c.backend == "mpi") {  // launched by mpirun
      auto pg = init_process_group("mpi");
      for (int round = 0; round < c.rounds; ++round) run_rank(*pg, c, "mpi");
      return 0;
    }
    if (std::getenv("RANK") && std::getenv("WORLD_SIZE")) {  // launched by rgrun
      auto pg = init_process_group(c.backend == "nccl" || c.backend == "tcp" ? c.backend : "auto");
      for (int round = 0; round < c.rounds; ++round) run_rank(*pg, c, pg->backend_name());
      return 0;
    }
    for (int round = 0; round < c.rounds; ++round) {
      if (c.backend == "threads" || c.backend == "all") {
        run_threads(c.nproc, [&](ProcessGroup& pg) { run_rank(pg, c, "threads"); });
        std::printf("\n");
      }
      if ((c.backend == "tcp" || c.backend == "all") && !run_tcp(c))
        throw std::runtime_error("a tcp rank failed (see above)");
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "allreduce: %s\n", e.what());
    return 1;
  }
  return 0;
}
