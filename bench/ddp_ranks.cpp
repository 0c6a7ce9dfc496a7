// bench/ddp's ranks: one training configuration timed on 2 thread ranks or 2 forked
// processes, each rank pinned to its own core (see ddp_ranks.h).
#include "bench/ddp_ranks.h"

#include <sched.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <vector>

#include "bench/tcp_ranks.h"
#include "dist/store.h"
#include "dist/tcp_group.h"
#include "dist/threads_group.h"
#include "nn/ddp.h"
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
  if (static_cast<int>(cpus.size()) < kWorld) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpus[rank], &set);
  sched_setaffinity(0, sizeof set, &set);
}

// One rank's timed loop: one warm-up step, then setup.steps timed ones.
DdpResult train(dist::ProcessGroup& group, const DdpSetup& setup) {
  set_num_threads(1);
  auto model = std::make_shared<nn::GPT>(config(setup));
  std::unique_ptr<nn::DistributedDataParallel> ddp;
  if (setup.use_ddp) {
    nn::DDPOptions o;
    o.bucket_cap_mb = setup.bucket_cap_mb;
    o.gradient_as_bucket_view = setup.gradient_as_bucket_view;
    ddp = std::make_unique<nn::DistributedDataParallel>(model, group, o);
  }
  Generator gen{uint64_t(group.rank()) + 1, 0};
  Tensor idx = mul(rand({kBatch, kContext}, DType::f32, kCPU, &gen), double(kVocab)).to(DType::i64);
  double comm = 0, hidden = 0;
  Clock::time_point start;
  for (int step = 0; step <= setup.steps; ++step) {
    if (step == 1) start = Clock::now();
    model->zero_grad();
    if (ddp) ddp->pre_forward();
    auto [logits, loss] = model->forward(idx, idx, Reduction::mean, -1);
    loss.backward();
    if (ddp && step > 0) {
      comm += ddp->reducer().stats().comm_seconds;
      hidden += ddp->reducer().stats().hidden_seconds;
    }
  }
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  DdpResult r;
  r.ms_per_step = 1e3 * seconds / setup.steps;
  r.comm_ms = 1e3 * comm / setup.steps;
  r.hidden_fraction = comm > 0 ? hidden / comm : 0;
  r.buckets = ddp ? ddp->reducer().bucket_count() : 0;
  return r;
}

DdpResult on_threads(const DdpSetup& setup) {
  DdpResult result;
  dist::run_threads(kWorld, [&](dist::ProcessGroup& group) {
    pin_rank(group.rank());
    DdpResult mine = train(group, setup);
    if (group.rank() == 0) result = mine;
  });
  return result;
}

DdpResult on_processes(const DdpSetup& setup) {
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error("pipe failed");
  // pinned before the group: its communication thread inherits the core
  bool ok = run_forked_tcp_ranks(kWorld, "ddp", pin_rank, [&](dist::ProcessGroup& group) {
    DdpResult mine = train(group, setup);
    if (group.rank() == 0 && write(fds[1], &mine, sizeof mine) != sizeof mine)
      throw std::runtime_error("cannot write the result");
  });
  close(fds[1]);
  DdpResult result;
  ok = read(fds[0], &result, sizeof result) == sizeof result && ok;
  close(fds[0]);
  if (!ok) throw std::runtime_error("a tcp rank failed (see above)");
  return result;
}

}  // namespace

long long ddp_model_parameters(const DdpSetup& setup) {
  return static_cast<long long>(nn::GPT(config(setup)).num_parameters());
}

DdpResult measure_ddp(Ranks ranks, const DdpSetup& setup) {
  return ranks == Ranks::threads ? on_threads(setup) : on_processes(setup);
}

std::string pinning_note() {
  std::vector<int> cpus = allowed_cpus();
  if (static_cast<int>(cpus.size()) < kWorld)
    return "ranks not pinned: " + std::to_string(cpus.size()) + " CPU(s) allowed";
  return "rank 0 pinned to core " + std::to_string(cpus[0]) + ", rank 1 to core " +
         std::to_string(cpus[1]) + " (sched_setaffinity)";
}

}  // namespace rg::bench
