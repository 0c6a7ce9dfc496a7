// train_step: one GPT training step on the CPU, split into forward, backward and the
// AdamW step; tokens/s; and the cost of gradient accumulation per micro-step against a
// plain forward+backward of the same micro-batch, both measured in this run (interleaved
// rounds, medians). Accumulation differs from plain only in the loss weighting
// (sum / batch count instead of mean) and in adding into existing .grad tensors. Last, the
// price of activation checkpointing (each block recomputed in backward), paired the same way.
// The MLP uses the tanh GELU, as ../shared/perf/torch_gpt_step.py (bench/vs_pytorch compares the
// two). Minor page faults per steady-state step show whether a step still takes fresh pages
// from the OS (the goal is 0 after warm-up). --device sim (or cuda) runs the step there and
// reports the host synchronizations per step (the step reads its loss, as a training loop
// that logs it does: the goal is that one; index checks wait for it, device_errors.h).
// --cuda-graphs (sim/cuda) also times the step captured once as a graph and replayed
// (docs/cuda-graphs.md) against the eager step, medians measured in this run, by the host's
// clock and by timing events on the device. GPT-2's shape in bf16:
//   train_step 12 768 8 1024 5 1 1 --heads 12 --vocab 50257 --bf16 --device cuda --cuda-graphs
//   train_step [n_layer n_embd batch seq steps threads step_only] [--device cpu|sim|cuda]
//   [--cuda-graphs] [--heads H] [--vocab V] [--bf16]   (step_only=1: no accumulation part)
// (positional, as bench/vs_pytorch and docs/performance.md call it; --help lists them)
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "bench/cli.h"
#include "kernels/cuda/device_errors.h"
#include "kernels/cuda/graph.h"
#include "nn/nn.h"
#include "ringgrad.h"

using namespace rg;
using Clock = std::chrono::steady_clock;

namespace {
double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}
long minor_faults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
Tensor tokens(std::mt19937& rng, int64_t B, int64_t T, int64_t V) {
  std::vector<int64_t> v(B * T);
  for (auto& x : v) x = rng() % V;
  return tensor(v, {B, T});
}

bool g_bf16 = false;  // --bf16: every forward under bf16 autocast (backward outside, as rgtrain)

Tensor forward_loss(nn::GPT& model, const Tensor& x, const Tensor& y) {
  AutocastGuard autocast(DType::bf16, g_bf16);
  return model.forward(x, y).second;
}

// Device time of `work` between two timing events on the compute stream (ms); the host waits
// for the end event.
template <typename Work>
double device_ms(Device device, Work work) {
  gpu::Event start(device, true), end(device, true);
  start.record(gpu::current_stream(device));
  work();
  end.record(gpu::current_stream(device));
  end.synchronize();
  return start.elapsed_ms(end);
}

struct Flags {
  int64_t n_layer = 2, n_embd = 128, batch = 8, seq = 64;
  int steps = 10, threads = 0, step_only = 0;
  std::string device = "cpu";
  bool cuda_graphs = false;
  int64_t heads = 4, vocab = 512;
  bool bf16 = false;
};

