"""Layers with torch.nn's names, arguments and initialization: Linear, GELU, ReLU, Sequential."""
import math

from ringgrad import _C
from ringgrad.nn import functional as F
from ringgrad.nn import init
from ringgrad.nn.module import Module, Parameter


def _drawn(shape, dtype, fill):
    """A new tensor of shape filled in place by fill (an nn.init function): torch's draws."""
    tensor = _C.zeros(list(shape), dtype)
    fill(tensor)
    return tensor


class Linear(Module):
    """y = x @ weight.T + bias; weight [out, in] and bias [out] drawn from U(-k, k), k = 1/sqrt(in)
    (torch.nn.Linear's default initialization, with torch's numbers after manual_seed)."""

    def __init__(self, in_features, out_features, bias=True, dtype=_C.dtype.float32):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        # torch's reset_parameters: the weight by kaiming_uniform_(a=sqrt(5)), then the bias
        # from U(-1/sqrt(in), 1/sqrt(in)), drawn in that order.
        self.weight = Parameter(_drawn((out_features, in_features), dtype,
                                       lambda w: init.kaiming_uniform_(w, a=math.sqrt(5))))
        bound = 1 / math.sqrt(in_features) if in_features > 0 else 0
        self.bias = Parameter(_drawn((out_features,), dtype,
                                     lambda b: init.uniform_(b, -bound, bound))) if bias else None

    def forward(self, x):
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class GELU(Module):
    """gelu(x); approximate='none' is exact (x * Phi(x)), 'tanh' the GPT-2 approximation."""

    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, x):
        return F.gelu(x, approximate=self.approximate)

    def extra_repr(self):
        return f"approximate='{self.approximate}'"


class ReLU(Module):
    def __init__(self, inplace=False):
        super().__init__()

    def forward(self, x):
        return F.relu(x)


class Sequential(Module):
    """Calls its modules in order; they are registered as submodules "0", "1", ..."""

    def __init__(self, *modules):
        super().__init__()
        if len(modules) == 1 and hasattr(modules[0], "items"):  # Sequential(OrderedDict(...))
            for name, module in modules[0].items():
                setattr(self, name, module)
            return
        for i, module in enumerate(modules):
            setattr(self, str(i), module)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return Sequential(*list(self._modules.values())[index])
        return list(self._modules.values())[index]

    def __iter__(self):
        return iter(self._modules.values())

    def append(self, module):
        setattr(self, str(len(self._modules)), module)
        return self

    def __len__(self):
        return len(self._modules)

    def forward(self, x):
        for module in self.children():
            x = module(x)
        return x


class Embedding(Module):
    """weight[input]: weight [num_embeddings, embedding_dim] drawn from N(0, 1)
    (torch.nn.Embedding's default initialization)."""

    def __init__(self, num_embeddings, embedding_dim, dtype=_C.dtype.float32):
        super().__init__()
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.weight = Parameter(_drawn((num_embeddings, embedding_dim), dtype, init.normal_))

    def forward(self, input):
        return F.embedding(input, self.weight)

    def extra_repr(self):
        return f"{self.num_embeddings}, {self.embedding_dim}"


class LayerNorm(Module):
    """Normalizes the last dims to mean 0 and variance 1, then weight * x + bias (ones and
    zeros at first, torch.nn.LayerNorm's)."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True,
                 device=None, dtype=None):
        super().__init__()
        shape = [normalized_shape] if isinstance(normalized_shape, int) else list(normalized_shape)
        dtype = dtype or _C.dtype.float32
        self.normalized_shape = shape
        self.eps = eps
        self.weight = Parameter(_C.ones(shape, dtype)) if elementwise_affine else None
        self.bias = Parameter(_C.zeros(shape, dtype)) if elementwise_affine and bias else None

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return f"{tuple(self.normalized_shape)}, eps={self.eps}"


class Dropout(Module):
    """Zeroes each element with probability p in training (scaling the others by 1/(1-p));
    the identity in eval()."""

    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if not 0 <= p <= 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p

    def forward(self, input):
        return F.dropout(input, self.p, self.training)

    def extra_repr(self):
        return f"p={self.p}"


class ModuleList(Module):
    """A list of modules, registered as submodules "0", "1", ... (torch.nn.ModuleList)."""

    def __init__(self, modules=()):
        super().__init__()
        for module in modules:
            self.append(module)

    def append(self, module):
        setattr(self, str(len(self._modules)), module)
        return self

    def extend(self, modules):
        for module in modules:
            self.append(module)
        return self

    def __getitem__(self, index):
        return list(self._modules.values())[index]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())
