"""Which nn.Module an operation ran inside, so the widget can group a model's ops.

The recorder does not reach into ``nbgrad.nn``: it registers the two global hooks PyTorch
itself offers (``torch.nn.modules.module.register_module_forward_pre_hook`` and
``register_module_forward_hook``), which every ``Module.__call__`` runs around ``forward``. Any
module system with those two functions works: nbgrad.nn once it has them, real PyTorch for a
future bridge, or a stand-in in tests.

While recording, a scope is the tuple of module objects being called, outermost first. When the
trace is finished, ``module_paths`` turns scopes into dotted paths (``model.fc1``) from the names
the modules have in the user's namespace.
"""

import importlib

# Where a module system keeps its global forward hooks, first match wins.
HOOK_HOMES = ("nbgrad.nn.modules.module", "nbgrad.nn.modules", "nbgrad.nn")


def find_hook_home():
    """The module offering ``register_module_forward_pre_hook`` and ``..._forward_hook``."""
    for name in HOOK_HOMES:
        try:
            home = importlib.import_module(name)
        except ImportError:
            continue
        if hasattr(home, "register_module_forward_pre_hook") and hasattr(
            home, "register_module_forward_hook"
        ):
            return home
    return None


class ScopeTracker:
    """The stack of modules currently running ``forward``, kept by two global hooks."""

    def __init__(self, on_output=None):
        self.current = ()  # outermost first; a new tuple on every change, so it can be shared
        self.on_output = on_output  # on_output(scope, output): a module's forward returned
        self._handles = []

    def attach(self, home, namespaces=()):
        """Hook every module call through ``home``'s global hooks; without them, hook the
        modules that ``namespaces`` (the user's variables) hold now, one by one."""
        if home is None:
            for module in _modules_in(namespaces):
                self._handles.append(module.register_forward_pre_hook(self._enter))
                self._handles.append(module.register_forward_hook(self._leave))
            return
        self._handles.append(home.register_module_forward_pre_hook(self._enter))
        try:
            handle = home.register_module_forward_hook(self._leave, always_call=True)
        except TypeError:  # a module system without ``always_call``
            handle = home.register_module_forward_hook(self._leave)
        self._handles.append(handle)

    def detach(self):
        for handle in self._handles:
            handle.remove()
        self._handles = []
        self.current = ()

    def _enter(self, module, args):
        self.current = self.current + (module,)

    def _leave(self, module, args, output):
        scope = self.current
        # A forward that raised without ``always_call`` leaves its module on the stack: unwind
        # to the module that is returning now.
        for depth in range(len(scope) - 1, -1, -1):
            if scope[depth] is module:
                self.current = scope[:depth]
                if self.on_output is not None:
                    self.on_output(scope[: depth + 1], output)
                return


def is_module(value):
    """Duck-typed: anything with ``named_parameters`` and ``named_modules`` (nbgrad's or torch's
    nn.Module)."""
    return (
        not isinstance(value, type)
        and callable(getattr(value, "named_parameters", None))
        and callable(getattr(value, "named_modules", None))
    )


def _modules_in(namespaces):
    """Every module the namespaces hold, with its submodules, each once."""
    seen = set()
    for namespace in namespaces:
        for key, value in list(namespace.items()):
            if isinstance(key, str) and not key.startswith("_") and is_module(value):
                for _, module in named_submodules(value, key):
                    if id(module) not in seen and hasattr(module, "register_forward_hook"):
                        seen.add(id(module))
                        yield module


def module_paths(scopes, named_modules):
    """Dotted paths for scopes: ``named_modules`` maps id(module) -> path for the modules the
    namespace names (``model``, ``model.fc1``); others are named by their class."""
    paths = {}
    for scope in scopes:
        innermost = scope[-1]
        path = named_modules.get(id(innermost))
        if path is None:
            parts = []
            for module in scope:
                known = named_modules.get(id(module))
                parts = [known] if known is not None else [*parts, type(module).__name__]
            path = ".".join(parts)
        paths[scope] = path
    return paths


def named_submodules(module, prefix):
    """(path, submodule) for a module and everything under it, as ``named_modules`` gives."""
    named = getattr(module, "named_modules", None)
    if named is None:
        return [(prefix, module)]
    try:
        return [(f"{prefix}.{name}" if name else prefix, m) for name, m in named()]
    except Exception:  # a half-built module: name what we can
        return [(prefix, module)]
