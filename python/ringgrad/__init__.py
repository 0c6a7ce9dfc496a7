"""ringgrad: tensors, reverse-mode autograd and training, from Python.

A thin layer over the C++ engine (the extension ringgrad._C, python/src/): tensors and
ops are C++; this package gives them PyTorch's names and signatures.
"""
from ringgrad import _C
from ringgrad._C import Tensor, dtype, manual_seed, is_grad_enabled, set_grad_enabled
from ringgrad._C import set_num_threads, get_num_threads
from ringgrad._C import (matmul, exp, log, sqrt, tanh, sigmoid, relu, abs, neg, square,
                         softmax, log_softmax, where, clamp, maximum, minimum)
from ringgrad._C import (gather, take_along_dim, scatter, scatter_add, index_select, index_add,
                         cumsum, sort, argsort, topk, max, min)  # noqa: A004 (torch.max, torch.min)
from ringgrad._creation import tensor, from_numpy, zeros, ones, full, rand, randn, arange, no_grad
from ringgrad._dlpack import from_dlpack
from ringgrad import _indexing  # noqa: F401 (Tensor.__getitem__, __setitem__, index_put)
from ringgrad._indexing import index_put
from ringgrad._printing import tensor_repr as _tensor_repr
from ringgrad.serialization import save, load

float32 = dtype.float32
float64 = dtype.float64
bfloat16 = dtype.bfloat16
int32 = dtype.int32
int64 = dtype.int64
bool = dtype.bool  # noqa: A001 (torch.bool, as PyTorch names it)
Tensor.register_hook = lambda self, hook: _C.register_hook(self, hook)
Tensor.register_hook.__doc__ = "hook(grad) runs when this tensor's gradient is computed; it may "\
    "return a replacement gradient (torch.Tensor.register_hook)."
Tensor.register_post_accumulate_grad_hook = \
    lambda self, hook: _C.register_post_accumulate_grad_hook(self, hook)
Tensor.register_post_accumulate_grad_hook.__doc__ = "hook(param) runs once param.grad is final "\
    "for this backward (torch.Tensor.register_post_accumulate_grad_hook)."
dtype.__repr__ = dtype.__str__ = lambda self: "ringgrad." + self.name  # as torch.float32 prints
Tensor.__repr__ = Tensor.__str__ = _tensor_repr  # PyTorch's layout of the numbers

from ringgrad import autograd, nn, optim, distributed, utils  # noqa: E402 (they import the names above)

__all__ = ["Tensor", "dtype", "tensor", "from_numpy", "from_dlpack", "save", "load", "zeros", "ones", "full", "rand", "randn",
           "arange", "no_grad", "manual_seed", "set_num_threads", "get_num_threads", "is_grad_enabled", "set_grad_enabled", "matmul",
           "gather", "take_along_dim", "scatter", "scatter_add", "index_select", "index_add", "index_put", "cumsum", "sort",
           "argsort", "topk", "max", "min", "float32", "float64", "bfloat16", "int32", "int64", "bool", "autograd", "nn", "optim", "distributed", "utils"]

# PyTorch's runtime switches (device queries, autocast, TF32, compile) under their names.
from ringgrad import cuda, amp, backends  # noqa: E402
from ringgrad.amp import autocast  # noqa: E402

_MATMUL_PRECISION = {"highest": False, "high": True, "medium": True}


def set_float32_matmul_precision(precision):
    """'highest': f32 GEMMs in f32; 'high'/'medium': TF32 allowed (on a GPU), as PyTorch."""
    if precision not in _MATMUL_PRECISION:
        raise ValueError(f"set_float32_matmul_precision: {precision!r} is not one of "
                         "'highest', 'high', 'medium'")
    _C.set_allow_tf32(_MATMUL_PRECISION[precision])


def get_float32_matmul_precision():
    return "high" if _C.allow_tf32() else "highest"


def compile(model=None, **options):  # noqa: A001 (torch.compile)
    """torch.compile's signature; ringgrad runs eagerly, so the model is returned as it is
    (a decorator without arguments too). CUDA graphs are ringgrad's own way to cut launch
    costs (docs/cuda-graphs.md)."""
    if model is None:
        return lambda fn: fn
    return model


__all__ += ["cuda", "amp", "backends", "autocast", "set_float32_matmul_precision",
            "get_float32_matmul_precision", "compile"]
