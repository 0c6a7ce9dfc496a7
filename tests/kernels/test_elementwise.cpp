// unary, binary, where, copy and fill on sim/cuda against the cpu kernels: odd sizes,
// non-contiguous and broadcast (stride 0) inputs, every dtype the op layer passes.
#include "tests/kernels/helpers.h"

using namespace rg;
using namespace rg::test;

namespace {
const Shape kSizes1d[] = {{1}, {31}, {32}, {33}, {1025}, {10007}};
}

GPU_KERNEL_TEST(unary_ops_match_cpu) {
#define RG_OP(name) UnaryOp::name,
  const UnaryOp ops[] = {RG_UNARY_OPS(RG_OP)};
#undef RG_OP
  for (DType dtype : {DType::f32, DType::f64, DType::bf16, DType::i32, DType::i64}) {
    for (UnaryOp op : ops) {
      bool floating = is_floating(dtype);
      if (!floating && op != UnaryOp::neg && op != UnaryOp::abs && op != UnaryOp::sign &&
          op != UnaryOp::square && op != UnaryOp::logical_not)
        continue;
      for (const Shape& shape : {Shape{33}, Shape{1025}, Shape{7, 5, 3}}) {
        for (bool strided : {false, true}) {
          Tensor in = strided ? random_strided(shape, dtype, 7) : random_tensor(shape, dtype, 7);
          if (op == UnaryOp::log || op == UnaryOp::sqrt || op == UnaryOp::rsqrt)
            in = random_tensor(shape, dtype, 7, 0.1, 3);
          DType out_dtype = op == UnaryOp::logical_not ? DType::b8 : dtype;
          Tensor want = empty(shape, out_dtype);
          cpu_kernels().unary(op, want, in);
          Tensor got = empty(shape, out_dtype, device);
          kernels_of(device).unary(op, got, mirror(in, device));
          expect_close(got, want, -1, op_name(op));
        }
      }
    }
  }
}

GPU_KERNEL_TEST(unary_on_odd_sizes) {
  for (const Shape& shape : kSizes1d) {
    Tensor in = random_tensor(shape, DType::f32, 3);
    Tensor want = empty(shape), got = empty(shape, DType::f32, device);
    cpu_kernels().unary(UnaryOp::gelu, want, in);
    kernels_of(device).unary(UnaryOp::gelu, got, mirror(in, device));
    expect_close(got, want);
  }
}

GPU_KERNEL_TEST(binary_ops_match_cpu_with_broadcasting) {
#define RG_OP(name) BinaryOp::name,
  const BinaryOp ops[] = {RG_BINARY_OPS(RG_OP)};
#undef RG_OP
  for (DType dtype : {DType::f32, DType::f64, DType::bf16, DType::i64, DType::i32}) {
    for (BinaryOp op : ops) {
      bool floating = is_floating(dtype);
      if (!floating &&
          (op == BinaryOp::pow || op == BinaryOp::div || op == BinaryOp::gelu_backward))
        continue;
      Shape shape{6, 33};
      Tensor a = random_strided(shape, dtype, 11);
      // b broadcast along dim 0: a [1, 33] row expanded to [6, 33]
      Tensor row = random_tensor({1, 33}, dtype, 12, op == BinaryOp::pow ? 0.5 : -2, 2);
      Tensor b = make_view(row, shape, {0, 1}, 0);
      if (op == BinaryOp::pow) a = random_tensor(shape, dtype, 13, 0.1, 2);
      DType out_dtype = is_comparison(op) ? DType::b8 : dtype;
      Tensor want = empty(shape, out_dtype);
      cpu_kernels().binary(op, want, a, b);
      Tensor got = empty(shape, out_dtype, device);
      Tensor rowd = mirror(row, device);
      kernels_of(device).binary(op, got, mirror(a, device), make_view(rowd, shape, {0, 1}, 0));
      expect_close(got, want, -1, op_name(op));
    }
  }
}

