// The fused kernels on sim/cuda against the cpu kernels: softmax/log_softmax (+backward)
// along inner and outer dims, layernorm (+backward, with and without affine), cross-entropy
// (+backward, ignore_index, bad targets), embedding (+backward, repeated and bad indices),
// Philox random (identical numbers), AdamW, fused attention (+backward, causal or not, T != S).
#include <cstring>

#include "kernels/adamw_scalars.h"
#include "kernels/cuda/device_errors.h"
#include "ops/ops.h"
#include "tests/kernels/helpers.h"

using namespace rg;
using namespace rg::test;

namespace {
double loose(DType dtype) { return dtype == DType::f32 ? 1e-4 : -1; }
}  // namespace

GPU_KERNEL_TEST(softmax_and_backward_match_cpu_along_any_dim) {
  for (DType dtype : {DType::f32, DType::f64, DType::bf16})
    for (const Shape& shape : {Shape{3, 1025}, Shape{4, 33, 5}, Shape{1, 1}, Shape{7, 31}})
      for (int64_t dim = 0; dim < static_cast<int64_t>(shape.size()); ++dim)
        for (bool log : {false, true}) {
          INFO("dim ", dim, log ? " log" : "");
          Tensor x = random_tensor(shape, dtype, 1, -4, 4);
          Tensor want = empty(shape, dtype), got = empty(shape, dtype, device);
          cpu_kernels().softmax(want, x, dim, log);
          kernels_of(device).softmax(got, mirror(x, device), dim, log);
          expect_close(got, want, loose(dtype), "softmax");
          Tensor dy = random_tensor(shape, dtype, 2);
          Tensor dwant = empty(shape, dtype), dgot = empty(shape, dtype, device);
          cpu_kernels().softmax_backward(dwant, dy, want, dim, log);
          kernels_of(device).softmax_backward(dgot, mirror(dy, device), mirror(want, device), dim,
                                              log);
          expect_close(dgot, dwant, loose(dtype), "softmax_backward");
        }
}

GPU_KERNEL_TEST(layernorm_and_backward_match_cpu) {
  for (DType dtype : {DType::f32, DType::f64, DType::bf16})
    for (int64_t c : {1, 31, 32, 33, 1025})
      for (bool affine : {true, false}) {
        INFO("C ", c, affine ? " affine" : "");
        int64_t n = 5;
        DType sdt = dtype == DType::f64 ? DType::f64 : DType::f32;
        Tensor x = random_tensor({n, c}, dtype, 3, -3, 3);
        Tensor w = affine ? random_tensor({c}, dtype, 4) : Tensor();
        Tensor b = affine ? random_tensor({c}, dtype, 5) : Tensor();
        Tensor out = empty({n, c}, dtype), mean = empty({n}, sdt), rstd = empty({n}, sdt);
        cpu_kernels().layernorm(out, mean, rstd, x, w, b, 1e-5);
        Tensor gout = empty({n, c}, dtype, device), gmean = empty({n}, sdt, device),
               grstd = empty({n}, sdt, device);
        Tensor wd = affine ? mirror(w, device) : Tensor(),
               bd = affine ? mirror(b, device) : Tensor();
        kernels_of(device).layernorm(gout, gmean, grstd, mirror(x, device), wd, bd, 1e-5);
        expect_close(gout, out, loose(dtype), "layernorm out");
        expect_close(gmean, mean, 1e-5, "layernorm mean");
        expect_close(grstd, rstd, 1e-5, "layernorm rstd");

        Tensor dy = random_strided({n, c}, dtype, 6);
        Tensor dx = empty({n, c}, dtype), dw = affine ? empty({c}, dtype) : Tensor(),
               db = affine ? empty({c}, dtype) : Tensor();
        cpu_kernels().layernorm_backward(dx, dw, db, dy, x, mean, rstd, w);
        Tensor gdx = empty({n, c}, dtype, device);
        Tensor gdw = affine ? empty({c}, dtype, device) : Tensor();
        Tensor gdb = affine ? empty({c}, dtype, device) : Tensor();
        kernels_of(device).layernorm_backward(gdx, gdw, gdb, mirror(dy, device), mirror(x, device),
                                              mirror(mean, device), mirror(rstd, device), wd);
        expect_close(gdx, dx, dtype == DType::f32 ? 1e-3 : -1, "layernorm dx");
        if (affine) {
          expect_close(gdw, dw, loose(dtype), "layernorm dweight");
          expect_close(gdb, db, loose(dtype), "layernorm dbias");
        }
      }
}

