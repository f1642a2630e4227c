"""``nn.Module``: the base of every layer and model.

Assigning a Parameter, a sub-module or (through ``register_buffer``) a buffer to an attribute
registers it, so ``parameters()``, ``state_dict()``, ``train()`` and ``repr()`` find it, in
the order it was assigned, exactly as in PyTorch.
"""

import collections
import warnings

import numpy as np

from nbgrad.autograd import grad_mode
from nbgrad.autograd.node import add_hook
from nbgrad.autograd.tensor import Tensor
from nbgrad.nn.parameter import Parameter


class _IncompatibleKeys(
    collections.namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])
):
    """What ``load_state_dict`` returns: the keys it did not find, and the ones it did not use."""

    __slots__ = ()

    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def _addindent(text, spaces):
    """Indent every line but the first (a child's repr inside its parent's)."""
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    return lines[0] + "\n" + "\n".join(" " * spaces + line for line in lines[1:])


def _array_of(value):
    """The values of a state-dict entry: an nbgrad tensor, a NumPy array, or anything NumPy can
    read (a PyTorch tensor, so that weights can be copied over from PyTorch)."""
    if isinstance(value, Tensor):
        return value._data
    if hasattr(value, "detach"):
        value = value.detach()
    return np.asarray(value)


class Module:
    """Base class of all layers: subclasses set sub-modules and Parameters in ``__init__`` and
    compute the output in ``forward``; calling the module runs ``forward`` with its hooks."""

    def __init__(self, *args, **kwargs):
        if args or kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() takes no arguments")
        # Set through object.__setattr__: our own __setattr__ needs these dicts to exist.
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", {})
        object.__setattr__(self, "_buffers", {})
        object.__setattr__(self, "_non_persistent_buffers_set", set())
        object.__setattr__(self, "_modules", {})
        object.__setattr__(self, "_forward_hooks", {})
        object.__setattr__(self, "_forward_pre_hooks", {})

    def forward(self, *args, **kwargs):
        raise NotImplementedError(
            f'Module [{type(self).__name__}] is missing the required "forward" function'
        )

    def __call__(self, *args, **kwargs):
        if _global_forward_pre_hooks or _global_forward_hooks:
            return _call_with_global_hooks(self, args, kwargs)
        for hook in list(self._forward_pre_hooks.values()):
            changed = hook(self, args)
            if changed is not None:
                args = changed if isinstance(changed, tuple) else (changed,)
        result = self.forward(*args, **kwargs)
        for hook in list(self._forward_hooks.values()):
            changed = hook(self, args, result)
            if changed is not None:
                result = changed
        return result

    # --- registration ---------------------------------------------------------------------

    def _check_name(self, name, kind):
        if "_parameters" not in self.__dict__:
            raise AttributeError(f"cannot assign {kind} before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string. Got {type(name).__name__}")
        if "." in name:
            raise KeyError(f'{kind} name can\'t contain "."')
        if name == "":
            raise KeyError(f'{kind} name can\'t be empty string ""')

    def register_parameter(self, name, param):
        self._check_name(name, "parameter")
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(
                f"cannot assign '{type(param).__name__}' object to parameter '{name}' "
                "(torch.nn.Parameter or None required)"
            )
        if param is not None and param.grad_fn is not None:
            raise ValueError(
                f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must be "
                "created explicitly. To express '"
                f"{name}' as a function of another Tensor, compute the value in the forward() "
                "method."
            )
        self._parameters[name] = param

    def register_buffer(self, name, tensor, persistent=True):
        """A tensor that belongs to the module's state (saved in ``state_dict`` unless not
        ``persistent``) but is not a parameter: batch norm's running mean, for instance."""
        self._check_name(name, "buffer")
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(
                f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' "
                "(torch Tensor or None required)"
            )
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name, module):
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        self._check_name(name, "module")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        self._modules[name] = module

    register_module = add_module

    def __setattr__(self, name, value):
        params = self.__dict__.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._forget(name, keep=self._parameters)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(
                    f"cannot assign '{type(value).__name__}' as parameter '{name}' "
                    "(torch.nn.Parameter or None expected)"
                )
            params[name] = None
        elif isinstance(value, Module):
            if params is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._forget(name, keep=self._modules)
            self._modules[name] = value
        elif params is not None and name in self._modules:
            if value is not None:
                raise TypeError(
                    f"cannot assign '{type(value).__name__}' as child module '{name}' "
                    "(torch.nn.Module or None expected)"
                )
            self._modules[name] = None
        elif params is not None and name in self._buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(
                    f"cannot assign '{type(value).__name__}' as buffer '{name}' "
                    "(torch.Tensor or None expected)"
                )
            self._buffers[name] = value
        else:
            object.__setattr__(self, name, value)

    def _forget(self, name, keep):
        """Remove ``name`` from wherever it was, except from ``keep``: a module replaced by a
        module keeps its place among the children (and likewise a parameter)."""
        self.__dict__.pop(name, None)
        for registry in (self._parameters, self._buffers, self._modules):
            if registry is not keep:
                registry.pop(name, None)
        self._non_persistent_buffers_set.discard(name)

    def __getattr__(self, name):
        # Only called when normal lookup fails: look in the registries.
        registries = self.__dict__
        for registry in ("_parameters", "_buffers", "_modules"):
            if registry in registries and name in registries[registry]:
                return registries[registry][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        for registry in (self._parameters, self._buffers, self._modules):
            if name in registry:
                del registry[name]
                self._non_persistent_buffers_set.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self):
        names = set(super().__dir__())
        names.update(self._parameters, self._buffers, self._modules)
        return sorted(n for n in names if not n[0].isdigit())

    # --- walking the tree -----------------------------------------------------------------

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        if memo is None:
            memo = set()
        if self in memo:
            return
        if remove_duplicate:
            memo.add(self)
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            child_prefix = prefix + ("." if prefix else "") + name
            yield from module.named_modules(memo, child_prefix, remove_duplicate)

    def modules(self):
        for _, module in self.named_modules():
            yield module

    def named_children(self):
        seen = set()
        for name, module in self._modules.items():
            if module is not None and module not in seen:
                seen.add(module)
                yield name, module

    def children(self):
        for _, module in self.named_children():
            yield module

    def _named_members(self, registry, prefix, recurse, remove_duplicate=True):
        seen = set()
        owners = (
            self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
            if recurse
            else [(prefix, self)]
        )
        for owner_prefix, owner in owners:
            for name, value in getattr(owner, registry).items():
                if value is None or (remove_duplicate and id(value) in seen):
                    continue
                if remove_duplicate:
                    seen.add(id(value))
                yield owner_prefix + ("." if owner_prefix else "") + name, value

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        yield from self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse=True):
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        yield from self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse=True):
        for _, buffer in self.named_buffers(recurse=recurse):
            yield buffer

    def get_submodule(self, target):
        module = self
        for part in target.split(".") if target else []:
            if part not in module._modules:
                raise AttributeError(f"{module._get_name()} has no attribute `{part}`")
            module = module._modules[part]
        return module

    def get_parameter(self, target):
        module_path, _, name = target.rpartition(".")
        module = self.get_submodule(module_path)
        if name not in module._parameters:
            raise AttributeError(f"`{name}` is not an nn.Parameter")
        return module._parameters[name]

    def apply(self, fn):
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    # --- modes and gradients --------------------------------------------------------------

    def train(self, mode=True):
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        for param in self.parameters():
            param.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        """Forget every parameter's ``.grad`` (None by default, as PyTorch; or zeros)."""
        for param in self.parameters():
            if param.grad is None:
                continue
            if set_to_none:
                param.grad = None
            else:
                zero_grad_in_place(param)

    # --- dtype ------------------------------------------------------------------------------

    def to(self, *args, **kwargs):
        """``to(dtype)`` converts floating parameters and buffers in place; moving them to a
        device other than the CPU raises what a CPU-only PyTorch raises."""
        from nbgrad import dtypes

        dtype = kwargs.pop("dtype", None)
        device = kwargs.pop("device", None)
        kwargs.pop("non_blocking", None)
        if kwargs:
            raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
        for arg in args:
            if isinstance(arg, dtypes.dtype):
                dtype = arg
            elif isinstance(arg, Tensor):
                dtype = arg.dtype
            else:
                device = arg
        if dtype is not None and not dtype.is_floating_point:
            raise TypeError(
                f"nn.Module.to only accepts floating point or complex dtypes, but got desired "
                f"dtype={dtype}"
            )
        if device is not None:
            self._move_to(device)
        if dtype is None:
            return self
        return self._apply_to_floating(lambda array: array.astype(dtype.numpy))

    def _apply_to_floating(self, convert):
        for module in self.modules():
            for registry in (module._parameters, module._buffers):
                for name, tensor in registry.items():
                    if tensor is None or not tensor.is_floating_point():
                        continue
                    converted = convert(tensor._data)
                    if converted.dtype == tensor._data.dtype:
                        continue  # Tensor.to of the same dtype: the tensor itself
                    if registry is module._buffers:
                        # PyTorch replaces a buffer by the converted tensor (at version 0);
                        # a parameter keeps its identity and gets the new data.
                        registry[name] = Tensor._make(converted)
                        continue
                    tensor.data = Tensor._make(converted)
                    if tensor._grad is not None:
                        tensor._grad = Tensor._make(convert(tensor._grad._data))
        return self

    def float(self):
        from nbgrad import dtypes

        return self.to(dtypes.float32)

    def double(self):
        from nbgrad import dtypes

        return self.to(dtypes.float64)

    def half(self):
        from nbgrad import dtypes

        return self.to(dtypes.float16)

    def cpu(self):
        return self

    def cuda(self, device=None):
        return self._move_to("cuda" if device is None else device)

    def _move_to(self, device):
        """PyTorch parses the device, and moves each tensor: with none, nothing fails."""
        from nbgrad import devices

        device = devices.device(device)
        if any(True for _ in self._tensors()):
            devices.check(device)
        return self

    def _tensors(self):
        for module in self.modules():
            for registry in (module._parameters, module._buffers):
                yield from (t for t in registry.values() if t is not None)

    def type(self, dst_type):
        return self.to(dst_type)

    # --- state --------------------------------------------------------------------------------

    def state_dict(self, *, destination=None, prefix="", keep_vars=False):
        """Every parameter and persistent buffer by dotted name, sharing memory with the module
        (detached, unless ``keep_vars``)."""
        if destination is None:
            destination = collections.OrderedDict()
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else param.detach()
        for name, buffer in self._buffers.items():
            if buffer is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buffer if keep_vars else buffer.detach()
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(
                    destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars
                )
        return destination

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Copy values into the parameters and buffers; with ``strict``, a missing or unexpected
        key is an error listing them all, in PyTorch's words."""
        if not hasattr(state_dict, "keys"):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        own = self.state_dict(keep_vars=True)
        missing = [key for key in own if key not in state_dict]
        unexpected = [key for key in state_dict if key not in own]
        errors = []
        for key, target in own.items():
            if key not in state_dict:
                continue
            values = _array_of(state_dict[key])
            if values.shape != target._data.shape:
                errors.append(
                    f"size mismatch for {key}: copying a param with shape "
                    f"{_size_repr(values.shape)} from checkpoint, the shape in current model is "
                    f"{_size_repr(target._data.shape)}."
                )
                continue
            with grad_mode.no_grad():
                target._data[...] = values
                target._version_counter.value += 1
        if strict:
            if unexpected:
                errors.insert(
                    0,
                    "Unexpected key(s) in state_dict: "
                    + ", ".join(f'"{key}"' for key in unexpected)
                    + ". ",
                )
            if missing:
                errors.insert(
                    0,
                    "Missing key(s) in state_dict: "
                    + ", ".join(f'"{key}"' for key in missing)
                    + ". ",
                )
        if errors:
            raise RuntimeError(
                f"Error(s) in loading state_dict for {type(self).__name__}:\n\t"
                + "\n\t".join(errors)
            )
        return _IncompatibleKeys(missing, unexpected)

    # --- hooks --------------------------------------------------------------------------------

    def register_forward_hook(self, hook, *, prepend=False):
        """``hook(module, args, output)`` after every forward; it may return a new output."""
        return _register(self._forward_hooks, hook, prepend)

    def register_forward_pre_hook(self, hook, *, prepend=False):
        """``hook(module, args)`` before every forward; it may return new args."""
        return _register(self._forward_pre_hooks, hook, prepend)

    # --- printing -----------------------------------------------------------------------------

    def _get_name(self):
        return type(self).__name__

    def extra_repr(self):
        """The module's own settings, shown inside its parentheses; layers override it."""
        return ""

    def __repr__(self):
        extra_lines = self.extra_repr().split("\n") if self.extra_repr() else []
        child_lines = [
            f"({name}): " + _addindent(repr(module), 2) for name, module in self._modules.items()
        ]
        lines = extra_lines + child_lines
        text = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                text += extra_lines[0]
            else:
                text += "\n  " + "\n  ".join(lines) + "\n"
        return text + ")"


