// Convolution and pooling over 2-D windows by im2col, composed of views, cat and matmul, so
// every device runs them and autograd gives the backward.
//
// im2col ("image to columns"): for each of the KH x KW kernel offsets (kh, kw), the input
// elements that offset touches for every output position form one strided view,
//   x_padded[:, :, kh*dh : kh*dh + sh*(Ho-1) + 1 : sh, kw*dw : ... : sw]   of shape [N, C, Ho, Wo],
// and the KH*KW views stacked give columns [N, C, KH*KW, Ho, Wo]: position (ho, wo) of
// column k is the input under kernel tap k when the window sits at (ho, wo). Convolution is
// then one GEMM per group: weight [G, O/G, C/G*KH*KW] @ columns [N, G, C/G*KH*KW, Ho*Wo]
// -> [N, G, O/G, Ho*Wo] = the output [N, O, Ho, Wo]. Pooling reduces the columns over the
// kernel taps instead (the max, its gradient to the first largest tap as PyTorch's; or the mean).
// The backward of the views scatters the columns' gradient back onto the input (col2im), which
// autograd does through slice and cat.
//
// Shapes: x [N, C, H, W] (or [C, H, W], unbatched), Ho = (H + 2*ph - dh*(KH-1) - 1) / sh + 1.
#include <limits>

#include "ops/ops.h"
#include "ops/record.h"

namespace rg {

namespace {

struct Window {
  int64_t kh, kw;  // kernel size
  Pair stride, padding, dilation;
};

int64_t out_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode) {
  const int64_t span = in + 2 * p - d * (k - 1) - 1;
  if (span < 0) return 0;
  int64_t n = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
  // ceil mode: the last window must start inside the input or its left padding (PyTorch's rule)
  if (ceil_mode && (n - 1) * s >= in + p) --n;
  return n;
}

void check_pair(const Pair& v, int64_t min, const char* op, const char* what) {
  RG_CHECK(v[0] >= min && v[1] >= min, op, ": ", what, " must be >= ", min, ", got (", v[0], ", ",
           v[1], ")");
}

// The columns [N, C, KH*KW, Ho, Wo] of padded input xp [N, C, Hp, Wp].
Tensor im2col(const Tensor& xp, const Window& w, int64_t ho, int64_t wo) {
  std::vector<Tensor> taps;
  for (int64_t i = 0; i < w.kh; ++i)
    for (int64_t j = 0; j < w.kw; ++j) {
      const int64_t top = i * w.dilation[0], left = j * w.dilation[1];
      Tensor rows = xp.slice(2, top, top + w.stride[0] * (ho - 1) + 1, w.stride[0]);
      taps.push_back(
          rows.slice(3, left, left + w.stride[1] * (wo - 1) + 1, w.stride[1]).unsqueeze(2));
    }
  return cat(taps, 2);
}

// x as 4-D (an unbatched [C, H, W] gets N = 1), checked for `op`.
Tensor as_batched(const Tensor& x, const char* op) {
  check_defined(op, x, "input");
  RG_CHECK(is_floating(x.dtype()), op, ": expected a floating-point input, got ", x.dtype());
  RG_CHECK(x.dim() == 3 || x.dim() == 4, op,
           ": expected a 3-D [C, H, W] or 4-D [N, C, H, W] input, got shape ",
           shape_str(x.shape()));
  return x.dim() == 3 ? x.unsqueeze(0) : x;
}

// The columns of x4 for window w (padding with `fill`), and the output size.
Tensor windows_of(const Tensor& x4, const Window& w, double fill, const char* op, int64_t& ho,
                  int64_t& wo, bool ceil_mode = false) {
  check_pair(w.stride, 1, op, "stride");
  check_pair(w.padding, 0, op, "padding");
  check_pair(w.dilation, 1, op, "dilation");
  ho = out_size(x4.size(2), w.kh, w.stride[0], w.padding[0], w.dilation[0], ceil_mode);
  wo = out_size(x4.size(3), w.kw, w.stride[1], w.padding[1], w.dilation[1], ceil_mode);
  RG_CHECK(ho > 0 && wo > 0, op, ": input of shape ", shape_str(x4.shape()),
           " is too small for kernel (", w.kh, ", ", w.kw, ") with padding (", w.padding[0], ", ",
           w.padding[1], ") and dilation (", w.dilation[0], ", ", w.dilation[1], ")");
  // ceil mode may need extra padding on the bottom/right for the last window
  const int64_t extra_h = std::max<int64_t>(
      0, (ho - 1) * w.stride[0] + w.dilation[0] * (w.kh - 1) + 1 - (x4.size(2) + 2 * w.padding[0]));
  const int64_t extra_w = std::max<int64_t>(
      0, (wo - 1) * w.stride[1] + w.dilation[1] * (w.kw - 1) + 1 - (x4.size(3) + 2 * w.padding[1]));
  Tensor xp = pad(x4, {w.padding[1], w.padding[1] + extra_w, w.padding[0], w.padding[0] + extra_h},
                  "constant", fill);
  return im2col(xp, w, ho, wo);
}

// avg_pool2d's divisor per window [Ho, Wo], PyTorch's: the taps inside the input, or with
// count_include_pad those inside the padded input (never the cells ceil mode adds past it).
Tensor window_counts(int64_t h, int64_t wd, const Window& w, int64_t ho, int64_t wo,
                     bool count_include_pad) {
  auto taps = [&](int64_t start, int64_t k, int64_t size, int64_t pad) {
    const int64_t lo = count_include_pad ? -pad : 0, hi = count_include_pad ? size + pad : size;
    return std::min(start + k, hi) - std::max(start, lo);
  };
  std::vector<double> counts;
  for (int64_t i = 0; i < ho; ++i)
    for (int64_t j = 0; j < wo; ++j)
      counts.push_back(
          static_cast<double>(taps(i * w.stride[0] - w.padding[0], w.kh, h, w.padding[0]) *
                              taps(j * w.stride[1] - w.padding[1], w.kw, wd, w.padding[1])));
  return tensor(counts, {ho, wo}, DType::f64);
}

}  // namespace

