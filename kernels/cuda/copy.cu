// copy: out = in converted to out's dtype (f32/f64/bf16/i32/i64/bool), same shape, any
// strides on both sides. Same dtype and both contiguous: one device memcpy. A transposing
// copy (out's innermost dim strided in `in`, and another dim contiguous in `in`: `.t()`,
// `.mT.contiguous()`) goes through 32 x 32 tiles in shared memory: a warp reads 32
// neighbours of `in` along its contiguous dim, the block waits, and a warp writes 32
// neighbours of out; the tile has 33 columns, so the column reads hit 32 different banks.
// Both sides move whole sectors, where the elementwise path would read one element per
// 32-byte sector. Anything else: the elementwise engine (elementwise.cuh) with a converting
// functor.
#include "kernels/cuda/elementwise.cuh"

namespace rg::RG_BACKEND {
namespace {

template <typename Out, typename In>
struct ConvertFn {
  RG_HD Out operator()(In x) const { return convert<Out>(x); }
};

constexpr int kTile = 32, kTileRows = 8;  // a 32 x 32 tile, 32 x 8 threads

// The plane of a transposing copy: dim a is contiguous in out (stride 1), dim b in `in`;
// the remaining dims are the batch (blockIdx.z), offsets {out, in}.
struct TransposePlan {
  int64_t size_a = 0, size_b = 0, in_stride_a = 0, out_stride_b = 0;
  OffsetCalc<2> batch;
  int64_t batches = 1;
};

// The plan when the merged dims of (out, in) form a transposing copy the grid can cover.
bool plan_transpose(const Tensor& out, const Tensor& in, TransposePlan& p) {
  auto calc = make_offset_calc<2>("copy", out.shape(), {&out.strides(), &in.strides()});
  const int a = calc.ndim - 1;
  int b = -1;
  for (int d = 0; d < a; ++d)
    if (calc.strides[d][1] == 1) b = d;
  if (a < 1 || b < 0 || calc.strides[a][0] != 1 || calc.strides[a][1] == 1) return false;
  p.size_a = calc.sizes[a], p.size_b = calc.sizes[b];
  p.in_stride_a = calc.strides[a][1], p.out_stride_b = calc.strides[b][0];
  for (int d = 0; d < a; ++d) {
    if (d == b) continue;
    p.batch.sizes[p.batch.ndim] = calc.sizes[d];
    for (int k = 0; k < 2; ++k) p.batch.strides[p.batch.ndim][k] = calc.strides[d][k];
    p.batches *= calc.sizes[d];
    ++p.batch.ndim;
  }
  const int64_t kMaxGrid = 65535;
  return p.size_a >= kTile / 4 && p.size_b >= kTile / 4 && p.batches <= kMaxGrid &&
         ceil_div(p.size_b, kTile) <= kMaxGrid;
}

template <typename Out, typename In>
__global__ void __launch_bounds__(kTile* kTileRows)
    transpose_copy_kernel(TransposePlan p, Out* out, const In* in) {
  __shared__ In tile[kTile][kTile + 1];
  int64_t off[2];
  p.batch.offsets(blockIdx.z, off);
  const int64_t a0 = int64_t(blockIdx.x) * kTile, b0 = int64_t(blockIdx.y) * kTile;
  for (int r = threadIdx.y; r < kTile; r += kTileRows) {  // lanes along b: in's neighbours
    const int64_t ia = a0 + r, ib = b0 + threadIdx.x;
    if (ia < p.size_a && ib < p.size_b) tile[r][threadIdx.x] = in[off[1] + ia * p.in_stride_a + ib];
  }
  __syncthreads();
  for (int r = threadIdx.y; r < kTile; r += kTileRows) {  // lanes along a: out's neighbours
    const int64_t ib = b0 + r, ia = a0 + threadIdx.x;
    if (ia < p.size_a && ib < p.size_b)
      out[off[0] + ib * p.out_stride_b + ia] = convert<Out>(tile[threadIdx.x][r]);
  }
}

template <typename Out, typename In>
void transpose_copy(const Tensor& out, const Tensor& in, const TransposePlan& p) {
  LaunchConfig cfg;
  cfg.name = "copy";
  cfg.grid = dim3(unsigned(ceil_div(p.size_a, kTile)), unsigned(ceil_div(p.size_b, kTile)),
                  unsigned(p.batches));
  cfg.block = dim3(kTile, kTileRows);
  cfg.stream = stream_for(out);
  launch(transpose_copy_kernel<Out, In>, cfg, p, static_cast<Out*>(out.data_ptr()),
         static_cast<const In*>(in.data_ptr()));
}

void run_copy(const Tensor& out, const Tensor& in) {
  RG_DEBUG_ASSERT(out.shape() == in.shape(), "copy: shapes ", shape_str(out.shape()), " and ",
                  shape_str(in.shape()), " differ");
  if (out.numel() == 0) return;
  if (out.dtype() == in.dtype() && out.is_contiguous() && in.is_contiguous()) {
    device_memcpy(out.data_ptr(), in.data_ptr(), out.nbytes(), stream_for(out));
    return;
  }
  TransposePlan plan;
  const bool transposing = plan_transpose(out, in, plan);
  dispatch_dtype<DTypes::all, bf16>(out.dtype(), "copy", [&]<typename Out>(TypeTag<Out>) {
    dispatch_dtype<DTypes::all, bf16>(in.dtype(), "copy", [&]<typename In>(TypeTag<In>) {
      if (transposing)
        transpose_copy<Out, In>(out, in, plan);
      else
        elementwise<Out, In>("copy", ConvertFn<Out, In>{}, out, {in});
    });
  });
}

}  // namespace

void register_copy_kernels(KernelTable& k) { k.copy = run_copy; }
}  // namespace rg::RG_BACKEND
