// bench/ddp's ranks: one training configuration timed on 2 thread ranks, 2 forked processes
// or mpirun's processes, each rank pinned to its own core, or 2 nccl processes sharing one
// GPU (see ddp_ranks.h).
#include "bench/ddp_ranks.h"

#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "bench/tcp_ranks.h"
#include "dist/init.h"
#include "dist/mpi_group.h"
#include "dist/nccl_group.h"
#include "dist/store.h"
#include "dist/tcp_group.h"
#include "dist/threads_group.h"
#include "kernels/cuda/device_errors.h"
#include "nn/ddp.h"
#include "nn/fsdp.h"
#include "ringgrad.h"

namespace rg::bench {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kWorld = 2;

nn::GPTConfig config(const DdpSetup& s) {
  nn::GPTConfig c;
  c.vocab_size = kVocab;
  c.block_size = kContext;
  c.n_layer = s.layers;
  c.n_head = 4;
  c.n_embd = s.width;
  c.dropout = 0;
  return c;
}

// The CPUs this process may run on, in order.
std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

// Pins the calling thread (and the threads it creates later) to rank's own core.
void pin_rank(int rank) {
  std::vector<int> cpus = allowed_cpus();
  if (static_cast<int>(cpus.size()) < kWorld || rank >= static_cast<int>(cpus.size())) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpus[rank], &set);
  sched_setaffinity(0, sizeof set, &set);
}

// CPU time (user + system) of this thread (RUSAGE_THREAD) or process (RUSAGE_SELF).
double cpu_seconds(int who) {
  rusage usage{};
  getrusage(who, &usage);
  return double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         1e-6 * double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
}

// One training step: forward and backward, synchronized unless `sync` is false (no_sync);
// under FSDP (ZeRO-3) with its gathers and reduce-scatters.
double timed_step(nn::GPT& model, nn::DistributedDataParallel* ddp,
                  nn::FullyShardedDataParallel* fsdp, const Tensor& idx, bool sync) {
  const Clock::time_point start = Clock::now();
  nn::NoSyncGuard guard = ddp && !sync ? ddp->no_sync() : nn::NoSyncGuard();
  model.zero_grad();
  if (ddp) ddp->pre_forward();
  if (fsdp) fsdp->pre_forward();
  auto [logits, loss] = model.forward(idx, idx, Reduction::mean, -1);
  loss.backward();
  if (!idx.device().is_cpu()) (void)loss.item();  // waits for the step's kernels and comm
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// One rank's timed loop: one warm-up step, then setup.steps timed ones (interleaved: twice
// as many, every other one under no_sync).
DdpResult train(dist::ProcessGroup& group, const DdpSetup& setup) {
  set_num_threads(1);
  Device device = setup.device;
  if (device.is_sim()) device.index = group.rank();  // thread ranks: their syncs counted apart
  auto model = std::make_shared<nn::GPT>(config(setup));
  if (!device.is_cpu()) model->to(device);
  std::unique_ptr<nn::DistributedDataParallel> ddp;
  std::unique_ptr<nn::FullyShardedDataParallel> fsdp;
  if (setup.use_ddp && setup.zero == 3) {
    fsdp = std::make_unique<nn::FullyShardedDataParallel>(model, group);
  } else if (setup.use_ddp) {
    nn::DDPOptions o;
    o.bucket_cap_mb = setup.bucket_cap_mb;
    o.gradient_as_bucket_view = setup.gradient_as_bucket_view;
    ddp = std::make_unique<nn::DistributedDataParallel>(model, group, o);
  }
  Generator gen{uint64_t(group.rank()) + 1, 0};
  Tensor idx = mul(rand({kBatch, kContext}, DType::f32, kCPU, &gen), double(kVocab))
                   .to(DType::i64)
                   .to(device);
  const bool interleave = setup.interleave && ddp;
  double seconds[2] = {0, 0}, rank_cpu[2] = {0, 0}, process_cpu[2] = {0, 0}, comm = 0, hidden = 0;
  std::string clock = "host clock";
  timed_step(*model, ddp.get(), fsdp.get(), idx, true);  // warm-up
  const uint64_t syncs = device.is_cpu() ? 0 : gpu::host_syncs(device);
  for (int step = 0; step < (interleave ? 2 : 1) * setup.steps; ++step) {
    const bool sync = !interleave || step % 2 == 1;
    const double rank0 = cpu_seconds(RUSAGE_THREAD), process0 = cpu_seconds(RUSAGE_SELF);
    seconds[sync] += timed_step(*model, ddp.get(), fsdp.get(), idx, sync);
    rank_cpu[sync] += cpu_seconds(RUSAGE_THREAD) - rank0;
    process_cpu[sync] += cpu_seconds(RUSAGE_SELF) - process0;
    if (ddp && sync) {  // after the step's loss read: its device events are complete
      comm += ddp->reducer().stats().comm_seconds;
      hidden += ddp->reducer().stats().hidden_seconds;
      clock = ddp->reducer().stats().clock;
    }
  }
  const double per_step = 1e3 / setup.steps;
  DdpResult r;
  r.ms_per_step = per_step * seconds[1];
  r.no_sync_ms_per_step = per_step * seconds[0];
  r.rank_extra_cpu_ms = interleave ? per_step * (rank_cpu[1] - rank_cpu[0]) : 0;
  r.comm_thread_cpu_ms = per_step * (process_cpu[1] - rank_cpu[1]);
  r.buffers_lent = ddp ? ddp->reducer().stats().buffers_lent : 0;
  r.comm_ms = 1e3 * comm / setup.steps;
  r.hidden_fraction = comm > 0 ? hidden / comm : 0;
  std::snprintf(r.clock, sizeof r.clock, "%s", clock.c_str());
  r.buckets = ddp ? ddp->reducer().bucket_count() : 0;
  if (!device.is_cpu())
    r.host_syncs_per_step =
        double(gpu::host_syncs(device) - syncs) / ((interleave ? 2 : 1) * setup.steps);
  return r;
}

DdpResult on_threads(const DdpSetup& setup) {
  DdpResult result;
  dist::run_threads(kWorld, [&](dist::ProcessGroup& group) {
    pin_rank(group.rank());
    DdpResult mine = train(group, setup);
    if (group.rank() == 0) result = mine;
  });
  result.comm_thread_cpu_ms = -1;  // the process's CPU time includes the other rank's
  return result;
}

// Ranks::nccl: one GPU for both ranks. NCCL refuses two ranks of one host on one device;
// each child gets its own host id, and they talk over sockets on the loopback. The parent
// never touches CUDA (the children fork from it).
std::shared_ptr<dist::ProcessGroup> nccl_rank(std::shared_ptr<dist::Store> store, int rank,
                                              int nproc) {
  for (const char* v : {"NCCL_P2P_DISABLE", "NCCL_SHM_DISABLE", "NCCL_IB_DISABLE"})
    setenv(v, "1", 1);
  setenv("NCCL_SOCKET_IFNAME", "lo", 1);
  setenv("NCCL_HOSTID", ("ringgrad-bench-host-" + std::to_string(rank)).c_str(), 1);
  dist::Options options;
  options.timeout = dist::Milliseconds(60000);
  return dist::make_nccl_group(std::move(store), rank, nproc, 0, options, "bench-ddp");
}

DdpResult on_processes(const DdpSetup& setup, bool nccl) {
  static_assert(std::is_trivially_copyable_v<DdpResult>, "the result crosses a pipe as bytes");
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error("pipe failed");
  // pinned before the group: its communication thread inherits the core
  bool ok = run_forked_tcp_ranks(
      kWorld, "ddp", pin_rank,
      [&](dist::ProcessGroup& group) {
        DdpResult mine = train(group, setup);
        if (group.rank() == 0 && write(fds[1], &mine, sizeof mine) != sizeof mine)
          throw std::runtime_error("cannot write the result");
      },
      nccl ? GroupMaker(nccl_rank) : GroupMaker());
  close(fds[1]);
  DdpResult result;
  ok = read(fds[0], &result, sizeof result) == sizeof result && ok;
  close(fds[0]);
  if (!ok)
    throw std::runtime_error(std::string("a ") + (nccl ? "nccl" : "tcp") +
                             " rank failed (see above)");
  return result;
}

std::shared_ptr<dist::ProcessGroup> g_mpi_group;

}  // namespace