Tensor conv2d(const Tensor& x_in, const Tensor& weight, const Tensor& bias, Pair stride,
              Pair padding, Pair dilation, int64_t groups) {
  const Tensor x = as_batched(x_in, "conv2d");
  check_defined("conv2d", weight, "weight");
  check_same_device("conv2d", x, weight);
  RG_CHECK(weight.dim() == 4, "conv2d: weight must be 4-D [out, in / groups, KH, KW], got shape ",
           shape_str(weight.shape()));
  RG_CHECK(x.dtype() == weight.dtype() && is_floating(x.dtype()),
           "conv2d: expected floating-point input and weight of one dtype, got ", x.dtype(),
           " and ", weight.dtype());
  RG_CHECK(groups >= 1, "conv2d: groups must be >= 1, got ", groups);
  const int64_t n = x.size(0), c = x.size(1), o = weight.size(0);
  RG_CHECK(c % groups == 0 && o % groups == 0, "conv2d: groups ", groups,
           " must divide the input channels ", c, " and the output channels ", o);
  RG_CHECK(weight.size(1) * groups == c, "conv2d: input of shape ", shape_str(x_in.shape()),
           " has ", c, " channels, but weight of shape ", shape_str(weight.shape()),
           " with groups ", groups, " expects ", weight.size(1) * groups);
  if (bias.defined()) {
    check_same_device("conv2d", x, bias);
    RG_CHECK(bias.dim() == 1 && bias.size(0) == o, "conv2d: bias must have shape [", o, "], got ",
             shape_str(bias.shape()));
  }
  int64_t ho = 0, wo = 0;
  const Window w{weight.size(2), weight.size(3), stride, padding, dilation};
  Tensor cols = windows_of(x, w, 0, "conv2d", ho, wo);  // [N, C, KH*KW, Ho, Wo]
  const int64_t k = c / groups * w.kh * w.kw;
  cols = reshape(cols, {n, groups, k, ho * wo});
  Tensor out = matmul(reshape(weight, {groups, o / groups, k}), cols);  // [N, G, O/G, Ho*Wo]
  out = reshape(out, {n, o, ho, wo});
  if (bias.defined()) out = add(out, reshape(bias, {1, o, 1, 1}));
  return x_in.dim() == 3 ? out.squeeze(0) : out;
}

