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
        object.__setattr__(self, "training", True)

    def __setattr__(self, name, value):
        if "_parameters" not in self.__dict__:
            raise AttributeError("Module.__init__() must run before attributes are assigned")
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
        object.__delattr__(self, name)

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
            yield prefix + name, p
        for name, module in self._modules.items():
            yield from module._all_parameters(prefix + name + ".")

    def parameters(self):
        for _, p in self.named_parameters():
            yield p

    def state_dict(self):
        """{dotted name: tensor} of every parameter, in parameters() order: the tensors
        themselves, detached (they share the parameters' memory, as PyTorch's do)."""
        return {name: p.detach() for name, p in self.named_parameters(remove_duplicate=False)}

    def load_state_dict(self, state_dict, strict=True):
        """Copies each entry into the parameter of that name (same shape; the dtype is
        converted). strict: every parameter must be given and no other name. Returns the
        (missing, unexpected) names."""
        own = dict(self.named_parameters(remove_duplicate=False))
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
        for p in self.parameters():
            target = dtype if dtype is not None and p.dtype.name.startswith(("float", "bfloat")) \
                else p.dtype
            where = device if device is not None else p.device
            _C.convert_in_place(p, where, target)
            if p.grad is not None:
                _C.convert_in_place(p.grad, where, target)
        return self

    def train(self, mode=True):
        object.__setattr__(self, "training", mode)
        for module in self._modules.values():
            module.train(mode)
        return self

    def eval(self):
        return self.train(False)

    def __repr__(self):
        lines = [f"  ({name}): " + repr(m).replace("\n", "\n  ") for name, m in self._modules.items()]
        inner = self.extra_repr()
        if not lines:
            return f"{type(self).__name__}({inner})"
        return f"{type(self).__name__}(\n" + "\n".join(lines) + "\n)"

    def extra_repr(self):
        return ""
