// bench/ddp's measurement of one configuration on 2 ranks, run either as threads of this
// process (the threads backend) or as 2 forked processes joined by a tcp group (shared
// memory between them, as rgrun's local ranks use). Each rank is pinned to its own core when
// the affinity mask allows 2; a forked rank is pinned before its group exists, so its
// communication thread shares that core, while the threads backend's communication threads
// (created before the rank threads) float. Ranks::mpi: this process is one rank of mpirun's
// (every rank runs the same measurements), joined by the mpi backend, pinned likewise unless
// mpirun already bound it to one core. Ranks::nccl: 2 forked processes on GPU 0, joined by
// the nccl backend, each its own NCCL "host" (NCCL_HOSTID), as tests/dist/test_nccl.cpp runs
// them. With a device (cuda, sim) the model and batch live there, and each step ends with the
// loss read (its one host synchronization), so the host clock times the device's work.
#pragma once
#include <string>

#include "dist/process_group.h"

namespace rg::bench {

enum class Ranks { threads, processes, mpi, nccl };

struct DdpSetup {
  int layers = 4, width = 256, steps = 6;
  bool use_ddp = true;
  double bucket_cap_mb = 1;
  bool gradient_as_bucket_view = false;
  // DDP only: steps alternate between no_sync (no communication) and synchronized ones, so
  // both are timed within the same second of the host's drifting speed.
  bool interleave = false;
  // 3: nn::FullyShardedDataParallel (ZeRO-3, prefetch on) instead of DDP (with use_ddp).
  int zero = 0;
  // Where the model and batch live: cpu, cuda (Ranks::nccl) or sim (thread ranks on sim:0
  // and sim:1, a path to try the device measurement on a CPU).
  Device device = kCPU;
};

struct DdpResult {
  double ms_per_step = 0;      // rank 0, mean over the timed steps (after one warm-up step)
  double comm_ms = 0;          // all-reduce time per step (BucketStats::comm_seconds)
  double hidden_fraction = 0;  // share of it that overlapped backward
  size_t buckets = 0;
  // Interleaved runs (rank 0): the no_sync steps' mean, the extra CPU time of the rank's own
  // thread in a synchronized step over a no_sync one (copies into buckets, launches), the CPU
  // time of its other threads per synchronized step (communication), and how many buckets
  // reduced a gradient where it lies in the last step.
  double no_sync_ms_per_step = 0;
  double rank_extra_cpu_ms = 0;
  double comm_thread_cpu_ms = 0;
  size_t buffers_lent = 0;
  double host_syncs_per_step = 0;  // device runs: host synchronizations (1 = the loss read)
  // What comm_ms and hidden_fraction were measured with (BucketStats::clock): "device events"
  // where the collectives run on device streams, "host clock" elsewhere. An array, not a
  // string: a forked rank sends this struct through a pipe as bytes (on_processes).
  char clock[24] = "host clock";
};

constexpr int kBatch = 4, kContext = 64, kVocab = 512;

// Parameters of the GPT that `setup` describes.
long long ddp_model_parameters(const DdpSetup& setup);
// Runs `setup` on 2 ranks (mpi: on every rank of MPI_COMM_WORLD; rank 0's result is
// meaningful); throws std::runtime_error when a rank fails.
DdpResult measure_ddp(Ranks ranks, const DdpSetup& setup);
// Ranks::mpi: this process's group (joined at the first call: collective) and its release
// (before main returns, ahead of MPI_Finalize).
dist::ProcessGroup& mpi_ranks_group();
void leave_mpi_ranks_group();
// "rank 0 on core 0, rank 1 on core 1", or why the ranks are not pinned.
std::string pinning_note();
// Ranks::mpi: the cores this rank may run on (mpirun's binding, or pin_rank's).
std::string mpi_pinning_note();

}  // namespace rg::bench
