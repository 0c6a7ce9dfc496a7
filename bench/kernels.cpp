// GPU kernel throughput: GB/s of each memory-bound kernel against a device memcpy measured
// in the same run (the ratio is the figure of merit), and matmul TFLOP/s through ringgrad
// against a raw cuBLAS call on the same handle (4096^3 on cuda), and the tensor-core attention
// forward's and backward's TFLOP/s as a fraction of bf16 peak (kernels_attention.cpp, no
// floor). On sim (no GPU) sizes are
// tiny and the run only proves every kernel launches: sim figures mean nothing.
// Each row has a floor (issue 14): elementwise, where, copy, fill, AdamW (one tensor and
// multi-tensor) and the clip scale at >= 0.7x memcpy; the row kernels, reductions (the
// gradient norm's too), embedding and random at >= 0.5x; matmul at >= 0.9x raw cuBLAS. On cuda a
// row below its floor makes the bench exit 1 (bench/gpu_check.sh relies on it); on sim the floors
// are printed, not enforced.
// --sim-check (a -Dsim_check=enabled build): instead of timings, each kernel's memory
// traffic on sim and its predicted H200 time (bench/kernels_sim_check.cpp).
// --part floors|attention: one of the two (bench/gpu_check.sh times them as separate steps);
// --environment: the CUDA runtime, driver, GPUs and libraries found (kernels_environment.cpp).
// Usage: kernels [--device cuda|sim] [--quick] [--sim-check] [--part all|floors|attention]
//                [--environment]
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "bench/cli.h"
#include "bench/kernels_attention.h"
#include "bench/kernels_environment.h"
#include "bench/kernels_sim_check.h"
#include "bench/kernels_timing.h"
#include "core/device_interface.h"
#include "core/op_table.h"
#include "core/tensor.h"
#include "kernels/builtin.h"
#include "kernels/cuda/stream.h"
#if RG_WITH_CUDA
#include <cublas_v2.h>
#include <cuda_runtime.h>
#endif

using namespace rg;