// Many rows: the weight and bias gradients are summed in row chunks and then combined.
GPU_KERNEL_TEST(layernorm_parameter_gradients_over_many_rows) {
  for (DType dtype : {DType::f32, DType::f64, DType::bf16})
    for (int64_t c : {33, 200}) {
      INFO("C ", c);
      const int64_t n = 1000;
      DType sdt = dtype == DType::f64 ? DType::f64 : DType::f32;
      Tensor x = random_tensor({n, c}, dtype, 13, -3, 3), w = random_tensor({c}, dtype, 14);
      Tensor mean = empty({n}, sdt), rstd = empty({n}, sdt), out = empty({n, c}, dtype);
      cpu_kernels().layernorm(out, mean, rstd, x, w, Tensor(), 1e-5);
      Tensor dy = random_tensor({n, c}, dtype, 16);
      Tensor dw = empty({c}, dtype), db = empty({c}, dtype);
      cpu_kernels().layernorm_backward(Tensor(), dw, db, dy, x, mean, rstd, w);
      Tensor gdw = empty({c}, dtype, device), gdb = empty({c}, dtype, device);
      kernels_of(device).layernorm_backward(Tensor(), gdw, gdb, mirror(dy, device),
                                            mirror(x, device), mirror(mean, device),
                                            mirror(rstd, device), mirror(w, device));
      expect_close(gdw, dw, loose(dtype), "layernorm dweight");
      expect_close(gdb, db, loose(dtype), "layernorm dbias");
    }
}

namespace {
// cross-entropy (ignore_index -100) and its backward on `device` against the cpu kernels.
void check_cross_entropy(Device device, const Tensor& logits, const Tensor& targets) {
  const DType dtype = logits.dtype();
  const int64_t n = logits.size(0), d = logits.size(1);
  Tensor loss = empty({n}, dtype), gloss = empty({n}, dtype, device);
  cpu_kernels().cross_entropy(loss, logits, targets, -100);
  Tensor dl = mirror(logits, device), dt = mirror(targets, device);
  kernels_of(device).cross_entropy(gloss, dl, dt, -100);
  expect_close(gloss, loss, loose(dtype), "cross_entropy");
  Tensor dloss = random_tensor({n}, dtype, 26);
  Tensor dlogits = empty({n, d}, dtype), gdlogits = empty({n, d}, dtype, device);
  cpu_kernels().cross_entropy_backward(dlogits, logits, targets, dloss, -100);
  kernels_of(device).cross_entropy_backward(gdlogits, dl, dt, mirror(dloss, device), -100);
  expect_close(gdlogits, dlogits, loose(dtype), "cross_entropy_backward");
}
}  // namespace

GPU_KERNEL_TEST(cross_entropy_and_backward_match_cpu) {
  for (DType dtype : {DType::f32, DType::f64, DType::bf16})
    for (int64_t c : {2, 33, 1025}) {
      Tensor targets = random_tensor({6}, DType::i64, 8, 0, double(c - 1));
      store(targets, 2, -100);  // ignored row
      check_cross_entropy(device, random_strided({6, c}, dtype, 7), targets);
    }
}

