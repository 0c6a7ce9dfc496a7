// unary, binary (every row of the op table, and their backward), where, copy and fill on
// sim/cuda against the cpu kernels: odd sizes, non-contiguous and broadcast (stride 0)
// inputs, every dtype the op layer passes.
#include "tests/elementwise_cases.h"
#include "tests/kernels/helpers.h"

using namespace rg;
using namespace rg::test;

namespace {
const Shape kSizes1d[] = {{1}, {31}, {32}, {33}, {1025}, {10007}};

// The dtypes a kernel takes for a row's rule (the op layer converts the others).
std::vector<DType> dtypes_for(DTypeRule rule) {
  std::vector<DType> out = {DType::f32, DType::f64, DType::bf16};
  if (rule_takes_integers(rule)) {
    out.push_back(DType::i32);
    out.push_back(DType::i64);
  }
  if (rule_takes_bool(rule)) out.push_back(DType::b8);
  return out;
}

DType out_dtype(DTypeRule rule, DType in) { return rule == DTypeRule::boolean ? DType::b8 : in; }

// Values in `range`; strided: the transpose of a [last, ..., first] base (1-D: every second
// element).
Tensor random_in(const Shape& shape, DType dtype, uint64_t seed, Range range, bool strided) {
  if (!strided) return random_tensor(shape, dtype, seed, range.lo, range.hi);
  if (shape.size() == 1)
    return make_view(random_tensor({shape[0] * 2}, dtype, seed, range.lo, range.hi), shape, {2}, 1);
  Shape swapped = shape;
  std::swap(swapped.front(), swapped.back());
  Tensor base = random_tensor(swapped, dtype, seed, range.lo, range.hi);
  Strides st = base.strides();
  std::swap(st.front(), st.back());
  return make_view(base, shape, st, 0);
}
}  // namespace

// Every row of the op table, every dtype its rule admits, contiguous and strided.
GPU_KERNEL_TEST(unary_ops_match_cpu) {
  for (int i = 0; i < kNumUnaryOps; ++i) {
    UnaryOp op = UnaryOp(i);
    Range range = unary_cases().at(op_name(op)).x;
    for (DType dtype : dtypes_for(info(op).rule)) {
      for (const Shape& shape : {Shape{33}, Shape{1025}, Shape{7, 5, 3}}) {
        for (bool strided : {false, true}) {
          Tensor in = random_in(shape, dtype, 7, range, strided);
          DType out_dt = out_dtype(info(op).rule, dtype);
          Tensor want = empty(shape, out_dt);
          cpu_kernels().unary(op, want, in);
          Tensor got = empty(shape, out_dt, device);
          kernels_of(device).unary(op, got, mirror(in, device));
          expect_close(got, want, -1, op_name(op));
        }
      }
    }
  }
}

