// Op benchmarks on the CPU, every figure next to a baseline measured in the same run:
//   1. dispatch overhead: µs per op on tiny tensors through the public API (rg::add, ...)
//   2. throughput of large ops (GB/s counts every byte read and written once)
//   3. GEMM GFLOP/s through rg::matmul vs Eigen called directly (same threads), ratio
//   4. add GB/s vs memcpy with 1 thread (add: read a + read b + write out; memcpy: read +
//      write), ratio
// Timings are the best of several repetitions, alternating ringgrad and the baseline so
// that noise from other processes hits both.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <vector>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-variable"  // inside Eigen 3.4's AVX bf16 code
// GCC 12 flags its own AVX-512 intrinsics (`__m512 __Y = __Y;`) as maybe-uninitialized
// when Eigen's GEMM packing inlines them on -march=native AVX-512 machines (a GCC bug).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <Eigen/Core>
#pragma GCC diagnostic pop

#include "bench/cli.h"
#include "core/parallel.h"
#include "ops/ops.h"

namespace {

using Clock = std::chrono::steady_clock;

// Seconds per call of fn: calls it in batches until `budget` seconds pass, keeps the best.
double seconds_per_call(const std::function<void()>& fn, double budget = 0.15) {
  fn();  // warm up (allocator caches, page faults)
  int64_t calls = 1;
  double best = 1e30, spent = 0;
  while (spent < budget) {
    auto t0 = Clock::now();
    for (int64_t i = 0; i < calls; ++i) fn();
    double dt = std::chrono::duration<double>(Clock::now() - t0).count();
    best = std::min(best, dt / calls);
    spent += dt;
    if (dt < 0.01) calls *= 2;
  }
  return best;
}

// Best seconds per call of a and b, measured alternately.
std::pair<double, double> compare(const std::function<void()>& a, const std::function<void()>& b,
                                  int rounds = 4, double budget = 0.1) {
  double ta = 1e30, tb = 1e30;
  for (int r = 0; r < rounds; ++r) {
    ta = std::min(ta, seconds_per_call(a, budget));
    tb = std::min(tb, seconds_per_call(b, budget));
  }
  return {ta, tb};
}

void latency_table() {
  std::printf("\n== dispatch overhead: tiny tensors through the public API (1 thread)\n");
  std::printf("%-22s %10s\n", "op", "us/op");
  rg::set_num_threads(1);
  rg::Tensor a = rg::rand({8, 8}), b = rg::rand({8, 8});
  std::vector<std::pair<const char*, std::function<void()>>> ops = {
      {"add [8,8]", [&] { rg::add(a, b); }},
      {"mul [8,8]", [&] { rg::mul(a, b); }},
      {"exp [8,8]", [&] { rg::exp(a); }},
      {"sum [8,8] -> []", [&] { rg::sum(a); }},
      {"matmul 8x8 @ 8x8", [&] { rg::matmul(a, b); }},
      {"softmax [8,8] dim 1", [&] { rg::softmax(a, 1); }},
  };
  for (auto& [name, fn] : ops) std::printf("%-22s %10.2f\n", name, seconds_per_call(fn) * 1e6);
}

void throughput_table(int threads) {
  rg::set_num_threads(threads);
  std::printf("\n== large tensors (%d threads)\n", threads);
  std::printf("%-34s %10s %10s\n", "op", "ms", "GB/s");
  const int64_t n = int64_t(1) << 23;  // 8M floats, 32 MB per tensor
  rg::Tensor a = rg::rand({n}), b = rg::rand({n});
  rg::Tensor logits = rg::randn({4096, 1024}), rows = rg::randn({8192, 1024});
  rg::Tensor w = rg::ones({1024}), bias = rg::zeros({1024});
  rg::Tensor targets = rg::tensor(std::vector<int64_t>(4096, 7));
  double f = 4.0;  // bytes per f32
  std::vector<std::tuple<const char*, std::function<void()>, double>> ops = {
      {"add 8M", [&] { rg::add(a, b); }, 3 * n * f},
      {"mul 8M", [&] { rg::mul(a, b); }, 3 * n * f},
      {"exp 8M", [&] { rg::exp(a); }, 2 * n * f},
      {"gelu 8M (exact)", [&] { rg::gelu(rows); }, 2 * n * f},
      {"gelu 8M (tanh)", [&] { rg::gelu(rows, "tanh"); }, 2 * n * f},
      {"sum 8M -> []", [&] { rg::sum(a); }, n * f},
      {"sum [8192,1024] dim 0", [&] { rg::sum(rows, {0}); }, 8192 * 1024 * f},
      {"softmax [4096,1024] dim 1", [&] { rg::softmax(logits, 1); }, 2 * 4096 * 1024 * f},
      {"layer_norm [8192,1024]", [&] { rg::layer_norm(rows, {1024}, w, bias); },
       2 * 8192 * 1024 * f},
      {"cross_entropy [4096,1024]", [&] { rg::cross_entropy(logits, targets); }, 4096 * 1024 * f},
  };
  for (auto& [name, fn, bytes] : ops) {
    double s = seconds_per_call(fn, 0.3);
    std::printf("%-34s %10.3f %10.2f\n", name, s * 1e3, bytes / s / 1e9);
  }
}

void gemm_table() {
  int threads = rg::get_num_threads();
  std::printf("\n== GEMM f32, C = A @ B, row-major (%d threads): rg::matmul vs Eigen direct\n",
              threads);
  std::printf("%6s %14s %14s %8s\n", "n", "rg GFLOP/s", "Eigen GFLOP/s", "ratio");
  for (int64_t n : {128, 256, 512, 1024}) {
    rg::Tensor a = rg::rand({n, n}), b = rg::rand({n, n});
    using RowMajor = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    RowMajor ea = Eigen::Map<RowMajor>(a.data<float>(), n, n);
    RowMajor eb = Eigen::Map<RowMajor>(b.data<float>(), n, n);
    RowMajor ec(n, n);
    auto [t_rg, t_eigen] = compare([&] { rg::matmul(a, b); },
                                   [&] {
                                     omp_set_num_threads(threads);
                                     ec.noalias() = ea * eb;
                                   },
                                   n >= 512 ? 3 : 4, n >= 512 ? 0.3 : 0.1);
    double flops = 2.0 * n * n * n;
    std::printf("%6lld %14.1f %14.1f %8.3f%s\n", static_cast<long long>(n), flops / t_rg / 1e9,
                flops / t_eigen / 1e9, t_eigen / t_rg, n >= 256 ? "   (goal >= 0.95)" : "");
  }
}

void add_vs_memcpy() {
  rg::set_num_threads(1);
  std::printf("\n== elementwise add vs memcpy, 1 thread\n");
  std::printf("%10s %12s %14s %8s\n", "floats", "add GB/s", "memcpy GB/s", "ratio");
  for (int64_t n : {int64_t(1) << 16, int64_t(1) << 22}) {
    rg::Tensor a = rg::rand({n}), b = rg::rand({n});
    // memcpy moves the same total bytes: 3n floats of traffic = 1.5n floats copied.
    std::vector<float> src(n * 3 / 2, 1.0f), dst(n * 3 / 2);
    auto [t_add, t_copy] = compare([&] { rg::add(a, b); },
                                   [&] { std::memcpy(dst.data(), src.data(), src.size() * 4); });
    double bytes = 3.0 * n * 4;
    std::printf("%10lld %12.2f %14.2f %8.3f   (goal >= 0.8)\n", static_cast<long long>(n),
                bytes / t_add / 1e9, bytes / t_copy / 1e9, t_copy / t_add);
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "ops: CPU op dispatch latency, large-op throughput at 1 and all threads, GEMM against "
      "Eigen and add against memcpy (no flags)",
      "ops"};
  rg::bench::parse_flags(app, argc, argv);
  int hw = rg::get_num_threads();
  rg::manual_seed(0);
  std::printf("ringgrad op benchmarks (CPU, %d hardware threads)\n", hw);
  latency_table();
  throughput_table(1);
  if (hw > 1) throughput_table(hw);
  rg::set_num_threads(hw);
  gemm_table();
  add_vs_memcpy();
  rg::set_num_threads(hw);
  return 0;
}
