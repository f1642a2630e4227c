"""Run a Python program (or the code cells of a notebook) with ``torch`` mapped to nbgrad.

    python scripts/run_as_torch.py PROGRAM.py [ARGS...]      with nbgrad as torch
    python scripts/run_as_torch.py --torch PROGRAM.py         with real PyTorch (to compare)
    python scripts/run_as_torch.py NOTEBOOK.ipynb             the code cells, in order

``import torch``, ``import torch.nn as nn``, ``from torch.nn import functional as F`` and the
like all give nbgrad's modules. Lines of a notebook starting with ``%`` or ``!`` are dropped.
Plotting and drawing libraries that are not installed (matplotlib, graphviz) are replaced by
stand-ins that accept every call and draw nothing. This is how the programs in
docs/programs.md were run.
"""

import importlib
import json
import os
import runpy
import sys
import tempfile
import types

# nbgrad's modules that programs import under torch's names.
SUBMODULES = [
    "nn",
    "nn.functional",
    "nn.init",
    "nn.modules",
    "nn.parameter",
    "nn.utils",
    "optim",
    "optim.lr_scheduler",
    "autograd",
    "autograd.function",
    "autograd.functional",
    "autograd.graph",
    "func",
    "autograd.profiler",
    "utils",
    "utils.data",
    "linalg",
    "cuda",
    "accelerator",
    "backends",
    "profiler",
    "random",
]


def map_torch_to_nbgrad():
    import nbgrad

    sys.modules["torch"] = nbgrad
    for name in SUBMODULES:
        try:
            module = importlib.import_module("nbgrad." + name)
        except ImportError:
            continue
        sys.modules["torch." + name] = module
    # Any nbgrad module imported so far is also reachable under torch's name.
    for name, module in list(sys.modules.items()):
        if name.startswith("nbgrad."):
            sys.modules.setdefault("torch." + name[len("nbgrad.") :], module)


class _DrawsNothing(types.ModuleType):
    """Stands for a missing plotting module: every attribute, call and index gives another."""

    def __init__(self, name="stand-in"):
        super().__init__(name)
        self.__path__ = []

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _DrawsNothing(name)

    def __call__(self, *args, **kwargs):
        return _DrawsNothing()

    def __getitem__(self, key):
        return _DrawsNothing()

    def __iter__(self):
        return iter((_DrawsNothing(), _DrawsNothing()))


def stand_in_for_missing_plotting():
    for name in ("matplotlib", "matplotlib.pyplot", "graphviz"):
        try:
            importlib.import_module(name)
        except ImportError:
            sys.modules[name] = _DrawsNothing(name)


def notebook_as_script(path):
    """The code cells of a notebook as one script."""
    with open(path, encoding="utf-8") as file:
        cells = json.load(file)["cells"]
    lines = []
    for cell in cells:
        if cell["cell_type"] != "code":
            continue
        for line in "".join(cell["source"]).splitlines():
            if line.lstrip().startswith(("%", "!")):
                continue
            lines.append(line)
        lines.append("")
    return "\n".join(lines)


def main(argv):
    use_torch = argv and argv[0] == "--torch"
    if use_torch:
        argv = argv[1:]
    if not argv:
        sys.exit(__doc__)
    stand_in_for_missing_plotting()
    if not use_torch:
        map_torch_to_nbgrad()
    path = argv[0]
    if path.endswith(".ipynb"):
        handle, script = tempfile.mkstemp(suffix=".py")
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(notebook_as_script(path))
        path = script
    sys.argv = argv
    sys.path.insert(0, os.path.dirname(os.path.abspath(argv[0])))
    runpy.run_path(path, run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