// grad_in = gradient(grad_out, x, y) of every differentiable row, on floating dtypes.
GPU_KERNEL_TEST(unary_backward_matches_cpu) {
  for (int i = 0; i < kNumUnaryOps; ++i) {
    UnaryOp op = UnaryOp(i);
    if (!info(op).differentiable()) continue;
    Range range = unary_cases().at(op_name(op)).x;
    for (DType dtype : {DType::f32, DType::f64, DType::bf16}) {
      Shape shape{5, 67};
      Tensor x = random_tensor(shape, dtype, 8, range.lo, range.hi);
      Tensor y = empty(shape, dtype);
      cpu_kernels().unary(op, y, x);
      Tensor g = random_strided(shape, dtype, 9);
      Tensor want = empty(shape, dtype), got = empty(shape, dtype, device);
      cpu_kernels().unary_backward(op, want, g, x, y);
      kernels_of(device).unary_backward(op, got, mirror(g, device), mirror(x, device),
                                        mirror(y, device));
      expect_close(got, want, -1, str(op_name(op), " backward"));
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
  for (int i = 0; i < kNumBinaryOps; ++i) {
    BinaryOp op = BinaryOp(i);
    const BinaryCase& ranges = binary_cases().at(op_name(op));
    for (DType dtype : dtypes_for(info(op).rule)) {
      Shape shape{6, 33};
      Tensor a = random_in(shape, dtype, 11, ranges.a, true);
      // b broadcast along dim 0: a [1, 33] row expanded to [6, 33]
      Tensor row = random_tensor({1, 33}, dtype, 12, ranges.b.lo, ranges.b.hi);
      Tensor b = make_view(row, shape, {0, 1}, 0);
      DType out_dt = out_dtype(info(op).rule, dtype);
      Tensor want = empty(shape, out_dt);
      cpu_kernels().binary(op, want, a, b);
      Tensor got = empty(shape, out_dt, device);
      Tensor rowd = mirror(row, device);
      kernels_of(device).binary(op, got, mirror(a, device), make_view(rowd, shape, {0, 1}, 0));
      expect_close(got, want, -1, op_name(op));
    }
  }
}

// The gradient of each input of every differentiable row, with b broadcast (stride 0).
GPU_KERNEL_TEST(binary_backward_matches_cpu) {
  for (int i = 0; i < kNumBinaryOps; ++i) {
    BinaryOp op = BinaryOp(i);
    if (!info(op).differentiable()) continue;
    const BinaryCase& ranges = binary_cases().at(op_name(op));
    for (DType dtype : {DType::f32, DType::f64, DType::bf16}) {
      Shape shape{4, 129};
      Tensor a = random_tensor(shape, dtype, 13, ranges.a.lo, ranges.a.hi);
      Tensor row = random_tensor({1, 129}, dtype, 14, ranges.b.lo, ranges.b.hi);
      Tensor b = make_view(row, shape, {0, 1}, 0);
      Tensor y = empty(shape, dtype);
      cpu_kernels().binary(op, y, a, b);
      Tensor g = random_tensor(shape, dtype, 15);
      for (int which : {0, 1}) {
        Tensor want = empty(shape, dtype), got = empty(shape, dtype, device);
        cpu_kernels().binary_backward(op, which, want, g, a, b, y);
        Tensor rowd = mirror(row, device);
        kernels_of(device).binary_backward(op, which, got, mirror(g, device), mirror(a, device),
                                           make_view(rowd, shape, {0, 1}, 0), mirror(y, device));
        expect_close(got, want, -1, str(op_name(op), " backward of input ", which));
      }
    }
  }
}

// The strided path's 16-byte rows (a bias row broadcast over a matrix, rows of a multiple of
// the vector width) and its fallbacks: a row that starts off the vector boundary, rows of a
// width that is not a multiple, a 3-d broadcast, and the 4-input backward.
GPU_KERNEL_TEST(binary_row_broadcast_by_16_byte_vectors) {
  for (DType dtype : {DType::f32, DType::bf16, DType::f64}) {
    for (const Shape& shape : {Shape{6, 64}, Shape{3, 4, 32}, Shape{5, 12}, Shape{2, 8}}) {
      const int64_t cols = shape.back(), inner = shape.size() == 3 ? shape[1] * cols : cols;
      for (int64_t offset : {0, 1}) {
        Tensor base = random_tensor({inner + 1}, dtype, 31);
        Strides st(shape.size(), 0);
        st.back() = 1;
        if (shape.size() == 3) st[1] = cols;
        Tensor a = random_tensor(shape, dtype, 32), g = random_tensor(shape, dtype, 33);
        Tensor b = make_view(base, shape, st, offset);
        Tensor bd = make_view(mirror(base, device), shape, st, offset);
        Tensor want = empty(shape, dtype), got = empty(shape, dtype, device);
        cpu_kernels().binary(BinaryOp::add, want, a, b);
        kernels_of(device).binary(BinaryOp::add, got, mirror(a, device), bd);
        const std::string what = str(dtype, " ", shape_str(shape), " offset ", offset);
        expect_close(got, want, 0, what);
        Tensor gwant = empty(shape, dtype), ggot = empty(shape, dtype, device);
        cpu_kernels().binary_backward(BinaryOp::mul, 1, gwant, g, a, b, want);
        kernels_of(device).binary_backward(BinaryOp::mul, 1, ggot, mirror(g, device),
                                           mirror(a, device), bd, mirror(want, device));
        expect_close(ggot, gwant, -1, what + " backward");
      }
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

// The contiguous path's aligned head: inputs and output offset by the same element count
// (head, then 16-byte vectors) and by different counts (scalar), for 4-, 2- and 8-byte types
// and lengths around the vector width.
GPU_KERNEL_TEST(binary_on_views_offset_from_the_vector_boundary) {
  for (DType dtype : {DType::f32, DType::bf16, DType::f64}) {
    for (int64_t n : {1, 3, 9, 40, 1027}) {
      Tensor base_a = random_tensor({n + 8}, dtype, 21), base_b = random_tensor({n + 8}, dtype, 22);
      Tensor base_ad = mirror(base_a, device), base_bd = mirror(base_b, device);
      for (int64_t off_in : {0, 1, 3, 7}) {
        for (int64_t off_out : {off_in, (off_in + 2) % 8}) {
          Tensor a = make_view(base_a, {n}, {1}, off_in), b = make_view(base_b, {n}, {1}, off_in);
          Tensor want = empty({n}, dtype);
          cpu_kernels().binary(BinaryOp::sub, want, a, b);
          Tensor got = make_view(empty({n + 8}, dtype, device), {n}, {1}, off_out);
          kernels_of(device).binary(BinaryOp::sub, got, make_view(base_ad, {n}, {1}, off_in),
                                    make_view(base_bd, {n}, {1}, off_in));
          expect_close(got, want, 0, str(dtype, " n ", n, " offsets ", off_in, "/", off_out));
        }
      }
    }
  }
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

// Transposing copies (the shared-memory tile path) at odd sizes, with batch dims around the
// plane, a converting dtype pair, an output strided outside its innermost dim, and planes too
// thin for tiles (the elementwise path).
GPU_KERNEL_TEST(copy_transposes_through_tiles) {
  struct Case {
    Shape base;             // the contiguous source
    std::vector<int> perm;  // out[i...] = base permuted
  };
  const Case cases[] = {{{70, 37}, {1, 0}},
                        {{3, 37, 70}, {0, 2, 1}},
                        {{5, 33, 4, 9}, {0, 3, 2, 1}},
                        {{2, 9, 3, 40}, {3, 1, 0, 2}},
                        {{64, 8}, {1, 0}},
                        {{100, 4, 40}, {0, 2, 1}}};
  for (const Case& c : cases) {
    for (auto [from, to] : {std::pair{DType::f32, DType::f32}, std::pair{DType::f32, DType::bf16},
                            std::pair{DType::f64, DType::f64}}) {
      Tensor base = random_tensor(c.base, from, 31);
      Shape shape;
      Strides strides;
      for (int d : c.perm) shape.push_back(c.base[d]), strides.push_back(base.stride(d));
      Tensor in = make_view(base, shape, strides, 0);
      Tensor want = empty(shape, to);
      cpu_kernels().copy(want, in);
      Tensor got = empty(shape, to, device);
      kernels_of(device).copy(got, make_view(mirror(base, device), shape, strides, 0));
      expect_close(got, want, 0, str(shape_str(c.base), " permuted, ", from, " -> ", to));
    }
  }
  // out strided outside its innermost dim: every second row of a [2 * 37, 70] buffer
  Tensor base = random_tensor({70, 37}, DType::f32, 32);
  Tensor in = make_view(base, {37, 70}, {1, 37}, 0);
  Tensor want = empty({37, 70});
  cpu_kernels().copy(want, in);
  Tensor buffer = empty({74, 70}, DType::f32, device);
  kernels_of(device).fill(buffer, -1.0);
  Tensor got = make_view(buffer, {37, 70}, {140, 1}, 0);
  kernels_of(device).copy(got, make_view(mirror(base, device), {37, 70}, {1, 37}, 0));
  expect_close(got, want, 0, "strided output");
  std::vector<double> all = values(buffer);
  for (int64_t r = 1; r < 74; r += 2) CHECK(all[r * 70] == -1.0);  // odd rows untouched
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