Flags parse(int argc, char** argv) {
  Flags f;
  CLI::App app{
      "train_step: one GPT training step on the CPU split into forward, backward and AdamW, "
      "tokens/s, and the cost of gradient accumulation per micro-step. Arguments are "
      "positional: train_step [n_layer n_embd batch seq steps threads step_only]",
      "train_step"};
  bench::show_defaults(app);
  app.add_option("n_layer", f.n_layer, "transformer blocks")->check(CLI::Range(1, 256));
  app.add_option("n_embd", f.n_embd, "model width (a multiple of --heads)")
      ->check(CLI::Range(4, 1 << 16));
  app.add_option("batch", f.batch, "sequences per step (a multiple of 4 for the accumulation part)")
      ->check(CLI::Range(1, 1 << 16));
  app.add_option("seq", f.seq, "tokens per sequence")->check(CLI::Range(1, 1 << 16));
  app.add_option("steps", f.steps, "timed steps (after 2 warm-up steps)")
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("threads", f.threads, "intra-op threads (0: all hardware threads)")
      ->check(CLI::Range(0, 4096));
  app.add_option("step_only", f.step_only, "1: time the step only, skip the accumulation part")
      ->check(CLI::Range(0, 1));
  app.add_option("--device", f.device,
                 "cpu, sim or cuda; on sim/cuda the step also reports host syncs per step "
                 "(sim interprets every kernel: use a small model)")
      ->check(CLI::IsMember({"cpu", "sim", "cuda"}));
  app.add_flag("--cuda-graphs", f.cuda_graphs,
               "sim/cuda: also time the step captured as a graph and replayed, against eager "
               "(default: off)");
  app.add_option("--heads", f.heads, "attention heads (GPT-2: 12, head size 64 at 768)")
      ->check(CLI::Range(1, 1024));
  app.add_option("--vocab", f.vocab, "vocabulary size (GPT-2: 50257)")
      ->check(CLI::Range(2, 1 << 20));
  app.add_flag("--bf16", f.bf16,
               "forward under bf16 autocast (matmuls and attention in bf16, as rgtrain's "
               "--precision bf16; default: off)");
  bench::parse_flags(app, argc, argv);
  if (f.n_embd % f.heads != 0) {
    std::fprintf(stderr, "train_step: n_embd %lld must be a multiple of --heads %lld\n",
                 static_cast<long long>(f.n_embd), static_cast<long long>(f.heads));
    std::exit(2);
  }
  return f;
}
// The full step split into forward | backward | optimizer: medians over `steps` steps after
// 2 warm-up steps, tokens/s, and minor page faults per steady-state step.
void time_full_step(nn::GPT& model, optim::AdamW& opt, const Tensor& x, const Tensor& y,
                    int steps) {
  const int64_t B = x.size(0), T = x.size(1);
  std::vector<double> fwd, bwd, opt_t, total;
  long faults_after_warmup = 0;
  uint64_t syncs_after_warmup = 0;
  const Device device = x.device();
  for (int s = 0; s < steps + 2; ++s) {
    if (s == 2) faults_after_warmup = minor_faults(), syncs_after_warmup = gpu::host_syncs(device);
    opt.zero_grad();
    auto t0 = Clock::now();
    Tensor loss = forward_loss(model, x, y);
    double f = seconds_since(t0);
    auto t1 = Clock::now();
    loss.backward();
    double b = seconds_since(t1);
    auto t2 = Clock::now();
    opt.step();
    if (!device.is_cpu()) loss.item();  // the step's one synchronization, as when logging
    double o = seconds_since(t2);
    if (s < 2) continue;  // warm-up (allocator, first-touch)
    fwd.push_back(f), bwd.push_back(b), opt_t.push_back(o), total.push_back(f + b + o);
  }
  const double step = median(total);
  std::printf(
      "step   %8.2f ms  (forward %.2f ms %.0f%%, backward %.2f ms %.0f%%, AdamW %.2f ms %.0f%%)\n",
      1e3 * step, 1e3 * median(fwd), 100 * median(fwd) / step, 1e3 * median(bwd),
      100 * median(bwd) / step, 1e3 * median(opt_t), 100 * median(opt_t) / step);
  std::printf("tokens/s %8.0f\n", B * T / step);
  std::printf("page faults per step %.1f (after 2 warm-up steps)\n",
              double(minor_faults() - faults_after_warmup) / steps);
  if (!device.is_cpu())
    std::printf("host synchronizations per step on %s: %.1f (reading the loss included)\n",
                device.str().c_str(), double(gpu::host_syncs(device) - syncs_after_warmup) / steps);
}