namespace {
// The row kernels over n rows of d elements against the cpu kernels; row `inf` is all -inf
// for softmax and cross-entropy (NaN as on the cpu), row 2 of the cross-entropy ignored.
void check_softmax_rows(Device device, DType dtype, int64_t n, int64_t d, int64_t inf) {
  Tensor x = random_tensor({n, d}, dtype, 21, -4, 4), dy = random_tensor({n, d}, dtype, 22);
  Tensor xinf = random_tensor({n, d}, dtype, 21, -4, 4);
  for (int64_t j = 0; j < d; ++j) store(xinf, inf * d + j, -INFINITY);
  for (bool log : {false, true}) {
    Tensor want = empty({n, d}, dtype), got = empty({n, d}, dtype, device);
    cpu_kernels().softmax(want, xinf, 1, log);
    kernels_of(device).softmax(got, mirror(xinf, device), 1, log);
    expect_close(got, want, loose(dtype), log ? "log_softmax" : "softmax");
    cpu_kernels().softmax(want, x, 1, log);
    Tensor dwant = empty({n, d}, dtype), dgot = empty({n, d}, dtype, device);
    cpu_kernels().softmax_backward(dwant, dy, want, 1, log);
    kernels_of(device).softmax_backward(dgot, mirror(dy, device), mirror(want, device), 1, log);
    expect_close(dgot, dwant, loose(dtype), log ? "log_softmax_backward" : "softmax_backward");
  }
}

void check_layernorm_rows(Device device, DType dtype, int64_t n, int64_t d) {
  Tensor x = random_tensor({n, d}, dtype, 21, -4, 4), dy = random_tensor({n, d}, dtype, 22);
  DType sdt = dtype == DType::f64 ? DType::f64 : DType::f32;
  Tensor w = random_tensor({d}, dtype, 23), b = random_tensor({d}, dtype, 24);
  Tensor out = empty({n, d}, dtype), mean = empty({n}, sdt), rstd = empty({n}, sdt);
  cpu_kernels().layernorm(out, mean, rstd, x, w, b, 1e-5);
  Tensor gout = empty({n, d}, dtype, device), gmean = empty({n}, sdt, device),
         grstd = empty({n}, sdt, device);
  kernels_of(device).layernorm(gout, gmean, grstd, mirror(x, device), mirror(w, device),
                               mirror(b, device), 1e-5);
  expect_close(gout, out, loose(dtype), "layernorm out");
  expect_close(gmean, mean, 1e-5, "layernorm mean");
  expect_close(grstd, rstd, 1e-5, "layernorm rstd");
  Tensor dx = empty({n, d}, dtype), gdx = empty({n, d}, dtype, device);
  cpu_kernels().layernorm_backward(dx, Tensor(), Tensor(), dy, x, mean, rstd, w);
  kernels_of(device).layernorm_backward(gdx, Tensor(), Tensor(), mirror(dy, device),
                                        mirror(x, device), mirror(mean, device),
                                        mirror(rstd, device), mirror(w, device));
  expect_close(gdx, dx, dtype == DType::f32 ? 1e-3 : -1, "layernorm dx");
}

void check_cross_entropy_rows(Device device, DType dtype, int64_t n, int64_t d, int64_t inf) {
  Tensor xinf = random_tensor({n, d}, dtype, 21, -4, 4);
  for (int64_t j = 0; j < d; ++j) store(xinf, inf * d + j, -INFINITY);
  Tensor targets = random_tensor({n}, DType::i64, 25, 0, double(d - 1));
  if (n > 2) store(targets, 2, -100);  // ignored row
  check_cross_entropy(device, xinf, targets);
}
}  // namespace

// Every launch shape of the row kernels (kernels/cuda/row_group.cuh): a warp per row with
// 1, 2, 24 and 32 slots per lane (D = 1, 31..33, 513, 768, 769, 1024), a block per row with the row
// in registers (1025, 5000) or in shared memory (9000 > 8192 f32 / 4096 f64 elements); 5 rows (not
// a multiple of the 4 rows of a warp-shape block), row 3 all -inf.
GPU_KERNEL_TEST(row_kernels_match_cpu_at_every_shape_crossover) {
  for (DType dtype : {DType::f32, DType::f64, DType::bf16})
    for (int64_t d : {1, 31, 32, 33, 513, 768, 769, 1024, 1025, 5000, 9000}) {
      INFO("D ", d);
      check_softmax_rows(device, dtype, 5, d, 3);
      check_layernorm_rows(device, dtype, 5, d);
      check_cross_entropy_rows(device, dtype, 5, d, 3);
    }
}

