"""Convolution, batch-norm and pooling layers with torch.nn's names, arguments and default
initialization (kaiming_uniform_(a=sqrt(5)) weights, U(-1/sqrt(fan_in), ..) biases, drawn
by ringgrad.nn.init from the seeded generator as torch draws them), over nn.functional's
conv1d, conv2d (im2col + GEMM, ops/convolution.cpp), batch_norm and the pools."""
import math

from ringgrad import _C
from ringgrad.nn import functional as F
from ringgrad.nn.module import Module, Parameter


def _tuple(value, n):
    return (value,) * n if isinstance(value, int) else tuple(value)


def _init():
    """ringgrad.nn.init (imported when first needed: it draws from the global generator)."""
    from ringgrad.nn import init
    return init


def _dtype(dtype):
    from ringgrad._creation import get_default_dtype
    return get_default_dtype() if dtype is None else dtype


class _ConvNd(Module):
    """weight [out, in / groups, *kernel] and bias [out], both U(-k, k) with
    k = 1 / sqrt(in / groups * prod(kernel)): torch's default, kaiming_uniform_(a=sqrt(5))
    for the weight (gain sqrt(1/3) times sqrt(3 / fan_in)), then the bias."""

    def __init__(self, n, in_channels, out_channels, kernel_size, stride, padding, dilation,
                 groups, bias, padding_mode, dtype):
        super().__init__()
        name = f"Conv{n}d"
        if groups < 1 or in_channels % groups or out_channels % groups:
            raise ValueError(f"{name}: groups {groups} must divide in_channels {in_channels} "
                             f"and out_channels {out_channels}")
        if padding_mode not in ("zeros", "reflect", "replicate", "circular"):
            raise ValueError(f"{name}: padding_mode '{padding_mode}' is not one of 'zeros', "
                             "'reflect', 'replicate', 'circular'")
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size = _tuple(kernel_size, n)
        self.stride, self.dilation = _tuple(stride, n), _tuple(dilation, n)
        self.padding = padding if isinstance(padding, str) else _tuple(padding, n)
        self.padding_mode = padding_mode
        dtype = _dtype(dtype)
        shape = [out_channels, in_channels // groups, *self.kernel_size]
        self.weight = Parameter(_C.zeros(shape, dtype))
        self.bias = Parameter(_C.zeros([out_channels], dtype)) if bias else None
        self.reset_parameters()

    def reset_parameters(self):
        """torch's: kaiming_uniform_(a=sqrt(5)) weights, U(-1/sqrt(fan_in), ..) biases."""
        init = _init()
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.weight.shape[1] * math.prod(self.kernel_size)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def _padded(self, input):
        """(input, padding): a non-zeros padding_mode pads here, the convolution with 0."""
        if self.padding_mode == "zeros" or isinstance(self.padding, str):
            return input, self.padding
        amounts = []
        for p in reversed(self.padding):
            amounts += [p, p]
        return F.pad(input, amounts, self.padding_mode), 0

    def extra_repr(self):
        text = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, padding={self.padding}")
        if any(d != 1 for d in self.dilation):
            text += f", dilation={self.dilation}"
        if self.groups != 1:
            text += f", groups={self.groups}"
        if self.bias is None:
            text += ", bias=False"
        if self.padding_mode != "zeros":
            text += f", padding_mode={self.padding_mode}"
        return text


class Conv1d(_ConvNd):
    """input [N, C, L] (or [C, L]) -> [N, out_channels, L_out]."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, padding_mode="zeros", device=None, dtype=None):
        super().__init__(1, in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, dtype)

    def forward(self, input):
        input, padding = self._padded(input)
        return F.conv1d(input, self.weight, self.bias, self.stride, padding, self.dilation,
                        self.groups)


class Conv2d(_ConvNd):
    """input [N, C, H, W] (or [C, H, W]) -> [N, out_channels, H_out, W_out]."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, padding_mode="zeros", device=None, dtype=None):
        super().__init__(2, in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, dtype)

    def forward(self, input):
        input, padding = self._padded(input)
        return F.conv2d(input, self.weight, self.bias, self.stride, padding, self.dilation,
                        self.groups)


class _BatchNorm(Module):
    """Normalizes each channel by the batch's statistics in training (updating the running
    ones with `momentum`), by the running ones in eval(); then weight * x + bias."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, device=None, dtype=None):
        super().__init__()
        dtype = _dtype(dtype)
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        self.weight = Parameter(_C.ones([num_features], dtype)) if affine else None
        self.bias = Parameter(_C.zeros([num_features], dtype)) if affine else None
        if track_running_stats:
            self.register_buffer("running_mean", _C.zeros([num_features], dtype))
            self.register_buffer("running_var", _C.ones([num_features], dtype))
            self.register_buffer("num_batches_tracked", _C.zeros([], _C.dtype.int64))
        else:
            self.running_mean = self.running_var = None

    def forward(self, input):
        self._check_input_dim(input)
        use_batch_stats = self.training or not self.track_running_stats
        if self.training and self.track_running_stats:
            self.num_batches_tracked.add_(1)
        return F.batch_norm(input, self.running_mean, self.running_var, self.weight, self.bias,
                            use_batch_stats, self.momentum, self.eps)

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, track_running_stats={self.track_running_stats}")


class BatchNorm1d(_BatchNorm):
    def _check_input_dim(self, input):
        if input.dim() not in (2, 3):
            raise ValueError(f"BatchNorm1d: expected 2D or 3D input (got {input.dim()}D input)")


class BatchNorm2d(_BatchNorm):
    def _check_input_dim(self, input):
        if input.dim() != 4:
            raise ValueError(f"BatchNorm2d: expected 4D input (got {input.dim()}D input)")


class MaxPool2d(Module):
    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False,
                 ceil_mode=False):
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.dilation, self.ceil_mode = dilation, ceil_mode
        self.return_indices = return_indices

    def forward(self, input):
        return F.max_pool2d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            self.ceil_mode, self.return_indices)

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class AvgPool2d(Module):
    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True, divisor_override=None):
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.ceil_mode, self.count_include_pad = ceil_mode, count_include_pad
        self.divisor_override = divisor_override

    def forward(self, input):
        return F.avg_pool2d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AdaptiveAvgPool2d(Module):
    """The mean over PyTorch's adaptive windows to an output of output_size (None: keep)."""

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, input):
        return F.adaptive_avg_pool2d(input, self.output_size)

    def extra_repr(self):
        return f"output_size={self.output_size}"
