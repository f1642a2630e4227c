"""Which nn.Module an operation ran inside, so the widget can group a model's ops.

The recorder does not reach into ``nbgrad.nn``: it registers the two global hooks PyTorch
itself offers (``torch.nn.modules.module.register_module_forward_pre_hook`` and
``register_module_forward_hook``), which every ``Module.__call__`` runs around ``forward``, so
that modules made while recording are seen as well as those made before. Any module system with
those two functions works: ``nbgrad.nn.modules.module``, ``torch.nn.modules.module`` for the
PyTorch bridge, or a stand-in in tests.

While recording, a scope is the tuple of module objects being called, outermost first. When the
trace is finished, ``module_paths`` turns scopes into dotted paths (``model.fc1``) from the names
the modules have in the user's namespace.
"""


def find_hook_home():
    """nbgrad's module system, where its global forward hooks live (imported when recording
    starts: nbgrad.nn is built on the engine, which the trace package does not need)."""
    import nbgrad.nn.modules.module as home

    return home


class ScopeTracker:
    """The stack of modules currently running ``forward``, kept by two global hooks."""

    def __init__(self, on_output=None):
        self.current = ()  # outermost first; a new tuple on every change, so it can be shared
        self.on_output = on_output  # on_output(scope, output): a module's forward returned
        self._handles = []

    def attach(self, home):
        """Hook every module call through ``home``'s global hooks (None: no module system)."""
        if home is None:
            return
        self._handles.append(home.register_module_forward_pre_hook(self._enter))
        # always_call: a forward that raises still leaves the stack.
        self._handles.append(home.register_module_forward_hook(self._leave, always_call=True))

    def detach(self):
        for handle in self._handles:
            handle.remove()
        self._handles = []
        self.current = ()

    def _enter(self, module, args):
        self.current = self.current + (module,)

    def _leave(self, module, args, output):
        scope = self.current
        # Unwind to the module that is returning now (a module whose forward started before
        # recording did is not on the stack).
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