// Rows past a block's registers: the last register shape (8192 f32, 4096 f64) and the first
// shared-memory one, a row in opt-in dynamic shared memory (50257: GPT-2's vocabulary;
// 20000 f64), where the backwards fit only one of their two rows (f32 50257, f64 20000,
// bf16 60000: dy cached, the other re-read) or both (bf16 50257), and rows past the
// device's 227 KiB (60000 f32, 30000 f64: re-read). 2 rows, row 1 all -inf.
GPU_KERNEL_TEST(row_kernels_match_cpu_past_the_registers) {
  const std::vector<std::pair<DType, std::vector<int64_t>>> cases = {
      {DType::f32, {8192, 8193, 50257, 60000}},
      {DType::f64, {4096, 4097, 20000, 30000}},
      {DType::bf16, {8193, 50257, 60000}}};
  for (const auto& [dtype, ds] : cases)
    for (int64_t d : ds) {
      INFO(dtype, " D ", d);
      check_softmax_rows(device, dtype, 2, d, 1);
      check_layernorm_rows(device, dtype, 2, d);
      check_cross_entropy_rows(device, dtype, 2, d, 1);
    }
}

// A bad target costs no sync at the launch: the error is thrown, naming the op and the
// value, at the next synchronization (reading a result), once; in every launch shape (a
// warp per row, a block per row, the backward's row in shared memory), forward and backward.
GPU_KERNEL_TEST(cross_entropy_reports_a_bad_target_at_the_next_sync) {
  for (int64_t c : {5, 2000, 50257}) {  // a warp, a block, a block with shared memory
    INFO("C ", c);
    Tensor logits = mirror(random_tensor({3, c}, DType::f32, 1), device);
    Tensor targets = random_tensor({3}, DType::i32, 2, 0, double(c - 1));
    store(targets, 1, double(c));
    Tensor dt = mirror(targets, device), loss = empty({3}, DType::f32, device);
    Tensor dloss = mirror(random_tensor({3}, DType::f32, 3), device);
    Tensor dlogits = empty({3, c}, DType::f32, device);
    const std::string tail =
        std::to_string(c) + " out of range for " + std::to_string(c) + " classes";
    const uint64_t syncs = gpu::host_syncs(device);
    kernels_of(device).cross_entropy(loss, logits, dt, -100);
    CHECK(gpu::host_syncs(device) == syncs);
    CHECK_THROWS_WITH_AS(values(loss), ("cross_entropy: target " + tail).c_str(), Error);
    CHECK_NOTHROW(synchronize(device));
    kernels_of(device).cross_entropy_backward(dlogits, logits, dt, dloss, -100);
    CHECK_THROWS_WITH_AS(synchronize(device), ("cross_entropy_backward: target " + tail).c_str(),
                         Error);
    store(targets, 1, 0);
    kernels_of(device).cross_entropy(loss, logits, mirror(targets, device), -100);
    CHECK_NOTHROW(values(loss));
  }
}