Tensor conv1d(const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t stride,
              int64_t padding, int64_t dilation, int64_t groups) {
  check_defined("conv1d", x, "input");
  check_defined("conv1d", weight, "weight");
  RG_CHECK(x.dim() == 2 || x.dim() == 3,
           "conv1d: expected a 2-D [C, L] or 3-D [N, C, L] input, got shape ",
           shape_str(x.shape()));
  RG_CHECK(weight.dim() == 3, "conv1d: weight must be 3-D [out, in / groups, K], got shape ",
           shape_str(weight.shape()));
  Tensor out = conv2d(x.unsqueeze(-2), weight.unsqueeze(2), bias, {1, stride}, {0, padding},
                      {1, dilation}, groups);
  return out.squeeze(-2);
}

Tensor max_pool2d(const Tensor& x_in, Pair kernel, Pair stride, Pair padding, Pair dilation,
                  bool ceil_mode) {
  const Tensor x = as_batched(x_in, "max_pool2d");
  check_pair(kernel, 1, "max_pool2d", "kernel_size");
  if (stride[0] == 0 && stride[1] == 0) stride = kernel;
  RG_CHECK(padding[0] * 2 <= kernel[0] && padding[1] * 2 <= kernel[1], "max_pool2d: padding (",
           padding[0], ", ", padding[1], ") must be at most half the kernel size (", kernel[0],
           ", ", kernel[1], ")");
  int64_t ho = 0, wo = 0;
  const Window w{kernel[0], kernel[1], stride, padding, dilation};
  Tensor cols =
      windows_of(x, w, -std::numeric_limits<double>::infinity(), "max_pool2d", ho, wo, ceil_mode);
  // The first largest tap of each window (PyTorch's choice among ties) gets the gradient:
  // where() passes it to that tap only, and the sum of one chosen value and zeros is exact.
  Tensor winner = argmax(cols, 2, true);  // [N, C, 1, Ho, Wo]
  Tensor taps = reshape(arange(w.kh * w.kw, DType::i64, x.device()), {1, 1, w.kh * w.kw, 1, 1});
  Tensor chosen = where(eq(taps, winner), cols, scalar_tensor(0, x.dtype(), x.device()));
  Tensor out = sum(chosen, {2});
  return x_in.dim() == 3 ? out.squeeze(0) : out;
}

Tensor avg_pool2d(const Tensor& x_in, Pair kernel, Pair stride, Pair padding, bool ceil_mode,
                  bool count_include_pad) {
  const Tensor x = as_batched(x_in, "avg_pool2d");
  check_pair(kernel, 1, "avg_pool2d", "kernel_size");
  if (stride[0] == 0 && stride[1] == 0) stride = kernel;
  RG_CHECK(padding[0] * 2 <= kernel[0] && padding[1] * 2 <= kernel[1], "avg_pool2d: padding (",
           padding[0], ", ", padding[1], ") must be at most half the kernel size (", kernel[0],
           ", ", kernel[1], ")");
  int64_t ho = 0, wo = 0;
  const Window w{kernel[0], kernel[1], stride, padding, {1, 1}};
  Tensor total = sum(windows_of(x, w, 0, "avg_pool2d", ho, wo, ceil_mode), {2});
  Tensor count = window_counts(x.size(2), x.size(3), w, ho, wo, count_include_pad);
  Tensor out = div(total, count.to(x.device(), x.dtype()));
  return x_in.dim() == 3 ? out.squeeze(0) : out;
}

// Output cell i of a dim of `in` elements averages [floor(i * in / out), ceil((i + 1) * in / out)),
// PyTorch's windows. A rectangle's mean is the mean over its columns of the means over its rows
// (every row of a window has as many elements), so each dim is pooled in turn.
Tensor adaptive_avg_pool2d(const Tensor& x_in, Pair output_size) {
  const Tensor x = as_batched(x_in, "adaptive_avg_pool2d");
  check_pair(output_size, 1, "adaptive_avg_pool2d", "output_size");
  Tensor out = x;
  for (int64_t dim : {2, 3}) {
    const int64_t in = x.size(dim), cells = output_size[dim - 2];
    RG_CHECK(in > 0, "adaptive_avg_pool2d: input of shape ", shape_str(x_in.shape()),
             " has an empty spatial dim");
    std::vector<Tensor> means;
    for (int64_t i = 0; i < cells; ++i) {
      const int64_t start = i * in / cells, end = ((i + 1) * in + cells - 1) / cells;
      means.push_back(mean(out.narrow(dim, start, end - start), {dim}, true));
    }
    out = cat(means, dim);
  }
  return x_in.dim() == 3 ? out.squeeze(0) : out;
}

}  // namespace rg
