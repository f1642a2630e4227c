"""What observers of the engine (the recorder, nbgrad.trace) may read of its objects, without
knowing how the engine keeps them: a tensor's values and version, what a node saved, whether
backward freed it. The engine's internals may change; these answers stay.
"""

from nbgrad.autograd.node import FREED, PackedSavedTensor, SavedTensor


def values(tensor):
    """The tensor's values: the engine's own NumPy array (shared: read it, never write it)."""
    return tensor._data


def version(tensor):
    """``tensor._version``, without making the version counter the engine makes lazily (most
    tensors never need one)."""
    counter = tensor._counter
    return 0 if counter is None else counter.value


def grad(tensor):
    """``tensor.grad``, without the warning PyTorch gives for a non-leaf's."""
    return tensor._grad


class Saved:
    """One value a node (or a custom Function's ctx) saved for backward.

    kind     "tensor" (kept with its version), "packed" (a saved_tensors_hooks pack hook holds
             it: reading it would run the user's unpack hook), or "plain" (a number, a size...)
    tensor   the saved Tensor object, for a saved input; None for a saved output (the engine
             keeps an output's data only) and for the other kinds
    data     the saved values (kind "tensor"), the plain value (kind "plain"), else None
    version  the version the tensor had when saved (kind "tensor")
    """

    __slots__ = ("kind", "tensor", "data", "version")

    def __init__(self, kind, tensor=None, data=None, version=None):
        self.kind = kind
        self.tensor = tensor
        self.data = data
        self.version = version


def saved(node):
    """What ``node`` saved, by position (the order of its table entry's ``saves``, or of the
    Function's ``save_for_backward``): a ``Saved`` or None (nothing saved there, or already
    freed there). None for the whole when the node saves nothing or backward freed it."""
    entries = getattr(node, "_saved", None)
    if entries is None or entries is FREED:
        return None
    out = []
    for entry in entries:
        kind = type(entry)
        if entry is None or entry is FREED:
            out.append(None)
        elif kind is SavedTensor:
            out.append(Saved("tensor", entry.tensor, entry.data, entry.version))
        elif kind is PackedSavedTensor:
            out.append(Saved("packed"))
        else:
            out.append(Saved("plain", data=entry))
    return out


def is_freed(node):
    """Whether backward freed what ``node`` saved (a pass without ``retain_graph``)."""
    entries = getattr(node, "_saved", None)
    if entries is FREED:
        return True
    if type(entries) in (list, tuple):
        for entry in entries:  # a loop, not any(): this runs after every backward step
            if entry is FREED:
                return True
    return False
