"""Module-level functions with torch's names over the Tensor methods and C++ ops: cat/stack,
the *_like factories, linspace/eye, the shape functions (flatten, transpose, ...), comparisons
(allclose, equal, isclose), grad-mode context managers and the default dtype."""
import builtins
import math

import numpy as np

from ringgrad import _C
from ringgrad._creation import (_GradModeScope, get_default_dtype, no_grad,  # noqa: F401
                                set_default_dtype, tensor)
from ringgrad._tensor import Tensor, _as_tensor_like, _to, device  # noqa: F401 (device)

class Size(tuple):
    """torch.Size: a tuple of dims (Tensor.shape is a plain tuple, equal to it)."""

    def numel(self):
        return math.prod(self)

    def __repr__(self):
        return f"torch.Size({list(self)})"


def is_tensor(obj):
    return isinstance(obj, Tensor)


def is_floating_point(input):
    return input.is_floating_point()


def numel(input):
    return input.numel()


def cat(tensors, dim=0):
    tensors = list(tensors)
    if not tensors:
        raise ValueError("cat: expected a non-empty list of tensors")
    return _C.cat(tensors, dim)


concat = concatenate = cat


def stack(tensors, dim=0):
    tensors = list(tensors)
    if not tensors:
        raise ValueError("stack: expected a non-empty list of tensors")
    shapes = {tuple(t.shape) for t in tensors}
    if len(shapes) != 1:
        raise ValueError(f"stack: expects each tensor to be equal size, got {sorted(shapes)}")
    dim = dim + tensors[0].dim() + 1 if dim < 0 else dim
    return _C.cat([t.unsqueeze(dim) for t in tensors], dim)


def _like(make):
    def like(input, *args, dtype=None, device=None, requires_grad=False, **kwargs):
        out = make(list(input.shape), *args, dtype or input.dtype)
        return _to(out, device=device or input.device).requires_grad_(requires_grad)
    return like


zeros_like = _like(_C.zeros)
ones_like = _like(_C.ones)
empty_like = _like(_C.zeros)
full_like = _like(lambda shape, value, dtype: _C.full(shape, float(value), dtype))


def empty(*size, dtype=None, device=None, requires_grad=False):
    from ringgrad._creation import zeros
    return zeros(*size, dtype=dtype, device=device, requires_grad=requires_grad)


def _from_numpy_values(values, dtype, device, requires_grad):
    out = tensor(values, dtype=dtype or get_default_dtype(), device=device)
    return out.requires_grad_(requires_grad)


def linspace(start, end, steps, dtype=None, device=None, requires_grad=False):
    """steps values from start to end inclusive (torch.linspace; computed in float64)."""
    if steps < 0:
        raise ValueError(f"linspace: number of steps must be non-negative, got {steps}")
    return _from_numpy_values(np.linspace(float(start), float(end), steps), dtype, device,
                              requires_grad)


def logspace(start, end, steps, base=10.0, dtype=None, device=None, requires_grad=False):
    if steps < 0:
        raise ValueError(f"logspace: number of steps must be non-negative, got {steps}")
    return _from_numpy_values(np.logspace(float(start), float(end), steps, base=base), dtype,
                              device, requires_grad)


def eye(n, m=None, dtype=None, device=None, requires_grad=False):
    return _from_numpy_values(np.eye(n, n if m is None else m), dtype, device, requires_grad)


def mm(input, mat2):
    return input.mm(mat2)


def bmm(input, mat2):
    return input.bmm(mat2)


def dot(input, tensor):
    return input.dot(tensor)


def mv(input, vec):
    return input.mv(vec)


def outer(input, vec2):
    if input.dim() != 1 or vec2.dim() != 1:
        raise ValueError(f"outer: expected 1-D tensors, got {input.dim()}-D and {vec2.dim()}-D")
    return input.unsqueeze(1) * vec2.unsqueeze(0)


ger = outer


def isnan(input):
    """True where input is NaN (x != x); integer and bool inputs have none."""
    return input != input


def isinf(input):
    if not input.dtype.is_floating_point:
        return input != input
    return input.abs() == math.inf


