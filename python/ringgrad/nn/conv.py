"""Convolution, batch-norm and pooling layers with torch.nn's names and default
initialization, over nn.functional's conv1d, conv2d, batch_norm, max_pool2d, avg_pool2d."""
import math

from ringgrad import _C
from ringgrad.nn import functional as F
from ringgrad.nn.module import Module, Parameter


def _pair(value, n):
    return (value,) * n if isinstance(value, int) else tuple(value)


def _init():
    """ringgrad.nn.init (imported when first needed: it draws from the global generator)."""
    from ringgrad.nn import init
    return init


class _ConvNd(Module):
    def __init__(self, n, in_channels, out_channels, kernel_size, stride, padding, dilation,
                 groups, bias, padding_mode, dtype):
        super().__init__()
        if in_channels % groups or out_channels % groups:
            raise ValueError(f"{type(self).__name__}: in_channels {in_channels} and "
                             f"out_channels {out_channels} must be divisible by groups {groups}")
        if padding_mode != "zeros":
            raise NotImplementedError(f"{type(self).__name__}: padding_mode '{padding_mode}' "
                                      "is not supported (only 'zeros')")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = _pair(kernel_size, n)
        self.stride, self.dilation = _pair(stride, n), _pair(dilation, n)
        self.padding = padding if isinstance(padding, str) else _pair(padding, n)
        self.groups = groups
        dtype = dtype or _C.dtype.float32
        shape = [out_channels, in_channels // groups] + list(self.kernel_size)
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

    def extra_repr(self):
        return (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}" + (f", padding={self.padding}" if self.padding not in
                                           ((0,), (0, 0)) else "") +
                (f", groups={self.groups}" if self.groups != 1 else "") +
                (", bias=False" if self.bias is None else ""))


class Conv1d(_ConvNd):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, padding_mode="zeros", device=None, dtype=None):
        super().__init__(1, in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, dtype)

    def forward(self, input):
        return F.conv1d(input, self.weight, self.bias, self.stride, self.padding, self.dilation,
                        self.groups)


class Conv2d(_ConvNd):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, padding_mode="zeros", device=None, dtype=None):
        super().__init__(2, in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, dtype)

    def forward(self, input):
        return F.conv2d(input, self.weight, self.bias, self.stride, self.padding, self.dilation,
                        self.groups)


class _BatchNorm(Module):
    """Normalizes each channel by the batch's statistics in training (updating the running
    ones with `momentum`), by the running ones in eval(); then weight * x + bias."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, device=None, dtype=None):
        super().__init__()
        dtype = dtype or _C.dtype.float32
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
        self.kernel_size, self.stride, self.padding = kernel_size, stride or kernel_size, padding

    def forward(self, input):
        return F.max_pool2d(input, self.kernel_size, self.stride, self.padding)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool2d(MaxPool2d):
    def forward(self, input):
        return F.avg_pool2d(input, self.kernel_size, self.stride, self.padding)
