"""Snapshots of arrays: what a trace keeps of a value, and how a value is written into JSON.

A recording must not be rewritten by what the program does next (an in-place ``mul_``, an
optimizer step), so every value is copied the moment it is recorded. Small arrays are kept whole;
an array with more elements than the policy allows is kept as an ``ArraySummary`` (shape, dtype,
statistics and a small preview), unless the policy says to keep everything (``--full``).
"""

import math

import numpy as np

# A preview shows the top-left corner of the first matrix, or the first elements of a vector.
PREVIEW_SIDE = 6
PREVIEW_LENGTH = 12


DEFAULT_MAX_ELEMENTS = 1024
DEFAULT_INLINE_ELEMENTS = 100


class Policy:
    """How much of each array a recording keeps, and how much of it the JSON carries.

    max_elements     arrays with more elements are kept as a summary (statistics and a preview)
    full             keep every array whole
    inline_elements  arrays with more elements travel in the JSON as a summary, with the id of
                     the whole array when it was kept (fetched on request, not sent up front)
    """

    __slots__ = ("max_elements", "full", "inline_elements")

    def __init__(
        self, max_elements=DEFAULT_MAX_ELEMENTS, full=False, inline_elements=DEFAULT_INLINE_ELEMENTS
    ):
        if max_elements < 0:
            raise ValueError(f"max_elements must be at least 0, got {max_elements}")
        self.max_elements = int(max_elements)
        self.full = bool(full)
        self.inline_elements = min(int(inline_elements), self.max_elements)


class ArraySummary:
    """What is kept of a large array: its shape, dtype, statistics and a preview.

    ``min``, ``max``, ``mean`` and ``std`` are Python floats over the whole array (NaN when
    there are no elements); ``nonfinite`` counts NaN and infinite elements; ``preview`` is a small
    NumPy array (see ``preview_of``).
    """

    __slots__ = ("shape", "dtype", "min", "max", "mean", "std", "nonfinite", "preview")

    def __init__(self, array):
        # Written for speed: a recording summarises every large array it meets, and each Python
        # step here costs about as much as a NumPy pass over a thousand elements.
        shape = array.shape
        dtype = array.dtype
        self.shape = shape
        self.dtype = dtype_name(dtype)
        self.preview = preview_of(array).copy()
        self.nonfinite = 0
        if array.size == 0:
            self.min = self.max = self.mean = self.std = math.nan
            return
        values = array.reshape(-1)
        cast = _CASTS.get(dtype, _UNKNOWN_DTYPE)
        if cast is _UNKNOWN_DTYPE:
            cast = _cast_for(dtype)
        if cast is not None:
            values = values.astype(cast)
        low, high = float(_minimum(values)), float(_maximum(values))
        if not (-math.inf < low and high < math.inf):  # also false for NaN
            finite = np.isfinite(values)
            self.nonfinite = int(values.size - np.count_nonzero(finite))
            values = values[finite]
            if values.size == 0:
                self.min, self.max = low, high
                self.mean = self.std = math.nan
                return
            low, high = float(_minimum(values)), float(_maximum(values))
        self.min, self.max = low, high
        self.mean, self.std = _mean_and_std(values)

    @property
    def size(self):
        return math.prod(self.shape)

    def __repr__(self):
        return (
            f"ArraySummary(shape={list(self.shape)}, dtype={self.dtype}, min={self.min:.4g}, "
            f"max={self.max:.4g}, mean={self.mean:.4g}, std={self.std:.4g})"
        )


_minimum = np.minimum.reduce
_maximum = np.maximum.reduce

_UNKNOWN_DTYPE = object()
_CASTS = {}  # dtype -> the dtype its values are summarised in, or None to use them as they are


def _cast_for(dtype):
    """Floats of 32 bits and more are summarised as they are; other numbers in float64; half
    floats in float32 (BLAS has none, and sums need more bits). Kept by dtype: there are few."""
    if dtype.kind != "f":
        cast = np.dtype(np.float64)
    elif dtype.itemsize < 4:
        cast = np.dtype(np.float32)
    else:
        cast = None
    _CASTS[dtype] = cast
    return cast


_BLOCK = 256
_SHORT = 16 * 1024  # up to this many elements, a sum is one dot product with ones
_ONES = {}  # dtype -> np.ones(_SHORT)


def _sum(values):
    """The sum of a flat float array, in as few NumPy calls as possible (each costs about a
    microsecond, and a recording summarises many arrays): a short one is a BLAS dot product with
    ones; a long one is summed by rows of 256 (a BLAS matrix-vector product, about three times
    faster than NumPy's pairwise sum), then the row sums by NumPy."""
    n = values.size
    ones = _ONES.get(values.dtype)
    if ones is None:
        ones = _ONES[values.dtype] = np.ones(_SHORT, values.dtype)
    if n <= _SHORT:
        return float(np.dot(values, ones[:n]))
    whole = n - n % _BLOCK
    head = values if whole == n else values[:whole]
    total = float(np.add.reduce(head.reshape(-1, _BLOCK) @ ones[:_BLOCK]))
    return total + float(np.add.reduce(values[whole:])) if whole < n else total


def _mean_and_std(values):
    """Mean and standard deviation in a few fast passes (a recording summarises many arrays):
    a blocked sum for the mean, a BLAS dot product for the mean square. When the spread is tiny
    next to the mean, that shortcut loses the digits that matter, and the exact way is used."""
    n = values.size
    mean = _sum(values) / n
    mean_square = float(np.dot(values, values)) / n
    variance = mean_square - mean * mean
    if variance < 1e-3 * mean * mean or not math.isfinite(variance):
        return float(values.mean(dtype=np.float64)), float(values.std(dtype=np.float64))
    return mean, math.sqrt(variance)


