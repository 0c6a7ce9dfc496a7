// The collectives' local arithmetic through the kernel table; see buffer_math.h.
#include "dist/buffer_math.h"

#include <cstring>

#include "core/device_interface.h"
#include "kernels/builtin.h"
#include "kernels/cuda/stream.h"

namespace rg::dist {

namespace {

void check_same(const Tensor& a, const Tensor& b, const char* what) {
  RG_CHECK(a.numel() == b.numel() && a.device() == b.device(), what, ": ", a.numel(),
           " elements on ", a.device().str(), " vs ", b.numel(), " on ", b.device().str());
}

// Whether this thread's work on sim memory waits in a stream's queue (the delayed
// communication stream a device-stream collective runs on, dist/stream_work.h): the host
// must not touch those bytes now, only the device's own kernels, queued in order.
bool queued_on_stream(Device d) { return gpu::current_stream_defers_host_access(d); }

// `t` as the kernels of its memory see it: host memory (cpu, sim) as a cpu tensor over the
// same bytes, for the cpu kernels (sim's interpreted kernels would compute the same, only
// slower), unless its work is queued on a stream; any other device as it is.
Tensor for_kernels(const Tensor& t) {
  if (t.device().is_cpu() || !t.device().is_host_memory() || queued_on_stream(t.device())) return t;
  return from_blob(t.data_ptr(), t.shape(), t.dtype(), kCPU);
}

}  // namespace

Tensor flat_slice(const Tensor& t, int64_t start, int64_t length) {
  return make_view(t, {length}, {1}, t.offset() + start);
}

std::vector<int64_t> uneven_segments(int64_t count, int n) {
  std::vector<int64_t> offset(n + 1);
  const int64_t base = count / n, extra = count % n;
  for (int k = 0; k <= n; ++k) offset[k] = k * base + std::min<int64_t>(k, extra);
  return offset;
}

void reduce_into(const Tensor& acc, const Tensor& incoming, CombineOp op) {
  check_same(acc, incoming, "reduce_into");
  RG_CHECK(acc.dtype() == incoming.dtype(), "reduce_into: dtypes ", acc.dtype(), " and ",
           incoming.dtype());
  RG_CHECK(acc.dtype() != DType::b8, "reduce_into: unsupported dtype ", acc.dtype());
  if (acc.numel() == 0) return;
  Tensor a = for_kernels(acc);
  // maximum lets NaN win, as torch.maximum; avg sums here and divides at the end.
  RG_KERNEL(a.device(), binary)
  (op == CombineOp::max ? BinaryOp::maximum : BinaryOp::add, a, a, for_kernels(incoming));
}

void divide_by(const Tensor& t, int64_t n) {
  if (n == 1 || t.numel() == 0) return;
  RG_CHECK(t.dtype() == DType::f32 || t.dtype() == DType::f64, "divide_by: unsupported dtype ",
           t.dtype());
  Tensor x = for_kernels(t);
  // The divisor: one element on the kernels' device, broadcast with stride 0.
  Tensor divisor = empty({1}, x.dtype(), x.device());
  RG_KERNEL(x.device(), fill)(divisor, static_cast<double>(n));
  RG_KERNEL(x.device(), binary)
  (BinaryOp::div, x, x, make_view(divisor, x.shape(), Strides(x.dim(), 0), 0));
}

void copy_buffer(const Tensor& dst, const Tensor& src) {
  RG_CHECK(dst.numel() == src.numel(), "copy_buffer: ", dst.numel(), " vs ", src.numel(),
           " elements");
  if (dst.numel() == 0) return;
  const bool queued = queued_on_stream(dst.device()) || queued_on_stream(src.device());
  if (dst.dtype() == src.dtype() && !queued) {
    if (dst.device().is_host_memory() && src.device().is_host_memory()) {
      std::memcpy(dst.data_ptr(), src.data_ptr(), dst.nbytes());
    } else {
      Device device = dst.device().is_host_memory() ? src.device() : dst.device();
      device_interface(device.type)
          .copy(dst.data_ptr(), dst.device(), src.data_ptr(), src.device(), dst.nbytes());
    }
    return;
  }
  check_same(dst, src, "copy_buffer");
  Tensor d = for_kernels(dst);
  RG_KERNEL(d.device(), copy)(d, for_kernels(src));
}

}  // namespace rg::dist
