"""ringgrad.linalg: torch.linalg's vector norms over the composite norm (ops/statistics.cpp).
Matrix norms other than Frobenius, and decompositions, are not implemented."""
from ringgrad import _C


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    """(sum |x|^ord)^(1/ord) over dim (None: all elements); ord inf / -inf: max / min |x|,
    0: the count of nonzeros. The gradient of a zero vector's 2-norm is 0, as PyTorch's."""
    if isinstance(ord, str):
        raise ValueError(f"linalg.vector_norm: ord must be a number, got '{ord}'")
    if dtype is not None:
        x = x.to(dtype)
    return _C.norm(x, float(ord), dim, keepdim)


def norm(x, ord=None, dim=None, keepdim=False, *, dtype=None):
    """torch.linalg.norm: a vector norm, or the Frobenius norm of a matrix (ord None or 'fro');
    other matrix norms (ord 2, 1, inf, 'nuc' over two dims) raise."""
    matrix = (dim is None and len(x.shape) == 2) or (dim is not None and not isinstance(dim, int)
                                                      and len(dim) == 2)
    if ord is None or (ord == "fro" and matrix):
        return vector_norm(x, 2, dim, keepdim, dtype=dtype)
    if matrix:
        raise ValueError(f"linalg.norm: the matrix norm ord={ord!r} is not supported "
                         "(only 'fro'); use linalg.vector_norm for vector norms")
    return vector_norm(x, ord, dim, keepdim, dtype=dtype)