// Accumulation overhead per micro-step (k = 4 micro-batches of B/4 rows): accumulating
// forward+backward against a plain one of the same micro-batch.
void time_accumulation(nn::GPT& model, const Tensor& x, const Tensor& y, int steps) {
  const int64_t k = 4;
  auto xs = nn::split_micro_batches(x, k), ys = nn::split_micro_batches(y, k);
  const double total_targets = static_cast<double>(nn::count_targets(y));
  // Rounds alternate which variant runs first; the ratio is taken per round (paired), and
  // the median and the best round are printed, since other load on the machine adds noise.
  auto plain_round = [&] {
    double t = 0;
    for (int64_t i = 0; i < k; ++i) {  // plain: fresh gradients each micro-batch
      model.zero_grad();
      auto t0 = Clock::now();
      model.forward(xs[i], ys[i]).second.backward();
      t += seconds_since(t0);
    }
    return t / k;
  };
  auto accum_round = [&] {
    double t = 0;
    model.zero_grad();
    for (int64_t i = 0; i < k; ++i) {  // accumulation: weighted sum loss, grads add up
      auto t0 = Clock::now();
      nn::micro_batch_cross_entropy(model.forward(xs[i]), ys[i], total_targets).backward();
      t += seconds_since(t0);
    }
    return t / k;
  };
  std::vector<double> plain, accum, ratio;
  for (int round = 0; round < 2 * steps + 2; ++round) {
    double p, a;
    if (round % 2) {
      a = accum_round(), p = plain_round();
    } else {
      p = plain_round(), a = accum_round();
    }
    if (round < 2) continue;
    plain.push_back(p), accum.push_back(a), ratio.push_back(a / p);
  }
  std::printf(
      "micro-step (%lld rows): plain forward+backward %.2f ms, accumulating %.2f ms "
      "(medians); overhead: median of paired rounds %+.2f%%, best rounds %+.2f%%\n",
      (long long)xs[0].size(0), 1e3 * median(plain), 1e3 * median(accum), 100 * (median(ratio) - 1),
      100 * (*std::min_element(accum.begin(), accum.end()) /
                 *std::min_element(plain.begin(), plain.end()) -
             1));
}

// Activation checkpointing's price: forward+backward with each block recomputed in backward
// against the plain one, paired rounds alternating which runs first.
void time_checkpointing(nn::GPT& model, const Tensor& x, const Tensor& y, int steps) {
  auto round = [&](bool checkpointed) {
    model.checkpoint_activations = checkpointed;
    model.zero_grad();
    auto t0 = Clock::now();
    forward_loss(model, x, y).backward();
    return seconds_since(t0);
  };
  std::vector<double> plain, ckpt, ratio;
  for (int r = 0; r < 2 * steps + 2; ++r) {
    double p, c;
    if (r % 2) {
      c = round(true), p = round(false);
    } else {
      p = round(false), c = round(true);
    }
    if (r < 2) continue;
    plain.push_back(p), ckpt.push_back(c), ratio.push_back(c / p);
  }
  model.checkpoint_activations = false;
  std::printf(
      "activation checkpointing: forward+backward %.2f ms plain, %.2f ms checkpointed "
      "(medians); cost: median of paired rounds %+.1f%%\n",
      1e3 * median(plain), 1e3 * median(ckpt), 100 * (median(ratio) - 1));
}

