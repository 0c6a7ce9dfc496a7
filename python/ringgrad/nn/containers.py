"""Containers with torch.nn's names: ModuleDict and ParameterList (Sequential and ModuleList
are in layers.py)."""
from ringgrad.nn.module import Module, Parameter


class ModuleDict(Module):
    """A dict of modules, registered as submodules under their keys."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def update(self, modules):
        for name, module in (modules.items() if hasattr(modules, "items") else modules):
            setattr(self, name, module)

    def __getitem__(self, key):
        return self._modules[key]

    def __setitem__(self, key, module):
        setattr(self, key, module)

    def __delitem__(self, key):
        delattr(self, key)

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, key):
        return key in self._modules

    def keys(self):
        return self._modules.keys()

    def values(self):
        return self._modules.values()

    def items(self):
        return self._modules.items()


class ParameterList(Module):
    """A list of parameters, registered as "0", "1", ... (tensors become Parameters)."""

    def __init__(self, values=None):
        super().__init__()
        for value in values or ():
            self.append(value)

    def append(self, value):
        if not isinstance(value, Parameter):
            value = Parameter(value)
        setattr(self, str(len(self._parameters)), value)
        return self

    def extend(self, values):
        for value in values:
            self.append(value)
        return self

    def __getitem__(self, index):
        return list(self._parameters.values())[index]

    def __len__(self):
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters.values())
