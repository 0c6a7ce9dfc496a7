// GPT-2 124M data-parallel predictions of bench/simulate; see simulate_predict.h and
// docs/scale.md (the figures and their sources).
#include "bench/simulate_predict.h"

#include <cstdio>
#include <stdexcept>
#include <string>

#include "bench/simulate_gpt2.h"
#include "bench/simulate_model.h"

namespace rg::sim {

void add_predict_options(CLI::App& app, PredictConfig& c) {
  app.add_option("--gpus", c.gpus, "--predict: GPU counts");
  app.add_option("--per-node", c.per_node, "--predict: GPUs per node")->check(CLI::PositiveNumber);
  app.add_option("--grad-bytes", c.grad_bytes, "--predict: bytes per gradient element (4: f32)")
      ->check(CLI::PositiveNumber);
  app.add_option("--nvlink-gbps", c.nvlink_gbps, "--predict: NVLink GB/s per direction per GPU");
  app.add_option("--nvlink-alpha-us", c.nvlink_alpha_us, "--predict: latency per NVLink step");
  app.add_option("--nic-gbit", c.nic_gbit, "--predict: Gbit/s per GPU between nodes");
  app.add_option("--nic-alpha-us", c.nic_alpha_us, "--predict: latency per network step");
  app.add_option("--gpu-reduce-gbps", c.gpu_reduce_gbps,
                 "--predict: GB/s of reduction (0: hidden in the copy)");
  app.add_option("--tokens", c.tokens, "--predict: tokens per GPU per step");
  app.add_option("--tflops", c.tflops, "--predict: achieved TFLOP/s per GPU");
  app.add_option("--optimizer-ms", c.optimizer_ms, "--predict: optimizer step, ms");
  app.add_option("--bucket-cap-mb", c.bucket_cap_mb, "--predict: bucket cap of the step table");
}

namespace {

constexpr double kMiB = 1 << 20;

Cluster cluster(const PredictConfig& c, int gpus) {
  const double gamma = c.gpu_reduce_gbps > 0 ? 1 / (c.gpu_reduce_gbps * 1e9) : 0;
  const int local = std::min(gpus, c.per_node);
  if (gpus % local != 0)
    throw std::invalid_argument("--gpus " + std::to_string(gpus) + " is not whole nodes of " +
                                std::to_string(c.per_node));
  Cluster cl{gpus / local, local, {}, {}};
  cl.shm = Link::uniform({c.nvlink_alpha_us * 1e-6, 1 / (c.nvlink_gbps * 1e9), gamma});
  cl.net = Link::uniform({c.nic_alpha_us * 1e-6, 8 / (c.nic_gbit * 1e9), gamma});
  return cl;
}

// Buckets of the GPT-2 gradients under `cap`, ready times in seconds from backward's start.
std::vector<Bucket> gpt2_buckets(const PredictConfig& c, double cap, double backward) {
  std::vector<Bucket> out;
  double fill = 0;
  const auto grads = gpt2_gradients();
  for (size_t i = 0; i < grads.size(); ++i) {
    fill += grads[i].elements * c.grad_bytes;
    if (fill >= cap || i + 1 == grads.size())
      out.push_back({grads[i].ready_fraction * backward, fill}), fill = 0;
  }
  return out;
}

struct Compute {
  double forward = 0, backward = 0;
};
Compute compute(const PredictConfig& c) {
  const double fwd = gpt2_forward_flops_per_token() * c.tokens / (c.tflops * 1e12);
  return {fwd, 2 * fwd};
}

double total_grad_bytes(const PredictConfig& c) {
  double n = 0;
  for (const GradEvent& g : gpt2_gradients()) n += g.elements;
  return n * c.grad_bytes;
}

Overlap step(const PredictConfig& c, int gpus, double cap, Algo algo) {
  const Cluster cl = cluster(c, gpus);
  const Compute k = compute(c);
  return overlap(gpt2_buckets(c, cap, k.backward), k.forward, k.backward, c.optimizer_ms * 1e-3,
                 [&](double bytes) { return allreduce_seconds(cl, algo, bytes); });
}

void print_allreduce(const PredictConfig& c) {
  const double bytes = total_grad_bytes(c);
  std::printf(
      "\nall-reduce of all %.0f MB of gradients (and of one 25 MiB bucket), ms; busbw GB/s\n",
      bytes / 1e6);
  std::printf("%6s %10s %10s %10s %10s %10s | %8s %8s %8s\n", "GPUs", "ring ms", "busbw",
              "2-level ms", "busbw", "best ms", "25M ring", "25M 2lvl", "25M best");
  for (int g : c.gpus) {
    const Cluster cl = cluster(c, g);
    const double r = allreduce_seconds(cl, Algo::ring, bytes);
    const double t = allreduce_seconds(cl, Algo::two_level, bytes);
    const double b = allreduce_seconds(cl, Algo::best, bytes);
    const auto small = [&](Algo a) { return allreduce_seconds(cl, a, 25 * kMiB) * 1e3; };
    std::printf("%6d %10.2f %10.1f %10.2f %10.1f %10.2f | %8.3f %8.3f %8.3f\n", g, r * 1e3,
                bus_bandwidth(g, bytes, r) / 1e9, t * 1e3, bus_bandwidth(g, bytes, t) / 1e9,
                b * 1e3, small(Algo::ring), small(Algo::two_level), small(Algo::best));
  }
}

void print_caps(const PredictConfig& c) {
  std::printf("\nexposed communication (ms after backward ends), best algorithm per bucket\n%6s",
              "GPUs");
  for (double mb : c.caps_mb) std::printf(" %7.0fM", mb);
  std::printf(" %9s\n", "best cap");
  for (int g : c.gpus) {
    std::printf("%6d", g);
    double best = 1e30, best_mb = 0;
    for (double mb : c.caps_mb) {
      const Overlap o = step(c, g, mb * kMiB, Algo::best);
      std::printf(" %8.2f", o.exposed * 1e3);
      if (o.exposed < best - 1e-9) best = o.exposed, best_mb = mb;
    }
    std::printf(" %8.0fM\n", best_mb);
  }
}

void print_steps(const PredictConfig& c) {
  const Compute k = compute(c);
  const double alone = k.forward + k.backward + c.optimizer_ms * 1e-3;
  std::printf(
      "\nstep time, %.0f MiB buckets: forward %.2f ms, backward %.2f ms, optimizer %.2f ms"
      " (no communication: %.2f ms)\n",
      c.bucket_cap_mb, k.forward * 1e3, k.backward * 1e3, c.optimizer_ms, alone * 1e3);
  std::printf("%6s %10s %10s %10s %10s %10s %11s\n", "GPUs", "ring ms", "2-level ms", "best ms",
              "comm ms", "exposed ms", "efficiency");
  for (int g : c.gpus) {
    const double cap = c.bucket_cap_mb * kMiB;
    const Overlap r = step(c, g, cap, Algo::ring), t = step(c, g, cap, Algo::two_level);
    const Overlap b = step(c, g, cap, Algo::best);
    std::printf("%6d %10.2f %10.2f %10.2f %10.2f %10.2f %10.0f%%\n", g, r.step * 1e3, t.step * 1e3,
                b.step * 1e3, b.comm * 1e3, b.exposed * 1e3, 100 * alone / b.step);
  }
}

}  // namespace

void run_predict(const PredictConfig& c) {
  std::printf(
      "GPT-2 124M, %.0f-byte gradients, %d GPUs per node: NVLink %.0f GB/s, alpha %.1f us;"
      " network %.0f Gbit/s per GPU, alpha %.1f us; reduction %.0f GB/s\n",
      c.grad_bytes, c.per_node, c.nvlink_gbps, c.nvlink_alpha_us, c.nic_gbit, c.nic_alpha_us,
      c.gpu_reduce_gbps);
  print_allreduce(c);
  print_caps(c);
  print_steps(c);
}

}  // namespace rg::sim