GPU_KERNEL_TEST(binary_on_odd_sizes_and_unaligned_views) {
  for (const Shape& shape : kSizes1d) {
    Tensor a = random_tensor(shape, DType::f32, 1), b = random_tensor(shape, DType::f32, 2);
    Tensor want = empty(shape), got = empty(shape, DType::f32, device);
    cpu_kernels().binary(BinaryOp::mul, want, a, b);
    kernels_of(device).binary(BinaryOp::mul, got, mirror(a, device), mirror(b, device));
    expect_close(got, want);
  }
  // offset 1: contiguous but not aligned for vector loads
  Tensor base = random_tensor({1026}, DType::f32, 4);
  Tensor a = make_view(base, {1025}, {1}, 1);
  Tensor want = empty({1025}), got = empty({1025}, DType::f32, device);
  cpu_kernels().binary(BinaryOp::add, want, a, a);
  Tensor ad = mirror(a, device);
  kernels_of(device).binary(BinaryOp::add, got, ad, ad);
  expect_close(got, want);
}

GPU_KERNEL_TEST(where_selects_like_cpu) {
  Shape shape{5, 1025};
  Tensor cond = random_strided(shape, DType::b8, 5);
  for (DType dtype : {DType::f32, DType::bf16, DType::i64}) {
    Tensor a = random_tensor(shape, dtype, 6);
    Tensor col = random_tensor({5, 1}, dtype, 7);
    Tensor b = make_view(col, shape, {1, 0}, 0);
    Tensor want = empty(shape, dtype);
    cpu_kernels().where(want, cond, a, b);
    Tensor got = empty(shape, dtype, device);
    Tensor cold = mirror(col, device);
    kernels_of(device).where(got, mirror(cond, device), mirror(a, device),
                             make_view(cold, shape, {1, 0}, 0));
    expect_close(got, want);
  }
}

GPU_KERNEL_TEST(copy_converts_every_dtype_pair) {
  const DType dtypes[] = {DType::f32, DType::f64, DType::bf16, DType::i32, DType::i64, DType::b8};
  for (DType from : dtypes) {
    for (DType to : dtypes) {
      for (bool strided : {false, true}) {
        Shape shape{33, 31};
        Tensor in = strided ? random_strided(shape, from, 9) : random_tensor(shape, from, 9);
        Tensor want = empty(shape, to);
        cpu_kernels().copy(want, in);
        Tensor got = empty(shape, to, device);
        kernels_of(device).copy(got, mirror(in, device));
        INFO(dtype_name(from), " -> ", dtype_name(to), strided ? " strided" : "");
        expect_close(got, want, 0);
      }
    }
  }
}

GPU_KERNEL_TEST(copy_into_a_strided_output) {
  Tensor in = random_tensor({4, 1025}, DType::f32, 3);
  Tensor out_base = random_tensor({1025, 4}, DType::f32, 4);
  Tensor want = make_view(out_base, {4, 1025}, {1, 4}, 0);
  cpu_kernels().copy(want, in);
  Tensor got_base = mirror(out_base, device);
  Tensor got = make_view(got_base, {4, 1025}, {1, 4}, 0);
  kernels_of(device).copy(got, mirror(in, device));
  expect_close(got, want, 0);
}

GPU_KERNEL_TEST(fill_writes_every_element) {
  for (DType dtype : {DType::f32, DType::f64, DType::bf16, DType::i32, DType::i64, DType::b8}) {
    for (const Shape& shape : kSizes1d) {
      Tensor want = empty(shape, dtype);
      cpu_kernels().fill(want, 1.5);
      Tensor got = empty(shape, dtype, device);
      kernels_of(device).fill(got, 1.5);
      expect_close(got, want, 0);
    }
    Tensor base = random_tensor({8, 9}, dtype, 1);
    Tensor want = make_view(base, {4, 9}, {18, 1}, 0);  // every second row
    cpu_kernels().fill(want, -3);
    Tensor got_base = mirror(base, device);
    kernels_of(device).fill(make_view(got_base, {4, 9}, {18, 1}, 0), -3);
    expect_close(got_base, base, 0);
  }
}
