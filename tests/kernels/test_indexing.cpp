// gather, index_put, cumsum and sort on sim/cuda against the cpu kernels, bitwise: every
// dtype, every dim of a 3-d tensor, strided (transposed) inputs and outputs, an expanded
// index, repeated indices (index_put adds them in index order on every device), NaN and
// ties in sort; and an index out of range reported at the next synchronization.
#include <limits>

#include "tests/kernels/helpers.h"

using namespace rg;
using namespace rg::test;

namespace {

// An int64 index of `shape` with values in [0, size) (many repeats).
Tensor random_index(const Shape& shape, int64_t size, uint64_t seed) {
  return random_tensor(shape, DType::i64, seed, 0, double(size - 1));
}

// A transposed view of shape `shape` holding integers in [-3, 3] as `dtype`: many ties.
Tensor few_values_strided(const Shape& shape, DType dtype, uint64_t seed) {
  Shape swapped = shape;
  std::swap(swapped.front(), swapped.back());
  Tensor base = empty(swapped, dtype);
  cpu_kernels().copy(base, random_tensor(swapped, DType::i64, seed, -3, 3));
  return base.transpose(0, static_cast<int64_t>(shape.size()) - 1);
}

const DType kAllDtypes[] = {DType::f32, DType::f64, DType::bf16, DType::i32, DType::i64};

}  // namespace

GPU_KERNEL_TEST(gather_and_index_put_match_cpu_along_every_dim) {
  const Shape shape = {5, 6, 7};
  for (DType dtype : kAllDtypes) {
    for (int64_t dim = 0; dim < 3; ++dim) {
      INFO(dtype_name(dtype), " dim ", dim);
      Shape ishape = {4, 3, 5};
      ishape[dim] = 9;
      Tensor in = random_strided(shape, dtype, 10 + dim);
      Tensor index = random_index(ishape, shape[dim], 20 + dim);
      Tensor want = empty(ishape, dtype), got = empty(ishape, dtype, device);
      cpu_kernels().gather(want, in, index, dim);
      kernels_of(device).gather(got, mirror(in, device), mirror(index, device), dim);
      expect_close(got, want, 0, "gather");
      for (bool accumulate : {false, true}) {
        Tensor src = random_strided(ishape, dtype, 30 + dim);
        Tensor out = random_strided(shape, dtype, 40 + dim), dout = mirror(out, device);
        cpu_kernels().index_put(out, index, src, dim, accumulate);
        kernels_of(device).index_put(dout, mirror(index, device), mirror(src, device), dim,
                                     accumulate);
        expect_close(dout, out, 0, accumulate ? "index_put accumulate" : "index_put");
      }
    }
  }
}

// index_select's view of a 1-D index: expanded to the output's shape (stride 0).
GPU_KERNEL_TEST(gather_and_index_put_read_an_expanded_index) {
  Tensor in = random_tensor({6, 8}, DType::f32, 1);
  Tensor row = random_index({1, 5}, 6, 2);
  Tensor index = make_view(row, {4, 5}, {0, 1}, 0);  // the same 5 indices in each row
  Tensor want = empty({4, 5}), got = empty({4, 5}, DType::f32, device);
  cpu_kernels().gather(want, in, index, 0);
  kernels_of(device).gather(got, mirror(in, device), mirror(index, device), 0);
  expect_close(got, want, 0, "gather of an expanded index");
  Tensor src = random_tensor({4, 5}, DType::f32, 3), out = empty({6, 8});
  cpu_kernels().fill(out, 0);
  Tensor dout = mirror(out, device);
  cpu_kernels().index_put(out, index, src, 0, true);
  kernels_of(device).index_put(dout, mirror(index, device), mirror(src, device), 0, true);
  expect_close(dout, out, 0, "index_put of an expanded index");
}