namespace {

using bench::filled;
using bench::time_ms;

constexpr double kStreamingFloor = 0.7;  // elementwise, copy, fill, AdamW: x memcpy GB/s
constexpr double kRowFloor = 0.5;        // row kernels, reductions, random
constexpr double kMatmulFloor = 0.9;     // x raw cuBLAS TFLOP/s

// The rows that missed their floor on a device where floors are enforced.
std::vector<std::string> g_missed;

// Prints "floor F: ok|MISSED" and remembers a miss when `enforce`.
void judge(const std::string& row, double ratio, double floor, bool enforce) {
  bool ok = ratio >= floor;
  std::printf("  floor %.2f%s", floor, enforce ? (ok ? " ok" : " MISSED") : "");
  if (enforce && !ok) g_missed.push_back(row);
}

struct Flags {
  Device device{DeviceType::sim};
  bool quick = false;
  bool sim_check = false;
  bool environment = false;
  std::string part = "all";  // all, floors (memory-bound and matmul tables), attention
};

Flags parse(int argc, char** argv) {
  std::string device_name = device_available(DeviceType::cuda) ? "cuda" : "sim";
  Flags f;
  CLI::App app{
      "kernels: GB/s of each memory-bound GPU kernel against a device memcpy in the same run, "
      "and matmul through ringgrad against raw cuBLAS (on sim only a smoke run)",
      "kernels"};
  bench::show_defaults(app);
  app.add_option("--device", device_name, "device to measure (cuda when one is present)")
      ->check(CLI::IsMember({"cuda", "sim"}));
  app.add_flag("--quick", f.quick,
               "smaller tensors on cuda, 2^24 instead of 2^26 elements (default: off)");
  app.add_flag("--sim-check", f.sim_check,
               "memory traffic and predicted H200 time of each kernel on sim, instead of timings "
               "(a -Dsim_check=enabled build)");
  app.add_option("--part", f.part,
                 "which tables: all, floors (the memory-bound and matmul rows, with their floors) "
                 "or attention (forward and backward TFLOP/s, no floor)")
      ->check(CLI::IsMember({"all", "floors", "attention"}));
  app.add_flag("--environment", f.environment,
               "print the CUDA runtime and driver versions, the GPUs, and where cuBLAS, cuBLASLt "
               "and NCCL load from, then exit (bench/gpu_check.sh's first step; default: off)");
  bench::parse_flags(app, argc, argv);
  f.device = Device(device_name);
  if (f.sim_check) {
    RG_CHECK(
        bench::sim_check_available(),
        "kernels --sim-check: this build has no sim-check (configure with -Dsim_check=enabled)");
    f.device = Device(DeviceType::sim);
  }
  return f;
}

using Report = std::function<void(const char* name, double bytes, double floor,
                                  const std::function<void()>& fn)>;

// The row kernels past a warp's registers, f32: rows of 8192 (a block's registers), 16384
// and 50257 (GPT-2's vocabulary: a block's opt-in shared memory). `m`: scratch.
void long_row_reports(const Report& report, Device device, int64_t n, const Tensor& a,
                      const Tensor& out, const Tensor& m) {
  const KernelTable& k = kernel_table(device.type);
  const double fr = kRowFloor;
  Tensor a8 = make_view(a, {n / 8192, 8192}, {8192, 1}, 0),
         out8 = make_view(out, {n / 8192, 8192}, {8192, 1}, 0);
  report("softmax rows of 8192", 2.0 * n * 4, fr, [&] { k.softmax(out8, a8, 1, false); });
  Tensor a16 = make_view(a, {n / 16384, 16384}, {16384, 1}, 0),
         d16 = make_view(m, {n / 16384, 16384}, {16384, 1}, 0);
  Tensor t16 = filled({n / 16384}, DType::i64, device, 3.0),
         l16 = filled({n / 16384}, DType::f32, device, 1.0);
  report("cross_entropy bwd, 16384", 2.0 * n * 4, fr,
         [&] { k.cross_entropy_backward(d16, a16, t16, l16, -100); });
  const int64_t vocab = 50257, vrows = n / vocab;
  Tensor av = make_view(a, {vrows, vocab}, {vocab, 1}, 0),
         ov = make_view(out, {vrows, vocab}, {vocab, 1}, 0),
         dv = make_view(m, {vrows, vocab}, {vocab, 1}, 0);
  Tensor tv = filled({vrows}, DType::i64, device, 3.0),
         lv = filled({vrows}, DType::f32, device, 1.0);
  report("softmax rows of 50257", 2.0 * vrows * vocab * 4, fr,
         [&] { k.softmax(ov, av, 1, false); });
  report("softmax backward, 50257", 3.0 * vrows * vocab * 4, fr,
         [&] { k.softmax_backward(dv, ov, av, 1, false); });
  report("cross_entropy bwd, 50257", 2.0 * vrows * vocab * 4, fr,
         [&] { k.cross_entropy_backward(dv, av, tv, lv, -100); });
}

// n elements of `flat` as 48 contiguous views shaped like a GPT's parameters: 24 matrices
// and 24 small vectors (biases, layernorms) of 1024.
std::vector<Tensor> parameter_like_views(const Tensor& flat, int64_t n) {
  const int64_t small = 1024, large = n / 24 - small;
  std::vector<Tensor> views;
  int64_t at = 0;
  for (int i = 0; i < 24; ++i) {
    views.push_back(make_view(flat, {large}, {1}, at));
    views.push_back(make_view(flat, {small}, {1}, at + large));
    at += large + small;
  }
  return views;
}

// The kernels a training step runs besides the elementwise and row kernels: where, a full
// sum, embedding, layernorm's whole backward (dx, dweight, dbias), and the optimizer's
// multi-tensor kernels over a GPT-like parameter list (24 matrices, 24 vectors).
void model_kernel_reports(const Report& report, Device device, int64_t n, const Tensor& a,
                          const Tensor& out, const Tensor& m, const Tensor& v) {
  const KernelTable& k = kernel_table(device.type);
  const double fs = kStreamingFloor, fr = kRowFloor;
  const int64_t rows = n / 1024, cols = 1024;
  Tensor cond = filled({n}, DType::b8, device, 1.0);
  report("where", n * 13.0, fs, [&] { k.where(out, cond, a, m); });
  Tensor total = empty({1}, DType::f32, device);
  report("reduce sum, all", n * 4.0, fr, [&] { k.reduce(ReduceOp::sum, total, a, {0}); });
  Tensor ids = empty({rows}, DType::i64);
  for (int64_t r = 0; r < rows; ++r) ids.data<int64_t>()[r] = (r * 7) % rows;  // a permutation
  Tensor idx = ids.to(device), a2 = make_view(a, {rows, cols}, {cols, 1}, 0),
         out2 = make_view(out, {rows, cols}, {cols, 1}, 0);
  report("embedding rows of 1024", 2.0 * n * 4 + rows * 8.0, fr,
         [&] { k.embedding(out2, a2, idx); });
  Tensor dy = make_view(m, {rows, cols}, {cols, 1}, 0), w = filled({cols}, DType::f32, device, 1),
         dw = empty({cols}, DType::f32, device), db = empty({cols}, DType::f32, device);
  Tensor mean = filled({rows}, DType::f32, device, 0), rstd = filled({rows}, DType::f32, device, 1);
  report("layernorm bwd dx+dw+db, 1024", 3.0 * n * 4 + rows * 8.0 + cols * 12.0, fr,
         [&] { k.layernorm_backward(out2, dw, db, dy, a2, mean, rstd, w); });
  std::vector<AdamWTensors> sets;
  const auto ps = parameter_like_views(out, n), gs = parameter_like_views(a, n),
             ms = parameter_like_views(m, n), vs = parameter_like_views(v, n);
  int64_t listed = 0;
  for (size_t i = 0; i < ps.size(); ++i)
    sets.push_back({ps[i], gs[i], ms[i], vs[i]}), listed += ps[i].numel();
  AdamWArgs adamw{1e-3, 0.9, 0.999, 1e-8, 0.1, 1};
  report("adamw_multi, 48 tensors", 7.0 * listed * 4, fs, [&] { k.adamw_multi(sets, adamw, 1.0); });
  Tensor sums = empty({int64_t(gs.size())}, DType::f64, device);
  report("sum_squares_multi, 48", listed * 4.0, fr, [&] { k.sum_squares_multi(sums, gs); });
  report("scale_multi, 48 tensors", 2.0 * listed * 4, fs, [&] { k.scale_multi(gs, 1.0); });
}

// Each memory-bound kernel on n f32 elements (rows of 1024 where it has rows), in GB/s
// against a device memcpy of the same tensor; with sim_check, each kernel's traffic instead.
void memory_bound_table(Device device, int64_t n, int iters, bool sim_check) {
  const KernelTable& k = kernel_table(device.type);
  Tensor a = filled({n}, DType::f32, device, 1.0), b = filled({n}, DType::f32, device, 2.0);
  Tensor out = empty({n}, DType::f32, device);
  if (sim_check) bench::sim_check_header();
  double memcpy_ms = sim_check ? 1 : time_ms(device, iters, [&] { k.copy(out, a); });
  double memcpy_gbs = 2.0 * n * 4 / memcpy_ms / 1e6;
  if (!sim_check)
    std::printf("%-28s %9.3f ms %8.1f GB/s  (baseline)\n", "device memcpy", memcpy_ms, memcpy_gbs);

  auto report = [&](const char* name, double bytes, double floor, const std::function<void()>& fn) {
    if (sim_check) return bench::sim_check_row(name, bytes, fn);
    double ms = time_ms(device, iters, fn);
    double gbs = bytes / ms / 1e6;
    std::printf("%-28s %9.3f ms %8.1f GB/s  %5.2fx memcpy", name, ms, gbs, gbs / memcpy_gbs);
    judge(name, gbs / memcpy_gbs, floor, device.is_cuda());
    std::printf("\n");
  };
  const double fs = kStreamingFloor, fr = kRowFloor;
  int64_t rows = n / 1024, cols = 1024;
  Tensor a2 = make_view(a, {rows, cols}, {cols, 1}, 0);
  Tensor out2 = make_view(out, {rows, cols}, {cols, 1}, 0);
  Tensor at = make_view(a, {cols, rows}, {1, cols}, 0);
  Tensor outt = make_view(out, {cols, rows}, {rows, 1}, 0);
  Tensor row_out = empty({rows, 1}, DType::f32, device),
         col_out = empty({1, cols}, DType::f32, device);
  Tensor mean = empty({rows}, DType::f32, device), rstd = empty({rows}, DType::f32, device);
  Tensor w = filled({cols}, DType::f32, device, 1.0),
         bias = filled({cols}, DType::f32, device, 0.0);
  Tensor targets = filled({rows}, DType::i64, device, 3.0);
  Tensor loss = empty({rows}, DType::f32, device);
  Tensor m = filled({n}, DType::f32, device, 0.0), v = filled({n}, DType::f32, device, 0.0);
  Tensor a_bf16 = empty({n}, DType::bf16, device);
  AdamWArgs adamw{1e-3, 0.9, 0.999, 1e-8, 0.1, 1};

  report("unary exp", 2.0 * n * 4, fs, [&] { k.unary(UnaryOp::exp, out, a); });
  report("unary gelu", 2.0 * n * 4, fs, [&] { k.unary(UnaryOp::gelu, out, a); });
  report("binary add", 3.0 * n * 4, fs, [&] { k.binary(BinaryOp::add, out, a, b); });
  report("binary add, row broadcast", 2.0 * n * 4 + cols * 4, fs, [&] {
    k.binary(BinaryOp::add, out2, a2, make_view(w, {rows, cols}, {0, 1}, 0));
  });
  report("copy transpose", 2.0 * n * 4, fs, [&] { k.copy(outt, at); });
  report("copy f32 -> bf16", n * 6.0, fs, [&] { k.copy(a_bf16, a); });
  report("fill", n * 4.0, fs, [&] { k.fill(out, 0.5); });
  report("reduce sum over rows", n * 4.0, fr, [&] { k.reduce(ReduceOp::sum, row_out, a2, {1}); });
  report("reduce sum over columns", n * 4.0, fr,
         [&] { k.reduce(ReduceOp::sum, col_out, a2, {0}); });
  report("softmax rows of 1024", 2.0 * n * 4, fr, [&] { k.softmax(out2, a2, 1, false); });
  report("layernorm rows of 1024", 2.0 * n * 4, fr,
         [&] { k.layernorm(out2, mean, rstd, a2, w, bias, 1e-5); });
  report("cross_entropy rows of 1024", n * 4.0, fr,
         [&] { k.cross_entropy(loss, a2, targets, -100); });
  Tensor dlogits = make_view(m, {rows, cols}, {cols, 1}, 0),
         dloss = filled({rows}, DType::f32, device, 1.0);
  report("softmax backward, 1024", 3.0 * n * 4, fr,
         [&] { k.softmax_backward(dlogits, out2, a2, 1, false); });
  report("layernorm dx, rows of 1024", 3.0 * n * 4 + rows * 8.0, fr,
         [&] { k.layernorm_backward(dlogits, Tensor(), Tensor(), out2, a2, mean, rstd, w); });
  report("cross_entropy bwd, 1024", 2.0 * n * 4, fr,
         [&] { k.cross_entropy_backward(dlogits, a2, targets, dloss, -100); });
  long_row_reports(report, device, n, a, out, m);
  report("random normal", n * 4.0, fr, [&] { k.random(out, RandomKind::normal, 1, 0); });
  report("adamw", 7.0 * n * 4, fs, [&] { k.adamw(out, a, m, v, adamw); });
  model_kernel_reports(report, device, n, a, out, m, v);
  if (sim_check) bench::sim_check_footer();
}

// matmul: ringgrad's kernel (transpose plumbing included) against the raw cuBLAS call, f32
// (and tf32 on cuda), then bf16.
void matmul_table(Device device) {
  const KernelTable& k = kernel_table(device.type);
  const bool gpu = device.is_cuda();
  int64_t s = gpu ? 4096 : 128;
  for (bool tf32 : {false, true}) {
    if (tf32 && !gpu) break;
    gpu::set_allow_tf32(tf32);
    Tensor x = filled({1, s, s}, DType::f32, device, 0.01),
           y = filled({1, s, s}, DType::f32, device, 0.02);
    Tensor z = empty({1, s, s}, DType::f32, device);
    double flops = 2.0 * s * s * s;
    double ms = time_ms(device, gpu ? 10 : 1, [&] { k.matmul(z, x, y); });
    std::printf("matmul %lld^3 f32%s: ringgrad %.1f TFLOP/s", static_cast<long long>(s),
                tf32 ? " (tf32)" : "", flops / ms / 1e9);
#if RG_WITH_CUDA
    if (gpu) {
      // The bench's own cuBLAS handle on ringgrad's compute stream (only installed headers:
      // the library's handle cache is internal).
      gpu::Stream stream = gpu::current_stream(device);  // also makes `device` current
      cublasHandle_t handle = nullptr;
      if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) {
        throw Error("kernels: cublasCreate failed");
      }
      cublasSetStream(handle, static_cast<cudaStream_t>(stream.handle));
      float one = 1, zero = 0;
      double raw = time_ms(device, 10, [&] {
        cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, int(s), int(s), int(s), &one, y.data_ptr(),
                     CUDA_R_32F, int(s), x.data_ptr(), CUDA_R_32F, int(s), &zero, z.data_ptr(),
                     CUDA_R_32F, int(s), tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F,
                     CUBLAS_GEMM_DEFAULT);
      });
      cublasDestroy(handle);
      std::printf(", raw cuBLAS %.1f TFLOP/s, ratio %.2f", flops / raw / 1e9, raw / ms);
      judge(tf32 ? "matmul f32 (tf32)" : "matmul f32", raw / ms, kMatmulFloor, true);
    }
#endif
    if (!gpu) std::printf("  floor %.2f x raw cuBLAS (cuda only)", kMatmulFloor);
    std::printf("\n");
  }
  gpu::set_allow_tf32(false);
  {
    Tensor x = filled({1, s, s}, DType::bf16, device, 0.01),
           y = filled({1, s, s}, DType::bf16, device, 0.02);
    Tensor z = empty({1, s, s}, DType::bf16, device);
    double ms = time_ms(device, gpu ? 10 : 1, [&] { k.matmul(z, x, y); });
    std::printf("matmul %lld^3 bf16: ringgrad %.1f TFLOP/s\n", static_cast<long long>(s),
                2.0 * s * s * s / ms / 1e9);
  }
}

