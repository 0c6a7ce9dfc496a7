// bench/ddp: DistributedDataParallel on 2 CPU ranks, as threads (--backend threads) and as 2
// forked processes joined by the tcp backend over shared memory (--backend tcp), each rank
// pinned to its own core. Per backend:
//  1. step time with DDP vs the same per-rank work with no communication (goal <= 1.10x),
//     measured in R alternating rounds (no communication, then DDP; the host's speed drifts
//     between runs, so one pair alone swung from 0.8 to 1.4), each round's ratio printed and
//     their median; and in each round a third run whose steps alternate between no_sync
//     and synchronized ones, so that both see the same seconds of the host ("interleaved":
//     its ratio moved by 0.01-0.04 between rounds where the separate runs' moved by 0.1-0.4),
//     with the CPU time a synchronized step adds on the rank's thread and on its
//     communication thread;
//  2. the all-reduce time per step and the share of it hidden behind backward (goal >= 70%
//     with >= 8 buckets): a bucket's communication runs from its launch (or the previous
//     bucket's end) to its completion, and the part before backward ended is hidden;
//  3. a bucket_cap_mb sweep (1, 5, 25, 100) printing step time and bucket count;
//  4. the gradient memory that gradient_as_bucket_view saves.
// --zero 3: instead, R alternating rounds of DDP and ZeRO-3 (nn::FullyShardedDataParallel,
// each block's weights gathered for its forward and again for its backward, gradients
// reduce-scattered, the next all-gather prefetched) and the ratio of their step times
// (forward + backward with their communication; goal <= 1.20).
// --backend mpi: run under mpirun (`mpirun -np 2 bench/ddp --backend mpi`, in a build with
// MPI): each of mpirun's processes is a rank of the mpi backend, all run the same
// measurements, and rank 0 prints them.
// --device cuda: 2 processes on one GPU over the nccl backend (each its own NCCL_HOSTID, as
// the dist-nccl test runs them): R rounds of (no communication, DDP) with their ratio, the
// share of the all-reduce hidden behind backward, and the host synchronizations per DDP step
// (goal: 1, the loss read that ends each timed step). There the collectives run on the
// communication stream, so comm ms and hidden come from device events (each bucket's
// collective between its events on that stream, backward's end an event on the compute
// stream; dist/bucket_transport.h), and the medians' line names the clock used. --device sim
// runs the same on 2 thread ranks (threads backend, host clock) on sim:0 and sim:1, to try it
// without a GPU.
// Usage: ddp [layers width steps] [--backend tcp|threads|both|mpi] [--bucket-cap-mb X]
//            [--rounds R] [--zero 3] [--device cpu|cuda|sim]
// (model: a GPT of `layers` x `width`, vocab 512, T 64; the defaults give >= 8 buckets).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/cli.h"
#include "bench/ddp_ranks.h"
#include "dist/mpi_group.h"
#include "ringgrad.h"

using namespace rg;
using namespace rg::bench;

