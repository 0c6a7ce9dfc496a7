"""ringgrad: tensors, reverse-mode autograd and training, from Python.

A thin layer over the C++ engine (the extension ringgrad._C, python/src/): tensors and
ops are C++; this package gives them PyTorch's names and signatures, so that a small PyTorch
program runs with `import ringgrad as torch`. Every row of the op tables (core/op_table.h)
is ringgrad.<name> and Tensor.<name> (generated: _C.op_tables lists them by table).
"""
from ringgrad import _C
from ringgrad._C import Tensor, dtype, is_grad_enabled
from ringgrad._C import set_num_threads, get_num_threads, matmul
from ringgrad import _tensor
_tensor.install()
from ringgrad._creation import (tensor, from_numpy, zeros, ones, full,  # noqa: E402
                                arange, no_grad, set_default_dtype, get_default_dtype)
from ringgrad._random import (Generator, default_generator, manual_seed, seed,  # noqa: E402
                              initial_seed, get_rng_state, set_rng_state, rand, randn, rand_like,
                              randn_like, randint, randint_like, randperm, normal, bernoulli,
                              multinomial)
from ringgrad._dlpack import from_dlpack  # noqa: E402
from ringgrad import _indexing  # noqa: E402,F401 (Tensor.__getitem__, __setitem__, index_put)
from ringgrad._indexing import index_put  # noqa: E402
from ringgrad._printing import tensor_repr as _tensor_repr  # noqa: E402
from ringgrad.serialization import save, load  # noqa: E402
from ringgrad import _functions  # noqa: E402
from ringgrad import cuda, amp, backends  # noqa: E402
from ringgrad.amp import autocast  # noqa: E402
from ringgrad._runtime import (compile, set_float32_matmul_precision,  # noqa: E402,A004
                               get_float32_matmul_precision)

_TABLE_OPS = [name for names in _C.op_tables.values() for name in names]
globals().update({name: getattr(_C, name) for name in _TABLE_OPS})  # noqa (generated)
_FUNCTIONS = [name for name in dir(_functions) if not name.startswith("_") and name not in
              ("np", "math", "functools", "builtins", "Tensor", "tensor", "no_grad")]
globals().update({name: getattr(_functions, name) for name in _FUNCTIONS})
# The indexing ops (python/src/bind_indexing.cpp): max/min along a dim give (values, indices)
# with the gradient to the index taken, as PyTorch's.
from ringgrad._C import (gather, take_along_dim, scatter, scatter_add, index_select,  # noqa: E402
                         index_add, cumsum, sort, argsort, topk, max, min)  # noqa: A004
# The composite ops (python/src/bind_composite_ops.cpp).
from ringgrad._C import (var, std, var_mean, std_mean, norm, tril, triu, outer,  # noqa: E402
                         repeat_interleave, einsum)
Tensor.all, Tensor.any = _functions._all, _functions._any
Tensor.isnan, Tensor.isinf, Tensor.isfinite = _functions.isnan, _functions.isinf, _functions.isfinite
all, any = _functions._all, _functions._any  # noqa: A001 (torch.all, torch.any)
for _name in ("max", "min"):  # unless the C++ binds its own (values, indices) form
    if not hasattr(Tensor, _name):
        setattr(Tensor, _name, getattr(_functions, _name))
absolute, negative = _C.abs, _C.neg

float32 = float = dtype.float32  # noqa: A001 (torch.float)
float64 = double = dtype.float64
bfloat16 = dtype.bfloat16
int32 = int = dtype.int32  # noqa: A001 (torch.int)
int64 = long = dtype.int64
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
dtype.is_floating_point = property(lambda self: self.name in _tensor._FLOATING)
dtype.itemsize = property(lambda self: {"float32": 4, "float64": 8, "bfloat16": 2, "int32": 4,
                                        "int64": 8, "bool": 1}[self.name])


from ringgrad import autograd, nn, optim, distributed, utils  # noqa: E402 (they import the names above)
from ringgrad import linalg  # noqa: E402

__all__ = ["Tensor", "dtype", "tensor", "from_numpy", "from_dlpack", "save", "load", "zeros",
           "ones", "full", "rand", "randn", "arange", "no_grad", "manual_seed", "set_num_threads",
           "get_num_threads", "is_grad_enabled", "set_grad_enabled", "matmul", "float32",
           "float64", "bfloat16", "int32", "int64", "bool", "autograd", "nn", "optim",
           "distributed", "utils", "amp", "autocast", "backends", "compile", "cuda",
           "set_float32_matmul_precision", "get_float32_matmul_precision", "gather",
           "take_along_dim", "scatter", "scatter_add", "index_select", "index_add", "index_put",
           "cumsum", "sort", "argsort", "topk", "max", "min", "Generator", "default_generator", "seed",
           "initial_seed", "get_rng_state", "set_rng_state", "rand_like", "randn_like", "randint",
           "randint_like", "randperm", "normal", "bernoulli", "multinomial"] + _TABLE_OPS + _FUNCTIONS
__all__ += ["var", "std", "var_mean", "std_mean", "norm", "tril", "triu", "outer",
            "repeat_interleave", "einsum", "linalg"]
