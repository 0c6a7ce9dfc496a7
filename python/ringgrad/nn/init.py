"""torch.nn.init: fill a tensor in place, without recording gradients, and return it. The random
ones draw from ringgrad's PyTorch-compatible generator (ringgrad/_random.py) with torch's
arithmetic for bounds and standard deviations, so a seeded model starts with torch's weights.

trunc_normal_ is not provided (torch's needs erfinv, which ringgrad lacks); orthogonal_ runs
NumPy's QR on torch's normal draws, so it matches torch to rounding, not bit for bit.
"""
import math
import warnings

import numpy as np

from ringgrad import _C
from ringgrad._creation import from_numpy, no_grad

_LINEAR_LIKE = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                "conv_transpose3d", "sigmoid")


def calculate_gain(nonlinearity, param=None):
    """The recommended gain for a nonlinearity (torch.nn.init.calculate_gain)."""
    if nonlinearity in _LINEAR_LIKE:
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, (int, float)) and not isinstance(param, bool):
            slope = param
        else:
            raise ValueError(f"calculate_gain: negative_slope {param} is not a valid number")
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"calculate_gain: unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor):
    shape = list(tensor.shape)
    if len(shape) < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 "
                         "dimensions")
    receptive_field = math.prod(shape[2:])
    return shape[1] * receptive_field, shape[0] * receptive_field


def _calculate_correct_fan(tensor, mode):
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


@no_grad()
def uniform_(tensor, a=0.0, b=1.0, generator=None):
    return tensor.uniform_(a, b, generator=generator)


@no_grad()
def normal_(tensor, mean=0.0, std=1.0, generator=None):
    return tensor.normal_(mean, std, generator=generator)


@no_grad()
def constant_(tensor, val):
    tensor.fill_(val)
    return tensor


def ones_(tensor):
    return constant_(tensor, 1.0)


def zeros_(tensor):
    return constant_(tensor, 0.0)


@no_grad()
def eye_(tensor):
    if tensor.dim() != 2:
        raise ValueError("eye_: only tensors with 2 dimensions are supported")
    eye = np.eye(*tensor.shape, dtype=np.float64)
    tensor.copy_(from_numpy(eye).to(tensor.dtype).to(tensor.device))
    return tensor


def xavier_uniform_(tensor, gain=1.0, generator=None):
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return normal_(tensor, 0.0, std, generator)


def _kaiming_std(tensor, a, mode, nonlinearity):
    """The standard deviation, or None for a tensor with no elements (torch warns and skips)."""
    if 0 in list(tensor.shape):
        warnings.warn("Initializing zero-element tensors is a no-op")
        return None
    fan = _calculate_correct_fan(tensor, mode)
    return calculate_gain(nonlinearity, a) / math.sqrt(fan)


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    std = _kaiming_std(tensor, a, mode, nonlinearity)
    if std is None:
        return tensor
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    std = _kaiming_std(tensor, a, mode, nonlinearity)
    if std is None:
        return tensor
    return normal_(tensor, 0.0, std, generator)


@no_grad()
def orthogonal_(tensor, gain=1.0, generator=None):
    """A (semi-)orthogonal matrix from the QR of a normal draw, signs fixed by R's diagonal."""
    if tensor.dim() < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    draw = _C.Tensor.normal_(_C.zeros([rows, cols], tensor.dtype), 0.0, 1.0,
                             generator=generator).numpy().astype(np.float64)
    flat = draw.T if rows < cols else draw
    q, r = np.linalg.qr(flat)
    q = q * np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    values = from_numpy(np.ascontiguousarray(q * gain).reshape(list(tensor.shape)))
    tensor.copy_(values.to(tensor.dtype).to(tensor.device))
    return tensor


__all__ = ["calculate_gain", "uniform_", "normal_", "constant_", "ones_", "zeros_", "eye_",
           "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_",
           "orthogonal_"]
