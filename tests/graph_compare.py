"""Helpers to compare an nbgrad graph with a PyTorch graph built by the same code."""

import numpy as np


def structure(fn, depth=0, limit=12):
    """The graph below a grad_fn as nested tuples of (name, input_nr, children)."""
    if fn is None:
        return None
    if depth > limit:
        return (type(fn).__name__, "...")
    children = tuple(
        (None, nr) if child is None else (structure(child, depth + 1, limit), nr)
        for child, nr in fn.next_functions
    )
    return (type(fn).__name__, children)


def saved_names(fn):
    return {a for a in dir(fn) if a.startswith("_saved_")}


def to_numpy(t):
    return t.detach().numpy() if hasattr(t, "detach") else np.asarray(t)