GPU_KERNEL_TEST(embedding_and_backward_match_cpu) {
  for (DType dtype : {DType::f32, DType::f64, DType::bf16}) {
    int64_t vocab = 37, d = 33, n = 1025;
    Tensor weight = random_strided({vocab, d}, dtype, 1);
    Tensor idx = random_tensor({n}, DType::i64, 2, 0, double(vocab - 1));  // many repeats
    Tensor out = empty({n, d}, dtype), gout = empty({n, d}, dtype, device);
    cpu_kernels().embedding(out, weight, idx);
    Tensor didx = mirror(idx, device);
    kernels_of(device).embedding(gout, mirror(weight, device), didx);
    expect_close(gout, out, 0, "embedding");
    Tensor dense = random_tensor({vocab, 64}, dtype, 5);  // 16-byte vectors per row
    Tensor dense_out = empty({n, 64}, dtype), dense_gout = empty({n, 64}, dtype, device);
    cpu_kernels().embedding(dense_out, dense, idx);
    kernels_of(device).embedding(dense_gout, mirror(dense, device), didx);
    expect_close(dense_gout, dense_out, 0, "embedding of dense rows");

    Tensor grad_out = random_tensor({n, d}, dtype, 3);
    Tensor gw = random_tensor({vocab, d}, dtype, 4);  // accumulates into existing values
    Tensor ggw = mirror(gw, device);
    cpu_kernels().embedding_backward(gw, grad_out, idx);
    kernels_of(device).embedding_backward(ggw, mirror(grad_out, device), didx);
    expect_close(ggw, gw, dtype == DType::bf16 ? 0.1 : loose(dtype), "embedding_backward");
  }
}

// More rows than a grid has rows (65535): grid row y also takes rows y + 65535, ...
GPU_KERNEL_TEST(embedding_past_65535_rows_matches_cpu) {
  const int64_t vocab = 5, d = 2, n = 65535 + 70;
  Tensor weight = random_tensor({vocab, d}, DType::f32, 1);
  Tensor idx = random_tensor({n}, DType::i64, 2, 0, double(vocab - 1));
  Tensor out = empty({n, d}), gout = empty({n, d}, DType::f32, device);
  cpu_kernels().embedding(out, weight, idx);
  Tensor didx = mirror(idx, device);
  kernels_of(device).embedding(gout, mirror(weight, device), didx);
  expect_close(gout, out, 0, "embedding");
  Tensor grad_out = random_tensor({n, d}, DType::f32, 3),
         gw = random_tensor({vocab, d}, DType::f32, 4);
  Tensor ggw = mirror(gw, device);
  cpu_kernels().embedding_backward(gw, grad_out, idx);
  kernels_of(device).embedding_backward(ggw, mirror(grad_out, device), didx);
  expect_close(ggw, gw, 1e-3, "embedding_backward");  // 13k f32 additions per entry
}

GPU_KERNEL_TEST(embedding_rejects_an_index_out_of_range) {
  Tensor weight = random_tensor({4, 3}, DType::f32, 1);
  Tensor idx = random_tensor({5}, DType::i64, 2, 0, 3);
  store(idx, 3, 4);
  Tensor out = empty({5, 3}, DType::f32, device);
  Tensor dweight = mirror(weight, device), didx = mirror(idx, device);
  const uint64_t syncs = gpu::host_syncs(device);
  kernels_of(device).embedding(out, dweight, didx);
  CHECK(gpu::host_syncs(device) == syncs);
  CHECK_THROWS_WITH_AS(synchronize(device), "embedding: index 4 out of range for vocab size 4",
                       Error);
  kernels_of(device).embedding_backward(dweight, out, didx);
  CHECK_THROWS_WITH_AS(values(dweight), "embedding_backward: index 4 out of range for vocab size 4",
                       Error);
  CHECK_NOTHROW(values(out));
  Tensor dense = mirror(random_tensor({4, 8}, DType::f32, 3), device);  // the vector path
  Tensor dense_out = empty({5, 8}, DType::f32, device);
  kernels_of(device).embedding(dense_out, dense, didx);
  CHECK_THROWS_WITH_AS(synchronize(device), "embedding: index 4 out of range for vocab size 4",
                       Error);
}

GPU_KERNEL_TEST(random_draws_the_same_numbers_as_cpu) {
  for (DType dtype : {DType::f32, DType::f64, DType::bf16})
    for (RandomKind kind : {RandomKind::uniform, RandomKind::normal}) {
      Tensor want = random_strided({33, 31}, dtype, 1);
      cpu_kernels().random(want, kind, 1234, 77);
      Tensor base = random_tensor({31, 33}, dtype, 1);
      Tensor gbase = mirror(base, device);
      Tensor got = make_view(gbase, {33, 31}, {1, 33}, 0);
      kernels_of(device).random(got, kind, 1234, 77);
      expect_close(got, want, dtype == DType::f32 && kind == RandomKind::normal ? 1e-6 : 0);
    }
}

