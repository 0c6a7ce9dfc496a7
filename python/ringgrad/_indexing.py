"""Indexing as PyTorch's. Basic indexing (ints, slices, None, ...) gives views (select,
slice, unsqueeze) that share the tensor's memory and carry gradients. Advanced indexing
follows NumPy: integer tensors, lists and boolean masks (a mask of k dims stands for the
flat positions of its True elements over those k dims), except that an int always selects
(a basic index) as PyTorch's: t[1, :, [0, 2]] is t[1][:, [0, 2]], [5, 2] for t [4, 5, 3]. Reads gather along a dim
(index_select) with autograd; several advanced indices broadcast together, their result dims
placed where the first one was when they are adjacent, else first. Integer indices are
range-checked, and masks turned into positions, on the host (on a GPU: a synchronization, as
PyTorch's nonzero). t[key] = value writes
into the basic view, or through index_put_along for advanced keys, without autograd (as
the other in-place writes of ringgrad)."""
import numpy as np

from ringgrad import _C
from ringgrad._creation import tensor as _tensor


def _as_index_tensor(k, device):
    """A list, NumPy array or tensor index as a tensor on `device` (int64 or bool)."""
    if isinstance(k, _C.Tensor):
        t = k
    else:
        array = np.asarray(k)
        if array.size == 0:  # [] indexes nothing, as NumPy's
            array = array.astype(np.int64)
        if array.dtype.kind not in "iub":
            raise IndexError("tensors used as indices must be long, int or bool tensors, "
                             f"got {array.dtype}")
        t = _tensor(array.astype(np.bool_ if array.dtype.kind == "b" else np.int64))
    if t.dtype not in (_C.dtype.int64, _C.dtype.int32, _C.dtype.bool):
        raise IndexError("tensors used as indices must be long, int or bool tensors, "
                         f"got {t.dtype}")
    return t if t.device == device else t.to(device)


def _is_advanced(k):
    return isinstance(k, (list, np.ndarray, _C.Tensor))


def _expand(key, ndim):
    """The key as a list of int / slice / None / index tensor, the Ellipsis spelled out."""
    key = list(key) if isinstance(key, tuple) else [key]
    if sum(k is Ellipsis for k in key) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    def dims_of(k):
        if k is None or k is Ellipsis:
            return 0
        if isinstance(k, _C.Tensor) and k.dtype == _C.dtype.bool:
            return k.dim()
        if not isinstance(k, _C.Tensor) and _is_advanced(k) and np.asarray(k).dtype.kind == "b":
            return np.asarray(k).ndim
        return 1
    specified = sum(dims_of(k) for k in key)
    if specified > ndim:
        raise IndexError(f"too many indices for tensor of dimension {ndim}")
    out = []
    for k in key:
        out.extend([slice(None)] * (ndim - specified) if k is Ellipsis else [k])
    return out


def _basic(self, key):
    """The view of self for the basic parts of key, and [(dim in the view, index tensor)]
    for its advanced parts (left as full dims in the view)."""
    out, dim, source_dim, advanced = self, 0, 0, []  # source_dim: the same dim in self
    for k in _expand(key, self.dim()):  # ints select first, even beside advanced indices
        if k is None:
            out = out.unsqueeze(dim)
            dim += 1
        elif _is_advanced(k):
            t = _as_index_tensor(k, self.device)
            advanced.append((dim, t))
            used = t.dim() if t.dtype == _C.dtype.bool else 1
            dim, source_dim = dim + used, source_dim + used
        elif isinstance(k, bool) or not isinstance(k, (int, slice)) and not hasattr(k, "__index__"):
            raise TypeError(f"index of type {type(k).__name__} is not supported: use ints, "
                            "slices, None, ..., integer or boolean tensors and lists")
        elif isinstance(k, slice):
            start, stop, step = k.indices(out.shape[dim])
            if step <= 0:
                raise ValueError("step must be greater than zero")
            out = out.slice(dim, start, max(stop, start), step)
            dim, source_dim = dim + 1, source_dim + 1
        else:
            size, index = out.shape[dim], k.__index__()
            if not -size <= index < size:
                raise IndexError(f"index {index} is out of bounds for dimension {source_dim} "
                                 f"with size {size}")
            out = out.select(dim, index + size if index < 0 else index)
            source_dim += 1
    return out, advanced


def _merge_dims(t, start, count):
    """t with dims [start, start + count) merged into one (a view where the layout allows)."""
    shape = list(t.shape)
    merged = shape[:start] + [int(np.prod(shape[start:start + count], dtype=np.int64))] + \
        shape[start + count:]
    return t.reshape(merged)


def _checked(index, size, dim):
    """An int index with negatives wrapped; IndexError naming the first out of range."""
    if index.numel() == 0:
        return index.to(_C.dtype.int64)
    lo, hi = int(index.min().item()), int(index.max().item())
    if lo < -size or hi >= size:
        bad = lo if lo < -size else hi
        raise IndexError(f"index {bad} is out of bounds for dimension {dim} with size {size}")
    index = index.to(_C.dtype.int64)
    if lo >= 0:
        return index
    zero, n = (_tensor(v, device=index.device) for v in (0, size))
    return _C.where(_C.lt(index, zero), _C.add(index, n), index)