def isfinite(input):
    return ~(isnan(input) | isinf(input))


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    other = _as_tensor_like(other, input)
    a, b = input.double(), other.double()
    close = (a - b).abs() <= atol + rtol * b.abs()
    same = a == b  # infinities of one sign
    out = close | same
    if equal_nan:
        out = out | ((a != a) & (b != b))
    return out


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    return builtins.bool(isclose(input, other, rtol, atol, equal_nan).all())


def equal(input, other):
    """Same shape and equal values."""
    if list(input.shape) != list(other.shape):
        return False
    return builtins.bool((input == other).all()) if input.numel() else True


def _all(input, dim=None, keepdim=False):
    return (input != 0).logical_not().sum(dim, keepdim=keepdim) == 0 if dim is not None \
        else (input != 0).logical_not().sum() == 0


def _any(input, dim=None, keepdim=False):
    return (input != 0).sum(dim, keepdim=keepdim) > 0 if dim is not None \
        else (input != 0).sum() > 0


class _ValuesIndices(tuple):
    """(values, indices), as torch.return_types.max: also .values and .indices."""

    values = property(lambda self: self[0])
    indices = property(lambda self: self[1])


def _extreme(reduce, index, name):
    def extreme(input, dim=None, keepdim=False, *, other=None):
        if isinstance(dim, Tensor):  # torch.max(a, b): elementwise
            return (_C.maximum if name == "max" else _C.minimum)(input, dim)
        if dim is None:
            return reduce(input)
        return _ValuesIndices((reduce(input, dim, keepdim), index(input, dim, keepdim)))
    extreme.__name__ = name
    extreme.__doc__ = (f"torch.{name}: {name}(x) over all elements, {name}(x, dim, keepdim) "
                       f"as (values, indices), {name}(a, b) elementwise.")
    return extreme


max = _extreme(_C.amax, _C.argmax, "max")  # noqa: A001
min = _extreme(_C.amin, _C.argmin, "min")  # noqa: A001


def flatten(input, start_dim=0, end_dim=-1):
    return input.flatten(start_dim, end_dim)


def squeeze(input, dim=None):
    return input.squeeze(dim)


def unsqueeze(input, dim):
    return input.unsqueeze(dim)


def transpose(input, dim0, dim1):
    return input.transpose(dim0, dim1)


swapaxes = transpose


def permute(input, dims):
    return input.permute(*dims)


def reshape(input, shape):
    return input.reshape(*shape)


def t(input):
    return input.t()


def split(tensor, split_size_or_sections, dim=0):
    return tensor.split(split_size_or_sections, dim)


def chunk(input, chunks, dim=0):
    return input.chunk(chunks, dim)


def unbind(input, dim=0):
    return input.unbind(dim)


def clamp(input, min=None, max=None):
    return input.clamp(min, max)


clip = clamp


def where(condition, input, other):
    return input.where(condition, other) if isinstance(input, Tensor) else \
        _as_tensor_like(input, other).where(condition, other)


def masked_fill(input, mask, value):
    return input.masked_fill(mask, value)


def softmax(input, dim, dtype=None):
    return input.softmax(dim, dtype)


def log_softmax(input, dim, dtype=None):
    return input.log_softmax(dim, dtype)


def add(input, other, alpha=1):
    return _C.add(input, other * alpha if alpha != 1 else other)


def sub(input, other, alpha=1):
    return _C.sub(input, other * alpha if alpha != 1 else other)


subtract, multiply, divide, true_divide = sub, _C.mul, _C.div, _C.div


def rsub(input, other, alpha=1):
    return _C.sub(other, input * alpha if alpha != 1 else input)


class enable_grad(_GradModeScope):
    """Context manager (and decorator) that turns gradient recording on in this thread."""
    _enabled = True


class inference_mode(no_grad):
    """As no_grad (ringgrad has no separate inference mode); inference_mode(False) is a no-op."""

    def __init__(self, mode=True):
        self._mode = mode

    def __enter__(self):
        self._previous = _C.is_grad_enabled()
        if self._mode:
            _C.set_grad_enabled(False)


class set_grad_enabled:
    """torch.set_grad_enabled(mode): sets the mode now; as a context manager, restores the
    previous mode on exit."""

    def __init__(self, mode):
        self._previous = _C.is_grad_enabled()
        _C.set_grad_enabled(builtins.bool(mode))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _C.set_grad_enabled(self._previous)
        return False


e = math.e
pi = math.pi
inf = math.inf
nan = math.nan
