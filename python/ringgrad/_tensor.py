"""Tensor methods and properties with PyTorch's names, written in Python over the C++ ones:
dtype conversions (.float(), .long(), .to(...)), .device as a device object, .grad_fn, .data,
softmax/clamp/masked_fill/chunk/split/tolist and the new_* factories. The op tables' methods
(t.exp(), t.sum(dim), t.maximum(other) ...) are C++ (python/src/bind_table.cpp)."""
import builtins

from ringgrad import _C

Tensor = _C.Tensor
_FLOATING = ("float32", "float64", "bfloat16")


class device:
    """torch.device: device("cpu"), device("cuda", 0), device("cuda:1"); compares equal to its
    string ("cpu" == t.device)."""

    def __init__(self, type, index=None):
        if isinstance(type, device):
            type, index = type.type, type.index
        type = str(type)
        if ":" in type:
            type, index = type.split(":", 1)[0], int(type.split(":", 1)[1])
        self.type = type
        self.index = index

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self):
        return f"device(type='{self.type}'" + ("" if self.index is None else
                                                f", index={self.index}") + ")"

    def __eq__(self, other):
        if isinstance(other, (str, device)):
            return str(self) == str(device(other))
        return NotImplemented

    def __hash__(self):
        return hash(str(self))


# PyTorch's node names where they are not the op's name in CamelCase + "Backward0".
_PYTORCH_NODE_NAMES = {"cross_entropy": "NllLossBackward0", "matmul": "MmBackward0",
                       "linear": "AddmmBackward0", "to": "ToCopyBackward0",
                       "log_softmax": "LogSoftmaxBackward0", "mse_loss": "MseLossBackward0"}


class _GradFn:
    """The node that made a tensor (tensor.grad_fn), by PyTorch's name for it (MulBackward0)."""

    def __init__(self, name):
        self._name = _PYTORCH_NODE_NAMES.get(name) or \
            "".join(part.capitalize() for part in name.split("_")) + "Backward0"

    def name(self):
        return self._name

    def __repr__(self):
        return f"<{self._name} object>"


def _is_dtype(value):
    return isinstance(value, _C.dtype)


def _to(self, *args, dtype=None, device=None, non_blocking=False, copy=False):
    """t.to(dtype), t.to(device), t.to(device, dtype), t.to(other), keyword forms too."""
    for arg in args:
        if isinstance(arg, Tensor):
            device, dtype = arg.device, arg.dtype
        elif _is_dtype(arg):
            dtype = arg
        elif isinstance(arg, (str, globals()["device"])):
            device = arg
        else:
            raise TypeError(f"to: expected a dtype, a device or a tensor, got {type(arg).__name__}")
    out = self
    if device is not None and str(device) != str(self.device):
        _check_device(str(device))
        out = _C.Tensor._to_device(out, str(device), non_blocking)
    if dtype is not None and dtype != out.dtype:
        out = _C.Tensor._to_dtype(out, dtype)
    return out.clone() if copy and out is self else out


def _check_device(name):
    if name.startswith("cuda") and not _C.cuda_backend_built():
        raise RuntimeError(f"to: device '{name}' is not available: this ringgrad was built "
                           "without CUDA (use 'cpu', or 'sim' where built)")
    if name.startswith("cuda") and _C.device_count("cuda") == 0:
        raise RuntimeError(f"to: device '{name}' is not available: this ringgrad has CUDA but "
                           "finds no GPU (ringgrad.cuda.is_available() is False)")


def _cuda(self, device=None, non_blocking=False):
    return _to(self, "cuda" if device is None else str(device), non_blocking=non_blocking)


def _converter(dtype_name):
    def convert(self, memory_format=None):
        return _to(self, getattr(_C.dtype, dtype_name))
    convert.__name__ = dtype_name
    return convert


def _half(self, memory_format=None):
    raise TypeError("half: ringgrad has no float16 dtype; use .bfloat16() or .float()")


def _clamp(self, min=None, max=None):
    if min is None and max is None:
        raise ValueError("clamp: at least one of min and max must be given")
    low = float("-inf") if min is None else float(min)
    high = float("inf") if max is None else float(max)
    return _C.clamp(self, low, high)


def _clamp_(self, min=None, max=None):
    return self.copy_(_clamp(self, min, max))


