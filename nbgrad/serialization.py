"""``torch.save`` and ``torch.load``: tensors, parameters and state dicts to a file and back.

The file is a pickle (not PyTorch's zip archive: the two do not read each other's files). As in
PyTorch, ``load`` reads only tensors, numbers, strings and containers unless told
``weights_only=False``, because unpickling anything else can run arbitrary code.
"""

import os
import pickle

DEFAULT_PROTOCOL = 2  # PyTorch's

# What a file of tensors, parameters and state dicts refers to: how nbgrad rebuilds a tensor or
# a parameter from its array, how NumPy rebuilds the array, and the containers.
_SAFE_GLOBALS = {
    ("nbgrad.ops.creation", "rebuild_tensor"),
    ("nbgrad.nn.parameter", "_rebuild_parameter"),
    ("numpy", "ndarray"),
    ("numpy", "dtype"),
    ("numpy._core.multiarray", "_reconstruct"),
    ("numpy.core.multiarray", "_reconstruct"),
    ("collections", "OrderedDict"),
    ("_codecs", "encode"),  # how protocol 2 writes bytes
    ("builtins", "set"),
    ("builtins", "frozenset"),
    ("builtins", "slice"),
    ("builtins", "complex"),
}

_ZIP_MAGIC = b"PK\x03\x04"


def save(obj, f, pickle_module=pickle, pickle_protocol=DEFAULT_PROTOCOL):
    """Write ``obj`` (a tensor, a state dict, any picklable object) to ``f``, a path or a file
    opened for writing bytes."""
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as file:
            pickle_module.dump(obj, file, protocol=pickle_protocol)
    else:
        pickle_module.dump(obj, f, protocol=pickle_protocol)


def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None):
    """Read back what ``save`` wrote to ``f``, a path or a file opened for reading bytes.
    nbgrad's tensors live on the CPU, so ``map_location`` changes nothing. ``weights_only``
    is True unless given False (None means the default, as in PyTorch)."""
    weights_only = weights_only is None or weights_only
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as file:
            return _load(file, weights_only, pickle_module)
    return _load(f, weights_only, pickle_module)


def _load(file, weights_only, pickle_module):
    start = file.tell() if file.seekable() else None
    if start is not None:
        if file.read(4) == _ZIP_MAGIC:
            raise RuntimeError(
                "This file is a zip archive, as PyTorch's torch.save writes them: nbgrad.load "
                "reads files written by nbgrad.save. Load it with PyTorch and save its tensors' "
                "values (t.numpy()) instead."
            )
        file.seek(start)
    if not weights_only:
        return (pickle_module or pickle).load(file)
    if pickle_module is not None:
        raise RuntimeError("Can not safely load weights when explicit pickle_module is specified")
    return _WeightsUnpickler(file).load()


class _WeightsUnpickler(pickle.Unpickler):
    """An unpickler that rebuilds only tensors, arrays, numbers, strings and containers."""

    def find_class(self, module, name):
        if (module, name) in _SAFE_GLOBALS:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(
            "Weights only load failed. This file can still be loaded, to do so you have two "
            "options, do those steps only if you trust the source of the checkpoint. (1) "
            "Re-running `nbgrad.load` with `weights_only` set to `False` will likely succeed, but "
            "it can result in arbitrary code execution. Do it only if you got the file from a "
            "trusted source. (2) Save only tensors, numbers, strings and containers of them.\n"
            f"WeightsUnpickler error: Unsupported global: GLOBAL {module}.{name} was not an "
            "allowed global by default."
        )
