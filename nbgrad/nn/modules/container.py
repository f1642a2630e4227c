"""Modules that hold other modules: Sequential, ModuleList, ModuleDict."""

import collections
import operator

from nbgrad.nn.modules.module import Module, _addindent


def _index(index, length, kind="index"):
    index = operator.index(index)
    if not -length <= index < length:
        raise IndexError(f"{kind} {index} is out of range")
    return index % length


class _NumberedModules(Module):
    """What Sequential and ModuleList share: modules kept under the names 0, 1, 2, ..."""

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def append(self, module):
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules):
        for module in modules:
            self.append(module)
        return self

    def __delitem__(self, index):
        keys = list(self._modules)
        doomed = keys[index] if isinstance(index, slice) else [keys[_index(index, len(keys))]]
        for key in doomed:
            del self._modules[key]
        self._renumber_with()  # names 0, 1, 2, ... again, as PyTorch does after a deletion

    def _renumber_with(self, index=None, module=None):
        """Name the modules 0, 1, 2, ... in order, with ``module`` inserted at ``index``."""
        modules = list(self._modules.values())
        if module is not None:
            modules.insert(index, module)
        self._modules.clear()
        for i, m in enumerate(modules):
            self.add_module(str(i), m)


class Sequential(_NumberedModules):
    """Runs its modules one after the other, each on the previous one's output."""

    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], collections.OrderedDict):
            for name, module in args[0].items():
                self.add_module(name, module)
        else:
            for i, module in enumerate(args):
                self.add_module(str(i), module)

    def forward(self, input):
        for module in self._modules.values():
            input = module(input)
        return input

    def __getitem__(self, index):
        if isinstance(index, slice):
            return Sequential(collections.OrderedDict(list(self._modules.items())[index]))
        keys = list(self._modules)
        return self._modules[keys[_index(index, len(keys))]]

    def __setitem__(self, index, module):
        keys = list(self._modules)
        setattr(self, keys[_index(index, len(keys))], module)

    def insert(self, index, module):
        self._renumber_with(index, module)
        return self


class ModuleList(_NumberedModules):
    """A list of modules, each registered (so their parameters are the list's)."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return ModuleList(list(self._modules.values())[index])
        return self._modules[str(_index(index, len(self)))]

    def __setitem__(self, index, module):
        setattr(self, str(_index(index, len(self))), module)

    def __iadd__(self, modules):
        return self.extend(modules)

    def __add__(self, other):
        return ModuleList([*self, *other])

    def insert(self, index, module):
        self._renumber_with(index, module)

    def __repr__(self):
        """Runs of identical modules are shown once, as ``(0-2): 3 x Linear(...)``, as PyTorch
        shows them."""
        reprs = [repr(module) for module in self]
        if not reprs:
            return self._get_name() + "()"
        groups = []  # [first index, last index, repr]
        for i, text in enumerate(reprs):
            if groups and groups[-1][2] == text:
                groups[-1][1] = i
            else:
                groups.append([i, i, text])
        lines = []
        for first, last, text in groups:
            if first == last:
                line = f"({first}): {text}"
            else:
                line = f"({first}-{last}): {last - first + 1} x {text}"
            lines.append(_addindent(line, 2))
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"


class ModuleDict(Module):
    """A dict of modules, each registered under its key."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key):
        return self._modules[key]

    def __setitem__(self, key, module):
        self.add_module(key, module)

    def __delitem__(self, key):
        del self._modules[key]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, key):
        return key in self._modules

    def keys(self):
        return self._modules.keys()

    def items(self):
        return self._modules.items()

    def values(self):
        return self._modules.values()

    def pop(self, key):
        module = self._modules[key]
        del self._modules[key]
        return module

    def clear(self):
        self._modules.clear()

    def update(self, modules):
        items = modules.items() if hasattr(modules, "items") else modules
        for key, module in items:
            self[key] = module