GPU_KERNEL_TEST(adamw_matches_cpu) {
  for (DType dtype : {DType::f32, DType::f64})
    for (int64_t n : {1, 33, 10007}) {
      Tensor p = random_tensor({n}, dtype, 1), g = random_tensor({n}, dtype, 2);
      Tensor m = random_tensor({n}, dtype, 3), v = random_tensor({n}, dtype, 4, 0, 1);
      Tensor gp = mirror(p, device), gm = mirror(m, device), gv = mirror(v, device);
      AdamWArgs args{1e-2, 0.9, 0.999, 1e-8, 0.1, 3};
      cpu_kernels().adamw(p, g, m, v, args);
      kernels_of(device).adamw(gp, mirror(g, device), gm, gv, args);
      expect_close(gp, p, loose(dtype), "param");
      expect_close(gm, m, loose(dtype), "exp_avg");
      expect_close(gv, v, loose(dtype), "exp_avg_sq");
    }
}

// 30 tensors (two launches of 24-tensor batches), one of 140000 elements (3 chunks of
// 65536), gradients scaled by 0.37 as they are read; one adamw_multi call against cpu.
GPU_KERNEL_TEST(adamw_multi_matches_cpu) {
  for (DType dtype : {DType::f32, DType::f64})
    for (double scale : {1.0, 0.37}) {
      INFO(dtype, " grad_scale ", scale);
      std::vector<AdamWTensors> cpu_sets, dev_sets;
      for (int i = 0; i < 30; ++i) {
        const int64_t n = i == 7 ? 140000 : 1 + 37 * i;
        AdamWTensors c{random_tensor({n}, dtype, 10 * i + 1), random_tensor({n}, dtype, 10 * i + 2),
                       random_tensor({n}, dtype, 10 * i + 3),
                       random_tensor({n}, dtype, 10 * i + 4, 0, 1)};
        cpu_sets.push_back(c);
        dev_sets.push_back({mirror(c.param, device), mirror(c.grad, device),
                            mirror(c.exp_avg, device), mirror(c.exp_avg_sq, device)});
      }
      AdamWArgs args{1e-2, 0.9, 0.999, 1e-8, 0.1, 3};
      cpu_kernels().adamw_multi(cpu_sets, args, scale);
      kernels_of(device).adamw_multi(dev_sets, args, scale);
      for (size_t i = 0; i < cpu_sets.size(); ++i) {
        expect_close(dev_sets[i].param, cpu_sets[i].param, loose(dtype), "param");
        expect_close(dev_sets[i].exp_avg, cpu_sets[i].exp_avg, loose(dtype), "exp_avg");
        expect_close(dev_sets[i].exp_avg_sq, cpu_sets[i].exp_avg_sq, loose(dtype), "exp_avg_sq");
      }
    }
}