dist::ProcessGroup& mpi_ranks_group() {
  if (!g_mpi_group) {
    // pinned before the group (rank from mpirun's variables): its thread inherits the core
    pin_rank(dist::launch_info_from_env().rank);
    g_mpi_group = dist::make_mpi_group();
  }
  return *g_mpi_group;
}

void leave_mpi_ranks_group() { g_mpi_group.reset(); }

long long ddp_model_parameters(const DdpSetup& setup) {
  return static_cast<long long>(nn::GPT(config(setup)).num_parameters());
}

DdpResult measure_ddp(Ranks ranks, const DdpSetup& setup) {
  if (ranks == Ranks::mpi) return train(mpi_ranks_group(), setup);
  if (ranks == Ranks::threads) return on_threads(setup);
  return on_processes(setup, ranks == Ranks::nccl);
}

std::string pinning_note() {
  std::vector<int> cpus = allowed_cpus();
  if (static_cast<int>(cpus.size()) < kWorld)
    return "ranks not pinned: " + std::to_string(cpus.size()) + " CPU(s) allowed";
  return "rank 0 pinned to core " + std::to_string(cpus[0]) + ", rank 1 to core " +
         std::to_string(cpus[1]) + " (sched_setaffinity)";
}

std::string mpi_pinning_note() {
  mpi_ranks_group();  // pins this rank where mpirun has not bound it
  std::string cores;
  for (int c : allowed_cpus()) {
    if (!cores.empty()) cores += ',';
    cores += std::to_string(c);
  }
  return "rank " + std::to_string(mpi_ranks_group().rank()) + " runs on core(s) " + cores +
         " (mpirun's binding, or sched_setaffinity where it bound none)";
}

}  // namespace rg::bench
