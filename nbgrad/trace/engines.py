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


def detect_engine(tree, namespace, text=None):
    """ "torch" or "nbgrad" for the code ``tree`` (an ast.Module, of ``text``) run in
    ``namespace``."""
    if (
        "torch" not in sys.modules
        and text is not None
        and ("torch" not in text or "import" not in text)
    ):
        # No value can be PyTorch's, and the code does not import it: it does not name it, or
        # has no import statement at all (``torch`` is then nbgrad: ``import nbgrad as torch``
        # in an earlier cell).
        return "nbgrad"
    imports_torch, brought_in = _what_the_code_uses(tree, text)
    if imports_torch:
        return "torch"
    if "torch" not in sys.modules:
        return "nbgrad"
    for name in brought_in:
        value = namespace.get(name)
        if value is not None and _belongs_to_torch(value):
            return "torch"
    return "nbgrad"


_ANALYSED = {}  # cell text -> (imports torch, names it reads without assigning them)
ANALYSED_CELLS = 16
_STATEMENTS = {}  # (statement text, columns) -> (imports torch, names read, names assigned)
ANALYSED_STATEMENTS = 512


def _what_the_code_uses(tree, text):
    """Whether the code imports PyTorch, and the variables it reads that it does not assign
    itself (what it brings in). Walking the tree costs as much as recording a few ops: the
    answer is kept for a cell run again, and each statement's part of it for a cell edited
    elsewhere."""
    found = _ANALYSED.get(text) if text is not None else None
    if found is not None:
        return found
    lines = text.splitlines(keepends=True) if text is not None else None
    imports_torch = False
    read, assigned = set(), set()
    for statement in tree.body:
        key = None
        if lines is not None:
            source = "".join(lines[statement.lineno - 1 : statement.end_lineno])
            key = (source, statement.col_offset, statement.end_col_offset)
        part = _STATEMENTS.get(key) if key is not None else None
        if part is None:
            part = _analyse(statement)
            if key is not None:
                if len(_STATEMENTS) >= ANALYSED_STATEMENTS:
                    _STATEMENTS.clear()
                _STATEMENTS[key] = part
        imports_torch = imports_torch or part[0]
        read |= part[1]
        assigned |= part[2]
    found = (imports_torch, tuple(sorted(read - assigned)))
    if text is not None:
        if len(_ANALYSED) >= ANALYSED_CELLS:
            _ANALYSED.clear()
        _ANALYSED[text] = found
    return found


def _analyse(statement):
    """(whether it imports PyTorch, the names it reads, the names it assigns) for one statement."""
    imports_torch = False
    read, assigned = set(), set()
    for node in ast.walk(statement):
        if isinstance(node, ast.Name):
            (read if isinstance(node.ctx, ast.Load) else assigned).add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            if isinstance(node, ast.Import):
                imports_torch = imports_torch or any(_is_torch(a.name) for a in node.names)
            elif node.level == 0:
                imports_torch = imports_torch or _is_torch(node.module or "")
            # ``import nbgrad as torch`` binds ``torch``: the cell's own, whatever it held
            assigned.update(a.asname or a.name.split(".")[0] for a in node.names)
    return imports_torch, frozenset(read), frozenset(assigned)


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
