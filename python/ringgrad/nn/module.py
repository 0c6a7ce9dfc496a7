"""Module and Parameter, as torch.nn has them.

A Parameter is a Tensor (the same C++ handle) that requires grad and that a Module
registers when it is assigned as an attribute; a Module assigned as an attribute becomes
a submodule. parameters() walks both in assignment order, so optimizers and tests see
the same order every time.
"""
from ringgrad import _C


class Parameter(_C.Tensor):
    """A tensor that is a module's weight: a leaf sharing data's memory, requiring grad."""

    def __init__(self, data, requires_grad=True):
        super().__init__(data)
        self.requires_grad_(requires_grad)

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()


class Module:
    """Base class of layers and models: registers parameters and submodules on assignment."""

    def __init__(self):
        object.__setattr__(self, "_parameters", {})
        object.__setattr__(self, "_modules", {})
        object.__setattr__(self, "_buffers", {})
        object.__setattr__(self, "_non_persistent", set())
        object.__setattr__(self, "training", True)

    def __setattr__(self, name, value):
        if "_parameters" not in self.__dict__:
            raise AttributeError("Module.__init__() must run before attributes are assigned")
        if name in self.__dict__.get("_buffers", {}) and (value is None or
                                                         isinstance(value, _C.Tensor)):
            self._buffers[name] = value
            object.__setattr__(self, name, value)
            return
        self._parameters.pop(name, None)
        self._modules.pop(name, None)
        if isinstance(value, Parameter):
            self._parameters[name] = value
        elif isinstance(value, Module):
            self._modules[name] = value
        object.__setattr__(self, name, value)

    def __delattr__(self, name):
        self._parameters.pop(name, None)
        self._modules.pop(name, None)
        self.__dict__.get("_buffers", {}).pop(name, None)
        object.__delattr__(self, name)

    def register_buffer(self, name, tensor, persistent=True):
        """A tensor that is part of the module's state but not a parameter (a running mean):
        in state_dict() (unless persistent=False), moved by to()."""
        if tensor is not None and not isinstance(tensor, _C.Tensor):
            raise TypeError(f"register_buffer: '{name}' must be a tensor or None, got "
                            f"{type(tensor).__name__}")
        self._parameters.pop(name, None)
        self._modules.pop(name, None)
        self._buffers[name] = tensor
        if not persistent:
            self._non_persistent.add(name)
        object.__setattr__(self, name, tensor)

    def register_parameter(self, name, param):
        setattr(self, name, param)
        if param is None:
            self._parameters[name] = None

    def add_module(self, name, module):
        setattr(self, name, module)

    register_module = add_module

    def get_submodule(self, target):
        module = self
        for part in target.split(".") if target else []:
            module = module._modules[part]
        return module

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} has no forward()")

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    def named_parameters(self, prefix="", remove_duplicate=True):
        """(dotted name, parameter) pairs, this module's first, then each submodule's; a
        parameter shared by two modules (tied weights) once, under its first name, unless
        remove_duplicate=False (as PyTorch's)."""
        seen = set()
        for name, p in self._all_parameters(prefix):
            if remove_duplicate and id(p) in seen:
                continue
            seen.add(id(p))
            yield name, p

    def _all_parameters(self, prefix):
        for name, p in self._parameters.items():
            if p is not None:
                yield prefix + name, p
        for name, module in self._modules.items():
            yield from module._all_parameters(prefix + name + ".")

    def parameters(self, recurse=True):
        for _, p in self.named_parameters():
            yield p

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        for module_prefix, module in self.named_modules(prefix=prefix):
            for name, b in module.__dict__.get("_buffers", {}).items():
                if b is not None:
                    yield (module_prefix + "." if module_prefix else "") + name, b

    def buffers(self, recurse=True):
        for _, b in self.named_buffers():
            yield b

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        """(dotted name, module) of this module ('') and every submodule, depth first."""
        memo = set() if memo is None else memo
        if id(self) in memo and remove_duplicate:
            return
        memo.add(id(self))
        yield prefix, self
        for name, module in self._modules.items():
            if module is not None:
                yield from module.named_modules(memo, prefix + "." + name if prefix else name,
                                                remove_duplicate)

    def modules(self):
        for _, module in self.named_modules():
            yield module

    def named_children(self):
        return iter(self._modules.items())

    def apply(self, fn):
        """fn(module) on every submodule, then on this one (as PyTorch's init code uses it)."""
        for module in self._modules.values():
            module.apply(fn)
        fn(self)
        return self

    def requires_grad_(self, requires_grad=True):
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def state_dict(self):
        """{dotted name: tensor} of every parameter, in parameters() order, then the persistent
        buffers: the tensors themselves, detached (they share the parameters' memory, as
        PyTorch's do)."""
        out = {name: p.detach() for name, p in self.named_parameters(remove_duplicate=False)}
        for prefix, module in self.named_modules():
            for name, b in module.__dict__.get("_buffers", {}).items():
                if b is not None and name not in module._non_persistent:
                    out[(prefix + "." if prefix else "") + name] = b.detach()
        return out

    def load_state_dict(self, state_dict, strict=True):
        """Copies each entry into the parameter of that name (same shape; the dtype is
        converted). strict: every parameter must be given and no other name. Returns the
        (missing, unexpected) names."""
        own = {name: p.detach() for name, p in self.state_dict().items()}
        missing = [name for name in own if name not in state_dict]
        unexpected = [name for name in state_dict if name not in own]
        if strict and (missing or unexpected):
            raise RuntimeError(f"load_state_dict: missing keys {missing}, unexpected keys "
                               f"{unexpected}")
        for name, value in state_dict.items():
            if name not in own:
                continue
            target = own[name]
            if list(value.shape) != list(target.shape):
                raise RuntimeError(f"load_state_dict: '{name}' has shape {list(value.shape)}, "
                                   f"the parameter {list(target.shape)}")
            with_grad = _C.is_grad_enabled()
            _C.set_grad_enabled(False)
            try:
                target.detach().copy_(value.to(target.dtype))
            finally:
                _C.set_grad_enabled(with_grad)
        return missing, unexpected

    def children(self):
        return iter(self._modules.values())

    def zero_grad(self, set_to_none=True):
        for p in self.parameters():
            if set_to_none:
                p.grad = None
            elif p.grad is not None:
                p.grad = _C.zeros(list(p.shape), p.dtype)

    def to(self, device=None, dtype=None):
        """Moves every parameter (and its gradient) to `device` ("cpu", "sim", "cuda") and
        floating ones to `dtype`, in place: optimizers and references keep working. Returns
        self. module.to(rg.float64) converts the dtype only."""
        if isinstance(device, _C.dtype):
            device, dtype = None, device
        if isinstance(device, _C.Tensor):
            device, dtype = device.device, device.dtype
        if device is not None and str(device).startswith("cuda") and not _C.cuda_backend_built():
            raise RuntimeError(f"to: device '{device}' is not available: this ringgrad was "
                               "built without CUDA")
        for p in list(self.parameters()) + list(self.buffers()):
            target = dtype if dtype is not None and p.dtype.name.startswith(("float", "bfloat")) \
                else p.dtype
            where = str(device if device is not None else p.device)
            _C.convert_in_place(p, where, target)
            if p.grad is not None:
                _C.convert_in_place(p.grad, where, target)
        return self

    def double(self):
        return self.to(_C.dtype.float64)

    def float(self):
        return self.to(_C.dtype.float32)

    def bfloat16(self):
        return self.to(_C.dtype.bfloat16)

    def half(self):
        raise TypeError("half: ringgrad has no float16 dtype; use .bfloat16() or .float()")

    def cpu(self):
        return self.to("cpu")

    def cuda(self, device=None):
        return self.to("cuda" if device is None else str(device))

    def train(self, mode=True):
        object.__setattr__(self, "training", mode)
        for module in self._modules.values():
            module.train(mode)
        return self

    def eval(self):
        return self.train(False)

    def __repr__(self):
        """As PyTorch prints a module: its extra_repr() then each submodule, indented."""
        lines = [f"  ({name}): " + repr(m).replace("\n", "\n  ") for name, m in self._modules.items()]
        inner = self.extra_repr()
        if not lines:
            return f"{type(self).__name__}({inner})"
        head = ["  " + line for line in inner.split("\n")] if inner else []
        return f"{type(self).__name__}(\n" + "\n".join(head + lines) + "\n)"

    def extra_repr(self):
        return ""
