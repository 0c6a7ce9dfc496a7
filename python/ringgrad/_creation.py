"""Making tensors with PyTorch's signatures: tensor(), the factories, and no_grad.

tensor(data) copies; from_numpy(array) (ringgrad._C) shares the array's memory. As in
PyTorch, Python floats default to float32 and Python ints to int64, while a NumPy array
keeps its dtype.
"""
import functools

import numpy as np

from ringgrad import _C

_NUMPY_DTYPES = {np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.int32),
                 np.dtype(np.int64), np.dtype(np.bool_)}


def _shareable(array):
    """array itself when from_numpy can view it, else a C-contiguous native copy."""
    strides_ok = all(s >= 0 and s % array.itemsize == 0 for s in array.strides)
    if strides_ok and array.flags.writeable and array.dtype.isnative:
        return array
    return np.array(array, dtype=array.dtype.newbyteorder("="), order="C", copy=True)


def from_numpy(array):
    """A tensor sharing array's memory (a copy only when its layout cannot be viewed)."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy: expected a numpy.ndarray, got {type(array).__name__}")
    if array.dtype.newbyteorder("=") not in _NUMPY_DTYPES:
        raise TypeError(f"from_numpy: unsupported dtype {array.dtype}: use float32, float64, "
                        "int32, int64 or bool")
    return _C.from_numpy(_shareable(array))


_default_dtype = [_C.dtype.float32]


def set_default_dtype(d):
    """The dtype of floating tensors made without one (factories, tensor() of floats)."""
    if d not in (_C.dtype.float32, _C.dtype.float64, _C.dtype.bfloat16):
        raise TypeError(f"set_default_dtype: only floating dtypes are supported, got {d}")
    _default_dtype[0] = d


def get_default_dtype():
    return _default_dtype[0]


def _as_array(data, dtype=None):
    """A NumPy array of data, with PyTorch's default dtypes for Python values (float64 kept
    when float64 is asked for)."""
    if isinstance(data, np.ndarray):
        return data
    if isinstance(data, (list, tuple)) and data and all(isinstance(d, _C.Tensor) for d in data):
        data = [d.tolist() for d in data]  # tensor([t1, t2]) of 0-d or equal-shape tensors
    array = np.array(data)
    if array.dtype == np.float64 and dtype != _C.dtype.float64:
        array = array.astype(np.float64 if get_default_dtype() == _C.dtype.float64
                             else np.float32)
    elif array.dtype.kind in "iu":
        array = array.astype(np.int64)
    return array


def _placed(t, device, requires_grad):
    """t on `device` (None: where it is), as a leaf that requires grad if asked."""
    if device is not None and device != t.device:
        t = t.to(device)
    return t.requires_grad_(requires_grad)


def tensor(data, dtype=None, device=None, requires_grad=False):
    """A new tensor holding a copy of data (nested lists, numbers, NumPy arrays, tensors)."""
    if isinstance(data, _C.Tensor):
        out = data.detach().clone()
    else:
        out = from_numpy(_as_array(data, dtype)).clone()
        if out.dtype == _C.dtype.float32 and get_default_dtype() == _C.dtype.bfloat16 and \
                not isinstance(data, np.ndarray):
            out = out.to(_C.dtype.bfloat16)
    if dtype is not None and dtype != out.dtype:
        out = out.to(dtype)
    return _placed(out, device, requires_grad)


def _shape(size):
    """zeros(2, 3), zeros((2, 3)) and zeros([2, 3]) all mean the shape [2, 3]."""
    if len(size) == 1 and not isinstance(size[0], int):
        return list(size[0])
    return list(size)


def _factory(make):
    @functools.wraps(make)
    def factory(*size, dtype=None, device=None, requires_grad=False, out=None):
        if out is not None:
            raise NotImplementedError(f"{make.__name__}: out= is not supported")
        return _placed(make(_shape(size), dtype or get_default_dtype()), device, requires_grad)
    return factory


zeros = _factory(_C.zeros)
ones = _factory(_C.ones)


def full(size, fill_value, dtype=None, device=None, requires_grad=False):
    if dtype is None:  # torch.full infers it from the value
        dtype = _C.dtype.bool if isinstance(fill_value, bool) else _C.dtype.int64 \
            if isinstance(fill_value, int) else get_default_dtype()
    return _placed(_C.full(list(size), float(fill_value), dtype), device, requires_grad)


def arange(start, end=None, step=1, dtype=None, device=None, requires_grad=False):
    """torch.arange: int64 when start, end and step are all ints, else float32."""
    if end is None:
        start, end = 0, start
    if dtype is None:
        whole = all(isinstance(v, int) for v in (start, end, step))
        dtype = _C.dtype.int64 if whole else get_default_dtype()
    return _placed(_C.arange(start, end, step, dtype), device, requires_grad)


class _GradModeScope:
    """A context manager (and decorator) that sets gradient recording in this thread to
    `_enabled` for its extent: no_grad and enable_grad."""
    _enabled = False

    def __enter__(self):
        self._previous = _C.is_grad_enabled()
        _C.set_grad_enabled(self._enabled)

    def __exit__(self, *exc):
        _C.set_grad_enabled(self._previous)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with type(self)():
                return fn(*args, **kwargs)
        return wrapped


class no_grad(_GradModeScope):
    """Context manager (and decorator) that turns gradient recording off in this thread."""
    _enabled = False
