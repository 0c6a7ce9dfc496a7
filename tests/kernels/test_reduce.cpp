// reduce on sim/cuda against the cpu kernels: every op and dtype, inner/outer/middle and
// multiple dims, every launch shape (serial, warp, block per output, chunks), strided inputs and
// outputs, NaN and tie handling of the arg ops.
#include <limits>

#include "tests/kernels/helpers.h"

using namespace rg;
using namespace rg::test;

namespace {

Shape keepdim_shape(const Shape& shape, const std::vector<int64_t>& dims) {
  Shape out = shape;
  for (int64_t d : dims) out[d] = 1;
  return out;
}

void check_reduce(Device device, ReduceOp op, const Tensor& in, const std::vector<int64_t>& dims) {
  bool arg = info(op).rule == ReduceRule::index;
  DType out_dtype = arg ? DType::i64 : in.dtype();
  Shape out_shape = keepdim_shape(in.shape(), dims);
  Tensor want = empty(out_shape, out_dtype);
  cpu_kernels().reduce(op, want, in, dims);
  Tensor got = empty(out_shape, out_dtype, device);
  kernels_of(device).reduce(op, got, mirror(in, device), dims);
  double tol = in.dtype() == DType::f32 ? 1e-5 : -1;
  expect_close(got, want, tol, str(op_name(op), " over ", dims.size(), " dims"));
}

}  // namespace

GPU_KERNEL_TEST(reduce_ops_match_cpu_over_any_dims) {
#define RG_OP(name, ...) ReduceOp::name,
  const ReduceOp ops[] = {RG_REDUCE_OPS(RG_OP)};
#undef RG_OP
  // Contract (core/op_table.h): the op layer passes only dims of size > 1, never none; it
  // handles the degenerate cases itself (ops/reduce.cpp), so they are not kernel cases.
  const std::vector<std::vector<int64_t>> dim_sets = {{2}, {0}, {1}, {0, 2}, {0, 1, 2}};
  for (DType dtype : {DType::f32, DType::f64, DType::bf16, DType::i32, DType::i64}) {
    for (ReduceOp op : ops) {
      if (info(op).rule == ReduceRule::floating && !is_floating(dtype)) continue;
      for (const auto& dims : dim_sets) {
        check_reduce(device, op, random_tensor({3, 33, 65}, dtype, 21), dims);
        check_reduce(device, op, random_strided({5, 7, 31}, dtype, 22), dims);
      }
    }
  }
}

GPU_KERNEL_TEST(reduce_long_rows_and_columns) {
  for (int64_t n : {2, 31, 32, 33, 1025, 10007}) {
    for (ReduceOp op :
         {ReduceOp::sum, ReduceOp::amax, ReduceOp::argmin, ReduceOp::mean, ReduceOp::prod}) {
      check_reduce(device, op, random_tensor({2, n}, DType::f32, 5), {1});  // block per row
      check_reduce(device, op, random_tensor({n, 3}, DType::f32, 6), {0});  // strided
      check_reduce(device, op, random_tensor({n}, DType::f32, 7), {0});     // everything
    }
  }
  check_reduce(device, ReduceOp::sum, random_tensor({300, 700}, DType::f32, 8), {0});
}

// Long reductions into few outputs split into chunks combined by a second kernel: strided
// ones (32+ outputs, a thread per chunk) and contiguous ones (a block per chunk); every op
// and dtype, chunk counts that do and do not divide the range, several reduced dims.
GPU_KERNEL_TEST(reduce_columns_in_chunks) {
#define RG_OP(name, ...) ReduceOp::name,
  const ReduceOp ops[] = {RG_REDUCE_OPS(RG_OP)};
#undef RG_OP
  for (DType dtype : {DType::f32, DType::f64, DType::bf16, DType::i32, DType::i64}) {
    for (ReduceOp op : ops) {
      if (info(op).rule == ReduceRule::floating && !is_floating(dtype)) continue;
      check_reduce(device, op, random_tensor({1025, 40}, dtype, 31), {0});
      check_reduce(device, op, random_tensor({70, 5, 33}, dtype, 32), {0, 1});
      check_reduce(device, op, random_strided({97, 3, 36}, dtype, 33), {0});
      check_reduce(device, op, random_tensor({20011}, dtype, 34), {0});    // block chunks
      check_reduce(device, op, random_tensor({3, 9001}, dtype, 35), {1});  // 3 outputs
      check_reduce(device, op, random_strided({2, 5000}, dtype, 36), {0, 1});
    }
  }
}

// The warp shape: contiguous reductions of 32..8192 elements into 2048+ outputs (row sums),
// every op and dtype. Rows of 256 at a stride of 257, one element in, start on and off the
// 16-byte boundary in turn (vectors, then scalar lanes); 45 is no multiple of any vector.
GPU_KERNEL_TEST(reduce_rows_a_warp_each) {
#define RG_OP(name, ...) ReduceOp::name,
  const ReduceOp ops[] = {RG_REDUCE_OPS(RG_OP)};
#undef RG_OP
  for (DType dtype : {DType::f32, DType::f64, DType::bf16, DType::i32, DType::i64}) {
    const Tensor wide = random_tensor({2049, 257}, dtype, 42);
    for (ReduceOp op : ops) {
      if (info(op).rule == ReduceRule::floating && !is_floating(dtype)) continue;
      check_reduce(device, op, random_tensor({2050, 45}, dtype, 41), {1});
      check_reduce(device, op, make_view(wide, {2049, 256}, {257, 1}, 1), {1});
    }
  }
  check_reduce(device, ReduceOp::sum, random_tensor({2048, 1024}, DType::f32, 43), {1});
}

GPU_KERNEL_TEST(reduce_into_a_strided_output) {
  Tensor in = random_tensor({6, 40}, DType::f32, 3);
  Tensor out_base = random_tensor({1, 12}, DType::f32, 4);
  Tensor want = make_view(out_base, {6, 1}, {2, 1}, 0);
  cpu_kernels().reduce(ReduceOp::sum, want, in, {1});
  Tensor got_base = mirror(out_base, device);
  kernels_of(device).reduce(ReduceOp::sum, make_view(got_base, {6, 1}, {2, 1}, 0),
                            mirror(in, device), {1});
  expect_close(got_base, out_base, 1e-5);
}

GPU_KERNEL_TEST(arg_reductions_take_first_tie_and_first_nan) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (int64_t n : {40, 1025}) {
    Tensor in = random_tensor({2, n}, DType::f32, 1, 0, 4);  // values 0..4: many ties when rounded
    for (int64_t i = 0; i < 2 * n; ++i) store(in, i, std::round(values(in)[i]));
    store(in, n + n / 2, nan);
    store(in, n + n - 1, nan);
    for (ReduceOp op : {ReduceOp::argmax, ReduceOp::argmin, ReduceOp::amax, ReduceOp::amin})
      check_reduce(device, op, in, {1});
  }
}
