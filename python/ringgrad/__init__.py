"""ringgrad: tensors, reverse-mode autograd and training, from Python.

A thin layer over the C++ engine (the extension ringgrad._C, python/src/): tensors and
ops are C++; this package gives them PyTorch's names and signatures.
"""
from ringgrad import _C
from ringgrad._C import Tensor, dtype, manual_seed, is_grad_enabled, set_grad_enabled
from ringgrad._C import set_num_threads, get_num_threads
from ringgrad._C import (matmul, exp, log, sqrt, tanh, sigmoid, relu, abs, neg, square,
                         softmax, log_softmax, where, clamp, maximum, minimum)
from ringgrad._C import (var, std, var_mean, std_mean, norm, tril, triu, outer,  # composites
                         repeat_interleave, einsum)
from ringgrad._creation import tensor, from_numpy, zeros, ones, full, rand, randn, arange, no_grad
from ringgrad._dlpack import from_dlpack
from ringgrad import _indexing  # noqa: F401 (Tensor.__getitem__, __setitem__)
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

from ringgrad import autograd, nn, optim, distributed, utils  # noqa: E402 (they import the names above)
from ringgrad import linalg  # noqa: E402

__all__ = ["Tensor", "dtype", "tensor", "from_numpy", "from_dlpack", "save", "load", "zeros", "ones", "full", "rand", "randn",
           "arange", "no_grad", "manual_seed", "set_num_threads", "get_num_threads", "is_grad_enabled", "set_grad_enabled", "matmul",
           "float32", "float64", "bfloat16", "int32", "int64", "bool", "autograd", "nn", "optim", "distributed", "utils"]
__all__ += ["var", "std", "var_mean", "std_mean", "norm", "tril", "triu", "outer",
            "repeat_interleave", "einsum", "linalg"]