// The whole step (zero_grad, forward, backward, AdamW's capturable step) captured once and
// replayed, each replay followed by reading the loss, against the same eager step; the clip
// scale is left out (bench/train_step does not clip).
void time_graph_step(nn::GPT& model, optim::AdamW& opt, const Tensor& x, const Tensor& y,
                     int steps) {
  const Device device = x.device();
  std::vector<double> eager, replayed, eager_events, replayed_events;
  for (int s = 0; s < steps + 2; ++s) {
    auto t0 = Clock::now();
    Tensor loss;
    const double ms = device_ms(device, [&] {
      opt.zero_grad();
      loss = forward_loss(model, x, y);
      loss.backward();
      opt.step();
    });
    loss.item();
    if (s >= 2) eager.push_back(seconds_since(t0)), eager_events.push_back(ms);
  }
  const Tensor scalars = opt.capturable_scalars(x.device());
  opt.prepare_capturable_step(scalars);
  gpu::Graph graph;
  Tensor loss;
  {
    gpu::GraphCapture capture(graph, x.device());
    opt.zero_grad();
    loss = forward_loss(model, x, y);
    loss.backward();
    opt.step_capturable(scalars);
  }
  for (int s = 0; s < steps + 2; ++s) {
    auto t0 = Clock::now();
    if (s > 0) opt.prepare_capturable_step(scalars);
    const double ms = device_ms(device, [&] { graph.replay(); });
    loss.item();
    if (s >= 2) replayed.push_back(seconds_since(t0)), replayed_events.push_back(ms);
  }
  std::printf("graph: replayed step %.2f ms, eager step %.2f ms (host clock, medians): %.2fx\n",
              1e3 * median(replayed), 1e3 * median(eager), median(eager) / median(replayed));
  std::printf("graph: replayed step %.3f ms, eager step %.3f ms (device events, medians): %.2fx\n",
              median(replayed_events), median(eager_events),
              median(eager_events) / median(replayed_events));
}

// The memory report's activations (tensors saved for backward) at their peak, the end of
// forward, per token of the batch: plain, and with each block checkpointed.
void print_activation_bytes(nn::GPT& model, const Tensor& x, const Tensor& y) {
  auto saved_at_end_of_forward = [&](bool checkpointed) {
    model.checkpoint_activations = checkpointed;
    const size_t before = memory_stats(kCPU).categories.at(MemoryCategory::activations);
    Tensor loss = forward_loss(model, x, y);
    return memory_stats(kCPU).categories.at(MemoryCategory::activations) - before;
  };
  const double tokens = double(x.numel());
  const size_t plain = saved_at_end_of_forward(false), ckpt = saved_at_end_of_forward(true);
  model.checkpoint_activations = false;
  std::printf("activations saved for backward: %.0f bytes/token plain, %.0f checkpointed\n",
              plain / tokens, ckpt / tokens);
}

}  // namespace

int main(int argc, char** argv) {
  const Flags flags = parse(argc, argv);
  bench::require_device("train_step", Device(flags.device));
  nn::GPTConfig c;
  c.vocab_size = flags.vocab;
  c.n_layer = flags.n_layer;
  c.n_embd = flags.n_embd;
  c.n_head = flags.heads;
  g_bf16 = flags.bf16;
  c.gelu_approximate = "tanh";
  const int64_t B = flags.batch, T = flags.seq;
  if (flags.threads > 0) set_num_threads(flags.threads);
  c.block_size = T;
  auto model = std::make_shared<nn::GPT>(c);
  const Device device(flags.device);
  model->to(device);
  optim::AdamW opt(model->parameters(), {.lr = 1e-4});
  std::mt19937 rng(0);
  Tensor x = tokens(rng, B, T, c.vocab_size).to(device),
         y = tokens(rng, B, T, c.vocab_size).to(device);
  std::printf(
      "GPT n_layer=%lld n_embd=%lld n_head=%lld vocab=%lld%s, batch %lld x %lld tokens, %lld "
      "params, %d threads\n",
      (long long)c.n_layer, (long long)c.n_embd, (long long)c.n_head, (long long)c.vocab_size,
      flags.bf16 ? " (bf16 autocast)" : "", (long long)B, (long long)T,
      (long long)model->num_parameters(), get_num_threads());
  time_full_step(*model, opt, x, y, flags.steps);
  if (flags.cuda_graphs && !device.is_cpu()) time_graph_step(*model, opt, x, y, flags.steps);
  if (!device.is_cpu()) return 0;  // the rest measures the cpu
  print_activation_bytes(*model, x, y);
  if (flags.step_only == 1) return 0;
  time_accumulation(*model, x, y, flags.steps);
  time_checkpointing(*model, x, y, flags.steps);
  return 0;
}