# --- global forward hooks: run around every module's forward (PyTorch's debugging hooks) ---------

_global_forward_pre_hooks = {}
_global_forward_hooks = {}
_global_forward_hooks_always_called = set()  # keys of the forward hooks registered always_call


def register_module_forward_pre_hook(hook):
    """``hook(module, args)`` before every module's forward, before the module's own pre-hooks;
    it may return new args. Returns a handle whose ``remove()`` unregisters it."""
    return add_hook(_global_forward_pre_hooks, hook)


def register_module_forward_hook(hook, *, always_call=False):
    """``hook(module, args, output)`` after every module's forward, before the module's own
    forward hooks; it may return a new output. With ``always_call`` it also runs when forward
    (or a hook) raised, with the output None, before the exception goes on."""
    handle = add_hook(_global_forward_hooks, hook)
    _global_forward_hooks_always_called.intersection_update(_global_forward_hooks)
    if always_call:
        _global_forward_hooks_always_called.add(handle._key)
    return handle


def _call_with_global_hooks(module, args, kwargs):
    """``Module.__call__`` while global hooks are registered, in PyTorch's order: global
    pre-hooks, the module's pre-hooks, forward, global forward hooks, the module's forward hooks."""
    result = None
    called = set()  # the forward hooks that ran: an always_call one runs once, even on error
    try:
        for hook in [*_global_forward_pre_hooks.values(), *module._forward_pre_hooks.values()]:
            changed = hook(module, args)
            if changed is not None:
                args = changed if isinstance(changed, tuple) else (changed,)
        result = module.forward(*args, **kwargs)
        for key, hook in list(_global_forward_hooks.items()):
            called.add(key)
            changed = hook(module, args, result)
            if changed is not None:
                result = changed
        for hook in list(module._forward_hooks.values()):
            changed = hook(module, args, result)
            if changed is not None:
                result = changed
        return result
    except Exception:
        for key, hook in list(_global_forward_hooks.items()):
            if key in _global_forward_hooks_always_called and key not in called:
                try:
                    hook(module, args, result)
                except Exception as hook_error:  # the first error is the one to report
                    warnings.warn(
                        "global module forward hook with ``always_call=True`` raised an "
                        "exception that was silenced as another error was raised in forward: "
                        f"{hook_error}",
                        stacklevel=2,
                    )
        raise


def zero_grad_in_place(param):
    grad = param.grad
    if grad.grad_fn is not None:
        grad.detach_()
    else:
        grad.requires_grad_(False)
    if grad._data.flags.writeable:
        grad._data[...] = 0
    else:  # a gradient the engine left as a read-only broadcast view: give it its own zeros
        grad._data = np.zeros_like(grad._data)


def _register(hooks, hook, prepend):
    handle = add_hook(hooks, hook)
    if prepend:
        reordered = {handle._key: hook, **{k: v for k, v in hooks.items() if k != handle._key}}
        hooks.clear()
        hooks.update(reordered)
    return handle


def _size_repr(shape):
    return f"torch.Size([{', '.join(str(s) for s in shape)}])"