def _as_ints(out, advanced):
    """Masks become flat indices over their dims (merged into one dim of `out`)."""
    ints, shift = [], 0
    for dim, t in advanced:
        dim -= shift
        if t.dtype != _C.dtype.bool:
            ints.append((dim, t))
            continue
        k = t.dim()
        if list(t.shape) != list(out.shape[dim:dim + k]):
            raise IndexError(f"the shape of the mask {list(t.shape)} does not match the shape "
                             f"{list(out.shape[dim:dim + k])} of the indexed dims")
        flat = np.flatnonzero(t.cpu().numpy())
        out = _merge_dims(out, dim, k)
        ints.append((dim, _tensor(flat.astype(np.int64), device=out.device)))
        shift += k - 1
    return out, ints


class _Advanced:
    """The advanced part of a key over the basic view `view`: `merged` is view with the
    masks' dims merged (`masked` the shape), the indexed dims then moved first when they are
    not adjacent (`order`), and merged into one dim at `start`; `flat` the int64 index into
    that dim, of the indices' broadcast `shape`."""

    def __init__(self, view, advanced):
        masked, ints = _as_ints(view, advanced)
        dims = [d for d, _ in ints]
        adjacent = dims == list(range(dims[0], dims[0] + len(dims)))
        self.view_shape, self.masked_shape = list(view.shape), list(masked.shape)
        self.order = None
        if not adjacent:  # NumPy: the indexed dims go first
            self.order = dims + [d for d in range(masked.dim()) if d not in dims]
            masked = masked.permute(*self.order)
        self.start = dims[0] if adjacent else 0
        self.permuted_shape = list(masked.shape)
        sizes = self.permuted_shape[self.start:self.start + len(dims)]
        self.shape = list(np.broadcast_shapes(*[tuple(t.shape) for _, t in ints]))
        flat = None
        for size, (dim, t) in zip(sizes, ints):
            t = _checked(t, size, dim)
            t = t.expand(*self.shape) if list(t.shape) != self.shape else t
            flat = t if flat is None else flat * size + t
        self.flat = flat.reshape(-1)
        self.merged = _merge_dims(masked, self.start, len(dims))

    def result_shape(self):
        m = list(self.merged.shape)
        return m[:self.start] + self.shape + m[self.start + 1:]

    def read(self):
        return _C.index_select(self.merged, self.start, self.flat).reshape(self.result_shape())

    def written(self, values, accumulate=False):
        """The basic view's new contents with values written (added) at the index."""
        m = list(self.merged.shape)
        values = values.expand(*self.result_shape()) if list(values.shape) != \
            self.result_shape() else values
        values = values.reshape(m[:self.start] + [self.flat.numel()] + m[self.start + 1:])
        out = _C.index_put_along(self.merged, self.start, self.flat, values, accumulate)
        out = out.reshape(self.permuted_shape)
        if self.order is not None:
            out = out.permute(*[self.order.index(d) for d in range(len(self.order))])
        return out.reshape(self.view_shape)


def __getitem__(self, key):
    view, advanced = _basic(self, key)
    return _Advanced(view, advanced).read() if advanced else view


def _as_tensor_like(value, like):
    if isinstance(value, _C.Tensor):
        return value if value.dtype == like.dtype else value.to(like.dtype)
    return _tensor(float(value), dtype=like.dtype, device=like.device)


def __setitem__(self, key, value):
    view, advanced = _basic(self, key)
    with_grad = _C.is_grad_enabled()
    _C.set_grad_enabled(False)
    try:
        if not advanced:
            if isinstance(value, _C.Tensor):
                view.copy_(value.expand(*view.shape) if list(value.shape) != list(view.shape)
                           else value)
            else:
                view.fill_(float(value))
            return
        mask = advanced[0][1]
        if (len(advanced) == 1 and mask.dtype == _C.dtype.bool and not isinstance(value, _C.Tensor)
                and list(mask.shape) == list(view.shape)):  # x[mask] = v, without a host sync
            view.copy_(_C.where(mask, _as_tensor_like(value, view), view))
            return
        view.copy_(_Advanced(view, advanced).written(_as_tensor_like(value, view)))
    finally:
        _C.set_grad_enabled(with_grad)


def index_put(input, indices, values, accumulate=False):
    """torch.index_put: a copy of input with input[indices] = values (accumulate: added, a
    repeated index adding each time), differentiable in input and values."""
    view, advanced = _basic(input, tuple(indices))
    if not advanced or view.dim() != input.dim() or len(advanced) != len(tuple(indices)):
        raise TypeError("index_put: indices must be a tuple of integer or boolean tensors")
    return _Advanced(view, advanced).written(_as_tensor_like(values, view), accumulate)


def index_put_(self, indices, values, accumulate=False):
    """Tensor.index_put_: index_put written into self, without autograd."""
    with_grad = _C.is_grad_enabled()
    _C.set_grad_enabled(False)
    try:
        self.copy_(index_put(self, indices, values, accumulate))
    finally:
        _C.set_grad_enabled(with_grad)
    return self


_C.Tensor.__getitem__ = __getitem__
_C.Tensor.__setitem__ = __setitem__
_C.Tensor.index_put = index_put
_C.Tensor.index_put_ = index_put_