GPU_KERNEL_TEST(cumsum_matches_cpu_forward_and_reverse) {
  for (DType dtype : kAllDtypes) {
    for (int64_t dim = 0; dim < 3; ++dim) {
      for (bool reverse : {false, true}) {
        INFO(dtype_name(dtype), " dim ", dim, " reverse ", reverse);
        Tensor in = random_strided({4, 37, 5}, dtype, 50 + dim);
        Tensor want = empty(in.shape(), dtype), got = empty(in.shape(), dtype, device);
        cpu_kernels().cumsum(want, in, dim, reverse);
        kernels_of(device).cumsum(got, mirror(in, device), dim, reverse);
        expect_close(got, want, 0, "cumsum");
      }
    }
  }
}

GPU_KERNEL_TEST(sort_matches_cpu_with_nan_and_ties) {
  for (DType dtype : kAllDtypes) {
    for (int64_t dim = 0; dim < 3; ++dim) {
      for (bool descending : {false, true}) {
        INFO(dtype_name(dtype), " dim ", dim, " descending ", descending);
        Tensor in = few_values_strided({6, 33, 5}, dtype, 60 + dim);
        if (is_floating(dtype)) {
          store(in, 3, std::numeric_limits<double>::quiet_NaN());
          store(in, 40, std::numeric_limits<double>::quiet_NaN());
        }
        Tensor want = empty(in.shape(), dtype), want_i = empty(in.shape(), DType::i64);
        Tensor got = empty(in.shape(), dtype, device);
        Tensor got_i = empty(in.shape(), DType::i64, device);
        cpu_kernels().sort(want, want_i, in, dim, descending);
        kernels_of(device).sort(got, got_i, mirror(in, device), dim, descending);
        expect_close(got, want, 0, "sort values");
        expect_close(got_i, want_i, 0, "sort indices");
      }
    }
  }
}

GPU_KERNEL_TEST(gather_and_index_put_reject_an_index_out_of_range) {
  Tensor in = mirror(random_tensor({4, 3}, DType::f32, 1), device);
  Tensor index = random_index({5, 3}, 4, 2);
  store(index, 7, 4);
  Tensor dindex = mirror(index, device), out = empty({5, 3}, DType::f32, device);
  kernels_of(device).gather(out, in, dindex, 0);
  CHECK_THROWS_WITH_AS(synchronize(device), "gather: index 4 out of range for dim 0 of size 4",
                       Error);
  kernels_of(device).index_put(in, dindex, out, 0, true);
  CHECK_THROWS_WITH_AS(synchronize(device), "index_put: index 4 out of range for dim 0 of size 4",
                       Error);
}

GPU_KERNEL_TEST(gather_index_put_and_sort_move_bools) {
  Tensor in = random_strided({7, 9}, DType::b8, 70);
  Tensor index = random_index({4, 9}, 7, 71);
  Tensor want = empty({4, 9}, DType::b8), got = empty({4, 9}, DType::b8, device);
  cpu_kernels().gather(want, in, index, 0);
  kernels_of(device).gather(got, mirror(in, device), mirror(index, device), 0);
  expect_close(got, want, 0, "gather of bools");
  Tensor out = random_strided({7, 9}, DType::b8, 72), dout = mirror(out, device);
  cpu_kernels().index_put(out, index, want, 0, false);
  kernels_of(device).index_put(dout, mirror(index, device), got, 0, false);
  expect_close(dout, out, 0, "index_put of bools");
  Tensor values = empty({7, 9}, DType::b8), indices = empty({7, 9}, DType::i64);
  Tensor dvalues = empty({7, 9}, DType::b8, device), dindices = empty({7, 9}, DType::i64, device);
  cpu_kernels().sort(values, indices, in, 1, true);
  kernels_of(device).sort(dvalues, dindices, mirror(in, device), 1, true);
  expect_close(dvalues, values, 0, "sort values of bools");
  expect_close(dindices, indices, 0, "sort indices of bools");
}
