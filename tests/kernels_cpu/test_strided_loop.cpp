// StridedLoop's odometer (kernels/cpu/strided_loop.h): a copy out of a view whose dims can
// not be merged, with as many outer dims as it keeps on the stack and more (heap), split
// into many parallel tasks (each starts its index by division, then carries).
#include "kernels/cpu/strided_loop.h"
#include "tests/kernels_cpu/helpers.h"

using namespace rg;
using namespace rg::test;

namespace {

// A [2, 2, ..., 2] view (dims dims) of a contiguous tensor with its dims reversed, so no two
// neighbours merge; element i of the view (row-major) is base[reverse of i's bits].
void check_reversed_copy(int dims) {
  const int64_t n = int64_t(1) << dims;
  Tensor base = empty({n}, DType::f32);
  for (int64_t i = 0; i < n; ++i) base.data<float>()[i] = float(i);
  Shape shape(dims, 2);
  Strides strides(dims);
  for (int d = 0; d < dims; ++d) strides[d] = int64_t(1) << d;
  Tensor view = make_view(base, shape, strides, 0);
  Tensor out = empty(shape, DType::f32);
  rg::test::cpu().copy(out, view);
  int64_t wrong = 0;
  for (int64_t i = 0; i < n; ++i) {
    int64_t reversed = 0;
    for (int d = 0; d < dims; ++d) reversed |= ((i >> d) & 1) << (dims - 1 - d);
    wrong += out.data<float>()[i] != float(reversed);
  }
  CHECK_MESSAGE(wrong == 0, dims, " dims: ", wrong, " elements wrong");
}

}  // namespace

TEST_CASE("strided loop: unmergeable dims on both sides of the odometer's stack capacity") {
  static_assert(rg::cpu::RG_CPU_CAP::StridedLoop<2>::kInlineDims == 16);
  for (int dims : {3, 17, 18, 19}) check_reversed_copy(dims);  // 16, 17 and 18 outer dims
}