namespace {

struct Config {
  DdpSetup setup;
  std::string backend = "both";
  std::string device = "cpu";
  int rounds = 3;
};

// --backend mpi needs a build with MPI and mpirun's (or srun's, PMI's) processes.
void check_mpi_launch() {
  const char* problem = nullptr;
  auto has = [](const char* name) { return std::getenv(name) && *std::getenv(name); };
  if (!dist::mpi_available())
    problem =
        "ringgrad was built without MPI (install libopenmpi-dev and openmpi-bin, then "
        "configure again)";
  else if (!has("OMPI_COMM_WORLD_SIZE") && !has("PMI_SIZE") && !has("PMIX_RANK") &&
           !has("SLURM_PROCID"))
    problem = "not started by mpirun (run mpirun -np 2 ddp --backend mpi)";
  if (!problem) return;
  std::fprintf(stderr, "ddp: --backend mpi: %s\n", problem);
  std::exit(2);
}

Config parse(int argc, char** argv) {
  Config c;
  CLI::App app{
      "ddp: DistributedDataParallel on 2 CPU ranks (threads, or processes over tcp + shared "
      "memory), each pinned to its own core: step time against no communication, the hidden "
      "share of the all-reduce, a bucket-cap sweep and gradient_as_bucket_view",
      "ddp"};
  show_defaults(app);
  app.add_option("layers", c.setup.layers, "transformer blocks of the GPT")
      ->check(CLI::Range(1, 256));
  app.add_option("width", c.setup.width, "model width (a multiple of the 4 heads)")
      ->check(CLI::Range(4, 1 << 16));
  app.add_option("steps", c.setup.steps, "timed steps per measurement")
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("--backend", c.backend,
                 "ranks as threads, as processes (tcp), or both; mpi: this process is one of "
                 "mpirun's ranks (mpirun -np 2 ddp --backend mpi)")
      ->check(CLI::IsMember({"tcp", "threads", "both", "mpi"}));
  app.add_option("--bucket-cap-mb", c.setup.bucket_cap_mb,
                 "bucket cap of the main DDP measurement, MiB")
      ->check(CLI::Range(1e-3, 1e6));
  app.add_option("--zero", c.setup.zero,
                 "3: compare ZeRO-3 (FullyShardedDataParallel) with DDP instead of the DDP "
                 "measurements")
      ->check(CLI::IsMember({0, 3}));
  app.add_option("--device", c.device,
                 "cuda: 2 processes sharing GPU 0 over nccl; sim: 2 thread ranks on sim:0/sim:1 "
                 "(both: step against no communication, hidden share, host syncs per step)")
      ->check(CLI::IsMember({"cpu", "cuda", "sim"}));
  app.add_option("--rounds", c.rounds,
                 "alternating rounds of the main measurement (no communication, then DDP)")
      ->check(CLI::Range(1, 1000));
  parse_flags(app, argc, argv);
  if (c.setup.width % 4 != 0) {
    std::fprintf(stderr, "ddp: width %d must be a multiple of the 4 heads\n", c.setup.width);
    std::exit(2);
  }
  if (c.backend == "mpi") check_mpi_launch();
  c.setup.device = Device(c.device);
  if (c.device != "cpu" && c.setup.zero != 0) {
    std::fprintf(stderr, "ddp: --device %s measures DDP only (no --zero)\n", c.device.c_str());
    std::exit(2);
  }
  return c;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : (v[h - 1] + v[h]) / 2;
}

// R rounds of (no communication, DDP, DDP interleaved with no_sync), one line each, then
// the medians.
void print_main(Ranks ranks, const DdpSetup& setup, int rounds) {
  DdpSetup alone_setup = setup, interleaved_setup = setup;
  alone_setup.use_ddp = false;
  interleaved_setup.interleave = true;
  std::printf("%-6s %16s %12s %7s %12s %9s %7s %8s\n", "round", "no comm ms/step", "DDP ms/step",
              "ratio", "interleaved", "comm ms", "hidden", "buckets");
  std::vector<double> alone_ms, ddp_ms, ratio, one_run, comm, hidden, rank_cpu, comm_cpu;
  DdpResult ddp, mixed;
  for (int r = 1; r <= rounds; ++r) {
    const DdpResult alone = measure_ddp(ranks, alone_setup);
    ddp = measure_ddp(ranks, setup);
    mixed = measure_ddp(ranks, interleaved_setup);
    alone_ms.push_back(alone.ms_per_step), ddp_ms.push_back(ddp.ms_per_step);
    ratio.push_back(ddp.ms_per_step / alone.ms_per_step);
    one_run.push_back(mixed.ms_per_step / mixed.no_sync_ms_per_step);
    comm.push_back(ddp.comm_ms), hidden.push_back(ddp.hidden_fraction);
    rank_cpu.push_back(mixed.rank_extra_cpu_ms), comm_cpu.push_back(mixed.comm_thread_cpu_ms);
    std::printf("%-6d %16.1f %12.1f %7.2f %12.2f %9.2f %6.0f%% %8zu\n", r, alone.ms_per_step,
                ddp.ms_per_step, ratio.back(), one_run.back(), ddp.comm_ms,
                100 * ddp.hidden_fraction, ddp.buckets);
  }
  std::printf("%-34s %10s %10s\n", "medians", "ms/step", "ratio");
  std::printf("%-34s %10.1f %10s\n", "no communication (baseline)", median(alone_ms), "1.00");
  char label[64];
  std::snprintf(label, sizeof label, "DDP, bucket_cap_mb %g", setup.bucket_cap_mb);
  std::printf("%-34s %10.1f %10.2f   (goal <= 1.10; median of the rounds' ratios)\n", label,
              median(ddp_ms), median(ratio));
  std::printf("%-34s %10s %10.2f   (synchronized / no_sync steps, alternating in one run)\n",
              "DDP interleaved with no_sync", "", median(one_run));
  std::printf(
      "all-reduce per step: %.2f ms over %zu buckets, %.0f%% hidden behind backward "
      "(measured by %s; goal >= 70%% with >= 8 buckets)\n",
      median(comm), ddp.buckets, 100 * median(hidden), ddp.clock);
  std::printf("CPU per synchronized step: rank thread +%.2f ms over a no_sync step",
              median(rank_cpu));
  if (median(comm_cpu) >= 0) std::printf(", communication thread %.2f ms", median(comm_cpu));
  std::printf("; %zu of %zu buckets reduced a gradient where it lies\n", mixed.buffers_lent,
              mixed.buckets);
}

// --zero 3: R rounds of (DDP, ZeRO-3), each round's ratio, then the medians.
void print_zero3(Ranks ranks, const DdpSetup& setup, int rounds) {
  DdpSetup ddp_setup = setup;
  ddp_setup.zero = 0;
  std::printf("%-6s %12s %15s %7s\n", "round", "DDP ms/step", "ZeRO-3 ms/step", "ratio");
  std::vector<double> ddp_ms, zero_ms, ratio;
  for (int r = 1; r <= rounds; ++r) {
    ddp_ms.push_back(measure_ddp(ranks, ddp_setup).ms_per_step);
    zero_ms.push_back(measure_ddp(ranks, setup).ms_per_step);
    ratio.push_back(zero_ms.back() / ddp_ms.back());
    std::printf("%-6d %12.1f %15.1f %7.2f\n", r, ddp_ms.back(), zero_ms.back(), ratio.back());
  }
  std::printf(
      "medians: DDP %.1f ms/step, ZeRO-3 %.1f ms/step, ratio %.2f (goal <= 1.20; median "
      "of the rounds' ratios)\n",
      median(ddp_ms), median(zero_ms), median(ratio));
}

void print_sweep(Ranks ranks, const DdpSetup& setup) {
  std::printf("bucket_cap_mb sweep:\n%-10s %8s %10s %10s %9s\n", "cap MiB", "buckets", "ms/step",
              "comm ms", "hidden");
  for (double cap : {1.0, 5.0, 25.0, 100.0}) {
    DdpSetup s = setup;
    s.bucket_cap_mb = cap;
    DdpResult r = measure_ddp(ranks, s);
    std::printf("%-10.0f %8zu %10.1f %10.2f %8.0f%%\n", cap, r.buckets, r.ms_per_step, r.comm_ms,
                100 * r.hidden_fraction);
  }
  DdpSetup view_setup = setup;
  view_setup.gradient_as_bucket_view = true;
  DdpResult view = measure_ddp(ranks, view_setup);
  std::printf(
      "gradient_as_bucket_view (cap %g): %.1f ms/step; saves one gradient-sized copy = "
      "%.2f MiB per rank\n",
      setup.bucket_cap_mb, view.ms_per_step, ddp_model_parameters(setup) * 4.0 / (1 << 20));
}

// --device: R rounds of (no communication, DDP), one line each, then the medians.
void print_device(Ranks ranks, const DdpSetup& setup, int rounds) {
  DdpSetup alone_setup = setup;
  alone_setup.use_ddp = false;
  std::printf("%-6s %16s %12s %7s %9s %7s %8s %11s\n", "round", "no comm ms/step", "DDP ms/step",
              "ratio", "comm ms", "hidden", "buckets", "syncs/step");
  std::vector<double> alone_ms, ddp_ms, ratio, comm, hidden, syncs;
  size_t buckets = 0;
  std::string clock;
  for (int r = 1; r <= rounds; ++r) {
    const DdpResult alone = measure_ddp(ranks, alone_setup);
    const DdpResult ddp = measure_ddp(ranks, setup);
    alone_ms.push_back(alone.ms_per_step), ddp_ms.push_back(ddp.ms_per_step);
    ratio.push_back(ddp.ms_per_step / alone.ms_per_step);
    comm.push_back(ddp.comm_ms), hidden.push_back(ddp.hidden_fraction);
    syncs.push_back(ddp.host_syncs_per_step), buckets = ddp.buckets, clock = ddp.clock;
    std::printf("%-6d %16.2f %12.2f %7.2f %9.2f %6.0f%% %8zu %11.2f\n", r, alone.ms_per_step,
                ddp.ms_per_step, ratio.back(), ddp.comm_ms, 100 * ddp.hidden_fraction, ddp.buckets,
                ddp.host_syncs_per_step);
  }
  std::printf(
      "medians: no communication %.2f ms/step, DDP %.2f ms/step, ratio %.2f; all-reduce %.2f "
      "ms/step over %zu buckets, %.0f%% hidden behind backward (measured by %s); %.2f host "
      "syncs per DDP step (goal 1: the loss read)\n",
      median(alone_ms), median(ddp_ms), median(ratio), median(comm), buckets, 100 * median(hidden),
      clock.c_str(), median(syncs));
}

const char* backend_title(Ranks ranks) {
  switch (ranks) {
    case Ranks::threads:
      return "threads (2 rank threads in this process)";
    case Ranks::processes:
      return "tcp (2 forked processes, shared memory between them)";
    case Ranks::nccl:
      return "nccl (2 forked processes sharing GPU 0, each its own NCCL_HOSTID)";
    default:
      return "mpi (mpirun's processes, MPI_Isend/MPI_Irecv between them)";
  }
}

void run_backend(Ranks ranks, const DdpSetup& setup, int rounds) {
  const std::string note = ranks == Ranks::mpi ? mpi_pinning_note() : pinning_note();
  std::printf("\n== backend %s; %s\n", backend_title(ranks), note.c_str());
  if (!setup.device.is_cpu()) {
    print_device(ranks, setup, rounds);
  } else if (setup.zero == 3) {
    print_zero3(ranks, setup, rounds);
  } else {
    print_main(ranks, setup, rounds);
    print_sweep(ranks, setup);
  }
  std::fflush(stdout);
}

// --backend mpi: joins mpirun's group; only rank 0 prints. Returns the world size.
int join_mpi() {
  dist::ProcessGroup& group = mpi_ranks_group();
  if (group.size() < 2)
    throw std::runtime_error("--backend mpi: world of 1; start it with mpirun -np 2");
  if (group.rank() != 0 && !std::freopen("/dev/null", "w", stdout))
    throw std::runtime_error("cannot silence stdout");
  return group.size();
}

void run(const Config& c) {
  const int world = c.backend == "mpi" ? join_mpi() : 2;
  const long long params = ddp_model_parameters(c.setup);
  std::printf(
      "bench/ddp: GPT %d layers x %d wide (%lld parameters, %.1f MiB of f32 gradients), "
      "world %d, 1 intra-op thread per rank, batch %dx%d per rank, %d steps, %d rounds\n",
      c.setup.layers, c.setup.width, params, params * 4.0 / (1 << 20), world, kBatch, kContext,
      c.setup.steps, c.rounds);
  if (c.device != "cpu") {
    std::printf("device %s\n", c.device.c_str());
    return run_backend(c.device == "cuda" ? Ranks::nccl : Ranks::threads, c.setup, c.rounds);
  }
  if (c.backend == "mpi") run_backend(Ranks::mpi, c.setup, c.rounds);
  if (c.backend == "tcp" || c.backend == "both") run_backend(Ranks::processes, c.setup, c.rounds);
  if (c.backend == "threads" || c.backend == "both") run_backend(Ranks::threads, c.setup, c.rounds);
}

}  // namespace

int main(int argc, char** argv) {
  Config c = parse(argc, argv);
  set_num_threads(1);  // no OpenMP team in this process: it forks the tcp ranks
  try {
    run(c);
    leave_mpi_ranks_group();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ddp: %s\n", e.what());
    return 1;
  }
  return 0;
}