def _masked_fill(self, mask, value):
    if isinstance(value, Tensor):
        value = value.item()
    return _C.masked_fill(self, mask, float(value))


def _split(self, split_size_or_sections, dim=0):
    size = self.shape[dim]
    if isinstance(split_size_or_sections, int):
        if split_size_or_sections <= 0:
            raise ValueError(f"split: split_size must be positive, got {split_size_or_sections}")
        sizes = [builtins.min(split_size_or_sections, size - start)
                 for start in range(0, size, split_size_or_sections)] or [0]
    else:
        sizes = list(split_size_or_sections)
        if sum(sizes) != size:
            raise ValueError(f"split: sizes {sizes} do not add up to dimension {dim}'s size "
                             f"{size}")
    out, start = [], 0
    for length in sizes:
        out.append(self.narrow(dim, start, length))
        start += length
    return tuple(out)


def _chunk(self, chunks, dim=0):
    if chunks <= 0:
        raise ValueError(f"chunk: chunks must be positive, got {chunks}")
    size = self.shape[dim]
    return _split(self, builtins.max(1, -(-size // chunks)), dim)


def _unbind(self, dim=0):
    return tuple(self.select(dim, i) for i in range(self.shape[dim]))


def _tolist(self):
    if self.dtype == _C.dtype.bfloat16:
        return self.float().tolist()
    return self.detach().cpu().contiguous().numpy().tolist()


def _new(self, make, size, fill=None, dtype=None, device=None, requires_grad=False):
    size = list(size[0]) if len(size) == 1 and not isinstance(size[0], int) else list(size)
    out = make(size, dtype or self.dtype) if fill is None else _C.full(size, fill,
                                                                        dtype or self.dtype)
    return _to(out, device=device or self.device).requires_grad_(requires_grad)


def _new_tensor(self, data, dtype=None, device=None, requires_grad=False):
    from ringgrad._creation import tensor
    return tensor(data, dtype=dtype or self.dtype, device=device or self.device,
                  requires_grad=requires_grad)


def _data_get(self):
    return self.detach()


def _data_set(self, value):
    if not isinstance(value, Tensor):
        raise TypeError(f"data: expected a tensor, got {type(value).__name__}")
    self._set_data(value)


def _grad_fn(self):
    name = self._grad_fn_name
    return None if name is None else _GradFn(name)


def _element_size(self):
    return {"float32": 4, "float64": 8, "bfloat16": 2, "int32": 4, "int64": 8,
            "bool": 1}[self.dtype.name]


def _methods():
    float_dim = {"softmax": _C.softmax, "log_softmax": _C.log_softmax}
    methods = {
        "to": _to, "cuda": _cuda, "half": _half,
        "float": _converter("float32"), "double": _converter("float64"),
        "bfloat16": _converter("bfloat16"), "long": _converter("int64"),
        "int": _converter("int32"), "bool": _converter("bool"),
        "type_as": lambda self, other: _to(self, other.dtype), "type": _type,
        "matmul": _matmul_of("matmul", None), "mm": _matmul_of("mm", (2, 2)),
        "bmm": _matmul_of("bmm", (3, 3)), "dot": _matmul_of("dot", (1, 1)),
        "mv": _matmul_of("mv", (2, 1)),
        "clamp": _clamp, "clip": _clamp, "clamp_": _clamp_, "clip_": _clamp_,
        "masked_fill": _masked_fill,
        "masked_fill_": lambda self, mask, value: self.copy_(_masked_fill(self, mask, value)),
        "where": lambda self, condition, other: _where(condition, self, other),
        "split": _split, "chunk": _chunk, "unbind": _unbind, "tolist": _tolist,
        "expand_as": lambda self, other: self.expand(list(other.shape)),
        "view_as": lambda self, other: self.view(list(other.shape)),
        "reshape_as": lambda self, other: self.reshape(list(other.shape)),
        "is_floating_point": lambda self: self.dtype.name in _FLOATING,
        "element_size": _element_size,
        "nelement": lambda self: self.numel(),
        "new_zeros": lambda self, *size, **kw: _new(self, _C.zeros, size, **kw),
        "new_ones": lambda self, *size, **kw: _new(self, _C.ones, size, **kw),
        "new_empty": lambda self, *size, **kw: _new(self, _C.zeros, size, **kw),
        "new_full": lambda self, size, fill_value, **kw: _new(self, None, (size,),
                                                               float(fill_value), **kw),
        "new_tensor": _new_tensor,
        "detach_": _detach_,
        "sub": lambda self, other, alpha=1: _C.sub(self, other * alpha if alpha != 1 else other),
        "add": lambda self, other, alpha=1: _C.add(self, other * alpha if alpha != 1 else other),
        "__hash__": lambda self: id(self),
        "__bool__": _bool, "__float__": lambda self: float(self.item()),
        "__int__": lambda self: int(self.item()), "__index__": _index,
        "__format__": _format, "__array__": _array,
    }
    for name, fn in float_dim.items():
        methods[name] = (lambda f: lambda self, dim, dtype=None: f(_to(self, dtype) if dtype
                                                                  else self, dim))(fn)
    return methods


_TYPE_NAMES = {"float32": "torch.FloatTensor", "float64": "torch.DoubleTensor",
               "bfloat16": "torch.BFloat16Tensor", "int32": "torch.IntTensor",
               "int64": "torch.LongTensor", "bool": "torch.BoolTensor"}


def _type(self, dtype=None, non_blocking=False):
    """t.type(): PyTorch's type name ('torch.FloatTensor'); t.type(dtype): t.to(dtype)."""
    if dtype is None:
        return _TYPE_NAMES[self.dtype.name]
    return _to(self, dtype)


def _matmul_of(name, ranks):
    def product(self, other):
        if ranks and (self.dim(), other.dim()) != ranks:
            raise ValueError(f"{name}: expected {ranks[0]}-D and {ranks[1]}-D tensors, got "
                             f"{self.dim()}-D and {other.dim()}-D")
        return _C.matmul(self, other)
    product.__name__ = name
    return product


def _where(condition, input, other):
    input, other = _as_tensor_like(input, other), _as_tensor_like(other, input)
    return _C.where(condition, input, other)


def _as_tensor_like(value, like):
    """value as a tensor: a Python number becomes a 0-d tensor of like's dtype (PyTorch's
    scalar rule: a float against an integer tensor is float32)."""
    if isinstance(value, Tensor):
        return value
    if not isinstance(like, Tensor):
        raise TypeError("where: expected at least one tensor among input and other")
    dtype = like.dtype
    if isinstance(value, float) and dtype.name not in _FLOATING:
        dtype = _C.dtype.float32
    return _C.full([], float(value), dtype)


def _format(self, spec):
    """f"{loss:.4f}" formats a 0-d tensor's value, as PyTorch's; others format their repr."""
    if self.dim() == 0:
        return self.item().__format__(spec)
    return format(repr(self), spec)


def _array(self, dtype=None, copy=None):
    """np.asarray(t): the values (a copy for tensors off the CPU or in bfloat16)."""
    out = self.detach()
    if out.dtype == _C.dtype.bfloat16:
        out = out.float()
    array = out.cpu().numpy()
    return array if dtype is None else array.astype(dtype)


def _detach_(self):
    if self.grad_fn is not None:
        raise NotImplementedError("detach_: detaching a non-leaf tensor in place is not "
                                  "supported: use t = t.detach()")
    return self.requires_grad_(False)


def _bool(self):
    if self.numel() != 1:
        raise RuntimeError(f"Boolean value of Tensor with {self.numel()} elements is ambiguous")
    return builtins.bool(self.item())


def _index(self):
    """An integer tensor of one element as a Python int (x[i:i + 8] with a tensor i)."""
    if self.numel() != 1 or self.dtype.name in _FLOATING:
        raise TypeError(f"__index__: only an integer tensor of one element can be an index; a "
                        f"{self.dtype.name} tensor of {self.numel()} elements is not supported")
    return int(self.item())


def install():
    """Adds the methods and properties to ringgrad.Tensor (once, at import)."""
    Tensor._to_dtype = Tensor.__dict__["to"]
    Tensor._to_device = Tensor.__dict__["to"]
    Tensor._device_name = Tensor.__dict__["device"]
    for name, fn in _methods().items():
        setattr(Tensor, name, fn)
    Tensor.device = property(lambda self: device(Tensor._device_name.__get__(self)))
    Tensor.is_cuda = property(lambda self: self.device.type == "cuda")
    Tensor.data = property(_data_get, _data_set)
    Tensor.grad_fn = property(_grad_fn)
    Tensor.itemsize = property(_element_size)