// The capturable update (scalars read from device memory as the kernel runs, for graph
// replays) gives adamw_multi's bits for the same step, clipped or not.
GPU_KERNEL_TEST(adamw_multi_from_device_equals_adamw_multi) {
  auto run = [&]<typename T>(DType dtype, double scale) {
    INFO(dtype, " grad_scale ", scale);
    std::vector<AdamWTensors> by_args, by_device;
    for (int i = 0; i < 5; ++i) {
      const int64_t n = i == 2 ? 70000 : 1 + 37 * i;
      AdamWTensors c{random_tensor({n}, dtype, 10 * i + 1), random_tensor({n}, dtype, 10 * i + 2),
                     random_tensor({n}, dtype, 10 * i + 3),
                     random_tensor({n}, dtype, 10 * i + 4, 0, 1)};
      by_args.push_back({mirror(c.param, device), mirror(c.grad, device), mirror(c.exp_avg, device),
                         mirror(c.exp_avg_sq, device)});
      by_device.push_back({mirror(c.param, device), mirror(c.grad, device),
                           mirror(c.exp_avg, device), mirror(c.exp_avg_sq, device)});
    }
    const AdamWArgs args{1e-2, 0.9, 0.999, 1e-8, 0.1, 3};
    const AdamWScalars<T> s = adamw_scalars<T>(args, scale);
    std::vector<int64_t> words((sizeof(s) + 7) / 8);
    std::memcpy(words.data(), &s, sizeof(s));
    const Tensor scalars = tensor(words, {int64_t(words.size())}).to(device);
    kernels_of(device).adamw_multi(by_args, args, scale);
    kernels_of(device).adamw_multi_from_device(by_device, scalars.data_ptr());
    for (size_t i = 0; i < by_args.size(); ++i) {
      expect_close(by_device[i].param, by_args[i].param, 0, "param");
      expect_close(by_device[i].exp_avg, by_args[i].exp_avg, 0, "exp_avg");
      expect_close(by_device[i].exp_avg_sq, by_args[i].exp_avg_sq, 0, "exp_avg_sq");
    }
  };
  for (double scale : {1.0, 0.37}) {
    run.operator()<float>(DType::f32, scale);
    run.operator()<double>(DType::f64, scale);
  }
}

// Sums of squares and the in-place scale of 30 tensors (one of 3 chunks) against cpu.
GPU_KERNEL_TEST(sum_squares_and_scale_multi_match_cpu) {
  for (DType dtype : {DType::f32, DType::f64, DType::bf16}) {
    INFO(dtype);
    std::vector<Tensor> cpu_list, dev_list;
    for (int i = 0; i < 30; ++i) {
      cpu_list.push_back(random_tensor({i == 7 ? 140000 : 1 + 37 * i}, dtype, 500 + i));
      dev_list.push_back(mirror(cpu_list.back(), device));
    }
    Tensor want = empty({30}, DType::f64), got = empty({30}, DType::f64, device);
    cpu_kernels().sum_squares_multi(want, cpu_list);
    kernels_of(device).sum_squares_multi(got, dev_list);
    expect_close(got, want, 1e-13, "sum of squares");
    cpu_kernels().scale_multi(cpu_list, 0.37);
    kernels_of(device).scale_multi(dev_list, 0.37);
    for (size_t i = 0; i < cpu_list.size(); ++i)
      expect_close(dev_list[i], cpu_list[i], 0, "scaled");
  }
}

// The multi-tensor kernels on views of flat buffers that start off a 16-byte boundary: the
// same offset in every buffer (scalar head, then vectors: 70003 elements span 2 chunks) and
// different offsets per buffer (element by element), against cpu. The views of one buffer do
// not overlap; the gradients (buffer 1) are also the list that is summed and scaled.
GPU_KERNEL_TEST(multi_tensor_kernels_on_views_off_the_16_byte_boundary) {
  for (DType dtype : {DType::f32, DType::f64}) {
    INFO(dtype);
    const int64_t sizes[] = {70003, 37, 5, 1}, starts[] = {1, 70010, 70050, 70060};
    std::vector<Tensor> flat_cpu, flat_dev;
    for (int b = 0; b < 4; ++b) {
      flat_cpu.push_back(random_tensor({70100}, dtype, 700 + b, b == 3 ? 0.0 : -1.0, 1.0));
      flat_dev.push_back(mirror(flat_cpu.back(), device));
    }
    for (bool same_offsets : {true, false}) {
      std::vector<AdamWTensors> cpu_sets, dev_sets;
      std::vector<Tensor> cpu_list, dev_list;
      for (int i = 0; i < 4; ++i) {
        auto view = [&](const Tensor& flat, int b) {
          return make_view(flat, {sizes[i]}, {1}, starts[i] + (same_offsets ? 0 : b));
        };
        cpu_sets.push_back({view(flat_cpu[0], 0), view(flat_cpu[1], 1), view(flat_cpu[2], 2),
                            view(flat_cpu[3], 3)});
        dev_sets.push_back({view(flat_dev[0], 0), view(flat_dev[1], 1), view(flat_dev[2], 2),
                            view(flat_dev[3], 3)});
        cpu_list.push_back(view(flat_cpu[1], 1));
        dev_list.push_back(view(flat_dev[1], 1));
      }
      const std::string what = same_offsets ? "same offsets" : "different offsets";
      Tensor want = empty({4}, DType::f64), got = empty({4}, DType::f64, device);
      cpu_kernels().sum_squares_multi(want, cpu_list);
      kernels_of(device).sum_squares_multi(got, dev_list);
      expect_close(got, want, 1e-13, what + ": sum of squares");
      AdamWArgs args{1e-2, 0.9, 0.999, 1e-8, 0.1, 2};
      cpu_kernels().adamw_multi(cpu_sets, args, 0.5);
      kernels_of(device).adamw_multi(dev_sets, args, 0.5);
      for (int b = 0; b < 4; ++b) expect_close(flat_dev[b], flat_cpu[b], loose(dtype), what);
      cpu_kernels().scale_multi(cpu_list, 0.37);
      kernels_of(device).scale_multi(dev_list, 0.37);
      for (int i = 0; i < 4; ++i) expect_close(dev_list[i], cpu_list[i], 0, what + ": scaled");
    }
  }
}