def preview_of(array):
    """The top-left corner of the first matrix (at most 6 x 6), or a vector's first 12 values."""
    if array.ndim == 2:  # the most common, written out
        return array[:PREVIEW_SIDE, :PREVIEW_SIDE]
    if array.ndim == 0:
        return array
    if array.ndim == 1:
        return array[:PREVIEW_LENGTH]
    leading = (0,) * (array.ndim - 2)
    return array[leading + (slice(0, PREVIEW_SIDE), slice(0, PREVIEW_SIDE))]


def snapshot(array, policy):
    """A copy of ``array`` that later changes cannot reach, or its summary when it is large."""
    if array.size <= policy.max_elements or policy.full:
        return np.array(array, copy=True)
    return ArraySummary(array)


def same_values(array, kept):
    """Whether a kept snapshot still describes ``array`` (to share one snapshot for both)."""
    if isinstance(kept, np.ndarray):
        return (
            kept.shape == array.shape and kept.dtype == array.dtype and np.array_equal(kept, array)
        )
    return False


_DTYPE_NAMES = {}


def dtype_name(np_dtype):
    """``np_dtype.name``, which is slow enough to matter here; there are only a few dtypes."""
    name = _DTYPE_NAMES.get(np_dtype)
    if name is None:
        name = _DTYPE_NAMES[np_dtype] = np_dtype.name
    return name


# --- JSON ---------------------------------------------------------------------------------------


def number_json(x):
    """A number as JSON accepts it: NaN and infinities become the strings "NaN", "Infinity",
    "-Infinity" (JSON has no literal for them)."""
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, (int, np.integer)):
        return int(x)
    x = float(x)
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    return x


def _short_float(x, dtype_kind_is_low_precision):
    if dtype_kind_is_low_precision:
        # str() of a float32 is its shortest round-trip text: 0.1 stays 0.1, not 0.10000000149.
        return number_json(float(str(x)))
    return number_json(x)


def array_data_json(array):
    """The elements of a small array as nested lists (a bare number for a 0-dim array)."""
    if array.dtype.kind == "f":
        low = array.dtype.itemsize < 8
        flat = [_short_float(x, low) for x in array.ravel()]
    elif array.dtype.kind == "b":
        flat = [bool(x) for x in array.ravel()]
    else:
        flat = [int(x) for x in array.ravel()]
    return _nest(flat, array.shape)


def _nest(flat, shape):
    if not shape:
        return flat[0]
    if len(shape) == 1:
        return flat
    step = len(flat) // shape[0] if shape[0] else 0
    return [_nest(flat[i * step : (i + 1) * step], shape[1:]) for i in range(shape[0])]


def _stat_json(x):
    return number_json(float(f"{x:.6g}")) if math.isfinite(x) else number_json(x)


def value_json(value, policy, buffer_id=None):
    """One value of the trace as JSON (docs/trace-schema.md, "Values"): a small array is its
    elements as nested lists (a bare number for a 0-dim array); a larger one is an object with
    its shape, dtype, statistics and preview (and the id of its whole buffer, when kept)."""
    if value is None:
        return None
    if isinstance(value, np.ndarray) and value.size <= policy.inline_elements:
        return array_data_json(value)
    summary = value if isinstance(value, ArraySummary) else ArraySummary(value)
    out = {
        "shape": list(summary.shape),
        "dtype": summary.dtype,
        "stats": {
            "min": _stat_json(summary.min),
            "max": _stat_json(summary.max),
            "mean": _stat_json(summary.mean),
            "std": _stat_json(summary.std),
        },
        "preview": array_data_json(summary.preview),
    }
    if summary.nonfinite:
        out["stats"]["nonfinite"] = summary.nonfinite
    if buffer_id is not None:
        out["buffer"] = buffer_id
    return out


# What a trace says of a saved tensor that a saved_tensors_hooks pack hook holds, where it shows
# no value: reading it back would run the user's unpack hook, which recording must not do.
PACKED = "(packed by a saved_tensors_hooks pack hook)"


def keep_plain(value, policy):
    """A saved non-tensor value (a dim, a size, an alpha, a dtype, an index array) as the trace
    keeps it: numbers, strings, tuples and slices as they are, arrays as snapshots, anything else
    (a dtype) as its text."""
    if value is None or isinstance(value, (bool, int, float, str, slice)):
        return value
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (tuple, list)):
        if type(value) is tuple:
            # Most are sizes (``mat1_sym_sizes``): a tuple of ints is kept as it is.
            for v in value:
                if type(v) is not int:
                    break
            else:
                return value
        return tuple(keep_plain(v, policy) for v in value)
    if isinstance(value, np.ndarray):
        return snapshot(value, policy)
    return str(value)


def plain_json(value, policy):
    """A value made by ``keep_plain`` as JSON: numbers and strings as they are, a tuple as a
    list, a slice as {"slice": [start, stop, step]}, an array as a value (see ``value_json``)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, (bool, int, float)):
        return number_json(value)
    if isinstance(value, tuple):
        return [plain_json(v, policy) for v in value]
    if isinstance(value, slice):
        parts = (value.start, value.stop, value.step)
        return {"slice": [plain_json(v, policy) for v in parts]}
    return value_json(value, policy)
