"""DLPack exchange (the array API's __dlpack__ protocol) for host tensors.

A ringgrad tensor in host memory hands out a DLPack capsule of its own memory (through its
zero-copy NumPy view, whose capsule keeps the tensor alive), so np.from_dlpack(t) and other
libraries' from_dlpack take it without a copy; rg.from_dlpack(x) takes any DLPack producer's
host memory the same way. Device tensors are not exchanged yet (they say so).
"""
import numpy as np

from ringgrad import _C
from ringgrad._creation import from_numpy

_DL_CPU = 1  # DLDeviceType kDLCPU


def _host_only(t, what):
    if t.device != "cpu":
        raise RuntimeError(f"{what}: only host tensors are exchanged through DLPack here, "
                           f"this one is on {t.device}")


def __dlpack__(self, stream=None, **kwargs):
    _host_only(self, "__dlpack__")
    return self.numpy().__dlpack__(stream=stream, **kwargs)


def __dlpack_device__(self):
    _host_only(self, "__dlpack_device__")
    return (_DL_CPU, 0)


def from_dlpack(x):
    """A tensor sharing the memory of x, any object with __dlpack__ (NumPy, CuPy's host
    arrays, JAX on CPU...); a copy only where from_numpy needs one (odd strides, byte order)."""
    if isinstance(x, _C.Tensor):
        return x
    return from_numpy(np.from_dlpack(x))


_C.Tensor.__dlpack__ = __dlpack__
_C.Tensor.__dlpack_device__ = __dlpack_device__