GPU_KERNEL_TEST(attention_and_backward_match_cpu) {
  struct Case {
    int64_t B, T, S, D, Dv;
    bool causal;
  };
  for (DType dtype : {DType::f32, DType::f64, DType::bf16})
    for (Case c : {Case{2, 5, 5, 3, 4, true}, Case{1, 70, 70, 40, 72, true},
                   Case{3, 4, 9, 33, 2, false}, Case{1, 9, 4, 8, 8, true},
                   // several tiles with causal T > S; wide heads: fewer warps, 4-row tiles
                   Case{2, 40, 33, 16, 8, true}, Case{1, 11, 13, 300, 500, false}}) {
      INFO("B ", c.B, " T ", c.T, " S ", c.S, " D ", c.D, " Dv ", c.Dv, c.causal ? " causal" : "");
      DType sdt = dtype == DType::f64 ? DType::f64 : DType::f32;
      Tensor q = random_tensor({c.B, c.T, c.D}, dtype, 1),
             k = random_tensor({c.B, c.S, c.D}, dtype, 2);
      Tensor v = random_tensor({c.B, c.S, c.Dv}, dtype, 3);
      const double scale = 0.4;
      Tensor out = empty({c.B, c.T, c.Dv}, dtype), lse = empty({c.B, c.T}, sdt);
      cpu_kernels().attention(out, lse, q, k, v, c.causal, scale);
      Tensor gq = mirror(q, device), gk = mirror(k, device), gv = mirror(v, device);
      Tensor gout = empty({c.B, c.T, c.Dv}, dtype, device), glse = empty({c.B, c.T}, sdt, device);
      kernels_of(device).attention(gout, glse, gq, gk, gv, c.causal, scale);
      expect_close(gout, out, loose(dtype), "attention out");
      expect_close(glse, lse, 1e-5, "attention lse");

      Tensor dout = random_tensor({c.B, c.T, c.Dv}, dtype, 4);
      Tensor dq = empty(q.shape(), dtype), dk = empty(k.shape(), dtype),
             dv = empty(v.shape(), dtype);
      cpu_kernels().attention_backward(dq, dk, dv, dout, q, k, v, out, lse, c.causal, scale);
      Tensor gdq = empty(q.shape(), dtype, device), gdk = empty(k.shape(), dtype, device),
             gdv = empty(v.shape(), dtype, device);
      kernels_of(device).attention_backward(gdq, gdk, gdv, mirror(dout, device), gq, gk, gv,
                                            mirror(out, device), mirror(lse, device), c.causal,
                                            scale);
      expect_close(gdq, dq, loose(dtype), "attention dq");
      expect_close(gdk, dk, loose(dtype), "attention dk");
      expect_close(gdv, dv, loose(dtype), "attention dv");
    }
}
