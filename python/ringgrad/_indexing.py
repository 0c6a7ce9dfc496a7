"""Indexing as PyTorch's basic indexing: t[i], t[a:b:s], t[..., None] are views (select,
slice, unsqueeze) that share the tensor's memory and carry gradients; t[key] = value copies
into such a view. Integer and boolean tensor indices (advanced indexing) are not supported
yet: they raise TypeError saying so."""
from ringgrad import _C


def _expand(key, ndim):
    """The key as a list of int / slice / None, the Ellipsis spelled out."""
    key = list(key) if isinstance(key, tuple) else [key]
    if sum(k is Ellipsis for k in key) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    specified = sum(k is not None and k is not Ellipsis for k in key)
    if specified > ndim:
        raise IndexError(f"too many indices for tensor of dimension {ndim}")
    out = []
    for k in key:
        out.extend([slice(None)] * (ndim - specified) if k is Ellipsis else [k])
    return out


def __getitem__(self, key):
    out, dim, source_dim = self, 0, 0  # dim in `out`; source_dim: the same dim in self
    for k in _expand(key, self.dim()):
        if k is None:
            out = out.unsqueeze(dim)
            dim += 1
        elif isinstance(k, bool) or not isinstance(k, (int, slice)) and not hasattr(k, "__index__"):
            raise TypeError(f"index of type {type(k).__name__} is not supported: use ints, "
                            "slices, None and ... (tensor indices are not supported yet)")
        elif isinstance(k, slice):
            start, stop, step = k.indices(out.shape[dim])
            if step <= 0:
                raise ValueError("step must be greater than zero")
            out = out.slice(dim, start, max(stop, start), step)
            dim += 1
            source_dim += 1
        else:
            size, index = out.shape[dim], k.__index__()
            if not -size <= index < size:
                raise IndexError(f"index {index} is out of bounds for dimension {source_dim} "
                                 f"with size {size}")
            out = out.select(dim, index + size if index < 0 else index)
            source_dim += 1
    return out


def __setitem__(self, key, value):
    view = __getitem__(self, key)
    with_grad = _C.is_grad_enabled()
    _C.set_grad_enabled(False)
    try:
        if isinstance(value, _C.Tensor):
            view.copy_(value.expand(list(view.shape)) if list(value.shape) != list(view.shape)
                       else value)
        else:
            view.fill_(float(value))
    finally:
        _C.set_grad_enabled(with_grad)


_C.Tensor.__getitem__ = __getitem__
_C.Tensor.__setitem__ = __setitem__
