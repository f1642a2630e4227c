"""``repr(tensor)`` exactly as PyTorch prints it: same number formats, line breaks, suffixes.

PyTorch picks one format for all elements: integers shown as ``2.`` when every value is whole,
scientific notation when the magnitudes span more than 1000x (or are very large or small), and
fixed with 4 decimals otherwise; tensors over 1000 elements are summarised with ``...``.
"""

import math

import numpy as np

from nbgrad import dtypes

PRECISION = 4
THRESHOLD = 1000
EDGEITEMS = 3
LINEWIDTH = 80


class _NumberFormat:
    """One format shared by every element, so the columns line up."""

    def __init__(self, values, floating):
        self.floating = floating
        self.int_mode = True
        self.sci_mode = False
        self.width = 1
        flat = values.reshape(-1)
        if not floating:
            for v in flat.tolist():
                self.width = max(self.width, len(str(v)))
            return
        finite = flat[np.isfinite(flat) & (flat != 0)].astype(np.float64)
        if finite.size == 0:
            return  # only zeros, infs and nans: printed in whole-number style (``0.``, ``inf``)
        magnitudes = np.abs(finite)
        smallest, largest = magnitudes.min(), magnitudes.max()
        self.int_mode = bool(np.all(finite == np.ceil(finite)))
        if self.int_mode:
            self.sci_mode = largest / smallest > 1000.0 or largest > 1.0e8
        else:
            self.sci_mode = largest / smallest > 1000.0 or largest > 1.0e8 or smallest < 1.0e-4
        for v in finite.tolist():
            if self.sci_mode:
                text = f"{v:.{PRECISION}e}"
            elif self.int_mode:
                text = f"{v:.0f}."
            else:
                text = f"{v:.{PRECISION}f}"
            self.width = max(self.width, len(text))

    @staticmethod
    def _whole(v):
        text = f"{v:.0f}"
        return text if not math.isfinite(v) else text + "."

    def format(self, v):
        if not self.floating:
            text = str(v)
        elif self.sci_mode:
            text = f"{v:{self.width}.{PRECISION}e}"
        elif self.int_mode:
            text = self._whole(v)
        else:
            text = f"{v:.{PRECISION}f}"
        return " " * (self.width - len(text)) + text


def _summarized(array):
    """The corner elements that a summarised print shows, for choosing the number format."""
    if array.ndim == 0:
        return array
    if array.shape[0] > 2 * EDGEITEMS:
        array = np.concatenate([array[:EDGEITEMS], array[-EDGEITEMS:]])
    if array.ndim == 1:
        return array
    return np.stack([_summarized(row) for row in array]) if len(array) else array


def _vector(values, indent, summarize, fmt):
    per_line = max(1, math.floor((LINEWIDTH - indent) / (fmt.width + 2)))
    if summarize and len(values) > 2 * EDGEITEMS:
        items = (
            [fmt.format(v) for v in values[:EDGEITEMS].tolist()]
            + [" ..."]
            + [fmt.format(v) for v in values[-EDGEITEMS:].tolist()]
        )
    else:
        items = [fmt.format(v) for v in values.tolist()]
    lines = [", ".join(items[i : i + per_line]) for i in range(0, len(items), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _nested(values, indent, summarize, fmt):
    if values.ndim == 0:
        return fmt.format(values.item())
    if values.ndim == 1:
        return _vector(values, indent, summarize, fmt)
    if summarize and values.shape[0] > 2 * EDGEITEMS:
        rows = (
            [_nested(values[i], indent + 1, summarize, fmt) for i in range(EDGEITEMS)]
            + ["..."]
            + [
                _nested(values[i], indent + 1, summarize, fmt)
                for i in range(len(values) - EDGEITEMS, len(values))
            ]
        )
    else:
        rows = [_nested(values[i], indent + 1, summarize, fmt) for i in range(values.shape[0])]
    separator = "," + "\n" * (values.ndim - 1) + " " * (indent + 1)
    return "[" + separator.join(rows) + "]"


def values_text(array, indent):
    if array.size == 0:
        return "[]"
    summarize = array.size > THRESHOLD
    floating = array.dtype.kind == "f"
    shown = _summarized(array) if summarize else array
    fmt = _NumberFormat(shown, floating)
    return _nested(array, indent, summarize, fmt)


def _with_suffixes(text, suffixes, indent):
    parts = [text]
    last_line = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if last_line + len(suffix) + 2 > LINEWIDTH:
            parts.append(",\n" + " " * indent + suffix)
            last_line = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            last_line += len(suffix) + 2
    parts.append(")")
    return "".join(parts)


def tensor_repr(t, prefix="tensor("):
    array = t._data
    indent = len(prefix)
    suffixes = []
    if array.size == 0:
        if array.shape != (0,):
            suffixes.append(f"size={tuple(array.shape)}")
        # No elements to tell an int64 tensor from a float one: only the default float is implied.
        if t._dtype is not dtypes.get_default_dtype():
            suffixes.append(f"dtype={t._dtype!r}")
    elif t._dtype not in (dtypes.get_default_dtype(), dtypes.int64, dtypes.bool):
        suffixes.append(f"dtype={t._dtype!r}")
    try:
        grad_fn = t.grad_fn  # the property: a view's history may be due for a refresh
    except RuntimeError:  # a no_grad view whose base was written to: no valid history (views.py)
        grad_fn = "Invalid"
    if grad_fn is not None:
        suffixes.append(f"grad_fn=<{grad_fn if grad_fn == 'Invalid' else type(grad_fn).__name__}>")
    elif t._requires_grad:
        suffixes.append("requires_grad=True")
    return _with_suffixes(prefix + values_text(array, indent), suffixes, indent)
