// bench/ddp: DistributedDataParallel on CPU thread ranks (world 2).
//  1. step time with DDP vs the same per-rank work with no communication (goal <= 1.10x);
//  2. the fraction of all-reduce time hidden behind backward at default settings;
//  3. a bucket_cap_mb sweep (1, 5, 25, 100) printing step time and bucket count;
//  4. the gradient memory that gradient_as_bucket_view saves.
// Usage: ddp [layers width steps]   (model: a GPT of `layers` x `width`, vocab 512, T 64)
#include "nn/ddp.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "bench/cli.h"
#include "dist/threads_group.h"
#include "ringgrad.h"

using namespace rg;
using Clock = std::chrono::steady_clock;

namespace {

int g_layers = 4, g_width = 128, g_steps = 6;
constexpr int kBatch = 4, kContext = 64, kVocab = 512;

nn::GPTConfig config() {
  nn::GPTConfig c;
  c.vocab_size = kVocab;
  c.block_size = kContext;
  c.n_layer = g_layers;
  c.n_head = 4;
  c.n_embd = g_width;
  c.dropout = 0;
  return c;
}

struct Result {
  double ms_per_step = 0, comm_ms = 0, hidden_fraction = 0;
  size_t buckets = 0;
};

// Runs `steps` timed steps (after one warm-up) on each of 2 thread ranks.
Result run(bool use_ddp, double cap_mb, bool grad_view) {
  Result result;
  dist::run_threads(2, [&](dist::ProcessGroup& group) {
    set_num_threads(1);
    auto model = std::make_shared<nn::GPT>(config());
    std::unique_ptr<nn::DistributedDataParallel> ddp;
    if (use_ddp) {
      nn::DDPOptions o;
      o.bucket_cap_mb = cap_mb;
      o.gradient_as_bucket_view = grad_view;
      ddp = std::make_unique<nn::DistributedDataParallel>(model, group, o);
    }
    Generator gen{uint64_t(group.rank()) + 1, 0};
    Tensor idx = mul(rand({kBatch, kContext}, DType::f32, kCPU, &gen), double(kVocab)).to(DType::i64);
    double comm = 0, hidden = 0;
    Clock::time_point start;
    for (int step = 0; step <= g_steps; ++step) {
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
    if (group.rank() == 0) {
      result.ms_per_step = 1e3 * seconds / g_steps;
      result.comm_ms = 1e3 * comm / g_steps;
      result.hidden_fraction = comm > 0 ? hidden / comm : 0;
      result.buckets = ddp ? ddp->reducer().bucket_count() : 0;
    }
  });
  return result;
}

void parse(int argc, char** argv) {
  CLI::App app{
      "ddp: DistributedDataParallel on 2 CPU thread ranks: step time against no communication, "
      "the hidden share of the all-reduce, a bucket-cap sweep and gradient_as_bucket_view. "
      "Arguments are positional: ddp [layers width steps]",
      "ddp"};
  bench::show_defaults(app);
  app.add_option("layers", g_layers, "transformer blocks of the GPT")->check(CLI::Range(1, 256));
  app.add_option("width", g_width, "model width (a multiple of the 4 heads)")
      ->check(CLI::Range(4, 1 << 16));
  app.add_option("steps", g_steps, "timed steps per measurement")->check(CLI::Range(1, 1 << 20));
  bench::parse_flags(app, argc, argv);
  if (g_width % 4 != 0) {
    std::fprintf(stderr, "ddp: width %d must be a multiple of the 4 heads\n", g_width);
    std::exit(2);
  }
}

}  // namespace

int main(int argc, char** argv) {
  parse(argc, argv);
  auto params = nn::GPT(config()).num_parameters();
  std::printf("bench/ddp: GPT %d layers x %d wide (%lld parameters, %.1f MiB of f32 gradients), "
              "world 2 (threads, 1 intra-op thread each), batch %dx%d per rank, %d steps\n",
              g_layers, g_width, static_cast<long long>(params), params * 4.0 / (1 << 20), kBatch,
              kContext, g_steps);
  Result alone = run(false, 25, false);
  Result ddp = run(true, 25, false);
  std::printf("\n%-34s %10s %10s\n", "", "ms/step", "ratio");
  std::printf("%-34s %10.1f %10s\n", "no communication (baseline)", alone.ms_per_step, "1.00");
  std::printf("%-34s %10.1f %10.2f   (goal <= 1.10)\n", "DDP, default buckets", ddp.ms_per_step,
              ddp.ms_per_step / alone.ms_per_step);
  std::printf("all-reduce per step: %.2f ms over %zu buckets, %.0f%% hidden behind backward (goal >= 70%% with >= 4 buckets)\n",
              ddp.comm_ms, ddp.buckets, 100 * ddp.hidden_fraction);
  std::printf("\nbucket_cap_mb sweep:\n%-10s %8s %10s %10s %9s\n", "cap MiB", "buckets", "ms/step",
              "comm ms", "hidden");
  for (double cap : {1.0, 5.0, 25.0, 100.0}) {
    Result r = run(true, cap, false);
    std::printf("%-10.0f %8zu %10.1f %10.2f %8.0f%%\n", cap, r.buckets, r.ms_per_step, r.comm_ms,
                100 * r.hidden_fraction);
  }
  Result view = run(true, 25, true);
  std::printf("\ngradient_as_bucket_view: %.1f ms/step; saves one gradient-sized copy = %.2f MiB per rank\n",
              view.ms_per_step, params * 4.0 / (1 << 20));
  return 0;
}