void print_allocator_stats(Device device) {
  AllocatorStats st = memory_stats(device);
  std::printf(
      "allocator: allocated %.1f MiB, reserved %.1f MiB, peak %.1f MiB, %llu system allocations\n",
      st.allocated / 1048576.0, st.reserved / 1048576.0, st.peak_allocated / 1048576.0,
      static_cast<unsigned long long>(st.system_allocs));
}

}  // namespace

int main(int argc, char** argv) {
  const Flags flags = parse(argc, argv);
  if (flags.environment) return bench::print_environment();
  const Device device = flags.device;
  bench::require_device("kernels", device);
  const bool gpu = device.is_cuda();
  const int64_t n = gpu ? (flags.quick ? int64_t(1) << 24 : int64_t(1) << 26) : int64_t(1) << 16;
  const int iters = gpu ? 20 : 2;
  if (flags.sim_check) {  // matmul is cuBLAS (an Eigen shim on sim): nothing to instrument
    memory_bound_table(device, n, iters, true);
    return 0;
  }
  std::printf("device %s, %lld f32 elements per tensor%s\n", device.str().c_str(),
              static_cast<long long>(n),
              gpu ? "" : " (sim: launch check only, figures meaningless)");
  const bool floors = flags.part != "attention";
  if (floors) {
    memory_bound_table(device, n, iters, false);
    matmul_table(device);
  }
  if (flags.part != "floors") bench::attention_table(device);
  print_allocator_stats(device);
  if (!gpu && floors)
    std::printf("floors: printed, enforced on cuda only (sim figures mean nothing)\n");
  if (!g_missed.empty()) {
    std::printf("kernels bench: %zu FLOORS MISSED:", g_missed.size());
    for (const std::string& row : g_missed) std::printf(" [%s]", row.c_str());
    std::printf("\n");
    return 1;
  }
  std::printf("kernels bench: OK\n");
  return 0;
}
