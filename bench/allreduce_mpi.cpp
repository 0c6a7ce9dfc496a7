// MPI twin of bench/allreduce, the baseline of `bench/allreduce --baseline mpi`:
// MPI_Allreduce (f32 sum, in place) for the same sizes, timed the same way
// (bench/allreduce_timing.h), plus MPI_Barrier and an 8-byte all-reduce. Built only when
// Meson finds MPI (Debian: apt-get install openmpi-bin libopenmpi-dev); MPI is never needed
// to build or test ringgrad. bench/allreduce starts it under mpirun and parses what rank 0
// prints, one line per measurement:
//   # <MPI library version>
//   mpi barrier 0 <seconds per call>
//   mpi latency 8 <seconds per call>        (8-byte all-reduce, kLatencyIterations calls)
//   mpi allreduce <bytes> <seconds per call>
//
//   mpirun -np 2 bench/allreduce_mpi [--min-bytes 4096] [--max-bytes 67108864] [--factor 4]
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "bench/allreduce_timing.h"
#include "bench/cli.h"

namespace {

struct Config {
  int64_t min_bytes = 4 << 10;
  int64_t max_bytes = 64 << 20;
  int factor = 4;
};

Config parse(int argc, char** argv) {
  Config c;
  CLI::App app{
      "allreduce_mpi: MPI_Allreduce (f32 sum, in place), MPI_Barrier and an 8-byte all-reduce, "
      "timed as bench/allreduce times ringgrad; run under mpirun (bench/allreduce --baseline mpi "
      "does)",
      "allreduce_mpi"};
  rg::bench::show_defaults(app);
  app.add_option("--min-bytes", c.min_bytes, "smallest message size in bytes")
      ->check(CLI::Range(int64_t(4), int64_t(1) << 40));
  app.add_option("--max-bytes", c.max_bytes, "largest message size in bytes")
      ->check(CLI::Range(int64_t(4), int64_t(1) << 40));
  app.add_option("--factor", c.factor, "each size is the previous one times this")
      ->check(CLI::Range(2, 1 << 20));
  rg::bench::parse_flags(app, argc, argv);
  return c;
}

double seconds_per_op(int iters, const std::function<void()>& op) {
  MPI_Barrier(MPI_COMM_WORLD);
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) op();
  MPI_Barrier(MPI_COMM_WORLD);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / iters;
}

// One warm-up all-reduce of `bytes`, then the mean over `iters` calls.
double time_allreduce(int64_t bytes, int iters) {
  std::vector<float> buffer(static_cast<size_t>(bytes) / sizeof(float), 0.0f);
  const int count = static_cast<int>(buffer.size());
  auto op = [&] {
    MPI_Allreduce(MPI_IN_PLACE, buffer.data(), count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  };
  op();
  return seconds_per_op(iters, op);
}

void report(int rank, const char* kind, int64_t bytes, double seconds) {
  if (rank != 0) return;
  std::printf("mpi %s %lld %.9e\n", kind, static_cast<long long>(bytes), seconds);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  const Config c = parse(argc, argv);  // before MPI_Init: --help needs no MPI
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) {
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int length = 0;
    MPI_Get_library_version(version, &length);
    std::string first_line(version, static_cast<size_t>(length));
    first_line = first_line.substr(0, first_line.find_first_of("\n,"));
    std::printf("# %s\n", first_line.c_str());
  }
  auto barrier = [] { MPI_Barrier(MPI_COMM_WORLD); };
  barrier();  // warm-up
  report(rank, "barrier", 0, seconds_per_op(rg::bench::kLatencyIterations, barrier));
  report(rank, "latency", rg::bench::kLatencyBytes,
         time_allreduce(rg::bench::kLatencyBytes, rg::bench::kLatencyIterations));
  for (int64_t bytes = c.min_bytes; bytes <= c.max_bytes; bytes *= c.factor)
    report(rank, "allreduce", bytes, time_allreduce(bytes, rg::bench::allreduce_iterations(bytes)));
  MPI_Finalize();
  return 0;
}
