"""Which autograd a recording watches: nbgrad's engine, or real PyTorch.

A ``%%autograd`` cell records the engine its code uses. That is PyTorch when the cell imports
it (``import torch``, ``from torch import nn``) or names something of it that the user's
variables hold (the ``torch`` module, a tensor, a model); nbgrad otherwise, also for
``import nbgrad as torch``. ``--engine`` (``record(engine=...)``) says it outright. Detection
never imports PyTorch: if the user has not imported it, no value of theirs can be PyTorch's.
"""

import ast
import sys

ENGINES = ("auto", "nbgrad", "torch")


def detect_engine(tree, namespace):
    """ "torch" or "nbgrad" for the code ``tree`` (an ast.Module) run in ``namespace``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(_is_torch(a.name) for a in node.names):
            return "torch"
        if isinstance(node, ast.ImportFrom) and node.level == 0 and _is_torch(node.module or ""):
            return "torch"
    if "torch" not in sys.modules:
        return "nbgrad"
    # The variables the cell reads that it does not assign itself: what it brings in.
    read, assigned = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (read if isinstance(node.ctx, ast.Load) else assigned).add(node.id)
    for name in read - assigned:
        value = namespace.get(name)
        if value is not None and _belongs_to_torch(value):
            return "torch"
    return "nbgrad"


def recorder_class(engine):
    """The recorder for ``engine`` ("nbgrad" or "torch"), importing PyTorch only for the latter."""
    if engine == "torch":
        from nbgrad.trace.torch_recorder import TorchRecorder

        return TorchRecorder
    from nbgrad.trace.recorder import Recorder

    return Recorder


def _is_torch(module_name):
    return module_name == "torch" or module_name.startswith("torch.")


def _belongs_to_torch(value):
    """The torch module (or one of its modules), or an object of a PyTorch class or of a
    subclass of one (a user's ``nn.Module``)."""
    if type(value).__name__ == "module":
        return _is_torch(getattr(value, "__name__", ""))
    if isinstance(value, (list, tuple)) and value:
        return _belongs_to_torch(value[0])
    return any(_is_torch(getattr(cls, "__module__", "") or "") for cls in type(value).__mro__)
